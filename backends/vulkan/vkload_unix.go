//go:build darwin || netbsd || (linux && !android) || (cgo && (freebsd || android))

package vulkan

import (
	"runtime"

	"github.com/ebitengine/purego"
)

// defaultLibrary is the Vulkan loader this platform names by default.
var defaultLibrary = func() string {
	switch runtime.GOOS {
	case "darwin":
		return "libvulkan.1.dylib"
	case "android":
		return "libvulkan.so"
	}
	return "libvulkan.so.1"
}()

// openLibrary loads a shared library (dlopen).
func openLibrary(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// librarySymbol returns the address of name in the library h, 0 if it is missing.
func librarySymbol(h uintptr, name string) uintptr {
	p, err := purego.Dlsym(h, name)
	if err != nil {
		return 0
	}
	return p
}
