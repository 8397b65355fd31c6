package oracle

import "math"

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
