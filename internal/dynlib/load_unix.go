//go:build darwin || netbsd || (linux && !android) || (cgo && (freebsd || android))

package dynlib

import "github.com/ebitengine/purego"

// Open loads a shared library (dlopen).
func Open(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// Symbol returns the address of name in the library h, 0 if it is missing.
func Symbol(h uintptr, name string) uintptr {
	p, err := purego.Dlsym(h, name)
	if err != nil {
		return 0
	}
	return p
}
