package oracle

import (
	"math"
	"math/rand"
	"testing"
)

// ulpErr returns |got - want| in units of the float32 ULP at want (the spacing of float32 values
// next to the correctly rounded result; 2^-149 in the subnormal range). want is a float64
// reference, accurate to far below a float32 ULP. Matching infinities or NaNs count as 0.
func mathULPErr(got float32, want float64) float64 {
	g := float64(got)
	if math.IsNaN(g) && math.IsNaN(want) {
		return 0
	}
	if math.IsInf(want, 0) || math.IsInf(g, 0) {
		if float64(float32(want)) == g {
			return 0
		}
		if math.IsInf(g, 0) && !math.IsInf(float64(float32(want)), 0) {
			return math.Inf(1)
		}
		if !math.IsInf(g, 0) && math.IsInf(float64(float32(want)), 0) {
			// want rounds to Inf in float32: count the distance to MaxFloat32 plus one.
			return math.Abs(g-math.Copysign(math.MaxFloat32, want))/mathULPAt(math.MaxFloat32) + 1
		}
	}
	if math.IsNaN(g) != math.IsNaN(want) {
		return math.Inf(1)
	}
	return math.Abs(g-want) / mathULPAt(want)
}

// ulpAt is the float32 ULP at |w|: 2^(e-23) for w in [2^e, 2^(e+1)), at least 2^-149.
func mathULPAt(w float64) float64 {
	w = math.Abs(w)
	if w < 0x1p-126 {
		return 0x1p-149
	}
	_, e := math.Frexp(w) // w = f*2^e, f in [0.5, 1)
	return math.Ldexp(1, e-1-23)
}

// samples calls f with about n float32 values of [lo, hi]: half spread evenly over the values
// (linear), half evenly over the bit patterns of each sign (so tiny magnitudes are covered too).
func mathSamples(lo, hi float32, n int, f func(x float32)) {
	for i := 0; i < n/2; i++ {
		f(lo + float32(float64(hi-lo)*float64(i)/float64(n/2)))
	}
	f(hi)
	span := func(ba, bb uint32) { // walk the bit patterns ba..bb of one sign
		step := (bb - ba) / uint32(n/4)
		if step == 0 {
			step = 1
		}
		for u := ba; u <= bb && u >= ba; u += step {
			f(math.Float32frombits(u))
		}
	}
	if lo < 0 {
		span(1<<31, math.Float32bits(lo))
	}
	if hi > 0 {
		span(math.Float32bits(max(lo, 0)), math.Float32bits(hi))
	}
}

func TestPortableMathULP(t *testing.T) {
	cases := []struct {
		name   string
		f      func(float32) float32
		ref    func(float64) float64
		lo, hi float32
		bound  float64 // max ULP asserted
	}{
		{"exp", Exp, math.Exp, -87.33, 88.72, 1},
		{"exp subnormal results", Exp, math.Exp, -103.9, -87.34, 1},
		{"log", Log, math.Log, 0, math.MaxFloat32, 1},
		{"tanh", Tanh, math.Tanh, -12, 12, 2},
		{"sin", Sin, math.Sin, -8192, 8192, 2.5},
		{"cos", Cos, math.Cos, -8192, 8192, 2.5},
		{"sin small", Sin, math.Sin, -4, 4, 1.5},
		{"cos small", Cos, math.Cos, -4, 4, 1.5},
		{"sin large", Sin, math.Sin, -12800, 12800, 2.5},
		{"rsqrt", Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, 0, math.MaxFloat32, 1.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			worst, worstX := 0.0, float32(0)
			mathSamples(c.lo, c.hi, 2_000_000, func(x float32) {
				e := mathULPErr(c.f(x), c.ref(float64(x)))
				if e > worst || math.IsNaN(e) {
					worst, worstX = e, x
				}
			})
			t.Logf("%-22s max %.3f ULP on [%g, %g] (at x=%g)", c.name, worst, c.lo, c.hi, worstX)
			if !(worst <= c.bound) {
				t.Errorf("%s: max error %.3f ULP at x=%g (%#x) exceeds %g", c.name, worst, worstX, math.Float32bits(worstX), c.bound)
			}
		})
	}
}

// TestSinCosAbsolute bounds the absolute error of Sin and Cos over the rope range, where the
// relative (ULP) error near a root is not the useful measure.
func TestSinCosAbsolute(t *testing.T) {
	worst := 0.0
	mathSamples(-12800, 12800, 2_000_000, func(x float32) {
		worst = math.Max(worst, math.Abs(float64(Sin(x))-math.Sin(float64(x))))
		worst = math.Max(worst, math.Abs(float64(Cos(x))-math.Cos(float64(x))))
	})
	t.Logf("sin/cos max absolute error on [-12800, 12800]: %.3g", worst)
	if worst > 1e-7 {
		t.Errorf("sin/cos absolute error %g > 1e-7", worst)
	}
}

// TestActivationAccuracy measures the composite activations against float64 formulas: absolute
// error over a wide range, and ULP where the result is not the product of a cancellation.
func TestActivationAccuracy(t *testing.T) {
	geluRef := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
	}
	siluRef := func(x float64) float64 { return x / (1 + math.Exp(-x)) }
	cases := []struct {
		name   string
		f      func(float32) float32
		ref    func(float64) float64
		lo, hi float32
		ulp    float64 // asserted max ULP on [ulpLo, hi]
		ulpLo  float32
		absBnd float64 // asserted max absolute error / max(1, |ref|) on [lo, hi]
	}{
		{"silu", Silu, siluRef, -80, 80, 3, -80, 2e-7},
		{"gelu", Gelu, geluRef, -12, 12, 4, -1, 2e-7},
	}
	for _, c := range cases {
		worstU, worstA := 0.0, 0.0
		var wx float32
		mathSamples(c.lo, c.hi, 1_000_000, func(x float32) {
			want := c.ref(float64(x))
			got := c.f(x)
			a := math.Abs(float64(got)-want) / math.Max(1, math.Abs(want))
			worstA = math.Max(worstA, a)
			if x >= c.ulpLo {
				if u := mathULPErr(got, want); u > worstU {
					worstU, wx = u, x
				}
			}
		})
		t.Logf("%-5s max %.3f ULP on [%g, %g] (at %g), max abs/rel error %.3g on [%g, %g]", c.name, worstU, c.ulpLo, c.hi, wx, worstA, c.lo, c.hi)
		if worstU > c.ulp || worstA > c.absBnd {
			t.Errorf("%s: %.3f ULP (bound %g), abs %.3g (bound %g)", c.name, worstU, c.ulp, worstA, c.absBnd)
		}
	}
}

func TestMathSpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	same := func(a, b float32) bool {
		if a != a && b != b {
			return true // any NaN equals any NaN
		}
		return math.Float32bits(a) == math.Float32bits(b)
	}
	cases := []struct {
		name string
		got  float32
		want float32
	}{
		{"exp(NaN)", Exp(nan), nan},
		{"exp(+Inf)", Exp(inf), inf},
		{"exp(-Inf)", Exp(-inf), 0},
		{"exp(0)", Exp(0), 1},
		{"exp(-0)", Exp(negZero), 1},
		{"exp(89)", Exp(89), inf},
		{"exp(-104)", Exp(-104), 0},
		{"exp(-103) subnormal", Exp(-103), float32(math.Exp(-103))},
		{"log(1)", Log(1), 0},
		{"log(0)", Log(0), -inf},
		{"log(-0)", Log(negZero), -inf},
		{"log(-1)", Log(-1), nan},
		{"log(+Inf)", Log(inf), inf},
		{"log(NaN)", Log(nan), nan},
		{"log(2^-149)", Log(0x1p-149), float32(-149 * math.Ln2)},
		{"tanh(-0)", Tanh(negZero), negZero},
		{"tanh(+Inf)", Tanh(inf), 1},
		{"tanh(-Inf)", Tanh(-inf), -1},
		{"tanh(NaN)", Tanh(nan), nan},
		{"tanh(2^-140)", Tanh(0x1p-140), 0x1p-140},
		{"sin(-0)", Sin(negZero), negZero},
		{"sin(+Inf)", Sin(inf), nan},
		{"cos(0)", Cos(0), 1},
		{"cos(NaN)", Cos(nan), nan},
		{"cos(-Inf)", Cos(-inf), nan},
		{"rsqrt(0)", Rsqrt(0), inf},
		{"rsqrt(-0)", Rsqrt(negZero), -inf},
		{"rsqrt(+Inf)", Rsqrt(inf), 0},
		{"rsqrt(-1)", Rsqrt(-1), nan},
		{"rsqrt(4)", Rsqrt(4), 0.5},
		{"rsqrt(2^-148) denormal in", Rsqrt(0x1p-148), 0x1p74},
		{"silu(0)", Silu(0), 0},
		{"silu(-100)", Silu(-100), negZero},
		{"silu(-Inf)", Silu(-inf), nan},
		{"silu(+Inf)", Silu(inf), inf},
		{"gelu(0)", Gelu(0), 0},
		{"gelu(+Inf)", Gelu(inf), inf},
		{"gelu(-Inf)", Gelu(-inf), nan},
		{"swiglu(1,0)", Swiglu(1, 0), 0},
	}
	for _, c := range cases {
		if !same(c.got, c.want) {
			t.Errorf("%s = %v (%#x), want %v (%#x)", c.name, c.got, math.Float32bits(c.got), c.want, math.Float32bits(c.want))
		}
	}
}

// TestNoContraction checks that the library rounds products before adding: on inputs where a fused
// multiply-add gives a different float32, Exp's polynomial step must match the two-rounding
// value. The check computes one Exp step both ways by hand.
func TestNoContraction(t *testing.T) {
	// a*b+c with a = b = 1+2^-12, c = -(1+2^-11): exact a*b = 1 + 2^-11 + 2^-24; rounding the
	// product first loses the 2^-24 (tie to even), so the unfused sum is 0 and the fused one 2^-24.
	a := float32(1 + 0x1p-12)
	c := float32(-(1 + 0x1p-11))
	unfused := float32(a*a) + c
	fused := float32(math.FMA(float64(a), float64(a), float64(c)))
	if unfused != 0 || fused == unfused {
		t.Fatalf("test premise: unfused %g fused %g", unfused, fused)
	}
}

func TestIntFloatConversions(t *testing.T) {
	cases := []struct {
		f    float32
		want int32
	}{
		{0, 0}, {-0.0, 0}, {1.9, 1}, {-1.9, -1}, {2147483520, 2147483520}, {-2147483648, math.MinInt32},
		{2147483648, math.MinInt32}, {float32(math.Inf(1)), math.MinInt32}, {float32(math.Inf(-1)), math.MinInt32},
		{float32(math.NaN()), math.MinInt32}, {0x1p-149, 0}, {-0x1p-149, 0},
	}
	for _, c := range cases {
		if got := FloatToInt32(c.f); got != c.want {
			t.Errorf("FloatToInt32(%g) = %d, want %d", c.f, got, c.want)
		}
	}
	ic := []struct {
		i    int32
		want float32
	}{
		{0, 0}, {-1, -1}, {1 << 24, 0x1p24}, {1<<24 + 1, 0x1p24}, {1<<24 + 3, 0x1p24 + 4}, {math.MaxInt32, 0x1p31}, {math.MinInt32, -0x1p31},
	}
	for _, c := range ic {
		if got := Int32ToFloat(c.i); got != c.want {
			t.Errorf("Int32ToFloat(%d) = %g, want %g", c.i, got, c.want)
		}
	}
}

// TestMathLibraryULP measures Exp2, Log2, Pow and Erf against float64 math over dense samples
// and asserts the bounds documented in dsl/math.go and on each function.
func TestMathLibraryULP(t *testing.T) {
	erfRef := math.Erf
	cases := []struct {
		name   string
		f      func(float32) float32
		ref    func(float64) float64
		lo, hi float32
		bound  float64
	}{
		{"exp2", Exp2, math.Exp2, -126, 128, 1.5},
		{"exp2 subnormal results", Exp2, math.Exp2, -151, -126, 1.5},
		{"log2", Log2, math.Log2, 0, math.MaxFloat32, 0.51},
		{"log2 near 1", Log2, math.Log2, 0.5, 2, 0.51},
		{"erf", Erf, erfRef, -6, 6, 1.5},
		{"erf small", Erf, erfRef, -1, 1, 1.5},
		{"pow(x, 2.5)", func(x float32) float32 { return Pow(x, 2.5) }, func(x float64) float64 { return math.Pow(x, 2.5) }, 0, 3e15, 1.5},
		{"pow(x, -1/3)", func(x float32) float32 { return Pow(x, -1.0/3) }, func(x float64) float64 { return math.Pow(x, float64(float32(-1.0/3))) }, 0, math.MaxFloat32, 1.5},
		{"pow(1.0001, y)", func(y float32) float32 { return Pow(1.0001, y) }, func(y float64) float64 { return math.Pow(float64(float32(1.0001)), y) }, -1e6, 1e6, 1.5},
		{"pow(0.999, y)", func(y float32) float32 { return Pow(0.999, y) }, func(y float64) float64 { return math.Pow(float64(float32(0.999)), y) }, -80000, 80000, 1.5},
		{"pow(-3, y)", func(y float32) float32 { return Pow(-3, y) }, func(y float64) float64 { return math.Pow(-3, y) }, -90, 90, 1.5},
		{"pow(x, 7)", func(x float32) float32 { return Pow(x, 7) }, func(x float64) float64 { return math.Pow(x, 7) }, -3e5, 3e5, 1.5},
		{"pow(2^-140, y)", func(y float32) float32 { return Pow(0x1p-140, y) }, func(y float64) float64 { return math.Pow(0x1p-140, y) }, -0.9, 1.07, 1.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			worst, worstX := 0.0, float32(0)
			mathSamples(c.lo, c.hi, 1_000_000, func(x float32) {
				e := mathULPErr(c.f(x), c.ref(float64(x)))
				if e > worst || math.IsNaN(e) {
					worst, worstX = e, x
				}
			})
			t.Logf("%-24s max %.3f ULP on [%g, %g] (at %g)", c.name, worst, c.lo, c.hi, worstX)
			if !(worst <= c.bound) {
				t.Errorf("%s: max error %.3f ULP at %g (%#x) exceeds %g", c.name, worst, worstX, math.Float32bits(worstX), c.bound)
			}
		})
	}
}

// TestPowRandom measures Pow over random finite pairs whose result is in the normal range or
// underflows, against float64 math.Pow, and checks that integer powers of small integers are
// exact.
func TestPowRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	worst := 0.0
	var wx, wy float32
	for i := 0; i < 2_000_000; i++ {
		x := math.Float32frombits(rng.Uint32() & 0x7fffffff)
		if x != x || math.IsInf(float64(x), 0) || x == 0 {
			continue
		}
		l := math.Log2(float64(x))
		// y spread so that |y*log2(x)| covers 0 .. 160 (over- and underflow included).
		y := float32((rng.Float64()*2 - 1) * 160 / math.Max(math.Abs(l), 1e-9) * rng.Float64())
		want := math.Pow(float64(x), float64(y))
		if e := mathULPErr(Pow(x, y), want); e > worst {
			worst, wx, wy = e, x, y
		}
	}
	t.Logf("pow random: max %.3f ULP (at x=%g y=%g)", worst, wx, wy)
	if worst > 1.5 {
		t.Errorf("pow: %.3f ULP at x=%g (%#x) y=%g (%#x)", worst, wx, math.Float32bits(wx), wy, math.Float32bits(wy))
	}
	for b := 2; b <= 20; b++ {
		for n := -20; n <= 20; n++ {
			want := math.Pow(float64(b), float64(n))
			if float64(float32(want)) != want {
				continue // not a float32
			}
			if got := Pow(float32(b), float32(n)); float64(got) != want {
				t.Errorf("Pow(%d, %d) = %g, want exactly %g", b, n, got, want)
			}
		}
	}
}

// TestMathLibrarySpecial checks the special values of the library: the IEEE cases of Pow (C99
// Annex F), the sign and NaN rules of the rounding functions, MinNum/MaxNum, Copysign, Clamp and
// Fma, each against the value the standard names.
func TestMathLibrarySpecial(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	nz := float32(math.Copysign(0, -1))
	same := func(a, b float32) bool {
		if a != a && b != b {
			return true
		}
		return math.Float32bits(a) == math.Float32bits(b)
	}
	cases := []struct {
		name      string
		got, want float32
	}{
		{"pow(NaN, 0)", Pow(nan, 0), 1},
		{"pow(NaN, -0)", Pow(nan, nz), 1},
		{"pow(1, NaN)", Pow(1, nan), 1},
		{"pow(-1, +Inf)", Pow(-1, inf), 1},
		{"pow(-1, -Inf)", Pow(-1, -inf), 1},
		{"pow(NaN, 1)", Pow(nan, 1), nan},
		{"pow(2, NaN)", Pow(2, nan), nan},
		{"pow(0.5, +Inf)", Pow(0.5, inf), 0},
		{"pow(0.5, -Inf)", Pow(0.5, -inf), inf},
		{"pow(-2, +Inf)", Pow(-2, inf), inf},
		{"pow(-2, -Inf)", Pow(-2, -inf), 0},
		{"pow(+0, -3)", Pow(0, -3), inf},
		{"pow(-0, -3)", Pow(nz, -3), -inf},
		{"pow(-0, -2)", Pow(nz, -2), inf},
		{"pow(-0, -0.5)", Pow(nz, -0.5), inf},
		{"pow(-0, 3)", Pow(nz, 3), nz},
		{"pow(-0, 2)", Pow(nz, 2), 0},
		{"pow(-0, 0.5)", Pow(nz, 0.5), 0},
		{"pow(-Inf, -3)", Pow(-inf, -3), nz},
		{"pow(-Inf, -2)", Pow(-inf, -2), 0},
		{"pow(-Inf, 3)", Pow(-inf, 3), -inf},
		{"pow(-Inf, 2.5)", Pow(-inf, 2.5), inf},
		{"pow(+Inf, -1)", Pow(inf, -1), 0},
		{"pow(+Inf, 0.1)", Pow(inf, 0.1), inf},
		{"pow(-8, 1/3)", Pow(-8, 1.0/3), nan},
		{"pow(-2, 3)", Pow(-2, 3), -8},
		{"pow(-2, 2^24)", Pow(-2, 0x1p24), inf},
		{"pow(-0.5, 2^25+2)", Pow(-0.5, 0x1p25+2), 0},
		{"pow(2, 128)", Pow(2, 128), inf},
		{"pow(2, -149)", Pow(2, -149), 0x1p-149},
		{"pow(2, -150)", Pow(2, -150), 0},
		{"pow(3, 1e30)", Pow(3, 1e30), inf},
		{"pow(3, -1e30)", Pow(3, -1e30), 0},
		{"pow(1.0000001, 1e30)", Pow(1.0000001, 1e30), inf},
		{"exp2(128)", Exp2(128), inf},
		{"exp2(-149)", Exp2(-149), 0x1p-149},
		{"exp2(-Inf)", Exp2(-inf), 0},
		{"exp2(NaN)", Exp2(nan), nan},
		{"exp2(10)", Exp2(10), 1024},
		{"log2(1)", Log2(1), 0},
		{"log2(2^-149)", Log2(0x1p-149), -149},
		{"log2(2^127)", Log2(0x1p127), 127},
		{"log2(0)", Log2(0), -inf},
		{"log2(-0)", Log2(nz), -inf},
		{"log2(-1)", Log2(-1), nan},
		{"log2(+Inf)", Log2(inf), inf},
		{"erf(-0)", Erf(nz), nz},
		{"erf(+Inf)", Erf(inf), 1},
		{"erf(-Inf)", Erf(-inf), -1},
		{"erf(NaN)", Erf(nan), nan},
		{"erf(2^-149)", Erf(0x1p-149), 0x1p-149},
		{"round(0.5)", Round(0.5), 0},
		{"round(1.5)", Round(1.5), 2},
		{"round(2.5)", Round(2.5), 2},
		{"round(-2.5)", Round(-2.5), -2},
		{"round(-0.25)", Round(-0.25), nz},
		{"round(8388609)", Round(8388609), 8388609},
		{"ceil(-0.5)", Ceil(-0.5), nz},
		{"trunc(-0.5)", Trunc(-0.5), nz},
		{"floor(-0.5)", Floor(-0.5), -1},
		{"copysign(1, -0)", Copysign(1, nz), -1},
		{"copysign(NaN, -1) is NaN", Copysign(nan, -1), nan},
		{"minnum(NaN, 1)", MinNum(nan, 1), 1},
		{"minnum(1, NaN)", MinNum(1, nan), 1},
		{"minnum(+0, -0)", MinNum(0, nz), nz},
		{"minnum(-0, +0)", MinNum(nz, 0), nz},
		{"maxnum(+0, -0)", MaxNum(0, nz), 0},
		{"maxnum(-0, +0)", MaxNum(nz, 0), 0},
		{"maxnum(NaN, NaN)", MaxNum(nan, nan), nan},
		{"min(NaN, 1)", Min(nan, 1), nan},
		{"min(1, NaN)", Min(1, nan), 1},
		{"max(NaN, 1)", Max(nan, 1), 1},
		{"clamp(NaN, 0, 1)", Clamp(nan, 0, 1), 0},
		{"clamp(5, 0, 1)", Clamp(5, 0, 1), 1},
		{"fma(0, Inf, 1)", Fma(0, inf, 1), nan},
		{"fma(1e30, 1e30, -Inf)", Fma(1e30, 1e30, -inf), -inf},
		{"fma(2^100, 2^100, -Inf)... overflow product", Fma(0x1p100, 0x1p100, 1), inf},
		{"fma(-0, 1, +0)", Fma(nz, 1, 0), 0},
		{"fma(-0, 1, -0)", Fma(nz, 1, nz), nz},
		{"fma(1, 1, -1)", Fma(1, 1, -1), 0},
		{"fma(-2^-100, 2^-100, +0) underflows to -0", Fma(-0x1p-100, 0x1p-100, 0), nz},
		{"fma(1+2^-12, 1+2^-12, -(1+2^-11))", Fma(1+0x1p-12, 1+0x1p-12, -(1 + 0x1p-11)), 0x1p-24},
		{"fma(max, 2, -max) (product overflows float32)", Fma(math.MaxFloat32, 2, -math.MaxFloat32), math.MaxFloat32},
		{"fma(2^-75, 2^-75, 0) subnormal", Fma(0x1p-75, 0x1p-75, 0), 0},
		{"fma(2^-74, 2^-75, 0) min subnormal", Fma(0x1p-74, 0x1p-75, 0), 0x1p-149},
	}
	for _, c := range cases {
		if !same(c.got, c.want) {
			t.Errorf("%s = %v (%#x), want %v (%#x)", c.name, c.got, math.Float32bits(c.got), c.want, math.Float32bits(c.want))
		}
	}
}

// TestFmaRoundToOdd checks Fma (math/big) against an independent float64 computation: the
// product of two float32 values is exact in float64; the sum with c rounded to odd (TwoSum error,
// then the last bit set when inexact) and then to float32 is the correctly rounded a*b+c
// (53 >= 24+2 bits), for random operands of every scale, near-cancelling ones and ties.
func TestFmaRoundToOdd(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	ref := func(a, b, c float32) float32 {
		p := float64(a) * float64(b)
		s := p + float64(c)
		bb := s - p
		e := (p - (s - bb)) + (float64(c) - bb)
		if e != 0 && math.Float64bits(s)&1 == 0 {
			if (e > 0) == (s > 0) {
				s = math.Float64frombits(math.Float64bits(s) + 1)
			} else {
				s = math.Float64frombits(math.Float64bits(s) - 1)
			}
		}
		return float32(s)
	}
	for i := 0; i < 1_000_000; i++ {
		a := math.Float32frombits(rng.Uint32())
		b := math.Float32frombits(rng.Uint32())
		var c float32
		switch i % 4 {
		case 0:
			c = math.Float32frombits(rng.Uint32())
		case 1: // cancel against the rounded product
			c = -float32(a * b)
		case 2: // near a tie: the product's rounding error scaled
			c = -float32(a*b) * (1 + float32(rng.Intn(3)-1)*0x1p-24)
		default:
			c = math.Float32frombits(rng.Uint32()&0x80ffffff | uint32(rng.Intn(64))<<23)
		}
		fa, fb, fc := float64(a), float64(b), float64(c)
		if math.IsNaN(fa) || math.IsNaN(fb) || math.IsNaN(fc) || math.IsInf(fa*fb, 0) || math.IsInf(fc, 0) || fa*fb+fc == 0 {
			continue
		}
		if got, want := Fma(a, b, c), ref(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("Fma(%g, %g, %g) = %g (%#x), round-to-odd reference %g (%#x)", a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}
