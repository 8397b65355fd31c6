//go:build windows

package vulkan

import "syscall"

// defaultLibrary is the Vulkan loader this platform names by default.
var defaultLibrary = "vulkan-1.dll"

// openLibrary loads a DLL.
func openLibrary(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

// librarySymbol returns the address of name in the DLL h, 0 if it is missing.
func librarySymbol(h uintptr, name string) uintptr {
	p, err := syscall.GetProcAddress(syscall.Handle(h), name)
	if err != nil {
		return 0
	}
	return p
}
