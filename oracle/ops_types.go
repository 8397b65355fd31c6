package oracle

import (
	"fmt"
	"math"
	"math/bits"
)

// This file defines the value types beyond f32, i32, u32 and f16: bf16 arithmetic, the 8- and
// 16-bit integers with wrapping arithmetic, the horizontal ops of a vec4, and the "types"
// conformance cell that exercises them all (TypesRef).
//
// bf16 (bit patterns as uint16). A bf16 operation is the float32 operation on the exact float32
// values, rounded to bf16 with F32ToBF16 (nearest even; NaN stays NaN). float32 has
// 24 >= 2*8+2 significand bits, so for + - * / and sqrt this double rounding equals the
// correctly rounded bf16 operation (the tests check it against exact arithmetic). Floor, Min,
// Max, Neg and Abs are exact. Conversions to bf16 round once: IntToBF16 for integers.
//
// Narrow integers (int8, uint8, int16, uint16) behave as Go's: + - * and negation wrap, division
// truncates toward zero (the most negative value divided by -1 is itself), the remainder has the
// dividend's sign, shift counts are taken modulo the width. A float converts to a narrow integer
// as FloatToInt32 (NaN and out-of-range values give math.MinInt32) and keeps the low bits.

// AddBF16 returns a + b rounded to bf16.
func AddBF16(a, b uint16) uint16 { return F32ToBF16(BF16ToF32(a) + BF16ToF32(b)) }

// SubBF16 returns a - b rounded to bf16.
func SubBF16(a, b uint16) uint16 { return F32ToBF16(BF16ToF32(a) - BF16ToF32(b)) }

// MulBF16 returns a * b rounded to bf16.
func MulBF16(a, b uint16) uint16 { return F32ToBF16(BF16ToF32(a) * BF16ToF32(b)) }

// DivBF16 returns a / b rounded to bf16.
func DivBF16(a, b uint16) uint16 { return F32ToBF16(BF16ToF32(a) / BF16ToF32(b)) }

// SqrtBF16 returns the square root of a rounded to bf16.
func SqrtBF16(a uint16) uint16 { return F32ToBF16(Sqrt(BF16ToF32(a))) }

// FloorBF16 returns a rounded toward negative infinity (exact: the result is a bf16).
func FloorBF16(a uint16) uint16 {
	return F32ToBF16(float32(math.Floor(float64(BF16ToF32(a)))))
}

// MinBF16 is the IR's min on bf16: b < a ? b : a.
func MinBF16(a, b uint16) uint16 {
	if BF16ToF32(b) < BF16ToF32(a) {
		return b
	}
	return a
}

// MaxBF16 is the IR's max on bf16: a > b ? a : b (MaxOp).
func MaxBF16(a, b uint16) uint16 {
	if BF16ToF32(a) > BF16ToF32(b) {
		return a
	}
	return b
}

// IntToBF16 converts the integer i (|i| < 2^63) to bf16 with one rounding to nearest, ties to
// even. Integers from int32 and uint32 never overflow bf16.
func IntToBF16(i int64) uint16 {
	sign := uint16(0)
	m := uint64(i)
	if i < 0 {
		sign, m = 0x8000, uint64(-i)
	}
	if m == 0 {
		return sign
	}
	shift := max(bits.Len64(m)-8, 0) // keep 8 significant bits
	q := m >> shift
	if shift > 0 {
		rem, half := m&(1<<shift-1), uint64(1)<<(shift-1)
		if rem > half || rem == half && q&1 == 1 {
			q++ // 256 << shift is still exact below
		}
	}
	f := float32(q) * float32(math.Ldexp(1, shift))
	return sign | uint16(math.Float32bits(f)>>16)
}

// Dot4F32 is the dot product of two vec4s in the DSL's fixed order, each operation rounded:
// (a0*b0 + a1*b1) + (a2*b2 + a3*b3).
func Dot4F32(a, b [4]float32) float32 {
	return LaneSum4F32([4]float32{a[0] * b[0], a[1] * b[1], a[2] * b[2], a[3] * b[3]})
}

// LaneSum4F32 is the sum of a vec4's lanes in the DSL's fixed order: (v0 + v1) + (v2 + v3).
func LaneSum4F32(v [4]float32) float32 { return (v[0] + v[1]) + (v[2] + v[3]) }

// LaneMax4F32 is the largest lane in LaneSum4F32's order with MaxOp.
func LaneMax4F32(v [4]float32) float32 { return MaxOp(MaxOp(v[0], v[1]), MaxOp(v[2], v[3])) }

// LaneMin4F32 is the smallest lane in LaneSum4F32's order with the IR's min (b < a ? b : a).
func LaneMin4F32(v [4]float32) float32 { return minOp(minOp(v[0], v[1]), minOp(v[2], v[3])) }

func minOp(a, b float32) float32 {
	if b < a {
		return b
	}
	return a
}

// Per-element output counts of the types cell (TypesRef).
const (
	TypesBF16Per = 8  // bf16 conversion results
	TypesF32Per  = 22 // f32 results: bf16 arithmetic widened, vec4 ops, narrow -> float
	TypesWordPer = 16 // u32 results: comparison bits, widenings, bitcasts
	TypesIntPer  = 20 // results per narrow kind (i8, u8, i16, u16 outputs)
)

// TypesOut holds the outputs of the types cell for n elements, TypesXPer per element, element
// by element.
type TypesOut struct {
	BF16 []uint16
	F32  []float32
	Word []uint32
	I8   []int8
	U8   []uint8
	I16  []int16
	U16  []uint16
}

// narrowKind is one of the narrow integer types.
type narrowKind interface {
	~int8 | ~uint8 | ~int16 | ~uint16
}

// narrowOps computes the TypesIntPer results of the types cell for one narrow kind T of width
// bits from the i32 inputs p and q, the f32 x and the bf16 a (the table is in TypesRef's
// comment).
func narrowOps[T narrowKind](p, q int32, x float32, a uint16, c T, width uint) [TypesIntPer]T {
	var zero T
	signed := ^zero < zero
	s, t := T(p), T(q)
	d := t
	if d == 0 {
		d = 1
	}
	cnt := uint(t) & (width - 1)
	var r [TypesIntPer]T
	r[0] = s + t
	r[1] = s - t
	r[2] = s * t
	r[3] = s / d
	r[4] = s % d
	r[5] = s << cnt
	r[6] = s >> cnt
	r[7] = zero - s
	if signed {
		r[8] = s
		if s < 0 {
			r[8] = -s
		}
	} else {
		r[8] = s * ^zero
	}
	r[9] = ^s
	r[10] = s & t
	r[11] = s | t
	r[12] = s ^ t
	r[13] = min(s, t)
	r[14] = max(s, t)
	r[15] = T(FloatToInt32(x))
	r[16] = T(FloatToInt32(BF16ToF32(a)))
	r[17] = T(int32(s) - 1000)
	acc := zero
	for j := 0; j < 3; j++ {
		acc = acc*s + t
	}
	r[18] = acc
	r[19] = s + c
	return r
}

// cmpBits is the types cell's comparison word: lt | le<<1 | eq<<2 | ne<<3 | gt<<4 | ge<<5.
func cmpBits(lt, le, eq, ne, gt, ge bool) uint32 {
	var w uint32
	for i, b := range []bool{lt, le, eq, ne, gt, ge} {
		if b {
			w |= 1 << i
		}
	}
	return w
}

func cmpInt[T narrowKind](s, t T) uint32 {
	return cmpBits(s < t, s <= t, s == t, s != t, s > t, s >= t)
}

// TypesRef is the oracle of the types cell. Inputs, per element i < n: x[i] (f32), a = ab[2i]
// and b = ab[2i+1] (bf16), p = pq[2i] and q = pq[2i+1] (i32), v = vw[2i] and w = vw[2i+1]
// (vec4 of f32). Outputs per element, in order:
//
//	BF16 (8):  bf16(x), bf16(p), bf16(uint32(p)), bf16(int16(p)), the bits uint16(p) as a
//	           bf16, bf16(x) through a shared bf16 array, bf16(q), bf16(uint32(q))
//	F32 (22):  a+b, a-b, a*b, a/b, sqrt(a), floor(a), min(a,b), max(a,b), -a, |a| (bf16 ops,
//	           widened exactly), the bf16 acc = a then 3 times acc = acc*b + a, a + bf16(1.5),
//	           Dot4F32(v, w), LaneSum4F32(v), LaneMax4F32(v), LaneMin4F32(v), f32(int8(p)),
//	           f32(uint16(p)), f32(f16(a)), f32(f16(int8(p))), f32(bf16(f16(x))), sqrt(b)
//	Word (16): comparison bits (cmpBits) of int8(p) vs int8(q), uint8, int16, uint16, then of a
//	           vs b; the bits of a; uint32(int32(int8(p))), uint32(int8(p)),
//	           uint32(int32(uint16(p))), uint32(uint8(int8(p))), uint32(int32(int16(uint16(p)))),
//	           uint32(uint8(x)), uint32(int32(int16(x))), uint32(int32(int8(a))),
//	           uint32(int32(int16(uint8(p)))), uint32(uint16(int8(int16(p))))
//	I8, U8, I16, U16 (20 each), with s = T(p), t = T(q), d = t or 1 where t is 0, c = 100,
//	           200, 30000, 60000: s+t, s-t, s*t, s/d, s%d, s<<t, s>>t (counts modulo the width),
//	           0-s, |s| (signed) or s*max (unsigned), ^s, s&t, s|t, s^t, min, max, T(x), T(a)
//	           (floats as FloatToInt32, low bits), T(int32(s) - 1000), acc = 0 then 3 times
//	           acc = acc*s + t, s+c.
//
// f16 conversions round to nearest even (F32ToF16). TypesRef returns an error when the input
// lengths disagree.
func TypesRef(x []float32, ab []uint16, pq []int32, vw [][4]float32) (TypesOut, error) {
	n := len(x)
	if len(ab) != 2*n || len(pq) != 2*n || len(vw) != 2*n {
		return TypesOut{}, fmt.Errorf("oracle: types: %d values with %d bf16, %d i32 and %d vec4 inputs, want twice as many", n, len(ab), len(pq), len(vw))
	}
	o := TypesOut{
		BF16: make([]uint16, 0, n*TypesBF16Per), F32: make([]float32, 0, n*TypesF32Per),
		Word: make([]uint32, 0, n*TypesWordPer),
		I8:   make([]int8, 0, n*TypesIntPer), U8: make([]uint8, 0, n*TypesIntPer),
		I16: make([]int16, 0, n*TypesIntPer), U16: make([]uint16, 0, n*TypesIntPer),
	}
	f16 := func(f float32) float32 { return F16ToF32(F32ToF16(f)) }
	for i := 0; i < n; i++ {
		xi, a, b, p, q, v, w := x[i], ab[2*i], ab[2*i+1], pq[2*i], pq[2*i+1], vw[2*i], vw[2*i+1]
		o.BF16 = append(o.BF16, F32ToBF16(xi), IntToBF16(int64(p)), IntToBF16(int64(uint32(p))),
			IntToBF16(int64(int16(p))), uint16(p), F32ToBF16(xi), IntToBF16(int64(q)), IntToBF16(int64(uint32(q))))

		acc := a
		for j := 0; j < 3; j++ {
			acc = AddBF16(MulBF16(acc, b), a)
		}
		wf := BF16ToF32
		o.F32 = append(o.F32, wf(AddBF16(a, b)), wf(SubBF16(a, b)), wf(MulBF16(a, b)), wf(DivBF16(a, b)),
			wf(SqrtBF16(a)), wf(FloorBF16(a)), wf(MinBF16(a, b)), wf(MaxBF16(a, b)), wf(a^0x8000), wf(a&0x7fff),
			wf(acc), wf(AddBF16(a, F32ToBF16(1.5))),
			Dot4F32(v, w), LaneSum4F32(v), LaneMax4F32(v), LaneMin4F32(v),
			float32(int8(p)), float32(uint16(p)), f16(wf(a)), f16(float32(int8(p))),
			wf(F32ToBF16(f16(xi))), wf(SqrtBF16(b)))

		fa, fb := wf(a), wf(b)
		o.Word = append(o.Word,
			cmpInt(int8(p), int8(q)), cmpInt(uint8(p), uint8(q)), cmpInt(int16(p), int16(q)), cmpInt(uint16(p), uint16(q)),
			cmpBits(fa < fb, fa <= fb, fa == fb, fa != fb, fa > fb, fa >= fb),
			uint32(a), uint32(int32(int8(p))), uint32(int8(p)), uint32(int32(uint16(p))), uint32(uint8(int8(p))),
			uint32(int32(int16(uint16(p)))), uint32(uint8(FloatToInt32(xi))), uint32(int32(int16(FloatToInt32(xi)))),
			uint32(int32(int8(FloatToInt32(fa)))), uint32(int32(int16(uint8(p)))), uint32(uint16(int8(int16(p)))))

		r8 := narrowOps[int8](p, q, xi, a, 100, 8)
		o.I8 = append(o.I8, r8[:]...)
		ru8 := narrowOps[uint8](p, q, xi, a, 200, 8)
		o.U8 = append(o.U8, ru8[:]...)
		r16 := narrowOps[int16](p, q, xi, a, 30000, 16)
		o.I16 = append(o.I16, r16[:]...)
		ru16 := narrowOps[uint16](p, q, xi, a, 60000, 16)
		o.U16 = append(o.U16, ru16[:]...)
	}
	return o, nil
}
