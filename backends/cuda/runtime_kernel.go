package cuda

import (
	"fmt"
	"github.com/onesource-go/onesource/internal/dynlib"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// DefaultNVRTCOptions are the options every NVRTC compile gets after the target architecture:
// --fmad=false keeps a*b+c two roundings (the numeric contract: no contraction).
var DefaultNVRTCOptions = []string{"--fmad=false"}

// Image is device code made by NVRTC: PTX text or a cubin, ready for Device.Load.
type Image struct {
	Code    []byte   // the PTX (NUL-terminated text) or cubin (ELF)
	Format  string   // "cubin" or "ptx"
	Target  string   // what it was compiled for: "sm_90" (cubin) or "compute_90" (PTX)
	Options []string // every option NVRTC was given
	Log     string   // NVRTC's log (warnings); empty when it had nothing to say
}

// CompileError is an NVRTC compile that failed; Log holds NVRTC's diagnostics.
type CompileError struct {
	Name    string   // the source's name, e.g. "saxpy.cu"
	Target  string   // the architecture option's value, e.g. "sm_90"
	Options []string // every option NVRTC was given
	Log     string   // NVRTC's program log
	Err     error    // the *ResultError of nvrtcCompileProgram
}

// Error names the call, the target and the result, followed by the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: nvrtc: compiling %s for %s: %v\n%s", e.Name, e.Target, e.Err, strings.TrimSpace(e.Log))
}

// Unwrap returns the *ResultError.
func (e *CompileError) Unwrap() error { return e.Err }

// nvrtcTarget chooses what NVRTC builds for a device of compute capability sm (90 for 9.0):
// a cubin for sm_XY when NVRTC lists that architecture and can emit cubins, else PTX for the
// newest virtual architecture NVRTC lists that is not newer than the device (the driver compiles
// PTX for the device at load). archs nil means NVRTC cannot list them: PTX for compute_XY.
func nvrtcTarget(archs []int, sm int, cubin bool) (target, format string, err error) {
	if archs == nil {
		return fmt.Sprintf("compute_%d", sm), "ptx", nil
	}
	if cubin && slices.Contains(archs, sm) {
		return fmt.Sprintf("sm_%d", sm), "cubin", nil
	}
	best := -1
	for _, a := range archs {
		if a <= sm && a > best {
			best = a
		}
	}
	if best < 0 {
		return "", "", fmt.Errorf("NVRTC compiles for sm_%d and newer only; the device is sm_%d", slices.Min(archs), sm)
	}
	return fmt.Sprintf("compute_%d", best), "ptx", nil
}

// CompileNVRTC compiles CUDA C++ source with NVRTC for compute capability sm (e.g. 90 for 9.0),
// with DefaultNVRTCOptions and then options. name names the source in diagnostics. It needs
// NVRTC only, no driver or device. A compile error is a *CompileError carrying NVRTC's log.
func CompileNVRTC(src, name string, sm int, options ...string) (Image, error) {
	n, err := loadNVRTC()
	if err != nil {
		return Image{}, err
	}
	return n.compile(src, name, sm, options)
}

func (n *nvrtcLib) compile(src, name string, sm int, options []string) (Image, error) {
	target, format, err := nvrtcTarget(n.archs, sm, n.nvrtcGetCUBIN != 0 && n.nvrtcGetCUBINSize != 0)
	if err != nil {
		return Image{}, fmt.Errorf("cuda: nvrtc %d.%d (%s): %w", n.major, n.minor, n.path, err)
	}
	opts := append([]string{"--gpu-architecture=" + target}, DefaultNVRTCOptions...)
	opts = append(opts, options...)
	img := Image{Format: format, Target: target, Options: opts}

	var pin runtime.Pinner
	defer pin.Unpin()
	var prog uintptr
	srcC, nameC := dynlib.CBytes(src), dynlib.CBytes(name)
	if err := n.check("nvrtcCreateProgram", dynlib.Call(n.nvrtcCreateProgram, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(srcC)), uintptr(unsafe.Pointer(nameC)), 0, 0, 0)); err != nil {
		return img, fmt.Errorf("cuda: nvrtc: %w", err)
	}
	defer dynlib.Call(n.nvrtcDestroyProgram, uintptr(unsafe.Pointer(&prog)))
	optC := make([]*byte, len(opts))
	for i, o := range opts {
		optC[i] = dynlib.CBytes(o)
		pin.Pin(optC[i])
	}
	var optp uintptr
	if len(optC) > 0 {
		optp = uintptr(unsafe.Pointer(&optC[0]))
	}
	cerr := n.check("nvrtcCompileProgram", dynlib.Call(n.nvrtcCompileProgram, prog, uintptr(len(optC)), optp))
	runtime.KeepAlive(optC)
	img.Log = n.log(prog)
	if cerr != nil {
		return img, &CompileError{Name: name, Target: target, Options: opts, Log: img.Log, Err: cerr}
	}
	sizeFn, getFn, sizeCall, getCall := n.nvrtcGetPTXSize, n.nvrtcGetPTX, "nvrtcGetPTXSize", "nvrtcGetPTX"
	if format == "cubin" {
		sizeFn, getFn, sizeCall, getCall = n.nvrtcGetCUBINSize, n.nvrtcGetCUBIN, "nvrtcGetCUBINSize", "nvrtcGetCUBIN"
	}
	var size uintptr
	if err := n.check(sizeCall, dynlib.Call(sizeFn, prog, uintptr(unsafe.Pointer(&size)))); err != nil {
		return img, fmt.Errorf("cuda: nvrtc: %w", err)
	}
	if size == 0 || size > 1<<30 {
		return img, fmt.Errorf("cuda: nvrtc: %s reports %d bytes", sizeCall, size)
	}
	img.Code = make([]byte, size)
	if err := n.check(getCall, dynlib.Call(getFn, prog, uintptr(unsafe.Pointer(&img.Code[0])))); err != nil {
		return img, fmt.Errorf("cuda: nvrtc: %w", err)
	}
	return img, nil
}

// log returns the program's log, trimmed of its NUL.
func (n *nvrtcLib) log(prog uintptr) string {
	var size uintptr
	if dynlib.Call(n.nvrtcGetProgramLogSize, prog, uintptr(unsafe.Pointer(&size))) != 0 || size <= 1 || size > 1<<26 {
		return ""
	}
	b := make([]byte, size)
	if dynlib.Call(n.nvrtcGetProgramLog, prog, uintptr(unsafe.Pointer(&b[0]))) != 0 {
		return ""
	}
	return dynlib.GoString(b)
}

// Kernel is a loaded module's kernel function, ready for Launch and Bench. It belongs to the
// Device that loaded it and is freed by Release or Close.
type Kernel struct {
	dev        *Device
	name       string
	module     uintptr // CUmodule
	fn         uintptr // CUfunction
	maxThreads int
	regs       int
	shared     int
	params     []int // byte size of each parameter; nil when the driver cannot say
	image      Image
	released   bool
}

// Name returns the kernel's entry point.
func (k *Kernel) Name() string { return k.name }

// MaxThreadsPerBlock returns the most threads a block of this kernel may have on its device.
func (k *Kernel) MaxThreadsPerBlock() int { return k.maxThreads }

// Registers returns the registers each thread uses (CU_FUNC_ATTRIBUTE_NUM_REGS).
func (k *Kernel) Registers() int { return k.regs }

// SharedMemory returns the bytes of static shared memory a block uses.
func (k *Kernel) SharedMemory() int { return k.shared }

// ParamSizes returns the byte size of each kernel parameter as the driver reports it
// (cuFuncGetParamInfo, CUDA 12.4+), or nil when the driver cannot say.
func (k *Kernel) ParamSizes() []int { return slices.Clone(k.params) }

// Image returns what Compile built (zero for a kernel from Load).
func (k *Kernel) Image() Image { return k.image }

// Compile compiles CUDA C++ source with NVRTC for this device (see CompileNVRTC: the device's
// architecture, --fmad=false, then options) and loads the kernel entry from it. The source must
// declare entry extern "C" (or entry must be its mangled name).
func (d *Device) Compile(src, entry string, options ...string) (*Kernel, error) {
	img, err := CompileNVRTC(src, entry+".cu", d.info.ComputeMajor*10+d.info.ComputeMinor, options...)
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

// CUfunction_attribute values the runtime reads.
const (
	cuFuncAttrMaxThreadsPerBlock = 0
	cuFuncAttrSharedSizeBytes    = 1
	cuFuncAttrNumRegs            = 4
)

// Load loads a module from image (PTX text, a cubin or a fatbin: what cuModuleLoadData takes,
// e.g. clang's or nvcc's PTX) and returns its kernel entry.
func (d *Device) Load(image []byte, entry string) (*Kernel, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: Load %q: empty image", entry)
	}
	leave, err := d.enter("Load")
	if err != nil {
		return nil, err
	}
	defer leave()
	l := d.lib
	// PTX must be NUL-terminated; the extra byte is harmless after a cubin.
	img := make([]byte, len(image)+1)
	copy(img, image)
	k := &Kernel{dev: d, name: entry}
	if err := l.check("cuModuleLoadData", dynlib.Call(l.cuModuleLoadData, uintptr(unsafe.Pointer(&k.module)), uintptr(unsafe.Pointer(&img[0])))); err != nil {
		return nil, fmt.Errorf("cuda: Load %q: %w", entry, d.fail(err))
	}
	if err := l.check("cuModuleGetFunction", dynlib.Call(l.cuModuleGetFunction, uintptr(unsafe.Pointer(&k.fn)), k.module, uintptr(unsafe.Pointer(dynlib.CBytes(entry))))); err != nil {
		dynlib.Call(l.cuModuleUnload, k.module)
		return nil, fmt.Errorf("cuda: Load: no kernel %q in the module: %w", entry, err)
	}
	attr := func(a int) (int, error) {
		var v int32
		err := l.check("cuFuncGetAttribute", dynlib.Call(l.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), k.fn))
		return int(v), err
	}
	if k.maxThreads, err = attr(cuFuncAttrMaxThreadsPerBlock); err != nil {
		dynlib.Call(l.cuModuleUnload, k.module)
		return nil, fmt.Errorf("cuda: Load %q: %w", entry, err)
	}
	k.regs, _ = attr(cuFuncAttrNumRegs)
	k.shared, _ = attr(cuFuncAttrSharedSizeBytes)
	k.params = l.paramSizes(k.fn)
	d.kernels[k] = struct{}{}
	return k, nil
}

// paramSizes lists a function's parameter sizes through cuFuncGetParamInfo, or nil when the
// driver lacks it or cannot say.
func (l *cuDriver) paramSizes(fn uintptr) []int {
	if l.cuFuncGetParamInfo == 0 {
		return nil
	}
	sizes := []int{}
	for i := 0; i < 4096; i++ {
		var off, size uint64
		r := dynlib.Call(l.cuFuncGetParamInfo, fn, uintptr(i), uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)))
		if r == 1 { // CUDA_ERROR_INVALID_VALUE: past the last parameter
			return sizes
		}
		if r != 0 {
			return nil
		}
		sizes = append(sizes, int(size))
	}
	return nil
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
	if dynlib.Call(d.lib.cuCtxSetCurrent, d.ctx) == 0 {
		dynlib.Call(d.lib.cuModuleUnload, k.module)
	}
	k.module, k.fn, k.released = 0, 0, true
	delete(d.kernels, k)
}

// rtLaunchArgs holds a launch's argument values and the array of pointers to them that
// cuLaunchKernel takes: one 8-byte device pointer per buffer, in order, then one 4-byte value per
// scalar parameter, in order. It matches the emitted kernels' signature (buffers as pointers in
// binding order, then 32-bit scalars).
type rtLaunchArgs struct {
	ptrs    []uint64
	scalars []uint32
	args    []unsafe.Pointer // &ptrs[0], ..., &scalars[0], ...
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
		return nil, fmt.Errorf("cuda: %s: kernel is nil or from another device", op)
	}
	if k.released {
		return nil, fmt.Errorf("cuda: %s: kernel %q was released", op, k.name)
	}
	ptrs := make([]uint64, len(bufs))
	for i, b := range bufs {
		switch {
		case b == nil:
			return nil, fmt.Errorf("cuda: %s: kernel %q: buffer %d is nil", op, k.name, i)
		case b.dev != d:
			return nil, fmt.Errorf("cuda: %s: kernel %q: buffer %d belongs to another device", op, k.name, i)
		case b.released:
			return nil, fmt.Errorf("cuda: %s: kernel %q: buffer %d was released", op, k.name, i)
		}
		ptrs[i] = b.ptr
	}
	if k.params != nil {
		if len(k.params) != len(bufs)+len(params) {
			return nil, fmt.Errorf("cuda: %s: kernel %q takes %d parameters, got %d buffers and %d scalars", op, k.name, len(k.params), len(bufs), len(params))
		}
		for i, s := range k.params {
			want, what := 8, "buffer pointer"
			if i >= len(bufs) {
				want, what = 4, "32-bit scalar"
			}
			if s != want {
				return nil, fmt.Errorf("cuda: %s: kernel %q: parameter %d is %d bytes; a %s is %d", op, k.name, i, s, what, want)
			}
		}
	}
	threads := uint64(1)
	for i := 0; i < 3; i++ {
		if grid[i] == 0 || block[i] == 0 {
			return nil, fmt.Errorf("cuda: %s: kernel %q: grid %v and block %v must be at least 1 in every dimension", op, k.name, grid, block)
		}
		if grid[i] > d.info.MaxGrid[i] || block[i] > d.info.MaxBlock[i] {
			return nil, fmt.Errorf("cuda: %s: kernel %q: grid %v / block %v exceed the device's limits %v / %v", op, k.name, grid, block, d.info.MaxGrid, d.info.MaxBlock)
		}
		threads *= uint64(block[i])
	}
	if threads > uint64(k.maxThreads) {
		return nil, fmt.Errorf("cuda: %s: kernel %q: block %v has %d threads; the kernel allows %d", op, k.name, block, threads, k.maxThreads)
	}
	return rtPackArgs(ptrs, params), nil
}

// launch enqueues one launch on the device's stream.
func (d *Device) launch(k *Kernel, a *rtLaunchArgs, grid, block [3]uint32) error {
	l := d.lib
	r := dynlib.Call(l.cuLaunchKernel, k.fn,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		0, d.stream, a.pointer(), 0)
	return l.check("cuLaunchKernel", r)
}

// Launch runs k once over grid blocks of block threads with bufs (device pointers, in order) and
// params (32-bit scalars, in order) as its arguments, and waits for it to finish. Where the
// driver reports parameter sizes (CUDA 12.4+), the counts and sizes are checked first.
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
		return fmt.Errorf("cuda: Launch %q: %w", k.name, d.fail(err))
	}
	if err := d.lib.check("cuStreamSynchronize", dynlib.Call(d.lib.cuStreamSynchronize, d.stream)); err != nil {
		return fmt.Errorf("cuda: Launch %q: %w", k.name, d.fail(err))
	}
	return nil
}

// BenchResult is the outcome of a kernel-only benchmark.
type BenchResult struct {
	PerDispatch time.Duration // Total / n
	Total       time.Duration // the n timed launches, by CUDA events
	Wall        time.Duration // host time from the first timed launch to the end of the final wait
	Timestamps  bool          // measured on the device (always true: CUDA events)
}

// Bench is the kernel-only benchmark: warmup launches and a wait, then n launches back to back on
// the device's stream between two events, one wait on the last event, and the events' elapsed
// time. Buffers are neither copied nor cleared between launches.
func (d *Device) Bench(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32, warmup, n int) (BenchResult, error) {
	if n < 1 || warmup < 0 {
		return BenchResult{}, fmt.Errorf("cuda: Bench: need n >= 1 and warmup >= 0, got n=%d warmup=%d", n, warmup)
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
		return BenchResult{}, fmt.Errorf("cuda: Bench %q: %w", k.name, d.fail(err))
	}
	for i := 0; i < warmup; i++ {
		if err := d.launch(k, a, grid, block); err != nil {
			return fail(err)
		}
	}
	if err := l.check("cuStreamSynchronize", dynlib.Call(l.cuStreamSynchronize, d.stream)); err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := l.check("cuEventRecord", dynlib.Call(l.cuEventRecord, d.events[0], d.stream)); err != nil {
		return fail(err)
	}
	for i := 0; i < n; i++ {
		if err := d.launch(k, a, grid, block); err != nil {
			return fail(err)
		}
	}
	if err := l.check("cuEventRecord", dynlib.Call(l.cuEventRecord, d.events[1], d.stream)); err != nil {
		return fail(err)
	}
	if err := l.check("cuEventSynchronize", dynlib.Call(l.cuEventSynchronize, d.events[1])); err != nil {
		return fail(err)
	}
	wall := time.Since(start)
	var ms float32
	if err := l.check(l.sym("cuEventElapsedTime"), dynlib.Call(l.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), d.events[0], d.events[1])); err != nil {
		return fail(err)
	}
	total := time.Duration(math.Round(float64(ms) * 1e6))
	return BenchResult{PerDispatch: total / time.Duration(n), Total: total, Wall: wall, Timestamps: true}, nil
}
