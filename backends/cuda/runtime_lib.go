package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// LibraryEnv is the environment variable that names the CUDA driver library (libcuda) to load
// instead of the platform default (libcuda.so.1 on Linux, nvcuda.dll on Windows).
const LibraryEnv = "ONESOURCE_CUDA_LIBRARY"

// NVRTCLibraryEnv is the environment variable that names the NVRTC library to load instead of
// searching for libnvrtc.so, libnvrtc.so.13, .12, .11.2, ... on the default library path and in
// the CUDA toolkit folders ($CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64).
const NVRTCLibraryEnv = "ONESOURCE_NVRTC_LIBRARY"

// ErrUnavailable is wrapped by every error that says the CUDA runtime cannot be used on this
// machine (no driver library, no NVRTC, no device): errors.Is(err, ErrUnavailable). Such an error
// reads "unavailable: cuda: <reason>".
var ErrUnavailable = errors.New("unavailable")

func rtUnavailable(format string, args ...any) error {
	return fmt.Errorf("%w: cuda: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}

// ResultError is a CUDA driver or NVRTC call that returned something other than success.
type ResultError struct {
	Call string // the C function, e.g. "cuLaunchKernel" or "nvrtcCompileProgram"
	Code int    // the CUresult or nvrtcResult value
	Name string // the value's name, e.g. "CUDA_ERROR_INVALID_VALUE"
}

// Error names the call and the result, e.g. "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)".
func (e *ResultError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
}

// rtSym is one C function the runtime resolves: where its address goes, the name it is known by
// and the symbols to try, the preferred (versioned) one first.
type rtSym struct {
	ptr      *uintptr
	fn       string   // the function, e.g. "cuMemAlloc"
	names    []string // symbols to try in order; nil means fn alone
	optional bool     // a missing optional function leaves *ptr 0 and is no error
}

// rtResolve returns the address and the name of the first of names that lookup finds, or 0 and
// "" when none is there. It is how versioned symbols (cuMemAlloc_v2) are chosen at run time.
func rtResolve(lookup func(name string) uintptr, names ...string) (uintptr, string) {
	for _, n := range names {
		if p := lookup(n); p != 0 {
			return p, n
		}
	}
	return 0, ""
}

// rtResolveAll fills every entry of syms through lookup and returns which symbol each function
// got. Missing required functions make an error that lists them (with every name tried).
func rtResolveAll(what string, syms []rtSym, lookup func(name string) uintptr) (map[string]string, error) {
	got := make(map[string]string, len(syms))
	var missing []string
	for _, s := range syms {
		names := s.names
		if names == nil {
			names = []string{s.fn}
		}
		p, name := rtResolve(lookup, names...)
		*s.ptr = p
		if p != 0 {
			got[s.fn] = name
		} else if !s.optional {
			missing = append(missing, strings.Join(names, "|"))
		}
	}
	if len(missing) > 0 {
		return got, fmt.Errorf("%s lacks %s", what, strings.Join(missing, ", "))
	}
	return got, nil
}

// rtCString returns the NUL-terminated C string at p ("" for nil).
func rtCString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// rtCBytes returns s as a NUL-terminated C string in Go memory.
func rtCBytes(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// rtGoString returns the NUL-terminated string at the start of b.
func rtGoString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// cuDriver is a loaded CUDA driver library with its functions.
type cuDriver struct {
	path    string
	source  string            // LibraryEnv or "default"
	symbols map[string]string // function -> resolved symbol
	version int               // cuDriverGetVersion: 1000*major + 10*minor
	initErr error             // what cuInit said (nil: rtInitialised)

	cuInit                    uintptr
	cuDriverGetVersion        uintptr
	cuGetErrorName            uintptr
	cuDeviceGetCount          uintptr
	cuDeviceGet               uintptr
	cuDeviceGetName           uintptr
	cuDeviceGetAttribute      uintptr
	cuDeviceTotalMem          uintptr
	cuDevicePrimaryCtxRetain  uintptr
	cuDevicePrimaryCtxRelease uintptr
	cuCtxSetCurrent           uintptr
	cuCtxSynchronize          uintptr
	cuModuleLoadData          uintptr
	cuModuleUnload            uintptr
	cuModuleGetFunction       uintptr
	cuFuncGetAttribute        uintptr
	cuFuncGetParamInfo        uintptr
	cuMemAlloc                uintptr
	cuMemFree                 uintptr
	cuMemcpyHtoD              uintptr
	cuMemcpyDtoH              uintptr
	cuMemsetD8                uintptr
	cuLaunchKernel            uintptr
	cuStreamCreate            uintptr
	cuStreamDestroy           uintptr
	cuStreamSynchronize       uintptr
	cuEventCreate             uintptr
	cuEventDestroy            uintptr
	cuEventRecord             uintptr
	cuEventSynchronize        uintptr
	cuEventElapsedTime        uintptr
}

// table lists the driver functions the runtime uses. Versioned names come first and are chosen
// when the library has them; only functions whose versioned and plain symbols take the same
// arguments are listed with both (cuCtxSynchronize_v2, say, takes a context and is not used).
func (l *cuDriver) table() []rtSym {
	v2 := func(name string) []string { return []string{name + "_v2", name} }
	return []rtSym{
		{ptr: &l.cuInit, fn: "cuInit"},
		{ptr: &l.cuDriverGetVersion, fn: "cuDriverGetVersion"},
		{ptr: &l.cuGetErrorName, fn: "cuGetErrorName", optional: true},
		{ptr: &l.cuDeviceGetCount, fn: "cuDeviceGetCount"},
		{ptr: &l.cuDeviceGet, fn: "cuDeviceGet"},
		{ptr: &l.cuDeviceGetName, fn: "cuDeviceGetName"},
		{ptr: &l.cuDeviceGetAttribute, fn: "cuDeviceGetAttribute"},
		{ptr: &l.cuDeviceTotalMem, fn: "cuDeviceTotalMem", names: v2("cuDeviceTotalMem")},
		{ptr: &l.cuDevicePrimaryCtxRetain, fn: "cuDevicePrimaryCtxRetain"},
		{ptr: &l.cuDevicePrimaryCtxRelease, fn: "cuDevicePrimaryCtxRelease", names: v2("cuDevicePrimaryCtxRelease")},
		{ptr: &l.cuCtxSetCurrent, fn: "cuCtxSetCurrent"},
		{ptr: &l.cuCtxSynchronize, fn: "cuCtxSynchronize"},
		{ptr: &l.cuModuleLoadData, fn: "cuModuleLoadData"},
		{ptr: &l.cuModuleUnload, fn: "cuModuleUnload"},
		{ptr: &l.cuModuleGetFunction, fn: "cuModuleGetFunction"},
		{ptr: &l.cuFuncGetAttribute, fn: "cuFuncGetAttribute"},
		{ptr: &l.cuFuncGetParamInfo, fn: "cuFuncGetParamInfo", optional: true}, // CUDA 12.4+
		{ptr: &l.cuMemAlloc, fn: "cuMemAlloc", names: v2("cuMemAlloc")},
		{ptr: &l.cuMemFree, fn: "cuMemFree", names: v2("cuMemFree")},
		{ptr: &l.cuMemcpyHtoD, fn: "cuMemcpyHtoD", names: v2("cuMemcpyHtoD")},
		{ptr: &l.cuMemcpyDtoH, fn: "cuMemcpyDtoH", names: v2("cuMemcpyDtoH")},
		{ptr: &l.cuMemsetD8, fn: "cuMemsetD8", names: v2("cuMemsetD8")},
		{ptr: &l.cuLaunchKernel, fn: "cuLaunchKernel"},
		{ptr: &l.cuStreamCreate, fn: "cuStreamCreate"},
		{ptr: &l.cuStreamDestroy, fn: "cuStreamDestroy", names: v2("cuStreamDestroy")},
		{ptr: &l.cuStreamSynchronize, fn: "cuStreamSynchronize"},
		{ptr: &l.cuEventCreate, fn: "cuEventCreate"},
		{ptr: &l.cuEventDestroy, fn: "cuEventDestroy", names: v2("cuEventDestroy")},
		{ptr: &l.cuEventRecord, fn: "cuEventRecord"},
		{ptr: &l.cuEventSynchronize, fn: "cuEventSynchronize"},
		{ptr: &l.cuEventElapsedTime, fn: "cuEventElapsedTime", names: v2("cuEventElapsedTime")},
	}
}

// resultName names a CUresult: from the table, else from the driver's cuGetErrorName.
func (l *cuDriver) resultName(code int) string {
	if s, ok := cuResultNames[code]; ok {
		return s
	}
	if l != nil && l.cuGetErrorName != 0 {
		var p *byte
		if rtCall(l.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&p))) == 0 && p != nil {
			return rtCString(p)
		}
	}
	return fmt.Sprintf("CUresult(%d)", code)
}

// check turns a CUresult into an error naming the call (nil for CUDA_SUCCESS).
func (l *cuDriver) check(call string, r uintptr) error {
	code := int(int32(uint32(r)))
	if code == 0 {
		return nil
	}
	return &ResultError{Call: call, Code: code, Name: l.resultName(code)}
}

// sym returns the symbol resolved for fn (for error messages naming the versioned call).
func (l *cuDriver) sym(fn string) string {
	if s := l.symbols[fn]; s != "" {
		return s
	}
	return fn
}

type rtDriverResult struct {
	lib *cuDriver
	err error
}

var rtDrivers struct {
	sync.Mutex
	m map[string]rtDriverResult
}

// driverPath returns the driver library to load and where the choice came from.
func driverPath() (path, source string) {
	if p := os.Getenv(LibraryEnv); p != "" {
		return p, LibraryEnv
	}
	return rtDriverDefault, "default"
}

// loadDriver loads the driver library driverPath names and initialises it (cuInit), once per
// path; the environment is read on every call, so a changed ONESOURCE_CUDA_LIBRARY takes effect.
// A library that loads but whose cuInit fails is returned with initErr set.
func loadDriver() (*cuDriver, error) {
	path, source := driverPath()
	rtDrivers.Lock()
	defer rtDrivers.Unlock()
	if r, ok := rtDrivers.m[path]; ok {
		return r.lib, r.err
	}
	lib, err := openDriver(path, source)
	if rtDrivers.m == nil {
		rtDrivers.m = map[string]rtDriverResult{}
	}
	rtDrivers.m[path] = rtDriverResult{lib, err}
	return lib, err
}

func openDriver(path, source string) (*cuDriver, error) {
	if !rtCanLoad {
		_, err := rtOpen(path)
		return nil, rtUnavailable("%v", err)
	}
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return nil, rtUnavailable("the runtime supports 64-bit platforms only")
	}
	if path == "" {
		return nil, rtUnavailable("no CUDA driver library is known on this platform; set %s", LibraryEnv)
	}
	h, err := rtOpen(path)
	if err != nil {
		return nil, rtUnavailable("cannot load the driver library %q (%s): %v", path, source, err)
	}
	l := &cuDriver{path: path, source: source}
	syms, err := rtResolveAll(fmt.Sprintf("%q", path), l.table(), func(name string) uintptr { return rtSymbol(h, name) })
	l.symbols = syms
	if err != nil {
		return nil, rtUnavailable("%q (%s) is not a usable CUDA driver library: %v", path, source, err)
	}
	var v int32
	if err := l.check("cuDriverGetVersion", rtCall(l.cuDriverGetVersion, uintptr(unsafe.Pointer(&v)))); err == nil {
		l.version = int(v)
	}
	if err := l.check("cuInit", rtCall(l.cuInit, 0)); err != nil {
		var re *ResultError
		if errors.As(err, &re) && re.Code == 34 {
			l.initErr = rtUnavailable("%q (%s) is the CUDA stub library, not a driver: %v", path, source, err)
		} else if errors.As(err, &re) && re.Code == 100 {
			l.initErr = rtUnavailable("no CUDA device (%q: %v)", path, err)
		} else {
			l.initErr = rtUnavailable("%q (%s): %v", path, source, err)
		}
	}
	return l, nil
}

// rtInitialised returns the driver library after a successful cuInit, or why not.
func rtInitialised() (*cuDriver, error) {
	l, err := loadDriver()
	if err != nil {
		return nil, err
	}
	if l.initErr != nil {
		return nil, l.initErr
	}
	return l, nil
}

// nvrtcLib is a loaded NVRTC library with its functions.
type nvrtcLib struct {
	path    string
	symbols map[string]string
	major   int
	minor   int
	archs   []int // nvrtcGetSupportedArchs: 75, 80, ...; nil when the library cannot say

	nvrtcVersion              uintptr
	nvrtcGetErrorString       uintptr
	nvrtcCreateProgram        uintptr
	nvrtcCompileProgram       uintptr
	nvrtcDestroyProgram       uintptr
	nvrtcGetProgramLogSize    uintptr
	nvrtcGetProgramLog        uintptr
	nvrtcGetPTXSize           uintptr
	nvrtcGetPTX               uintptr
	nvrtcGetCUBINSize         uintptr
	nvrtcGetCUBIN             uintptr
	nvrtcGetNumSupportedArchs uintptr
	nvrtcGetSupportedArchs    uintptr
}

func (n *nvrtcLib) table() []rtSym {
	return []rtSym{
		{ptr: &n.nvrtcVersion, fn: "nvrtcVersion"},
		{ptr: &n.nvrtcGetErrorString, fn: "nvrtcGetErrorString", optional: true},
		{ptr: &n.nvrtcCreateProgram, fn: "nvrtcCreateProgram"},
		{ptr: &n.nvrtcCompileProgram, fn: "nvrtcCompileProgram"},
		{ptr: &n.nvrtcDestroyProgram, fn: "nvrtcDestroyProgram"},
		{ptr: &n.nvrtcGetProgramLogSize, fn: "nvrtcGetProgramLogSize"},
		{ptr: &n.nvrtcGetProgramLog, fn: "nvrtcGetProgramLog"},
		{ptr: &n.nvrtcGetPTXSize, fn: "nvrtcGetPTXSize"},
		{ptr: &n.nvrtcGetPTX, fn: "nvrtcGetPTX"},
		{ptr: &n.nvrtcGetCUBINSize, fn: "nvrtcGetCUBINSize", optional: true},                 // CUDA 11.1+
		{ptr: &n.nvrtcGetCUBIN, fn: "nvrtcGetCUBIN", optional: true},                         // CUDA 11.1+
		{ptr: &n.nvrtcGetNumSupportedArchs, fn: "nvrtcGetNumSupportedArchs", optional: true}, // CUDA 11.2+
		{ptr: &n.nvrtcGetSupportedArchs, fn: "nvrtcGetSupportedArchs", optional: true},       // CUDA 11.2+
	}
}

// check turns an nvrtcResult into an error naming the call (nil for NVRTC_SUCCESS).
func (n *nvrtcLib) check(call string, r uintptr) error {
	code := int(int32(uint32(r)))
	if code == 0 {
		return nil
	}
	name, ok := nvrtcResultNames[code]
	if !ok {
		name = fmt.Sprintf("nvrtcResult(%d)", code)
		if n.nvrtcGetErrorString != 0 {
			// nvrtcGetErrorString returns const char*; read it through a pointer-typed value.
			p := rtCall(n.nvrtcGetErrorString, uintptr(code))
			if p != 0 {
				name += " " + rtCString(*(**byte)(unsafe.Pointer(&p)))
			}
		}
	}
	return &ResultError{Call: call, Code: code, Name: name}
}

type rtNVRTCResult struct {
	lib *nvrtcLib
	err error
}

var rtNVRTCs struct {
	sync.Mutex
	m map[string]rtNVRTCResult
}

// nvrtcCandidates returns the NVRTC libraries to try, in order, and where the list came from.
func nvrtcCandidates() ([]string, string) {
	if p := os.Getenv(NVRTCLibraryEnv); p != "" {
		return []string{p}, NVRTCLibraryEnv
	}
	out := append([]string(nil), rtNVRTCNames...)
	seen := map[string]bool{}
	for _, d := range rtToolkitLibDirs {
		if v, _, ok := strings.Cut(strings.TrimPrefix(d, "$"), "/"); ok && strings.HasPrefix(d, "$") && os.Getenv(v) == "" {
			continue // $CUDA_HOME/lib64 with CUDA_HOME unset
		}
		d = os.ExpandEnv(d)
		if seen[d] {
			continue
		}
		seen[d] = true
		if _, err := os.Stat(d); err != nil {
			continue
		}
		for _, n := range rtNVRTCNames {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out, "default"
}

// loadNVRTC loads the first NVRTC library nvrtcCandidates names, once per candidate list.
func loadNVRTC() (*nvrtcLib, error) {
	names, source := nvrtcCandidates()
	key := strings.Join(names, "\x00")
	rtNVRTCs.Lock()
	defer rtNVRTCs.Unlock()
	if r, ok := rtNVRTCs.m[key]; ok {
		return r.lib, r.err
	}
	lib, err := openNVRTC(names, source)
	if rtNVRTCs.m == nil {
		rtNVRTCs.m = map[string]rtNVRTCResult{}
	}
	rtNVRTCs.m[key] = rtNVRTCResult{lib, err}
	return lib, err
}

func openNVRTC(names []string, source string) (*nvrtcLib, error) {
	if !rtCanLoad || len(names) == 0 {
		return nil, rtUnavailable("nvrtc: the runtime cannot load NVRTC on this platform")
	}
	var h uintptr
	var path string
	var errs []string
	for _, n := range names {
		p, err := rtOpen(n)
		if err == nil {
			h, path = p, n
			break
		}
		errs = append(errs, err.Error())
	}
	if h == 0 {
		if source == NVRTCLibraryEnv {
			return nil, rtUnavailable("nvrtc: cannot load %q (%s): %s", names[0], source, strings.Join(errs, "; "))
		}
		return nil, rtUnavailable("nvrtc: no NVRTC library found (tried %s; set %s): first error: %s",
			strings.Join(names, ", "), NVRTCLibraryEnv, errs[0])
	}
	n := &nvrtcLib{path: path}
	syms, err := rtResolveAll(fmt.Sprintf("%q", path), n.table(), func(name string) uintptr { return rtSymbol(h, name) })
	n.symbols = syms
	if err != nil {
		return nil, rtUnavailable("nvrtc: %q (%s) is not a usable NVRTC library: %v", path, source, err)
	}
	var major, minor int32
	if err := n.check("nvrtcVersion", rtCall(n.nvrtcVersion, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))); err != nil {
		return nil, rtUnavailable("nvrtc: %q: %v", path, err)
	}
	n.major, n.minor = int(major), int(minor)
	if n.nvrtcGetNumSupportedArchs != 0 && n.nvrtcGetSupportedArchs != 0 {
		var count int32
		if rtCall(n.nvrtcGetNumSupportedArchs, uintptr(unsafe.Pointer(&count))) == 0 && count > 0 && count < 1024 {
			archs := make([]int32, count)
			if rtCall(n.nvrtcGetSupportedArchs, uintptr(unsafe.Pointer(&archs[0]))) == 0 {
				for _, a := range archs {
					n.archs = append(n.archs, int(a))
				}
			}
		}
	}
	return n, nil
}

// Library describes the CUDA libraries this process loads: what Libraries reports.
type Library struct {
	DriverPath    string            // the driver library (libcuda) loaded
	DriverVersion int               // cuDriverGetVersion: 1000*major + 10*minor, e.g. 12080 for 12.8
	DriverError   error             // why the driver cannot be used (cuInit failed), or nil
	NVRTCPath     string            // the NVRTC library loaded; "" when none could be
	NVRTCVersion  [2]int            // nvrtcVersion: major, minor
	NVRTCArchs    []int             // the SM versions NVRTC compiles for (75 for sm_75, ...); nil if it cannot say
	NVRTCError    error             // why NVRTC cannot be loaded, or nil
	Symbols       map[string]string // function -> symbol resolved, e.g. "cuMemAlloc" -> "cuMemAlloc_v2"
}

// Libraries loads the CUDA driver and NVRTC libraries and reports what was loaded. The error is
// about the driver library only (it wraps ErrUnavailable); an NVRTC problem is in NVRTCError.
func Libraries() (Library, error) {
	var out Library
	l, err := loadDriver()
	if err != nil {
		return out, err
	}
	out.DriverPath, out.DriverVersion, out.DriverError = l.path, l.version, l.initErr
	out.Symbols = map[string]string{}
	for k, v := range l.symbols {
		out.Symbols[k] = v
	}
	n, nerr := loadNVRTC()
	if nerr != nil {
		out.NVRTCError = nerr
	} else {
		out.NVRTCPath, out.NVRTCVersion, out.NVRTCArchs = n.path, [2]int{n.major, n.minor}, append([]int(nil), n.archs...)
		for k, v := range n.symbols {
			out.Symbols[k] = v
		}
	}
	return out, nil
}

// FormatVersion formats a CUDA version number as cuDriverGetVersion returns it (12080 -> "12.8").
func FormatVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
