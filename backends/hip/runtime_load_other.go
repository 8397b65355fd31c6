//go:build !(darwin || netbsd || (linux && !android) || (cgo && (freebsd || android)) || windows)

package hip

// The library names are empty on this platform.
var (
	rtHIPNames    []string
	rtHIPRTCNames []string
	rtComgrNames  []string
	rtROCmLibDirs []string
)
