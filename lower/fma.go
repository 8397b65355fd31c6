package lower

import (
	"math"

	"github.com/onesource-go/onesource/ir"
)

// LegalizeFma rewrites every OpFma into an exact emulation for targets whose fused multiply-add
// is not guaranteed to round once (Caps.ExactFma false; Vulkan: GLSL.std.450 Fma is allowed the
// precision of a multiply followed by an add). The emulation uses only 32-bit integer operations
// (which are exact on every device), bit casts, selects and, for the special operands, one float
// multiply and one float add:
//
//   - a, b or c NaN or infinite: a*b + c, except that an infinite or NaN c with finite a and b
//     gives c (a*b may overflow where the exact product is finite, and must not meet -c);
//   - a or b zero: a*b + c (the product is an exact signed zero, so one rounding);
//   - c zero: a*b (the exact product rounded once, with its own sign when it underflows);
//   - otherwise the exact computation: the 24-bit significands unpacked (subnormals included), the
//     48-bit product formed in two 32-bit words from 16-bit limbs, both addends normalized to
//     64-bit fixed point (leading one at bit 61), the smaller one shifted right with a sticky bit,
//     added or subtracted, normalized again, and rounded to nearest even at float32 precision, or
//     at the subnormal precision below 2^-126; overflow gives infinity and an exact zero sum +0.
//
// Why not float64 with round-to-odd: Vulkan promises for float64 arithmetic only "at least the
// precision of single precision" and leaves the rounding of a float64 -> float32 conversion
// undefined, so only integer arithmetic is exact on every Vulkan device.
//
// The same sequence, evaluated in Go on uint32 values, folds constant fmas (FmaF32) and is
// tested against the oracle's exact Fma.
func LegalizeFma(k *ir.Kernel, c Caps) error {
	if c.ExactFma {
		return nil
	}
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if in.Op != ir.OpFma {
			return append(out, in)
		}
		g := &gen{out: out, pos: in.Pos}
		o := irFma{g}
		bits := func(x *ir.Inst) *ir.Inst { return g.op(ir.OpBitcast, ir.TU32, x) }
		r := fmaBits[*ir.Inst](o, bits(in.Args[0]), bits(in.Args[1]), bits(in.Args[2]))
		name := in.Name
		*in = ir.Inst{Op: ir.OpBitcast, Type: ir.TF32, Args: []*ir.Inst{r}, Name: name, Pos: in.Pos}
		return append(g.out, in)
	})
	return nil
}

// FmaF32 is the exact float32 fused multiply-add a*b+c (one rounding to nearest even), computed
// by the emulation LegalizeFma emits, on the CPU.
func FmaF32(a, b, c float32) float32 {
	return math.Float32frombits(fmaBits[uint32](goFma{}, math.Float32bits(a), math.Float32bits(b), math.Float32bits(c)))
}

// fmaOps are the operations of the fma emulation: 32-bit unsigned integers (wrapping; shift
// counts modulo 32), booleans, selects, and float32 multiply and add on bit patterns. irFma
// emits them as IR; goFma evaluates them.
type fmaOps[V any] interface {
	k(c uint32) V
	add(a, b V) V
	sub(a, b V) V
	mul(a, b V) V
	and(a, b V) V
	or(a, b V) V
	xor(a, b V) V
	shl(a, b V) V
	shr(a, b V) V // logical
	ult(a, b V) V // unsigned a < b
	slt(a, b V) V // a < b as int32
	eq(a, b V) V
	ne(a, b V) V
	band(a, b V) V // boolean and
	bor(a, b V) V  // boolean or
	not(a V) V     // boolean not
	sel(c, a, b V) V
	fmul(a, b V) V // float32 a*b on bit patterns
	fadd(a, b V) V // float32 a+b on bit patterns
}

// fmaBits returns the bits of the correctly rounded a*b+c from the bits of a, b and c.
func fmaBits[V any](o fmaOps[V], a, b, c V) V {
	K := o.k
	zero, one := K(0), K(1)
	finite := func(x V) V { return o.ne(o.and(x, K(0x7f800000)), K(0x7f800000)) }
	isZero := func(x V) V { return o.eq(o.and(x, K(0x7fffffff)), zero) }
	// unpack gives m and e with |x| = m * 2^(e-150), m < 2^24, e >= 1.
	unpack := func(x V) (m, e V) {
		f := o.and(o.shr(x, K(23)), K(0xff))
		sub := o.eq(f, zero)
		m = o.and(x, K(0x7fffff))
		m = o.sel(sub, m, o.or(m, K(0x800000)))
		return m, o.sel(sub, one, f)
	}
	ma, ea := unpack(a)
	mb, eb := unpack(b)
	mc, ec := unpack(c)
	sp := o.and(o.xor(a, b), K(0x80000000))
	sc := o.and(c, K(0x80000000))

	// The product ma*mb (< 2^48) in two words, from 16-bit limbs.
	a0, a1 := o.and(ma, K(0xffff)), o.shr(ma, K(16))
	b0, b1 := o.and(mb, K(0xffff)), o.shr(mb, K(16))
	p00 := o.mul(a0, b0)
	mid := o.add(o.mul(a0, b1), o.mul(a1, b0)) // < 2^25
	plo := o.add(p00, o.shl(mid, K(16)))
	phi := o.add(o.add(o.mul(a1, b1), o.shr(mid, K(16))), o.sel(o.ult(plo, p00), one, zero))

	// Both addends normalized to [2^61, 2^62): the product's value is P * 2^EP, c's C * 2^EC.
	shP := o.sub(fmaClz64(o, phi, plo), K(2))
	phi, plo = fmaShl64(o, phi, plo, shP)
	ep := o.sub(o.sub(o.add(ea, eb), K(300)), shP)
	shC := o.sub(fmaClz64(o, zero, mc), K(2))
	chi, clo := fmaShl64(o, zero, mc, shC)
	ec2 := o.sub(o.sub(ec, K(150)), shC)

	// X is the larger magnitude, Y the other, shifted right by the exponent difference with a
	// sticky bit (X's low 14 bits are zero, so the sticky bit never meets one of X's bits).
	pLess := o.bor(o.ult(phi, chi), o.band(o.eq(phi, chi), o.ult(plo, clo)))
	pBig := o.bor(o.slt(ec2, ep), o.band(o.eq(ep, ec2), o.not(pLess)))
	xhi, xlo, ex, sx := o.sel(pBig, phi, chi), o.sel(pBig, plo, clo), o.sel(pBig, ep, ec2), o.sel(pBig, sp, sc)
	yhi, ylo, ey := o.sel(pBig, chi, phi), o.sel(pBig, clo, plo), o.sel(pBig, ec2, ep)
	yhi, ylo = fmaShr64Sticky(o, yhi, ylo, o.sub(ex, ey))

	// R = X + Y or X - Y (< 2^63).
	slo := o.add(xlo, ylo)
	shi := o.add(o.add(xhi, yhi), o.sel(o.ult(slo, xlo), one, zero))
	dlo := o.sub(xlo, ylo)
	dhi := o.sub(o.sub(xhi, yhi), o.sel(o.ult(xlo, ylo), one, zero))
	subtract := o.ne(sp, sc)
	rhi, rlo := o.sel(subtract, dhi, shi), o.sel(subtract, dlo, slo)
	exactZero := o.band(o.eq(rhi, zero), o.eq(rlo, zero))

	// Normalize R to [2^62, 2^63): its value is R * 2^(ex-shR), its biased float32 exponent e32.
	shR := o.sub(fmaClz64(o, rhi, rlo), one)
	rhi, rlo = fmaShl64(o, rhi, rlo, shR)
	e32 := o.sub(o.add(ex, K(189)), shR)

	// Round to nearest even, keeping 24 bits (normal) or down to 2^-149 (subnormal): rs is the
	// number of bits below the kept ones, 39 .. 63 (64 and more: the result rounds to zero).
	normal := o.slt(zero, e32)
	rs := o.sel(normal, K(39), o.sub(K(40), e32))
	gone := o.not(o.slt(rs, K(64)))
	sh := o.sub(rs, K(32)) // 7 .. 31: the kept bits are all in rhi
	m := o.shr(rhi, sh)
	remHi := o.and(rhi, o.sub(o.shl(one, sh), one))
	halfHi := o.shl(one, o.sub(sh, one))
	above := o.bor(o.ult(halfHi, remHi), o.band(o.eq(remHi, halfHi), o.ne(rlo, zero)))
	tie := o.band(o.eq(remHi, halfHi), o.eq(rlo, zero))
	up := o.bor(above, o.band(tie, o.eq(o.and(m, one), one)))
	base := o.sel(normal, o.shl(o.sub(e32, one), K(23)), zero) // the hidden bit of m adds 1 to it
	mag := o.add(o.add(base, m), o.sel(up, one, zero))
	mag = o.sel(o.slt(K(254), e32), K(0x7f800000), mag)
	mag = o.sel(gone, zero, mag)
	res := o.sel(exactZero, zero, o.or(sx, mag))

	// The special operands.
	prod := o.fmul(a, b)
	res = o.sel(isZero(c), prod, res)
	res = o.sel(o.bor(isZero(a), isZero(b)), o.fadd(prod, c), res)
	finAB := o.band(finite(a), finite(b))
	res = o.sel(o.not(o.band(finAB, finite(c))), o.fadd(prod, c), res)
	return o.sel(o.band(finAB, o.not(finite(c))), c, res)
}

// fmaClz64 counts the leading zeros of the 64-bit hi:lo (63 for zero: the callers discard it).
func fmaClz64[V any](o fmaOps[V], hi, lo V) V {
	z := o.eq(hi, o.k(0))
	x := o.sel(z, lo, hi)
	n := o.sel(z, o.k(32), o.k(0))
	for _, s := range []uint32{16, 8, 4, 2} {
		top := o.eq(o.shr(x, o.k(32-s)), o.k(0))
		n = o.sel(top, o.add(n, o.k(s)), n)
		x = o.sel(top, o.shl(x, o.k(s)), x)
	}
	return o.sel(o.eq(o.shr(x, o.k(31)), o.k(0)), o.add(n, o.k(1)), n)
}

// fmaShl64 shifts hi:lo left by s (0 .. 63).
func fmaShl64[V any](o fmaOps[V], hi, lo, s V) (V, V) {
	zero := o.k(0)
	big := o.not(o.ult(s, o.k(32)))
	s1 := o.and(s, o.k(31))
	carry := o.sel(o.eq(s1, zero), zero, o.shr(lo, o.sub(o.k(32), s1)))
	hiA := o.or(o.shl(hi, s1), carry)
	loA := o.shl(lo, s1)
	return o.sel(big, loA, hiA), o.sel(big, zero, loA)
}

// fmaShr64Sticky shifts hi:lo right by d (any u32) and ORs a 1 into the lowest bit when a one
// bit was shifted out.
func fmaShr64Sticky[V any](o fmaOps[V], hi, lo, d V) (V, V) {
	zero, one := o.k(0), o.k(1)
	ge32 := o.not(o.ult(d, o.k(32)))
	ge64 := o.not(o.ult(d, o.k(64)))
	d1 := o.and(d, o.k(31))
	mask := o.sub(o.shl(one, d1), one)
	carry := o.sel(o.eq(d1, zero), zero, o.shl(hi, o.sub(o.k(32), d1)))
	loA := o.or(o.shr(lo, d1), carry)
	hiA := o.shr(hi, d1)
	stA := o.ne(o.and(lo, mask), zero)
	loB := o.shr(hi, d1)
	stB := o.bor(o.ne(lo, zero), o.ne(o.and(hi, mask), zero))
	stC := o.ne(o.or(hi, lo), zero)
	nlo := o.sel(ge64, zero, o.sel(ge32, loB, loA))
	nhi := o.sel(ge32, zero, hiA)
	st := o.sel(ge64, stC, o.sel(ge32, stB, stA))
	return nhi, o.or(nlo, o.sel(st, one, zero))
}

// goFma evaluates the emulation on uint32 values (booleans are 0 and 1).
type goFma struct{}

func b32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (goFma) k(c uint32) uint32       { return c }
func (goFma) add(a, b uint32) uint32  { return a + b }
func (goFma) sub(a, b uint32) uint32  { return a - b }
func (goFma) mul(a, b uint32) uint32  { return a * b }
func (goFma) and(a, b uint32) uint32  { return a & b }
func (goFma) or(a, b uint32) uint32   { return a | b }
func (goFma) xor(a, b uint32) uint32  { return a ^ b }
func (goFma) shl(a, b uint32) uint32  { return a << (b & 31) }
func (goFma) shr(a, b uint32) uint32  { return a >> (b & 31) }
func (goFma) ult(a, b uint32) uint32  { return b32(a < b) }
func (goFma) slt(a, b uint32) uint32  { return b32(int32(a) < int32(b)) }
func (goFma) eq(a, b uint32) uint32   { return b32(a == b) }
func (goFma) ne(a, b uint32) uint32   { return b32(a != b) }
func (goFma) band(a, b uint32) uint32 { return a & b }
func (goFma) bor(a, b uint32) uint32  { return a | b }
func (goFma) not(a uint32) uint32     { return a ^ 1 }
func (goFma) sel(c, a, b uint32) uint32 {
	if c != 0 {
		return a
	}
	return b
}
func (goFma) fmul(a, b uint32) uint32 {
	return math.Float32bits(math.Float32frombits(a) * math.Float32frombits(b))
}
func (goFma) fadd(a, b uint32) uint32 {
	return math.Float32bits(math.Float32frombits(a) + math.Float32frombits(b))
}

// irFma emits the emulation as IR: integers are u32, booleans bool, float operations f32 on
// bit casts.
type irFma struct{ g *gen }

func (o irFma) k(c uint32) *ir.Inst {
	return o.g.add(&ir.Inst{Op: ir.OpConst, Type: ir.TU32, Aux: uint64(c)})
}
func (o irFma) u(op ir.Op, a, b *ir.Inst) *ir.Inst { return o.g.op(op, ir.TU32, a, b) }
func (o irFma) c(op ir.Op, a, b *ir.Inst) *ir.Inst { return o.g.op(op, ir.TBool, a, b) }
func (o irFma) add(a, b *ir.Inst) *ir.Inst         { return o.u(ir.OpAdd, a, b) }
func (o irFma) sub(a, b *ir.Inst) *ir.Inst         { return o.u(ir.OpSub, a, b) }
func (o irFma) mul(a, b *ir.Inst) *ir.Inst         { return o.u(ir.OpMul, a, b) }
func (o irFma) and(a, b *ir.Inst) *ir.Inst         { return o.u(ir.OpAnd, a, b) }
func (o irFma) or(a, b *ir.Inst) *ir.Inst          { return o.u(ir.OpOr, a, b) }
func (o irFma) xor(a, b *ir.Inst) *ir.Inst         { return o.u(ir.OpXor, a, b) }
func (o irFma) shl(a, b *ir.Inst) *ir.Inst         { return o.u(ir.OpShl, a, b) }
func (o irFma) shr(a, b *ir.Inst) *ir.Inst         { return o.u(ir.OpShr, a, b) }
func (o irFma) ult(a, b *ir.Inst) *ir.Inst         { return o.c(ir.OpLt, a, b) }
func (o irFma) eq(a, b *ir.Inst) *ir.Inst          { return o.c(ir.OpEq, a, b) }
func (o irFma) ne(a, b *ir.Inst) *ir.Inst          { return o.c(ir.OpNe, a, b) }
func (o irFma) band(a, b *ir.Inst) *ir.Inst        { return o.g.op(ir.OpAnd, ir.TBool, a, b) }
func (o irFma) bor(a, b *ir.Inst) *ir.Inst         { return o.g.op(ir.OpOr, ir.TBool, a, b) }
func (o irFma) not(a *ir.Inst) *ir.Inst            { return o.g.op(ir.OpNot, ir.TBool, a) }
func (o irFma) sel(c, a, b *ir.Inst) *ir.Inst      { return o.g.op(ir.OpSelect, a.Type, c, a, b) }
func (o irFma) slt(a, b *ir.Inst) *ir.Inst {
	return o.g.op(ir.OpLt, ir.TBool, o.g.op(ir.OpBitcast, ir.TI32, a), o.g.op(ir.OpBitcast, ir.TI32, b))
}
func (o irFma) f(op ir.Op, a, b *ir.Inst) *ir.Inst {
	fa, fb := o.g.op(ir.OpBitcast, ir.TF32, a), o.g.op(ir.OpBitcast, ir.TF32, b)
	return o.g.op(ir.OpBitcast, ir.TU32, o.g.op(op, ir.TF32, fa, fb))
}
func (o irFma) fmul(a, b *ir.Inst) *ir.Inst { return o.f(ir.OpMul, a, b) }
func (o irFma) fadd(a, b *ir.Inst) *ir.Inst { return o.f(ir.OpAdd, a, b) }
