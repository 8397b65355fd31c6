//go:build windows

package dynlib

import "syscall"

// Open loads a DLL.
func Open(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

// Symbol returns the address of name in the DLL h, 0 if it is missing.
func Symbol(h uintptr, name string) uintptr {
	p, err := syscall.GetProcAddress(syscall.Handle(h), name)
	if err != nil {
		return 0
	}
	return p
}
