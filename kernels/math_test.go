package kernels_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// mathFuncs are the portable math functions under test: the DSL twin and the oracle function.
var mathFuncs = []struct {
	name string
	dsl  func(k *dsl.Kernel, x, g dsl.Value) dsl.Value
	ref  func(x, g float32) float32
}{
	{"Exp", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Exp(k, x) }, func(x, _ float32) float32 { return oracle.Exp(x) }},
	{"Log", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Log(k, x) }, func(x, _ float32) float32 { return oracle.Log(x) }},
	{"Tanh", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Tanh(k, x) }, func(x, _ float32) float32 { return oracle.Tanh(x) }},
	{"Sin", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Sin(k, x) }, func(x, _ float32) float32 { return oracle.Sin(x) }},
	{"Cos", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Cos(k, x) }, func(x, _ float32) float32 { return oracle.Cos(x) }},
	{"SinCos_sin", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { s, _ := kernels.SinCos(k, x); return s }, func(x, _ float32) float32 { return oracle.Sin(x) }},
	{"SinCos_cos", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { _, c := kernels.SinCos(k, x); return c }, func(x, _ float32) float32 { return oracle.Cos(x) }},
	{"Rsqrt", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Rsqrt(k, x) }, func(x, _ float32) float32 { return oracle.Rsqrt(x) }},
	{"Silu", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Silu(k, x) }, func(x, _ float32) float32 { return oracle.Silu(x) }},
	{"Gelu", func(k *dsl.Kernel, x, _ dsl.Value) dsl.Value { return kernels.Gelu(k, x) }, func(x, _ float32) float32 { return oracle.Gelu(x) }},
	{"Swiglu", func(k *dsl.Kernel, x, g dsl.Value) dsl.Value { return kernels.Swiglu(k, x, g) }, func(x, g float32) float32 { return oracle.Swiglu(x, g) }},
}

// mathSamples returns dense samples of every range the functions care about, plus the special
// and edge values: every float32 exponent with random mantissas (both signs), dense uniform
// ranges, the neighbours of every cut in the op sequences, and ±0, ±Inf, NaN, subnormals.
func mathSamples() []float32 {
	rng := rand.New(rand.NewSource(5))
	var xs []float32
	next := func(f float32, n int) {
		up, down := f, f
		for i := 0; i < n; i++ {
			xs = append(xs, up, down)
			up = math.Nextafter32(up, float32(math.Inf(1)))
			down = math.Nextafter32(down, float32(math.Inf(-1)))
		}
	}
	for i := 0; i < 1<<16; i++ { // every exponent, random mantissa and sign
		xs = append(xs, math.Float32frombits(rng.Uint32()))
	}
	ranges := []struct{ lo, hi float32 }{
		{-110, 100},     // Exp incl. overflow, the subnormal range and underflow
		{-20, 20},       // Tanh, Silu, Gelu
		{-1, 1},         // polynomial ranges
		{-12900, 12900}, // rope angles
		{0, 4},          // Log, Rsqrt
		{-1e-3, 1e-3},
		{-104, -87},     // Exp results in the subnormal range
		{0.55, 0.7},     // Tanh's cut at 0.625
		{-1e9, 1e9},     // huge sin/cos arguments: the op sequence still defines the bits
		{-60000, 60000}, // rope angles at large positions
	}
	for _, r := range ranges {
		for i := 0; i < 1<<14; i++ {
			xs = append(xs, r.lo+float32(rng.Float64())*(r.hi-r.lo))
		}
	}
	for i := 0; i < 1<<12; i++ { // subnormal arguments (Log rescales them)
		xs = append(xs, math.Float32frombits(rng.Uint32()&0x807fffff))
	}
	for _, f := range []float32{0, 89, -104, 88.72283, -87.33654, -103.27893, -149 * 0.6931472, 0.625, 0x1p-12, 0x1p-126,
		0.70710677, 1, 0.5, 2, math.Pi / 4, math.Pi / 2, math.Pi, 4194304, 8388608, 12867, 1e10, 1e30, 9.01,
		math.MaxFloat32} {
		next(f, 40)
		next(-f, 40)
	}
	xs = append(xs, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		-float32(math.NaN()), math.Float32frombits(1), math.Float32frombits(0x807fffff), float32(math.Copysign(0, -1)))
	for len(xs)%256 != 0 {
		xs = append(xs, float32(rng.NormFloat64()))
	}
	return xs
}

// TestMathBitExact runs every portable math function on the Vulkan device over mathSamples and
// requires the oracle's bits (any NaN equals any NaN), for the device's lowering and the
// portable one.
func TestMathBitExact(t *testing.T) {
	d := vktest.Device(t)
	xs := mathSamples()
	gs := make([]float32, len(xs))
	rng := rand.New(rand.NewSource(6))
	for i := range gs {
		gs[i] = float32(rng.NormFloat64() * 4)
	}
	gs[0] = float32(math.Inf(1))
	gs[1] = 0
	build := func() *dsl.Kernel {
		k := dsl.New("math", 64)
		x := k.Buffer("x", dsl.F32, dsl.Read)
		g := k.Buffer("g", dsl.F32, dsl.Read)
		outs := make([]dsl.Array, len(mathFuncs))
		for j, f := range mathFuncs {
			outs[j] = k.Buffer("out_"+f.name, dsl.F32, dsl.Write)
		}
		i := k.GlobalID(dsl.X)
		xv, gv := x.Load(i), g.Load(i)
		for j, f := range mathFuncs {
			outs[j].Store(i, f.dsl(k, xv, gv))
		}
		return k
	}
	bufs := [][]byte{vktest.F32s(xs), vktest.F32s(gs)}
	for range mathFuncs {
		bufs = append(bufs, make([]byte, 4*len(xs)))
	}
	for _, caps := range []struct {
		name string
		c    lower.Caps
	}{{"device", d.Caps()}, {"portable", vulkan.PortableCaps}} {
		m := vktest.Compile(t, build(), caps.c)
		out := vktest.RunModule(t, d, m, bufs, nil, [3]uint32{uint32(len(xs) / 64), 1, 1})
		for j, f := range mathFuncs {
			got := vktest.ToF32(out[2+j])
			bad := 0
			for i, x := range xs {
				want := f.ref(x, gs[i])
				if g := got[i]; math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
					if bad < 5 {
						t.Errorf("%s: %s(%g = %08x, g=%g) = %g (%08x), oracle %g (%08x)", caps.name, f.name, x, math.Float32bits(x), gs[i],
							g, math.Float32bits(g), want, math.Float32bits(want))
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s: %s: %d of %d samples differ", caps.name, f.name, bad, len(xs))
			}
		}
	}
}
