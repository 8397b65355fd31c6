package webgpu

import (
	"fmt"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

func (e *emitter) inst(in *ir.Inst) {
	e.cur = in.Pos
	t := in.Type
	switch in.Op {
	case ir.OpConst:
		e.vals[in] = &value{t: t, lit: e.literal(t.Scalar, in.Aux, in.Pos)}
	case ir.OpParam:
		e.vals[in] = &value{t: t, lit: "params." + e.paramFields[in.Ref]}
	case ir.OpBuiltin:
		e.vals[in] = &value{t: t, lit: builtinExpr(ir.Builtin(in.Aux), in.Ref)}
	case ir.OpLen:
		n := fmt.Sprintf("arrayLength(&%s)", e.bufNames[in.Ref])
		if e.bufKinds[in.Ref] == bufPacked {
			// Whole words: a WebGPU binding is a multiple of 4 bytes.
			n = fmt.Sprintf("arrayLength(&%s) * %du", e.bufNames[in.Ref], 32/e.k.Buffers[in.Ref].Elem.Scalar.Bits())
		}
		e.decl(in, n)
	case ir.OpLoad:
		e.load(in)
	case ir.OpStore:
		e.store(in)
	case ir.OpAtomic:
		e.atomic(in)
	case ir.OpNeg, ir.OpNot, ir.OpAbs, ir.OpSqrt, ir.OpFloor,
		ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpMin, ir.OpMax,
		ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr,
		ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe,
		ir.OpSelect:
		if e.allConst(in) {
			e.materialize(in.Args[0])
		}
		e.decl(in, e.pure(in))
	case ir.OpConvert:
		if e.allConst(in) {
			e.materialize(in.Args[0])
		}
		e.decl(in, e.convert(in))
	case ir.OpBitcast:
		if e.allConst(in) {
			e.materialize(in.Args[0])
		}
		e.decl(in, e.bitcast(in))
	case ir.OpCompose:
		lanes := make([]string, len(in.Args))
		for i, a := range in.Args {
			lanes[i] = strip(e.whole(a))
		}
		e.decl(in, fmt.Sprintf("%s(%s)", e.typ(t, in.Pos), strings.Join(lanes, ", ")))
	case ir.OpExtract:
		e.decl(in, e.lane(in.Args[0], int(in.Aux)))
	case ir.OpDotI8x4:
		e.decl(in, fmt.Sprintf("dot4I8Packed(%s, %s)", strip(e.whole(in.Args[0])), strip(e.whole(in.Args[1]))))
	case ir.OpShuffleXor, ir.OpShuffle:
		fn := "subgroupShuffleXor"
		if in.Op == ir.OpShuffle {
			fn = "subgroupShuffle"
		}
		e.decl(in, fmt.Sprintf("%s(%s, %s)", fn, strip(e.whole(in.Args[0])), strip(e.whole(in.Args[1]))))
	case ir.OpNative:
		f := ir.NativeFunc(in.Aux)
		if int(f) >= len(wgslNative) || len(in.Args) != f.Arity() {
			e.errAt(in.Pos, "native function %s has no WGSL spelling", f)
			return
		}
		args := make([]string, len(in.Args))
		for i, a := range in.Args {
			args[i] = strip(e.whole(a))
		}
		// The implementation's own function: inexact, as the IR declares it.
		e.decl(in, fmt.Sprintf("%s(%s)", wgslNative[f], strings.Join(args, ", ")))
	case ir.OpFma:
		e.errAt(in.Pos, "fma must be emulated by package lower for WebGPU (Caps.ExactFma false): WGSL's fma() need not round once")
	case ir.OpSubgroupReduce:
		e.errAt(in.Pos, "subgroup_reduce.%s over %d lanes: WebGPU cannot fix the subgroup size, so WGSL's subgroupAdd/subgroupMax do not reduce a known cluster; package lower expands it into shuffles (Caps.SubgroupArithmetic false)", ir.ReduceOp(in.Aux), in.Ref)
	case ir.OpIf, ir.OpLoop, ir.OpBreak, ir.OpContinue, ir.OpReturn, ir.OpBarrier:
		e.control(in)
	case ir.OpReduce:
		e.errAt(in.Pos, "reduce.%s must be expanded by package lower before emitting", ir.ReduceOp(in.Aux))
	default:
		e.errAt(in.Pos, "WGSL has no spelling for %s (this backend does not know the op)", in.Op)
	}
}

// wgslNative spells each native function (ir.OpNative): WGSL's builtin, the implementation's
// own inexact one.
var wgslNative = [ir.NativeCount]string{
	ir.NativeExp: "exp", ir.NativeExp2: "exp2", ir.NativeLog: "log", ir.NativeLog2: "log2",
	ir.NativeSin: "sin", ir.NativeCos: "cos", ir.NativeTanh: "tanh", ir.NativePow: "pow",
	ir.NativeRsqrt: "inverseSqrt",
}

// builtinExpr is the expression of a builtin (a u32) from the entry point's arguments.
func builtinExpr(b ir.Builtin, dim int) string {
	xyz := "xyz"[dim : dim+1]
	switch b {
	case ir.GlobalID:
		return "gid." + xyz
	case ir.LocalID:
		return "lid." + xyz
	case ir.WorkgroupID:
		return "wgid." + xyz
	case ir.NumWorkgroups:
		return "nwg." + xyz
	case ir.LocalIndex:
		return "lidx"
	case ir.SubgroupSize:
		return "sg_size"
	case ir.SubgroupLane:
		return "sg_lane"
	}
	// Subgroups are consecutive local indices (what the lowering assumes of every target).
	return "(lidx / sg_size)"
}

// Memory.

// index returns the index operand of a buffer or shared access as written, and as a u32.
func (e *emitter) index(in *ir.Inst) (string, string) {
	a := in.Args[0]
	x := strip(e.whole(a))
	if a.Type.Scalar == ir.I32 {
		return x, "u32(" + x + ")"
	}
	return x, x
}

// word is the u32 word of packed buffer i that holds the element at u32 index ui, the shift of
// the element inside it and the element's mask.
func (e *emitter) word(i int, ui string) (word, shift string, mask uint32) {
	bits := e.k.Buffers[i].Elem.Scalar.Bits()
	if bits == 8 {
		return fmt.Sprintf("%s[%s >> 2u]", e.bufNames[i], ui), fmt.Sprintf("((%s & 3u) * 8u)", ui), 0xff
	}
	return fmt.Sprintf("%s[%s >> 1u]", e.bufNames[i], ui), fmt.Sprintf("((%s & 1u) * 16u)", ui), 0xffff
}

func (e *emitter) load(in *ir.Inst) {
	switch in.Mem {
	case ir.MemVar:
		e.decl(in, e.varNames[in.Ref])
		return
	case ir.MemShared:
		x, _ := e.index(in)
		ref := fmt.Sprintf("%s[%s]", e.sharedNames[in.Ref], x)
		if e.sharedAtomic[in.Ref] {
			ref = "atomicLoad(&" + ref + ")"
		}
		e.decl(in, ref)
		return
	}
	i := in.Ref
	x, ui := e.index(in)
	if e.bufKinds[i] == bufPlain {
		ref := fmt.Sprintf("%s[%s]", e.bufNames[i], x)
		if e.bufAtomic[i] {
			ref = "atomicLoad(&" + ref + ")"
		}
		e.decl(in, ref)
		return
	}
	w, sh, mask := e.word(i, ui)
	if e.bufAtomic[i] {
		w = "atomicLoad(&" + w + ")"
	}
	elem := e.k.Buffers[i].Elem.Scalar
	bits := fmt.Sprintf("((%s >> %s) & 0x%xu)", w, sh, mask)
	var v string
	switch elem {
	case ir.U8, ir.U16:
		v = bits
	case ir.I8:
		v = fmt.Sprintf("(bitcast<i32>(%s << (24u - %s)) >> 24u)", w, sh)
	case ir.I16:
		v = fmt.Sprintf("(bitcast<i32>(%s << (16u - %s)) >> 16u)", w, sh)
	case ir.F16:
		v = e.helper("os_f16_to_f32", bits)
	case ir.BF16:
		// bf16 is the high half of an f32.
		v = fmt.Sprintf("bitcast<f32>(%s << 16u)", bits)
		if in.Type.Scalar == ir.U32 {
			v = bits
		}
	}
	if in.Type.Scalar == ir.BF16 {
		e.errAt(in.Pos, "bf16 value: package lower legalizes bf16 values before a backend sees them")
	}
	e.decl(in, v)
}

func (e *emitter) store(in *ir.Inst) {
	val := in.Args[len(in.Args)-1]
	v := strip(e.whole(val))
	switch in.Mem {
	case ir.MemVar:
		e.line("%s = %s;", e.varNames[in.Ref], v)
		return
	case ir.MemShared:
		x, _ := e.index(in)
		ref := fmt.Sprintf("%s[%s]", e.sharedNames[in.Ref], x)
		if e.sharedAtomic[in.Ref] {
			e.line("atomicStore(&%s, %s);", ref, v)
		} else {
			e.line("%s = %s;", ref, v)
		}
		return
	}
	i := in.Ref
	x, ui := e.index(in)
	if e.bufKinds[i] == bufPlain {
		ref := fmt.Sprintf("%s[%s]", e.bufNames[i], x)
		if e.bufAtomic[i] {
			e.line("atomicStore(&%s, %s);", ref, v)
		} else {
			e.line("%s = %s;", ref, v)
		}
		return
	}
	w, sh, mask := e.word(i, ui)
	var bits string
	switch e.k.Buffers[i].Elem.Scalar {
	case ir.F16:
		bits = e.helper("os_f32_to_f16", v) // the value is an f16 already: exact
	case ir.BF16:
		if val.Type.Scalar == ir.F32 {
			bits = fmt.Sprintf("(bitcast<u32>(%s) >> 16u)", v) // an exact bf16 value: its high half
		} else {
			bits = fmt.Sprintf("(%s & 0xffffu)", v)
		}
	default:
		if val.Type.Scalar == ir.I32 {
			v = "u32(" + v + ")"
		}
		bits = fmt.Sprintf("(%s & 0x%xu)", v, mask)
	}
	// Two atomics on the word: clear this element's bits, then set them; other elements of the
	// word, which other invocations may be storing, are left alone.
	e.line("atomicAnd(&%s, ~(0x%xu << %s));", w, mask, sh)
	e.line("atomicOr(&%s, %s << %s);", w, bits, sh)
}

func (e *emitter) atomic(in *ir.Inst) {
	var ref string
	x, _ := e.index(in)
	switch in.Mem {
	case ir.MemBuffer:
		if e.bufKinds[in.Ref] != bufPlain {
			e.errAt(in.Pos, "atomic on packed buffer %s", e.k.Buffers[in.Ref].Name)
			return
		}
		ref = fmt.Sprintf("&%s[%s]", e.bufNames[in.Ref], x)
	case ir.MemShared:
		ref = fmt.Sprintf("&%s[%s]", e.sharedNames[in.Ref], x)
	default:
		e.errAt(in.Pos, "atomic on a variable")
		return
	}
	val := strip(e.whole(in.Args[len(in.Args)-1]))
	op := ir.AtomicOp(in.Aux)
	if in.Type.Scalar != ir.I32 && in.Type.Scalar != ir.U32 {
		e.errAt(in.Pos, "atomic %s on %s: WGSL has atomics on i32 and u32 only (package lower rewrites f32 atomic adds into compare-exchange loops unless Caps.AtomicFloatAdd)", op, in.Type)
		return
	}
	if op == ir.AtomicCmpXchg {
		// atomicCompareExchangeWeak may fail spuriously: retry while it failed with the value
		// still equal to the comparator, so the result is the strong exchange's.
		cmp := strip(e.whole(in.Args[1]))
		name := e.valueName(in)
		r := e.names.fresh(name + "_r")
		e.line("var %s: %s;", name, e.typ(in.Type, in.Pos))
		e.line("loop {")
		e.ind++
		e.line("let %s = atomicCompareExchangeWeak(%s, %s, %s);", r, ref, cmp, val)
		e.line("%s = %s.old_value;", name, r)
		e.line("if (%s.exchanged || %s.old_value != %s) {", r, r, cmp)
		e.ind++
		e.line("break;")
		e.ind--
		e.line("}")
		e.ind--
		e.line("}")
		e.vals[in] = &value{t: in.Type, name: name}
		return
	}
	fn, ok := map[ir.AtomicOp]string{
		ir.AtomicAdd: "atomicAdd", ir.AtomicMin: "atomicMin", ir.AtomicMax: "atomicMax", ir.AtomicExchange: "atomicExchange",
		ir.AtomicAnd: "atomicAnd", ir.AtomicOr: "atomicOr", ir.AtomicXor: "atomicXor",
	}[op]
	if !ok {
		e.errAt(in.Pos, "atomic %s has no WGSL spelling", op)
		return
	}
	call := fmt.Sprintf("%s(%s, %s)", fn, ref, val)
	if e.useCnt[in] == 0 {
		e.line("%s;", call)
		e.vals[in] = &value{t: in.Type, lit: "0u"}
		return
	}
	e.decl(in, call)
}

// Arithmetic.

// pure returns the expression of an element-wise op or select.
func (e *emitter) pure(in *ir.Inst) string {
	t := in.Type
	s := in.Args[0].Type.Scalar
	a := func(i int) string { return e.whole(in.Args[i]) }
	switch in.Op {
	case ir.OpSelect:
		return fmt.Sprintf("select(%s, %s, %s)", strip(a(2)), strip(a(1)), strip(a(0)))
	case ir.OpEq:
		return infix(a(0), "==", a(1))
	case ir.OpNe:
		if s.IsFloat() {
			// Unordered: true when either is NaN (naga writes WGSL's != as an ordered compare).
			return "!" + infix(a(0), "==", a(1))
		}
		return infix(a(0), "!=", a(1))
	case ir.OpLt:
		return infix(a(0), "<", a(1))
	case ir.OpLe:
		return infix(a(0), "<=", a(1))
	case ir.OpGt:
		return infix(a(0), ">", a(1))
	case ir.OpGe:
		return infix(a(0), ">=", a(1))
	}
	if in.Op.IsUnary() {
		return e.unary(in.Op, t, a(0), in.Pos)
	}
	return e.binary(in, t, a(0), a(1))
}

func (e *emitter) unary(op ir.Op, t ir.Type, a string, pos ir.Pos) string {
	s := t.Scalar
	switch {
	case s.IsFloat():
		switch op {
		case ir.OpNeg:
			return "(-" + a + ")"
		case ir.OpAbs:
			return "abs(" + strip(a) + ")"
		case ir.OpSqrt:
			return "sqrt(" + strip(a) + ")"
		case ir.OpFloor:
			return "floor(" + strip(a) + ")"
		}
	case s == ir.Bool:
		if op == ir.OpNot {
			return "(!" + a + ")"
		}
	case s == ir.I32:
		switch op {
		case ir.OpNeg:
			return "(-" + a + ")" // wraps: -INT_MIN is INT_MIN
		case ir.OpNot:
			return "(~" + a + ")"
		case ir.OpAbs:
			return "abs(" + strip(a) + ")" // abs(INT_MIN) is INT_MIN
		}
	case s == ir.U32:
		switch op {
		case ir.OpNeg:
			return infix(e.zero(t), "-", a)
		case ir.OpNot:
			return "(~" + a + ")"
		case ir.OpAbs:
			return a
		}
	}
	e.errAt(pos, "%s on %s", op, t)
	return a
}

// zero is 0 of integer type t (a splat for vectors).
func (e *emitter) zero(t ir.Type) string {
	z := e.literal(t.Scalar, 0, ir.Pos{})
	if t.Lanes > 1 {
		return fmt.Sprintf("%s(%s)", e.typ(t, ir.Pos{}), z)
	}
	return z
}

func (e *emitter) binary(in *ir.Inst, t ir.Type, a, b string) string {
	s := t.Scalar
	switch in.Op {
	case ir.OpMin:
		if s.IsFloat() {
			return fmt.Sprintf("select(%s, %s, %s)", strip(a), strip(b), infix(b, "<", a))
		}
		return fmt.Sprintf("min(%s, %s)", strip(a), strip(b))
	case ir.OpMax:
		if s.IsFloat() {
			return fmt.Sprintf("select(%s, %s, %s)", strip(b), strip(a), infix(a, ">", b))
		}
		return fmt.Sprintf("max(%s, %s)", strip(a), strip(b))
	}
	switch {
	case s.IsFloat():
		op := map[ir.Op]string{ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpDiv: "/"}[in.Op]
		if op != "" {
			return infix(a, op, b)
		}
	case s == ir.Bool:
		switch in.Op {
		case ir.OpAnd:
			return infix(a, "&", b)
		case ir.OpOr:
			return infix(a, "|", b)
		case ir.OpXor:
			return infix(a, "!=", b)
		}
	case s == ir.I32 || s == ir.U32:
		switch in.Op {
		case ir.OpAdd:
			return infix(a, "+", b) // WGSL integer arithmetic wraps
		case ir.OpSub:
			return infix(a, "-", b)
		case ir.OpMul:
			return infix(a, "*", b)
		case ir.OpDiv, ir.OpRem:
			fn := "os_div_"
			if in.Op == ir.OpRem {
				fn = "os_rem_"
			}
			fn += s.String()
			if t.Lanes == 1 {
				return e.helper(fn, a, b)
			}
			lanes := make([]string, t.Lanes)
			for i := range lanes {
				lanes[i] = e.helper(fn, e.lane(in.Args[0], i), e.lane(in.Args[1], i))
			}
			return fmt.Sprintf("%s(%s)", e.typ(t, in.Pos), strings.Join(lanes, ", "))
		case ir.OpAnd:
			return infix(a, "&", b)
		case ir.OpOr:
			return infix(a, "|", b)
		case ir.OpXor:
			return infix(a, "^", b)
		case ir.OpShl, ir.OpShr:
			op := "<<"
			if in.Op == ir.OpShr {
				op = ">>" // arithmetic for i32, logical for u32
			}
			return infix(a, op, e.shiftCount(in.Args[1]))
		}
	}
	e.errAt(in.Pos, "%s on %s", in.Op, t)
	return a
}

// shiftCount is the u32 shift count of operand c, taken modulo 32.
func (e *emitter) shiftCount(c *ir.Inst) string {
	t := c.Type
	if c.Op == ir.OpConst {
		n := fmt.Sprintf("%du", uint32(c.Aux)&31)
		if t.Lanes > 1 {
			return fmt.Sprintf("vec%d<u32>(%s)", t.Lanes, n)
		}
		return n
	}
	x := e.whole(c)
	ut := ir.Type{Scalar: ir.U32, Lanes: t.Lanes}
	if t.Scalar == ir.I32 {
		x = fmt.Sprintf("%s(%s)", e.typ(ut, c.Pos), strip(x))
	}
	mask := "31u"
	if t.Lanes > 1 {
		mask = fmt.Sprintf("vec%d<u32>(31u)", t.Lanes)
	}
	return infix(x, "&", mask)
}

// Conversions.

func (e *emitter) convert(in *ir.Inst) string {
	from, to := in.Args[0].Type, in.Type
	if from.Scalar == to.Scalar {
		return e.whole(in.Args[0])
	}
	if to.Lanes == 1 {
		return e.convertLane(from.Scalar, to.Scalar, e.whole(in.Args[0]), in.Pos)
	}
	// Lane by lane where a helper does the work; otherwise WGSL's vector conversion.
	if e.convertNeedsHelper(from.Scalar, to.Scalar) {
		lanes := make([]string, to.Lanes)
		for i := range lanes {
			lanes[i] = strip(e.convertLane(from.Scalar, to.Scalar, e.lane(in.Args[0], i), in.Pos))
		}
		return fmt.Sprintf("%s(%s)", e.typ(to, in.Pos), strings.Join(lanes, ", "))
	}
	return fmt.Sprintf("%s(%s)", e.typ(to, in.Pos), strip(e.whole(in.Args[0])))
}

func (e *emitter) convertNeedsHelper(from, to ir.Scalar) bool {
	return to == ir.F16 || from.IsFloat() && !to.IsFloat()
}

// convertLane converts one lane from kind from to kind to (see the package documentation).
func (e *emitter) convertLane(from, to ir.Scalar, a string, pos ir.Pos) string {
	f32 := func(x string) string {
		if from == ir.F16 && e.o.F16 {
			return "f32(" + strip(x) + ")"
		}
		return x // an f16 held in f32 is its own f32 value
	}
	switch {
	case from == to:
		return a
	case from == ir.F16 && to == ir.F32:
		return f32(a)
	case to == ir.F16 && (from == ir.F32 || from == ir.I32 || from == ir.U32):
		x := a
		if from != ir.F32 {
			// Via f32: exact below 2^24, and everything larger overflows f16 anyway.
			x = "f32(" + strip(a) + ")"
		}
		r := e.helper("os_round_f16", x) // nearest even, exactly (WGSL's own f16() need not be)
		if e.o.F16 {
			return "f16(" + r + ")"
		}
		return r
	case (from == ir.F32 || from == ir.F16) && (to == ir.I32 || to == ir.U32):
		return e.helper("os_f32_to_"+to.String(), f32(a))
	case (from == ir.I32 || from == ir.U32) && to == ir.F32:
		return "f32(" + strip(a) + ")"
	case (from == ir.I32 || from == ir.U32) && (to == ir.I32 || to == ir.U32):
		return to.String() + "(" + strip(a) + ")" // the same bits
	}
	e.errAt(pos, "convert %s to %s has no WGSL spelling", from, to)
	return a
}

// bitcast returns the expression of an OpBitcast.
func (e *emitter) bitcast(in *ir.Inst) string {
	from, to := in.Args[0].Type, in.Type
	a := e.whole(in.Args[0])
	if from == to {
		return a
	}
	if from.Scalar != ir.F16 && to.Scalar != ir.F16 {
		return fmt.Sprintf("bitcast<%s>(%s)", e.typ(to, in.Pos), strip(a))
	}
	// Pairs of halves make one 32-bit lane, by the exact integer helpers, with or without the
	// f16 extension (naga types bitcast<f32>(vec2<f16>) as a vec2<f16>).
	half := func(x string) string { // an f16 lane as the f32 of its value
		if e.o.F16 {
			return "f32(" + strip(x) + ")"
		}
		return x
	}
	toHalf := func(x string) string { // the f32 of an f16 value as an f16 lane
		if e.o.F16 {
			return "f16(" + strip(x) + ")"
		}
		return x
	}
	switch {
	case from.Scalar == ir.F16 && to.Scalar != ir.F16 && int(from.Lanes) == 2*int(to.Lanes):
		lanes := make([]string, to.Lanes)
		for i := range lanes {
			lo := e.helper("os_f32_to_f16", half(e.lane(in.Args[0], 2*i)))
			hi := e.helper("os_f32_to_f16", half(e.lane(in.Args[0], 2*i+1)))
			w := infix(lo, "|", infix(hi, "<<", "16u"))
			if to.Scalar != ir.U32 {
				w = fmt.Sprintf("bitcast<%s>(%s)", e.scalar(to.Scalar, in.Pos), strip(w))
			}
			lanes[i] = strip(w)
		}
		if to.Lanes == 1 {
			return lanes[0]
		}
		return fmt.Sprintf("%s(%s)", e.typ(to, in.Pos), strings.Join(lanes, ", "))
	case to.Scalar == ir.F16 && from.Scalar != ir.F16 && int(to.Lanes) == 2*int(from.Lanes):
		lanes := make([]string, to.Lanes)
		for i := 0; i < int(from.Lanes); i++ {
			w := e.lane(in.Args[0], i)
			if from.Scalar != ir.U32 {
				w = "bitcast<u32>(" + strip(w) + ")"
			}
			lanes[2*i] = toHalf(e.helper("os_f16_to_f32", infix(w, "&", "0xffffu")))
			lanes[2*i+1] = toHalf(e.helper("os_f16_to_f32", infix(w, ">>", "16u")))
		}
		return fmt.Sprintf("%s(%s)", e.typ(to, in.Pos), strings.Join(lanes, ", "))
	}
	e.errAt(in.Pos, "bitcast %s to %s has no WGSL spelling", from, to)
	return a
}
