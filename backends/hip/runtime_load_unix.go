//go:build darwin || netbsd || (linux && !android) || (cgo && (freebsd || android))

package hip

// rtHIPNames are the HIP runtime libraries tried in order when ONESOURCE_HIP_LIBRARY is unset:
// the unversioned development name, then the sonames of ROCm 6 and 5. Each is also tried in the
// ROCm folders rtROCmLibDirs lists.
var rtHIPNames = []string{"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"}

// rtHIPRTCNames are the HIPRTC libraries tried in order when ONESOURCE_HIPRTC_LIBRARY is unset.
// ROCm 5 before 5.3 has no separate HIPRTC library: its hiprtc functions live in libamdhip64,
// which is used when none of these loads.
var rtHIPRTCNames = []string{"libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5"}

// rtComgrNames are the AMD code-object manager libraries HIPRTC compiles through; the runtime
// asks it which targets are valid before compiling (see checkTarget).
var rtComgrNames = []string{"libamd_comgr.so", "libamd_comgr.so.3", "libamd_comgr.so.2"}

// rtROCmLibDirs are the folders beside the default search path where ROCm keeps its libraries.
var rtROCmLibDirs = []string{"$ROCM_PATH/lib", "$HIP_PATH/lib", "/opt/rocm/lib"}
