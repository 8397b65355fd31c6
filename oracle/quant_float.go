package oracle

import (
	"encoding/binary"
	"math"
)

// This file holds the scalar conversions every GGUF format is built on (f16, bf16, and the E8M0 and
// UE4M3 scale bytes of mxfp4 and nvfp4), the f32/f16/bf16 "block" formats, and the small numeric
// helpers that reproduce ggml's C float and integer conversions bit for bit.

// F16ToF32 converts an IEEE 754 binary16 bit pattern to float32. The conversion is exact for every
// finite value (normal and subnormal halves are all representable in float32) and for ±Inf. A NaN
// keeps its sign and payload (the 10 mantissa bits move to the top of the float32 mantissa) and
// comes out quiet, which is what ggml's ggml_compute_fp16_to_fp32 yields on x86.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		if man == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return math.Float32frombits(sign | 0x7fc00000 | man<<13)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal half: man * 2^-24. Normalize into a float32 normal.
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	}
}

// F32ToF16 converts a float32 to an IEEE 754 binary16 bit pattern with round-to-nearest-even,
// byte-identical to ggml's GGML_FP32_TO_FP16 (ggml_compute_fp32_to_fp16):
//
//   - finite values round to nearest, ties to even, including into and within the subnormal range
//     (|x| <= 2^-25 rounds to a signed zero, a tie at exactly 2^-25 goes to zero);
//   - |x| >= 65520 (the midpoint between 65504 and 2^16) and ±Inf give ±Inf;
//   - a NaN gives sign|0x7E00: the sign is kept, the payload is not;
//   - the sign of zero is kept.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Result is a half subnormal (or zero): value = m * 2^(e-14) units of 2^-24.
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++ // may carry into the smallest normal, which is the right encoding
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: the right encoding
	}
	return sign | uint16(h)
}

// BF16ToF32 converts a bfloat16 bit pattern to float32: the 16 bits become the top half of the
// float32, so every value, NaN payloads included, converts exactly (ggml_compute_bf16_to_fp32).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 converts a float32 to bfloat16 the way ggml does (ggml_compute_fp32_to_bf16, "binary
// identical with Google Brain float conversion"): round-to-nearest-even on the low 16 bits, with
// overflow rounding to ±Inf; subnormals are rounded, not flushed; a NaN keeps its sign and top
// payload bits and is forced quiet (bit 6 of the bf16 set) so it can never round into an Inf.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + ((u >> 16) & 1))) >> 16)
}

// E8M0ToF32 decodes an OCP MX E8M0 scale byte to 2^(x-127), as ggml_e8m0_to_fp32 does: x = 0
// gives the float32 subnormal 2^-127 and x = 255 gives +Inf (ggml does not decode 255 as NaN).
func E8M0ToF32(x uint8) float32 {
	if x == 0 {
		return math.Float32frombits(0x00400000)
	}
	return math.Float32frombits(uint32(x) << 23)
}

// E8M0ToF32Half decodes an E8M0 scale byte to half its value, 2^(x-128), as
// GGML_E8M0_TO_FP32_HALF does; mxfp4 uses it because its codebook holds doubled E2M1 values.
// x = 0 and 1 give the float32 subnormals 2^-128 and 2^-127; x = 255 gives 2^127.
func E8M0ToF32Half(x uint8) float32 {
	if x < 2 {
		return math.Float32frombits(0x00200000 << x)
	}
	return math.Float32frombits(uint32(x-1) << 23)
}

// UE4M3ToF32Half decodes an nvfp4 UE4M3 scale byte exactly as ggml_ue4m3_to_fp32 does, which
// returns HALF the E4M3 value (nvfp4's codebook holds doubled E2M1 values): bit 7 is ignored,
// 0x00 and 0x7F (the E4M3 NaN) give 0, exponent field 0 gives man*2^-9 (subnormal), otherwise
// (1+man/8)*2^(exp-7); the result is then halved. Every result is exact.
func UE4M3ToF32Half(x uint8) float32 {
	if x == 0 || x == 0x7f {
		return 0
	}
	exp := int(x>>3) & 0xf
	man := int(x & 7)
	var raw float32
	if exp == 0 {
		raw = float32(math.Ldexp(float64(man), -9))
	} else {
		raw = float32(math.Ldexp(1+float64(float64(man)/8), exp-7))
	}
	return raw * 0.5
}

// UE4M3ToF32 decodes a UE4M3 scale byte to its full value: 2*UE4M3ToF32Half(x), exact.
func UE4M3ToF32(x uint8) float32 {
	return 2 * UE4M3ToF32Half(x)
}

// F32ToUE4M3 encodes a non-negative scale as UE4M3 exactly as ggml_fp32_to_ue4m3 does (this is not
// IEEE rounding): x <= 0 or NaN gives 0; x is clamped to 448; below 2^-6 the result is the
// subnormal round(x*512) computed as (int)(x*512+0.5), limited to 1..7 (0 when it rounds below 1);
// otherwise the mantissa is the top 3 float32 mantissa bits rounded half-up on the 4th, carrying
// into the exponent; exponents past the range give 0x7E (448).
func F32ToUE4M3(x float32) uint8 {
	if !(x > 0) {
		return 0
	}
	if x > 448 {
		x = 448
	}
	bits := math.Float32bits(x)
	fexp := int((bits>>23)&0xff) - 127
	fman := int((bits >> 20) & 7)
	uexp := fexp + 7
	if uexp <= 0 {
		man := int(cvtI32(float32(x*512) + 0.5))
		if man > 7 {
			man = 7
		}
		if man < 1 {
			return 0
		}
		return uint8(man)
	}
	if uexp >= 15 {
		return 0x7e
	}
	uman := fman + int((bits>>19)&1)
	if uman > 7 {
		uman = 0
		uexp++
		if uexp >= 15 {
			return 0x7e
		}
	}
	return uint8(uexp<<3 | uman)
}

// ---- numeric helpers reproducing ggml's C on x86-64 ----

// cvtI32 converts like C's (int)f compiled for x86-64 (cvttss2si): truncation toward zero, and
// the "integer indefinite" value math.MinInt32 for NaN and for values outside the int32 range.
// ggml's narrowing casts ((int8_t)f, (uint8_t)f) are this conversion followed by keeping the low
// byte, which is what int8(cvtI32(f)) and uint8(cvtI32(f)) do.
func cvtI32(f float32) int32 {
	if f != f || f >= 2147483648 || f < -2147483648 {
		return math.MinInt32
	}
	return int32(f)
}

// roundAway is C's roundf: round half away from zero, exact.
func roundAway(f float32) float32 {
	return float32(math.Round(float64(f)))
}

// nearestInt is ggml's nearest_int: add 1.5*2^23 in float32 and read the low mantissa bits. For
// |f| <= 4194303 it is round-half-to-even; for other inputs it is whatever the bit trick gives,
// which is what ggml gives too.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912 // float32(f): never fused with a product that made f
	i := int32(math.Float32bits(v))
	return (i & 0x007fffff) - 0x00400000
}

// fabs is fabsf: clear the sign bit.
func fabs(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ (1 << 31))
}

// sqrtf is a correctly rounded float32 square root (sqrt in float64 then one rounding is exact).
func sqrtf(f float32) float32 {
	return float32(math.Sqrt(float64(f)))
}

// le16 reads a little-endian uint16.
func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// le32 reads a little-endian uint32.
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// f16Table caches F16ToF32 for all 65536 halves (the dequantizers' hot path; built from
// F16ToF32 itself, so it cannot disagree with it).
var f16Table = func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for h := range t {
		t[h] = F16ToF32(uint16(h))
	}
	return t
}()

// halfAt reads the little-endian f16 at b[0:2] as float32.
func halfAt(b []byte) float32 { return f16Table[le16(b)] }

// putHalf stores f as a little-endian f16 (ggml's rounding) at b[0:2].
func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// ---- f32, f16, bf16 ----

func dequantF32(src []byte, dst []float32) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(le32(src[4*i : 4*i+4]))
	}
}

func dequantF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = f16Table[le16(src[2*i:2*i+2])]
	}
}

func dequantBF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = BF16ToF32(le16(src[2*i : 2*i+2]))
	}
}

func quantF32(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func quantF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
	}
}

func quantBF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
	}
}

func init() {
	dequantizers[F32] = dequantF32
	dequantizers[F16] = dequantF16
	dequantizers[BF16] = dequantBF16
	quantizers[F32] = quantF32
	quantizers[F16] = quantF16
	quantizers[BF16] = quantBF16
}
