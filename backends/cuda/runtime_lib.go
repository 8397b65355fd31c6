package cuda

import (
	"errors"
	"fmt"
	"github.com/onesource-go/onesource/internal/dynlib"
	"os"
	"strings"
	"unsafe"

	"github.com/onesource-go/onesource/internal/gpudrv"
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

// ResultError is a CUDA driver or NVRTC call that returned something other than success: Call
// names the C function (e.g. "cuLaunchKernel" or "nvrtcCompileProgram"), Code is the CUresult
// or nvrtcResult value and Name its name (e.g. "CUDA_ERROR_INVALID_VALUE").
type ResultError = gpudrv.ResultError

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
func (l *cuDriver) table() []dynlib.Sym {
	v2 := func(name string) []string { return []string{name + "_v2", name} }
	return []dynlib.Sym{
		{Ptr: &l.cuInit, Fn: "cuInit"},
		{Ptr: &l.cuDriverGetVersion, Fn: "cuDriverGetVersion"},
		{Ptr: &l.cuGetErrorName, Fn: "cuGetErrorName", Optional: true},
		{Ptr: &l.cuDeviceGetCount, Fn: "cuDeviceGetCount"},
		{Ptr: &l.cuDeviceGet, Fn: "cuDeviceGet"},
		{Ptr: &l.cuDeviceGetName, Fn: "cuDeviceGetName"},
		{Ptr: &l.cuDeviceGetAttribute, Fn: "cuDeviceGetAttribute"},
		{Ptr: &l.cuDeviceTotalMem, Fn: "cuDeviceTotalMem", Names: v2("cuDeviceTotalMem")},
		{Ptr: &l.cuDevicePrimaryCtxRetain, Fn: "cuDevicePrimaryCtxRetain"},
		{Ptr: &l.cuDevicePrimaryCtxRelease, Fn: "cuDevicePrimaryCtxRelease", Names: v2("cuDevicePrimaryCtxRelease")},
		{Ptr: &l.cuCtxSetCurrent, Fn: "cuCtxSetCurrent"},
		{Ptr: &l.cuCtxSynchronize, Fn: "cuCtxSynchronize"},
		{Ptr: &l.cuModuleLoadData, Fn: "cuModuleLoadData"},
		{Ptr: &l.cuModuleUnload, Fn: "cuModuleUnload"},
		{Ptr: &l.cuModuleGetFunction, Fn: "cuModuleGetFunction"},
		{Ptr: &l.cuFuncGetAttribute, Fn: "cuFuncGetAttribute"},
		{Ptr: &l.cuFuncGetParamInfo, Fn: "cuFuncGetParamInfo", Optional: true}, // CUDA 12.4+
		{Ptr: &l.cuMemAlloc, Fn: "cuMemAlloc", Names: v2("cuMemAlloc")},
		{Ptr: &l.cuMemFree, Fn: "cuMemFree", Names: v2("cuMemFree")},
		{Ptr: &l.cuMemcpyHtoD, Fn: "cuMemcpyHtoD", Names: v2("cuMemcpyHtoD")},
		{Ptr: &l.cuMemcpyDtoH, Fn: "cuMemcpyDtoH", Names: v2("cuMemcpyDtoH")},
		{Ptr: &l.cuMemsetD8, Fn: "cuMemsetD8", Names: v2("cuMemsetD8")},
		{Ptr: &l.cuLaunchKernel, Fn: "cuLaunchKernel"},
		{Ptr: &l.cuStreamCreate, Fn: "cuStreamCreate"},
		{Ptr: &l.cuStreamDestroy, Fn: "cuStreamDestroy", Names: v2("cuStreamDestroy")},
		{Ptr: &l.cuStreamSynchronize, Fn: "cuStreamSynchronize"},
		{Ptr: &l.cuEventCreate, Fn: "cuEventCreate"},
		{Ptr: &l.cuEventDestroy, Fn: "cuEventDestroy", Names: v2("cuEventDestroy")},
		{Ptr: &l.cuEventRecord, Fn: "cuEventRecord"},
		{Ptr: &l.cuEventSynchronize, Fn: "cuEventSynchronize"},
		{Ptr: &l.cuEventElapsedTime, Fn: "cuEventElapsedTime", Names: v2("cuEventElapsedTime")},
	}
}

// resultName names a CUresult: from the table, else from the driver's cuGetErrorName.
func (l *cuDriver) resultName(code int) string {
	if s, ok := cuResultNames[code]; ok {
		return s
	}
	if l != nil && l.cuGetErrorName != 0 {
		var p *byte
		if dynlib.Call(l.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&p))) == 0 && p != nil {
			return dynlib.CString(p)
		}
	}
	return fmt.Sprintf("CUresult(%d)", code)
}

// check turns a CUresult into an error naming the call (nil for CUDA_SUCCESS).
func (l *cuDriver) check(call string, r uintptr) error {
	return gpudrv.Check(call, r, l.resultName)
}

// sym returns the symbol resolved for fn (for error messages naming the versioned call).
func (l *cuDriver) sym(fn string) string {
	if s := l.symbols[fn]; s != "" {
		return s
	}
	return fn
}

// rtDrivers holds the driver libraries loaded, by path.
var rtDrivers gpudrv.Memo[*cuDriver]

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
	return rtDrivers.Get(path, func() (*cuDriver, error) { return openDriver(path, source) })
}

func openDriver(path, source string) (*cuDriver, error) {
	if !dynlib.CanLoad {
		_, err := dynlib.Open(path)
		return nil, rtUnavailable("%v", err)
	}
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return nil, rtUnavailable("the runtime supports 64-bit platforms only")
	}
	if path == "" {
		return nil, rtUnavailable("no CUDA driver library is known on this platform; set %s", LibraryEnv)
	}
	h, err := dynlib.Open(path)
	if err != nil {
		return nil, rtUnavailable("cannot load the driver library %q (%s): %v", path, source, err)
	}
	l := &cuDriver{path: path, source: source}
	syms, err := dynlib.ResolveAll(fmt.Sprintf("%q", path), l.table(), func(name string) uintptr { return dynlib.Symbol(h, name) })
	l.symbols = syms
	if err != nil {
		return nil, rtUnavailable("%q (%s) is not a usable CUDA driver library: %v", path, source, err)
	}
	var v int32
	if err := l.check("cuDriverGetVersion", dynlib.Call(l.cuDriverGetVersion, uintptr(unsafe.Pointer(&v)))); err == nil {
		l.version = int(v)
	}
	if err := l.check("cuInit", dynlib.Call(l.cuInit, 0)); err != nil {
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

func (n *nvrtcLib) table() []dynlib.Sym {
	return []dynlib.Sym{
		{Ptr: &n.nvrtcVersion, Fn: "nvrtcVersion"},
		{Ptr: &n.nvrtcGetErrorString, Fn: "nvrtcGetErrorString", Optional: true},
		{Ptr: &n.nvrtcCreateProgram, Fn: "nvrtcCreateProgram"},
		{Ptr: &n.nvrtcCompileProgram, Fn: "nvrtcCompileProgram"},
		{Ptr: &n.nvrtcDestroyProgram, Fn: "nvrtcDestroyProgram"},
		{Ptr: &n.nvrtcGetProgramLogSize, Fn: "nvrtcGetProgramLogSize"},
		{Ptr: &n.nvrtcGetProgramLog, Fn: "nvrtcGetProgramLog"},
		{Ptr: &n.nvrtcGetPTXSize, Fn: "nvrtcGetPTXSize"},
		{Ptr: &n.nvrtcGetPTX, Fn: "nvrtcGetPTX"},
		{Ptr: &n.nvrtcGetCUBINSize, Fn: "nvrtcGetCUBINSize", Optional: true},                 // CUDA 11.1+
		{Ptr: &n.nvrtcGetCUBIN, Fn: "nvrtcGetCUBIN", Optional: true},                         // CUDA 11.1+
		{Ptr: &n.nvrtcGetNumSupportedArchs, Fn: "nvrtcGetNumSupportedArchs", Optional: true}, // CUDA 11.2+
		{Ptr: &n.nvrtcGetSupportedArchs, Fn: "nvrtcGetSupportedArchs", Optional: true},       // CUDA 11.2+
	}
}

// check turns an nvrtcResult into an error naming the call (nil for NVRTC_SUCCESS).
func (n *nvrtcLib) check(call string, r uintptr) error {
	return gpudrv.Check(call, r, n.resultName)
}

// resultName names an nvrtcResult: from the table, else with nvrtcGetErrorString's text.
func (n *nvrtcLib) resultName(code int) string {
	if name, ok := nvrtcResultNames[code]; ok {
		return name
	}
	name := fmt.Sprintf("nvrtcResult(%d)", code)
	if n != nil && n.nvrtcGetErrorString != 0 {
		if s := dynlib.CStringAt(dynlib.Call(n.nvrtcGetErrorString, uintptr(code))); s != "" {
			name += " " + s
		}
	}
	return name
}

// rtNVRTCs holds the NVRTC libraries loaded, by candidate list.
var rtNVRTCs gpudrv.Memo[*nvrtcLib]

// nvrtcCandidates returns the NVRTC libraries to try, in order, and where the list came from.
func nvrtcCandidates() ([]string, string) {
	return dynlib.Candidates(NVRTCLibraryEnv, rtNVRTCNames, rtToolkitLibDirs)
}

// loadNVRTC loads the first NVRTC library nvrtcCandidates names, once per candidate list.
func loadNVRTC() (*nvrtcLib, error) {
	names, source := nvrtcCandidates()
	return rtNVRTCs.Get(strings.Join(names, "\x00"), func() (*nvrtcLib, error) { return openNVRTC(names, source) })
}

func openNVRTC(names []string, source string) (*nvrtcLib, error) {
	if !dynlib.CanLoad || len(names) == 0 {
		return nil, rtUnavailable("nvrtc: the runtime cannot load NVRTC on this platform")
	}
	h, path, errs := dynlib.OpenFirst(names)
	if h == 0 {
		if source == NVRTCLibraryEnv {
			return nil, rtUnavailable("nvrtc: cannot load %q (%s): %s", names[0], source, strings.Join(errs, "; "))
		}
		return nil, rtUnavailable("nvrtc: no NVRTC library found (tried %s; set %s): first error: %s",
			strings.Join(names, ", "), NVRTCLibraryEnv, errs[0])
	}
	n := &nvrtcLib{path: path}
	syms, err := dynlib.ResolveAll(fmt.Sprintf("%q", path), n.table(), func(name string) uintptr { return dynlib.Symbol(h, name) })
	n.symbols = syms
	if err != nil {
		return nil, rtUnavailable("nvrtc: %q (%s) is not a usable NVRTC library: %v", path, source, err)
	}
	var major, minor int32
	if err := n.check("nvrtcVersion", dynlib.Call(n.nvrtcVersion, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))); err != nil {
		return nil, rtUnavailable("nvrtc: %q: %v", path, err)
	}
	n.major, n.minor = int(major), int(minor)
	if n.nvrtcGetNumSupportedArchs != 0 && n.nvrtcGetSupportedArchs != 0 {
		var count int32
		if dynlib.Call(n.nvrtcGetNumSupportedArchs, uintptr(unsafe.Pointer(&count))) == 0 && count > 0 && count < 1024 {
			archs := make([]int32, count)
			if dynlib.Call(n.nvrtcGetSupportedArchs, uintptr(unsafe.Pointer(&archs[0]))) == 0 {
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
