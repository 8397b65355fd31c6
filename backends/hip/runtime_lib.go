package hip

import (
	"errors"
	"fmt"
	"github.com/onesource-go/onesource/internal/dynlib"
	"regexp"
	"strings"
	"unsafe"

	"github.com/onesource-go/onesource/internal/gpudrv"
)

// LibraryEnv is the environment variable that names the HIP runtime library (libamdhip64) to
// load instead of searching for libamdhip64.so, .so.7, .so.6 and .so.5 on the default library
// path and in the ROCm folders ($ROCM_PATH/lib, $HIP_PATH/lib, /opt/rocm/lib).
const LibraryEnv = "ONESOURCE_HIP_LIBRARY"

// HIPRTCLibraryEnv is the environment variable that names the HIPRTC library to load instead of
// searching for libhiprtc.so, .so.7, .so.6 and .so.5 (and, failing those, using the hiprtc
// functions that ROCm 5.0-5.2 keep inside libamdhip64).
const HIPRTCLibraryEnv = "ONESOURCE_HIPRTC_LIBRARY"

// ErrUnavailable is wrapped by every error that says the HIP runtime cannot be used on this
// machine (no library, no device): errors.Is(err, ErrUnavailable). Such an error reads
// "unavailable: hip: <reason>".
var ErrUnavailable = errors.New("unavailable")

func rtUnavailable(format string, args ...any) error {
	return fmt.Errorf("%w: hip: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}

// ResultError is a HIP or HIPRTC call that returned something other than success: Call names
// the C function as resolved (e.g. "hipModuleLaunchKernel" or "hipGetDevicePropertiesR0600"),
// Code is the hipError_t or hiprtcResult value and Name its name (e.g. "hipErrorNoDevice").
type ResultError = gpudrv.ResultError

// hipLib is a loaded HIP runtime library with its functions.
type hipLib struct {
	path           string
	source         string
	h              uintptr
	symbols        map[string]string
	runtimeVersion int
	driverVersion  int
	initErr        error // what hipInit said, as an unavailable error (nil: rtInitialised)

	hipInit                uintptr
	hipDriverGetVersion    uintptr
	hipRuntimeGetVersion   uintptr
	hipGetErrorName        uintptr
	hipGetDeviceCount      uintptr
	hipDeviceGet           uintptr
	hipDeviceGetName       uintptr
	hipDeviceGetAttribute  uintptr
	hipDeviceTotalMem      uintptr
	hipGetDeviceProperties uintptr
	hipSetDevice           uintptr
	hipDeviceSynchronize   uintptr
	hipModuleLoadData      uintptr
	hipModuleUnload        uintptr
	hipModuleGetFunction   uintptr
	hipFuncGetAttribute    uintptr
	hipMalloc              uintptr
	hipFree                uintptr
	hipMemcpyHtoD          uintptr
	hipMemcpyDtoH          uintptr
	hipMemset              uintptr
	hipModuleLaunchKernel  uintptr
	hipStreamCreate        uintptr
	hipStreamDestroy       uintptr
	hipStreamSynchronize   uintptr
	hipEventCreate         uintptr
	hipEventDestroy        uintptr
	hipEventRecord         uintptr
	hipEventSynchronize    uintptr
	hipEventElapsedTime    uintptr
}

// hipPropertiesNames are the symbols tried for hipGetDeviceProperties: ROCm 6 changed
// hipDeviceProp_t and exports the new layout's function as hipGetDevicePropertiesR0600 beside
// the old one. The runtime reads the struct without mirroring either layout (see gcnArchName).
var hipPropertiesNames = []string{"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"}

func (l *hipLib) table() []dynlib.Sym {
	return []dynlib.Sym{
		{Ptr: &l.hipInit, Fn: "hipInit"},
		{Ptr: &l.hipDriverGetVersion, Fn: "hipDriverGetVersion", Optional: true},
		{Ptr: &l.hipRuntimeGetVersion, Fn: "hipRuntimeGetVersion", Optional: true},
		{Ptr: &l.hipGetErrorName, Fn: "hipGetErrorName", Optional: true},
		{Ptr: &l.hipGetDeviceCount, Fn: "hipGetDeviceCount"},
		{Ptr: &l.hipDeviceGet, Fn: "hipDeviceGet"},
		{Ptr: &l.hipDeviceGetName, Fn: "hipDeviceGetName"},
		{Ptr: &l.hipDeviceGetAttribute, Fn: "hipDeviceGetAttribute"},
		{Ptr: &l.hipDeviceTotalMem, Fn: "hipDeviceTotalMem"},
		{Ptr: &l.hipGetDeviceProperties, Fn: "hipGetDeviceProperties", Names: hipPropertiesNames, Optional: true},
		{Ptr: &l.hipSetDevice, Fn: "hipSetDevice"},
		{Ptr: &l.hipDeviceSynchronize, Fn: "hipDeviceSynchronize"},
		{Ptr: &l.hipModuleLoadData, Fn: "hipModuleLoadData"},
		{Ptr: &l.hipModuleUnload, Fn: "hipModuleUnload"},
		{Ptr: &l.hipModuleGetFunction, Fn: "hipModuleGetFunction"},
		{Ptr: &l.hipFuncGetAttribute, Fn: "hipFuncGetAttribute", Optional: true},
		{Ptr: &l.hipMalloc, Fn: "hipMalloc"},
		{Ptr: &l.hipFree, Fn: "hipFree"},
		{Ptr: &l.hipMemcpyHtoD, Fn: "hipMemcpyHtoD"},
		{Ptr: &l.hipMemcpyDtoH, Fn: "hipMemcpyDtoH"},
		{Ptr: &l.hipMemset, Fn: "hipMemset"},
		{Ptr: &l.hipModuleLaunchKernel, Fn: "hipModuleLaunchKernel"},
		{Ptr: &l.hipStreamCreate, Fn: "hipStreamCreate"},
		{Ptr: &l.hipStreamDestroy, Fn: "hipStreamDestroy"},
		{Ptr: &l.hipStreamSynchronize, Fn: "hipStreamSynchronize"},
		{Ptr: &l.hipEventCreate, Fn: "hipEventCreate"},
		{Ptr: &l.hipEventDestroy, Fn: "hipEventDestroy"},
		{Ptr: &l.hipEventRecord, Fn: "hipEventRecord"},
		{Ptr: &l.hipEventSynchronize, Fn: "hipEventSynchronize"},
		{Ptr: &l.hipEventElapsedTime, Fn: "hipEventElapsedTime"},
	}
}

// errorName names a hipError_t: from the table, else from the library's hipGetErrorName.
func (l *hipLib) errorName(code int) string {
	if s, ok := hipErrorNames[code]; ok {
		return s
	}
	if l != nil && l.hipGetErrorName != 0 {
		if s := dynlib.CStringAt(dynlib.Call(l.hipGetErrorName, uintptr(code))); s != "" && s != "hipErrorUnknown" {
			return s
		}
	}
	return fmt.Sprintf("hipError_t(%d)", code)
}

// check turns a hipError_t into an error naming the call (nil for hipSuccess).
func (l *hipLib) check(call string, r uintptr) error {
	return gpudrv.Check(call, r, l.errorName)
}

// sym returns the symbol resolved for fn (for error messages naming the versioned call).
func (l *hipLib) sym(fn string) string {
	if s := l.symbols[fn]; s != "" {
		return s
	}
	return fn
}

// rtHIPs holds the HIP runtime libraries loaded, by candidate list.
var rtHIPs gpudrv.Memo[*hipLib]

// loadHIP loads the HIP runtime library and initialises it (hipInit), once per candidate list;
// the environment is read on every call, so a changed ONESOURCE_HIP_LIBRARY takes effect. A
// library that loads but whose hipInit fails (no GPU, no driver) is returned with initErr set.
func loadHIP() (*hipLib, error) {
	names, source := dynlib.Candidates(LibraryEnv, rtHIPNames, rtROCmLibDirs)
	return rtHIPs.Get(strings.Join(names, "\x00"), func() (*hipLib, error) { return openHIP(names, source) })
}

// hipNoDevice is what hipInit and hipGetDeviceCount return on a machine without an AMD GPU.
func hipNoDevice(code int) bool {
	return code == 100 || code == 101 // hipErrorNoDevice, hipErrorInvalidDevice
}

func openHIP(names []string, source string) (*hipLib, error) {
	if !dynlib.CanLoad || len(names) == 0 {
		_, err := dynlib.Open("libamdhip64")
		return nil, rtUnavailable("%v", err)
	}
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return nil, rtUnavailable("the runtime supports 64-bit platforms only")
	}
	h, path, errs := dynlib.OpenFirst(names)
	if h == 0 {
		if source == LibraryEnv {
			return nil, rtUnavailable("cannot load %q (%s): %s", names[0], source, strings.Join(errs, "; "))
		}
		return nil, rtUnavailable("no HIP runtime library found (tried %s; set %s): first error: %s",
			strings.Join(names, ", "), LibraryEnv, errs[0])
	}
	l := &hipLib{path: path, source: source, h: h}
	syms, err := dynlib.ResolveAll(fmt.Sprintf("%q", path), l.table(), func(name string) uintptr { return dynlib.Symbol(h, name) })
	l.symbols = syms
	if err != nil {
		return nil, rtUnavailable("%q (%s) is not a usable HIP runtime library: %v", path, source, err)
	}
	var v int32
	if l.hipRuntimeGetVersion != 0 && dynlib.Call(l.hipRuntimeGetVersion, uintptr(unsafe.Pointer(&v))) == 0 {
		l.runtimeVersion = int(v)
	}
	if l.hipDriverGetVersion != 0 && dynlib.Call(l.hipDriverGetVersion, uintptr(unsafe.Pointer(&v))) == 0 {
		l.driverVersion = int(v)
	}
	if err := l.check("hipInit", dynlib.Call(l.hipInit, 0)); err != nil {
		var re *ResultError
		if errors.As(err, &re) && hipNoDevice(re.Code) {
			l.initErr = rtUnavailable("no HIP device (%s: %v)", path, err)
		} else {
			l.initErr = rtUnavailable("%q: %v", path, err)
		}
	}
	return l, nil
}

// rtInitialised returns the HIP library after a successful hipInit, or why not.
func rtInitialised() (*hipLib, error) {
	l, err := loadHIP()
	if err != nil {
		return nil, err
	}
	if l.initErr != nil {
		return nil, l.initErr
	}
	return l, nil
}

// hiprtcLib is a loaded HIPRTC with its functions, and the code-object manager that checks
// targets before a compile when it can be loaded.
type hiprtcLib struct {
	path    string
	symbols map[string]string
	major   int
	minor   int
	comgr   *comgrLib // nil when libamd_comgr cannot be loaded

	hiprtcVersion           uintptr
	hiprtcGetErrorString    uintptr
	hiprtcCreateProgram     uintptr
	hiprtcCompileProgram    uintptr
	hiprtcDestroyProgram    uintptr
	hiprtcGetProgramLogSize uintptr
	hiprtcGetProgramLog     uintptr
	hiprtcGetCodeSize       uintptr
	hiprtcGetCode           uintptr
}

func (n *hiprtcLib) table() []dynlib.Sym {
	return []dynlib.Sym{
		{Ptr: &n.hiprtcVersion, Fn: "hiprtcVersion"},
		{Ptr: &n.hiprtcGetErrorString, Fn: "hiprtcGetErrorString", Optional: true},
		{Ptr: &n.hiprtcCreateProgram, Fn: "hiprtcCreateProgram"},
		{Ptr: &n.hiprtcCompileProgram, Fn: "hiprtcCompileProgram"},
		{Ptr: &n.hiprtcDestroyProgram, Fn: "hiprtcDestroyProgram"},
		{Ptr: &n.hiprtcGetProgramLogSize, Fn: "hiprtcGetProgramLogSize"},
		{Ptr: &n.hiprtcGetProgramLog, Fn: "hiprtcGetProgramLog"},
		{Ptr: &n.hiprtcGetCodeSize, Fn: "hiprtcGetCodeSize"},
		{Ptr: &n.hiprtcGetCode, Fn: "hiprtcGetCode"},
	}
}

// check turns a hiprtcResult into an error naming the call (nil for HIPRTC_SUCCESS).
func (n *hiprtcLib) check(call string, r uintptr) error {
	return gpudrv.Check(call, r, n.resultName)
}

// resultName names a hiprtcResult: from the table, else with hiprtcGetErrorString's text.
func (n *hiprtcLib) resultName(code int) string {
	if name, ok := hiprtcResultNames[code]; ok {
		return name
	}
	name := fmt.Sprintf("hiprtcResult(%d)", code)
	if n != nil && n.hiprtcGetErrorString != 0 {
		if s := dynlib.CStringAt(dynlib.Call(n.hiprtcGetErrorString, uintptr(code))); s != "" {
			name += " " + s
		}
	}
	return name
}

// rtHIPRTCs holds the HIPRTC libraries loaded, by candidate lists.
var rtHIPRTCs gpudrv.Memo[*hiprtcLib]

// loadHIPRTC loads HIPRTC: the library HIPRTCLibraryEnv names, else the first of libhiprtc.so*,
// else the hiprtc functions inside the HIP runtime library (ROCm 5.0-5.2).
func loadHIPRTC() (*hiprtcLib, error) {
	names, source := dynlib.Candidates(HIPRTCLibraryEnv, rtHIPRTCNames, rtROCmLibDirs)
	hipNames, _ := dynlib.Candidates(LibraryEnv, rtHIPNames, rtROCmLibDirs)
	key := strings.Join(names, "\x00") + "\x01" + strings.Join(hipNames, "\x00")
	return rtHIPRTCs.Get(key, func() (*hiprtcLib, error) { return openHIPRTC(names, source) })
}

func openHIPRTC(names []string, source string) (*hiprtcLib, error) {
	if !dynlib.CanLoad || len(names) == 0 {
		return nil, rtUnavailable("hiprtc: the runtime cannot load HIPRTC on this platform")
	}
	h, path, errs := dynlib.OpenFirst(names)
	if h == 0 && source == HIPRTCLibraryEnv {
		return nil, rtUnavailable("hiprtc: cannot load %q (%s): %s", names[0], source, strings.Join(errs, "; "))
	}
	if h == 0 {
		// ROCm 5.0-5.2: hiprtc lives in libamdhip64.
		l, err := loadHIP()
		if err != nil {
			return nil, rtUnavailable("hiprtc: no HIPRTC library found (tried %s; set %s), and no HIP runtime library to look in: %v",
				strings.Join(names, ", "), HIPRTCLibraryEnv, err)
		}
		if dynlib.Symbol(l.h, "hiprtcCreateProgram") == 0 {
			return nil, rtUnavailable("hiprtc: no HIPRTC library found (tried %s; set %s), and %q has no hiprtc functions",
				strings.Join(names, ", "), HIPRTCLibraryEnv, l.path)
		}
		h, path = l.h, l.path
	}
	n := &hiprtcLib{path: path}
	syms, err := dynlib.ResolveAll(fmt.Sprintf("%q", path), n.table(), func(name string) uintptr { return dynlib.Symbol(h, name) })
	n.symbols = syms
	if err != nil {
		return nil, rtUnavailable("hiprtc: %q (%s) is not a usable HIPRTC library: %v", path, source, err)
	}
	var major, minor int32
	if err := n.check("hiprtcVersion", dynlib.Call(n.hiprtcVersion, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))); err != nil {
		return nil, rtUnavailable("hiprtc: %q: %v", path, err)
	}
	n.major, n.minor = int(major), int(minor)
	n.comgr = loadComgr()
	return n, nil
}

// comgrLib is the AMD code-object manager (libamd_comgr), which HIPRTC compiles through. Some
// HIPRTC releases (ROCm 5.2's) abort the process when asked for a target they do not support, so
// the runtime asks comgr first: its amd_comgr_action_info_set_isa_name rejects exactly those
// targets.
type comgrLib struct {
	path                      string
	amdComgrGetISACount       uintptr
	amdComgrGetISAName        uintptr
	amdComgrCreateActionInfo  uintptr
	amdComgrDestroyActionInfo uintptr
	amdComgrActionInfoSetISA  uintptr
}

// loadComgr loads libamd_comgr, or returns nil.
func loadComgr() *comgrLib {
	h, path, _ := dynlib.OpenFirst(rtComgrNames)
	if h == 0 {
		return nil
	}
	c := &comgrLib{path: path}
	_, err := dynlib.ResolveAll(path, []dynlib.Sym{
		{Ptr: &c.amdComgrGetISACount, Fn: "amd_comgr_get_isa_count"},
		{Ptr: &c.amdComgrGetISAName, Fn: "amd_comgr_get_isa_name"},
		{Ptr: &c.amdComgrCreateActionInfo, Fn: "amd_comgr_create_action_info"},
		{Ptr: &c.amdComgrDestroyActionInfo, Fn: "amd_comgr_destroy_action_info"},
		{Ptr: &c.amdComgrActionInfoSetISA, Fn: "amd_comgr_action_info_set_isa_name"},
	}, func(name string) uintptr { return dynlib.Symbol(h, name) })
	if err != nil {
		return nil
	}
	return c
}

// rtISAPrefix is the triple comgr's ISA names start with.
const rtISAPrefix = "amdgcn-amd-amdhsa--"

// processors lists the processors comgr supports ("gfx90a", ...).
func (c *comgrLib) processors() []string {
	var n uintptr
	if dynlib.Call(c.amdComgrGetISACount, uintptr(unsafe.Pointer(&n))) != 0 || n > 4096 {
		return nil
	}
	var out []string
	for i := uintptr(0); i < n; i++ {
		var p *byte
		if dynlib.Call(c.amdComgrGetISAName, i, uintptr(unsafe.Pointer(&p))) != 0 {
			continue
		}
		out = append(out, strings.TrimPrefix(dynlib.CString(p), rtISAPrefix))
	}
	return out
}

// valid reports whether comgr accepts target (a target ID such as "gfx90a:sramecc+:xnack-").
func (c *comgrLib) valid(target string) bool {
	var info uint64 // amd_comgr_action_info_t: a struct of one uint64 handle, passed by value
	if dynlib.Call(c.amdComgrCreateActionInfo, uintptr(unsafe.Pointer(&info))) != 0 {
		return true // cannot ask: let HIPRTC decide
	}
	defer dynlib.Call(c.amdComgrDestroyActionInfo, uintptr(info))
	return dynlib.Call(c.amdComgrActionInfoSetISA, uintptr(info), uintptr(unsafe.Pointer(dynlib.CBytes(rtISAPrefix+target)))) == 0
}

// rtTargetPattern is the shape of an AMDGPU target ID: a processor and optional features.
var rtTargetPattern = regexp.MustCompile(`^gfx[0-9a-f]{3,5}(:[a-z0-9_]+[+-])*$`)

// checkTarget rejects a target HIPRTC cannot compile for before HIPRTC sees it.
func (n *hiprtcLib) checkTarget(target string) error {
	if !rtTargetPattern.MatchString(target) {
		return fmt.Errorf("hip: hiprtc: %q is not an AMDGPU target ID (gfx90a, gfx1030, gfx90a:sramecc+:xnack-, ...)", target)
	}
	if n.comgr != nil && !n.comgr.valid(target) {
		return fmt.Errorf("hip: hiprtc: %s (%s) does not support the target %q; its processors: %s",
			n.comgr.path, n.path, target, strings.Join(n.comgr.processors(), " "))
	}
	return nil
}

// Library describes the HIP libraries this process loads: what Libraries reports.
type Library struct {
	Path           string            // the HIP runtime library loaded
	RuntimeVersion int               // hipRuntimeGetVersion, e.g. 50221153 for 5.2.21153
	DriverVersion  int               // hipDriverGetVersion
	InitError      error             // why hipInit failed (no device, ...), or nil
	HIPRTCPath     string            // the library HIPRTC was found in; "" when none
	HIPRTCVersion  [2]int            // hiprtcVersion: major, minor
	HIPRTCError    error             // why HIPRTC cannot be loaded, or nil
	ComgrPath      string            // the code-object manager that checks targets; "" when none
	Symbols        map[string]string // function -> symbol resolved, e.g. "hipGetDeviceProperties" -> "hipGetDevicePropertiesR0600"
}

// Libraries loads the HIP runtime and HIPRTC libraries and reports what was loaded and which
// symbols were resolved. The error is about the runtime library only (it wraps ErrUnavailable);
// a failed hipInit is in InitError and a HIPRTC problem in HIPRTCError.
func Libraries() (Library, error) {
	var out Library
	l, err := loadHIP()
	if err != nil {
		return out, err
	}
	out.Path, out.RuntimeVersion, out.DriverVersion, out.InitError = l.path, l.runtimeVersion, l.driverVersion, l.initErr
	out.Symbols = map[string]string{}
	for k, v := range l.symbols {
		out.Symbols[k] = v
	}
	n, nerr := loadHIPRTC()
	if nerr != nil {
		out.HIPRTCError = nerr
	} else {
		out.HIPRTCPath, out.HIPRTCVersion = n.path, [2]int{n.major, n.minor}
		if n.comgr != nil {
			out.ComgrPath = n.comgr.path
		}
		for k, v := range n.symbols {
			out.Symbols[k] = v
		}
	}
	return out, nil
}

// FormatVersion formats a HIP version number as hipRuntimeGetVersion returns it
// (50221153 -> "5.2.21153").
func FormatVersion(v int) string {
	return fmt.Sprintf("%d.%d.%d", v/10000000, v/100000%100, v%100000)
}
