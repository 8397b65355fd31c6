//go:build !(darwin || netbsd || (linux && !android) || (cgo && (freebsd || android)) || windows)

package cuda

// rtDriverDefault is empty: this platform has no CUDA driver the runtime knows.
var rtDriverDefault = ""

// rtNVRTCNames is empty on this platform.
var rtNVRTCNames []string

// rtToolkitLibDirs is empty on this platform.
var rtToolkitLibDirs []string
