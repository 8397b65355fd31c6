package native

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Caps is the lowering target of the native backend: subgroups of VL invocations (one vector),
// the packed 4 x i8 dot product, an exact fused multiply-add (C's fmaf), f32 atomic adds (a
// compare-exchange loop in C). f16 values only move (Float16 off: lower computes with them in
// f32 and rounds, which is bit for bit the f16 operation), and subgroup reductions are expanded
// into the canonical butterfly.
var Caps = lower.Caps{SubgroupSize: VL, DotI8x4: true, ExactFma: true, AtomicFloatAdd: true}

// ErrUnavailable is wrapped by the errors of a machine where the backend cannot run: no C
// compiler, or a platform where Go cannot load a shared object without cgo. Their text starts
// with "unavailable:".
var ErrUnavailable = errors.New("unavailable")

// Program is a kernel compiled to machine code for this machine. It is immutable and safe for
// concurrent use: every Run has its own frames.
type Program struct {
	k       *ir.Kernel
	src     string
	sites   []site
	lib     *library
	atomic  []bool // buffers the kernel updates atomically: their words must be aligned
	workers int
}

// Emit returns the C source of k lowered for Caps (what Compile builds).
func Emit(k *ir.Kernel) (string, error) {
	if k == nil {
		return "", errors.New("native: Emit: nil kernel")
	}
	low, err := lower.Run(k, Caps)
	if err != nil {
		return "", err
	}
	return EmitLowered(low)
}

// EmitLowered returns the C source of a kernel package lower already lowered for Caps.
func EmitLowered(k *ir.Kernel) (string, error) {
	if k == nil {
		return "", errors.New("native: EmitLowered: nil kernel")
	}
	if err := ir.Verify(k); err != nil {
		return "", err
	}
	src, _, err := emit(k)
	return src, err
}

// Compile lowers k for Caps, emits its C and builds it with the host's C compiler into a shared
// object (or finds it built in the cache), and loads it. k is not modified. Without a compiler
// the error wraps ErrUnavailable; errors of the kernel name its Go source line.
func Compile(k *ir.Kernel) (*Program, error) {
	if k == nil {
		return nil, errors.New("native: Compile: nil kernel")
	}
	if err := Available(); err != nil {
		return nil, err
	}
	low, err := lower.Run(k, Caps)
	if err != nil {
		return nil, err
	}
	return CompileLowered(low)
}

// CompileLowered is Compile for a kernel package lower already lowered for Caps (a checked kernel
// made by lower.Checked, one read back by cpu.Decode).
func CompileLowered(k *ir.Kernel) (*Program, error) {
	if k == nil {
		return nil, errors.New("native: CompileLowered: nil kernel")
	}
	if err := ir.Verify(k); err != nil {
		return nil, err
	}
	src, sites, err := emit(k)
	if err != nil {
		return nil, err
	}
	lib, err := build(k.Name, src)
	if err != nil {
		return nil, err
	}
	atomic := make([]bool, len(k.Buffers))
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op == ir.OpAtomic && in.Mem == ir.MemBuffer {
			atomic[in.Ref] = true
		}
		return true
	})
	return &Program{k: k, src: src, sites: sites, lib: lib, atomic: atomic}, nil
}

// Kernel returns the lowered kernel the program runs.
func (p *Program) Kernel() *ir.Kernel { return p.k }

// Source returns the C text the program was built from.
func (p *Program) Source() string { return p.src }

// Library is the path of the shared object the program runs.
func (p *Program) Library() string { return p.lib.path }

// WithWorkers returns a program that runs workgroups on n threads (n <= 0: one per CPU,
// runtime.NumCPU()). The machine code is shared.
func (p *Program) WithWorkers(n int) *Program {
	q := *p
	q.workers = n
	return &q
}

// Workers is how many threads a Run spreads the workgroups over (at most one per workgroup).
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

// RunContext dispatches groups workgroups of the kernel over bufs (every buffer binding, in
// order, each at most 2^31-1 bytes holding len/stride elements; the kernel reads and writes them
// in place) with params (the kernel's 32-bit parameters in declaration order, f32 as bits). The
// workgroups run on Workers threads, taken in dispatch order (x fastest, then y, then z).
//
// An out-of-bounds access is not made (a load gives 0) and stops the dispatch with an
// *OutOfBoundsError, the one of the first workgroup in dispatch order that had one. A canceled
// ctx stops the dispatch at the next loop iteration or workgroup with ctx's error. The buffers'
// contents after an error are unspecified.
func (p *Program) RunContext(ctx context.Context, bufs [][]byte, params []uint32, groups [3]uint32) error {
	return p.run(ctx, bufs, params, groups)
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
	return fmt.Sprintf("native: kernel %s: %s (workgroup (%d, %d, %d), invocation %d)", e.Kernel, e.Site(),
		e.Workgroup[0], e.Workgroup[1], e.Workgroup[2], e.Invocation)
}

// Identity names the backend as registry evidence and tuning caches record a device: the device
// ("native CPU code (GOARCH, the CPU's name)") and the driver (the compiler and its version, the
// emitter's format), so evidence measured on one machine or with one compiler is that one's.
func Identity() (device, driver string) {
	device = "native CPU code (" + runtime.GOARCH + ", " + cpuName() + ")"
	driver = "onesource backends/native " + formatVersion
	if c, err := compiler(); err == nil {
		driver += ", " + c.Name()
	}
	return device, driver
}
