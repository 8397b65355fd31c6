package prebuilt

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/onesource-go/onesource/internal/devrun"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/registry"
)

// DefaultBackends is the order a Runtime tries backends in unless Options.Backends says
// otherwise: native GPU runtimes first, then Vulkan (which also covers CPU drivers such as Mesa
// lavapipe), then Metal (no runtime here: always passed over with the reason), then the CPU
// executor, which every machine has, so a program runs without any GPU driver.
var DefaultBackends = []string{"cuda", "hip", "vulkan", "metal", "cpu"}

// Options configure a Runtime.
type Options struct {
	// Registry decides which backends may serve (see the package contract). Nil means an empty
	// registry: every backend is unverified until Record adds evidence.
	Registry *registry.Registry
	// Backends is the order of preference; nil means DefaultBackends.
	Backends []string
	// RequireVerified refuses to place a kernel on a backend whose registry cell has no
	// bit-exact evidence for the generated file.
	RequireVerified bool
	// Toolchain is recorded in evidence Record adds (default "onesource prebuilt").
	Toolchain string
	// Emulated opens the emulated CUDA and HIP devices (host execution of the embedded text,
	// level H: slow, exact, never a GPU) for the cuda and hip backends instead of a GPU's, for
	// machines with a C++ compiler and no GPU; their evidence names the emulation.
	Emulated bool
	// Checked runs the kernels' bounds-checked builds (see checked.go): a run that indexes a
	// buffer out of bounds fails, naming the kernel's Go line. The kernels need them generated
	// (onesource gen -checked); ONESOURCE_CHECKED=1 (lower.CheckedEnv) sets it for every runtime.
	Checked bool
}

// Runtime opens devices on demand and places kernels on them. It is safe for concurrent use.
type Runtime struct {
	opts Options
	reg  *registry.Registry

	mu      sync.Mutex
	devices map[string]device
	openErr map[string]error
	loaded  map[*Artifact]launch
}

// NewRuntime returns a runtime; no device is opened until a kernel needs one.
func NewRuntime(opts Options) (*Runtime, error) {
	if opts.Backends == nil {
		opts.Backends = DefaultBackends
	}
	seen := map[string]bool{}
	for _, b := range opts.Backends {
		if _, ok := openers[b]; !ok {
			return nil, fmt.Errorf("prebuilt: unknown backend %q (known: %s)", b, strings.Join(DefaultBackends, ", "))
		}
		if seen[b] {
			return nil, fmt.Errorf("prebuilt: backend %q listed twice", b)
		}
		seen[b] = true
	}
	if opts.Toolchain == "" {
		opts.Toolchain = "onesource prebuilt"
	}
	opts.Checked = opts.Checked || lower.CheckedRequested()
	reg := opts.Registry
	if reg == nil {
		reg = registry.New()
	}
	return &Runtime{opts: opts, reg: reg, devices: map[string]device{}, openErr: map[string]error{}, loaded: map[*Artifact]launch{}}, nil
}

// Registry returns the registry the runtime consults and Record writes.
func (r *Runtime) Registry() *registry.Registry { return r.reg }

// Close releases every device the runtime opened. Kernels placed by it can no longer run.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, d := range r.devices {
		d.close()
		delete(r.devices, name)
	}
	r.loaded = map[*Artifact]launch{}
	r.openErr = map[string]error{}
	return nil
}

func (r *Runtime) device(backend string) (device, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.devices[backend]; ok {
		return d, nil
	}
	if err, ok := r.openErr[backend]; ok {
		return nil, err
	}
	d, err := openers[backend](r.opts)
	if err != nil {
		r.openErr[backend] = err
		return nil, err
	}
	r.devices[backend] = d
	return d, nil
}

// Placement says where a kernel runs and why.
type Placement struct {
	Kernel  string
	Backend string
	Device  string
	Driver  string
	// Cell is the registry cell consulted; State its state when the kernel was placed.
	Cell  registry.Key
	State registry.State
	// Verified: the registry holds bit-exact evidence for exactly this generated file.
	Verified bool
	// Considered has one line per backend tried, in order: why it was taken or passed over.
	Considered []string
	// Checked: the kernel runs its bounds-checked build (Options.Checked; on cpu the executor
	// checks every access of the plain file).
	Checked bool
}

// String is a one-line summary, e.g. "axpy on vulkan (llvmpipe): fallback, verified", or for a
// cell the registry knows nothing about "...: no registry evidence for this cell yet
// (unverified)"; ", bounds-checked" ends it in checked mode.
func (p Placement) String() string {
	v := "unverified"
	if p.Verified {
		v = "verified"
	}
	checked := ""
	if p.Checked {
		checked = ", bounds-checked"
	}
	if p.State == registry.Missing && !p.Verified {
		return fmt.Sprintf("%s on %s (%s): no registry evidence for this cell yet (unverified)%s", p.Kernel, p.Backend, p.Device, checked)
	}
	return fmt.Sprintf("%s on %s (%s): %s, %s%s", p.Kernel, p.Backend, p.Device, p.State, v, checked)
}

// Placed is a kernel placed on a device, ready to run.
type Placed struct {
	rt  *Runtime
	k   *Kernel
	a   *Artifact
	d   device
	run launch
	p   Placement
}

// Placement returns where the kernel runs and why.
func (pl *Placed) Placement() Placement { return pl.p }

// Kernel returns the placed kernel.
func (pl *Placed) Kernel() *Kernel { return pl.k }

// NoBackendError is Place's answer when no backend can run a kernel; Considered says why, one
// line per backend.
type NoBackendError struct {
	Kernel     string
	Considered []string
}

// Error implements error.
func (e *NoBackendError) Error() string {
	return fmt.Sprintf("prebuilt: no backend can run kernel %s:\n\t%s", e.Kernel, strings.Join(e.Considered, "\n\t"))
}

// Place chooses the backend for k (see the package contract) and prepares the kernel on it.
func (r *Runtime) Place(k *Kernel) (*Placed, error) {
	if k == nil {
		return nil, errors.New("prebuilt: Place: nil kernel")
	}
	if k.set != nil && k.set.err != nil {
		return nil, k.set.err
	}
	type candidate struct {
		a     *Artifact
		d     device
		state registry.State
	}
	var considered []string
	var fallback *candidate
	var chosen *candidate
	var verified bool
	for _, b := range r.opts.Backends {
		a := k.Artifact(b)
		if a == nil {
			considered = append(considered, b+": not generated (add it to onesource gen -backends)")
			continue
		}
		if r.opts.Checked && b != "cpu" && a.Checked == nil {
			considered = append(considered, b+": checked mode, and the kernel has no bounds-checked build for it (generate with onesource gen -checked)")
			continue
		}
		key := registry.Key{Op: k.Name, Type: AnyType, Backend: b}
		ch := r.reg.Select(key.Op, key.Type, key.Backend)
		switch {
		case ch.State == registry.Failing:
			considered = append(considered, b+": registry cell "+key.String()+" is failing (the twin was not bit-exact): never serves")
			continue
		case ch.Impl == registry.Incumbent:
			considered = append(considered, fmt.Sprintf("%s: registry cell %s is %s: a hand-written kernel serves it, not this twin", b, key, ch.State))
			continue
		}
		ok := ch.Impl == registry.Twin && r.hasEvidence(key, a.Hash())
		if !ok && r.opts.RequireVerified {
			considered = append(considered, fmt.Sprintf("%s: registry cell %s has no bit-exact evidence for %s (RequireVerified)", b, key, a.Hash()[:19]))
			continue
		}
		if !ok && fallback != nil {
			considered = append(considered, fmt.Sprintf("%s: not tried: unverified, and unverified %s comes first", b, fallback.a.Backend))
			continue
		}
		d, err := r.device(b)
		if err != nil {
			considered = append(considered, fmt.Sprintf("%s: %v", b, err))
			continue
		}
		c := &candidate{a: a, d: d, state: ch.State}
		if ok {
			considered = append(considered, fmt.Sprintf("%s: registry cell %s is %s with bit-exact evidence for this file: chosen", b, key, ch.State))
			chosen, verified = c, true
			break
		}
		if ch.State == registry.Missing {
			considered = append(considered, fmt.Sprintf("%s: no registry evidence for cell %s yet: usable unverified", b, key))
		} else {
			considered = append(considered, fmt.Sprintf("%s: registry cell %s is %s, no evidence for this file: usable unverified", b, key, ch.State))
		}
		fallback = c
	}
	if chosen == nil {
		chosen = fallback
	}
	if chosen == nil {
		return nil, &NoBackendError{Kernel: k.Name, Considered: considered}
	}
	var run launch
	var err error
	checked := r.opts.Checked && chosen.a.Checked != nil
	if checked {
		ca := chosen.a.Checked
		if run, err = r.load(checkedDescription(k), ca, chosen.d); err == nil {
			run = checkedLaunch(chosen.d, run, diagnostics(k, ca))
		}
	} else {
		run, err = r.load(k, chosen.a, chosen.d)
	}
	if err != nil {
		return nil, fmt.Errorf("prebuilt: %s on %s: %w", k.Name, chosen.a.Backend, err)
	}
	dev, drv := chosen.d.describe()
	return &Placed{rt: r, k: k, a: chosen.a, d: chosen.d, run: run, p: Placement{
		Kernel: k.Name, Backend: chosen.a.Backend, Device: dev, Driver: drv,
		Cell:  registry.Key{Op: k.Name, Type: AnyType, Backend: chosen.a.Backend},
		State: chosen.state, Verified: verified, Considered: considered, Checked: r.opts.Checked,
	}}, nil
}

// hasEvidence reports whether the registry holds bit-exact evidence for the file with hash.
func (r *Runtime) hasEvidence(key registry.Key, hash string) bool {
	c, ok := r.reg.Cell(key)
	if !ok {
		return false
	}
	for _, e := range c.Evidence {
		if e.BitExact && e.TwinHash == hash {
			return true
		}
	}
	return false
}

func (r *Runtime) load(k *Kernel, a *Artifact, d device) (launch, error) {
	r.mu.Lock()
	run, ok := r.loaded[a]
	r.mu.Unlock()
	if ok {
		return run, nil
	}
	run, err := d.load(k, a)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.loaded[a] = run
	r.mu.Unlock()
	return run, nil
}

// Run dispatches the kernel once over groups workgroups. bufs holds every buffer's bytes in
// binding order (each a whole number of elements, at least one); after the run, the buffers the
// kernel writes hold the device's results. params are the kernel's parameters in declaration
// order: uint32 / int32 / float32 values, or Go ints and float64s that the parameter's type
// holds exactly. Run copies bufs to fresh device buffers and the written ones back; to keep
// data on the device between runs, use NewBuffer and RunOn.
func (pl *Placed) Run(groups [3]uint32, bufs [][]byte, params ...any) error {
	sizes := make([]int, len(bufs))
	for i, b := range bufs {
		sizes[i] = len(b)
	}
	words, err := pl.check(groups, sizes, params)
	if err != nil {
		return err
	}
	err = devrun.Once(pl.d.newBuffer, bufs, written(pl.k), func(db []buffer) error { return pl.run(db, words, groups) })
	if err != nil {
		return fmt.Errorf("%s: %w", pl.where(), err)
	}
	return nil
}

// DeviceBuffer is memory on the device a kernel was placed on, kept there between runs: a program
// writes its inputs once, runs kernels over it (RunOn, on every backend, the cpu executor's
// included), and reads back only what it wants. Any kernel placed by the same Runtime on the
// same backend may bind it. A DeviceBuffer is freed by Release or the Runtime's Close.
type DeviceBuffer struct {
	d       device
	b       buffer
	backend string
}

// NewBuffer allocates size bytes (at least 1), zero-filled, on the placed kernel's device.
func (pl *Placed) NewBuffer(size int) (*DeviceBuffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%s: NewBuffer(%d): the size must be positive", pl.where(), size)
	}
	b, err := pl.d.newBuffer(size)
	if err != nil {
		return nil, fmt.Errorf("%s: NewBuffer(%d): %w", pl.where(), size, err)
	}
	return &DeviceBuffer{d: pl.d, b: b, backend: pl.p.Backend}, nil
}

// Size returns the buffer's size in bytes.
func (b *DeviceBuffer) Size() int { return b.b.Size() }

// Write copies data into the buffer at offset (after the runs before it).
func (b *DeviceBuffer) Write(offset int, data []byte) error { return b.b.Write(offset, data) }

// Read copies len(dst) bytes of the buffer from offset into dst (after the runs before it).
func (b *DeviceBuffer) Read(offset int, dst []byte) error { return b.b.Read(offset, dst) }

// Release frees the buffer; releasing twice is a no-op.
func (b *DeviceBuffer) Release() { b.b.Release() }

// RunOn dispatches the kernel once over groups workgroups on buffers of its device (NewBuffer),
// in binding order, with params as Run takes them, and waits for it. Nothing is copied between
// the host and the device: the buffers keep the results for the next run.
func (pl *Placed) RunOn(groups [3]uint32, bufs []*DeviceBuffer, params ...any) error {
	sizes := make([]int, len(bufs))
	db := make([]buffer, len(bufs))
	for i, b := range bufs {
		if b == nil || b.d != pl.d {
			return fmt.Errorf("%s: buffer %d is nil or not on this kernel's device (%s)", pl.where(), i, pl.p.Backend)
		}
		sizes[i], db[i] = b.Size(), b.b
	}
	words, err := pl.check(groups, sizes, params)
	if err != nil {
		return err
	}
	if err := pl.run(db, words, groups); err != nil {
		return fmt.Errorf("%s: %w", pl.where(), err)
	}
	return nil
}

// where names the placed kernel in errors.
func (pl *Placed) where() string {
	return fmt.Sprintf("prebuilt: %s (%s) on %s", pl.k.Name, pl.k.Source, pl.p.Backend)
}

// check checks a run's buffer sizes (one per binding, each a whole number of elements, at least
// one), parameters and grid, and returns the parameters' 32-bit words.
func (pl *Placed) check(groups [3]uint32, sizes []int, params []any) ([]uint32, error) {
	k, where := pl.k, pl.where()
	if len(sizes) != len(k.Buffers) {
		return nil, fmt.Errorf("%s: %d buffers given, the kernel has %d (%s)", where, len(sizes), len(k.Buffers), bufferList(k))
	}
	for i, b := range k.Buffers {
		switch {
		case b.ElemBytes <= 0:
			return nil, fmt.Errorf("%s: buffer %s has no element size (regenerate)", where, b.Name)
		case sizes[i] == 0:
			return nil, fmt.Errorf("%s: buffer %s is empty (a device cannot bind an empty buffer; pass at least one %s)", where, b.Name, b.Elem)
		case sizes[i]%b.ElemBytes != 0:
			return nil, fmt.Errorf("%s: buffer %s has %d bytes, not a whole number of %d-byte %s elements", where, b.Name, sizes[i], b.ElemBytes, b.Elem)
		}
	}
	if len(params) != len(k.Params) {
		return nil, fmt.Errorf("%s: %d parameters given, the kernel has %d (%s)", where, len(params), len(k.Params), paramList(k))
	}
	words := make([]uint32, len(params))
	for i, p := range k.Params {
		w, err := paramWord(p, params[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		words[i] = w
	}
	if groups[0] == 0 || groups[1] == 0 || groups[2] == 0 {
		return nil, fmt.Errorf("%s: workgroup count %v has a zero", where, groups)
	}
	return words, nil
}

func bufferList(k *Kernel) string {
	var s []string
	for _, b := range k.Buffers {
		s = append(s, b.Name+" "+b.Elem+" "+string(b.Access))
	}
	return strings.Join(s, ", ")
}

func paramList(k *Kernel) string {
	var s []string
	for _, p := range k.Params {
		s = append(s, p.Name+" "+p.Type)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// paramWord converts a Go value to a parameter's 32 bits, refusing inexact conversions.
func paramWord(p Param, v any) (uint32, error) {
	bad := func(why string) (uint32, error) {
		return 0, fmt.Errorf("parameter %s (%s): %v (%T) %s", p.Name, p.Type, v, v, why)
	}
	switch p.Type {
	case "f32":
		switch x := v.(type) {
		case float32:
			return math.Float32bits(x), nil
		case float64:
			if f := float32(x); float64(f) == x || math.IsNaN(x) {
				return math.Float32bits(f), nil
			}
			return bad("is not exactly a float32")
		}
		return bad("is not a float")
	case "u32", "i32":
		var n int64
		switch x := v.(type) {
		case uint32:
			n = int64(x)
		case int32:
			n = int64(x)
		case int:
			n = int64(x)
		case uint:
			if uint64(x) > math.MaxUint32 {
				return bad("is out of range")
			}
			n = int64(x)
		case int64:
			n = x
		default:
			return bad("is not an integer")
		}
		if p.Type == "u32" && (n < 0 || n > math.MaxUint32) {
			return bad("is out of range")
		}
		if p.Type == "i32" && (n < math.MinInt32 || n > math.MaxInt32) {
			return bad("is out of range")
		}
		return uint32(n), nil
	}
	return 0, fmt.Errorf("parameter %s has type %q, not u32, i32 or f32 (regenerate)", p.Name, p.Type)
}

// Record adds the outcome of the program's own check of the placed kernel against its oracle
// to the registry as evidence for this device and file: bit-exact evidence with no incumbent makes
// the cell fallback (the twin serves by coverage), anything else makes it failing. cases is how
// many inputs were compared, maxULP the largest difference seen (0 when bit-exact). It returns
// the cell's new state; the caller saves the registry if it wants the verdict kept.
func (r *Runtime) Record(pl *Placed, bitExact bool, maxULP float64, cases int) (registry.State, error) {
	if pl == nil || pl.rt != r {
		return "", errors.New("prebuilt: Record: kernel was not placed by this runtime")
	}
	if math.IsNaN(maxULP) || math.IsInf(maxULP, 0) {
		maxULP = math.MaxFloat32
	}
	ev := registry.Evidence{
		Device: pl.p.Device, Driver: pl.p.Driver, Toolchain: r.opts.Toolchain,
		BitExact: bitExact, MaxULP: maxULP, Cases: cases,
		TwinHash: pl.a.Hash(), Date: time.Now().UTC(),
	}
	verdict, why := registry.Judge(ev, r.reg.Threshold())
	if err := r.reg.Apply(registry.GateResult{Key: pl.p.Cell, Evidence: ev, Verdict: verdict, Reason: "prebuilt " + pl.k.Name + ": " + why}); err != nil {
		return "", err
	}
	c, _ := r.reg.Cell(pl.p.Cell)
	return c.State, nil
}
