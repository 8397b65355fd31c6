//go:build windows

package cuda

// rtDriverDefault is the CUDA driver library this platform names by default.
var rtDriverDefault = "nvcuda.dll"

// rtNVRTCNames are the NVRTC DLL names tried in order when ONESOURCE_NVRTC_LIBRARY is unset.
var rtNVRTCNames = []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll", "nvrtc64_111_0.dll", "nvrtc64_110_0.dll", "nvrtc64_102_0.dll"}

// rtToolkitLibDirs are the folders beside the default search path where a CUDA toolkit keeps
// NVRTC.
var rtToolkitLibDirs = []string{"$CUDA_PATH/bin", "$CUDA_HOME/bin"}
