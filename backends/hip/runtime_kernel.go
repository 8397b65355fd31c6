package hip

import (
	"bytes"
	"fmt"
	"github.com/onesource-go/onesource/internal/dynlib"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// DefaultHIPRTCOptions are the options every HIPRTC compile gets after the target:
// -ffp-contract=off keeps a*b+c two roundings (the numeric contract: no contraction), and -O3.
var DefaultHIPRTCOptions = []string{"-ffp-contract=off", "-O3"}

// CodeObject is device code made by HIPRTC: an AMDGPU code object (ELF) for one target, ready for
// Device.Load.
type CodeObject struct {
	Code    []byte   // the code object
	Target  string   // the target ID it was compiled for, e.g. "gfx90a"
	Options []string // every option HIPRTC was given
	Log     string   // HIPRTC's log (warnings); empty when it had nothing to say
}

// CompileError is a HIPRTC compile that failed; Log holds the compiler's diagnostics.
type CompileError struct {
	Name    string   // the source's name, e.g. "saxpy.hip"
	Target  string   // the target ID, e.g. "gfx90a"
	Options []string // every option HIPRTC was given
	Log     string   // HIPRTC's program log
	Err     error    // the *ResultError of hiprtcCompileProgram
}

// Error names the call, the target and the result, followed by the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("hip: hiprtc: compiling %s for %s: %v\n%s", e.Name, e.Target, e.Err, strings.TrimSpace(e.Log))
}

// Unwrap returns the *ResultError.
func (e *CompileError) Unwrap() error { return e.Err }

// CompileHIPRTC compiles HIP C++ source with HIPRTC for target (an AMDGPU target ID such as
// "gfx90a", "gfx1030" or "gfx90a:sramecc+:xnack-"), with --offload-arch=target,
// DefaultHIPRTCOptions and then options. name names the source in diagnostics. It needs HIPRTC
// only, no GPU. The target is checked first with the code-object manager where it can be loaded,
// because some HIPRTC releases abort the process on a target they do not support. A compile
// error is a *CompileError carrying the log.
func CompileHIPRTC(src, name, target string, options ...string) (CodeObject, error) {
	n, err := loadHIPRTC()
	if err != nil {
		return CodeObject{}, err
	}
	return n.compile(src, name, target, options)
}

func (n *hiprtcLib) compile(src, name, target string, options []string) (CodeObject, error) {
	if err := n.checkTarget(target); err != nil {
		return CodeObject{}, err
	}
	opts := append([]string{"--offload-arch=" + target}, DefaultHIPRTCOptions...)
	opts = append(opts, options...)
	co := CodeObject{Target: target, Options: opts}

	var pin runtime.Pinner
	defer pin.Unpin()
	var prog uintptr
	srcC, nameC := dynlib.CBytes(src), dynlib.CBytes(name)
	if err := n.check("hiprtcCreateProgram", dynlib.Call(n.hiprtcCreateProgram, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(srcC)), uintptr(unsafe.Pointer(nameC)), 0, 0, 0)); err != nil {
		return co, fmt.Errorf("hip: hiprtc: %w", err)
	}
	defer dynlib.Call(n.hiprtcDestroyProgram, uintptr(unsafe.Pointer(&prog)))
	optC := make([]*byte, len(opts))
	for i, o := range opts {
		optC[i] = dynlib.CBytes(o)
		pin.Pin(optC[i])
	}
	cerr := n.check("hiprtcCompileProgram", dynlib.Call(n.hiprtcCompileProgram, prog, uintptr(len(optC)), uintptr(unsafe.Pointer(&optC[0]))))
	runtime.KeepAlive(optC)
	co.Log = n.log(prog)
	if cerr != nil {
		return co, &CompileError{Name: name, Target: target, Options: opts, Log: co.Log, Err: cerr}
	}
	var size uintptr
	if err := n.check("hiprtcGetCodeSize", dynlib.Call(n.hiprtcGetCodeSize, prog, uintptr(unsafe.Pointer(&size)))); err != nil {
		return co, fmt.Errorf("hip: hiprtc: %w", err)
	}
	if size == 0 || size > 1<<30 {
		return co, fmt.Errorf("hip: hiprtc: hiprtcGetCodeSize reports %d bytes", size)
	}
	co.Code = make([]byte, size)
	if err := n.check("hiprtcGetCode", dynlib.Call(n.hiprtcGetCode, prog, uintptr(unsafe.Pointer(&co.Code[0])))); err != nil {
		return co, fmt.Errorf("hip: hiprtc: %w", err)
	}
	if !bytes.HasPrefix(co.Code, []byte("\x7fELF")) && !bytes.HasPrefix(co.Code, []byte("__CLANG_OFFLOAD_BUNDLE__")) {
		return co, fmt.Errorf("hip: hiprtc: the code for %s is neither an ELF code object nor an offload bundle", target)
	}
	return co, nil
}

// log returns the program's log, trimmed of its NUL.
func (n *hiprtcLib) log(prog uintptr) string {
	var size uintptr
	if dynlib.Call(n.hiprtcGetProgramLogSize, prog, uintptr(unsafe.Pointer(&size))) != 0 || size <= 1 || size > 1<<26 {
		return ""
	}
	b := make([]byte, size)
	if dynlib.Call(n.hiprtcGetProgramLog, prog, uintptr(unsafe.Pointer(&b[0]))) != 0 {
		return ""
	}
	return dynlib.GoString(b)
}

// Kernel is a loaded module's kernel function, ready for Launch and Bench. It belongs to the
// Device that loaded it and is freed by Release or Close.
type Kernel struct {
	dev        *Device
	name       string
	module     uintptr // hipModule_t
	fn         uintptr // hipFunction_t
	maxThreads int
	regs       int
	shared     int
	code       CodeObject
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

// CodeObject returns what Compile built (zero for a kernel from Load).
func (k *Kernel) CodeObject() CodeObject { return k.code }

// Compile compiles HIP C++ source with HIPRTC for this device's target (see CompileHIPRTC) and
// loads the kernel entry from it. The source must declare entry extern "C".
func (d *Device) Compile(src, entry string, options ...string) (*Kernel, error) {
	if d.info.Arch == "" {
		return nil, fmt.Errorf("hip: Compile: device %d (%s) did not report its target (gcnArchName)", d.index, d.info.Name)
	}
	co, err := CompileHIPRTC(src, entry+".hip", d.info.Arch, options...)
	if err != nil {
		return nil, err
	}
	k, err := d.Load(co.Code, entry)
	if err != nil {
		return nil, err
	}
	k.code = co
	return k, nil
}

// hipFunction_attribute values the runtime reads.
const (
	hipFuncAttrMaxThreadsPerBlock = 0
	hipFuncAttrSharedSizeBytes    = 1
	hipFuncAttrNumRegs            = 4
)

// Load loads a code object (what hipModuleLoadData takes: HIPRTC's, or hipcc's or clang's for
// this device's target) and returns its kernel entry.
func (d *Device) Load(code []byte, entry string) (*Kernel, error) {
	if len(code) == 0 {
		return nil, fmt.Errorf("hip: Load %q: empty code object", entry)
	}
	leave, err := d.enter("Load")
	if err != nil {
		return nil, err
	}
	defer leave()
	l := d.lib
	img := slices.Clone(code)
	k := &Kernel{dev: d, name: entry, maxThreads: d.info.MaxThreadsPerBlock}
	if err := l.check("hipModuleLoadData", dynlib.Call(l.hipModuleLoadData, uintptr(unsafe.Pointer(&k.module)), uintptr(unsafe.Pointer(&img[0])))); err != nil {
		return nil, fmt.Errorf("hip: Load %q: %w", entry, d.fail(err))
	}
	if err := l.check("hipModuleGetFunction", dynlib.Call(l.hipModuleGetFunction, uintptr(unsafe.Pointer(&k.fn)), k.module, uintptr(unsafe.Pointer(dynlib.CBytes(entry))))); err != nil {
		dynlib.Call(l.hipModuleUnload, k.module)
		return nil, fmt.Errorf("hip: Load: no kernel %q in the module: %w", entry, err)
	}
	if l.hipFuncGetAttribute != 0 {
		attr := func(a int) (int, bool) {
			var v int32
			ok := dynlib.Call(l.hipFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), k.fn) == 0
			return int(v), ok
		}
		if v, ok := attr(hipFuncAttrMaxThreadsPerBlock); ok && v > 0 {
			k.maxThreads = v
		}
		k.regs, _ = attr(hipFuncAttrNumRegs)
		k.shared, _ = attr(hipFuncAttrSharedSizeBytes)
	}
	d.kernels[k] = struct{}{}
	return k, nil
}

// Release unloads the kernel's module. Releasing twice, or after the device was closed, is a
// no-op.
func (k *Kernel) Release() {
	d := k.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if k.released || d.closed {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if dynlib.Call(d.lib.hipSetDevice, uintptr(d.index)) == 0 {
		dynlib.Call(d.lib.hipModuleUnload, k.module)
	}
	k.module, k.fn, k.released = 0, 0, true
	delete(d.kernels, k)
}

// rtLaunchArgs holds a launch's argument values and the array of pointers to them that
// hipModuleLaunchKernel takes: one 8-byte device pointer per buffer, in order, then one 4-byte
// value per scalar parameter, in order, matching the emitted kernels' signature.
type rtLaunchArgs struct {
	ptrs    []uint64
	scalars []uint32
	args    []unsafe.Pointer
	pin     runtime.Pinner
}

// rtPackArgs lays out a launch's arguments and pins them for the C call; call unpin after it.
func rtPackArgs(ptrs []uint64, scalars []uint32) *rtLaunchArgs {
	a := &rtLaunchArgs{ptrs: slices.Clone(ptrs), scalars: slices.Clone(scalars)}
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

// pointer returns the kernelParams argument (0 for a kernel without parameters).
func (a *rtLaunchArgs) pointer() uintptr {
	if len(a.args) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&a.args[0]))
}

func (a *rtLaunchArgs) unpin() { a.pin.Unpin() }

// prepare validates a launch and packs its arguments. d.mu is held.
func (d *Device) prepare(op string, k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32) (*rtLaunchArgs, error) {
	if k == nil || k.dev != d {
		return nil, fmt.Errorf("hip: %s: kernel is nil or from another device", op)
	}
	if k.released {
		return nil, fmt.Errorf("hip: %s: kernel %q was released", op, k.name)
	}
	ptrs := make([]uint64, len(bufs))
	for i, b := range bufs {
		switch {
		case b == nil:
			return nil, fmt.Errorf("hip: %s: kernel %q: buffer %d is nil", op, k.name, i)
		case b.dev != d:
			return nil, fmt.Errorf("hip: %s: kernel %q: buffer %d belongs to another device", op, k.name, i)
		case b.released:
			return nil, fmt.Errorf("hip: %s: kernel %q: buffer %d was released", op, k.name, i)
		}
		ptrs[i] = uint64(b.ptr)
	}
	threads := uint64(1)
	for i := 0; i < 3; i++ {
		if grid[i] == 0 || block[i] == 0 {
			return nil, fmt.Errorf("hip: %s: kernel %q: grid %v and block %v must be at least 1 in every dimension", op, k.name, grid, block)
		}
		if grid[i] > d.info.MaxGrid[i] || block[i] > d.info.MaxBlock[i] {
			return nil, fmt.Errorf("hip: %s: kernel %q: grid %v / block %v exceed the device's limits %v / %v", op, k.name, grid, block, d.info.MaxGrid, d.info.MaxBlock)
		}
		threads *= uint64(block[i])
	}
	if threads > uint64(k.maxThreads) {
		return nil, fmt.Errorf("hip: %s: kernel %q: block %v has %d threads; the kernel allows %d", op, k.name, block, threads, k.maxThreads)
	}
	return rtPackArgs(ptrs, params), nil
}

// launch enqueues one launch on the device's stream.
func (d *Device) launch(k *Kernel, a *rtLaunchArgs, grid, block [3]uint32) error {
	l := d.lib
	r := dynlib.Call(l.hipModuleLaunchKernel, k.fn,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		0, d.stream, a.pointer(), 0)
	return l.check("hipModuleLaunchKernel", r)
}

// Launch runs k once over grid blocks of block threads with bufs (device pointers, in order) and
// params (32-bit scalars, in order) as its arguments, and waits for it to finish.
func (d *Device) Launch(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32) error {
	leave, err := d.enter("Launch")
	if err != nil {
		return err
	}
	defer leave()
	a, err := d.prepare("Launch", k, bufs, params, grid, block)
	if err != nil {
		return err
	}
	defer a.unpin()
	if err := d.launch(k, a, grid, block); err != nil {
		return fmt.Errorf("hip: Launch %q: %w", k.name, d.fail(err))
	}
	if err := d.lib.check("hipStreamSynchronize", dynlib.Call(d.lib.hipStreamSynchronize, d.stream)); err != nil {
		return fmt.Errorf("hip: Launch %q: %w", k.name, d.fail(err))
	}
	return nil
}

// BenchResult is the outcome of a kernel-only benchmark.
type BenchResult struct {
	PerDispatch time.Duration // Total / n
	Total       time.Duration // the n timed launches, by HIP events
	Wall        time.Duration // host time from the first timed launch to the end of the final wait
	Timestamps  bool          // measured on the device (always true: HIP events)
}

// Bench is the kernel-only benchmark: warmup launches and a wait, then n launches back to back on
// the device's stream between two events, one wait on the last event, and the events' elapsed
// time. Buffers are neither copied nor cleared between launches.
func (d *Device) Bench(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32, warmup, n int) (BenchResult, error) {
	if n < 1 || warmup < 0 {
		return BenchResult{}, fmt.Errorf("hip: Bench: need n >= 1 and warmup >= 0, got n=%d warmup=%d", n, warmup)
	}
	leave, err := d.enter("Bench")
	if err != nil {
		return BenchResult{}, err
	}
	defer leave()
	a, err := d.prepare("Bench", k, bufs, params, grid, block)
	if err != nil {
		return BenchResult{}, err
	}
	defer a.unpin()
	l := d.lib
	fail := func(err error) (BenchResult, error) {
		return BenchResult{}, fmt.Errorf("hip: Bench %q: %w", k.name, d.fail(err))
	}
	for i := 0; i < warmup; i++ {
		if err := d.launch(k, a, grid, block); err != nil {
			return fail(err)
		}
	}
	if err := l.check("hipStreamSynchronize", dynlib.Call(l.hipStreamSynchronize, d.stream)); err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := l.check("hipEventRecord", dynlib.Call(l.hipEventRecord, d.events[0], d.stream)); err != nil {
		return fail(err)
	}
	for i := 0; i < n; i++ {
		if err := d.launch(k, a, grid, block); err != nil {
			return fail(err)
		}
	}
	if err := l.check("hipEventRecord", dynlib.Call(l.hipEventRecord, d.events[1], d.stream)); err != nil {
		return fail(err)
	}
	if err := l.check("hipEventSynchronize", dynlib.Call(l.hipEventSynchronize, d.events[1])); err != nil {
		return fail(err)
	}
	wall := time.Since(start)
	var ms float32
	if err := l.check("hipEventElapsedTime", dynlib.Call(l.hipEventElapsedTime, uintptr(unsafe.Pointer(&ms)), d.events[0], d.events[1])); err != nil {
		return fail(err)
	}
	total := time.Duration(math.Round(float64(ms) * 1e6))
	return BenchResult{PerDispatch: total / time.Duration(n), Total: total, Wall: wall, Timestamps: true}, nil
}
