package gpudrv

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/onesource-go/onesource/internal/dynlib"
)

// ErrUnavailable is wrapped by every error that says a runtime cannot be used on this machine (no
// library, no device, no run-time compiler): errors.Is(err, ErrUnavailable). Such an error reads
// "unavailable: <backend>: <reason>". Packages cuda and hip re-export it.
var ErrUnavailable = errors.New("unavailable")

// Unavailable formats an unavailable error of backend: "unavailable: cuda: <reason>".
func Unavailable(backend, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrUnavailable, backend, fmt.Sprintf(format, args...))
}

// Call is one function of a driver library that the shared code calls. The CUDA driver API and
// the HIP runtime (which mirrors it call for call) take the same arguments in the same order for
// each; a backend's Spelling names the symbol.
type Call int

// The calls, with the arguments the shared code passes. Pointers are to the result.
const (
	CallCurrent         Call = iota // (handle): cuCtxSetCurrent(context), hipSetDevice(ordinal)
	CallAlloc                       // (&ptr, bytes)
	CallFree                        // (ptr)
	CallZero                        // (ptr, 0, bytes): a byte memset
	CallCopyHtoD                    // (dst, src, bytes), synchronous
	CallCopyDtoH                    // (dst, src, bytes), synchronous
	CallModuleLoad                  // (&module, image)
	CallModuleUnload                // (module)
	CallFunction                    // (&function, module, name)
	CallFuncAttribute               // (&value, attribute, function); optional
	CallFuncParamInfo               // (function, index, &offset, &size); optional (CUDA 12.4+)
	CallLaunch                      // (function, grid x y z, block x y z, shared bytes, stream, params, extra)
	CallStreamCreate                // (&stream, flags 0)
	CallStreamDestroy               // (stream)
	CallStreamSync                  // (stream)
	CallEventCreate                 // (&event, flags 0: timing)
	CallEventDestroy                // (event)
	CallEventRecord                 // (event, stream)
	CallEventSync                   // (event)
	CallEventElapsed                // (&milliseconds float32, start, end)
	CallDeviceCount                 // (&count)
	CallDeviceGet                   // (&device, ordinal)
	CallDeviceName                  // (buffer, length, device)
	CallDeviceTotalMem              // (&bytes, device)
	CallDeviceAttribute             // (&value, attribute, device)
	CallInit                        // (flags 0): cuInit, hipInit
	CallDriverVersion               // (&version)
	CallDeviceSync                  // (): cuCtxSynchronize, hipDeviceSynchronize
	// NumCalls bounds the driver calls; the run-time compilers' follow (rtc.go).
	NumCalls
)

// optionalCalls may be missing from a library; a missing one leaves its address 0.
var optionalCalls = map[Call]bool{CallFuncAttribute: true, CallFuncParamInfo: true, CallRTCErrorString: true}

// Spelling names each Call's symbols in one backend's library, the preferred (versioned) one
// first; the last is the function's plain name (what Library.Symbols is keyed by). A Call a
// backend lacks is absent (it must be optional).
type Spelling map[Call][]string

// VendorCalls is the first Call a backend may define for functions only its library has
// (cuInit, hipGetDeviceProperties, nvrtcGetCUBIN, ...), up to MaxCalls.
const VendorCalls Call = 48

// MaxCalls bounds the Calls of a Library.
const MaxCalls Call = 64

// Symbols is what a library must export (Calls: the shared calls, and the backend's own) and
// may export (Optional: missing ones leave their address 0).
type Symbols struct {
	Calls, Optional Spelling
}

// Library is a loaded driver or run-time compiler library: its path, the symbols resolved and
// the addresses of the Calls (Calls[c] is 0 for a missing optional call).
type Library struct {
	Backend string            // "cuda" or "hip": the first word of its errors
	Path    string            // the file loaded
	Source  string            // the environment variable that chose it, or "default"
	Handle  uintptr           // the loaded library, for resolving more symbols
	Symbols map[string]string // function -> the symbol resolved, e.g. "cuMemAlloc" -> "cuMemAlloc_v2"
	Calls   [MaxCalls]uintptr
	names   [MaxCalls]string // the symbol resolved per call, for errors
	// ResultName names a non-zero result of a call (the error enum); nil prints the number.
	ResultName func(code int) string
	// InitErr says why a library that loaded cannot run (its initialisation failed: no device,
	// a stub library), as an unavailable error; nil when it can.
	InitErr error
}

// OpenLibrary loads the first of candidates that loads (source says where the list came from:
// env, the environment variable that names the library, or "default") and resolves syms through
// it. what names the library in errors ("CUDA driver library", "NVRTC library"). Every error is
// an unavailable error of backend saying why.
func OpenLibrary(backend, what string, candidates []string, source, env string, syms Symbols) (*Library, error) {
	switch {
	case !dynlib.CanLoad:
		_, err := dynlib.Open(what)
		return nil, Unavailable(backend, "%v", err)
	case len(candidates) == 0:
		return nil, Unavailable(backend, "no %s is known on this platform; set %s", what, env)
	}
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return nil, Unavailable(backend, "the runtime supports 64-bit platforms only")
	}
	h, path, errs := dynlib.OpenFirst(candidates)
	if h == 0 {
		if source == env {
			return nil, Unavailable(backend, "cannot load the %s %q (%s): %s", what, candidates[0], source, strings.Join(errs, "; "))
		}
		return nil, Unavailable(backend, "no %s found (tried %s; set %s): first error: %s", what, strings.Join(candidates, ", "), env, errs[0])
	}
	l := &Library{Backend: backend, Path: path, Source: source, Handle: h}
	got, err := dynlib.ResolveAll(fmt.Sprintf("%q", path), l.Table(syms), func(name string) uintptr { return dynlib.Symbol(h, name) })
	l.Symbols = got
	if err != nil {
		return nil, Unavailable(backend, "%q (%s) is not a usable %s: %v", path, source, what, err)
	}
	for _, sp := range []Spelling{syms.Calls, syms.Optional} {
		for c, names := range sp {
			l.names[c] = got[names[len(names)-1]]
		}
	}
	return l, nil
}

// Table is the symbol table a library is resolved with, in Call order: one entry per call of
// syms, filling l.Calls.
func (l *Library) Table(syms Symbols) []dynlib.Sym {
	var out []dynlib.Sym
	for c := Call(0); c < MaxCalls; c++ {
		names, optional := syms.Calls[c], optionalCalls[c]
		if len(names) == 0 {
			names, optional = syms.Optional[c], true
		}
		if len(names) == 0 {
			continue
		}
		out = append(out, dynlib.Sym{Ptr: &l.Calls[c], Fn: names[len(names)-1], Names: names, Optional: optional})
	}
	return out
}

// Has reports whether the library exports call c.
func (l *Library) Has(c Call) bool { return l != nil && l.Calls[c] != 0 }

// Raw calls c with args and returns its result unchecked (0 when the library lacks c): for
// functions that return something other than a result code.
//
//go:uintptrescapes
func (l *Library) Raw(c Call, args ...uintptr) uintptr {
	if !l.Has(c) {
		return 0
	}
	return dynlib.Call(l.Calls[c], args...)
}

// Check turns a C function's 32-bit result into an error naming the call and the result (nil for
// 0, success). It may be called on a nil Library.
func (l *Library) Check(call string, r uintptr) error {
	return Check(call, r, func(code int) string {
		if l != nil && l.ResultName != nil {
			return l.ResultName(code)
		}
		return fmt.Sprintf("result %d", code)
	})
}

// Do calls c with args and checks its result.
//
//go:uintptrescapes
func (l *Library) Do(c Call, args ...uintptr) error {
	name := l.names[c]
	if name == "" {
		name = fmt.Sprintf("call %d", int(c))
	}
	if l.Calls[c] == 0 {
		return &ResultError{Call: name, Code: -1, Name: "not in the library"}
	}
	return l.Check(name, dynlib.Call(l.Calls[c], args...))
}

// Text calls c, a function that returns a C string for a result code (nvrtcGetErrorString,
// hipGetErrorName), and returns the string ("" when the library lacks c or it returns none).
func (l *Library) Text(c Call, code int) string { return dynlib.CStringAt(l.Raw(c, uintptr(code))) }

// DeviceCount returns the number of devices; an error, or none, is an unavailable error
// ("no CUDA device ..."). noDevice reports the result codes that mean there is no device.
func (l *Library) DeviceCount(noDevice func(code int) bool) (int, error) {
	var n int32
	if err := l.Do(CallDeviceCount, uintptr(unsafe.Pointer(&n))); err != nil {
		var re *ResultError
		if errors.As(err, &re) && noDevice != nil && noDevice(re.Code) {
			return 0, Unavailable(l.Backend, "no %s device (%s: %v)", strings.ToUpper(l.Backend), l.Path, err)
		}
		return 0, Unavailable(l.Backend, "%q: %v", l.Path, err)
	}
	if n <= 0 {
		return 0, Unavailable(l.Backend, "no %s device (%q reports none)", strings.ToUpper(l.Backend), l.Path)
	}
	return int(n), nil
}

// Described is what every library reports of a device: its handle, name and memory, and a
// reader of its attributes by the device's handle (the backend's attribute numbers).
type Described struct {
	Handle int32
	Name   string
	Memory uint64
	Attr   func(id int) (int, error)
}

// describe reads device index: its handle (CallDeviceGet), name and total memory.
func (l *Library) describe(index int) (Described, error) {
	var d Described
	if err := l.Do(CallDeviceGet, uintptr(unsafe.Pointer(&d.Handle)), uintptr(index)); err != nil {
		return d, err
	}
	name := make([]byte, 256)
	if err := l.Do(CallDeviceName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(d.Handle)); err != nil {
		return d, err
	}
	d.Name = dynlib.GoString(name)
	if err := l.Do(CallDeviceTotalMem, uintptr(unsafe.Pointer(&d.Memory)), uintptr(d.Handle)); err != nil {
		return d, err
	}
	d.Attr = l.AttrOf(int(d.Handle))
	return d, nil
}

// AttrOf returns a reader of device dev's attributes (CallDeviceAttribute): CUDA names a device
// by its handle there, HIP by its ordinal.
func (l *Library) AttrOf(dev int) func(id int) (int, error) {
	return func(id int) (int, error) {
		var v int32
		err := l.Do(CallDeviceAttribute, uintptr(unsafe.Pointer(&v)), uintptr(id), uintptr(dev))
		return int(v), err
	}
}

// LibraryDriver is the Driver over a loaded library's Calls for one open device: what both
// backends use on a GPU. Current is made current with CallCurrent(Handle); Release, when set,
// gives up what the backend took for the device (CUDA's primary context).
type LibraryDriver struct {
	Lib     *Library
	Handle  uintptr
	OnClose func()
	// ThreadLimitRequired makes a failed read of the thread limit an error (CUDA); otherwise the
	// device's limit applies (HIP, whose hipFuncGetAttribute some releases lack).
	ThreadLimitRequired bool
}

func (d *LibraryDriver) Current() error { return d.Lib.Do(CallCurrent, d.Handle) }

func (d *LibraryDriver) Alloc(size int) (uint64, error) {
	var p uint64
	err := d.Lib.Do(CallAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size))
	return p, err
}

func (d *LibraryDriver) Free(p uint64) error { return d.Lib.Do(CallFree, uintptr(p)) }

func (d *LibraryDriver) Zero(p uint64, n int) error {
	return d.Lib.Do(CallZero, uintptr(p), 0, uintptr(n))
}

// CopyHtoD is synchronous; the device's stream is a blocking one (flags 0), ordered with the
// null stream the copy goes to, so earlier launches finish first.
func (d *LibraryDriver) CopyHtoD(dst uint64, src []byte) error {
	return d.Lib.Do(CallCopyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)))
}

func (d *LibraryDriver) CopyDtoH(dst []byte, src uint64) error {
	return d.Lib.Do(CallCopyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)))
}

// LoadModule loads PTX, a cubin, a fatbin or an AMDGPU code object. It appends a NUL: PTX must
// be NUL-terminated, and the byte is harmless after a binary image.
func (d *LibraryDriver) LoadModule(image []byte) (uintptr, error) {
	img := make([]byte, len(image)+1)
	copy(img, image)
	var m uintptr
	err := d.Lib.Do(CallModuleLoad, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&img[0])))
	return m, err
}

func (d *LibraryDriver) UnloadModule(m uintptr) error { return d.Lib.Do(CallModuleUnload, m) }

func (d *LibraryDriver) Function(m uintptr, name string) (uintptr, error) {
	var fn uintptr
	err := d.Lib.Do(CallFunction, uintptr(unsafe.Pointer(&fn)), m, uintptr(unsafe.Pointer(dynlib.CBytes(name))))
	return fn, err
}

// FuncInfo reads the thread limit, registers and static shared memory where the library has
// CallFuncAttribute, and the parameter sizes where it has CallFuncParamInfo.
func (d *LibraryDriver) FuncInfo(fn uintptr) (FuncInfo, error) {
	var info FuncInfo
	if d.Lib.Calls[CallFuncAttribute] != 0 {
		attr := func(a int) (int, error) {
			var v int32
			err := d.Lib.Do(CallFuncAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), fn)
			return int(v), err
		}
		// CUfunction_attribute and hipFunction_attribute agree: the thread limit is 0, static
		// shared memory 1, registers 4.
		v, err := attr(0)
		if err != nil && d.ThreadLimitRequired {
			return info, err
		}
		if err == nil && v > 0 {
			info.MaxThreads = v
		}
		info.SharedMemory, _ = attr(1)
		info.Registers, _ = attr(4)
	} else if d.ThreadLimitRequired {
		return info, &ResultError{Call: "function attributes", Code: -1, Name: "not in the library"}
	}
	info.Params = d.paramSizes(fn)
	return info, nil
}

// paramSizes lists a function's parameter sizes through CallFuncParamInfo, or nil when the
// library lacks it or cannot say.
func (d *LibraryDriver) paramSizes(fn uintptr) []int {
	p := d.Lib.Calls[CallFuncParamInfo]
	if p == 0 {
		return nil
	}
	sizes := []int{}
	for i := 0; i < 4096; i++ {
		var off, size uint64
		r := dynlib.Call(p, fn, uintptr(i), uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)))
		if r == 1 { // invalid value: past the last parameter
			return sizes
		}
		if r != 0 {
			return nil
		}
		sizes = append(sizes, int(size))
	}
	return nil
}

func (d *LibraryDriver) Launch(fn uintptr, grid, block [3]uint32, stream uintptr, args []unsafe.Pointer) error {
	var params uintptr
	if len(args) > 0 {
		params = uintptr(unsafe.Pointer(&args[0]))
	}
	return d.Lib.Do(CallLaunch, fn,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		0, stream, params, 0)
}

// handle makes a stream or an event: (&h, flags 0).
func (d *LibraryDriver) handle(c Call) (uintptr, error) {
	var h uintptr
	err := d.Lib.Do(c, uintptr(unsafe.Pointer(&h)), 0)
	return h, err
}

func (d *LibraryDriver) StreamCreate() (uintptr, error) { return d.handle(CallStreamCreate) }
func (d *LibraryDriver) StreamDestroy(s uintptr) error  { return d.Lib.Do(CallStreamDestroy, s) }
func (d *LibraryDriver) StreamSync(s uintptr) error     { return d.Lib.Do(CallStreamSync, s) }
func (d *LibraryDriver) EventCreate() (uintptr, error)  { return d.handle(CallEventCreate) }
func (d *LibraryDriver) EventDestroy(e uintptr) error   { return d.Lib.Do(CallEventDestroy, e) }
func (d *LibraryDriver) EventRecord(e, s uintptr) error { return d.Lib.Do(CallEventRecord, e, s) }
func (d *LibraryDriver) EventSync(e uintptr) error      { return d.Lib.Do(CallEventSync, e) }

func (d *LibraryDriver) EventElapsed(start, end uintptr) (float32, error) {
	var ms float32
	err := d.Lib.Do(CallEventElapsed, uintptr(unsafe.Pointer(&ms)), start, end)
	return ms, err
}

// Release runs OnClose, once.
func (d *LibraryDriver) Release() {
	if d.OnClose != nil {
		d.OnClose()
		d.OnClose = nil
	}
}

// Properties are what both runtimes report of a device: Describe reads them through a backend's
// attribute numbers. Packages cuda and hip embed them in their DeviceInfo.
type Properties struct {
	Index        int    // the device ordinal (Open's argument)
	Name         string // the device's name, e.g. "NVIDIA H200", "AMD Instinct MI210"
	TotalMemory  uint64 // bytes
	PCIBusID     string // "domain:bus:device.0", e.g. "0000:1b:00.0"; "" when not reported
	ComputeMajor int    // compute capability (HIP reports one too), major
	ComputeMinor int    // and minor

	Multiprocessors      int       // SMs or compute units
	WarpSize             int       // threads per warp or wavefront (32, or 64 on CDNA and GCN)
	MaxThreadsPerBlock   int       // threads a block may have
	MaxBlock             [3]uint32 // largest block dimensions
	MaxGrid              [3]uint32 // largest grid dimensions
	SharedMemoryPerBlock int       // bytes of static shared memory (LDS) a block may use
	L2CacheSize          int       // bytes (0: not reported)
	ClockKHz             int       // peak clock (0: not reported)
	MemoryClockKHz       int       // peak memory clock (0: not reported)
	MemoryBusWidth       int       // bits (0: not reported)
}

// AttrNumbers are a backend's device attribute numbers (CUdevice_attribute,
// hipDeviceAttribute_t) for the attributes Properties holds. The block and grid dimensions are
// three consecutive numbers each, from BlockDimX and GridDimX.
type AttrNumbers struct {
	ComputeMajor, ComputeMinor, Multiprocessors, WarpSize, MaxThreadsPerBlock, SharedMemoryPerBlock int
	L2CacheSize, ClockRate, MemoryClockRate, MemoryBusWidth                                         int // optional: drivers drop some
	BlockDimX, GridDimX, PCIDomain, PCIBus, PCIDevice                                               int
}

// Describe reads device index: its handle, name and memory, and the attributes nums numbers
// (the optional ones 0 when the driver has dropped them: CUDA 13 deprecates the clock rates). The
// attributes are read by the device's handle, or with byOrdinal by its ordinal (HIP's
// hipDeviceGetAttribute takes the ordinal). d.Attr reads more the same way.
func (l *Library) Describe(index int, nums AttrNumbers, byOrdinal bool) (p Properties, d Described, err error) {
	p.Index = index
	if d, err = l.describe(index); err != nil {
		return p, d, err
	}
	if byOrdinal {
		d.Attr = l.AttrOf(index)
	}
	p.Name, p.TotalMemory = d.Name, d.Memory
	err = ReadAttrs(d.Attr, []Attr{
		{nums.ComputeMajor, &p.ComputeMajor}, {nums.ComputeMinor, &p.ComputeMinor},
		{nums.Multiprocessors, &p.Multiprocessors}, {nums.WarpSize, &p.WarpSize},
		{nums.MaxThreadsPerBlock, &p.MaxThreadsPerBlock}, {nums.SharedMemoryPerBlock, &p.SharedMemoryPerBlock},
	}, []Attr{
		{nums.L2CacheSize, &p.L2CacheSize}, {nums.ClockRate, &p.ClockKHz},
		{nums.MemoryClockRate, &p.MemoryClockKHz}, {nums.MemoryBusWidth, &p.MemoryBusWidth},
	})
	if err != nil {
		return p, d, err
	}
	if p.MaxBlock, p.MaxGrid, err = ReadDims(d.Attr, nums.BlockDimX, nums.GridDimX); err != nil {
		return p, d, err
	}
	p.PCIBusID = PCIBusID(d.Attr, nums.PCIDomain, nums.PCIBus, nums.PCIDevice)
	return p, d, nil
}
