//go:build !(darwin || netbsd || (linux && !android) || (cgo && (freebsd || android)) || windows)

package hip

import (
	"errors"
	"runtime"
)

// rtCanLoad reports whether this platform can load and call C libraries without cgo.
const rtCanLoad = false

// The library names are empty on this platform.
var (
	rtHIPNames    []string
	rtHIPRTCNames []string
	rtComgrNames  []string
	rtROCmLibDirs []string
)

// rtOpen fails: the runtime cannot load libraries on this platform.
func rtOpen(path string) (uintptr, error) {
	return 0, errors.New("the runtime cannot load shared libraries on " + runtime.GOOS + "/" + runtime.GOARCH + " (purego needs cgo here)")
}

// rtSymbol returns 0.
func rtSymbol(h uintptr, name string) uintptr { return 0 }

// rtCall is never reached here: no library loads.
func rtCall(fn uintptr, args ...uintptr) uintptr {
	return 999 // hipErrorUnknown; unreachable
}
