package gpudrv

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"
	"unsafe"
)

// Kernel is a loaded module's kernel function, ready for Launch, Bench and Stream.Launch. It
// belongs to the Device that loaded it and is freed by Release or the device's Close.
type Kernel struct {
	dev        *Device
	name       string
	module     uintptr
	fn         uintptr
	maxThreads int
	regs       int
	shared     int
	params     []int // byte size of each parameter; nil when the driver cannot say
	image      Image // what Compile built (zero for a kernel from Load)
	released   bool
}

// Name returns the kernel's entry point.
func (k *Kernel) Name() string { return k.name }

// MaxThreadsPerBlock returns the most threads a block of this kernel may have on its device.
func (k *Kernel) MaxThreadsPerBlock() int { return k.maxThreads }

// Registers returns the registers each thread uses (0: not reported).
func (k *Kernel) Registers() int { return k.regs }

// SharedMemory returns the bytes of static shared memory a block uses (0: not reported).
func (k *Kernel) SharedMemory() int { return k.shared }

// ParamSizes returns the byte size of each kernel parameter as the driver reports it, or nil
// when the driver cannot say.
func (k *Kernel) ParamSizes() []int { return slices.Clone(k.params) }

// Image returns what Compile built for the kernel (zero for a kernel from Load).
func (k *Kernel) Image() Image { return k.image }

// Compile compiles src for the device (Config.Compile, with options after the backend's own)
// and loads the kernel entry from it. The source must declare entry extern "C" (or entry must be
// its mangled name). A source that does not compile is a *CompileError with the compiler's log.
func (d *Device) Compile(src, entry string, options ...string) (*Kernel, error) {
	if d.cfg.Compile == nil {
		return nil, d.errorf("Compile %q: the device has no compiler", entry)
	}
	img, err := d.cfg.Compile(src, entry+d.cfg.SourceExt, options)
	if err != nil {
		return nil, err
	}
	k, err := d.Load(img.Code, entry)
	if err != nil {
		return nil, err
	}
	k.image = img
	return k, nil
}

// Load loads a module from image and returns its kernel entry, with its attributes
// (Driver.FuncInfo).
func (d *Device) Load(image []byte, entry string) (*Kernel, error) {
	if len(image) == 0 {
		return nil, d.errorf("Load %q: empty image", entry)
	}
	leave, err := d.enter("Load")
	if err != nil {
		return nil, err
	}
	defer leave()
	op := fmt.Sprintf("Load %q", entry)
	module, err := d.drv.LoadModule(image)
	if err != nil {
		return nil, d.wrap(op, err)
	}
	fn, err := d.drv.Function(module, entry)
	if err != nil {
		d.drv.UnloadModule(module)
		return nil, fmt.Errorf("%s: Load: no kernel %q in the module: %w", d.cfg.Backend, entry, d.fail(err))
	}
	info, err := d.drv.FuncInfo(fn)
	if err != nil {
		d.drv.UnloadModule(module)
		return nil, d.wrap(op, err)
	}
	k := &Kernel{dev: d, name: entry, module: module, fn: fn, maxThreads: info.MaxThreads,
		regs: info.Registers, shared: info.SharedMemory, params: slices.Clone(info.Params)}
	if k.maxThreads <= 0 {
		k.maxThreads = d.cfg.MaxThreadsPerBlock
	}
	d.kernels[k] = struct{}{}
	return k, nil
}

// Release unloads the kernel's module. Releasing twice, or after the device was closed, is a
// no-op. A Stream that holds a launch of it fails at Submit.
func (k *Kernel) Release() {
	d := k.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if k.released || d.closed {
		return
	}
	d.releaseLocked(func() { d.drv.UnloadModule(k.module) })
	k.module, k.fn, k.released = 0, 0, true
	delete(d.kernels, k)
}

// launchArgs holds a launch's argument values and the kernelParams array of pointers to them: one
// 8-byte device pointer per buffer, in order, then one 4-byte value per scalar parameter, in
// order. It matches the emitted kernels' signature (buffers as pointers in binding order, then
// 32-bit scalars). The values are pinned until unpin.
type launchArgs struct {
	ptrs    []uint64
	scalars []uint32
	args    []unsafe.Pointer // &ptrs[0], ..., &scalars[0], ...
	pin     runtime.Pinner
}

// packArgs lays out a launch's arguments and pins them for the C call; call unpin after it.
func packArgs(ptrs []uint64, scalars []uint32) *launchArgs {
	a := &launchArgs{ptrs: slices.Clone(ptrs), scalars: slices.Clone(scalars)}
	a.args = make([]unsafe.Pointer, 0, len(ptrs)+len(scalars))
	for i := range a.ptrs {
		a.args = append(a.args, unsafe.Pointer(&a.ptrs[i]))
	}
	for i := range a.scalars {
		a.args = append(a.args, unsafe.Pointer(&a.scalars[i]))
	}
	if len(a.ptrs) > 0 {
		a.pin.Pin(&a.ptrs[0])
	}
	if len(a.scalars) > 0 {
		a.pin.Pin(&a.scalars[0])
	}
	if len(a.args) > 0 {
		a.pin.Pin(&a.args[0])
	}
	return a
}

// params returns the kernelParams array: nil for a kernel without parameters.
func (a *launchArgs) params() []unsafe.Pointer {
	if len(a.args) == 0 {
		return nil
	}
	return a.args
}

// unpin releases the pins.
func (a *launchArgs) unpin() { a.pin.Unpin() }

// launchOp is a checked launch: its kernel, views (Size made explicit), scalars and shape.
type launchOp struct {
	k           *Kernel
	views       []View
	params      []uint32
	grid, block [3]uint32
}

// check validates a launch against the kernel and the device before any driver call. d.mu is
// held.
func (d *Device) check(op string, k *Kernel, views []View, params []uint32, grid, block [3]uint32) (*launchOp, error) {
	be := d.cfg.Backend
	if k == nil || k.dev != d {
		return nil, fmt.Errorf("%s: %s: kernel is nil or from another device", be, op)
	}
	if k.released {
		return nil, fmt.Errorf("%s: %s: kernel %q was released", be, op, k.name)
	}
	x := &launchOp{k: k, views: make([]View, len(views)), params: slices.Clone(params), grid: grid, block: block}
	for i, v := range views {
		b := v.Buffer
		switch {
		case b == nil:
			return nil, fmt.Errorf("%s: %s: kernel %q: buffer %d is nil", be, op, k.name, i)
		case b.dev != d:
			return nil, fmt.Errorf("%s: %s: kernel %q: buffer %d belongs to another device", be, op, k.name, i)
		case b.released:
			return nil, fmt.Errorf("%s: %s: kernel %q: buffer %d was released", be, op, k.name, i)
		}
		if v.Size == 0 {
			v.Size = b.size - v.Offset
		}
		if v.Offset < 0 || v.Size <= 0 || v.Offset > b.size || v.Size > b.size-v.Offset {
			return nil, fmt.Errorf("%s: %s: kernel %q: buffer %d: view [%d, %d+%d) outside the buffer's %d bytes", be, op, k.name, i, v.Offset, v.Offset, v.Size, b.size)
		}
		if v.Offset%ViewAlignment != 0 {
			return nil, fmt.Errorf("%s: %s: kernel %q: buffer %d: view offset %d is not a multiple of %d bytes", be, op, k.name, i, v.Offset, ViewAlignment)
		}
		x.views[i] = v
	}
	if k.params != nil {
		if len(k.params) != len(views)+len(params) {
			return nil, fmt.Errorf("%s: %s: kernel %q takes %d parameters, got %d buffers and %d scalars", be, op, k.name, len(k.params), len(views), len(params))
		}
		for i, s := range k.params {
			want, what := 8, "buffer pointer"
			if i >= len(views) {
				want, what = 4, "32-bit scalar"
			}
			if s != want {
				return nil, fmt.Errorf("%s: %s: kernel %q: parameter %d is %d bytes; a %s is %d", be, op, k.name, i, s, what, want)
			}
		}
	}
	threads := uint64(1)
	for i := 0; i < 3; i++ {
		if grid[i] == 0 || block[i] == 0 {
			return nil, fmt.Errorf("%s: %s: kernel %q: grid %v and block %v must be at least 1 in every dimension", be, op, k.name, grid, block)
		}
		if grid[i] > d.cfg.MaxGrid[i] || block[i] > d.cfg.MaxBlock[i] {
			return nil, fmt.Errorf("%s: %s: kernel %q: grid %v / block %v exceed the device's limits %v / %v", be, op, k.name, grid, block, d.cfg.MaxGrid, d.cfg.MaxBlock)
		}
		threads *= uint64(block[i])
	}
	if threads > uint64(k.maxThreads) {
		return nil, fmt.Errorf("%s: %s: kernel %q: block %v has %d threads; the kernel allows %d", be, op, k.name, block, threads, k.maxThreads)
	}
	return x, nil
}

// whole makes a view of each buffer (nil stays nil, for check to name).
func whole(bufs []*Buffer) []View {
	views := make([]View, len(bufs))
	for i, b := range bufs {
		views[i] = View{Buffer: b}
	}
	return views
}

// pack lays out x's arguments: each view's address (the buffer's plus the offset), then the
// scalars.
func (x *launchOp) pack() *launchArgs {
	ptrs := make([]uint64, len(x.views))
	for i, v := range x.views {
		ptrs[i] = v.Buffer.ptr + uint64(v.Offset)
	}
	return packArgs(ptrs, x.params)
}

// enqueue launches x with packed arguments a on the device's stream. d.mu is held and the
// device is current.
func (d *Device) enqueue(x *launchOp, a *launchArgs) error {
	if err := d.drv.Launch(x.k.fn, x.grid, x.block, d.stream, a.params()); err != nil {
		return err
	}
	d.stats.Launches++
	d.pending = true
	return nil
}

// Launch runs k once over grid blocks of block threads with bufs (device pointers, in order) and
// params (32-bit scalars, in order) as its arguments, and waits for it to finish. Where the
// driver reports parameter sizes, the counts and sizes are checked first.
func (d *Device) Launch(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32) error {
	leave, err := d.enter("Launch")
	if err != nil {
		return err
	}
	defer leave()
	x, err := d.check("Launch", k, whole(bufs), params, grid, block)
	if err != nil {
		return err
	}
	a := x.pack()
	defer a.unpin()
	d.stats.Submits++
	op := fmt.Sprintf("Launch %q", k.name)
	if err := d.enqueue(x, a); err != nil {
		return d.wrap(op, err)
	}
	if err := d.sync(); err != nil {
		return d.wrap(op, err)
	}
	return nil
}

// BenchResult is the outcome of a kernel-only benchmark.
type BenchResult struct {
	PerDispatch time.Duration // Total / n
	Total       time.Duration // the n timed launches, by the driver's events
	Wall        time.Duration // host time from the first timed launch to the end of the final wait
	Timestamps  bool          // measured on the device (always true: driver events)
}

// milliseconds converts an event's elapsed time.
func milliseconds(ms float32) time.Duration { return time.Duration(math.Round(float64(ms) * 1e6)) }

// Bench is the kernel-only benchmark: warmup launches and a wait, then n launches back to back on
// the device's stream between two events, one wait on the last event, and the events' elapsed
// time. Buffers are neither copied nor cleared between launches.
func (d *Device) Bench(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32, warmup, n int) (BenchResult, error) {
	if n < 1 || warmup < 0 {
		return BenchResult{}, d.errorf("Bench: need n >= 1 and warmup >= 0, got n=%d warmup=%d", n, warmup)
	}
	leave, err := d.enter("Bench")
	if err != nil {
		return BenchResult{}, err
	}
	defer leave()
	x, err := d.check("Bench", k, whole(bufs), params, grid, block)
	if err != nil {
		return BenchResult{}, err
	}
	a := x.pack()
	defer a.unpin()
	fail := func(err error) (BenchResult, error) {
		return BenchResult{}, d.wrap(fmt.Sprintf("Bench %q", k.name), err)
	}
	d.stats.Submits++
	for i := 0; i < warmup; i++ {
		if err := d.enqueue(x, a); err != nil {
			return fail(err)
		}
	}
	if err := d.sync(); err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := d.drv.EventRecord(d.events[0], d.stream); err != nil {
		return fail(err)
	}
	for i := 0; i < n; i++ {
		if err := d.enqueue(x, a); err != nil {
			return fail(err)
		}
	}
	if err := d.drv.EventRecord(d.events[1], d.stream); err != nil {
		return fail(err)
	}
	d.stats.Syncs++
	if err := d.drv.EventSync(d.events[1]); err != nil {
		return fail(err)
	}
	d.pending = false
	wall := time.Since(start)
	ms, err := d.drv.EventElapsed(d.events[0], d.events[1])
	if err != nil {
		return fail(err)
	}
	total := milliseconds(ms)
	return BenchResult{PerDispatch: total / time.Duration(n), Total: total, Wall: wall, Timestamps: true}, nil
}
