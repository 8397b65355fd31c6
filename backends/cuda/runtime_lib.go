package cuda

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/onesource-go/onesource/internal/dynlib"
	"github.com/onesource-go/onesource/internal/gpudrv"
)

// LibraryEnv is the environment variable that names the CUDA driver library (libcuda) to load
// instead of the platform default (libcuda.so.1 on Linux, nvcuda.dll on Windows).
const LibraryEnv = "ONESOURCE_CUDA_LIBRARY"

// NVRTCLibraryEnv is the environment variable that names the NVRTC library to load instead of
// searching for libnvrtc.so, libnvrtc.so.13, .12, .11.2, ... on the default library path and in
// the CUDA toolkit folders ($CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64).
const NVRTCLibraryEnv = "ONESOURCE_NVRTC_LIBRARY"

// The driver functions only CUDA has, and NVRTC's beyond the program calls.
const (
	cuGetErrorName gpudrv.Call = gpudrv.VendorCalls + iota
	cuDevicePrimaryCtxRetain
	cuDevicePrimaryCtxRelease
	nvrtcGetCUBINSize
	nvrtcGetCUBIN
	nvrtcGetNumSupportedArchs
	nvrtcGetSupportedArchs
)

// cudaSymbols spells the shared driver calls, and CUDA's own, in the CUDA driver API. Versioned
// names come first and are chosen when the library has them; only functions whose versioned and
// plain symbols take the same arguments are listed with both (cuCtxSynchronize_v2, which takes a
// context, is never chosen).
var cudaSymbols = gpudrv.Symbols{Calls: gpudrv.Spelling{
	gpudrv.CallCurrent:         {"cuCtxSetCurrent"},
	gpudrv.CallAlloc:           {"cuMemAlloc_v2", "cuMemAlloc"},
	gpudrv.CallFree:            {"cuMemFree_v2", "cuMemFree"},
	gpudrv.CallZero:            {"cuMemsetD8_v2", "cuMemsetD8"},
	gpudrv.CallCopyHtoD:        {"cuMemcpyHtoD_v2", "cuMemcpyHtoD"},
	gpudrv.CallCopyDtoH:        {"cuMemcpyDtoH_v2", "cuMemcpyDtoH"},
	gpudrv.CallModuleLoad:      {"cuModuleLoadData"},
	gpudrv.CallModuleUnload:    {"cuModuleUnload"},
	gpudrv.CallFunction:        {"cuModuleGetFunction"},
	gpudrv.CallFuncAttribute:   {"cuFuncGetAttribute"},
	gpudrv.CallFuncParamInfo:   {"cuFuncGetParamInfo"}, // CUDA 12.4+
	gpudrv.CallLaunch:          {"cuLaunchKernel"},
	gpudrv.CallStreamCreate:    {"cuStreamCreate"},
	gpudrv.CallStreamDestroy:   {"cuStreamDestroy_v2", "cuStreamDestroy"},
	gpudrv.CallStreamSync:      {"cuStreamSynchronize"},
	gpudrv.CallEventCreate:     {"cuEventCreate"},
	gpudrv.CallEventDestroy:    {"cuEventDestroy_v2", "cuEventDestroy"},
	gpudrv.CallEventRecord:     {"cuEventRecord"},
	gpudrv.CallEventSync:       {"cuEventSynchronize"},
	gpudrv.CallEventElapsed:    {"cuEventElapsedTime_v2", "cuEventElapsedTime"},
	gpudrv.CallDeviceCount:     {"cuDeviceGetCount"},
	gpudrv.CallDeviceGet:       {"cuDeviceGet"},
	gpudrv.CallDeviceName:      {"cuDeviceGetName"},
	gpudrv.CallDeviceTotalMem:  {"cuDeviceTotalMem_v2", "cuDeviceTotalMem"},
	gpudrv.CallDeviceAttribute: {"cuDeviceGetAttribute"},
	gpudrv.CallInit:            {"cuInit"},
	gpudrv.CallDriverVersion:   {"cuDriverGetVersion"},
	gpudrv.CallDeviceSync:      {"cuCtxSynchronize"},
	cuDevicePrimaryCtxRetain:   {"cuDevicePrimaryCtxRetain"},
	cuDevicePrimaryCtxRelease:  {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
}, Optional: gpudrv.Spelling{
	cuGetErrorName: {"cuGetErrorName"},
}}

// cuDriver is a loaded CUDA driver library and its version.
type cuDriver struct {
	*gpudrv.Library
	version int // cuDriverGetVersion: 1000*major + 10*minor
}

// resultName names a CUresult: from the table, else by the driver's cuGetErrorName.
func (l *cuDriver) resultName(code int) string {
	return gpudrv.NameResult(code, cuResultNames, "CUresult", func(code int) string {
		var p *byte
		if l == nil || l.Raw(cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&p))) != 0 {
			return ""
		}
		return dynlib.CString(p)
	}, nil)
}

// check turns a CUresult into an error naming the call (nil for CUDA_SUCCESS).
func (l *cuDriver) check(call string, r uintptr) error {
	return gpudrv.Check(call, r, l.resultName)
}

// cudaDriver is the CUDA driver library, loaded on first use (LibraryEnv or the platform's
// default) and initialised with cuInit.
var cudaDriver = &gpudrv.Runtime[*cuDriver]{
	Backend: "cuda", What: "CUDA driver library", Env: LibraryEnv, Candidates: driverCandidates, Symbols: cudaSymbols,
	New:      func() *cuDriver { return &cuDriver{} },
	Init:     (*cuDriver).init,
	NoDevice: func(code int) bool { return code == 100 }, // CUDA_ERROR_NO_DEVICE
}

// driverCandidates returns the driver library to load and where the choice came from.
func driverCandidates() ([]string, string) {
	if p := os.Getenv(LibraryEnv); p != "" {
		return []string{p}, LibraryEnv
	}
	if rtDriverDefault == "" {
		return nil, "default"
	}
	return []string{rtDriverDefault}, "default"
}

// init keeps lib, reads the driver's version and initialises it (cuInit): a failed cuInit is
// the library's InitErr, told apart for the stub library and for no device.
func (l *cuDriver) init(lib *gpudrv.Library) error {
	l.Library, lib.ResultName = lib, l.resultName
	var v int32
	if lib.Do(gpudrv.CallDriverVersion, uintptr(unsafe.Pointer(&v))) == nil {
		l.version = int(v)
	}
	err := lib.Do(gpudrv.CallInit, 0)
	var re *ResultError
	switch {
	case err == nil:
	case errors.As(err, &re) && re.Code == 34:
		lib.InitErr = gpudrv.Unavailable("cuda", "%q (%s) is the CUDA stub library, not a driver: %v", lib.Path, lib.Source, err)
	case errors.As(err, &re) && re.Code == 100:
		lib.InitErr = gpudrv.Unavailable("cuda", "no CUDA device (%q: %v)", lib.Path, err)
	default:
		lib.InitErr = gpudrv.Unavailable("cuda", "%q (%s): %v", lib.Path, lib.Source, err)
	}
	return nil
}

// nvrtcSymbols spells the run-time compiler's program calls in NVRTC (PTX: the code every NVRTC
// can make), and what NVRTC adds: cubins (CUDA 11.1+) and the architectures it builds for (11.2+).
var nvrtcSymbols = gpudrv.Symbols{Calls: gpudrv.RTCSpelling("nvrtc", "GetPTXSize", "GetPTX"), Optional: gpudrv.Spelling{
	nvrtcGetCUBINSize:         {"nvrtcGetCUBINSize"},
	nvrtcGetCUBIN:             {"nvrtcGetCUBIN"},
	nvrtcGetNumSupportedArchs: {"nvrtcGetNumSupportedArchs"},
	nvrtcGetSupportedArchs:    {"nvrtcGetSupportedArchs"},
}}

// nvrtcLib is a loaded NVRTC library, its version and the architectures it compiles for.
type nvrtcLib struct {
	*gpudrv.Library
	major, minor int
	archs        []int // nvrtcGetSupportedArchs: 75, 80, ...; nil when the library cannot say
}

// check turns an nvrtcResult into an error naming the call (nil for NVRTC_SUCCESS).
func (n *nvrtcLib) check(call string, r uintptr) error {
	return gpudrv.Check(call, r, n.resultName)
}

// resultName names an nvrtcResult: from the table, else with nvrtcGetErrorString's text.
func (n *nvrtcLib) resultName(code int) string {
	return gpudrv.NameResult(code, nvrtcResultNames, "nvrtcResult", nil, func(code int) string { return n.Text(gpudrv.CallRTCErrorString, code) })
}

// nvrtc is the NVRTC library, loaded on first use (NVRTCLibraryEnv, else the first of the
// sonames in the toolkit folders).
var nvrtc = &gpudrv.Runtime[*nvrtcLib]{
	Backend: "cuda", What: "NVRTC library", Env: NVRTCLibraryEnv, Candidates: nvrtcCandidates, Symbols: nvrtcSymbols,
	New:  func() *nvrtcLib { return &nvrtcLib{} },
	Init: (*nvrtcLib).init,
}

// nvrtcCandidates returns the NVRTC libraries to try, in order, and where the list came from.
func nvrtcCandidates() ([]string, string) {
	return dynlib.Candidates(NVRTCLibraryEnv, rtNVRTCNames, rtToolkitLibDirs)
}

// init keeps lib and reads NVRTC's version and the architectures it compiles for.
func (n *nvrtcLib) init(lib *gpudrv.Library) error {
	n.Library, lib.ResultName = lib, n.resultName
	var err error
	if n.major, n.minor, err = lib.RTCVersion(); err != nil {
		return gpudrv.Unavailable("cuda", "nvrtc: %q: %v", lib.Path, err)
	}
	var count int32
	if lib.Do(nvrtcGetNumSupportedArchs, uintptr(unsafe.Pointer(&count))) != nil || count <= 0 || count >= 1024 || !lib.Has(nvrtcGetSupportedArchs) {
		return nil
	}
	archs := make([]int32, count)
	if lib.Do(nvrtcGetSupportedArchs, uintptr(unsafe.Pointer(&archs[0]))) == nil {
		for _, a := range archs {
			n.archs = append(n.archs, int(a))
		}
	}
	return nil
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
	l, n, symbols, nerr, err := gpudrv.LoadBoth(cudaDriver, nvrtc)
	if err != nil {
		return Library{}, err
	}
	out := Library{DriverPath: l.Path, DriverVersion: l.version, DriverError: l.InitErr, NVRTCError: nerr, Symbols: symbols}
	if nerr == nil {
		out.NVRTCPath, out.NVRTCVersion, out.NVRTCArchs = n.Path, [2]int{n.major, n.minor}, append([]int(nil), n.archs...)
	}
	return out, nil
}

// FormatVersion formats a CUDA version number as cuDriverGetVersion returns it (12080 -> "12.8").
func FormatVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
