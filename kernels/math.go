package kernels

import (
	"math"

	"github.com/onesource-go/onesource/dsl"
)

// This file is the DSL twin of oracle/math.go, the portable math library (numeric rule 3 in package oracle).
// Every function performs the oracle function's op sequence step for step: the same float32
// constants, the same order of every rounded + - * / and sqrt (never contracted into an FMA: the
// lowering marks every float operation NoContraction), and the same integer/bit steps (Bitcast,
// shifts, masks) where the oracle reads or builds exponent bits. So it gives the oracle's bits on
// every device that rounds basic operations correctly and keeps denormals. Branches of the
// oracle become selects: every path is computed and the oracle's condition picks one, so the
// functions are straight-line code, usable anywhere in a kernel (also in non-uniform control).
//
// All functions take and return f32 scalars.

// The constants of oracle/math.go, with the same literals (a Go float32 constant names exactly
// one float32; the bit patterns are in the oracle's comments).
const (
	roundMagic float32 = 12582912 // 1.5*2^23

	expLog2e float32 = 1.44269504088896341 // 0x3fb8aa3b
	expLn2Hi float32 = 0.693359375         // 0x3f318000
	expLn2Lo float32 = -2.12194440e-4      // 0xb95e8083
	expP0    float32 = 1.9875691500e-4
	expP1    float32 = 1.3981999507e-3
	expP2    float32 = 8.3334519073e-3
	expP3    float32 = 4.1665795894e-2
	expP4    float32 = 1.6666665459e-1
	expP5    float32 = 5.0000001201e-1

	logSqrtHalf float32 = 0.707106781186547524 // 0x3f3504f3
	logP0       float32 = 7.0376836292e-2
	logP1       float32 = -1.1514610310e-1
	logP2       float32 = 1.1676998740e-1
	logP3       float32 = -1.2420140846e-1
	logP4       float32 = 1.4249322787e-1
	logP5       float32 = -1.6668057665e-1
	logP6       float32 = 2.0000714765e-1
	logP7       float32 = -2.4999993993e-1
	logP8       float32 = 3.3333331174e-1

	tanhP0 float32 = -5.70498872745e-3
	tanhP1 float32 = 2.06390887954e-2
	tanhP2 float32 = -5.37397155531e-2
	tanhP3 float32 = 1.33314422036e-1
	tanhP4 float32 = -3.33332819422e-1

	sinTwoOverPi float32 = 0.636619772367581343           // 0x3f22f983
	sinC1        float32 = 1.5703125                      // 0x3fc90000
	sinC2        float32 = 4.837512969970703125e-4        // 0x39fda000
	sinC3        float32 = 7.549533620476722717285156e-8  // 0x33a22000
	sinC4        float32 = 2.563344068257089602980159e-12 // 0x2c34611a
	sinS0        float32 = -1.9515295891e-4
	sinS1        float32 = 8.3321608736e-3
	sinS2        float32 = -1.6666654611e-1
	cosC0        float32 = 2.443315711809948e-5
	cosC1        float32 = -1.388731625493765e-3
	cosC2        float32 = 4.166664568298827e-2

	geluSqrt2OverPi float32 = 0.79788456080286535587989211986876 // 0x3f4c422a
	geluCoefA       float32 = 0.044715

	tiny12 float32 = 0x1p-12         // the small-argument cut of Tanh and Sin
	min126 float32 = 0x1p-126        // the smallest normal float32
	two23  float32 = 0x1p23          // the subnormal rescale of Log
	maxF32 float32 = math.MaxFloat32 // above it: +Inf
	negInf uint32  = 0xff800000      // -Inf bits
	qNaN   uint32  = 0x7fc00000      // the NaN Log returns for negative arguments
	magBts uint32  = 0x7fffffff      // every bit but the sign
	expMsk uint32  = 0x807fffff      // every bit but the exponent field
	exp126 uint32  = 126 << 23       // the exponent field of [0.5, 1)
	mantLo uint32  = 3               // the quadrant bits of the rounded sin/cos argument
)

// horner returns (((c[0]*x + c[1])*x + c[2])...)*x + c[n-1], every product and sum rounded.
func horner(k *dsl.Kernel, x dsl.Value, c ...float32) dsl.Value {
	p := k.F32(c[0]).Mul(x).Add(c[1])
	for _, ci := range c[2:] {
		p = p.Mul(x).Add(ci)
	}
	return p
}

// pow2 builds 2^e (e an i32 in [-126, 127]) from its exponent bits: (e+127) << 23.
func pow2(e dsl.Value) dsl.Value {
	return e.Add(127).Bitcast(dsl.U32).Shl(23).Bitcast(dsl.F32)
}

// absBits returns |x| by clearing the sign bit (a NaN stays a NaN).
func absBits(x dsl.Value) dsl.Value {
	return x.Bitcast(dsl.U32).And(magBts).Bitcast(dsl.F32)
}

// Exp returns e^x with oracle.Exp's op sequence: NaN -> NaN; x clamped to [-104, 89];
// k = round-half-even(x*log2e) by adding and subtracting 1.5*2^23; r = (x - k*ln2hi) - k*ln2lo;
// y = ((p(r)*r^2) + r) + 1; result (y * 2^(k>>1)) * 2^(k - (k>>1)).
func Exp(k *dsl.Kernel, x dsl.Value) dsl.Value {
	xc := k.Select(x.Gt(89), k.F32(89), x)
	xc = k.Select(xc.Lt(-104), k.F32(-104), xc)
	s := xc.Mul(expLog2e).Add(roundMagic)
	kf := s.Sub(roundMagic)
	r := xc.Sub(kf.Mul(expLn2Hi)).Sub(kf.Mul(expLn2Lo))
	z := r.Mul(r)
	p := horner(k, r, expP0, expP1, expP2, expP3, expP4, expP5)
	y := p.Mul(z).Add(r).Add(1)
	// k from the low mantissa bits of s (s = 1.5*2^23 + k exactly, |k| <= 151): the same integer
	// as converting kf, without a float-to-int conversion a NaN argument could make undefined.
	ki := s.Bitcast(dsl.U32).And(0x7fffff).Bitcast(dsl.I32).Sub(0x400000)
	k1 := ki.Shr(1)
	k2 := ki.Sub(k1)
	res := y.Mul(pow2(k1)).Mul(pow2(k2))
	return k.Select(x.Ne(x), x, res)
}

// Log returns the natural logarithm of x with oracle.Log's op sequence: NaN -> NaN, x < 0 ->
// NaN, ±0 -> -Inf, +Inf -> +Inf; subnormal x is first scaled by 2^23; the exponent field gives
// e and the mantissa m in [sqrt(1/2)-1, sqrt(2)-1); then the Cephes polynomial.
func Log(k *dsl.Kernel, x dsl.Value) dsl.Value {
	sub := x.Lt(min126)
	xs := k.Select(sub, x.Mul(two23), x)
	e0 := k.Select(sub, k.I32(-23), k.I32(0))
	b := xs.Bitcast(dsl.U32)
	e := e0.Add(b.Shr(23).Bitcast(dsl.I32)).Sub(126)
	m := b.And(expMsk).Or(exp126).Bitcast(dsl.F32)
	low := m.Lt(logSqrtHalf)
	e = k.Select(low, e.Sub(1), e)
	m = k.Select(low, m.Add(m).Sub(1), m.Sub(1))
	z := m.Mul(m)
	p := horner(k, m, logP0, logP1, logP2, logP3, logP4, logP5, logP6, logP7, logP8)
	y := p.Mul(m).Mul(z)
	f := e.F32()
	y = y.Add(f.Mul(expLn2Lo))
	y = y.Sub(z.Mul(0.5))
	res := m.Add(y).Add(f.Mul(expLn2Hi))
	res = k.Select(x.Gt(maxF32), x, res)
	res = k.Select(x.Eq(0), k.U32(negInf).Bitcast(dsl.F32), res)
	res = k.Select(x.Lt(0), k.U32(qNaN).Bitcast(dsl.F32), res)
	return k.Select(x.Ne(x), x, res)
}

// Tanh returns the hyperbolic tangent of x with oracle.Tanh's op sequence: |x| < 2^-12 -> x;
// |x| >= 0.625 -> y = 1 - 2/(Exp(|x|+|x|) + 1) with the sign of x; otherwise (NaN too) the
// Cephes polynomial ((p(x^2)*x^2)*x) + x.
func Tanh(k *dsl.Kernel, x dsl.Value) dsl.Value {
	a := absBits(x)
	e := Exp(k, a.Add(a))
	y := k.F32(1).Sub(k.F32(2).Div(e.Add(1)))
	y = k.Select(x.Lt(0), y.Neg(), y)
	z := x.Mul(x)
	p := horner(k, z, tanhP0, tanhP1, tanhP2, tanhP3, tanhP4)
	small := p.Mul(z).Mul(x).Add(x)
	res := k.Select(a.Ge(0.625), y, small)
	return k.Select(a.Lt(tiny12), x, res)
}

// sinCos returns sinPoly(r), cosPoly(r) and the quadrant q (u32, 0..3) of x, as oracle's
// sinCosReduce, sinPoly and cosPoly compute them.
func sinCos(k *dsl.Kernel, x dsl.Value) (sp, cp, q dsl.Value) {
	s := x.Mul(sinTwoOverPi).Add(roundMagic)
	kf := s.Sub(roundMagic)
	q = s.Bitcast(dsl.U32).And(mantLo)
	r := x.Sub(kf.Mul(sinC1)).Sub(kf.Mul(sinC2)).Sub(kf.Mul(sinC3)).Sub(kf.Mul(sinC4))
	z := r.Mul(r)
	ps := horner(k, z, sinS0, sinS1, sinS2)
	sp = ps.Mul(z).Mul(r).Add(r)
	pc := horner(k, z, cosC0, cosC1, cosC2)
	cp = pc.Mul(z).Mul(z).Sub(z.Mul(0.5)).Add(1)
	return sp, cp, q
}

// Sin returns the sine of x (radians) with oracle.Sin's op sequence: |x| < 2^-12 -> x;
// otherwise by quadrant q: sinPoly, cosPoly, -sinPoly, -cosPoly of the reduced argument.
func Sin(k *dsl.Kernel, x dsl.Value) dsl.Value {
	sp, cp, q := sinCos(k, x)
	v := k.Select(q.And(1).Eq(1), cp, sp)
	v = k.Select(q.And(2).Eq(2), v.Neg(), v)
	return k.Select(absBits(x).Lt(tiny12), x, v)
}

// Cos returns the cosine of x (radians) with oracle.Cos's op sequence: by quadrant q: cosPoly,
// -sinPoly, -cosPoly, sinPoly of the reduced argument.
func Cos(k *dsl.Kernel, x dsl.Value) dsl.Value {
	sp, cp, q := sinCos(k, x)
	v := k.Select(q.And(1).Eq(1), sp, cp)
	return k.Select(q.Add(1).And(2).Eq(2), v.Neg(), v)
}

// SinCos returns Sin(x) and Cos(x), sharing the range reduction and the polynomials (rope needs
// both of one angle).
func SinCos(k *dsl.Kernel, x dsl.Value) (sin, cos dsl.Value) {
	sp, cp, q := sinCos(k, x)
	odd := q.And(1).Eq(1)
	vs := k.Select(odd, cp, sp)
	vs = k.Select(q.And(2).Eq(2), vs.Neg(), vs)
	sin = k.Select(absBits(x).Lt(tiny12), x, vs)
	vc := k.Select(odd, sp, cp)
	cos = k.Select(q.Add(1).And(2).Eq(2), vc.Neg(), vc)
	return sin, cos
}

// Rsqrt returns 1/sqrt(x) as oracle.Rsqrt defines it: a correctly rounded square root, then a
// correctly rounded division (never a native reciprocal square root).
func Rsqrt(k *dsl.Kernel, x dsl.Value) dsl.Value {
	return k.F32(1).Div(x.Sqrt())
}

// Silu returns x / (1 + Exp(-x)) (oracle.Silu, ggml_silu_f32).
func Silu(k *dsl.Kernel, x dsl.Value) dsl.Value {
	return x.Div(k.F32(1).Add(Exp(k, x.Neg())))
}

// Gelu returns ggml's tanh-form GELU with oracle.Gelu's op order:
// u = (0.044715*x)*x; v = (sqrt(2/pi)*x)*(1 + u); (0.5*x)*(1 + Tanh(v)).
func Gelu(k *dsl.Kernel, x dsl.Value) dsl.Value {
	u := x.Mul(geluCoefA).Mul(x)
	v := x.Mul(geluSqrt2OverPi).Mul(k.F32(1).Add(u))
	t := Tanh(k, v)
	return x.Mul(0.5).Mul(k.F32(1).Add(t))
}

// Swiglu returns Silu(x) * g (oracle.Swiglu).
func Swiglu(k *dsl.Kernel, x, g dsl.Value) dsl.Value {
	return Silu(k, x).Mul(g)
}
