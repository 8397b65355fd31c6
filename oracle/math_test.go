package oracle

import (
	"math"
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
