//go:build darwin || netbsd || (linux && !android) || (cgo && (freebsd || android)) || windows

package dynlib

import "github.com/ebitengine/purego"

// CanLoad reports whether this platform can load and call C libraries without cgo.
const CanLoad = true

// Call calls the C function at fn with integer and pointer arguments (purego.SyscallN, no
// cgo) and returns its integer result register. Pointers converted to uintptr in a call's
// argument list stay alive and in place for the duration of the call.
//
//go:uintptrescapes
func Call(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
