package hip

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unsafe"
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

// ResultError is a HIP or HIPRTC call that returned something other than success.
type ResultError struct {
	Call string // the C function as resolved, e.g. "hipModuleLaunchKernel" or "hipGetDevicePropertiesR0600"
	Code int    // the hipError_t or hiprtcResult value
	Name string // the value's name, e.g. "hipErrorNoDevice"
}

// Error names the call and the result, e.g. "hipGetDeviceCount: hipErrorNoDevice (100)".
func (e *ResultError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
}

// rtSym is one C function the runtime resolves: where its address goes, the name it is known by
// and the symbols to try, the preferred (versioned) one first.
type rtSym struct {
	ptr      *uintptr
	fn       string   // the function, e.g. "hipGetDeviceProperties"
	names    []string // symbols to try in order; nil means fn alone
	optional bool     // a missing optional function leaves *ptr 0 and is no error
}

// rtResolve returns the address and the name of the first of names that lookup finds, or 0 and
// "" when none is there. This is how versioned symbols are chosen: at run time, from what the
// loaded library exports, never from a version string (hipconfig --version) or a build-time
// header. For hipGetDeviceProperties the names are hipGetDevicePropertiesR0600 (ROCm 6 and
// later) and then hipGetDeviceProperties (ROCm 5).
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

// rtCStringAt returns the C string at the address a C function returned.
func rtCStringAt(p uintptr) string {
	if p == 0 {
		return ""
	}
	return rtCString(*(**byte)(unsafe.Pointer(&p)))
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

// candidates returns the libraries to try: the environment's choice alone, else names on the
// default search path and then in the ROCm folders that exist.
func rtCandidates(env string, names []string) ([]string, string) {
	if p := os.Getenv(env); p != "" {
		return []string{p}, env
	}
	out := append([]string(nil), names...)
	seen := map[string]bool{}
	for _, d := range rtROCmLibDirs {
		if v, _, ok := strings.Cut(strings.TrimPrefix(d, "$"), "/"); ok && strings.HasPrefix(d, "$") && os.Getenv(v) == "" {
			continue // $ROCM_PATH/lib with ROCM_PATH unset
		}
		d = os.ExpandEnv(d)
		if seen[d] {
			continue
		}
		seen[d] = true
		if _, err := os.Stat(d); err != nil {
			continue
		}
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out, "default"
}

// rtOpenFirst loads the first of names that loads; errs has one entry per failure.
func rtOpenFirst(names []string) (h uintptr, path string, errs []string) {
	for _, n := range names {
		p, err := rtOpen(n)
		if err == nil {
			return p, n, errs
		}
		errs = append(errs, err.Error())
	}
	return 0, "", errs
}

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

func (l *hipLib) table() []rtSym {
	return []rtSym{
		{ptr: &l.hipInit, fn: "hipInit"},
		{ptr: &l.hipDriverGetVersion, fn: "hipDriverGetVersion", optional: true},
		{ptr: &l.hipRuntimeGetVersion, fn: "hipRuntimeGetVersion", optional: true},
		{ptr: &l.hipGetErrorName, fn: "hipGetErrorName", optional: true},
		{ptr: &l.hipGetDeviceCount, fn: "hipGetDeviceCount"},
		{ptr: &l.hipDeviceGet, fn: "hipDeviceGet"},
		{ptr: &l.hipDeviceGetName, fn: "hipDeviceGetName"},
		{ptr: &l.hipDeviceGetAttribute, fn: "hipDeviceGetAttribute"},
		{ptr: &l.hipDeviceTotalMem, fn: "hipDeviceTotalMem"},
		{ptr: &l.hipGetDeviceProperties, fn: "hipGetDeviceProperties", names: hipPropertiesNames, optional: true},
		{ptr: &l.hipSetDevice, fn: "hipSetDevice"},
		{ptr: &l.hipDeviceSynchronize, fn: "hipDeviceSynchronize"},
		{ptr: &l.hipModuleLoadData, fn: "hipModuleLoadData"},
		{ptr: &l.hipModuleUnload, fn: "hipModuleUnload"},
		{ptr: &l.hipModuleGetFunction, fn: "hipModuleGetFunction"},
		{ptr: &l.hipFuncGetAttribute, fn: "hipFuncGetAttribute", optional: true},
		{ptr: &l.hipMalloc, fn: "hipMalloc"},
		{ptr: &l.hipFree, fn: "hipFree"},
		{ptr: &l.hipMemcpyHtoD, fn: "hipMemcpyHtoD"},
		{ptr: &l.hipMemcpyDtoH, fn: "hipMemcpyDtoH"},
		{ptr: &l.hipMemset, fn: "hipMemset"},
		{ptr: &l.hipModuleLaunchKernel, fn: "hipModuleLaunchKernel"},
		{ptr: &l.hipStreamCreate, fn: "hipStreamCreate"},
		{ptr: &l.hipStreamDestroy, fn: "hipStreamDestroy"},
		{ptr: &l.hipStreamSynchronize, fn: "hipStreamSynchronize"},
		{ptr: &l.hipEventCreate, fn: "hipEventCreate"},
		{ptr: &l.hipEventDestroy, fn: "hipEventDestroy"},
		{ptr: &l.hipEventRecord, fn: "hipEventRecord"},
		{ptr: &l.hipEventSynchronize, fn: "hipEventSynchronize"},
		{ptr: &l.hipEventElapsedTime, fn: "hipEventElapsedTime"},
	}
}

// errorName names a hipError_t: from the table, else from the library's hipGetErrorName.
func (l *hipLib) errorName(code int) string {
	if s, ok := hipErrorNames[code]; ok {
		return s
	}
	if l != nil && l.hipGetErrorName != 0 {
		if s := rtCStringAt(rtCall(l.hipGetErrorName, uintptr(code))); s != "" && s != "hipErrorUnknown" {
			return s
		}
	}
	return fmt.Sprintf("hipError_t(%d)", code)
}

// check turns a hipError_t into an error naming the call (nil for hipSuccess).
func (l *hipLib) check(call string, r uintptr) error {
	code := int(int32(uint32(r)))
	if code == 0 {
		return nil
	}
	return &ResultError{Call: call, Code: code, Name: l.errorName(code)}
}

// sym returns the symbol resolved for fn (for error messages naming the versioned call).
func (l *hipLib) sym(fn string) string {
	if s := l.symbols[fn]; s != "" {
		return s
	}
	return fn
}

type rtHIPResult struct {
	lib *hipLib
	err error
}

var rtHIPs struct {
	sync.Mutex
	m map[string]rtHIPResult
}

// loadHIP loads the HIP runtime library and initialises it (hipInit), once per candidate list;
// the environment is read on every call, so a changed ONESOURCE_HIP_LIBRARY takes effect. A
// library that loads but whose hipInit fails (no GPU, no driver) is returned with initErr set.
func loadHIP() (*hipLib, error) {
	names, source := rtCandidates(LibraryEnv, rtHIPNames)
	key := strings.Join(names, "\x00")
	rtHIPs.Lock()
	defer rtHIPs.Unlock()
	if r, ok := rtHIPs.m[key]; ok {
		return r.lib, r.err
	}
	lib, err := openHIP(names, source)
	if rtHIPs.m == nil {
		rtHIPs.m = map[string]rtHIPResult{}
	}
	rtHIPs.m[key] = rtHIPResult{lib, err}
	return lib, err
}

// hipNoDevice is what hipInit and hipGetDeviceCount return on a machine without an AMD GPU.
func hipNoDevice(code int) bool {
	return code == 100 || code == 101 // hipErrorNoDevice, hipErrorInvalidDevice
}

func openHIP(names []string, source string) (*hipLib, error) {
	if !rtCanLoad || len(names) == 0 {
		_, err := rtOpen("libamdhip64")
		return nil, rtUnavailable("%v", err)
	}
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return nil, rtUnavailable("the runtime supports 64-bit platforms only")
	}
	h, path, errs := rtOpenFirst(names)
	if h == 0 {
		if source == LibraryEnv {
			return nil, rtUnavailable("cannot load %q (%s): %s", names[0], source, strings.Join(errs, "; "))
		}
		return nil, rtUnavailable("no HIP runtime library found (tried %s; set %s): first error: %s",
			strings.Join(names, ", "), LibraryEnv, errs[0])
	}
	l := &hipLib{path: path, source: source, h: h}
	syms, err := rtResolveAll(fmt.Sprintf("%q", path), l.table(), func(name string) uintptr { return rtSymbol(h, name) })
	l.symbols = syms
	if err != nil {
		return nil, rtUnavailable("%q (%s) is not a usable HIP runtime library: %v", path, source, err)
	}
	var v int32
	if l.hipRuntimeGetVersion != 0 && rtCall(l.hipRuntimeGetVersion, uintptr(unsafe.Pointer(&v))) == 0 {
		l.runtimeVersion = int(v)
	}
	if l.hipDriverGetVersion != 0 && rtCall(l.hipDriverGetVersion, uintptr(unsafe.Pointer(&v))) == 0 {
		l.driverVersion = int(v)
	}
	if err := l.check("hipInit", rtCall(l.hipInit, 0)); err != nil {
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

func (n *hiprtcLib) table() []rtSym {
	return []rtSym{
		{ptr: &n.hiprtcVersion, fn: "hiprtcVersion"},
		{ptr: &n.hiprtcGetErrorString, fn: "hiprtcGetErrorString", optional: true},
		{ptr: &n.hiprtcCreateProgram, fn: "hiprtcCreateProgram"},
		{ptr: &n.hiprtcCompileProgram, fn: "hiprtcCompileProgram"},
		{ptr: &n.hiprtcDestroyProgram, fn: "hiprtcDestroyProgram"},
		{ptr: &n.hiprtcGetProgramLogSize, fn: "hiprtcGetProgramLogSize"},
		{ptr: &n.hiprtcGetProgramLog, fn: "hiprtcGetProgramLog"},
		{ptr: &n.hiprtcGetCodeSize, fn: "hiprtcGetCodeSize"},
		{ptr: &n.hiprtcGetCode, fn: "hiprtcGetCode"},
	}
}

// check turns a hiprtcResult into an error naming the call (nil for HIPRTC_SUCCESS).
func (n *hiprtcLib) check(call string, r uintptr) error {
	code := int(int32(uint32(r)))
	if code == 0 {
		return nil
	}
	name, ok := hiprtcResultNames[code]
	if !ok {
		name = fmt.Sprintf("hiprtcResult(%d)", code)
		if n.hiprtcGetErrorString != 0 {
			if s := rtCStringAt(rtCall(n.hiprtcGetErrorString, uintptr(code))); s != "" {
				name += " " + s
			}
		}
	}
	return &ResultError{Call: call, Code: code, Name: name}
}

type rtHIPRTCResult struct {
	lib *hiprtcLib
	err error
}

var rtHIPRTCs struct {
	sync.Mutex
	m map[string]rtHIPRTCResult
}

// loadHIPRTC loads HIPRTC: the library HIPRTCLibraryEnv names, else the first of libhiprtc.so*,
// else the hiprtc functions inside the HIP runtime library (ROCm 5.0-5.2).
func loadHIPRTC() (*hiprtcLib, error) {
	names, source := rtCandidates(HIPRTCLibraryEnv, rtHIPRTCNames)
	hipNames, _ := rtCandidates(LibraryEnv, rtHIPNames)
	key := strings.Join(names, "\x00") + "\x01" + strings.Join(hipNames, "\x00")
	rtHIPRTCs.Lock()
	defer rtHIPRTCs.Unlock()
	if r, ok := rtHIPRTCs.m[key]; ok {
		return r.lib, r.err
	}
	lib, err := openHIPRTC(names, source)
	if rtHIPRTCs.m == nil {
		rtHIPRTCs.m = map[string]rtHIPRTCResult{}
	}
	rtHIPRTCs.m[key] = rtHIPRTCResult{lib, err}
	return lib, err
}

func openHIPRTC(names []string, source string) (*hiprtcLib, error) {
	if !rtCanLoad || len(names) == 0 {
		return nil, rtUnavailable("hiprtc: the runtime cannot load HIPRTC on this platform")
	}
	h, path, errs := rtOpenFirst(names)
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
		if rtSymbol(l.h, "hiprtcCreateProgram") == 0 {
			return nil, rtUnavailable("hiprtc: no HIPRTC library found (tried %s; set %s), and %q has no hiprtc functions",
				strings.Join(names, ", "), HIPRTCLibraryEnv, l.path)
		}
		h, path = l.h, l.path
	}
	n := &hiprtcLib{path: path}
	syms, err := rtResolveAll(fmt.Sprintf("%q", path), n.table(), func(name string) uintptr { return rtSymbol(h, name) })
	n.symbols = syms
	if err != nil {
		return nil, rtUnavailable("hiprtc: %q (%s) is not a usable HIPRTC library: %v", path, source, err)
	}
	var major, minor int32
	if err := n.check("hiprtcVersion", rtCall(n.hiprtcVersion, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))); err != nil {
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
	h, path, _ := rtOpenFirst(rtComgrNames)
	if h == 0 {
		return nil
	}
	c := &comgrLib{path: path}
	_, err := rtResolveAll(path, []rtSym{
		{ptr: &c.amdComgrGetISACount, fn: "amd_comgr_get_isa_count"},
		{ptr: &c.amdComgrGetISAName, fn: "amd_comgr_get_isa_name"},
		{ptr: &c.amdComgrCreateActionInfo, fn: "amd_comgr_create_action_info"},
		{ptr: &c.amdComgrDestroyActionInfo, fn: "amd_comgr_destroy_action_info"},
		{ptr: &c.amdComgrActionInfoSetISA, fn: "amd_comgr_action_info_set_isa_name"},
	}, func(name string) uintptr { return rtSymbol(h, name) })
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
	if rtCall(c.amdComgrGetISACount, uintptr(unsafe.Pointer(&n))) != 0 || n > 4096 {
		return nil
	}
	var out []string
	for i := uintptr(0); i < n; i++ {
		var p *byte
		if rtCall(c.amdComgrGetISAName, i, uintptr(unsafe.Pointer(&p))) != 0 {
			continue
		}
		out = append(out, strings.TrimPrefix(rtCString(p), rtISAPrefix))
	}
	return out
}

// valid reports whether comgr accepts target (a target ID such as "gfx90a:sramecc+:xnack-").
func (c *comgrLib) valid(target string) bool {
	var info uint64 // amd_comgr_action_info_t: a struct of one uint64 handle, passed by value
	if rtCall(c.amdComgrCreateActionInfo, uintptr(unsafe.Pointer(&info))) != 0 {
		return true // cannot ask: let HIPRTC decide
	}
	defer rtCall(c.amdComgrDestroyActionInfo, uintptr(info))
	return rtCall(c.amdComgrActionInfoSetISA, uintptr(info), uintptr(unsafe.Pointer(rtCBytes(rtISAPrefix+target)))) == 0
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
