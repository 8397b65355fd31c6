//go:build !(darwin || netbsd || (linux && !android) || (cgo && (freebsd || android)) || windows)

package cuda

import (
	"errors"
	"runtime"
)

// rtCanLoad reports whether this platform can load and call C libraries without cgo.
const rtCanLoad = false

// rtDriverDefault is empty: this platform has no CUDA driver the runtime knows.
var rtDriverDefault = ""

// rtNVRTCNames is empty on this platform.
var rtNVRTCNames []string

// rtToolkitLibDirs is empty on this platform.
var rtToolkitLibDirs []string

// rtOpen fails: the runtime cannot load libraries on this platform.
func rtOpen(path string) (uintptr, error) {
	return 0, errors.New("the runtime cannot load shared libraries on " + runtime.GOOS + "/" + runtime.GOARCH + " (purego needs cgo here)")
}

// rtSymbol returns 0.
func rtSymbol(h uintptr, name string) uintptr { return 0 }

// rtCall is never reached here: no library loads.
func rtCall(fn uintptr, args ...uintptr) uintptr {
	return 999 // CUDA_ERROR_UNKNOWN; unreachable
}
