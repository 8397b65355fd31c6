//go:build !(darwin || netbsd || (linux && !android) || (cgo && (freebsd || android)) || windows)

package vulkan

import (
	"errors"
	"runtime"
)

// defaultLibrary is empty: this platform has no Vulkan loader the runtime knows.
var defaultLibrary = ""

// openLibrary fails: the runtime cannot load libraries on this platform.
func openLibrary(path string) (uintptr, error) {
	return 0, errors.New("the runtime cannot load shared libraries on " + runtime.GOOS + "/" + runtime.GOARCH + " (purego needs cgo here)")
}

// librarySymbol returns 0.
func librarySymbol(h uintptr, name string) uintptr { return 0 }

// vkCall is never reached here: no library loads.
func vkCall(fn uintptr, args ...uintptr) uintptr {
	panic("vulkan: no foreign calls on " + runtime.GOOS)
}
