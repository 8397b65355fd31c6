package dsl

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// Type is a value or element type: one of the predeclared types below, or Vec of one.
type Type = ir.Type

// The types a kernel uses (BF16 is in types.go). Loading an I8, U8, I16 or U16 element gives
// an I32 or U32 value, storing one narrows it (wrapping); they are scalar value types too
// (Value.I8 and its siblings), whose arithmetic wraps at their width. F16 is an element and a
// value type.
var (
	Bool = ir.TBool
	I8   = ir.S(ir.I8)
	U8   = ir.S(ir.U8)
	I16  = ir.S(ir.I16)
	U16  = ir.S(ir.U16)
	I32  = ir.TI32
	U32  = ir.TU32
	F16  = ir.TF16
	F32  = ir.TF32
)

// Vec returns the vector type of n (2 to 4) lanes of the scalar type t.
func Vec(t Type, n int) Type { return ir.Vec(t.Scalar, n) }

// Access says how a kernel uses a buffer.
type Access = ir.Access

// Buffer access modes. A store to a Read buffer or a load from a Write buffer is an error.
const (
	Read      = ir.ReadOnly
	Write     = ir.WriteOnly
	ReadWrite = ir.ReadWrite
)

// Dim selects the x, y or z component of a three-dimensional builtin.
type Dim int

// The dimensions.
const (
	X Dim = 0
	Y Dim = 1
	Z Dim = 2
)

// DefaultSharedLimit is the workgroup memory a kernel may declare unless SetSharedLimit says
// otherwise: 32 KiB, what every device onesource targets provides (Apple and lavapipe have
// 32 KiB, NVIDIA 48 KiB, AMD 64 KiB). A device checks its real limit again when it builds a
// pipeline.
const DefaultSharedLimit = 32 << 10

// Kernel builds one compute kernel. Create it with New, declare its resources, write its body
// with the methods of Kernel, Value, Array and Var, then call Build.
//
// A kernel is built by an ordinary Go function; the Go parameters of that function (workgroup
// size, rows per workgroup, vector width, ...) are the kernel's schedule: calling the function
// with other values builds a specialized kernel. Mistakes (mismatched types, a store to a
// read-only buffer, too much shared memory, a barrier under invocation-dependent control) are
// collected as errors that name the Go file and line that made them; Build returns them all.
// Kernel methods never panic on such mistakes.
type Kernel struct {
	k           *ir.Kernel
	cur         *ir.Block
	loops       int
	inCont      int
	errs        []error
	sharedLimit int
	built       bool
	created     uint64 // kernelSeq when New made it (see orphan.go)
	// pairScratch are the shared arrays the index-carrying reductions cross invocations
	// through (canon_pairs.go), by value type: one pair for every such reduction of the kernel.
	pairScratch map[Type][2]Array
}

// New starts a kernel called name (an identifier: it becomes the entry point name) with the
// given workgroup size (1 to 3 dimensions; missing ones are 1).
func New(name string, workgroupSize ...int) *Kernel {
	p := callerPos()
	k := &Kernel{
		k:           &ir.Kernel{Name: name, Pos: p, WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{}},
		sharedLimit: DefaultSharedLimit,
		created:     kernelSeq.Add(1),
	}
	k.cur = k.k.Body
	if len(workgroupSize) == 0 || len(workgroupSize) > 3 {
		k.errorf(p, "workgroup size needs 1 to 3 dimensions, got %d", len(workgroupSize))
	}
	for i, d := range workgroupSize {
		if i >= 3 {
			break
		}
		if d <= 0 || d > ir.MaxWorkgroupLanes {
			k.errorf(p, "workgroup size %v: dimension %d is %d, want 1..%d", workgroupSize, i, d, ir.MaxWorkgroupLanes)
			continue
		}
		k.k.WorkgroupSize[i] = uint32(d)
	}
	return k
}

// Name returns the kernel's name.
func (k *Kernel) Name() string {
	if k == nil {
		return ""
	}
	return k.k.Name
}

// WorkgroupSize returns the invocations per workgroup along d; a compile-time constant of the
// kernel, usable as a Go int in the schedule.
func (k *Kernel) WorkgroupSize(d Dim) int {
	if k == nil {
		return 0
	}
	if d < 0 || d > 2 {
		return 1
	}
	return int(k.k.WorkgroupSize[d])
}

// Lanes returns the total invocations per workgroup (the T of the canonical reduction).
func (k *Kernel) Lanes() int {
	if k == nil {
		return 0
	}
	return k.k.Lanes()
}

// SetSharedLimit changes the shared-memory budget checked while declaring shared arrays.
func (k *Kernel) SetSharedLimit(bytes int) {
	if k == nil {
		return
	}
	k.sharedLimit = bytes
}

// Build verifies the kernel and returns its IR, or every error found (the construction
// mistakes and the verifier's findings together), each naming the Go source line that caused
// it. Build may be called more than once; it returns a fresh copy each time.
func (k *Kernel) Build() (*ir.Kernel, error) {
	if k == nil {
		return nil, fmt.Errorf("dsl: Build of a nil *Kernel (make kernels with dsl.New) at %s", callerPos())
	}
	errs := append(append([]error(nil), k.errs...), orphanErrors(k.created)...)
	out := k.k.Clone()
	// The verifier runs even after construction mistakes (they leave well-typed placeholders), so
	// every error comes at once: a divergent barrier is reported with a type error, not after it
	// is fixed.
	if err := ir.Verify(out); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// MustBuild is Build for kernels known to be correct (examples, tests); it panics on error.
func (k *Kernel) MustBuild() *ir.Kernel {
	out, err := k.Build()
	if err != nil {
		panic(err)
	}
	return out
}

// Error is a mistake in a kernel's construction, located at the user's Go source line.
type Error = ir.Error

func (k *Kernel) errorf(p ir.Pos, format string, args ...any) {
	if len(k.errs) < 100 {
		k.errs = append(k.errs, &Error{Pos: p, Kernel: k.k.Name, Msg: fmt.Sprintf(format, args...)})
	}
}

const dslPkg = "github.com/onesource-go/onesource/dsl."

// callerPos returns the position of the innermost caller outside this package: the user's line.
func callerPos() ir.Pos {
	var pcs [32]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, dslPkg) || strings.HasPrefix(f.Function, dslPkg+"Test") || strings.HasPrefix(f.Function, dslPkg+"Example") {
			return ir.Pos{File: f.File, Line: f.Line}
		}
		if !more {
			return ir.Pos{}
		}
	}
}

// emit appends an instruction to the current block and returns its value.
func (k *Kernel) emit(in *ir.Inst) Value {
	if in.Pos.File == "" {
		in.Pos = callerPos()
	}
	k.cur.Append(in)
	return Value{k: k, in: in}
}

// nested runs f with the current block set to b.
func (k *Kernel) nested(b *ir.Block, f func()) {
	saved := k.cur
	k.cur = b
	defer func() { k.cur = saved }()
	if f != nil {
		f()
	}
}
