// Package dynlib loads C shared libraries and calls their functions without cgo (through
// purego): opening the first of several candidate libraries, with an environment override and
// extra folders to search; resolving symbols, with versioned names tried before older ones; and
// the C string helpers the calls need. The CUDA and HIP runtimes share it.
package dynlib

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"
)

// Sym is one C function a library must (or may) export: where its address goes, the name it is
// known by and the symbols to try, the preferred (versioned) one first.
type Sym struct {
	Ptr      *uintptr
	Fn       string   // the function, e.g. "cuMemAlloc"
	Names    []string // symbols to try in order; nil means Fn alone
	Optional bool     // a missing optional function leaves *Ptr 0 and is no error
}

// Resolve returns the address and the name of the first of names that lookup finds, or 0 and
// "" when none is there. This is how versioned symbols (cuMemAlloc_v2,
// hipGetDevicePropertiesR0600) are chosen: at run time, from what the loaded library exports,
// never from a version string or a build-time header.
func Resolve(lookup func(name string) uintptr, names ...string) (uintptr, string) {
	for _, n := range names {
		if p := lookup(n); p != 0 {
			return p, n
		}
	}
	return 0, ""
}

// ResolveAll fills every entry of syms through lookup and returns which symbol each function
// got. Missing required functions make an error that lists them (with every name tried); what
// names the library in it.
func ResolveAll(what string, syms []Sym, lookup func(name string) uintptr) (map[string]string, error) {
	got := make(map[string]string, len(syms))
	var missing []string
	for _, s := range syms {
		names := s.Names
		if names == nil {
			names = []string{s.Fn}
		}
		p, name := Resolve(lookup, names...)
		*s.Ptr = p
		if p != 0 {
			got[s.Fn] = name
		} else if !s.Optional {
			missing = append(missing, strings.Join(names, "|"))
		}
	}
	if len(missing) > 0 {
		return got, fmt.Errorf("%s lacks %s", what, strings.Join(missing, ", "))
	}
	return got, nil
}

// Candidates returns the libraries to try and where the list came from: the library the
// environment variable env names alone (source env), else names on the default search path and
// then in each of dirs that exists (source "default"). A folder may start with an environment
// variable ($CUDA_HOME/lib64); it is skipped while that variable is unset.
func Candidates(env string, names, dirs []string) ([]string, string) {
	if p := os.Getenv(env); p != "" {
		return []string{p}, env
	}
	out := append([]string(nil), names...)
	seen := map[string]bool{}
	for _, d := range dirs {
		if v, _, ok := strings.Cut(strings.TrimPrefix(d, "$"), "/"); ok && strings.HasPrefix(d, "$") && os.Getenv(v) == "" {
			continue // $CUDA_HOME/lib64 with CUDA_HOME unset
		}
		d = os.ExpandEnv(d)
		if seen[d] {
			continue
		}
		seen[d] = true
		if _, err := os.Stat(d); err != nil {
			continue
		}
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out, "default"
}

// OpenFirst loads the first of names that loads; errs has one entry per failure.
func OpenFirst(names []string) (h uintptr, path string, errs []string) {
	for _, n := range names {
		p, err := Open(n)
		if err == nil {
			return p, n, errs
		}
		errs = append(errs, err.Error())
	}
	return 0, "", errs
}

// CString returns the NUL-terminated C string at p ("" for nil).
func CString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// CStringAt returns the C string at the address a C function returned.
func CStringAt(p uintptr) string {
	if p == 0 {
		return ""
	}
	return CString(*(**byte)(unsafe.Pointer(&p)))
}

// CBytes returns s as a NUL-terminated C string in Go memory.
func CBytes(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// GoString returns the NUL-terminated string at the start of b.
func GoString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
