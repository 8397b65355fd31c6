package gpudrv

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/onesource-go/onesource/internal/dynlib"
)

// RTC is a runtime compiler's program calls, which NVRTC and HIPRTC spell the same way
// (xCreateProgram, xCompileProgram, xDestroyProgram, xGetProgramLogSize, xGetProgramLog): the
// addresses resolved from the library, the names used in errors, and Check, which turns a
// result into an error naming the call.
type RTC struct {
	Create, Compile, Destroy, LogSize, Log uintptr
	Prefix                                 string // "nvrtc" or "hiprtc": the calls are Prefix+"CreateProgram", ...
	Check                                  func(call string, r uintptr) error
}

// Program is what a compile produced: the code, and the compiler's log (warnings, or the
// diagnostics of a failed compile).
type Program struct {
	Code []byte
	Log  string
	// CompileErr is the compile call's error when the source did not compile (Code is nil);
	// nil otherwise.
	CompileErr error
}

// Build compiles src (named name in diagnostics) with options and reads the code through the
// size and get calls (e.g. nvrtcGetPTXSize and nvrtcGetPTX, hiprtcGetCodeSize and
// hiprtcGetCode), which take the program and a pointer. A source that does not compile is not
// an error: Program.CompileErr says so and Log holds why. The error is about the compiler's
// other calls.
func (c *RTC) Build(src, name string, options []string, size, get uintptr, sizeCall, getCall string) (Program, error) {
	var out Program
	var pin runtime.Pinner
	defer pin.Unpin()
	var prog uintptr
	srcC, nameC := dynlib.CBytes(src), dynlib.CBytes(name)
	if err := c.Check(c.Prefix+"CreateProgram", dynlib.Call(c.Create, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(srcC)), uintptr(unsafe.Pointer(nameC)), 0, 0, 0)); err != nil {
		return out, err
	}
	defer dynlib.Call(c.Destroy, uintptr(unsafe.Pointer(&prog)))
	optC := make([]*byte, len(options))
	for i, o := range options {
		optC[i] = dynlib.CBytes(o)
		pin.Pin(optC[i])
	}
	var optp uintptr
	if len(optC) > 0 {
		optp = uintptr(unsafe.Pointer(&optC[0]))
	}
	cerr := c.Check(c.Prefix+"CompileProgram", dynlib.Call(c.Compile, prog, uintptr(len(optC)), optp))
	runtime.KeepAlive(optC)
	out.Log = c.log(prog)
	if cerr != nil {
		out.CompileErr = cerr
		return out, nil
	}
	var n uintptr
	if err := c.Check(sizeCall, dynlib.Call(size, prog, uintptr(unsafe.Pointer(&n)))); err != nil {
		return out, err
	}
	if n == 0 || n > 1<<30 {
		return out, fmt.Errorf("%s reports %d bytes", sizeCall, n)
	}
	code := make([]byte, n)
	if err := c.Check(getCall, dynlib.Call(get, prog, uintptr(unsafe.Pointer(&code[0])))); err != nil {
		return out, err
	}
	out.Code = code
	return out, nil
}

// log returns the program's log, trimmed of its NUL ("" when there is none).
func (c *RTC) log(prog uintptr) string {
	var size uintptr
	if dynlib.Call(c.LogSize, prog, uintptr(unsafe.Pointer(&size))) != 0 || size <= 1 || size > 1<<26 {
		return ""
	}
	b := make([]byte, size)
	if dynlib.Call(c.Log, prog, uintptr(unsafe.Pointer(&b[0]))) != 0 {
		return ""
	}
	return dynlib.GoString(b)
}
