package dsl

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/ir"
)

// BF16 is bfloat16: f32's sign and 8 exponent bits with 7 stored significand bits (8 with the
// implicit one), 16 bits in memory. It is an element type of buffers and shared arrays and a
// scalar value type, as F16 is:
//
//   - Conversions to bf16 (Value.BF16, and a Go number given where a bf16 is expected) round
//     once to nearest, ties to even, from any source (f32, f16, i32, u32, the narrow
//     integers); subnormals are rounded, not flushed; overflow gives ±Inf; a NaN stays a NaN
//     (sign kept, quiet: package oracle's F32ToBF16). bf16 -> f32 is exact.
//   - Add, Sub, Mul, Div and Sqrt are the f32 operation on the exact f32 values, rounded to
//     bf16 (nearest even). f32 carries 24 significand bits >= 2*8+2, so this double rounding
//     is innocuous (Figueroa; Roux 2014): the result is the correctly rounded bf16 operation,
//     in the subnormal range too (bf16 and f32 share the exponent range and f32's subnormal
//     grid is 16 bits finer). Floor, Min, Max, Neg and Abs are exact; comparisons compare the
//     exact values (f32's NaN rules).
//   - bf16 values are scalars: a vector of bf16 is not a value type (convert each Lane).
//
// No backend knows bf16: package lower rewrites every bf16 value to an f32 holding it exactly,
// with an integer round-to-nearest-even after each rounded operation, and bf16 elements to u16
// storage (a load shifts the 16 bits to the top of an f32, a store keeps the top 16 bits).
//
// I8, U8, I16 and U16 are value types too (scalars): Value.I8, U8, I16 and U16 make them, and
// their arithmetic wraps at their width (Add, Sub, Mul, Neg, Abs, Shl, and Div of the most
// negative value by -1, all as Go's int8, uint8, ... arithmetic), shift counts are taken modulo
// the width, Div truncates toward zero (division by zero is undefined, as for i32), Rem has the
// dividend's sign, comparisons compare values. A narrow value stores into a buffer or shared
// array of its own type as itself; a load from a narrow buffer still gives the 32-bit value
// (Load(i).I8() gives the element as an i8). Package lower legalizes narrow values to 32-bit
// ones re-extended (sign or zero) after each operation that can leave the range.
var BF16 = ir.S(ir.BF16)

// narrowRange is the range of values of the narrow integer kind s.
func narrowRange(s ir.Scalar) (lo, hi float64) {
	switch s {
	case ir.I8:
		return math.MinInt8, math.MaxInt8
	case ir.U8:
		return 0, math.MaxUint8
	case ir.I16:
		return math.MinInt16, math.MaxInt16
	}
	return 0, math.MaxUint16
}

// bitcast16 explains why a bitcast between from and to is not supported: f16 and the other
// 16-bit kinds (i16, u16, bf16) would need f16 bits in a 32-bit register on targets with f16
// storage only. "" when it is supported.
func bitcast16(from, to Type) string {
	other := func(t Type) bool {
		return t.Lanes == 1 && (t.Scalar == ir.I16 || t.Scalar == ir.U16 || t.Scalar == ir.BF16)
	}
	if (from == F16 && other(to)) || (to == F16 && other(from)) {
		return fmt.Sprintf("%s to %s is not supported (bitcast a u32 to Vec(F16, 2) for f16 bits)", from, to)
	}
	return ""
}

// narrow converts v to the scalar kind s, which only scalars have.
func (v Value) narrow(name string, s ir.Scalar) Value {
	p := callerPos()
	if !v.ok(name) {
		return Value{}
	}
	if v.Type().IsVector() {
		v.k.errorf(p, "%s: %s is a vector; %s values are scalars (convert each Lane)", name, v.Type(), s)
		return v.k.poison(ir.S(s), p)
	}
	return v.convert(ir.OpConvert, s)
}

// BF16 converts v to bf16: one rounding to nearest, ties to even, from any numeric type; a NaN
// stays a NaN. v must be a scalar.
func (v Value) BF16() Value { return v.narrow("BF16", ir.BF16) }

// I8 converts v to i8. An integer keeps its low 8 bits (Go's int8(x)); a float (f32, f16, bf16)
// converts as package oracle's FloatToInt32 (truncation toward zero; NaN and values outside
// [-2^31, 2^31) give math.MinInt32) and then keeps the low 8 bits of that int32. v must be a
// scalar.
func (v Value) I8() Value { return v.narrow("I8", ir.I8) }

// U8 converts v to u8: the low 8 bits of the integer, or of the float's FloatToInt32 (see I8).
func (v Value) U8() Value { return v.narrow("U8", ir.U8) }

// I16 converts v to i16: the low 16 bits of the integer, or of the float's FloatToInt32 (see I8).
func (v Value) I16() Value { return v.narrow("I16", ir.I16) }

// U16 converts v to u16: the low 16 bits of the integer, or of the float's FloatToInt32 (see I8).
func (v Value) U16() Value { return v.narrow("U16", ir.U16) }

// Lanes returns the lanes of v in order (v itself for a scalar).
func (v Value) Lanes() []Value {
	if !v.ok("lanes") {
		return nil
	}
	t := v.Type()
	if !t.IsVector() {
		return []Value{v}
	}
	p := callerPos()
	out := make([]Value, t.Lanes)
	for i := range out {
		out[i] = v.k.emit(&ir.Inst{Op: ir.OpExtract, Type: t.Elem(), Args: []*ir.Inst{v.in}, Aux: uint64(i), Pos: p})
	}
	return out
}

// horizontal combines the lanes of v pairwise in a fixed order: (l0 op l1) for two lanes,
// (l0 op l1) op l2 for three, (l0 op l1) op (l2 op l3) for four (the lower lanes on the left).
func (v Value) horizontal(name string, op func(a, b Value) Value, check func(Type) bool, what string) Value {
	p := callerPos()
	if !v.ok(name) {
		return Value{}
	}
	if !check(v.Type()) {
		v.k.errorf(p, "%s: needs %s, got %s", name, what, v.Type())
		return v.k.poison(v.Type().Elem(), p)
	}
	l := v.Lanes()
	switch len(l) {
	case 1:
		return l[0]
	case 2:
		return op(l[0], l[1])
	case 3:
		return op(op(l[0], l[1]), l[2])
	}
	return op(op(l[0], l[1]), op(l[2], l[3]))
}

// LaneSum returns the sum of v's lanes in a fixed order, the same on every backend:
// (l0 + l1) + (l2 + l3) for a vec4, (l0 + l1) + l2 for a vec3, l0 + l1 for a vec2, v for a
// scalar. Each float addition rounds (to nearest even); integers wrap.
func (v Value) LaneSum() Value {
	return v.horizontal("LaneSum", func(a, b Value) Value { return a.Add(b) }, isNumeric, "numbers")
}

// LaneMax returns the largest lane of v, combined in LaneSum's order with Max (floats:
// a > b ? a : b, so a NaN lane on the right is passed over and one on the left is kept).
func (v Value) LaneMax() Value {
	return v.horizontal("LaneMax", func(a, b Value) Value { return a.Max(b) }, isNumeric, "numbers")
}

// LaneMin returns the smallest lane of v, combined in LaneSum's order with Min (floats:
// b < a ? b : a).
func (v Value) LaneMin() Value {
	return v.horizontal("LaneMin", func(a, b Value) Value { return a.Min(b) }, isNumeric, "numbers")
}

// Dot returns the dot product of v and o (vectors of one numeric type, or scalars): the
// lane-wise products, each rounded, summed in LaneSum's order, never fused into FMAs. For vec4s
// of f32: (v0*o0 + v1*o1) + (v2*o2 + v3*o3), each operation rounded to nearest even.
func (v Value) Dot(o any) Value {
	if !v.ok("dot") {
		return Value{}
	}
	return v.Mul(o).LaneSum()
}

// Splat returns the vector of n (2 to 4) lanes each equal to the scalar x.
func (k *Kernel) Splat(x Value, n int) Value {
	if k == nil {
		return Value{}
	}
	p := callerPos()
	if n < 2 || n > 4 {
		k.errorf(p, "Splat: %d lanes, want 2 to 4", n)
		return k.poison(F32, p)
	}
	if x.k != k || x.in == nil || x.Type().IsVector() || !ir.Vec(x.Type().Scalar, n).IsValue() {
		k.errorf(p, "Splat: needs a scalar of this kernel that vectors hold, got %s", x.Type())
		return k.poison(ir.Vec(ir.F32, n), p)
	}
	lanes := make([]*ir.Inst, n)
	for i := range lanes {
		lanes[i] = x.in
	}
	return k.emit(&ir.Inst{Op: ir.OpCompose, Type: ir.Vec(x.Type().Scalar, n), Args: lanes, Pos: p})
}
