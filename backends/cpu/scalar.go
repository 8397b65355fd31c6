package cpu

import "math"

// Scalar semantics of the executor, one lane at a time. Every value lives in a 32-bit word
// (bool as 0 or 1, i32 as its two's-complement bits, f16 in the low 16 bits, f32 as its bits)
// or, for f64, a 64-bit word. The loops in ops_gen.go call these functions; the Go compiler
// inlines them. The rules are the numeric contract's (package oracle) and, where the IR leaves a
// result undefined, the C-family printer's os_* helpers (package backends/cfamily).

func f32(x uint32) float32 { return math.Float32frombits(x) }
func b32(f float32) uint32 { return math.Float32bits(f) }
func f64(x uint64) float64 { return math.Float64frombits(x) }
func b64(f float64) uint64 { return math.Float64bits(f) }
func bit(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// h2f converts the f16 in the low 16 bits of x to float32, exactly (a NaN stays a NaN, made
// quiet and keeping its payload, as package oracle's F16ToF32).
func h2f(x uint32) float32 {
	sign := (x & 0x8000) << 16
	exp := (x >> 10) & 0x1f
	man := x & 0x3ff
	switch exp {
	case 0x1f:
		if man != 0 {
			return math.Float32frombits(sign | 0x7fc00000 | man<<13)
		}
		return math.Float32frombits(sign | 0x7f800000)
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(man) * (1.0 / (1 << 24)) // exact: man * 2^-24 is a normal float32
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// f2h rounds f to the nearest f16, ties to even (subnormals rounded, overflow to infinity, a NaN
// to the quiet NaN 0x7e00 of f's sign), as package oracle's F32ToF16.
func f2h(f float32) uint32 {
	b := math.Float32bits(f)
	sign := (b >> 16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | h
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | h
}

// d2h rounds x to the nearest f16, ties to even, in one rounding (not through float32).
func d2h(x float64) uint32 {
	sign := uint32(math.Float64bits(x)>>48) & 0x8000
	a := math.Abs(x)
	switch {
	case a != a:
		return sign | 0x7e00
	case a >= 65520:
		return sign | 0x7c00
	case a < 0x1p-14:
		return sign | uint32(math.RoundToEven(a*0x1p24)) // exact scaling; 0x400 is the smallest normal
	}
	frac, exp := math.Frexp(a) // a = frac * 2^exp, frac in [0.5, 1)
	m := uint32(math.RoundToEven(frac * 2048))
	return sign | (uint32(exp+14)<<10 + m - 1024) // m == 2048 carries into the exponent
}

// h2d converts an f16 to float64, exactly.
func h2d(x uint32) float64 { return float64(h2f(x)) }

// Float to integer conversions truncate toward zero; NaN and values out of range give 0x80000000
// (os_f32_to_i32, os_f32_to_u32, os_f64_to_i32, os_f64_to_u32).

func f2i(x float32) uint32 {
	if x >= -2147483648.0 && x < 2147483648.0 {
		return uint32(int32(x))
	}
	return 0x80000000
}

func f2u(x float32) uint32 {
	if x > -1.0 && x < 4294967296.0 {
		return uint32(int64(x))
	}
	return 0x80000000
}

func d2i(x float64) uint32 {
	if x > -2147483649.0 && x < 2147483648.0 {
		return uint32(int32(x))
	}
	return 0x80000000
}

func d2u(x float64) uint32 {
	if x > -1.0 && x < 4294967296.0 {
		return uint32(int64(x))
	}
	return 0x80000000
}

// Integer division and remainder never trap (os_div_i32, os_rem_i32, os_div_u32, os_rem_u32):
// x/0 = -1 (0xffffffff unsigned), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0.

func divI32(x, y uint32) uint32 {
	a, b := int32(x), int32(y)
	switch b {
	case 0:
		return 0xffffffff
	case -1:
		return -x
	}
	return uint32(a / b)
}

func remI32(x, y uint32) uint32 {
	a, b := int32(x), int32(y)
	switch b {
	case 0:
		return x
	case -1:
		return 0
	}
	return uint32(a % b)
}

func divU32(x, y uint32) uint32 {
	if y == 0 {
		return 0xffffffff
	}
	return x / y
}

func remU32(x, y uint32) uint32 {
	if y == 0 {
		return x
	}
	return x % y
}

// The element-wise operations, named <op><kind>: F32, H16 (f16), F64, I32, U32, B (bool). Float
// min is b < a ? b : a and max a > b ? a : b (a NaN on the right wins min and max only through
// these comparisons); float neg and abs flip or clear the sign bit.

func addF32(x, y uint32) uint32 { return b32(f32(x) + f32(y)) }
func subF32(x, y uint32) uint32 { return b32(f32(x) - f32(y)) }
func mulF32(x, y uint32) uint32 { return b32(f32(x) * f32(y)) }
func divF32(x, y uint32) uint32 { return b32(f32(x) / f32(y)) }
func minF32(x, y uint32) uint32 {
	if f32(y) < f32(x) {
		return y
	}
	return x
}
func maxF32(x, y uint32) uint32 {
	if f32(x) > f32(y) {
		return x
	}
	return y
}
func eqF32(x, y uint32) uint32  { return bit(f32(x) == f32(y)) }
func neF32(x, y uint32) uint32  { return bit(f32(x) != f32(y)) }
func ltF32(x, y uint32) uint32  { return bit(f32(x) < f32(y)) }
func leF32(x, y uint32) uint32  { return bit(f32(x) <= f32(y)) }
func gtF32(x, y uint32) uint32  { return bit(f32(x) > f32(y)) }
func geF32(x, y uint32) uint32  { return bit(f32(x) >= f32(y)) }
func negF32(x uint32) uint32    { return x ^ 0x80000000 }
func absF32(x uint32) uint32    { return x &^ 0x80000000 }
func sqrtF32(x uint32) uint32   { return b32(float32(math.Sqrt(float64(f32(x))))) }
func floorF32(x uint32) uint32  { return b32(float32(math.Floor(float64(f32(x))))) }
func addH16(x, y uint32) uint32 { return f2h(h2f(x) + h2f(y)) }
func subH16(x, y uint32) uint32 { return f2h(h2f(x) - h2f(y)) }
func mulH16(x, y uint32) uint32 { return f2h(h2f(x) * h2f(y)) }
func divH16(x, y uint32) uint32 { return f2h(h2f(x) / h2f(y)) }
func eqH16(x, y uint32) uint32  { return bit(h2f(x) == h2f(y)) }
func neH16(x, y uint32) uint32  { return bit(h2f(x) != h2f(y)) }
func ltH16(x, y uint32) uint32  { return bit(h2f(x) < h2f(y)) }
func leH16(x, y uint32) uint32  { return bit(h2f(x) <= h2f(y)) }
func gtH16(x, y uint32) uint32  { return bit(h2f(x) > h2f(y)) }
func geH16(x, y uint32) uint32  { return bit(h2f(x) >= h2f(y)) }
func negH16(x uint32) uint32    { return x ^ 0x8000 }
func absH16(x uint32) uint32    { return x &^ 0x8000 }
func sqrtH16(x uint32) uint32   { return f2h(float32(math.Sqrt(float64(h2f(x))))) }
func floorH16(x uint32) uint32  { return f2h(float32(math.Floor(float64(h2f(x))))) }
func addF64(x, y uint64) uint64 { return b64(f64(x) + f64(y)) }
func subF64(x, y uint64) uint64 { return b64(f64(x) - f64(y)) }
func mulF64(x, y uint64) uint64 { return b64(f64(x) * f64(y)) }
func divF64(x, y uint64) uint64 { return b64(f64(x) / f64(y)) }
func eqF64(x, y uint64) uint32  { return bit(f64(x) == f64(y)) }
func neF64(x, y uint64) uint32  { return bit(f64(x) != f64(y)) }
func ltF64(x, y uint64) uint32  { return bit(f64(x) < f64(y)) }
func leF64(x, y uint64) uint32  { return bit(f64(x) <= f64(y)) }
func gtF64(x, y uint64) uint32  { return bit(f64(x) > f64(y)) }
func geF64(x, y uint64) uint32  { return bit(f64(x) >= f64(y)) }
func negF64(x uint64) uint64    { return x ^ 1<<63 }
func absF64(x uint64) uint64    { return x &^ (1 << 63) }
func sqrtF64(x uint64) uint64   { return b64(math.Sqrt(f64(x))) }
func floorF64(x uint64) uint64  { return b64(math.Floor(f64(x))) }
func addI32(x, y uint32) uint32 { return x + y }
func subI32(x, y uint32) uint32 { return x - y }
func mulI32(x, y uint32) uint32 { return x * y }
func andI32(x, y uint32) uint32 { return x & y }
func orI32(x, y uint32) uint32  { return x | y }
func xorI32(x, y uint32) uint32 { return x ^ y }
func shlI32(x, y uint32) uint32 { return x << (y & 31) }
func shrI32(x, y uint32) uint32 { return uint32(int32(x) >> (y & 31)) }
func shrU32(x, y uint32) uint32 { return x >> (y & 31) }
func eqI32(x, y uint32) uint32  { return bit(x == y) }
func neI32(x, y uint32) uint32  { return bit(x != y) }
func ltI32(x, y uint32) uint32  { return bit(int32(x) < int32(y)) }
func leI32(x, y uint32) uint32  { return bit(int32(x) <= int32(y)) }
func gtI32(x, y uint32) uint32  { return bit(int32(x) > int32(y)) }
func geI32(x, y uint32) uint32  { return bit(int32(x) >= int32(y)) }
func ltU32(x, y uint32) uint32  { return bit(x < y) }
func leU32(x, y uint32) uint32  { return bit(x <= y) }
func gtU32(x, y uint32) uint32  { return bit(x > y) }
func geU32(x, y uint32) uint32  { return bit(x >= y) }
func negI32(x uint32) uint32    { return -x }
func notI32(x uint32) uint32    { return ^x }
func notB(x uint32) uint32      { return x ^ 1 }
func absI32(x uint32) uint32 {
	if int32(x) < 0 {
		return -x
	}
	return x
}
func minI32(x, y uint32) uint32 {
	if int32(y) < int32(x) {
		return y
	}
	return x
}
func maxI32(x, y uint32) uint32 {
	if int32(x) > int32(y) {
		return x
	}
	return y
}
func minU32(x, y uint32) uint32 {
	if y < x {
		return y
	}
	return x
}
func maxU32(x, y uint32) uint32 {
	if x > y {
		return x
	}
	return y
}
func minH16(x, y uint32) uint32 {
	if h2f(y) < h2f(x) {
		return y
	}
	return x
}
func maxH16(x, y uint32) uint32 {
	if h2f(x) > h2f(y) {
		return x
	}
	return y
}
func minF64(x, y uint64) uint64 {
	if f64(y) < f64(x) {
		return y
	}
	return x
}
func maxF64(x, y uint64) uint64 {
	if f64(x) > f64(y) {
		return x
	}
	return y
}

// Conversions, named cvt<from><to>. i32 <-> u32 keeps the bits (no conversion is made for it);
// integers to f16 go through f32 (exact below 2^24, and every larger value overflows f16).

func cvtI32F32(x uint32) uint32 { return b32(float32(int32(x))) }
func cvtU32F32(x uint32) uint32 { return b32(float32(x)) }
func cvtI32H16(x uint32) uint32 { return f2h(float32(int32(x))) }
func cvtU32H16(x uint32) uint32 { return f2h(float32(x)) }
func cvtI32F64(x uint32) uint64 { return b64(float64(int32(x))) }
func cvtU32F64(x uint32) uint64 { return b64(float64(x)) }
func cvtF32I32(x uint32) uint32 { return f2i(f32(x)) }
func cvtF32U32(x uint32) uint32 { return f2u(f32(x)) }
func cvtH16I32(x uint32) uint32 { return f2i(h2f(x)) }
func cvtH16U32(x uint32) uint32 { return f2u(h2f(x)) }
func cvtF64I32(x uint64) uint32 { return d2i(f64(x)) }
func cvtF64U32(x uint64) uint32 { return d2u(f64(x)) }
func cvtF32H16(x uint32) uint32 { return f2h(f32(x)) }
func cvtH16F32(x uint32) uint32 { return b32(h2f(x)) }
func cvtF32F64(x uint32) uint64 { return b64(float64(f32(x))) }
func cvtH16F64(x uint32) uint64 { return b64(h2d(x)) }
func cvtF64F32(x uint64) uint32 { return b32(float32(f64(x))) }
func cvtF64H16(x uint64) uint32 { return d2h(f64(x)) }

// dotI8x4 is the signed 4 x i8 packed dot product, wrapping (it cannot overflow).
func dotI8x4(a, b uint32) uint32 {
	s := int32(int8(a))*int32(int8(b)) + int32(int8(a>>8))*int32(int8(b>>8)) +
		int32(int8(a>>16))*int32(int8(b>>16)) + int32(int8(a>>24))*int32(int8(b>>24))
	return uint32(s)
}

// fmaF32 is x*y + z computed exactly and rounded once to float32, nearest even (IEEE
// fusedMultiplyAdd, package oracle's Fma). The product of two float32 values is exact in
// float64 and the float64 sum s has an exact error e (TwoSum). Rounding s to float32 gives the
// correctly rounded result unless s lies exactly halfway between two float32 values while e is
// not zero: the exact sum is then on e's side of that point, so s moves one float64 step toward
// it first.
func fmaF32(x, y, z uint32) uint32 {
	p := float64(f32(x)) * float64(f32(y))
	c := float64(f32(z))
	s := p + c
	if math.IsInf(s, 0) || s != s {
		return b32(float32(s))
	}
	bp := s - p
	e := (p - (s - bp)) + (c - bp)
	if e != 0 {
		if f := float32(s); float64(f) != s {
			var lo, hi float64
			if float64(f) < s {
				lo, hi = float64(f), float64(math.Nextafter32(f, float32(math.Inf(1))))
			} else {
				lo, hi = float64(math.Nextafter32(f, float32(math.Inf(-1)))), float64(f)
			}
			// Past the largest float32 the next value is 2^128 (the rounding to infinity).
			if math.IsInf(hi, 1) {
				hi = 0x1p128
			}
			if math.IsInf(lo, -1) {
				lo = -0x1p128
			}
			if lo+hi == 2*s {
				s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
			}
		}
	}
	return b32(float32(s))
}
