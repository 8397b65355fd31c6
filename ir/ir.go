package ir

import (
	"fmt"
	"path/filepath"
)

// Pos is a position in the user's Go source, recorded by the dsl builder.
type Pos struct {
	File string
	Line int
}

// Short is the position with the file's base name only ("saxpy.go:13"): what emitted code
// records, so the output does not depend on where the source tree lives.
func (p Pos) Short() string {
	if p.File == "" {
		return "?"
	}
	return fmt.Sprintf("%s:%d", filepath.Base(p.File), p.Line)
}

// String describes the Pos for messages.
func (p Pos) String() string {
	if p.File == "" {
		return "?"
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Op is an instruction's operation.
type Op uint8

// The operations. Operand conventions are listed per op; Aux and Ref are explained on Inst.
const (
	OpInvalid Op = iota

	// Values without operands.
	OpConst   // Type, Aux = bit pattern (of one lane; vectors are splats)
	OpBuiltin // Type u32, Aux = Builtin, Ref = dimension (0..2)
	OpParam   // Ref = parameter index; Type = the parameter's type

	// Memory. Mem says which space; Ref indexes Kernel.Buffers, .Shared or .Vars.
	OpLoad   // Args: [index] (buffers, shared) or [] (vars)
	OpStore  // Args: [index, value] or [value]; no result
	OpAtomic // Args: [index, value] or [index, comparator, value] for AtomicCmpXchg; Aux = AtomicOp; result = old value
	OpLen    // Ref = buffer; result u32 element count of the bound buffer

	// Arithmetic and logic, element-wise on scalars and vectors of one type.
	OpNeg
	OpNot // bitwise on integers, logical on bool
	OpAbs
	OpSqrt
	OpFloor
	OpAdd
	OpSub
	OpMul
	OpDiv // integer division truncates toward zero; division by zero is undefined
	OpRem // integer remainder (sign of the dividend); floats not allowed
	OpMin // floats: b < a ? b : a
	OpMax // floats: a > b ? a : b (numeric rule 4 in package oracle fixes the operand order in reductions)
	OpAnd
	OpOr
	OpXor
	OpShl // shift counts are taken modulo the bit width
	OpShr // arithmetic for signed, logical for unsigned
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpSelect  // Args: [cond bool, a, b]
	OpConvert // value conversion to Type (float<->int truncates toward zero; f32->f16 RNE)
	OpBitcast // reinterpret bits as Type (same width)

	// Vectors.
	OpCompose // Args: lanes; Type vector
	OpExtract // Args: [vector]; Aux = lane

	// Subgroup and special.
	OpDotI8x4    // Args: [a u32, b u32]: signed 4 x i8 packed dot product, i32 result, non-saturating
	OpShuffleXor // Args: [value, mask u32]: value of lane (lane ^ mask) of the subgroup
	OpShuffle    // Args: [value, lane u32]: value of that lane of the subgroup (any lane, per invocation)
	// OpSubgroupReduce: Args [value]; Aux = ReduceOp; Ref = cluster width W: the device's own
	// reduction over each cluster of W lanes, in an order the device chooses (declared inexact
	// for f32 sums; lowered to the canonical butterfly where the target has no native one).
	OpSubgroupReduce
	OpReduce // Args: [value]; Aux = ReduceOp: canonical workgroup reduction (expanded by lower)
	OpFma    // Args: [a, b, c] f32 scalars: a*b+c exact, rounded once (emulated by lower where inexact)
	OpNative // Args: [x] or [x, y] (NativePow) f32 scalars; Aux = NativeFunc: the device's own function, inexact

	// Control flow.
	OpIf       // Args: [cond]; Blocks: [then, else]
	OpLoop     // Blocks: [body, continuing]; the loop runs body, then continuing, until a Break
	OpBreak    // leaves the innermost loop
	OpContinue // jumps to the innermost loop's continuing block
	OpReturn   // ends this invocation
	OpBarrier  // workgroup control + memory barrier (shared and buffer memory)

	// Intrinsic islands (numbered last so the ops before keep their numbers).
	// OpIsland: an intrinsic island (island.go): Aux = IslandAux (the Island and its shared
	// arrays), Args = the island's tile indices (u32); Blocks: [portable body], the DSL code
	// that defines its meaning. Lowering keeps it for a target that runs the island natively
	// (the backend prints its own body) and inlines the portable body everywhere else.
	OpIsland

	opCount
)

var opNames = [...]string{
	OpInvalid: "invalid", OpConst: "const", OpBuiltin: "builtin", OpParam: "param",
	OpLoad: "load", OpStore: "store", OpAtomic: "atomic", OpLen: "len",
	OpNeg: "neg", OpNot: "not", OpAbs: "abs", OpSqrt: "sqrt", OpFloor: "floor",
	OpAdd: "add", OpSub: "sub", OpMul: "mul", OpDiv: "div", OpRem: "rem", OpMin: "min", OpMax: "max",
	OpAnd: "and", OpOr: "or", OpXor: "xor", OpShl: "shl", OpShr: "shr",
	OpEq: "eq", OpNe: "ne", OpLt: "lt", OpLe: "le", OpGt: "gt", OpGe: "ge",
	OpSelect: "select", OpConvert: "convert", OpBitcast: "bitcast",
	OpCompose: "compose", OpExtract: "extract",
	OpDotI8x4: "dot_i8x4", OpShuffleXor: "shuffle_xor", OpShuffle: "shuffle", OpSubgroupReduce: "subgroup_reduce", OpReduce: "reduce",
	OpFma: "fma", OpNative: "native", OpIsland: "island",
	OpIf: "if", OpLoop: "loop", OpBreak: "break", OpContinue: "continue", OpReturn: "return",
	OpBarrier: "barrier",
}

// String returns the name of Op as the IR text form prints it.
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// IsUnary reports whether o is an element-wise unary op (neg through floor).
func (o Op) IsUnary() bool { return o >= OpNeg && o <= OpFloor }

// IsBinary reports whether o is an element-wise binary op (add through shr).
func (o Op) IsBinary() bool { return o >= OpAdd && o <= OpShr }

// IsCompare reports whether o is a comparison with a bool result.
func (o Op) IsCompare() bool { return o >= OpEq && o <= OpGe }

// IsTerminator reports whether o ends its block (what follows in the block never runs).
func (o Op) IsTerminator() bool { return o == OpBreak || o == OpContinue || o == OpReturn }

// Builtin names an invocation builtin (OpBuiltin's Aux).
type Builtin uint8

// Builtins. The per-dimension ones take Ref = 0, 1, 2 for x, y, z.
const (
	GlobalID      Builtin = iota // global invocation id
	LocalID                      // local invocation id within the workgroup
	WorkgroupID                  // workgroup id
	NumWorkgroups                // dispatch size in workgroups
	LocalIndex                   // flattened local invocation index
	SubgroupSize                 // lanes per subgroup on this device
	SubgroupLane                 // lane id within the subgroup
	SubgroupID                   // subgroup index within the workgroup
)

var builtinNames = [...]string{"global_id", "local_id", "workgroup_id", "num_workgroups", "local_index", "subgroup_size", "lane_id", "subgroup_id"}

// String returns the name of Builtin as the IR text form prints it.
func (b Builtin) String() string {
	if int(b) < len(builtinNames) {
		return builtinNames[b]
	}
	return fmt.Sprintf("builtin(%d)", uint8(b))
}

// PerDim reports whether the builtin has x, y and z components.
func (b Builtin) PerDim() bool { return b <= NumWorkgroups }

// Mem is the memory space an OpLoad, OpStore or OpAtomic addresses.
type Mem uint8

// Memory spaces.
const (
	MemBuffer Mem = iota // Kernel.Buffers[Ref]
	MemShared            // Kernel.Shared[Ref]
	MemVar               // Kernel.Vars[Ref], invocation-private
)

var memNames = [...]string{"buf", "shared", "var"}

// String returns the name of Mem as the IR text form prints it.
func (m Mem) String() string {
	if int(m) < len(memNames) {
		return memNames[m]
	}
	return fmt.Sprintf("mem(%d)", uint8(m))
}

// AtomicOp is OpAtomic's operation (its Aux).
type AtomicOp uint8

// Atomic operations on i32/u32 elements (AtomicAdd also on f32 elements); all return the old
// value.
const (
	AtomicAdd AtomicOp = iota
	AtomicMin
	AtomicMax
	AtomicExchange
	AtomicCmpXchg
	AtomicAnd
	AtomicOr
	AtomicXor
)

var atomicNames = [...]string{"add", "min", "max", "xchg", "cmpxchg", "and", "or", "xor"}

// String returns the name of AtomicOp as the IR text form prints it.
func (a AtomicOp) String() string {
	if int(a) < len(atomicNames) {
		return atomicNames[a]
	}
	return fmt.Sprintf("atomic(%d)", uint8(a))
}

// ReduceOp is OpReduce's operation (its Aux).
type ReduceOp uint8

// Reductions.
const (
	ReduceSum ReduceOp = iota
	ReduceMax
)

// String returns the name of ReduceOp as the IR text form prints it.
func (r ReduceOp) String() string {
	if r == ReduceSum {
		return "sum"
	}
	if r == ReduceMax {
		return "max"
	}
	return fmt.Sprintf("reduce(%d)", uint8(r))
}

// NativeFunc is OpNative's function (its Aux): the device's own implementation, whose results
// differ between devices and from the portable op sequences (never bit-exact).
type NativeFunc uint8

// The native functions. NativePow takes two operands (x, y), the others one.
const (
	NativeExp NativeFunc = iota
	NativeExp2
	NativeLog
	NativeLog2
	NativeSin
	NativeCos
	NativeTanh
	NativePow
	NativeRsqrt
	NativeCount // the number of native functions
)

var nativeNames = [...]string{"exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "rsqrt"}

// String returns the name of NativeFunc as the IR text form prints it.
func (f NativeFunc) String() string {
	if int(f) < len(nativeNames) {
		return nativeNames[f]
	}
	return fmt.Sprintf("native(%d)", uint8(f))
}

// Arity is the number of operands of f.
func (f NativeFunc) Arity() int {
	if f == NativePow {
		return 2
	}
	return 1
}

// Inst is one instruction. Instructions that produce a value are referred to by pointer from
// the Args of later instructions; an instruction's value is visible to the instructions after
// it in its block and in the blocks nested there (structured scoping, checked by Verify).
type Inst struct {
	Op     Op
	Type   Type    // result type; TVoid when the instruction produces no value
	Args   []*Inst // operands
	Aux    uint64  // op-specific immediate: constant bits, Builtin, AtomicOp, ReduceOp, lane
	Ref    int     // op-specific index: parameter, buffer, shared array, variable, dimension
	Mem    Mem     // memory space of OpLoad, OpStore, OpAtomic
	Blocks []*Block
	Name   string // optional debug name, carried into the emitted code
	Pos    Pos    // where the user's Go code created it
}

// Block is a straight-line list of instructions, possibly nesting blocks through OpIf/OpLoop.
type Block struct {
	Insts []*Inst
}

// Append adds instructions at the end of b.
func (b *Block) Append(in ...*Inst) { b.Insts = append(b.Insts, in...) }

// Access says how a kernel uses a buffer.
type Access uint8

// Buffer access modes.
const (
	ReadOnly Access = iota
	WriteOnly
	ReadWrite
)

// String returns the name of Access as the IR text form prints it.
func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read"
	case WriteOnly:
		return "write"
	case ReadWrite:
		return "read_write"
	}
	return fmt.Sprintf("access(%d)", uint8(a))
}

// Buffer is a storage buffer parameter of a kernel: a runtime-sized array of Elem.
type Buffer struct {
	Name   string
	Elem   Type // scalar element kind (narrow ints and f16 allowed) or a vector of 32-bit lanes
	Access Access
	Pos    Pos
}

// Param is a scalar kernel parameter (a push constant on Vulkan), 32 bits wide.
type Param struct {
	Name string
	Type Type
	Pos  Pos
}

// Shared is a workgroup shared array.
type Shared struct {
	Name string
	Elem Type
	Len  int
	Pos  Pos
}

// Var is an invocation-private mutable variable (loop counters, accumulators).
type Var struct {
	Name string
	Type Type
	Pos  Pos
}

// Kernel is one compute entry point.
type Kernel struct {
	Name          string
	Pos           Pos
	WorkgroupSize [3]uint32
	Buffers       []*Buffer
	Params        []*Param
	Shared        []*Shared
	Vars          []*Var
	Body          *Block
}

// Module is a set of kernels built together.
type Module struct {
	Kernels []*Kernel
}

// Lanes returns the workgroup's invocation count.
func (k *Kernel) Lanes() int {
	return int(k.WorkgroupSize[0]) * int(k.WorkgroupSize[1]) * int(k.WorkgroupSize[2])
}

// SharedBytes is the workgroup memory the kernel's shared arrays take (4-byte aligned each).
func (k *Kernel) SharedBytes() int {
	n := 0
	for _, s := range k.Shared {
		n += (s.Len*s.Elem.Scalar.Bits()/8*int(s.Elem.Lanes) + 3) &^ 3
	}
	return n
}

// LenRefs lists the buffers (binding indices, ascending) whose length the kernel reads with
// OpLen: the buffers a C-family kernel takes an element count for.
func (k *Kernel) LenRefs() []int {
	used := make([]bool, len(k.Buffers))
	Walk(k.Body, func(in *Inst) bool {
		if in.Op == OpLen && in.Ref >= 0 && in.Ref < len(used) {
			used[in.Ref] = true
		}
		return true
	})
	var refs []int
	for i, u := range used {
		if u {
			refs = append(refs, i)
		}
	}
	return refs
}
