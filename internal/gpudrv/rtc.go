package gpudrv

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/onesource-go/onesource/internal/cachedir"
	"github.com/onesource-go/onesource/internal/dynlib"
)

// The program calls of a run-time compiler library (NVRTC, HIPRTC), which both spell the same way
// but for the prefix: a Library of a compiler resolves these (see Spelling).
const (
	CallRTCVersion      Call = NumCalls + iota // (&major, &minor)
	CallProgramCreate                          // (&program, source, name, 0, nil, nil)
	CallProgramCompile                         // (program, option count, options)
	CallProgramDestroy                         // (&program)
	CallProgramLogSize                         // (program, &bytes)
	CallProgramLog                             // (program, buffer)
	CallProgramCodeSize                        // (program, &bytes): PTX or a code object
	CallProgramCode                            // (program, buffer)
	CallRTCErrorString                         // (result) -> C string; optional
	// NumRTCCalls bounds the calls, compiler ones included.
	NumRTCCalls
)

// Image is device code a run-time compiler made (or, for an emulated device, the source it will
// run), ready for Device.Load, with what made it.
type Image struct {
	Code    []byte   // PTX text, a cubin, an AMDGPU code object, or an emulated device's image
	Format  string   // "ptx", "cubin", "code object" or "host" (an emulated device's)
	Target  string   // what it was built for: "sm_90", "compute_90", "gfx90a", "host"
	Options []string // every option the compiler was given
	Log     string   // the compiler's log (warnings); empty when it had nothing to say
}

// CompileError is a source that did not compile; Log holds the compiler's diagnostics.
type CompileError struct {
	Backend  string   // "cuda", "hip"
	Compiler string   // "nvrtc", "hiprtc", "host" (an emulated device's C++ compiler)
	Name     string   // the source's name, e.g. "saxpy.cu"
	Target   string   // what it was compiled for, e.g. "sm_90" or "gfx90a"
	Options  []string // every option the compiler was given
	Log      string   // the compiler's log
	Err      error    // the compile call's *ResultError (or the host compiler's error)
}

// Error names the compiler, the source, the target and the result, then the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("%s: %s: compiling %s for %s: %v\n%s", e.Backend, e.Compiler, e.Name, e.Target, e.Err, strings.TrimSpace(e.Log))
}

// Unwrap returns the compile call's error.
func (e *CompileError) Unwrap() error { return e.Err }

// RTCVersion returns the compiler library's version (CallRTCVersion).
func (l *Library) RTCVersion() (major, minor int, err error) {
	var ma, mi int32
	if err := l.Do(CallRTCVersion, uintptr(unsafe.Pointer(&ma)), uintptr(unsafe.Pointer(&mi))); err != nil {
		return 0, 0, err
	}
	return int(ma), int(mi), nil
}

// Compile compiles src (named name in diagnostics) with options through the compiler library's
// program calls and reads the code with size and get (CallProgramCodeSize and CallProgramCode,
// or another pair of the same form, such as NVRTC's cubin calls). A source that does not compile
// is a *CompileError carrying the log; img holds what is known either way (Options, Log, and
// Code on success). Any other error names the backend and the call.
//
// A successful compile is kept in internal/cachedir's "rtc" cache, keyed by the compiler library
// (its file's path, size and modification time where it was loaded by path, and the version it
// reports), the calls, the
// name, the source, the target and every option, and a later Compile of the same inputs reads
// it back without compiling (CompileStats counts both). A failed compile always runs again.
func (l *Library) Compile(src, name string, options []string, size, get Call, img Image) (Image, error) {
	img.Options = options
	entry := l.cacheEntry(src, name, options, size, get, img)
	if entry != "" {
		if b, err := cachedir.Read(entry); err == nil {
			var hit struct {
				Code []byte
				Log  string
			}
			if json.Unmarshal(b, &hit) == nil && len(hit.Code) > 0 {
				img.Code, img.Log = hit.Code, hit.Log
				rtcCounts.cached.Add(1)
				return img, nil
			}
		}
	}
	img, err := l.compile(src, name, options, size, get, img)
	if err == nil {
		rtcCounts.built.Add(1)
		if entry != "" {
			if b, jerr := json.Marshal(struct {
				Code []byte
				Log  string
			}{img.Code, img.Log}); jerr == nil {
				_ = cachedir.Write(entry, b) // a cache: a failed write costs the next start only
			}
		}
	}
	return img, err
}

// rtcCounts are CompileStats' counters.
var rtcCounts struct{ built, cached atomic.Int64 }

// CompileStats returns how many sources this process compiled with a run-time compiler and how
// many compiles it read back from the cache instead: what a second start reuses.
func CompileStats() (built, cached int) {
	return int(rtcCounts.built.Load()), int(rtcCounts.cached.Load())
}

// cacheEntry is the cache entry of a Compile, "" when there is none (caches off, the library's
// file unreadable).
func (l *Library) cacheEntry(src, name string, options []string, size, get Call, img Image) string {
	version := ""
	if ma, mi, err := l.RTCVersion(); err == nil {
		version = fmt.Sprintf("%d.%d", ma, mi)
	}
	// A library loaded by its bare name (libamdhip64.so, found by the dynamic loader) has no
	// file to stat here: its name and reported version identify it then.
	id := cachedir.Tool(l.Path)
	if id == "" {
		if version == "" {
			return ""
		}
		id = "library " + l.Path
	}
	parts := [][]byte{[]byte("gpudrv.Compile 1"), []byte(l.Backend), []byte(id), []byte(version),
		[]byte(l.names[size]), []byte(l.names[get]), []byte(name), []byte(src), []byte(img.Target), []byte(img.Format)}
	for _, o := range options {
		parts = append(parts, []byte(o))
	}
	return cachedir.Entry("rtc", cachedir.Key(parts...))
}

func (l *Library) compile(src, name string, options []string, size, get Call, img Image) (Image, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	var prog uintptr
	prefix := l.Backend + ": " + strings.TrimSuffix(l.names[CallProgramCreate], "CreateProgram")
	fail := func(err error) (Image, error) { return img, fmt.Errorf("%s: %w", prefix, err) }
	srcC, nameC := dynlib.CBytes(src), dynlib.CBytes(name)
	if err := l.Do(CallProgramCreate, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(srcC)), uintptr(unsafe.Pointer(nameC)), 0, 0, 0); err != nil {
		return fail(err)
	}
	defer l.Do(CallProgramDestroy, uintptr(unsafe.Pointer(&prog)))
	optC := make([]*byte, len(options))
	for i, o := range options {
		optC[i] = dynlib.CBytes(o)
		pin.Pin(optC[i])
	}
	var optp uintptr
	if len(optC) > 0 {
		optp = uintptr(unsafe.Pointer(&optC[0]))
	}
	cerr := l.Do(CallProgramCompile, prog, uintptr(len(optC)), optp)
	runtime.KeepAlive(optC)
	img.Log = l.programLog(prog)
	if cerr != nil {
		return img, &CompileError{Backend: l.Backend, Compiler: strings.TrimPrefix(prefix, l.Backend+": "), Name: name,
			Target: img.Target, Options: options, Log: img.Log, Err: cerr}
	}
	var n uintptr
	if err := l.Do(size, prog, uintptr(unsafe.Pointer(&n))); err != nil {
		return fail(err)
	}
	if n == 0 || n > 1<<30 {
		return fail(fmt.Errorf("%s reports %d bytes", l.names[size], n))
	}
	code := make([]byte, n)
	if err := l.Do(get, prog, uintptr(unsafe.Pointer(&code[0]))); err != nil {
		return fail(err)
	}
	img.Code = code
	return img, nil
}

// programLog returns the program's log, trimmed of its NUL ("" when there is none).
func (l *Library) programLog(prog uintptr) string {
	var size uintptr
	if l.Do(CallProgramLogSize, prog, uintptr(unsafe.Pointer(&size))) != nil || size <= 1 || size > 1<<26 {
		return ""
	}
	b := make([]byte, size)
	if l.Do(CallProgramLog, prog, uintptr(unsafe.Pointer(&b[0]))) != nil {
		return ""
	}
	return dynlib.GoString(b)
}

// RTCSpelling spells the program calls of a run-time compiler whose functions are prefix+name
// (NVRTC and HIPRTC name them alike: nvrtcCreateProgram, hiprtcCreateProgram, ...), with
// codeSize and code the names of the calls that read the code ("GetPTXSize" and "GetPTX" for
// NVRTC's PTX, "GetCodeSize" and "GetCode" for HIPRTC).
func RTCSpelling(prefix, codeSize, code string) Spelling {
	s := Spelling{}
	for c, name := range map[Call]string{
		CallRTCVersion: "Version", CallProgramCreate: "CreateProgram", CallProgramCompile: "CompileProgram",
		CallProgramDestroy: "DestroyProgram", CallProgramLogSize: "GetProgramLogSize", CallProgramLog: "GetProgramLog",
		CallProgramCodeSize: codeSize, CallProgramCode: code, CallRTCErrorString: "GetErrorString",
	} {
		s[c] = []string{prefix + name}
	}
	return s
}
