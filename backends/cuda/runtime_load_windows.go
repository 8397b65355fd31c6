//go:build windows

package cuda

import "syscall"

// rtDriverDefault is the CUDA driver library this platform names by default.
var rtDriverDefault = "nvcuda.dll"

// rtNVRTCNames are the NVRTC DLL names tried in order when ONESOURCE_NVRTC_LIBRARY is unset.
var rtNVRTCNames = []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll", "nvrtc64_111_0.dll", "nvrtc64_110_0.dll", "nvrtc64_102_0.dll"}

// rtToolkitLibDirs are the folders beside the default search path where a CUDA toolkit keeps
// NVRTC.
var rtToolkitLibDirs = []string{"$CUDA_PATH/bin", "$CUDA_HOME/bin"}

// rtOpen loads a DLL.
func rtOpen(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

// rtSymbol returns the address of name in the DLL h, 0 if it is missing.
func rtSymbol(h uintptr, name string) uintptr {
	p, err := syscall.GetProcAddress(syscall.Handle(h), name)
	if err != nil {
		return 0
	}
	return p
}
