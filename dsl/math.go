package dsl

import (
	"math"

	"github.com/onesource-go/onesource/ir"
)

// The math library: methods of Value on f32 scalars (the package documentation, section Math,
// lists them with their accuracy). Each one is the twin of the oracle function of the same name
// (package oracle, math.go) and performs the oracle's op sequence step for step: the same float32
// constants, the same order of every rounded + - * / and sqrt (never contracted into an FMA), and
// the same integer and bit steps (Bitcast, shifts, masks) where the oracle reads or builds a
// float's fields. So a function gives the oracle's bits on every device that rounds the basic
// operations correctly and keeps denormals. Branches of the oracle become selects: every path is
// computed and the oracle's condition picks one, so the functions are straight-line code, usable
// anywhere in a kernel (in non-uniform control flow too).
//
// Fma is one IR instruction (ir.OpFma): exact on every backend (lower.LegalizeFma emulates it
// where the device's fma may round twice). Native is the one inexact method: the device's own
// function (ir.OpNative), for speed where bits do not matter.

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

	exp2E0 float32 = 0.693147182 // 0x3f317218
	exp2E1 float32 = 0.240226507 // 0x3e75fdf0
	exp2E2 float32 = 0.0555041023
	exp2E3 float32 = 0.00961803831
	exp2E4 float32 = 0.00133339351
	exp2E5 float32 = 0.000154667810
	exp2E6 float32 = 1.51961303e-05

	log2eHi  float32 = 1.44269502     // 0x3fb8aa3b
	log2eLo  float32 = 1.92596303e-08 // 0x32a57060
	sqrt2F   float32 = 1.41421354     // 0x3fb504f3
	atanhA3  float32 = 0.666666687    // 2/3
	atanhA5  float32 = 0.400000006    // 2/5
	atanhA7  float32 = 0.285714298    // 2/7
	split12  float32 = 4097
	log2Inv  float32 = 0.0625
	pow2Clip float32 = 4294967296 // 2^32

	erfQ0  float32 = 0.128379166 // 0x3e0375d4
	erfQ1  float32 = -0.376126379
	erfQ2  float32 = 0.112837896
	erfQ3  float32 = -0.026865961
	erfQ4  float32 = 0.00522288913
	erfQ5  float32 = -0.000851736404
	erfQ6  float32 = 0.000115615287
	erfQ7  float32 = -1.06984889e-05
	erfR0  float32 = 0.321585417 // 0x3ea4a6d8
	erfR1  float32 = -0.163622901
	erfR2  float32 = 0.0761508793
	erfR3  float32 = -0.0329314508
	erfR4  float32 = 0.0133789973
	erfR5  float32 = -0.00514162658
	erfR6  float32 = 0.0018792207
	erfR7  float32 = -0.000672184338
	erfR8  float32 = 0.000238546098
	erfR9  float32 = -6.83320613e-05
	erfR10 float32 = 9.71413283e-06
	erfCut float32 = 0.875
	erfOne float32 = 4
	erfC6  float32 = 0.166666672  // 1/6
	erfC24 float32 = 0.0416666679 // 1/24

	tiny12 float32 = 0x1p-12         // the small-argument cut of Tanh and Sin
	min126 float32 = 0x1p-126        // the smallest normal float32
	two23  float32 = 0x1p23          // the subnormal rescale of Log; the integer threshold of Round
	maxF32 float32 = math.MaxFloat32 // above it: +Inf
	negInf uint32  = 0xff800000      // -Inf bits
	posInf uint32  = 0x7f800000      // +Inf bits
	qNaN   uint32  = 0x7fc00000      // the NaN the library returns
	magBts uint32  = 0x7fffffff      // every bit but the sign
	sgnBit uint32  = 0x80000000      // the sign bit
	expMsk uint32  = 0x807fffff      // every bit but the exponent field
	exp126 uint32  = 126 << 23       // the exponent field of [0.5, 1)
	mantLo uint32  = 3               // the quadrant bits of the rounded sin/cos argument
)

// log2Table is oracle.log2Table: log2(j/16) for j = 11..23 as float32 pairs hi + lo.
var log2Table = [13][2]float32{
	{-0.540568352, -2.96170981e-08},
	{-0.415037513, 1.35003919e-08},
	{-0.299560279, -3.20480931e-09},
	{-0.192645073, -5.00538411e-09},
	{-0.0931094065, 2.13937557e-09},
	{0, 0},
	{0.0874628425, -1.21410759e-09},
	{0.169925004, -2.80153811e-09},
	{0.247927517, -3.25525162e-09},
	{0.321928084, 1.09907257e-08},
	{0.392317414, 8.49500825e-09},
	{0.459431618, 1.85225169e-10},
	{0.523561954, 1.55872182e-09},
}

// f32Arg reports whether v is a valid f32 scalar for the math method name, recording an error
// at the caller's line otherwise.
func (v Value) f32Arg(name string) bool {
	if !v.ok(name) {
		return false
	}
	if v.Type() != F32 {
		v.k.errorf(callerPos(), "%s: the math library takes f32 scalars, got %s", name, v.Type())
		return false
	}
	return true
}

// f32Operand turns o into an f32 scalar operand of the math method name.
func (v Value) f32Operand(name string, o any) (Value, bool) {
	p := callerPos()
	w, ok := v.k.operand(name, F32, o, p)
	if !ok {
		return Value{}, false
	}
	if w.Type() != F32 {
		v.k.errorf(p, "%s: the math library takes f32 scalars, got %s", name, w.Type())
		return Value{}, false
	}
	return w, true
}

// poisonF32 is the placeholder result of a math method called wrongly (building goes on to find
// more errors; Build reports them).
func (v Value) poisonF32() Value {
	if v.k == nil {
		return Value{}
	}
	return v.k.poison(F32, callerPos())
}

// horner returns (((c[0]*x + c[1])*x + c[2])...)*x + c[n-1], every product and sum rounded.
func horner(k *Kernel, x Value, c ...float32) Value {
	p := k.F32(c[0]).Mul(x).Add(c[1])
	for _, ci := range c[2:] {
		p = p.Mul(x).Add(ci)
	}
	return p
}

// pow2 builds 2^e (e an i32 in [-126, 127]) from its exponent bits: (e+127) << 23.
func pow2(e Value) Value {
	return e.Add(127).Bitcast(U32).Shl(23).Bitcast(F32)
}

// absBits returns |x| by clearing the sign bit (a NaN stays a NaN).
func absBits(x Value) Value {
	return x.Bitcast(U32).And(magBts).Bitcast(F32)
}

// copysignBits returns |x| with the sign bit of y.
func copysignBits(x, y Value) Value {
	return x.Bitcast(U32).And(magBts).Or(y.Bitcast(U32).And(sgnBit)).Bitcast(F32)
}

// nanF32 is the quiet NaN the library returns.
func nanF32(k *Kernel) Value { return k.U32(qNaN).Bitcast(F32) }

// Exp returns e^x with oracle.Exp's op sequence: NaN -> NaN; x clamped to [-104, 89];
// k = round-half-even(x*log2e) by adding and subtracting 1.5*2^23; r = (x - k*ln2hi) - k*ln2lo;
// y = ((p(r)*r^2) + r) + 1; result (y * 2^(k>>1)) * 2^(k - (k>>1)). Below 1 ULP.
func (v Value) Exp() Value {
	if !v.f32Arg("Exp") {
		return v.poisonF32()
	}
	k, x := v.k, v
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
	ki := s.Bitcast(U32).And(0x7fffff).Bitcast(I32).Sub(0x400000)
	k1 := ki.Shr(1)
	k2 := ki.Sub(k1)
	res := y.Mul(pow2(k1)).Mul(pow2(k2))
	return k.Select(x.Ne(x), x, res)
}

// exp2Core is oracle.exp2Core: 2^(th+tl) for |th| <= 160, |tl| <= 2^-16.
func exp2Core(k *Kernel, th, tl Value) Value {
	s := th.Add(roundMagic)
	n := s.Sub(roundMagic)
	f := th.Sub(n).Add(tl)
	p := horner(k, f, exp2E6, exp2E5, exp2E4, exp2E3, exp2E2, exp2E1, exp2E0)
	r := k.F32(1).Add(p.Mul(f))
	ni := s.Bitcast(U32).And(0x7fffff).Bitcast(I32).Sub(0x400000)
	n1 := ni.Shr(1)
	n2 := ni.Sub(n1)
	return r.Mul(pow2(n1)).Mul(pow2(n2))
}

// Exp2 returns 2^x with oracle.Exp2's op sequence: NaN -> NaN; x clamped to [-160, 160];
// n = round-half-even(x); f = x - n; r = 1 + f*E(f) (a degree-6 polynomial); result
// (r * 2^(n>>1)) * 2^(n - (n>>1)). At most 1.5 ULP (measured 1.03); exact for integer x.
func (v Value) Exp2() Value {
	if !v.f32Arg("Exp2") {
		return v.poisonF32()
	}
	k, x := v.k, v
	xc := k.Select(x.Gt(160), k.F32(160), x)
	xc = k.Select(xc.Lt(-160), k.F32(-160), xc)
	res := exp2Core(k, xc, k.F32(0))
	return k.Select(x.Ne(x), x, res)
}

// Log returns the natural logarithm of x with oracle.Log's op sequence: NaN -> NaN, x < 0 ->
// NaN, ±0 -> -Inf, +Inf -> +Inf; subnormal x is first scaled by 2^23; the exponent field gives
// e and the mantissa m in [sqrt(1/2)-1, sqrt(2)-1); then the Cephes polynomial. Below 1 ULP.
func (v Value) Log() Value {
	if !v.f32Arg("Log") {
		return v.poisonF32()
	}
	k, x := v.k, v
	sub := x.Lt(min126)
	xs := k.Select(sub, x.Mul(two23), x)
	e0 := k.Select(sub, k.I32(-23), k.I32(0))
	b := xs.Bitcast(U32)
	e := e0.Add(b.Shr(23).Bitcast(I32)).Sub(126)
	m := b.And(expMsk).Or(exp126).Bitcast(F32)
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
	res = k.Select(x.Eq(0), k.U32(negInf).Bitcast(F32), res)
	res = k.Select(x.Lt(0), k.U32(qNaN).Bitcast(F32), res)
	return k.Select(x.Ne(x), x, res)
}

// twoSum is oracle.twoSum: s = a+b and the exact error e.
func twoSum(a, b Value) (s, e Value) {
	s = a.Add(b)
	bb := s.Sub(a)
	e = a.Sub(s.Sub(bb)).Add(b.Sub(bb))
	return s, e
}

// fastTwoSum is oracle.fastTwoSum: s = a+b and e = b - (s - a).
func fastTwoSum(a, b Value) (s, e Value) {
	s = a.Add(b)
	return s, b.Sub(s.Sub(a))
}

// split is oracle.split (Veltkamp, 4097 = 2^12+1).
func split(a Value) (h, l Value) {
	c := a.Mul(split12)
	h = c.Sub(c.Sub(a))
	return h, a.Sub(h)
}

// twoProd is oracle.twoProd: p = a*b and the error (Dekker).
func twoProd(a, b Value) (p, e Value) {
	p = a.Mul(b)
	ah, al := split(a)
	bh, bl := split(b)
	e = ah.Mul(bh).Sub(p)
	e = e.Add(ah.Mul(bl))
	e = e.Add(al.Mul(bh))
	e = e.Add(al.Mul(bl))
	return p, e
}

// log2D is oracle.log2D: log2(a) as a double-float hi + lo for a finite a > 0 (other a give
// values the callers discard).
func log2D(k *Kernel, a Value) (hi, lo Value) {
	sub := a.Lt(min126)
	as := k.Select(sub, a.Mul(two23), a)
	e0 := k.Select(sub, k.I32(-23), k.I32(0))
	b := as.Bitcast(U32)
	e := e0.Add(b.Shr(23).Bitcast(I32)).Sub(127)
	m := b.And(0x7fffff).Or(uint32(127 << 23)).Bitcast(F32)
	big := m.Ge(sqrt2F)
	m = k.Select(big, m.Mul(0.5), m)
	e = k.Select(big, e.Add(1), e)
	sj := m.Mul(16).Add(roundMagic)
	jf := sj.Sub(roundMagic)
	c := jf.Mul(log2Inv)
	j := sj.Bitcast(U32).And(0x7fffff).Bitcast(I32).Sub(0x400000)
	u := m.Sub(c)
	vh, vl := twoSum(m, c)
	sh := u.Div(vh)
	ph, pl := twoProd(sh, vh)
	sl := u.Sub(ph).Sub(pl).Sub(sh.Mul(vl)).Div(vh)
	s2 := sh.Mul(sh)
	t := s2.Mul(sh).Mul(k.F32(atanhA7).Mul(s2).Add(atanhA5).Mul(s2).Add(atanhA3))
	a2 := sh.Add(sh)
	r := sl.Add(sl).Add(t)
	qh, ql := twoProd(a2, k.F32(log2eHi))
	ql = ql.Add(a2.Mul(log2eLo).Add(r.Mul(log2eHi)))
	ch, cl := k.F32(log2Table[0][0]), k.F32(log2Table[0][1])
	for i := 1; i < len(log2Table); i++ {
		is := j.Eq(int32(11 + i))
		ch = k.Select(is, k.F32(log2Table[i][0]), ch)
		cl = k.Select(is, k.F32(log2Table[i][1]), cl)
	}
	h1, l1 := twoSum(e.F32(), ch)
	h2, l2 := twoSum(h1, qh)
	lo = l1.Add(l2).Add(cl).Add(ql)
	return fastTwoSum(h2, lo)
}

// Log2 returns the base-2 logarithm of x with oracle.Log2's op sequence: NaN -> NaN, x < 0 ->
// NaN, ±0 -> -Inf, +Inf -> +Inf; otherwise the double-float logarithm (log2D: a reduction to
// m/c with c = j/16 near m, 2*atanh((m-c)/(m+c)) with error-free transformations) rounded once.
// At most 0.51 ULP (measured 0.500: correctly rounded but for near-ties); exact for powers of 2.
func (v Value) Log2() Value {
	if !v.f32Arg("Log2") {
		return v.poisonF32()
	}
	k, x := v.k, v
	res, _ := log2D(k, x)
	res = k.Select(x.Gt(maxF32), x, res)
	res = k.Select(x.Eq(0), k.U32(negInf).Bitcast(F32), res)
	res = k.Select(x.Lt(0), nanF32(k), res)
	return k.Select(x.Ne(x), x, res)
}

// Pow returns x^y (y an f32 Value or a Go number) with oracle.Pow's op sequence: the special
// cases of IEEE 754 and C99 Annex F (pow(x, ±0) = 1 and pow(1, y) = 1 even for NaN; pow(-1,
// ±Inf) = 1; signed zeros and infinities for x = ±0 or ±Inf by y's sign and oddness; NaN for a
// negative x and a non-integer y), otherwise 2^(y*log2|x|) with a double-float logarithm and
// product, negated for a negative x and an odd integer y. At most 1.5 ULP (measured 1.17);
// exact where the result is an integer power of a small integer that float32 holds.
func (v Value) Pow(y any) Value {
	if !v.f32Arg("Pow") {
		return v.poisonF32()
	}
	yv, ok := v.f32Operand("Pow", y)
	if !ok {
		return v.poisonF32()
	}
	k, x := v.k, v
	y0 := yv
	ax := absBits(x)
	yc := k.Select(y0.Gt(pow2Clip), k.F32(pow2Clip), y0)
	yc = k.Select(yc.Lt(-pow2Clip), k.F32(-pow2Clip), yc)
	lh, ll := log2D(k, ax)
	th, tl := twoProd(yc, lh)
	tl = tl.Add(yc.Mul(ll))
	th, tl = fastTwoSum(th, tl)
	hiC := th.Gt(160)
	th = k.Select(hiC, k.F32(160), th)
	tl = k.Select(hiC, k.F32(0), tl)
	loC := th.Lt(-160)
	th = k.Select(loC, k.F32(-160), th)
	tl = k.Select(loC, k.F32(0), tl)
	r := exp2Core(k, th, tl)

	yInt := y0.Floor().Eq(y0)
	yBelow := absBits(y0).Lt(0x1p24)
	yOdd := yInt.And(yBelow).And(k.Select(yBelow, y0, k.F32(0)).I32().And(1).Eq(1))
	neg := x.Lt(0)
	res := k.Select(neg.And(yOdd), r.Neg(), r)
	res = k.Select(neg.And(yInt.Not()), nanF32(k), res)
	inf := k.U32(posInf).Bitcast(F32)
	// x = ±0 or ±Inf
	axInf := ax.Eq(inf)
	mag := k.Select(axInf.Eq(y0.Gt(0)), inf, k.F32(0))
	res = k.Select(ax.Eq(0).Or(axInf), k.Select(yOdd, copysignBits(mag, x), mag), res)
	// y = ±Inf
	yInf := k.Select(ax.Gt(1).Eq(y0.Gt(0)), inf, k.F32(0))
	yInf = k.Select(ax.Eq(1), k.F32(1), yInf)
	res = k.Select(absBits(y0).Eq(inf), yInf, res)
	res = k.Select(x.Ne(x).Or(y0.Ne(y0)), nanF32(k), res)
	return k.Select(x.Eq(1).Or(y0.Eq(0)), k.F32(1), res)
}

// Tanh returns the hyperbolic tangent of x with oracle.Tanh's op sequence: |x| < 2^-12 -> x;
// |x| >= 0.625 -> y = 1 - 2/(Exp(|x|+|x|) + 1) with the sign of x; otherwise (NaN too) the
// Cephes polynomial ((p(x^2)*x^2)*x) + x. At most 2 ULP (measured 1.27).
func (v Value) Tanh() Value {
	if !v.f32Arg("Tanh") {
		return v.poisonF32()
	}
	k, x := v.k, v
	a := absBits(x)
	e := a.Add(a).Exp()
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
func sinCos(k *Kernel, x Value) (sp, cp, q Value) {
	s := x.Mul(sinTwoOverPi).Add(roundMagic)
	kf := s.Sub(roundMagic)
	q = s.Bitcast(U32).And(mantLo)
	r := x.Sub(kf.Mul(sinC1)).Sub(kf.Mul(sinC2)).Sub(kf.Mul(sinC3)).Sub(kf.Mul(sinC4))
	z := r.Mul(r)
	ps := horner(k, z, sinS0, sinS1, sinS2)
	sp = ps.Mul(z).Mul(r).Add(r)
	pc := horner(k, z, cosC0, cosC1, cosC2)
	cp = pc.Mul(z).Mul(z).Sub(z.Mul(0.5)).Add(1)
	return sp, cp, q
}

// Sin returns the sine of x (radians) with oracle.Sin's op sequence: |x| < 2^-12 -> x;
// otherwise by quadrant q: sinPoly, cosPoly, -sinPoly, -cosPoly of the reduced argument
// (a four-part Cody-Waite reduction by pi/2). At most 1.5 ULP for |x| <= 4, 2.5 ULP (absolute
// error 1e-7) for |x| <= 12800; beyond, the sequence still defines the bits but loses accuracy.
func (v Value) Sin() Value {
	if !v.f32Arg("Sin") {
		return v.poisonF32()
	}
	k, x := v.k, v
	sp, cp, q := sinCos(k, x)
	r := k.Select(q.And(1).Eq(1), cp, sp)
	r = k.Select(q.And(2).Eq(2), r.Neg(), r)
	return k.Select(absBits(x).Lt(tiny12), x, r)
}

// Cos returns the cosine of x (radians) with oracle.Cos's op sequence: by quadrant q: cosPoly,
// -sinPoly, -cosPoly, sinPoly of the reduced argument. Accuracy as Sin.
func (v Value) Cos() Value {
	if !v.f32Arg("Cos") {
		return v.poisonF32()
	}
	k, x := v.k, v
	sp, cp, q := sinCos(k, x)
	r := k.Select(q.And(1).Eq(1), sp, cp)
	return k.Select(q.Add(1).And(2).Eq(2), r.Neg(), r)
}

// SinCos returns Sin() and Cos() of v, sharing the range reduction and the polynomials (the
// same bits as the two calls).
func (v Value) SinCos() (sin, cos Value) {
	if !v.f32Arg("SinCos") {
		return v.poisonF32(), v.poisonF32()
	}
	k, x := v.k, v
	sp, cp, q := sinCos(k, x)
	odd := q.And(1).Eq(1)
	vs := k.Select(odd, cp, sp)
	vs = k.Select(q.And(2).Eq(2), vs.Neg(), vs)
	sin = k.Select(absBits(x).Lt(tiny12), x, vs)
	vc := k.Select(odd, sp, cp)
	cos = k.Select(q.Add(1).And(2).Eq(2), vc.Neg(), vc)
	return sin, cos
}

// Erf returns the error function of x with oracle.Erf's op sequence: |x| < 0.875 -> x + x*Q(x^2);
// 0.875 <= |x| < 4 -> 1 - exp(-x^2)*R(|x| - 1.5) with x's sign, exp(-x^2) from Exp of the exact
// square of x's 12 leading bits times a polynomial in the rest; |x| >= 4 -> ±1 (Q and R are
// polynomial fits; the oracle lists the coefficients). At most 1.5 ULP (measured 1.00).
func (v Value) Erf() Value {
	if !v.f32Arg("Erf") {
		return v.poisonF32()
	}
	k, x := v.k, v
	a := absBits(x)
	z := x.Mul(x)
	q := horner(k, z, erfQ7, erfQ6, erfQ5, erfQ4, erfQ3, erfQ2, erfQ1, erfQ0)
	small := x.Add(x.Mul(q))
	ah := a.Bitcast(U32).And(0xfffff000).Bitcast(F32)
	d := a.Sub(ah).Mul(a.Add(ah))
	ed := d.Mul(erfC24).Sub(erfC6)
	ed = ed.Mul(d).Add(0.5)
	ed = ed.Mul(d).Sub(1)
	ed = ed.Mul(d).Add(1)
	g := ah.Mul(ah).Neg().Exp().Mul(ed)
	w := horner(k, a.Sub(1.5), erfR10, erfR9, erfR8, erfR7, erfR6, erfR5, erfR4, erfR3, erfR2, erfR1, erfR0)
	mid := copysignBits(k.F32(1).Sub(g.Mul(w)), x)
	res := k.Select(a.Ge(erfOne), copysignBits(k.F32(1), x), mid)
	return k.Select(a.Lt(erfCut), small, res)
}

// Rsqrt returns 1/sqrt(x) as oracle.Rsqrt defines it: a correctly rounded square root, then a
// correctly rounded division (never a native reciprocal square root). At most 1.5 ULP.
func (v Value) Rsqrt() Value {
	if !v.f32Arg("Rsqrt") {
		return v.poisonF32()
	}
	return v.k.F32(1).Div(v.Sqrt())
}

// Ceil returns the smallest integer value >= x: -Floor(-x) (exact; Ceil(-0.5) = -0).
func (v Value) Ceil() Value {
	if !v.f32Arg("Ceil") {
		return v.poisonF32()
	}
	return v.Neg().Floor().Neg()
}

// Trunc returns x rounded toward zero: Floor(|x|) with x's sign (exact; Trunc(-0.5) = -0).
func (v Value) Trunc() Value {
	if !v.f32Arg("Trunc") {
		return v.poisonF32()
	}
	return copysignBits(absBits(v).Floor(), v)
}

// Round returns x rounded to the nearest integer, ties to even (Round(2.5) = 2, Round(-0.5) =
// -0): for |x| < 2^23, (|x| + 2^23) - 2^23 rounds once to nearest even, then x's sign is put
// back; larger |x|, infinities and NaN are returned as they are. Exact.
func (v Value) Round() Value {
	if !v.f32Arg("Round") {
		return v.poisonF32()
	}
	k := v.k
	a := absBits(v)
	r := a.Add(two23).Sub(two23)
	r = k.Select(a.Lt(two23), r, a)
	return copysignBits(r, v)
}

// Copysign returns |x| with the sign bit of y (a Value or a Go number): bit operations, exact
// for every x and y (NaN and signed zeros included).
func (v Value) Copysign(y any) Value {
	if !v.f32Arg("Copysign") {
		return v.poisonF32()
	}
	w, ok := v.f32Operand("Copysign", y)
	if !ok {
		return v.poisonF32()
	}
	return copysignBits(v, w)
}

// MinNum returns IEEE 754-2019 minimumNumber(x, o): the smaller, a NaN operand ignored (NaN only
// when both are), -0 below +0; symmetric in its operands. Min is the IR's cheaper o < x ? o : x,
// whose result depends on the operand order for NaN and signed zeros.
func (v Value) MinNum(o any) Value {
	if !v.f32Arg("MinNum") {
		return v.poisonF32()
	}
	b, ok := v.f32Operand("MinNum", o)
	if !ok {
		return v.poisonF32()
	}
	k, a := v.k, v
	m := k.Select(b.Lt(a), b, a)
	m = k.Select(a.Eq(b), a.Bitcast(U32).Or(b.Bitcast(U32)).Bitcast(F32), m) // -0 if either is
	m = k.Select(b.Ne(b), a, m)
	return k.Select(a.Ne(a), b, m)
}

// MaxNum returns IEEE 754-2019 maximumNumber(x, o): the larger, a NaN operand ignored (NaN only
// when both are), +0 above -0; symmetric in its operands. Max is the IR's cheaper
// x > o ? x : o (numeric rule 4's MaxOp).
func (v Value) MaxNum(o any) Value {
	if !v.f32Arg("MaxNum") {
		return v.poisonF32()
	}
	b, ok := v.f32Operand("MaxNum", o)
	if !ok {
		return v.poisonF32()
	}
	k, a := v.k, v
	m := k.Select(a.Lt(b), b, a)
	m = k.Select(a.Eq(b), a.Bitcast(U32).And(b.Bitcast(U32)).Bitcast(F32), m) // +0 unless both -0
	m = k.Select(b.Ne(b), a, m)
	return k.Select(a.Ne(a), b, m)
}

// Clamp returns x.Max(lo).Min(hi) (lo and hi Values or Go numbers): exact; a NaN x gives lo (or
// hi when lo is above hi).
func (v Value) Clamp(lo, hi any) Value {
	if !v.f32Arg("Clamp") {
		return v.poisonF32()
	}
	l, ok1 := v.f32Operand("Clamp", lo)
	h, ok2 := v.f32Operand("Clamp", hi)
	if !ok1 || !ok2 {
		return v.poisonF32()
	}
	return v.Max(l).Min(h)
}

// Fma returns x*b + c (b and c Values or Go numbers) computed exactly and rounded once to
// nearest even, with the IEEE special cases, on every backend: the device's fused multiply-add
// where it is guaranteed to round once (CUDA __fmaf_rn, HIP fmaf, MSL fma), an exact integer
// emulation elsewhere (Vulkan: lower.LegalizeFma; about 150 integer operations). It is the one
// way to get a fused multiply-add: Mul then Add is always two roundings.
func (v Value) Fma(b, c any) Value {
	if !v.f32Arg("Fma") {
		return v.poisonF32()
	}
	p := callerPos()
	bv, ok1 := v.f32Operand("Fma", b)
	cv, ok2 := v.f32Operand("Fma", c)
	if !ok1 || !ok2 {
		return v.poisonF32()
	}
	return v.k.emit(&ir.Inst{Op: ir.OpFma, Type: F32, Args: []*ir.Inst{v.in, bv.in, cv.in}, Pos: p})
}

// NativeFunc names a device function Native calls.
type NativeFunc = ir.NativeFunc

// The native functions.
const (
	NativeExp   = ir.NativeExp   // e^x
	NativeExp2  = ir.NativeExp2  // 2^x
	NativeLog   = ir.NativeLog   // ln x
	NativeLog2  = ir.NativeLog2  // log2 x
	NativeSin   = ir.NativeSin   // sin x
	NativeCos   = ir.NativeCos   // cos x
	NativeTanh  = ir.NativeTanh  // tanh x
	NativePow   = ir.NativePow   // x^y (takes y)
	NativeRsqrt = ir.NativeRsqrt // 1/sqrt(x)
)

// Native returns the device's own f on x (and y for NativePow): GLSL.std.450 Exp, Log, ... on
// Vulkan, CUDA's and HIP's fast intrinsics (__expf, __logf, __sinf, __powf, ...), MSL's fast::
// functions. It is the fast path where bits do not matter: its results differ between devices
// and from the portable methods (Exp, Log, ...), the accuracy is the vendor's (Vulkan allows
// sin and cos an absolute error of 2^-11), and the conformance suite reports a cell that uses
// it as "inexact, max ULP N" against the oracle, never as bit-exact.
func (v Value) Native(f NativeFunc, y ...any) Value {
	if !v.f32Arg("Native") {
		return v.poisonF32()
	}
	p := callerPos()
	if f >= ir.NativeCount {
		v.k.errorf(p, "Native: unknown function %d", f)
		return v.poisonF32()
	}
	if len(y) != f.Arity()-1 {
		v.k.errorf(p, "Native %s: takes %d operand(s) besides x, got %d", f, f.Arity()-1, len(y))
		return v.poisonF32()
	}
	args := []*ir.Inst{v.in}
	for _, o := range y {
		w, ok := v.f32Operand("Native", o)
		if !ok {
			return v.poisonF32()
		}
		args = append(args, w.in)
	}
	return v.k.emit(&ir.Inst{Op: ir.OpNative, Type: F32, Aux: uint64(f), Args: args, Pos: p})
}
