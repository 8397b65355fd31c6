package kernels

import "github.com/onesource-go/onesource/dsl"

// Bytes reads a little-endian byte buffer (a GGUF tensor's blocks) that is bound as u32 words:
// the host pads the bytes with zeros to a multiple of 4. Offsets are byte offsets (u32 values).
// Every read is exact integer work; the f16 and bf16 decoders below are exact too, so they give
// the oracle's bits on every device whatever its float16 support.
type Bytes struct {
	k *dsl.Kernel
	w dsl.Array
}

// NewBytes declares a read-only u32 buffer named name and returns a byte reader over it.
func NewBytes(k *dsl.Kernel, name string) Bytes {
	return Bytes{k: k, w: k.Buffer(name, dsl.U32, dsl.Read)}
}

// Word returns the 32-bit word at word index i.
func (b Bytes) Word(i any) dsl.Value { return b.w.Load(i) }

// U8 returns the byte at offset off, zero-extended.
func (b Bytes) U8(off dsl.Value) dsl.Value {
	w := b.w.Load(off.Shr(2))
	return w.Shr(off.And(3).Mul(8)).And(0xff)
}

// I8 returns the byte at offset off, sign-extended to i32.
func (b Bytes) I8(off dsl.Value) dsl.Value {
	return b.U8(off).Shl(24).Bitcast(dsl.I32).Shr(24)
}

// U16 returns the 16-bit value at the even offset off.
func (b Bytes) U16(off dsl.Value) dsl.Value {
	w := b.w.Load(off.Shr(2))
	return w.Shr(off.And(2).Mul(8)).And(0xffff)
}

// U32 returns the 32-bit value at the even offset off (two halves when it is not 4-aligned).
func (b Bytes) U32(off dsl.Value) dsl.Value {
	lo := b.U16(off)
	hi := b.U16(off.Add(2))
	return lo.Or(hi.Shl(16))
}

// F16 returns the f16 at the even offset off, converted exactly to f32.
func (b Bytes) F16(off dsl.Value) dsl.Value { return HalfToF32(b.k, b.U16(off)) }

// HalfToF32 converts the f16 whose bits are the low 16 bits of the u32 h to f32, exactly and with
// integer operations only (no float16 arithmetic needed, no denormal flushing possible):
// normal numbers rebias the exponent, subnormals are their integer significand times 2^-24 (an
// exact multiply by a power of two whose result is a normal f32), Inf and NaN keep their payload
// (shifted, NaNs made quiet, as the oracle's F16ToF32 does).
func HalfToF32(k *dsl.Kernel, h dsl.Value) dsl.Value {
	sign := h.And(0x8000).Shl(16)
	exp := h.Shr(10).And(0x1f)
	man := h.And(0x3ff)
	normal := sign.Or(exp.Add(112).Shl(23)).Or(man.Shl(13))
	quiet := k.Select(man.Ne(0), k.U32(0x400000), k.U32(0)) // NaNs come out quiet, as in conversion hardware
	special := sign.Or(0x7f800000).Or(man.Shl(13)).Or(quiet)
	bits := k.Select(exp.Eq(31), special, normal)
	sub := man.F32().Mul(float32(1.0 / (1 << 24))).Bitcast(dsl.U32).Or(sign)
	return k.Select(exp.Eq(0), sub, bits).Bitcast(dsl.F32)
}

// BF16ToF32 converts the bf16 in the low 16 bits of h to f32 (exact: the bits move up).
func BF16ToF32(k *dsl.Kernel, h dsl.Value) dsl.Value {
	return h.And(0xffff).Shl(16).Bitcast(dsl.F32)
}

// F32ToHalf rounds x to the nearest f16 (ties to even) and returns its bits in a u32, with integer
// operations only, exactly as oracle.F32ToF16: overflow gives infinity, tiny values round into
// the subnormals or to zero, NaN becomes sign|0x7e00.
func F32ToHalf(k *dsl.Kernel, x dsl.Value) dsl.Value {
	b := x.Bitcast(dsl.U32)
	sign := b.Shr(16).And(0x8000)
	abs := b.And(0x7fffffff)
	exp := abs.Shr(23).Bitcast(dsl.I32)
	man := abs.And(0x7fffff)
	// Normal half: keep 10 bits, round to nearest even on the 13 dropped bits.
	e := exp.Sub(112) // half exponent field for normal results
	hn := e.Bitcast(dsl.U32).Shl(10).Or(man.Shr(13))
	rem := man.And(0x1fff)
	up := rem.Gt(0x1000).Or(rem.Eq(0x1000).And(hn.And(1).Eq(1)))
	hn = k.Select(up, hn.Add(1), hn) // a carry into the exponent is the right result (up to Inf)
	// Subnormal half: significand with the hidden bit, shifted right by 126-exp (14..24 bits).
	full := man.Or(0x800000)
	shift := k.I32(126).Sub(exp).Min(31).Max(0).Bitcast(dsl.U32)
	hs := full.Shr(shift)
	srem := full.Sub(hs.Shl(shift))
	half := k.U32(1).Shl(shift.Sub(1))
	sup := srem.Gt(half).Or(srem.Eq(half).And(hs.And(1).Eq(1)))
	hs = k.Select(sup, hs.Add(1), hs)
	hs = k.Select(exp.Lt(102), k.U32(0), hs) // below half of the smallest subnormal: zero
	h := k.Select(e.Ge(1), hn, hs)
	h = k.Select(e.Ge(31), k.U32(0x7c00), h)           // overflow: infinity
	h = k.Select(abs.Gt(0x7f800000), k.U32(0x7e00), h) // NaN
	h = k.Select(abs.Eq(0x7f800000), k.U32(0x7c00), h) // infinity
	return sign.Or(h)
}
