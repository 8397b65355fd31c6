package ir

import (
	"fmt"
	"math"
)

// Scalar is the kind of a scalar value or buffer element.
type Scalar uint8

// Scalar kinds. I8, U8, I16 and U16 are buffer and shared-array elements (a load widens them to
// I32/U32 and a store of a 32-bit value narrows, wrapping) and scalar value types whose
// arithmetic wraps at their width. F16 and BF16 are element and value types; a BF16 value is
// a bfloat16 (8 significand bits, f32's exponent range) whose arithmetic is the f32 operation
// rounded to nearest even (package lower legalizes narrow and bf16 values to 32 bits, so no
// backend sees them).
const (
	Void Scalar = iota
	Bool
	I8
	U8
	I16
	U16
	I32
	U32
	F16
	F32
	F64  // used by lowering only (exact division fallback); not a DSL value type
	BF16 // bfloat16; numbered last so the kinds before it keep their numbers
)

var scalarNames = [...]string{"void", "bool", "i8", "u8", "i16", "u16", "i32", "u32", "f16", "f32", "f64", "bf16"}

// String returns the name of Scalar as the IR text form prints it.
func (s Scalar) String() string {
	if int(s) < len(scalarNames) {
		return scalarNames[s]
	}
	return fmt.Sprintf("scalar(%d)", uint8(s))
}

// Bits is the width of s in bits (bool: 32, the size it has in memory on every target).
func (s Scalar) Bits() int {
	switch s {
	case I8, U8:
		return 8
	case I16, U16, F16, BF16:
		return 16
	case Bool, I32, U32, F32:
		return 32
	case F64:
		return 64
	}
	return 0
}

// IsFloat reports whether s is a floating-point kind.
func (s Scalar) IsFloat() bool { return s == F16 || s == F32 || s == F64 || s == BF16 }

// IsInt reports whether s is an integer kind of any width and signedness.
func (s Scalar) IsInt() bool { return s >= I8 && s <= U32 }

// IsNarrow reports whether s is an 8- or 16-bit integer kind (i8, u8, i16, u16).
func (s Scalar) IsNarrow() bool { return s >= I8 && s <= U16 }

// IsSigned reports whether s is a signed integer kind.
func (s Scalar) IsSigned() bool { return s == I8 || s == I16 || s == I32 }

// Widened is the value type a buffer element of kind s loads as: narrow integers widen to
// 32 bits keeping signedness; every other kind is itself.
func (s Scalar) Widened() Scalar {
	switch s {
	case I8, I16:
		return I32
	case U8, U16:
		return U32
	}
	return s
}

// Type is a value type: a scalar (Lanes == 1) or a small vector of 2 to 4 lanes.
type Type struct {
	Scalar Scalar
	Lanes  uint8
}

// Common types.
var (
	TVoid = Type{} // the zero Type: instructions without a result
	TBool = Type{Bool, 1}
	TI32  = Type{I32, 1}
	TU32  = Type{U32, 1}
	TF16  = Type{F16, 1}
	TF32  = Type{F32, 1}
	TF64  = Type{F64, 1}
)

// S returns the scalar type of kind s.
func S(s Scalar) Type { return Type{s, 1} }

// Vec returns the vector type of n lanes of kind s.
func Vec(s Scalar, n int) Type { return Type{s, uint8(n)} }

// IsVector reports whether t has more than one lane.
func (t Type) IsVector() bool { return t.Lanes > 1 }

// Elem is the scalar type of one lane of t.
func (t Type) Elem() Type { return Type{t.Scalar, 1} }

// String describes the Type for messages.
func (t Type) String() string {
	if t.Lanes > 1 {
		return fmt.Sprintf("vec%d<%s>", t.Lanes, t.Scalar)
	}
	return t.Scalar.String()
}

// IsValue reports whether t may be the type of a computed value: a scalar or vector of 2 to 4
// lanes of bool, i32, u32, f16, f32 or f64, or a scalar (never a vector) i8, u8, i16, u16 or
// bf16.
func (t Type) IsValue() bool {
	switch t.Scalar {
	case Bool, I32, U32, F16, F32, F64:
		return t.Lanes >= 1 && t.Lanes <= 4
	case I8, U8, I16, U16, BF16:
		return t.Lanes == 1
	}
	return false
}

// Stride is the bytes one element of type t takes in a storage buffer: a vec3 is padded to four
// lanes, as Vulkan lays it out, and a bool takes 32 bits.
func (t Type) Stride() int {
	lanes := max(int(t.Lanes), 1)
	if lanes == 3 {
		lanes = 4
	}
	return max(t.Scalar.Bits()/8, 1) * lanes
}

// BF16Bits rounds v to the nearest bfloat16, ties to even, and returns its bit pattern: one
// rounding from v (a float64 constant is not rounded to float32 first). Subnormals are rounded,
// not flushed; a magnitude at or past the midpoint between the largest finite bfloat16 and 2^128
// gives an infinity; the sign of zero is kept; a NaN gives a quiet NaN of v's sign (0x7fc0).
// For a v that is a float32 this is package oracle's F32ToBF16 on every non-NaN input.
func BF16Bits(v float64) uint16 {
	sign := uint16(0)
	if math.Signbit(v) {
		sign = 0x8000
		v = -v
	}
	switch {
	case math.IsNaN(v):
		return sign | 0x7fc0
	case math.IsInf(v, 0):
		return sign | 0x7f80
	case v == 0:
		return sign
	}
	// The spacing of bfloat16 values at v: 2^(e-8) for v in [2^(e-1), 2^e), never below the
	// subnormal spacing 2^-133.
	_, e := math.Frexp(v)
	q := max(e-8, -133)
	r := math.Ldexp(math.RoundToEven(math.Ldexp(v, -q)), q) // both scalings are exact
	if r >= 0x1p128 {
		return sign | 0x7f80
	}
	return sign | uint16(math.Float32bits(float32(r))>>16)
}

// BF16Float returns the value of the bfloat16 bit pattern h (exact; a NaN stays a NaN).
func BF16Float(h uint16) float64 { return float64(math.Float32frombits(uint32(h) << 16)) }
