//go:build darwin || netbsd || (linux && !android) || (cgo && (freebsd || android))

package cuda

import (
	"runtime"
)

// rtDriverDefault is the CUDA driver library this platform names by default.
var rtDriverDefault = func() string {
	if runtime.GOOS == "darwin" {
		return "libcuda.dylib" // no CUDA on current macOS; kept so the error names something
	}
	return "libcuda.so.1"
}()

// rtNVRTCNames are the NVRTC library names tried in order when ONESOURCE_NVRTC_LIBRARY is unset:
// the unversioned development name, then the sonames of CUDA 13, 12, 11.2-11.8, 11.1, 11.0 and
// 10.2. Each is also tried in the toolkit folders rtToolkitDirs lists.
var rtNVRTCNames = []string{
	"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1",
	"libnvrtc.so.11.0", "libnvrtc.so.10.2",
}

// rtToolkitLibDirs are the folders beside the default search path where a CUDA toolkit keeps
// libnvrtc: $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64.
var rtToolkitLibDirs = []string{"$CUDA_HOME/lib64", "$CUDA_PATH/lib64", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}
