package oracle

import (
	"math"
	"math/big"
)

// This file is the portable math library (numeric rule 3 in the package doc). Every function is a fixed
// sequence of float32 operations: + - * / and sqrt, each rounded to nearest even (contract 2), no
// fused multiply-add (contract 1: every a*b+c is two roundings), plus comparisons, selects and the
// integer/bit operations written out below (reading and building the exponent field of a float32).
// A GPU kernel that performs the same sequence gets the same bits; the sequence IS the definition,
// also where it is not accurate (huge sin/cos arguments), so results never depend on a vendor's
// math library. Constants are float32 values; they are written here with enough digits to name
// exactly one float32 and their bit patterns are given where it matters.
//
// In Go, x*y+z may be fused into an FMA on some architectures unless the product is converted
// explicitly, so every product that feeds an add is written float32(x*y).
//
// Accuracy (measured by the tests against float64 math over dense samples, in float32 ULPs of the
// correctly rounded result): Exp < 1 ULP on [-87.3, 88.7] and in the subnormal range; Log < 1 ULP
// on (0, +Inf); Tanh <= 1.5 ULP; Sin, Cos <= 1.5 ULP for |x| <= 4 and <= 2.5 ULP for |x| <= 12800
// (absolute error <= 1e-7 there); Rsqrt <= 1.5 ULP (two roundings). The tests print the measured
// figures.

const (
	// roundMagic is 1.5*2^23: for |v| < 2^22, (v + roundMagic) - roundMagic is v rounded to the
	// nearest integer, ties to even, and the low mantissa bits of v + roundMagic hold that integer
	// in two's complement.
	roundMagic float32 = 12582912

	expLog2e float32 = 1.44269504088896341 // 0x3fb8aa3b, log2(e)
	expLn2Hi float32 = 0.693359375         // 0x3f318000, 9 significant bits: k*expLn2Hi is exact for |k| < 2^15
	expLn2Lo float32 = -2.12194440e-4      // 0xb95e8083, ln(2) - expLn2Hi rounded to float32
	// Cody-Waite exp polynomial (Cephes expf): exp(r) ~ 1 + r + r^2*P(r) on |r| <= ln(2)/2.
	expP0 float32 = 1.9875691500e-4
	expP1 float32 = 1.3981999507e-3
	expP2 float32 = 8.3334519073e-3
	expP3 float32 = 4.1665795894e-2
	expP4 float32 = 1.6666665459e-1
	expP5 float32 = 5.0000001201e-1
)

// Exp returns e^x. The op sequence:
//
//	NaN -> NaN; x is clamped to [-104, 89] (so +Inf -> +Inf and -Inf -> 0 fall out below)
//	t  = x * log2e                      (log2e = 0x3fb8aa3b)
//	s  = t + 1.5*2^23;  k = s - 1.5*2^23  (k = round-half-even(t), an integer-valued float32)
//	r  = (x - k*ln2hi) - k*ln2lo        (ln2hi = 0x3f318000, k*ln2hi exact; ln2lo = 0xb95e8083)
//	z  = r * r
//	p  = (((((P0*r + P1)*r + P2)*r + P3)*r + P4)*r + P5)
//	y  = ((p*z) + r) + 1
//	ki = int(k); k1 = ki >> 1 (arithmetic); k2 = ki - k1
//	result = (y * 2^k1) * 2^k2          (2^k built from its exponent bits: (k+127) << 23)
//
// Scaling in two steps keeps both factors normal, so the first product is exact and a result in
// the subnormal range is rounded once (denormals are produced, never flushed); overflow gives +Inf.
func Exp(x float32) float32 {
	if x != x {
		return x
	}
	if x > 89 {
		x = 89
	}
	if x < -104 {
		x = -104
	}
	s := float32(x*expLog2e) + roundMagic
	k := s - roundMagic
	r := (x - float32(k*expLn2Hi)) - float32(k*expLn2Lo)
	z := float32(r * r)
	p := float32(expP0*r) + expP1
	p = float32(p*r) + expP2
	p = float32(p*r) + expP3
	p = float32(p*r) + expP4
	p = float32(p*r) + expP5
	y := (float32(p*z) + r) + 1
	ki := int32(k)
	k1 := ki >> 1
	k2 := ki - k1
	y = float32(y * pow2f(k1))
	return float32(y * pow2f(k2))
}

// pow2f builds 2^k for -126 <= k <= 127 from its exponent bits.
func pow2f(k int32) float32 {
	return math.Float32frombits(uint32(k+127) << 23)
}

const (
	logSqrtHalf float32 = 0.707106781186547524 // 0x3f3504f3
	// Cephes logf polynomial: log(1+m) ~ m - m^2/2 + m^3*P(m) on sqrt(1/2)-1 <= m < sqrt(2)-1.
	logP0 float32 = 7.0376836292e-2
	logP1 float32 = -1.1514610310e-1
	logP2 float32 = 1.1676998740e-1
	logP3 float32 = -1.2420140846e-1
	logP4 float32 = 1.4249322787e-1
	logP5 float32 = -1.6668057665e-1
	logP6 float32 = 2.0000714765e-1
	logP7 float32 = -2.4999993993e-1
	logP8 float32 = 3.3333331174e-1
)

// Log returns the natural logarithm of x. The op sequence:
//
//	NaN -> NaN; x < 0 -> NaN; x == 0 (either sign) -> -Inf; +Inf -> +Inf
//	e = 0; if x < 2^-126 { x = x * 2^23; e = -23 }   (subnormal input: exact rescale)
//	e = e + (exponent field of x) - 126; m = x with its exponent field set to 126  (m in [0.5, 1))
//	if m < sqrt(1/2) { e = e - 1; m = (m + m) - 1 } else { m = m - 1 }
//	z = m * m
//	p = ((((((((P0*m + P1)*m + P2)*m + P3)*m + P4)*m + P5)*m + P6)*m + P7)*m + P8)
//	y = (p*m) * z;  f = float32(e)
//	y = y + f*(-2.12194440e-4);  y = y - 0.5*z;  r = m + y;  r = r + f*0.693359375
func Log(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case x > math.MaxFloat32:
		return x
	}
	var e int32
	if x < 0x1p-126 {
		x = float32(x * 0x1p23)
		e = -23
	}
	b := math.Float32bits(x)
	e += int32(b>>23) - 126
	m := math.Float32frombits(b&0x807fffff | 126<<23)
	if m < logSqrtHalf {
		e--
		m = (m + m) - 1
	} else {
		m = m - 1
	}
	z := float32(m * m)
	p := float32(logP0*m) + logP1
	p = float32(p*m) + logP2
	p = float32(p*m) + logP3
	p = float32(p*m) + logP4
	p = float32(p*m) + logP5
	p = float32(p*m) + logP6
	p = float32(p*m) + logP7
	p = float32(p*m) + logP8
	y := float32(float32(p*m) * z)
	f := float32(e)
	y = y + float32(f*expLn2Lo)
	y = y - float32(0.5*z)
	r := m + y
	return r + float32(f*expLn2Hi)
}

const (
	// Cephes tanhf polynomial for |x| < 0.625: tanh(x) ~ x + x^3*P(x^2).
	tanhP0 float32 = -5.70498872745e-3
	tanhP1 float32 = 2.06390887954e-2
	tanhP2 float32 = -5.37397155531e-2
	tanhP3 float32 = 1.33314422036e-1
	tanhP4 float32 = -3.33332819422e-1
)

// Tanh returns the hyperbolic tangent of x. The op sequence (a = |x|, the sign bit cleared):
//
//	a < 2^-12 (incl. ±0)  -> x
//	a >= 0.625            -> e = Exp(a + a); y = 1 - 2/(e + 1); result y with the sign of x
//	                         (+Inf gives e = +Inf and y = 1)
//	otherwise (also NaN)  -> z = x*x; p = ((((P0*z + P1)*z + P2)*z + P3)*z + P4);
//	                         result ((p*z)*x) + x
func Tanh(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	if a < 0x1p-12 {
		return x
	}
	if a >= 0.625 {
		e := Exp(a + a)
		y := 1 - 2/(e+1)
		if x < 0 {
			y = -y
		}
		return y
	}
	z := float32(x * x)
	p := float32(tanhP0*z) + tanhP1
	p = float32(p*z) + tanhP2
	p = float32(p*z) + tanhP3
	p = float32(p*z) + tanhP4
	return float32(float32(p*z)*x) + x
}

const (
	sinTwoOverPi float32 = 0.636619772367581343 // 0x3f22f983
	// pi/2 = sinC1 + sinC2 + sinC3 + sinC4 + 8.3e-20: a four-part Cody-Waite split. sinC1 has 8,
	// sinC2 and sinC3 11 significant bits, so k*sinC1, k*sinC2 and k*sinC3 are exact for
	// |k| < 2^13 (|x| <~ 12867); only k*sinC4 rounds.
	sinC1 float32 = 1.5703125                      // 0x3fc90000
	sinC2 float32 = 4.837512969970703125e-4        // 0x39fda000
	sinC3 float32 = 7.549533620476722717285156e-8  // 0x33a22000
	sinC4 float32 = 2.563344068257089602980159e-12 // 0x2c34611a
	sinS0 float32 = -1.9515295891e-4               // sin(r) ~ r + r^3*S(r^2) on |r| <= pi/4
	sinS1 float32 = 8.3321608736e-3
	sinS2 float32 = -1.6666654611e-1
	cosC0 float32 = 2.443315711809948e-5 // cos(r) ~ 1 - r^2/2 + r^4*C(r^2) on |r| <= pi/4
	cosC1 float32 = -1.388731625493765e-3
	cosC2 float32 = 4.166664568298827e-2
)

// sinCosReduce reduces x to r in [-pi/4, pi/4] (about) and the quadrant q = k mod 4, where
// x = k*pi/2 + r:
//
//	s = x*(2/pi) + 1.5*2^23;  k = s - 1.5*2^23;  q = (bits of s) & 3
//	r = (((x - k*C1) - k*C2) - k*C3) - k*C4
func sinCosReduce(x float32) (r float32, q uint32) {
	s := float32(x*sinTwoOverPi) + roundMagic
	k := s - roundMagic
	q = math.Float32bits(s) & 3
	r = (((x - float32(k*sinC1)) - float32(k*sinC2)) - float32(k*sinC3)) - float32(k*sinC4)
	return r, q
}

// sinPoly is sin(r) on the reduced range: z = r*r; p = (S0*z + S1)*z + S2; ((p*z)*r) + r.
func sinPoly(r float32) float32 {
	z := float32(r * r)
	p := float32(sinS0*z) + sinS1
	p = float32(p*z) + sinS2
	return float32(float32(p*z)*r) + r
}

// cosPoly is cos(r) on the reduced range: z = r*r; p = (C0*z + C1)*z + C2;
// (((p*z)*z) - 0.5*z) + 1.
func cosPoly(r float32) float32 {
	z := float32(r * r)
	p := float32(cosC0*z) + cosC1
	p = float32(p*z) + cosC2
	return (float32(float32(p*z)*z) - float32(0.5*z)) + 1
}

// Sin returns the sine of x (radians). The op sequence: |x| < 2^-12 (incl. ±0) -> x; otherwise
// (r, q) = reduce(x) as sinCosReduce documents, then q = 0: sinPoly(r), 1: cosPoly(r),
// 2: -sinPoly(r), 3: -cosPoly(r). ±Inf and NaN give NaN. Accurate for |x| <= 8192; beyond, the
// same sequence still defines the bits but the reduction loses accuracy (the float32 x itself is
// then coarser than 1e-3 anyway).
func Sin(x float32) float32 {
	if math.Float32frombits(math.Float32bits(x)&^(1<<31)) < 0x1p-12 {
		return x
	}
	r, q := sinCosReduce(x)
	switch q {
	case 0:
		return sinPoly(r)
	case 1:
		return cosPoly(r)
	case 2:
		return -sinPoly(r)
	default:
		return -cosPoly(r)
	}
}

// Cos returns the cosine of x (radians): (r, q) = reduce(x), then q = 0: cosPoly(r),
// 1: -sinPoly(r), 2: -cosPoly(r), 3: sinPoly(r). ±Inf and NaN give NaN. Accuracy as for Sin.
func Cos(x float32) float32 {
	r, q := sinCosReduce(x)
	switch q {
	case 0:
		return cosPoly(r)
	case 1:
		return -sinPoly(r)
	case 2:
		return -cosPoly(r)
	default:
		return sinPoly(r)
	}
}

// Sqrt returns the correctly rounded float32 square root of x (IEEE sqrt; contract 2).
func Sqrt(x float32) float32 {
	// The float64 square root of a float32 rounded once to float32 is the correctly rounded
	// float32 square root (53 >= 2*24+2).
	return float32(math.Sqrt(float64(x)))
}

// Rsqrt returns 1/sqrt(x) as two correctly rounded operations: s = Sqrt(x); 1/s. So
// Rsqrt(+0) = +Inf, Rsqrt(-0) = -Inf, Rsqrt(+Inf) = +0 and negative x gives NaN.
func Rsqrt(x float32) float32 {
	return 1 / Sqrt(x)
}

const (
	geluSqrt2OverPi float32 = 0.79788456080286535587989211986876 // 0x3f4c422a, ggml's SQRT_2_OVER_PI
	geluCoefA       float32 = 0.044715                           // ggml's GELU_COEF_A
)

// Silu returns x*sigmoid(x) as ggml's ggml_silu_f32 writes it: x / (1 + Exp(-x)).
// Silu(-Inf) is NaN (-Inf/+Inf), as in ggml.
func Silu(x float32) float32 {
	return x / (1 + Exp(-x))
}

// Gelu returns ggml's tanh-approximated GELU (ggml_gelu_f32), with the op order:
//
//	u = (geluCoefA*x)*x;  v = (sqrt(2/pi)*x) * (1 + u);  t = Tanh(v);  result (0.5*x) * (1 + t)
//
// (geluCoefA = 0.044715, sqrt(2/pi) = 0x3f4c422a.) ggml's CPU backend by default looks GELU up in
// an f16 table instead; that is a ggml implementation detail, not this definition.
func Gelu(x float32) float32 {
	u := float32(float32(geluCoefA*x) * x)
	v := float32(float32(geluSqrt2OverPi*x) * (1 + u))
	t := Tanh(v)
	return float32(float32(0.5*x) * (1 + t))
}

// Swiglu returns Silu(x) * g (ggml's swiglu: the gate g multiplies the activated x).
func Swiglu(x, g float32) float32 {
	return float32(Silu(x) * g)
}

// FloatToInt32 is the oracle's float32 -> int32 conversion: truncation toward zero; NaN and values
// outside [-2^31, 2^31) give math.MinInt32 (what x86's cvttss2si yields, and so what ggml's C casts
// give on x86). Narrower integer results (int8, uint8) keep the low bits of this int32. GPU
// languages leave the out-of-range case undefined, so a backend that can meet it must select the
// value explicitly.
func FloatToInt32(f float32) int32 {
	if f != f || f >= 2147483648 || f < -2147483648 {
		return math.MinInt32
	}
	return int32(f)
}

// Int32ToFloat is the oracle's int32 -> float32 conversion: round to nearest, ties to even (exact
// for |i| <= 2^24).
func Int32ToFloat(i int32) float32 {
	return float32(i)
}

// ---- The rest of the math library: rounding, sign and NaN rules, Fma, Exp2, Log2, Pow, Erf. ----
//
// Each function below is the oracle twin of a dsl.Value method of the same name (dsl/math.go).
// The rounding, sign and min/max functions are exact (their result is the correctly rounded one
// by definition); they are written here with Go's math package, independently of the DSL's
// bit-level sequences. Fma is exact too (math/big). Exp2, Log2, Pow and Erf are op sequences like
// Exp above: the sequence is the definition, and their accuracy is measured by the tests.

// Floor returns the largest integer value <= x (exact; NaN, ±Inf and ±0 are returned as they are).
func Floor(x float32) float32 { return float32(math.Floor(float64(x))) }

// Ceil returns the smallest integer value >= x (exact; Ceil(-0.5) = -0).
func Ceil(x float32) float32 { return float32(math.Ceil(float64(x))) }

// Trunc returns x rounded toward zero to an integer value (exact; Trunc(-0.5) = -0).
func Trunc(x float32) float32 { return float32(math.Trunc(float64(x))) }

// Round returns x rounded to the nearest integer value, ties to even (IEEE roundToIntegralTiesToEven:
// Round(0.5) = 0, Round(1.5) = 2, Round(-2.5) = -2, Round(-0.25) = -0).
func Round(x float32) float32 { return float32(math.RoundToEven(float64(x))) }

// Abs returns |x| (the sign bit cleared; a NaN stays a NaN).
func Abs(x float32) float32 { return float32(math.Abs(float64(x))) }

// Copysign returns |x| with the sign bit of y (also for NaN and zero y).
func Copysign(x, y float32) float32 {
	return math.Float32frombits(math.Float32bits(x)&^(1<<31) | math.Float32bits(y)&(1<<31))
}

// Min returns the IR's min: b < a ? b : a. NaN rules follow from the comparison: Min(NaN, 1) =
// NaN, Min(1, NaN) = 1; Min(+0, -0) = +0, Min(-0, +0) = -0.
func Min(a, b float32) float32 {
	if b < a {
		return b
	}
	return a
}

// Max returns the IR's max: a > b ? a : b (MaxOp, numeric rule 4): Max(NaN, 1) = 1,
// Max(1, NaN) = NaN; Max(+0, -0) = -0, Max(-0, +0) = +0.
func Max(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// MinNum is IEEE 754-2019 minimumNumber: the smaller of a and b, ignoring a NaN operand (NaN
// only when both are NaN), with -0 < +0. Symmetric in a and b.
func MinNum(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == 0 && b == 0:
		if math.Signbit(float64(a)) {
			return a
		}
		return b
	case a < b:
		return a
	}
	return b
}

// MaxNum is IEEE 754-2019 maximumNumber: the larger of a and b, ignoring a NaN operand (NaN only
// when both are NaN), with +0 > -0. Symmetric in a and b.
func MaxNum(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == 0 && b == 0:
		if math.Signbit(float64(a)) {
			return b
		}
		return a
	case a > b:
		return a
	}
	return b
}

// Clamp returns Min(Max(x, lo), hi) with the IR's Min and Max: a NaN x gives lo (then hi if lo
// is above hi); a NaN lo or hi is ignored only where the comparisons say so.
func Clamp(x, lo, hi float32) float32 { return Min(Max(x, lo), hi) }

// Fma returns a*b + c computed exactly and rounded once to nearest even (IEEE fusedMultiplyAdd):
// no rounding of the product, the IEEE special cases (0*Inf is NaN, an exact zero sum is +0
// unless both addends are -0, a product that overflows float32 still cancels against c).
func Fma(a, b, c float32) float32 {
	fa, fb, fc := float64(a), float64(b), float64(c)
	if math.IsNaN(fa) || math.IsNaN(fb) || math.IsNaN(fc) || math.IsInf(fa, 0) || math.IsInf(fb, 0) ||
		math.IsInf(fc, 0) || fa == 0 || fb == 0 || fc == 0 {
		// The float64 product of two float32 values is exact, and with a zero or non-finite
		// operand the sum is exact or special: one rounding, to float32.
		return float32(fa*fb + fc)
	}
	// Exactly: 24x24-bit product (48 bits) plus a float32 spans at most 48+24+298 bits.
	p := new(big.Float).SetPrec(1024).SetFloat64(fa)
	p.Mul(p, new(big.Float).SetFloat64(fb))
	p.Add(p, new(big.Float).SetFloat64(fc))
	if p.Sign() == 0 {
		return 0 // an exact zero sum of nonzero addends is +0 under round to nearest
	}
	f, _ := p.Float32() // nearest float32, ties to even, subnormals and overflow included
	return f
}

const (
	// Exp2 polynomial: 2^f ~ 1 + f*(E0 + f*(E1 + ... + f*E6)) on |f| <= 0.5 (a least-squares
	// minimax fit of (2^f-1)/f in relative error, coefficients rounded to float32; relative error
	// of the polynomial 2^-34).
	exp2E0 float32 = 0.693147182  // 0x3f317218
	exp2E1 float32 = 0.240226507  // 0x3e75fdf0
	exp2E2 float32 = 0.0555041023 // 0x3d635845
	exp2E3 float32 = 0.00961803831
	exp2E4 float32 = 0.00133339351
	exp2E5 float32 = 0.000154667810
	exp2E6 float32 = 1.51961303e-05
)

// exp2Core returns 2^(th+tl) for |th| <= 160 and |tl| <= 2^-16 (the low part of a double-float
// argument; 0 for Exp2). The op sequence:
//
//	s = th + 1.5*2^23;  n = s - 1.5*2^23   (n = round-half-even(th))
//	f = (th - n) + tl                      (th - n exact)
//	p = ((((((E6*f + E5)*f + E4)*f + E3)*f + E2)*f + E1)*f + E0)
//	r = 1 + p*f
//	ni = n as an integer (the low mantissa bits of s); n1 = ni >> 1 (arithmetic); n2 = ni - n1
//	result = (r * 2^n1) * 2^n2             (2^k from its exponent bits; the first product exact)
func exp2Core(th, tl float32) float32 {
	s := th + roundMagic
	n := s - roundMagic
	f := (th - n) + tl
	p := float32(exp2E6*f) + exp2E5
	p = float32(p*f) + exp2E4
	p = float32(p*f) + exp2E3
	p = float32(p*f) + exp2E2
	p = float32(p*f) + exp2E1
	p = float32(p*f) + exp2E0
	r := 1 + float32(p*f)
	ni := int32(math.Float32bits(s)&0x7fffff) - 0x400000
	n1 := ni >> 1
	n2 := ni - n1
	r = float32(r * pow2f(n1))
	return float32(r * pow2f(n2))
}

// Exp2 returns 2^x: NaN -> NaN; x clamped to [-160, 160] (so +Inf -> +Inf and -Inf -> +0 fall
// out); then exp2Core(x, 0). Results in the subnormal range are rounded once.
func Exp2(x float32) float32 {
	if x != x {
		return x
	}
	if x > 160 {
		x = 160
	}
	if x < -160 {
		x = -160
	}
	return exp2Core(x, 0)
}

// twoSum returns s = RN(a+b) and the exact error e: s + e = a + b (Knuth; six operations).
func twoSum(a, b float32) (s, e float32) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

// fastTwoSum returns s = RN(a+b) and e = b - (s - a), exact when |a| >= |b| (Dekker).
func fastTwoSum(a, b float32) (s, e float32) {
	s = a + b
	e = b - (s - a)
	return s, e
}

// split returns h, l with h + l = a, each of at most 12 significant bits (Veltkamp, with
// 4097 = 2^12 + 1): c = a*4097; h = c - (c - a); l = a - h.
func split(a float32) (h, l float32) {
	c := float32(a * 4097)
	h = c - (c - a)
	return h, a - h
}

// twoProd returns p = RN(a*b) and the error e = a*b - p (Dekker, exact when no intermediate
// underflows or overflows): e = (((ah*bh - p) + ah*bl) + al*bh) + al*bl.
func twoProd(a, b float32) (p, e float32) {
	p = float32(a * b)
	ah, al := split(a)
	bh, bl := split(b)
	e = float32(ah*bh) - p
	e = e + float32(ah*bl)
	e = e + float32(al*bh)
	e = e + float32(al*bl)
	return p, e
}

// log2Table holds log2(j/16) for j = 11..23 as float32 pairs hi + lo (hi the nearest float32,
// lo the nearest float32 to the rest): the centers of log2D's range reduction.
var log2Table = [13][2]float32{
	{-0.540568352, -2.96170981e-08}, // j = 11
	{-0.415037513, 1.35003919e-08},
	{-0.299560279, -3.20480931e-09},
	{-0.192645073, -5.00538411e-09},
	{-0.0931094065, 2.13937557e-09},
	{0, 0}, // j = 16
	{0.0874628425, -1.21410759e-09},
	{0.169925004, -2.80153811e-09},
	{0.247927517, -3.25525162e-09},
	{0.321928084, 1.09907257e-08},
	{0.392317414, 8.49500825e-09},
	{0.459431618, 1.85225169e-10},
	{0.523561954, 1.55872182e-09}, // j = 23
}

const (
	log2eHi  float32 = 1.44269502     // 0x3fb8aa3b, log2(e) rounded
	log2eLo  float32 = 1.92596303e-08 // 0x32a57060, log2(e) - log2eHi rounded
	sqrt2F   float32 = 1.41421354     // 0x3fb504f3, sqrt(2) rounded down
	atanhA3  float32 = 0.666666687    // 2/3
	atanhA5  float32 = 0.400000006    // 2/5
	atanhA7  float32 = 0.285714298    // 2/7
	split12  float32 = 4097
	log2Inv  float32 = 0.0625
	pow2Clip float32 = 4294967296 // 2^32: |y| beyond it over/underflows every Pow with x != 1
)

// log2D returns log2(a) as a double-float hi + lo (relative error about 2^-40) for a finite
// a > 0. The op sequence:
//
//	e = 0; if a < 2^-126 { a = a * 2^23; e = -23 }          (subnormal: exact rescale)
//	e = e + (exponent field of a) - 127; m = a with its exponent field set to 127  (m in [1, 2))
//	if m >= 1.41421354 { m = m * 0.5; e = e + 1 }            (m in [0.7071, 1.4142))
//	j = round-half-even(m*16) via 1.5*2^23; c = j * 0.0625   (c = j/16, j in 11..23)
//	u = m - c (exact);  (vh, vl) = twoSum(m, c)
//	sh = u / vh;  (ph, pl) = twoProd(sh, vh);  sl = (((u - ph) - pl) - sh*vl) / vh
//	s2 = sh*sh;  t = (s2*sh) * ((A7*s2 + A5)*s2 + A3)      (A3, A5, A7 = 2/3, 2/5, 2/7)
//	a2 = sh + sh;  r = (sl + sl) + t                       (ln(m/c) = 2 atanh(s) = a2 + r)
//	(qh, ql) = twoProd(a2, log2eHi);  ql = ql + (a2*log2eLo + r*log2eHi)
//	(h1, l1) = twoSum(float32(e), log2(c).hi);  (h2, l2) = twoSum(h1, qh)
//	lo = ((l1 + l2) + log2(c).lo) + ql;  (hi, lo) = fastTwoSum(h2, lo)
//
// twoSum, fastTwoSum and twoProd (with split) are the error-free transformations written out
// above. For a = 1 (and every power of two) the result is exact.
func log2D(a float32) (hi, lo float32) {
	var e int32
	if a < 0x1p-126 {
		a = float32(a * 0x1p23)
		e = -23
	}
	b := math.Float32bits(a)
	e += int32(b>>23) - 127
	m := math.Float32frombits(b&0x7fffff | 127<<23)
	if m >= sqrt2F {
		m = float32(m * 0.5)
		e++
	}
	sj := float32(m*16) + roundMagic
	jf := sj - roundMagic
	c := float32(jf * log2Inv)
	j := int32(math.Float32bits(sj)&0x7fffff) - 0x400000
	u := m - c
	vh, vl := twoSum(m, c)
	sh := u / vh
	ph, pl := twoProd(sh, vh)
	sl := (((u - ph) - pl) - float32(sh*vl)) / vh
	s2 := float32(sh * sh)
	t := float32(float32(s2*sh) * (float32(float32(float32(atanhA7*s2)+atanhA5)*s2) + atanhA3))
	a2 := sh + sh
	r := (sl + sl) + t
	qh, ql := twoProd(a2, log2eHi)
	ql = ql + (float32(a2*log2eLo) + float32(r*log2eHi))
	ch, cl := log2Table[j-11][0], log2Table[j-11][1]
	h1, l1 := twoSum(float32(e), ch)
	h2, l2 := twoSum(h1, qh)
	lo = ((l1 + l2) + cl) + ql
	return fastTwoSum(h2, lo)
}

// Log2 returns the base-2 logarithm of x: NaN -> NaN, x < 0 -> NaN, ±0 -> -Inf, +Inf -> +Inf;
// otherwise the hi part of log2D(x) (which is hi + lo rounded once): exact for powers of two.
func Log2(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case x > math.MaxFloat32:
		return x
	}
	hi, _ := log2D(x)
	return hi
}

// isIntF reports whether the finite x is an integer; isOddF whether it is an odd one
// (|x| >= 2^24 is always even).
func isIntF(x float32) bool { return Floor(x) == x }
func isOddF(x float32) bool {
	return isIntF(x) && Abs(x) < 0x1p24 && int32(x)&1 == 1
}

// Pow returns x^y with the IEEE 754 (C99 Annex F) special cases, in this order:
//
//	y = ±0 -> 1;  x = 1 -> 1 (also for a NaN y);  x or y NaN -> NaN
//	y = ±Inf: |x| = 1 -> 1; (|x| > 1) == (y > 0) -> +Inf; otherwise +0
//	x = ±0 or ±Inf: the magnitude is +Inf where (x = ±Inf) == (y > 0), else 0; its sign is x's
//	  when y is an odd integer, else +
//	x < 0 and y not an integer -> NaN
//
// otherwise |x|^y is computed from the double-float logarithm and its sign is x's when y is an
// odd integer. The op sequence of |x|^y (ax = |x|):
//
//	yc = y clamped to [-2^32, 2^32]          (beyond, every x != 1 over- or underflows anyway)
//	(lh, ll) = log2D(ax)
//	(th, tl) = twoProd(yc, lh);  tl = tl + yc*ll;  (th, tl) = fastTwoSum(th, tl)
//	if th > 160 { th = 160; tl = 0 };  if th < -160 { th = -160; tl = 0 }
//	result = exp2Core(th, tl)
func Pow(x, y float32) float32 {
	ax := Abs(x)
	switch {
	case y == 0, x == 1:
		return 1
	case x != x || y != y:
		return float32(math.NaN())
	case math.IsInf(float64(y), 0):
		if ax == 1 {
			return 1
		}
		if (ax > 1) == (y > 0) {
			return float32(math.Inf(1))
		}
		return 0
	case ax == 0 || math.IsInf(float64(ax), 0):
		mag := float32(0)
		if math.IsInf(float64(ax), 0) == (y > 0) {
			mag = float32(math.Inf(1))
		}
		if isOddF(y) {
			return Copysign(mag, x)
		}
		return mag
	case x < 0 && !isIntF(y):
		return float32(math.NaN())
	}
	yc := y
	if yc > pow2Clip {
		yc = pow2Clip
	}
	if yc < -pow2Clip {
		yc = -pow2Clip
	}
	lh, ll := log2D(ax)
	th, tl := twoProd(yc, lh)
	tl = tl + float32(yc*ll)
	th, tl = fastTwoSum(th, tl)
	if th > 160 {
		th, tl = 160, 0
	}
	if th < -160 {
		th, tl = -160, 0
	}
	r := exp2Core(th, tl)
	if x < 0 && isOddF(y) {
		return -r
	}
	return r
}

const (
	// Erf on |x| < 0.875: erf(x) = x + x*Q(x^2), Q a fit of erf(x)/x - 1 (float32 coefficients).
	erfQ0 float32 = 0.128379166   // 0x3e0375d4
	erfQ1 float32 = -0.376126379  // 0xbec093a3
	erfQ2 float32 = 0.112837896   // 0x3de7178e
	erfQ3 float32 = -0.026865961  // 0xbcdc1601
	erfQ4 float32 = 0.00522288913 // 0x3bab24c5
	erfQ5 float32 = -0.000851736404
	erfQ6 float32 = 0.000115615287
	erfQ7 float32 = -1.06984889e-05
	// Erf on 0.875 <= |x| < 4: erf(a) = 1 - exp(-a^2) * R(a - 1.5), R a fit of erfcx(a) =
	// erfc(a)*exp(a^2) weighted by exp(-a^2) (float32 coefficients).
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
	erfOne float32 = 4            // |x| >= 4: erf(x) rounds to ±1
	erfC6  float32 = 0.166666672  // 1/6
	erfC24 float32 = 0.0416666679 // 1/24
)

// Erf returns the error function of x. The op sequence (a = |x|, the sign bit cleared):
//
//	a < 0.875:  z = x*x; q = Q(z) in Horner form (Q7 first); result x + x*q
//	a < 4:      ah = a with its low 12 mantissa bits cleared (ah*ah exact);
//	            d = (a - ah)*(a + ah)                    (a^2 = ah^2 + d)
//	            g = Exp(-(ah*ah)) * (1 + d*(-1 + d*(0.5 + d*(-1/6 + d*(1/24)))))  (exp(-a^2))
//	            w = R(a - 1.5) in Horner form (R10 first); y = 1 - g*w; result y with x's sign
//	otherwise:  1 with x's sign (±Inf too); NaN -> NaN
func Erf(x float32) float32 {
	a := Abs(x)
	if a < erfCut {
		z := float32(x * x)
		q := float32(erfQ7*z) + erfQ6
		q = float32(q*z) + erfQ5
		q = float32(q*z) + erfQ4
		q = float32(q*z) + erfQ3
		q = float32(q*z) + erfQ2
		q = float32(q*z) + erfQ1
		q = float32(q*z) + erfQ0
		return x + float32(x*q)
	}
	if a >= erfOne {
		return Copysign(1, x)
	}
	ah := math.Float32frombits(math.Float32bits(a) & 0xfffff000)
	d := float32((a - ah) * (a + ah))
	ed := float32(d*erfC24) - erfC6
	ed = float32(ed*d) + 0.5
	ed = float32(ed*d) - 1
	ed = float32(ed*d) + 1
	g := float32(Exp(-float32(ah*ah)) * ed)
	u := a - 1.5
	w := float32(erfR10*u) + erfR9
	for _, c := range [...]float32{erfR8, erfR7, erfR6, erfR5, erfR4, erfR3, erfR2, erfR1, erfR0} {
		w = float32(w*u) + c
	}
	return Copysign(1-float32(g*w), x)
}
