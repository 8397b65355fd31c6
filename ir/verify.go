package ir

import (
	"errors"
	"fmt"
	"regexp"
)

// Error is a verification error located at the user's Go source.
type Error struct {
	Pos    Pos
	Kernel string
	Msg    string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: kernel %s: %s", e.Pos, e.Kernel, e.Msg)
}

// MaxWorkgroupLanes is the largest workgroup the IR accepts (every target supports 1024? no:
// Vulkan guarantees 128; the device checks its own limit when building a pipeline).
const MaxWorkgroupLanes = 1024

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Verify checks k: types of every instruction, structured scoping of values, resource indices
// and access modes, loop structure, and that no barrier sits in control flow that is visibly not
// uniform across the workgroup. All errors found are returned, joined, each with its position.
func Verify(k *Kernel) error {
	v := &verifier{k: k, size: countInsts(k.Body)}
	v.defined = make(map[*Inst]bool, v.size)
	v.kernel()
	return errors.Join(v.errs...)
}

// countInsts returns the number of instructions in b and its nested blocks (to size the
// verifier's maps once); it tolerates the nil blocks and instructions the verifier reports.
func countInsts(b *Block) int {
	if b == nil {
		return 0
	}
	n := len(b.Insts)
	for _, in := range b.Insts {
		if in != nil {
			for _, nb := range in.Blocks {
				n += countInsts(nb)
			}
		}
	}
	return n
}

type verifier struct {
	k       *Kernel
	size    int // instructions in the body, nested ones included
	errs    []error
	defined map[*Inst]bool // values in scope
	loops   int            // loop nesting (body)
	inCont  int            // inside a continuing block
}

func (v *verifier) errf(p Pos, format string, args ...any) {
	if len(v.errs) < 50 {
		v.errs = append(v.errs, &Error{Pos: p, Kernel: v.k.Name, Msg: fmt.Sprintf(format, args...)})
	}
}

func (v *verifier) kernel() {
	k := v.k
	if !identRE.MatchString(k.Name) {
		v.errf(k.Pos, "kernel name %q is not an identifier", k.Name)
	}
	lanes := 1
	for _, d := range k.WorkgroupSize {
		if d == 0 {
			v.errf(k.Pos, "workgroup size %v has a zero dimension", k.WorkgroupSize)
			return
		}
		lanes *= int(d)
	}
	if lanes > MaxWorkgroupLanes {
		v.errf(k.Pos, "workgroup of %d invocations is over the limit %d", lanes, MaxWorkgroupLanes)
	}
	names := map[string]Pos{}
	name := func(n string, p Pos, what string) {
		if !identRE.MatchString(n) {
			v.errf(p, "%s name %q is not an identifier", what, n)
			return
		}
		if q, ok := names[n]; ok {
			v.errf(p, "%s name %q already used at %s", what, n, q)
		}
		names[n] = p
	}
	for _, b := range k.Buffers {
		name(b.Name, b.Pos, "buffer")
		if !storable(b.Elem) {
			v.errf(b.Pos, "buffer %s: element type %s cannot be stored in a buffer", b.Name, b.Elem)
		}
	}
	for _, p := range k.Params {
		name(p.Name, p.Pos, "parameter")
		if p.Type.Lanes != 1 || p.Type.Scalar.Bits() != 32 || p.Type.Scalar == Bool {
			v.errf(p.Pos, "parameter %s: type %s is not a 32-bit scalar (f32, i32, u32)", p.Name, p.Type)
		}
	}
	for _, s := range k.Shared {
		name(s.Name, s.Pos, "shared array")
		if !storable(s.Elem) {
			v.errf(s.Pos, "shared array %s: element type %s cannot be stored", s.Name, s.Elem)
		}
		if s.Len <= 0 {
			v.errf(s.Pos, "shared array %s: length %d is not positive", s.Name, s.Len)
		}
	}
	for _, x := range k.Vars {
		if !x.Type.IsValue() {
			v.errf(x.Pos, "variable %s: type %s is not a value type", x.Name, x.Type)
		}
	}
	if k.Body == nil {
		v.errf(k.Pos, "kernel has no body")
		return
	}
	v.block(k.Body)
	if len(v.errs) == 0 {
		v.uniformity()
	}
}

func storable(t Type) bool {
	if t.Lanes == 1 {
		switch t.Scalar {
		case I8, U8, I16, U16, I32, U32, F16, F32, BF16:
			return true
		}
		return false
	}
	return t.Lanes <= 4 && (t.Scalar == I32 || t.Scalar == U32 || t.Scalar == F32)
}

func (v *verifier) block(b *Block) {
	var local []*Inst
	for _, in := range b.Insts {
		v.inst(in)
		if in.Type != TVoid {
			v.defined[in] = true
			local = append(local, in)
		}
	}
	for _, in := range local {
		delete(v.defined, in)
	}
}

func (v *verifier) inst(in *Inst) {
	for i, a := range in.Args {
		if a == nil {
			v.errf(in.Pos, "%s: operand %d is missing", in.Op, i)
			return
		}
		if !v.defined[a] {
			v.errf(in.Pos, "%s: operand %d (%s defined at %s) is not in scope here", in.Op, i, a.Op, a.Pos)
			return
		}
	}
	if err := v.typeCheck(in); err != "" {
		v.errf(in.Pos, "%s: %s", in.Op, err)
		return
	}
	switch in.Op {
	case OpIf:
		v.block(in.Blocks[0])
		v.block(in.Blocks[1])
	case OpLoop:
		v.loops++
		v.block(in.Blocks[0])
		v.loops--
		v.inCont++
		v.block(in.Blocks[1])
		v.inCont--
	case OpIsland:
		v.islandBody(in)
	case OpBreak, OpContinue:
		if v.loops == 0 {
			v.errf(in.Pos, "%s outside a loop", in.Op)
		}
		if v.inCont > 0 {
			v.errf(in.Pos, "%s inside a loop's continuing block", in.Op)
		}
	}
}

func (v *verifier) argTypes(in *Inst, n int) string {
	if len(in.Args) != n {
		return fmt.Sprintf("takes %d operands, has %d", n, len(in.Args))
	}
	return ""
}

func numeric(t Type) bool { return t.Scalar.IsInt() || t.Scalar.IsFloat() }
func integer(t Type) bool { return t.Scalar.IsInt() }

func (v *verifier) typeCheck(in *Inst) string {
	k := v.k
	t := in.Type
	wantBlocks := 0
	if in.Op == OpIf || in.Op == OpLoop {
		wantBlocks = 2
	}
	if in.Op == OpIsland {
		wantBlocks = 1
	}
	if len(in.Blocks) != wantBlocks {
		return fmt.Sprintf("has %d blocks, want %d", len(in.Blocks), wantBlocks)
	}
	for _, b := range in.Blocks {
		if b == nil {
			return "has a nil block"
		}
	}
	arg := func(i int) Type { return in.Args[i].Type }
	switch in.Op {
	case OpConst:
		if !t.IsValue() {
			return fmt.Sprintf("type %s is not a value type", t)
		}
		return v.argTypes(in, 0)
	case OpBuiltin:
		if t != TU32 {
			return "builtins are u32"
		}
		b := Builtin(in.Aux)
		if int(b) >= len(builtinNames) {
			return fmt.Sprintf("unknown builtin %d", in.Aux)
		}
		if b.PerDim() && (in.Ref < 0 || in.Ref > 2) {
			return fmt.Sprintf("%s dimension %d is not 0, 1 or 2", b, in.Ref)
		}
		return v.argTypes(in, 0)
	case OpParam:
		if in.Ref < 0 || in.Ref >= len(k.Params) {
			return fmt.Sprintf("parameter %d does not exist", in.Ref)
		}
		if t != k.Params[in.Ref].Type {
			return fmt.Sprintf("type %s, parameter %s is %s", t, k.Params[in.Ref].Name, k.Params[in.Ref].Type)
		}
		return v.argTypes(in, 0)
	case OpLoad, OpStore, OpAtomic:
		elem, name, msg := v.memElem(in)
		if msg != "" {
			return msg
		}
		val := Type{elem.Scalar.Widened(), elem.Lanes}
		if in.Mem == MemVar {
			val = elem // a variable holds values: a narrow one is not widened
		}
		nIdx := 1
		if in.Mem == MemVar {
			nIdx = 0
		}
		if nIdx == 1 && (len(in.Args) == 0 || !isIndex(arg(0))) {
			return fmt.Sprintf("%s: index must be an i32 or u32 scalar", name)
		}
		switch in.Op {
		case OpLoad:
			if in.Mem == MemBuffer && k.Buffers[in.Ref].Access == WriteOnly {
				return fmt.Sprintf("load from write-only %s", name)
			}
			if t != val {
				return fmt.Sprintf("%s holds %s, result typed %s", name, elem, t)
			}
			return v.argTypes(in, nIdx)
		case OpStore:
			if in.Mem == MemBuffer && k.Buffers[in.Ref].Access == ReadOnly {
				return fmt.Sprintf("store to read-only %s", name)
			}
			if t != TVoid {
				return "store has no result"
			}
			if m := v.argTypes(in, nIdx+1); m != "" {
				return m
			}
			if arg(nIdx) != val && !(elem.Scalar.IsNarrow() && arg(nIdx) == elem) { // a narrow value stores as itself
				return fmt.Sprintf("storing %s into %s of %s", arg(nIdx), name, elem)
			}
			return ""
		default:
			if in.Mem == MemVar {
				return "atomics need a buffer or shared array"
			}
			if in.Mem == MemBuffer && k.Buffers[in.Ref].Access != ReadWrite {
				return fmt.Sprintf("atomic on %s which is not read_write", name)
			}
			op := AtomicOp(in.Aux)
			if elem != TI32 && elem != TU32 && !(elem == TF32 && op == AtomicAdd) {
				return fmt.Sprintf("atomic %s needs i32 or u32 elements (add also f32), %s holds %s", op, name, elem)
			}
			n := 2
			if op == AtomicCmpXchg {
				n = 3
			}
			if int(op) >= len(atomicNames) {
				return fmt.Sprintf("unknown atomic op %d", in.Aux)
			}
			if m := v.argTypes(in, n); m != "" {
				return m
			}
			for i := 1; i < n; i++ {
				if arg(i) != elem {
					return fmt.Sprintf("operand %d is %s, %s holds %s", i, arg(i), name, elem)
				}
			}
			if t != elem {
				return fmt.Sprintf("result typed %s, want %s", t, elem)
			}
			return ""
		}
	case OpLen:
		if in.Ref < 0 || in.Ref >= len(k.Buffers) {
			return fmt.Sprintf("buffer %d does not exist", in.Ref)
		}
		if t != TU32 {
			return "len is u32"
		}
		return v.argTypes(in, 0)
	case OpNeg, OpAbs:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if !numeric(arg(0)) || t != arg(0) {
			return fmt.Sprintf("operand %s, result %s: want one numeric type", arg(0), t)
		}
	case OpNot:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if !(integer(arg(0)) || arg(0).Scalar == Bool) || t != arg(0) {
			return fmt.Sprintf("operand %s, result %s: want one integer or bool type", arg(0), t)
		}
	case OpSqrt, OpFloor:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if !arg(0).Scalar.IsFloat() || t != arg(0) {
			return fmt.Sprintf("operand %s, result %s: want one float type", arg(0), t)
		}
	case OpAdd, OpSub, OpMul, OpDiv, OpMin, OpMax, OpRem, OpAnd, OpOr, OpXor, OpShl, OpShr:
		if m := v.argTypes(in, 2); m != "" {
			return m
		}
		if arg(0) != arg(1) {
			return fmt.Sprintf("mismatched operand types %s and %s", arg(0), arg(1))
		}
		if t != arg(0) {
			return fmt.Sprintf("result %s, operands %s", t, arg(0))
		}
		switch in.Op {
		case OpRem, OpShl, OpShr:
			if !integer(t) {
				return fmt.Sprintf("needs integer operands, got %s", t)
			}
		case OpAnd, OpOr, OpXor:
			if !integer(t) && t.Scalar != Bool {
				return fmt.Sprintf("needs integer or bool operands, got %s", t)
			}
		default:
			if !numeric(t) {
				return fmt.Sprintf("needs numeric operands, got %s", t)
			}
		}
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		if m := v.argTypes(in, 2); m != "" {
			return m
		}
		if arg(0) != arg(1) {
			return fmt.Sprintf("mismatched operand types %s and %s", arg(0), arg(1))
		}
		if !numeric(arg(0)) && !(arg(0).Scalar == Bool && (in.Op == OpEq || in.Op == OpNe)) {
			return fmt.Sprintf("cannot compare %s", arg(0))
		}
		if t != (Type{Bool, arg(0).Lanes}) {
			return fmt.Sprintf("result %s, want %s", t, Type{Bool, arg(0).Lanes})
		}
	case OpSelect:
		if m := v.argTypes(in, 3); m != "" {
			return m
		}
		c := arg(0)
		if c.Scalar != Bool || (c.Lanes != 1 && c.Lanes != t.Lanes) {
			return fmt.Sprintf("condition is %s, want bool", c)
		}
		if arg(1) != arg(2) || t != arg(1) {
			return fmt.Sprintf("mismatched types %s, %s -> %s", arg(1), arg(2), t)
		}
	case OpConvert:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if !numeric(arg(0)) || !numeric(t) || arg(0).Lanes != t.Lanes || !t.IsValue() {
			return fmt.Sprintf("cannot convert %s to %s", arg(0), t)
		}
	case OpBitcast:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if arg(0).Scalar.Bits()*int(arg(0).Lanes) != t.Scalar.Bits()*int(t.Lanes) || arg(0).Scalar == Bool || t.Scalar == Bool || !t.IsValue() {
			return fmt.Sprintf("cannot bitcast %s to %s", arg(0), t)
		}
	case OpCompose:
		if !t.IsVector() || !t.IsValue() || len(in.Args) != int(t.Lanes) {
			return fmt.Sprintf("builds %s from %d lanes", t, len(in.Args))
		}
		for i := range in.Args {
			if arg(i) != t.Elem() {
				return fmt.Sprintf("lane %d is %s, want %s", i, arg(i), t.Elem())
			}
		}
	case OpExtract:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if !arg(0).IsVector() || in.Aux >= uint64(arg(0).Lanes) || t != arg(0).Elem() {
			return fmt.Sprintf("lane %d of %s as %s", in.Aux, arg(0), t)
		}
	case OpDotI8x4:
		if m := v.argTypes(in, 2); m != "" {
			return m
		}
		if arg(0) != TU32 || arg(1) != TU32 || t != TI32 {
			return fmt.Sprintf("takes packed u32, u32 -> i32; got %s, %s -> %s", arg(0), arg(1), t)
		}
	case OpSubgroupReduce:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if ReduceOp(in.Aux) > ReduceMax {
			return fmt.Sprintf("unknown reduction %d", in.Aux)
		}
		if in.Ref < 1 || in.Ref > 32 || in.Ref&(in.Ref-1) != 0 {
			return fmt.Sprintf("cluster width %d is not a power of two from 1 to 32", in.Ref)
		}
		if arg(0).Lanes != 1 || !(arg(0).Scalar == F32 || arg(0).Scalar == I32 || arg(0).Scalar == U32) || t != arg(0) {
			return fmt.Sprintf("reduces an f32, i32 or u32 scalar; got %s -> %s", arg(0), t)
		}
	case OpShuffleXor, OpShuffle:
		if m := v.argTypes(in, 2); m != "" {
			return m
		}
		if arg(0).Lanes != 1 || arg(0).Scalar.Bits() != 32 || arg(0).Scalar == Bool || arg(1) != TU32 || t != arg(0) {
			return fmt.Sprintf("shuffles a 32-bit scalar by a u32 mask or lane; got %s, %s", arg(0), arg(1))
		}
	case OpReduce:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if ReduceOp(in.Aux) > ReduceMax {
			return fmt.Sprintf("unknown reduction %d", in.Aux)
		}
		if arg(0).Lanes != 1 || !(arg(0).Scalar == F32 || arg(0).Scalar == I32 || arg(0).Scalar == U32) || t != arg(0) {
			return fmt.Sprintf("reduces an f32, i32 or u32 scalar; got %s -> %s", arg(0), t)
		}
		if n := k.Lanes(); n&(n-1) != 0 {
			return fmt.Sprintf("a workgroup reduction needs a power-of-two workgroup, this one has %d invocations", n)
		}
	case OpFma:
		if m := v.argTypes(in, 3); m != "" {
			return m
		}
		if arg(0) != TF32 || arg(1) != TF32 || arg(2) != TF32 || t != TF32 {
			return fmt.Sprintf("takes f32, f32, f32 -> f32; got %s, %s, %s -> %s", arg(0), arg(1), arg(2), t)
		}
	case OpNative:
		f := NativeFunc(in.Aux)
		if f >= NativeCount {
			return fmt.Sprintf("unknown native function %d", in.Aux)
		}
		if m := v.argTypes(in, f.Arity()); m != "" {
			return m
		}
		for i := range in.Args {
			if arg(i) != TF32 {
				return fmt.Sprintf("native %s takes f32 operands, operand %d is %s", f, i, arg(i))
			}
		}
		if t != TF32 {
			return fmt.Sprintf("native %s gives f32, result typed %s", f, t)
		}
	case OpIf:
		if m := v.argTypes(in, 1); m != "" {
			return m
		}
		if arg(0) != TBool {
			return fmt.Sprintf("condition is %s, want bool", arg(0))
		}
		if t != TVoid {
			return "if has no result"
		}
	case OpIsland:
		return v.checkIsland(in)
	case OpLoop, OpBreak, OpContinue, OpReturn, OpBarrier:
		if t != TVoid {
			return "has no result"
		}
		return v.argTypes(in, 0)
	default:
		return "unknown operation"
	}
	return ""
}

func isIndex(t Type) bool { return t == TU32 || t == TI32 }

func (v *verifier) memElem(in *Inst) (Type, string, string) {
	k := v.k
	switch in.Mem {
	case MemBuffer:
		if in.Ref < 0 || in.Ref >= len(k.Buffers) {
			return Type{}, "", fmt.Sprintf("buffer %d does not exist", in.Ref)
		}
		return k.Buffers[in.Ref].Elem, "buffer " + k.Buffers[in.Ref].Name, ""
	case MemShared:
		if in.Ref < 0 || in.Ref >= len(k.Shared) {
			return Type{}, "", fmt.Sprintf("shared array %d does not exist", in.Ref)
		}
		return k.Shared[in.Ref].Elem, "shared " + k.Shared[in.Ref].Name, ""
	case MemVar:
		if in.Ref < 0 || in.Ref >= len(k.Vars) {
			return Type{}, "", fmt.Sprintf("variable %d does not exist", in.Ref)
		}
		return k.Vars[in.Ref].Type, "variable " + k.Vars[in.Ref].Name, ""
	}
	return Type{}, "", fmt.Sprintf("unknown memory space %d", in.Mem)
}
