// Package irtest holds hand-built IR kernels for backend tests: a small builder of IR kernels
// by hand (a stand-in for package dsl that can write any verified IR, including what the dsl
// never produces), a list of hand-built kernels that together use every op, builtin, memory
// space and control-flow shape, random kernels, the example kernels, and large kernels (Scale:
// straight-line code, deeply nested loops and ifs) for the compiler's scaling benchmarks and
// tests (scale_test.go: BenchmarkScale, TestScale, TestDeepNesting). The C-family (CUDA, HIP,
// Metal) and Vulkan backends' tests share it. It is a test helper: nothing outside tests should
// import it.
package irtest

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// Builder builds one IR kernel instruction by instruction.
type Builder struct {
	// K is the kernel being built.
	K      *ir.Kernel
	blocks []*ir.Block // innermost last
	line   int
}

// New starts a kernel with the given workgroup size (missing dimensions are 1).
func New(name string, wg ...uint32) *Builder {
	size := [3]uint32{1, 1, 1}
	copy(size[:], wg)
	body := &ir.Block{}
	return &Builder{K: &ir.Kernel{Name: name, Pos: ir.Pos{File: "irtest/kernels.go", Line: 1}, WorkgroupSize: size, Body: body}, blocks: []*ir.Block{body}, line: 1}
}

func (b *Builder) pos() ir.Pos {
	b.line++
	return ir.Pos{File: "irtest/kernels.go", Line: b.line}
}

// Add appends in to the current block, giving it the next position.
func (b *Builder) Add(in *ir.Inst) *ir.Inst {
	in.Pos = b.pos()
	b.blocks[len(b.blocks)-1].Append(in)
	return in
}

// Buffer declares a storage buffer and returns its index.
func (b *Builder) Buffer(name string, elem ir.Type, acc ir.Access) int {
	b.K.Buffers = append(b.K.Buffers, &ir.Buffer{Name: name, Elem: elem, Access: acc, Pos: b.pos()})
	return len(b.K.Buffers) - 1
}

// Param declares a scalar parameter and returns its index.
func (b *Builder) Param(name string, t ir.Type) int {
	b.K.Params = append(b.K.Params, &ir.Param{Name: name, Type: t, Pos: b.pos()})
	return len(b.K.Params) - 1
}

// Shared declares a shared array and returns its index.
func (b *Builder) Shared(name string, elem ir.Type, n int) int {
	b.K.Shared = append(b.K.Shared, &ir.Shared{Name: name, Elem: elem, Len: n, Pos: b.pos()})
	return len(b.K.Shared) - 1
}

// Local declares a private variable and returns its index.
func (b *Builder) Local(name string, t ir.Type) int {
	b.K.Vars = append(b.K.Vars, &ir.Var{Name: name, Type: t, Pos: b.pos()})
	return len(b.K.Vars) - 1
}

// C is a constant of type t with value v (a splat for vectors).
func (b *Builder) C(t ir.Type, v float64) *ir.Inst {
	return b.Add(&ir.Inst{Op: ir.OpConst, Type: t, Aux: ir.ConstBits(t.Elem(), v)})
}

// Bits is a constant of type t whose lanes have the bit pattern bits.
func (b *Builder) Bits(t ir.Type, bits uint64) *ir.Inst {
	return b.Add(&ir.Inst{Op: ir.OpConst, Type: t, Aux: bits})
}

// U32 is a u32 constant.
func (b *Builder) U32(v uint32) *ir.Inst { return b.Bits(ir.TU32, uint64(v)) }

// I32 is an i32 constant.
func (b *Builder) I32(v int32) *ir.Inst { return b.Bits(ir.TI32, uint64(uint32(v))) }

// F32 is an f32 constant.
func (b *Builder) F32(v float32) *ir.Inst { return b.C(ir.TF32, float64(v)) }

// Op appends an instruction of type t.
func (b *Builder) Op(op ir.Op, t ir.Type, args ...*ir.Inst) *ir.Inst {
	return b.Add(&ir.Inst{Op: op, Type: t, Args: args})
}

// Un is a unary op typed like its operand.
func (b *Builder) Un(op ir.Op, x *ir.Inst) *ir.Inst { return b.Op(op, x.Type, x) }

// Bin is a binary op typed like its operands (compares give bools).
func (b *Builder) Bin(op ir.Op, x, y *ir.Inst) *ir.Inst {
	t := x.Type
	if op.IsCompare() {
		t = ir.Type{Scalar: ir.Bool, Lanes: x.Type.Lanes}
	}
	return b.Op(op, t, x, y)
}

// Name sets in's debug name.
func (b *Builder) Name(in *ir.Inst, n string) *ir.Inst {
	in.Name = n
	return in
}

// Builtin reads an invocation builtin (dimension dim for the per-dimension ones).
func (b *Builder) Builtin(bi ir.Builtin, dim int) *ir.Inst {
	return b.Add(&ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(bi), Ref: dim})
}

// GID is the global invocation id x.
func (b *Builder) GID() *ir.Inst { return b.Builtin(ir.GlobalID, 0) }

// P reads parameter i.
func (b *Builder) P(i int) *ir.Inst {
	return b.Add(&ir.Inst{Op: ir.OpParam, Type: b.K.Params[i].Type, Ref: i})
}

func (b *Builder) elem(mem ir.Mem, ref int) ir.Type {
	switch mem {
	case ir.MemBuffer:
		return b.K.Buffers[ref].Elem
	case ir.MemShared:
		return b.K.Shared[ref].Elem
	}
	return b.K.Vars[ref].Type
}

// Load reads a buffer or shared element (idx) or a variable (no idx).
func (b *Builder) Load(mem ir.Mem, ref int, idx ...*ir.Inst) *ir.Inst {
	e := b.elem(mem, ref)
	return b.Add(&ir.Inst{Op: ir.OpLoad, Mem: mem, Ref: ref, Type: ir.Type{Scalar: e.Scalar.Widened(), Lanes: e.Lanes}, Args: idx})
}

// Store writes a buffer or shared element (index, value) or a variable (value).
func (b *Builder) Store(mem ir.Mem, ref int, args ...*ir.Inst) {
	b.Add(&ir.Inst{Op: ir.OpStore, Mem: mem, Ref: ref, Type: ir.TVoid, Args: args})
}

// Ld reads element idx of buffer buf.
func (b *Builder) Ld(buf int, idx *ir.Inst) *ir.Inst { return b.Load(ir.MemBuffer, buf, idx) }

// St writes v to element idx of buffer buf.
func (b *Builder) St(buf int, idx, v *ir.Inst) { b.Store(ir.MemBuffer, buf, idx, v) }

// GetV reads variable v.
func (b *Builder) GetV(v int) *ir.Inst { return b.Load(ir.MemVar, v) }

// SetV writes x to variable v.
func (b *Builder) SetV(v int, x *ir.Inst) { b.Store(ir.MemVar, v, x) }

// Conv converts x to t.
func (b *Builder) Conv(t ir.Type, x *ir.Inst) *ir.Inst { return b.Op(ir.OpConvert, t, x) }

// Bitcast reinterprets the bits of x as t.
func (b *Builder) Bitcast(t ir.Type, x *ir.Inst) *ir.Inst { return b.Op(ir.OpBitcast, t, x) }

// Ext extracts lane of vector x.
func (b *Builder) Ext(x *ir.Inst, lane int) *ir.Inst {
	return b.Add(&ir.Inst{Op: ir.OpExtract, Type: x.Type.Elem(), Args: []*ir.Inst{x}, Aux: uint64(lane)})
}

// Atomic is an atomic read-modify-write; it returns the old value.
func (b *Builder) Atomic(mem ir.Mem, ref int, aop ir.AtomicOp, args ...*ir.Inst) *ir.Inst {
	return b.Add(&ir.Inst{Op: ir.OpAtomic, Mem: mem, Ref: ref, Aux: uint64(aop), Type: b.elem(mem, ref), Args: args})
}

func (b *Builder) nested(f func()) *ir.Block {
	blk := &ir.Block{}
	if f != nil {
		b.blocks = append(b.blocks, blk)
		f()
		b.blocks = b.blocks[:len(b.blocks)-1]
	}
	return blk
}

// If adds if/else; either function may be nil.
func (b *Builder) If(cond *ir.Inst, then, els func()) {
	in := b.Add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{cond}})
	in.Blocks = []*ir.Block{b.nested(then), b.nested(els)}
}

// Loop adds a loop with a body and a continuing block; either may be nil.
func (b *Builder) Loop(body, cont func()) {
	in := b.Add(&ir.Inst{Op: ir.OpLoop, Type: ir.TVoid})
	in.Blocks = []*ir.Block{b.nested(body), b.nested(cont)}
}

// For is `for i := 0; i < n; i++ { body(i) }` with the counter in u32 variable v.
func (b *Builder) For(v int, n *ir.Inst, body func(i *ir.Inst)) {
	b.SetV(v, b.U32(0))
	b.Loop(func() {
		i := b.GetV(v)
		b.If(b.Bin(ir.OpGe, i, n), func() { b.Break() }, nil)
		body(i)
	}, func() {
		b.SetV(v, b.Bin(ir.OpAdd, b.GetV(v), b.U32(1)))
	})
}

// Break leaves the innermost loop.
func (b *Builder) Break() { b.Op(ir.OpBreak, ir.TVoid) }

// Continue jumps to the innermost loop's continuing block.
func (b *Builder) Continue() { b.Op(ir.OpContinue, ir.TVoid) }

// Return ends the invocation.
func (b *Builder) Return() { b.Op(ir.OpReturn, ir.TVoid) }

// Barrier is a workgroup barrier.
func (b *Builder) Barrier() { b.Op(ir.OpBarrier, ir.TVoid) }

// Done verifies the kernel and returns it.
func (b *Builder) Done() (*ir.Kernel, error) {
	if err := ir.Verify(b.K); err != nil {
		return nil, fmt.Errorf("kernel %s does not verify: %w\n%s", b.K.Name, err, b.K)
	}
	return b.K, nil
}
