package dsl

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/ir"
)

// Value is a typed value computed by a kernel: a scalar or small vector. Its methods append
// instructions to the kernel at the current point of the body. Operands of type any accept a
// Value or a Go number (int, uint32, float32, float64, ...) or bool, which takes the type of the
// receiver the way an untyped Go constant does; a number that the type cannot hold exactly is an
// error.
type Value struct {
	k  *Kernel
	in *ir.Inst
}

// Type returns v's type.
func (v Value) Type() Type {
	if v.in == nil {
		return ir.TVoid
	}
	return v.in.Type
}

// IR returns the instruction that computes v (for tools; kernels do not need it).
func (v Value) IR() *ir.Inst { return v.in }

// Named gives v a name that the emitted code uses for it, and returns v.
func (v Value) Named(name string) Value {
	if v.in != nil && v.in.Op != ir.OpConst {
		v.in.Name = name
	}
	return v
}

func (v Value) ok(op string) bool {
	if v.k == nil || v.in == nil {
		return false
	}
	return true
}

// konst builds a constant of type t from a Go value; ok false when it does not fit exactly.
func (k *Kernel) konst(t Type, x any, p ir.Pos) (Value, bool) {
	var f float64
	switch x := x.(type) {
	case int:
		f = float64(x)
	case int8:
		f = float64(x)
	case int16:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint8:
		f = float64(x)
	case uint16:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float32:
		f = float64(x)
	case float64:
		f = x
	case bool:
		if t.Scalar != ir.Bool {
			return Value{}, false
		}
		if x {
			f = 1
		}
	default:
		return Value{}, false
	}
	if _, isBool := x.(bool); t.Scalar == ir.Bool && !isBool {
		return Value{}, false
	}
	switch t.Scalar {
	case ir.I32:
		if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
			return Value{}, false
		}
	case ir.U32:
		if f != math.Trunc(f) || f < 0 || f > math.MaxUint32 {
			return Value{}, false
		}
	case ir.I8, ir.U8, ir.I16, ir.U16:
		if lo, hi := narrowRange(t.Scalar); f != math.Trunc(f) || f < lo || f > hi {
			return Value{}, false
		}
	case ir.F32:
		if !math.IsNaN(f) && float64(float32(f)) != f {
			if _, is64 := x.(float64); !is64 {
				return Value{}, false
			}
			// float64 literals round to the nearest float32, as a Go constant conversion does.
		}
	}
	in := &ir.Inst{Op: ir.OpConst, Type: t, Aux: ir.ConstBits(t.Elem(), f), Pos: p}
	return k.emit(in), true
}

// operand turns x into a Value of type want (the receiver's type) for op.
func (k *Kernel) operand(op string, want Type, x any, p ir.Pos) (Value, bool) {
	if v, ok := x.(Value); ok {
		if v.k == nil || v.in == nil {
			k.errorf(p, "%s: operand is the zero Value", op)
			return Value{}, false
		}
		if v.k != k {
			k.errorf(p, "%s: operand belongs to kernel %s", op, v.k.Name())
			return Value{}, false
		}
		return v, true
	}
	c, ok := k.konst(want, x, p)
	if !ok {
		k.errorf(p, "%s: cannot use %v (%T) as %s", op, x, x, want)
	}
	return c, ok
}

// Const returns the constant x of type t (for example Const(F32, 0.5)).
func (k *Kernel) Const(t Type, x any) Value {
	if k == nil {
		return Value{}
	}
	p := callerPos()
	if !t.IsValue() {
		k.errorf(p, "Const: %s is not a value type", t)
		return k.poison(t, p)
	}
	v, ok := k.konst(t, x, p)
	if !ok {
		k.errorf(p, "Const: cannot use %v (%T) as %s", x, x, t)
		return k.poison(t, p)
	}
	return v
}

// F32 returns an f32 constant.
func (k *Kernel) F32(x float32) Value {
	if k == nil {
		return Value{}
	}
	return k.Const(F32, x)
}

// I32 returns an i32 constant.
func (k *Kernel) I32(x int32) Value {
	if k == nil {
		return Value{}
	}
	return k.Const(I32, x)
}

// U32 returns a u32 constant.
func (k *Kernel) U32(x uint32) Value {
	if k == nil {
		return Value{}
	}
	return k.Const(U32, x)
}

// poison is the value an erroneous operation yields so building can go on and find more errors.
func (k *Kernel) poison(t Type, p ir.Pos) Value {
	if !t.IsValue() {
		t = ir.TU32
	}
	return k.emit(&ir.Inst{Op: ir.OpConst, Type: t, Pos: p})
}

func (v Value) unary(op ir.Op, check func(Type) bool, what string) Value {
	p := callerPos()
	if !v.ok(op.String()) {
		return Value{}
	}
	k := v.k
	if !check(v.Type()) {
		k.errorf(p, "%s: needs %s, got %s", opName(op), what, v.Type())
		return k.poison(v.Type(), p)
	}
	return k.emit(&ir.Inst{Op: op, Type: v.Type(), Args: []*ir.Inst{v.in}, Pos: p})
}

func (v Value) binary(op ir.Op, o any, check func(Type) bool, what string) Value {
	p := callerPos()
	if !v.ok(op.String()) {
		return Value{}
	}
	k := v.k
	w, ok := k.operand(opName(op), v.Type(), o, p)
	if !ok {
		return k.poison(v.Type(), p)
	}
	if w.Type() != v.Type() {
		k.errorf(p, "%s: mismatched types %s and %s", opName(op), v.Type(), w.Type())
		return k.poison(v.Type(), p)
	}
	if !check(v.Type()) {
		k.errorf(p, "%s: needs %s, got %s", opName(op), what, v.Type())
		return k.poison(v.Type(), p)
	}
	t := v.Type()
	if op.IsCompare() {
		t = ir.Vec(ir.Bool, int(v.Type().Lanes))
		if t.Lanes == 1 {
			t = ir.TBool
		}
	}
	return k.emit(&ir.Inst{Op: op, Type: t, Args: []*ir.Inst{v.in, w.in}, Pos: p})
}

func opName(op ir.Op) string {
	s := op.String()
	return string(s[0]-'a'+'A') + s[1:]
}

func isNumeric(t Type) bool { return t.Scalar.IsInt() || t.Scalar.IsFloat() }
func isInt(t Type) bool     { return t.Scalar == ir.I32 || t.Scalar == ir.U32 }
func isAnyInt(t Type) bool  { return t.Scalar.IsInt() } // i32, u32 and the narrow integers
func isIntOrBool(t Type) bool {
	return isAnyInt(t) || t.Scalar == ir.Bool
}
func isFloat(t Type) bool  { return t.Scalar.IsFloat() }
func isSigned(t Type) bool { return t.Scalar.IsSigned() || t.Scalar.IsFloat() }
func isEq(t Type) bool     { return isNumeric(t) || t.Scalar == ir.Bool }

// Add returns v + o. Float arithmetic is IEEE round-to-nearest-even and never contracted with a
// neighbouring multiply; integers wrap.
func (v Value) Add(o any) Value { return v.binary(ir.OpAdd, o, isNumeric, "numbers") }

// Sub returns v - o.
func (v Value) Sub(o any) Value { return v.binary(ir.OpSub, o, isNumeric, "numbers") }

// Mul returns v * o.
func (v Value) Mul(o any) Value { return v.binary(ir.OpMul, o, isNumeric, "numbers") }

// Div returns v / o (integers truncate toward zero).
func (v Value) Div(o any) Value { return v.binary(ir.OpDiv, o, isNumeric, "numbers") }

// Rem returns the integer remainder of v / o, with the sign of v.
func (v Value) Rem(o any) Value { return v.binary(ir.OpRem, o, isAnyInt, "integers") }

// Min returns the smaller of v and o (floats: o < v ? o : v).
func (v Value) Min(o any) Value { return v.binary(ir.OpMin, o, isNumeric, "numbers") }

// Max returns the larger of v and o (floats: v > o ? v : o).
func (v Value) Max(o any) Value { return v.binary(ir.OpMax, o, isNumeric, "numbers") }

// And returns the bitwise (integers) or logical (bool) and.
func (v Value) And(o any) Value { return v.binary(ir.OpAnd, o, isIntOrBool, "integers or bools") }

// Or returns the bitwise or logical or.
func (v Value) Or(o any) Value { return v.binary(ir.OpOr, o, isIntOrBool, "integers or bools") }

// Xor returns the bitwise or logical exclusive or.
func (v Value) Xor(o any) Value { return v.binary(ir.OpXor, o, isIntOrBool, "integers or bools") }

// Shl shifts left by o modulo the bit width.
func (v Value) Shl(o any) Value { return v.binary(ir.OpShl, o, isAnyInt, "integers") }

// Shr shifts right by o modulo the bit width: arithmetic for i32, logical for u32.
func (v Value) Shr(o any) Value { return v.binary(ir.OpShr, o, isAnyInt, "integers") }

// Eq compares for equality (floats: false when either is NaN).
func (v Value) Eq(o any) Value { return v.binary(ir.OpEq, o, isEq, "numbers or bools") }

// Ne compares for inequality (floats: true when either is NaN).
func (v Value) Ne(o any) Value { return v.binary(ir.OpNe, o, isEq, "numbers or bools") }

// Lt returns v < o.
func (v Value) Lt(o any) Value { return v.binary(ir.OpLt, o, isNumeric, "numbers") }

// Le returns v <= o.
func (v Value) Le(o any) Value { return v.binary(ir.OpLe, o, isNumeric, "numbers") }

// Gt returns v > o.
func (v Value) Gt(o any) Value { return v.binary(ir.OpGt, o, isNumeric, "numbers") }

// Ge returns v >= o.
func (v Value) Ge(o any) Value { return v.binary(ir.OpGe, o, isNumeric, "numbers") }

// Neg returns -v.
func (v Value) Neg() Value { return v.unary(ir.OpNeg, isSigned, "a signed number") }

// Not returns the bitwise (integers) or logical (bool) complement.
func (v Value) Not() Value { return v.unary(ir.OpNot, isIntOrBool, "an integer or bool") }

// Abs returns |v|.
func (v Value) Abs() Value { return v.unary(ir.OpAbs, isSigned, "a signed number") }

// Sqrt returns the correctly rounded square root.
func (v Value) Sqrt() Value { return v.unary(ir.OpSqrt, isFloat, "a float") }

// Floor rounds toward negative infinity.
func (v Value) Floor() Value { return v.unary(ir.OpFloor, isFloat, "a float") }

func (v Value) convert(op ir.Op, s ir.Scalar) Value {
	p := callerPos()
	if !v.ok("convert") {
		return Value{}
	}
	t := ir.Type{Scalar: s, Lanes: v.Type().Lanes}
	if op == ir.OpConvert && !isNumeric(v.Type()) {
		v.k.errorf(p, "convert %s to %s: only numbers convert", v.Type(), t)
		return v.k.poison(t, p)
	}
	if v.Type() == t {
		return v
	}
	return v.k.emit(&ir.Inst{Op: op, Type: t, Args: []*ir.Inst{v.in}, Pos: p})
}

// F32 converts v to f32 (integers round to nearest even; f16 widens exactly).
func (v Value) F32() Value { return v.convert(ir.OpConvert, ir.F32) }

// F16 converts v to f16 (round to nearest even).
func (v Value) F16() Value { return v.convert(ir.OpConvert, ir.F16) }

// I32 converts v to i32 (floats truncate toward zero; u32 wraps).
func (v Value) I32() Value { return v.convert(ir.OpConvert, ir.I32) }

// U32 converts v to u32 (floats truncate toward zero; i32 wraps).
func (v Value) U32() Value { return v.convert(ir.OpConvert, ir.U32) }

// Bitcast reinterprets v's bits as a value of type t of the same total width.
func (v Value) Bitcast(t Type) Value {
	p := callerPos()
	if !v.ok("bitcast") {
		return Value{}
	}
	if v.Type().Scalar.Bits()*int(v.Type().Lanes) != t.Scalar.Bits()*int(t.Lanes) || !t.IsValue() || v.Type().Scalar == ir.Bool || t.Scalar == ir.Bool {
		v.k.errorf(p, "Bitcast: %s and %s differ in width", v.Type(), t)
		return v.k.poison(t, p)
	}
	if msg := bitcast16(v.Type(), t); msg != "" {
		v.k.errorf(p, "Bitcast: %s", msg)
		return v.k.poison(t, p)
	}
	if v.Type() == t {
		return v
	}
	return v.k.emit(&ir.Inst{Op: ir.OpBitcast, Type: t, Args: []*ir.Inst{v.in}, Pos: p})
}

// Lane returns lane i of a vector.
func (v Value) Lane(i int) Value {
	p := callerPos()
	if !v.ok("lane") {
		return Value{}
	}
	t := v.Type()
	if !t.IsVector() || i < 0 || i >= int(t.Lanes) {
		v.k.errorf(p, "Lane(%d) of %s", i, t)
		return v.k.poison(t.Elem(), p)
	}
	return v.k.emit(&ir.Inst{Op: ir.OpExtract, Type: t.Elem(), Args: []*ir.Inst{v.in}, Aux: uint64(i), Pos: p})
}

// ShuffleXor returns the value v has in the lane (LaneID ^ mask) of this subgroup. mask must
// stay below the subgroup size; v is a 32-bit scalar.
func (v Value) ShuffleXor(mask any) Value {
	p := callerPos()
	if !v.ok("shuffle") {
		return Value{}
	}
	k := v.k
	m, ok := k.operand("ShuffleXor", U32, mask, p)
	if !ok {
		return k.poison(v.Type(), p)
	}
	if m.Type() != U32 || v.Type().Lanes != 1 || v.Type().Scalar.Bits() != 32 || v.Type().Scalar == ir.Bool {
		k.errorf(p, "ShuffleXor: shuffles a 32-bit scalar by a u32 mask, got %s by %s", v.Type(), m.Type())
		return k.poison(v.Type(), p)
	}
	return k.emit(&ir.Inst{Op: ir.OpShuffleXor, Type: v.Type(), Args: []*ir.Inst{v.in, m.in}, Pos: p})
}

// Shuffle returns the value v has in the given lane of this subgroup (lane may differ between
// invocations; it must be below the subgroup size). v is a 32-bit scalar. Every invocation of
// the subgroup must reach the Shuffle together (no divergence around it).
func (v Value) Shuffle(lane any) Value {
	p := callerPos()
	if !v.ok("shuffle") {
		return Value{}
	}
	k := v.k
	l, ok := k.operand("Shuffle", U32, lane, p)
	if !ok {
		return k.poison(v.Type(), p)
	}
	if l.Type() != U32 || v.Type().Lanes != 1 || v.Type().Scalar.Bits() != 32 || v.Type().Scalar == ir.Bool {
		k.errorf(p, "Shuffle: shuffles a 32-bit scalar by a u32 lane, got %s by %s", v.Type(), l.Type())
		return k.poison(v.Type(), p)
	}
	return k.emit(&ir.Inst{Op: ir.OpShuffle, Type: v.Type(), Args: []*ir.Inst{v.in, l.in}, Pos: p})
}

// Vec builds a vector from 2 to 4 scalars of one type.
func (k *Kernel) Vec(lanes ...Value) Value {
	if k == nil {
		return Value{}
	}
	p := callerPos()
	if len(lanes) < 2 || len(lanes) > 4 {
		k.errorf(p, "Vec: %d lanes, want 2 to 4", len(lanes))
		return k.poison(F32, p)
	}
	t := lanes[0].Type()
	args := make([]*ir.Inst, len(lanes))
	for i, l := range lanes {
		if l.k != k || l.in == nil || l.Type() != t || t.IsVector() {
			k.errorf(p, "Vec: lane %d is %s, want scalar %s", i, l.Type(), t)
			return k.poison(ir.Vec(t.Scalar, len(lanes)), p)
		}
		args[i] = l.in
	}
	if !ir.Vec(t.Scalar, len(lanes)).IsValue() {
		k.errorf(p, "Vec: %s values are scalars only, a vector of them is not a value type", t)
		return k.poison(ir.Vec(ir.F32, len(lanes)), p)
	}
	return k.emit(&ir.Inst{Op: ir.OpCompose, Type: ir.Vec(t.Scalar, len(lanes)), Args: args, Pos: p})
}

// Select returns a where cond is true and b elsewhere; a and b have one type.
func (k *Kernel) Select(cond Value, a, b any) Value {
	if k == nil {
		return Value{}
	}
	p := callerPos()
	av, ok := a.(Value)
	if !ok {
		if bv, isV := b.(Value); isV {
			av, ok = k.operand("Select", bv.Type(), a, p)
		} else {
			k.errorf(p, "Select: one of a and b must be a Value")
		}
		if !ok {
			return k.poison(F32, p)
		}
	}
	bv, ok := k.operand("Select", av.Type(), b, p)
	if !ok {
		return k.poison(av.Type(), p)
	}
	if cond.k != k || cond.Type().Scalar != ir.Bool || (cond.Type().Lanes != 1 && cond.Type().Lanes != av.Type().Lanes) {
		k.errorf(p, "Select: condition is %s, want bool", cond.Type())
		return k.poison(av.Type(), p)
	}
	if av.Type() != bv.Type() {
		k.errorf(p, "Select: mismatched types %s and %s", av.Type(), bv.Type())
		return k.poison(av.Type(), p)
	}
	return k.emit(&ir.Inst{Op: ir.OpSelect, Type: av.Type(), Args: []*ir.Inst{cond.in, av.in, bv.in}, Pos: p})
}

// DotI8x4 returns the dot product of two u32 values each holding four signed 8-bit integers
// (byte 0 lowest), as i32, without saturation. Lowered to the device's packed dot instruction
// where it has one, to unpack and multiply-add elsewhere.
func (k *Kernel) DotI8x4(a, b Value) Value {
	if k == nil {
		return Value{}
	}
	p := callerPos()
	if a.k != k || b.k != k || a.Type() != U32 || b.Type() != U32 {
		k.errorf(p, "DotI8x4: needs two u32 values of packed i8x4, got %s and %s", a.Type(), b.Type())
		return k.poison(I32, p)
	}
	return k.emit(&ir.Inst{Op: ir.OpDotI8x4, Type: I32, Args: []*ir.Inst{a.in, b.in}, Pos: p})
}

// ReduceSum returns, in every invocation, the sum over the workgroup's T invocations of v in the
// canonical order (package oracle, numeric rule 4) of width T: the invocations combine by
// xor-butterfly, strides 1, 2, 4, ... (lowest first), so the result does not depend on the
// device's subgroup size. It does depend on T: for a result that no schedule changes, reduce
// with a Canon of a fixed width (Kernel.Canon). Every invocation must reach it.
func (k *Kernel) ReduceSum(v Value) Value {
	if k == nil {
		return Value{}
	}
	return k.reduce(ir.ReduceSum, v)
}

// ReduceMax is ReduceSum with max (floats: a > b ? a : b, lower lane's value as a).
func (k *Kernel) ReduceMax(v Value) Value {
	if k == nil {
		return Value{}
	}
	return k.reduce(ir.ReduceMax, v)
}

func (k *Kernel) reduce(op ir.ReduceOp, v Value) Value {
	p := callerPos()
	if v.k != k || v.in == nil || v.Type().Lanes != 1 || !(v.Type() == F32 || isInt(v.Type())) {
		k.errorf(p, "Reduce%s: reduces an f32, i32 or u32 scalar, got %s", opName2(op.String()), v.Type())
		return k.poison(F32, p)
	}
	if n := k.Lanes(); n&(n-1) != 0 {
		k.errorf(p, "Reduce%s: needs a power-of-two workgroup, this one has %d invocations", opName2(op.String()), n)
	}
	return k.emit(&ir.Inst{Op: ir.OpReduce, Type: v.Type(), Args: []*ir.Inst{v.in}, Aux: uint64(op), Pos: p})
}

// String describes the Value for messages.
func (v Value) String() string {
	if v.in == nil {
		return "Value{}"
	}
	return fmt.Sprintf("%s %s at %s", v.in.Op, v.Type(), v.in.Pos)
}
