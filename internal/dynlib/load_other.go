//go:build !(darwin || netbsd || (linux && !android) || (cgo && (freebsd || android)) || windows)

package dynlib

import (
	"errors"
	"runtime"
)

// CanLoad reports whether this platform can load and call C libraries without cgo.
const CanLoad = false

// Open fails: no library can be loaded on this platform.
func Open(path string) (uintptr, error) {
	return 0, errors.New("the runtime cannot load shared libraries on " + runtime.GOOS + "/" + runtime.GOARCH + " (purego needs cgo here)")
}

// Symbol returns 0.
func Symbol(h uintptr, name string) uintptr { return 0 }

// Call is never reached here: no library loads. It returns 999, which is CUDA_ERROR_UNKNOWN and
// hipErrorUnknown.
func Call(fn uintptr, args ...uintptr) uintptr { return 999 }
