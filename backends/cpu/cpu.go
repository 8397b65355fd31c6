package cpu

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// SubgroupSize is the executor's subgroup: 32 consecutive invocations by local index, as on a
// CUDA warp. Shuffles reach only within it; the SubgroupSize builtin reads it.
const SubgroupSize = 32

// Caps is the lowering target of the executor: Compile lowers every kernel with it, and a kernel
// given to CompileLowered must have been lowered with it. The executor implements what it
// promises: shuffles within subgroups of SubgroupSize lanes, the packed 4 x i8 dot product, f16
// arithmetic (each operation in f32, rounded to f16: bit for bit the correctly rounded f16
// operation), a fused multiply-add of f32 that rounds once, f32 atomic adds, and subgroup
// reductions over the whole subgroup run natively, in the canonical butterfly order lower would
// expand them to (so their bits are the expansion's, not a device's own order).
var Caps = lower.Caps{SubgroupSize: SubgroupSize, DotI8x4: true, Float16: true, ExactFma: true, AtomicFloatAdd: true, SubgroupArithmetic: true}

// Program is a kernel compiled for the executor. It is immutable and safe for concurrent use:
// every Run has its own frames.
type Program struct {
	k       *ir.Kernel
	workers int
	code    *code
}

// Compile lowers k for Caps and compiles it. k is not modified. Errors name the kernel's Go
// source line (*ir.Error where the error is the executor's own).
func Compile(k *ir.Kernel) (*Program, error) {
	if k == nil {
		return nil, fmt.Errorf("cpu: Compile: nil kernel")
	}
	low, err := lower.Run(k, Caps)
	if err != nil {
		return nil, err
	}
	return CompileLowered(low)
}

// CompileLowered compiles a kernel that package lower already lowered for Caps (a kernel read
// back by Decode, a checked kernel made by lower.Checked). It verifies k first; an operation or
// type the executor does not implement is an *ir.Error at its line.
func CompileLowered(k *ir.Kernel) (p *Program, err error) {
	if k == nil {
		return nil, fmt.Errorf("cpu: CompileLowered: nil kernel")
	}
	defer func() {
		if r := recover(); r != nil { // a fault of the compiler: an error, never a panic
			p, err = nil, fmt.Errorf("cpu: kernel %s: internal error while compiling: %v\n%s", k.Name, r, debug.Stack())
		}
	}()
	if err := ir.Verify(k); err != nil {
		return nil, err
	}
	c, err := compile(k, SubgroupSize)
	if err != nil {
		return nil, err
	}
	return &Program{k: k, code: c}, nil
}

// CompileLoweredFor is CompileLowered for a kernel lowered for another target's subgroups of sg
// invocations (a power of two; the SubgroupSize builtin reads it and shuffles reach within it):
// the native CPU backend's differential tests run its kernels here, in the same lockstep model.
func CompileLoweredFor(k *ir.Kernel, sg int) (p *Program, err error) {
	if k == nil {
		return nil, fmt.Errorf("cpu: CompileLoweredFor: nil kernel")
	}
	if sg < 1 || sg&(sg-1) != 0 {
		return nil, fmt.Errorf("cpu: CompileLoweredFor: subgroup size %d is not a power of two", sg)
	}
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("cpu: kernel %s: internal error while compiling: %v\n%s", k.Name, r, debug.Stack())
		}
	}()
	if err := ir.Verify(k); err != nil {
		return nil, err
	}
	c, err := compile(k, sg)
	if err != nil {
		return nil, err
	}
	return &Program{k: k, code: c}, nil
}

// Kernel returns the lowered kernel the program runs.
func (p *Program) Kernel() *ir.Kernel { return p.k }

// WithWorkers returns a program that runs workgroups on n goroutines (n <= 0: one per CPU,
// runtime.NumCPU()). The compiled code is shared.
func (p *Program) WithWorkers(n int) *Program {
	q := *p
	q.workers = n
	return &q
}

// Workers is how many goroutines a Run spreads the workgroups over (at most one per workgroup).
func (p *Program) Workers() int {
	if p.workers > 0 {
		return p.workers
	}
	return runtime.NumCPU()
}

// Run dispatches groups workgroups: see RunContext.
func (p *Program) Run(bufs [][]byte, params []uint32, groups [3]uint32) error {
	return p.RunContext(context.Background(), bufs, params, groups)
}

// RunContext dispatches groups workgroups of the kernel over bufs (every buffer binding, in order;
// each holds len/stride elements, and the kernel reads and writes it in place) with params (the
// kernel's 32-bit parameters in declaration order, f32 as bits). The workgroups run on Workers
// goroutines; the invocations of one workgroup run in lockstep (see the package documentation).
//
// An out-of-bounds access stops the dispatch with an *OutOfBoundsError; when several workgroups
// have one, the error is the one of the first workgroup in dispatch order, so the error does not
// depend on the schedule. A canceled ctx stops the dispatch between loop iterations and
// workgroups with ctx's error. The buffers' contents after an error are unspecified.
func (p *Program) RunContext(ctx context.Context, bufs [][]byte, params []uint32, groups [3]uint32) error {
	return p.code.run(ctx, p.Workers(), bufs, params, groups)
}

// OutOfBoundsError is an access to a buffer or shared array element that does not exist.
type OutOfBoundsError struct {
	Kernel string
	Pos    ir.Pos // the user's Go line that made the access
	Op     string // "load", "store" or "atomic"
	Array  string // the buffer's or shared array's name
	Shared bool   // a shared array, not a buffer
	Index  int64  // the index (an i32 index as its signed value)
	Len    int    // the array's element count
	// Workgroup and Invocation (local index) say who made the access.
	Workgroup  [3]uint32
	Invocation int
}

// Site describes the access as the suite's checked mode does: "kernels/ops_norm.go:57: store
// y[4096] outside its 4096 elements".
func (e *OutOfBoundsError) Site() string {
	what := e.Array
	if e.Shared {
		what = "shared " + what
	}
	return fmt.Sprintf("%s: %s %s[%d] outside its %d elements", lower.ShortPos(e.Pos), e.Op, what, e.Index, e.Len)
}

// Error implements error.
func (e *OutOfBoundsError) Error() string {
	return fmt.Sprintf("cpu: kernel %s: %s (workgroup (%d, %d, %d), invocation %d)", e.Kernel, e.Site(),
		e.Workgroup[0], e.Workgroup[1], e.Workgroup[2], e.Invocation)
}

// Identity names the executor as registry evidence and tuning caches record a device: the device
// ("cpu executor (GOARCH)") and the driver (this package's file format and the Go version), so
// evidence measured through prebuilt and through the engine is the same machine's.
func Identity() (device, driver string) {
	return "cpu executor (" + runtime.GOARCH + ")", "onesource backends/cpu, file format " + FileFormat + ", " + runtime.Version()
}
