package vulkan

//go:generate go run ./internal/vkgen -dir .

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// LibraryEnv is the environment variable that names the Vulkan loader library to load instead of
// the platform default (libvulkan.so.1 on Linux).
const LibraryEnv = "ONESOURCE_VULKAN_LIBRARY"

// ErrUnavailable is wrapped by every error that says the Vulkan runtime cannot be used on this
// machine (no library, no instance, no device): errors.Is(err, ErrUnavailable).
var ErrUnavailable = errors.New("unavailable")

func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: vulkan: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}

// ResultError is a Vulkan call that returned a VkResult other than VK_SUCCESS.
type ResultError struct {
	Call   string // the Vulkan function, e.g. "vkCreateDevice"
	Result int32  // the VkResult value
}

// Error names the call and the result, e.g. "vkCreateDevice: VK_ERROR_FEATURE_NOT_PRESENT (-8)".
func (e *ResultError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, vkResult(e.Result), e.Result)
}

// String returns the VkResult's name, or VkResult(n) for a value the registry does not name.
func (r vkResult) String() string {
	if s, ok := vkResultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// check turns a VkResult into an error naming the call (nil for VK_SUCCESS).
func check(call string, r vkResult) error {
	if r == vkSuccess {
		return nil
	}
	return &ResultError{Call: call, Result: int32(r)}
}

// Version is a Vulkan version number as VK_MAKE_API_VERSION packs it.
type Version uint32

// MakeVersion packs major.minor.patch.
func MakeVersion(major, minor, patch uint32) Version {
	return Version(major<<22 | minor<<12 | patch)
}

// Major returns the major version.
func (v Version) Major() uint32 { return uint32(v) >> 22 & 0x7F }

// Minor returns the minor version.
func (v Version) Minor() uint32 { return uint32(v) >> 12 & 0x3FF }

// Patch returns the patch version.
func (v Version) Patch() uint32 { return uint32(v) & 0xFFF }

// String formats the version as major.minor.patch.
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch()) }

var (
	version11 = MakeVersion(1, 1, 0)
	version12 = MakeVersion(1, 2, 0)
	version13 = MakeVersion(1, 3, 0)
)

// vkFuncEntry is one function of a generated table: its name and where its pointer goes.
type vkFuncEntry struct {
	name string
	ptr  *uintptr
}

// loadTable fills a table through get; a function get cannot find is an error naming it.
func loadTable(what string, entries []vkFuncEntry, get func(name string) uintptr) error {
	var missing []string
	for _, e := range entries {
		*e.ptr = get(e.name)
		if *e.ptr == 0 {
			missing = append(missing, e.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("vulkan: %s lacks %v", what, missing)
	}
	return nil
}

// cstr returns s as a NUL-terminated C string in Go memory.
func cstr(s string) unsafe.Pointer {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return unsafe.Pointer(&b[0])
}

// gostr returns the NUL-terminated string at the start of b.
func gostr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// vkLibrary is a loaded Vulkan loader library with its global functions.
type vkLibrary struct {
	path   string
	lib    vkLibraryFuncs
	global vkGlobalFuncs
}

// getInstanceProc returns the function name of instance (0 for a global function), 0 if missing.
func (l *vkLibrary) getInstanceProc(instance vkInstance, name string) uintptr {
	return l.lib.getInstanceProcAddr(instance, cstr(name))
}

type libResult struct {
	lib *vkLibrary
	err error
}

var libraries struct {
	sync.Mutex
	m map[string]libResult
}

// libraryPath returns the library to load and where the choice came from.
func libraryPath() (path, source string) {
	if p := os.Getenv(LibraryEnv); p != "" {
		return p, LibraryEnv
	}
	return defaultLibrary, "default"
}

// loadLibrary loads the library that libraryPath names, once per path (the environment is
// read on every call, so a changed ONESOURCE_VULKAN_LIBRARY takes effect).
func loadLibrary() (*vkLibrary, error) {
	path, source := libraryPath()
	libraries.Lock()
	defer libraries.Unlock()
	if r, ok := libraries.m[path]; ok {
		return r.lib, r.err
	}
	lib, err := openVulkanLibrary(path, source)
	if libraries.m == nil {
		libraries.m = map[string]libResult{}
	}
	libraries.m[path] = libResult{lib, err}
	return lib, err
}

func openVulkanLibrary(path, source string) (*vkLibrary, error) {
	if !ptr64 {
		return nil, unavailable("the runtime supports 64-bit platforms only")
	}
	h, err := openLibrary(path)
	if err != nil {
		return nil, unavailable("cannot load %q (%s): %v", path, source, err)
	}
	l := &vkLibrary{path: path}
	if err := loadTable(path, l.lib.entries(), func(name string) uintptr { return librarySymbol(h, name) }); err != nil {
		return nil, unavailable("%q is not a Vulkan loader: %v", path, err)
	}
	err = loadTable(path, l.global.entries(), func(name string) uintptr { return l.getInstanceProc(0, name) })
	if err != nil && l.global.vkCreateInstance == 0 {
		return nil, unavailable("%q: %v", path, err)
	}
	// vkEnumerateInstanceVersion is missing only from Vulkan 1.0 loaders, which instanceVersion
	// reports as 1.0.
	return l, nil
}

// instanceVersion returns the loader's instance-level version.
func (l *vkLibrary) instanceVersion() Version {
	if l.global.vkEnumerateInstanceVersion == 0 {
		return MakeVersion(1, 0, 0)
	}
	var v uint32
	if l.global.enumerateInstanceVersion(unsafe.Pointer(&v)) != vkSuccess {
		return MakeVersion(1, 0, 0)
	}
	return Version(v)
}

const ptr64 = unsafe.Sizeof(uintptr(0)) == 8
