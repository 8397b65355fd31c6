package hip

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unsafe"

	"github.com/onesource-go/onesource/internal/dynlib"
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

// The functions only the HIP runtime has.
const (
	hipRuntimeGetVersion gpudrv.Call = gpudrv.VendorCalls + iota
	hipGetErrorName
	hipGetDeviceProperties
)

// hipSymbols spells the shared driver calls, and HIP's own, in the HIP runtime, which mirrors
// the CUDA driver API call for call (streams and events are made WithFlags, flags 0, to take the
// same arguments). ROCm 6 changed hipDeviceProp_t and exports the new layout's function as
// hipGetDevicePropertiesR0600 beside the old one; the runtime reads the struct without mirroring
// either layout (see gcnArchName).
var hipSymbols = gpudrv.Symbols{Calls: gpudrv.Spelling{
	gpudrv.CallCurrent:         {"hipSetDevice"},
	gpudrv.CallAlloc:           {"hipMalloc"},
	gpudrv.CallFree:            {"hipFree"},
	gpudrv.CallZero:            {"hipMemset"},
	gpudrv.CallCopyHtoD:        {"hipMemcpyHtoD"},
	gpudrv.CallCopyDtoH:        {"hipMemcpyDtoH"},
	gpudrv.CallModuleLoad:      {"hipModuleLoadData"},
	gpudrv.CallModuleUnload:    {"hipModuleUnload"},
	gpudrv.CallFunction:        {"hipModuleGetFunction"},
	gpudrv.CallFuncAttribute:   {"hipFuncGetAttribute"},
	gpudrv.CallLaunch:          {"hipModuleLaunchKernel"},
	gpudrv.CallStreamCreate:    {"hipStreamCreateWithFlags"},
	gpudrv.CallStreamDestroy:   {"hipStreamDestroy"},
	gpudrv.CallStreamSync:      {"hipStreamSynchronize"},
	gpudrv.CallEventCreate:     {"hipEventCreateWithFlags"},
	gpudrv.CallEventDestroy:    {"hipEventDestroy"},
	gpudrv.CallEventRecord:     {"hipEventRecord"},
	gpudrv.CallEventSync:       {"hipEventSynchronize"},
	gpudrv.CallEventElapsed:    {"hipEventElapsedTime"},
	gpudrv.CallDeviceCount:     {"hipGetDeviceCount"},
	gpudrv.CallDeviceGet:       {"hipDeviceGet"},
	gpudrv.CallDeviceName:      {"hipDeviceGetName"},
	gpudrv.CallDeviceTotalMem:  {"hipDeviceTotalMem"},
	gpudrv.CallDeviceAttribute: {"hipDeviceGetAttribute"},
	gpudrv.CallInit:            {"hipInit"},
	gpudrv.CallDeviceSync:      {"hipDeviceSynchronize"},
}, Optional: gpudrv.Spelling{
	gpudrv.CallDriverVersion: {"hipDriverGetVersion"},
	hipRuntimeGetVersion:     {"hipRuntimeGetVersion"},
	hipGetErrorName:          {"hipGetErrorName"},
	hipGetDeviceProperties:   hipPropertiesNames,
}}

// hipPropertiesNames are the symbols tried for hipGetDeviceProperties, the ROCm 6 one first.
var hipPropertiesNames = []string{"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"}

// hipLib is a loaded HIP runtime library and its versions.
type hipLib struct {
	*gpudrv.Library
	runtimeVersion int
	driverVersion  int
}

// errorName names a hipError_t: from the table, else by the library's hipGetErrorName (which
// says "hipErrorUnknown" for a code it does not know).
func (l *hipLib) errorName(code int) string {
	return gpudrv.NameResult(code, hipErrorNames, "hipError_t", func(code int) string {
		if l == nil {
			return ""
		}
		if s := l.Text(hipGetErrorName, code); s != "hipErrorUnknown" {
			return s
		}
		return ""
	}, nil)
}

// hipRuntime is the HIP runtime library, loaded on first use (LibraryEnv, else the first of
// the sonames in the ROCm folders) and initialised with hipInit.
var hipRuntime = &gpudrv.Runtime[*hipLib]{
	Backend: "hip", What: "HIP runtime library", Env: LibraryEnv, Symbols: hipSymbols,
	Candidates: func() ([]string, string) { return dynlib.Candidates(LibraryEnv, rtHIPNames, rtROCmLibDirs) },
	New:        func() *hipLib { return &hipLib{} },
	Init:       (*hipLib).init,
	NoDevice:   hipNoDevice,
}

// hipNoDevice is what hipInit and hipGetDeviceCount return on a machine without an AMD GPU.
func hipNoDevice(code int) bool {
	return code == 100 || code == 101 // hipErrorNoDevice, hipErrorInvalidDevice
}

// init keeps lib, reads the versions and initialises the runtime (hipInit): a failed hipInit
// (no GPU, no driver) is the library's InitErr.
func (l *hipLib) init(lib *gpudrv.Library) error {
	l.Library, lib.ResultName = lib, l.errorName
	var rv, dv int32
	if lib.Do(hipRuntimeGetVersion, uintptr(unsafe.Pointer(&rv))) == nil {
		l.runtimeVersion = int(rv)
	}
	if lib.Do(gpudrv.CallDriverVersion, uintptr(unsafe.Pointer(&dv))) == nil {
		l.driverVersion = int(dv)
	}
	if err := lib.Do(gpudrv.CallInit, 0); err != nil {
		var re *ResultError
		if errors.As(err, &re) && hipNoDevice(re.Code) {
			lib.InitErr = gpudrv.Unavailable("hip", "no HIP device (%s: %v)", lib.Path, err)
		} else {
			lib.InitErr = gpudrv.Unavailable("hip", "%q: %v", lib.Path, err)
		}
	}
	return nil
}

// hiprtcSymbols spells the run-time compiler's program calls in HIPRTC.
var hiprtcSymbols = gpudrv.Symbols{Calls: gpudrv.RTCSpelling("hiprtc", "GetCodeSize", "GetCode")}

// hiprtcLib is a loaded HIPRTC, and the code-object manager that checks targets before a compile
// when it can be loaded.
type hiprtcLib struct {
	*gpudrv.Library
	major, minor int
	comgr        *comgrLib // nil when libamd_comgr cannot be loaded
}

// resultName names a hiprtcResult: from the table, else with hiprtcGetErrorString's text.
func (n *hiprtcLib) resultName(code int) string {
	return gpudrv.NameResult(code, hiprtcResultNames, "hiprtcResult", nil, func(code int) string { return n.Text(gpudrv.CallRTCErrorString, code) })
}

// hiprtc is HIPRTC, loaded on first use: the library HIPRTCLibraryEnv names, else the first of
// libhiprtc.so* that loads, else the HIP runtime library, whose hiprtc functions ROCm 5.0-5.2
// keep there (a runtime library without them is refused as not a HIPRTC library).
var hiprtc = &gpudrv.Runtime[*hiprtcLib]{
	Backend: "hip", What: "HIPRTC library", Env: HIPRTCLibraryEnv, Symbols: hiprtcSymbols,
	Candidates: func() ([]string, string) {
		names, source := dynlib.Candidates(HIPRTCLibraryEnv, rtHIPRTCNames, rtROCmLibDirs)
		if source == HIPRTCLibraryEnv {
			return names, source
		}
		hipNames, _ := hipRuntime.Candidates()
		return append(names, hipNames...), source
	},
	New:  func() *hiprtcLib { return &hiprtcLib{} },
	Init: (*hiprtcLib).init,
}

// init keeps lib, reads HIPRTC's version and loads the code-object manager.
func (n *hiprtcLib) init(lib *gpudrv.Library) error {
	n.Library, lib.ResultName = lib, n.resultName
	var err error
	if n.major, n.minor, err = lib.RTCVersion(); err != nil {
		return gpudrv.Unavailable("hip", "hiprtc: %q: %v", lib.Path, err)
	}
	n.comgr = loadComgr()
	return nil
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
			n.comgr.path, n.Path, target, strings.Join(n.comgr.processors(), " "))
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
	l, n, symbols, nerr, err := gpudrv.LoadBoth(hipRuntime, hiprtc)
	if err != nil {
		return Library{}, err
	}
	out := Library{Path: l.Path, RuntimeVersion: l.runtimeVersion, DriverVersion: l.driverVersion, InitError: l.InitErr,
		HIPRTCError: nerr, Symbols: symbols}
	if nerr == nil {
		out.HIPRTCPath, out.HIPRTCVersion = n.Path, [2]int{n.major, n.minor}
	}
	if nerr == nil && n.comgr != nil {
		out.ComgrPath = n.comgr.path
	}
	return out, nil
}

// FormatVersion formats a HIP version number as hipRuntimeGetVersion returns it
// (50221153 -> "5.2.21153").
func FormatVersion(v int) string {
	return fmt.Sprintf("%d.%d.%d", v/10000000, v/100000%100, v%100000)
}
