package lower

import (
	"errors"
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// LegalizeTypes rewrites the value types no backend knows into 32-bit ones, so that the
// backends never see them:
//
//   - a bf16 value becomes the f32 that holds it exactly (its 16 bits at the top, the low 16
//     bits zero). Add, Sub, Mul, Div, Sqrt and Floor run in f32 and are followed by an integer
//     round-to-nearest-even to bf16 (NaN stays a quiet NaN: package oracle's F32ToBF16); since
//     f32 has 24 >= 2*8+2 significand bits the result is the correctly rounded bf16 operation.
//     Neg, Abs, Min, Max, Select and the comparisons are exact on the f32 values. bf16 buffer
//     elements become u16: a load zero-extends, shifts left 16 and bitcasts to f32, a store
//     keeps the top 16 bits of the (already rounded) f32. bf16 shared arrays become f32 arrays
//     holding those f32 values (4 bytes an element: the Vulkan emitter has 32-bit workgroup
//     elements only, and shared memory is not seen from outside).
//   - an i8 or i16 value becomes the i32 holding it sign-extended, a u8 or u16 the u32 holding
//     it zero-extended. After each operation that can leave the narrow range (Add, Sub, Mul,
//     Neg, Abs, Shl; signed Div; unsigned Not) the result is re-extended from the narrow width
//     (a shift pair for signed kinds, a mask for unsigned ones), which wraps it as Go's int8,
//     uint8, ... arithmetic does; shift counts are masked to width-1 first. Min, Max, And, Or,
//     Xor, Rem, Shr and the comparisons cannot leave the range.
//   - conversions: to a narrow integer, an integer keeps its low bits and a float converts as
//     oracle.FloatToInt32 (NaN and out-of-range values selected to math.MinInt32 explicitly)
//     and keeps the low bits of that; to bf16, one rounding from every source: f32 and f16
//     (exact in f32) and the narrow integers (exact in f32) round their f32 value, and i32 and
//     u32 from 2^24 up round their 8 significant bits in integer arithmetic (intToBF16; a plain
//     int -> f32 conversion first would round twice).
//   - variables of these types become variables of the 32-bit types.
//
// An operation on these types that is not listed (one added to the IR later) is an error at its
// position, never a silent miscompile. Kernels without such types are left untouched.
func LegalizeTypes(k *ir.Kernel, _ Caps) error {
	if !hasSmallTypes(k) {
		return nil
	}
	l := &typeLegalizer{k: k, orig: map[*ir.Inst]ir.Type{}, repl: map[*ir.Inst]*ir.Inst{}}
	for i, b := range k.Buffers {
		if b.Elem == ir.S(ir.BF16) {
			l.bf16Buf = append(l.bf16Buf, i)
			b.Elem = ir.S(ir.U16)
		}
	}
	for _, s := range k.Shared {
		if s.Elem == ir.S(ir.BF16) {
			s.Elem = ir.TF32
		}
	}
	for _, v := range k.Vars {
		v.Type = wideType(v.Type)
	}
	rewrite(k.Body, l.inst)
	return errors.Join(l.errs...)
}

// legalizedKind reports whether values of kind s are legalized here.
func legalizedKind(s ir.Scalar) bool { return s.IsNarrow() || s == ir.BF16 }

// wideType is the 32-bit type that holds values of t.
func wideType(t ir.Type) ir.Type {
	switch t.Scalar {
	case ir.BF16:
		t.Scalar = ir.F32
	case ir.I8, ir.I16:
		t.Scalar = ir.I32
	case ir.U8, ir.U16:
		t.Scalar = ir.U32
	}
	return t
}

func hasSmallTypes(k *ir.Kernel) bool {
	for _, b := range k.Buffers {
		if b.Elem.Scalar == ir.BF16 {
			return true
		}
	}
	for _, s := range k.Shared {
		if s.Elem.Scalar == ir.BF16 {
			return true
		}
	}
	for _, v := range k.Vars {
		if legalizedKind(v.Type.Scalar) {
			return true
		}
	}
	found := false
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if legalizedKind(in.Type.Scalar) {
			found = true
		}
		return !found
	})
	return found
}

type typeLegalizer struct {
	k       *ir.Kernel
	orig    map[*ir.Inst]ir.Type  // the type a rewritten value had
	repl    map[*ir.Inst]*ir.Inst // values that became another (identity conversions)
	bf16Buf []int                 // buffers whose elements were bf16
	errs    []error
}

func (l *typeLegalizer) origType(in *ir.Inst) ir.Type {
	if t, ok := l.orig[in]; ok {
		return t
	}
	return in.Type
}

// bf16Buffer reports whether in addresses a buffer whose elements were bf16 (now u16).
func (l *typeLegalizer) bf16Buffer(in *ir.Inst) bool {
	if in.Mem != ir.MemBuffer {
		return false
	}
	for _, r := range l.bf16Buf {
		if r == in.Ref {
			return true
		}
	}
	return false
}

func (l *typeLegalizer) errorf(in *ir.Inst, format string, args ...any) {
	l.errs = append(l.errs, &ir.Error{Pos: in.Pos, Kernel: l.k.Name, Msg: "legalize-types: " + fmt.Sprintf(format, args...)})
}

// replaceWith makes in compute what last (the final instruction g appended) computes, so the users
// of in see the new value, and puts in at last's place.
func replaceWith(g *gen, in, last *ir.Inst) []*ir.Inst {
	name, pos := in.Name, in.Pos
	*in = *last
	in.Name, in.Pos = name, pos
	g.out[len(g.out)-1] = in
	return g.out
}

func (l *typeLegalizer) inst(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
	at := make([]ir.Type, len(in.Args))
	involved := legalizedKind(in.Type.Scalar)
	for i, a := range in.Args {
		at[i] = l.origType(a) // before replacement: a replaced value keeps the type its users saw
		involved = involved || legalizedKind(at[i].Scalar)
		if r, ok := l.repl[a]; ok {
			in.Args[i] = r
		}
	}
	if (in.Op == ir.OpLoad || in.Op == ir.OpStore) && l.bf16Buffer(in) {
		involved = true
	}
	if !involved {
		return append(out, in)
	}
	ot := in.Type
	l.orig[in] = ot
	g := &gen{out: out, pos: in.Pos}
	switch {
	case in.Op == ir.OpConst:
		in.Type = wideType(ot)
		if ot.Scalar == ir.BF16 {
			in.Aux <<= 16
		} else {
			in.Aux = ir.ConstBits(in.Type, ir.ConstFloat(ot, in.Aux))
		}
		return append(out, in)
	case in.Op == ir.OpLoad:
		if !l.bf16Buffer(in) { // variables and bf16 shared arrays hold the 32-bit values
			in.Type = wideType(ot)
			return append(out, in)
		}
		ld := new(ir.Inst)
		*ld = *in
		ld.Name = ""
		ld.Type = ir.TU32
		g.add(ld)
		return replaceWith(g, in, g.op(ir.OpBitcast, ir.TF32, g.op(ir.OpShl, ir.TU32, ld, g.konst(ir.TU32, 16))))
	case in.Op == ir.OpStore:
		if l.bf16Buffer(in) {
			v := len(in.Args) - 1
			in.Args[v] = g.op(ir.OpShr, ir.TU32, g.op(ir.OpBitcast, ir.TU32, in.Args[v]), g.konst(ir.TU32, 16))
		}
		return append(g.out, in)
	case in.Op == ir.OpSelect:
		in.Type = wideType(ot)
		return append(out, in)
	case in.Op.IsCompare():
		return append(out, in) // exact on the 32-bit values
	case in.Op.IsUnary() || in.Op.IsBinary():
		return l.arith(g, in, at[0].Scalar)
	case in.Op == ir.OpConvert:
		return l.convert(g, in, at[0].Scalar, ot.Scalar)
	case in.Op == ir.OpBitcast:
		return l.bitcast(g, in, at[0].Scalar, ot.Scalar)
	}
	what := ot
	if !legalizedKind(what.Scalar) {
		for _, t := range at {
			if legalizedKind(t.Scalar) {
				what = t
			}
		}
	}
	l.errorf(in, "%s on %s values is not supported", in.Op, what)
	return append(out, in)
}

// arith legalizes an element-wise operation on operands of kind s.
func (l *typeLegalizer) arith(g *gen, in *ir.Inst, s ir.Scalar) []*ir.Inst {
	in.Type = wideType(in.Type)
	if s == ir.BF16 {
		switch in.Op {
		case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpSqrt, ir.OpFloor:
			w := g.add(&ir.Inst{Op: in.Op, Type: ir.TF32, Args: in.Args})
			return replaceWith(g, in, roundBF16(g, w))
		}
		return append(g.out, in) // Neg, Abs, Min, Max: exact
	}
	if in.Op == ir.OpShl || in.Op == ir.OpShr {
		in.Args[1] = g.op(ir.OpAnd, in.Args[1].Type, in.Args[1], g.konst(in.Args[1].Type, float64(s.Bits()-1)))
	}
	switch in.Op {
	case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpNeg, ir.OpAbs, ir.OpShl:
	case ir.OpDiv:
		if !s.IsSigned() {
			return append(g.out, in)
		}
	case ir.OpNot:
		if s.IsSigned() {
			return append(g.out, in)
		}
	default:
		return append(g.out, in) // Min, Max, And, Or, Xor, Rem, Shr stay in range
	}
	w := g.add(&ir.Inst{Op: in.Op, Type: in.Type, Args: in.Args})
	return replaceWith(g, in, reextend(g, w, s))
}

// convert legalizes a conversion from kind from to kind to (one of them legalized here).
func (l *typeLegalizer) convert(g *gen, in *ir.Inst, from, to ir.Scalar) []*ir.Inst {
	x := in.Args[0]
	switch {
	case from == ir.F64 || to == ir.F64:
		l.errorf(in, "conversion from %s to %s is not supported", from, to)
		in.Type = wideType(in.Type)
		return append(g.out, in)
	case from == to:
		l.repl[in] = x
		return g.out
	case to.IsNarrow():
		y := x
		if from.IsFloat() {
			y = floatToI32(g, asF32(g, x))
		}
		return replaceWith(g, in, reextend(g, asInt(g, y, wideType(ir.S(to))), to))
	case to == ir.BF16:
		if from == ir.I32 || from == ir.U32 {
			return replaceWith(g, in, intToBF16(g, x, from == ir.I32))
		}
		return replaceWith(g, in, roundBF16(g, asF32(g, x))) // f32, f16 and narrow integers are exact in f32
	case from == ir.BF16 && to == ir.F32:
		l.repl[in] = x
		return g.out
	case to == ir.F16 && from.IsNarrow():
		in.Args[0] = g.op(ir.OpConvert, ir.TF32, x) // exact; then one rounding to f16
		return append(g.out, in)
	case from.IsNarrow() && to.IsInt():
		if x.Type.Scalar == to {
			l.repl[in] = x
			return g.out
		}
		return replaceWith(g, in, g.op(ir.OpBitcast, ir.S(to), x)) // the value is extended already
	}
	// bf16 -> f16, i32, u32 and narrow -> f32: the conversion of the 32-bit value.
	return append(g.out, in)
}

// bitcast legalizes a bitcast between the same-width kinds from and to.
func (l *typeLegalizer) bitcast(g *gen, in *ir.Inst, from, to ir.Scalar) []*ir.Inst {
	x := in.Args[0]
	switch {
	case from == to:
		l.repl[in] = x
		return g.out
	case from.IsNarrow() && to.IsNarrow():
		return replaceWith(g, in, reextend(g, asInt(g, x, wideType(ir.S(to))), to))
	case from == ir.BF16 && to.IsNarrow():
		h := g.op(ir.OpShr, ir.TU32, g.op(ir.OpBitcast, ir.TU32, x), g.konst(ir.TU32, 16))
		return replaceWith(g, in, reextend(g, asInt(g, h, wideType(ir.S(to))), to))
	case from.IsNarrow() && to == ir.BF16:
		u := asInt(g, x, ir.TU32)
		return replaceWith(g, in, g.op(ir.OpBitcast, ir.TF32, g.op(ir.OpShl, ir.TU32, u, g.konst(ir.TU32, 16))))
	}
	l.errorf(in, "bitcast from %s to %s is not supported", from, to)
	in.Type = wideType(in.Type)
	return append(g.out, in)
}

// asF32 returns x as f32: x itself, or x converted (exactly: f16, and the narrow integers held
// in 32 bits).
func asF32(g *gen, x *ir.Inst) *ir.Inst {
	if x.Type == ir.TF32 {
		return x
	}
	return g.op(ir.OpConvert, ir.TF32, x)
}

// asInt bitcasts the 32-bit integer x to t (i32 or u32) when it is not t already.
func asInt(g *gen, x *ir.Inst, t ir.Type) *ir.Inst {
	if x.Type == t {
		return x
	}
	return g.op(ir.OpBitcast, t, x)
}

// reextend re-extends the 32-bit integer x from the width of the narrow kind s: a shift pair
// (sign extension) for i8 and i16, a mask for u8 and u16. x is i32 for signed kinds, u32 else.
func reextend(g *gen, x *ir.Inst, s ir.Scalar) *ir.Inst {
	if s.IsSigned() {
		sh := g.konst(ir.TI32, float64(32-s.Bits()))
		return g.op(ir.OpShr, ir.TI32, g.op(ir.OpShl, ir.TI32, x, sh), sh)
	}
	return g.op(ir.OpAnd, ir.TU32, x, g.konst(ir.TU32, float64(uint32(1)<<s.Bits()-1)))
}

// floatToI32 is oracle.FloatToInt32 of the f32 f: truncation toward zero, with NaN and values
// outside [-2^31, 2^31) selected to math.MinInt32 (GPU conversions leave them undefined).
func floatToI32(g *gen, f *ir.Inst) *ir.Inst {
	bad := g.op(ir.OpOr, ir.TBool,
		g.op(ir.OpOr, ir.TBool, g.op(ir.OpNe, ir.TBool, f, f), g.op(ir.OpGe, ir.TBool, f, g.konst(ir.TF32, 0x1p31))),
		g.op(ir.OpLt, ir.TBool, f, g.konst(ir.TF32, -0x1p31)))
	return g.op(ir.OpSelect, ir.TI32, bad, g.konst(ir.TI32, -0x1p31), g.op(ir.OpConvert, ir.TI32, f))
}

// roundBF16 rounds the f32 f to bf16, nearest even, with integer operations (package oracle's
// F32ToBF16): bits + 0x7fff + (bit 16), low half cleared; a NaN keeps its top bits and is made
// quiet (bit 22 set), so it never rounds into an infinity. The result is the f32 holding it.
func roundBF16(g *gen, f *ir.Inst) *ir.Inst {
	u := g.op(ir.OpBitcast, ir.TU32, f)
	c := func(v uint32) *ir.Inst { return g.konst(ir.TU32, float64(v)) }
	lsb := g.op(ir.OpAnd, ir.TU32, g.op(ir.OpShr, ir.TU32, u, c(16)), c(1))
	r := g.op(ir.OpAnd, ir.TU32, g.op(ir.OpAdd, ir.TU32, g.op(ir.OpAdd, ir.TU32, u, c(0x7fff)), lsb), c(0xffff0000))
	nan := g.op(ir.OpGt, ir.TBool, g.op(ir.OpAnd, ir.TU32, u, c(0x7fffffff)), c(0x7f800000))
	q := g.op(ir.OpAnd, ir.TU32, g.op(ir.OpOr, ir.TU32, u, c(0x400000)), c(0xffff0000))
	return g.op(ir.OpBitcast, ir.TF32, g.op(ir.OpSelect, ir.TU32, nan, q, r))
}

// intToBF16 converts the i32 (signed) or u32 x to bf16 with one rounding, in integer
// arithmetic: the magnitude m below 2^24 converts to f32 exactly and rounds from there; a larger
// one is rounded to 8 significant bits directly (m >> shift, nearest even on the bits shifted
// out) and the f32 bits are composed from the exponent and those bits (a carry to 256 moves
// into the exponent by itself). The bit length of m comes from the exponent of float(m), however
// the device rounds that conversion: 2^E <= float(m) <= 2^(E+1), so m has E+1 bits unless
// m < 2^E. (Converting float(m) back to an integer to find its rounding error would not work:
// Mesa's NIR folds f2u32(u2f(m)) to m, an "imprecise" rule of nir_opt_algebraic, so lavapipe
// saw every conversion as exact.)
func intToBF16(g *gen, x *ir.Inst, signed bool) *ir.Inst {
	c := func(v uint32) *ir.Inst { return g.konst(ir.TU32, float64(v)) }
	op := func(o ir.Op, a, b *ir.Inst) *ir.Inst { return g.op(o, ir.TU32, a, b) }
	m := x
	var neg *ir.Inst
	if signed {
		neg = g.op(ir.OpLt, ir.TBool, x, g.konst(ir.TI32, 0))
		u := g.op(ir.OpBitcast, ir.TU32, x)
		m = g.op(ir.OpSelect, ir.TU32, neg, op(ir.OpSub, c(0), u), u)
	}
	f := g.op(ir.OpConvert, ir.TF32, m)
	exact := roundBF16(g, f) // m < 2^24: f is m exactly
	e := op(ir.OpSub, op(ir.OpShr, g.op(ir.OpBitcast, ir.TU32, f), c(23)), c(127))
	above := op(ir.OpShr, op(ir.OpShr, m, op(ir.OpSub, e, c(1))), c(1)) // m >> e, also for e = 32
	bitLen := op(ir.OpAdd, e, g.op(ir.OpSelect, ir.TU32, g.op(ir.OpNe, ir.TBool, above, c(0)), c(1), c(0)))
	shift := op(ir.OpSub, bitLen, c(8))
	q := op(ir.OpShr, m, shift)
	rem := op(ir.OpAnd, m, op(ir.OpSub, op(ir.OpShl, c(1), shift), c(1)))
	half := op(ir.OpShl, c(1), op(ir.OpSub, shift, c(1)))
	up := g.op(ir.OpOr, ir.TBool, g.op(ir.OpGt, ir.TBool, rem, half),
		g.op(ir.OpAnd, ir.TBool, g.op(ir.OpEq, ir.TBool, rem, half), g.op(ir.OpNe, ir.TBool, op(ir.OpAnd, q, c(1)), c(0))))
	q = op(ir.OpAdd, q, g.op(ir.OpSelect, ir.TU32, up, c(1), c(0)))
	wide := op(ir.OpAdd, op(ir.OpShl, op(ir.OpAdd, shift, c(134)), c(23)), op(ir.OpShl, op(ir.OpSub, q, c(128)), c(16)))
	bits := g.op(ir.OpSelect, ir.TU32, g.op(ir.OpLt, ir.TBool, m, c(1<<24)), g.op(ir.OpBitcast, ir.TU32, exact), wide)
	if signed {
		bits = op(ir.OpOr, bits, g.op(ir.OpSelect, ir.TU32, neg, c(0x80000000), c(0)))
	}
	return g.op(ir.OpBitcast, ir.TF32, bits)
}
