package dsl_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// mathCase is one function of the library: its DSL method and its oracle twin.
type mathCase struct {
	name string
	dsl  func(x, y, z dsl.Value) dsl.Value
	ref  func(x, y, z float32) float32
}

var mathCases = []mathCase{
	{"Exp", func(x, _, _ dsl.Value) dsl.Value { return x.Exp() }, func(x, _, _ float32) float32 { return oracle.Exp(x) }},
	{"Exp2", func(x, _, _ dsl.Value) dsl.Value { return x.Exp2() }, func(x, _, _ float32) float32 { return oracle.Exp2(x) }},
	{"Log", func(x, _, _ dsl.Value) dsl.Value { return x.Log() }, func(x, _, _ float32) float32 { return oracle.Log(x) }},
	{"Log2", func(x, _, _ dsl.Value) dsl.Value { return x.Log2() }, func(x, _, _ float32) float32 { return oracle.Log2(x) }},
	{"Tanh", func(x, _, _ dsl.Value) dsl.Value { return x.Tanh() }, func(x, _, _ float32) float32 { return oracle.Tanh(x) }},
	{"Sin", func(x, _, _ dsl.Value) dsl.Value { return x.Sin() }, func(x, _, _ float32) float32 { return oracle.Sin(x) }},
	{"Cos", func(x, _, _ dsl.Value) dsl.Value { return x.Cos() }, func(x, _, _ float32) float32 { return oracle.Cos(x) }},
	{"SinCos.sin", func(x, _, _ dsl.Value) dsl.Value { s, _ := x.SinCos(); return s }, func(x, _, _ float32) float32 { return oracle.Sin(x) }},
	{"SinCos.cos", func(x, _, _ dsl.Value) dsl.Value { _, c := x.SinCos(); return c }, func(x, _, _ float32) float32 { return oracle.Cos(x) }},
	{"Pow", func(x, y, _ dsl.Value) dsl.Value { return x.Pow(y) }, func(x, y, _ float32) float32 { return oracle.Pow(x, y) }},
	{"Erf", func(x, _, _ dsl.Value) dsl.Value { return x.Erf() }, func(x, _, _ float32) float32 { return oracle.Erf(x) }},
	{"Rsqrt", func(x, _, _ dsl.Value) dsl.Value { return x.Rsqrt() }, func(x, _, _ float32) float32 { return oracle.Rsqrt(x) }},
	{"Ceil", func(x, _, _ dsl.Value) dsl.Value { return x.Ceil() }, func(x, _, _ float32) float32 { return oracle.Ceil(x) }},
	{"Trunc", func(x, _, _ dsl.Value) dsl.Value { return x.Trunc() }, func(x, _, _ float32) float32 { return oracle.Trunc(x) }},
	{"Round", func(x, _, _ dsl.Value) dsl.Value { return x.Round() }, func(x, _, _ float32) float32 { return oracle.Round(x) }},
	{"Copysign", func(x, y, _ dsl.Value) dsl.Value { return x.Copysign(y) }, func(x, y, _ float32) float32 { return oracle.Copysign(x, y) }},
	{"MinNum", func(x, y, _ dsl.Value) dsl.Value { return x.MinNum(y) }, func(x, y, _ float32) float32 { return oracle.MinNum(x, y) }},
	{"MaxNum", func(x, y, _ dsl.Value) dsl.Value { return x.MaxNum(y) }, func(x, y, _ float32) float32 { return oracle.MaxNum(x, y) }},
	{"Clamp", func(x, y, z dsl.Value) dsl.Value { return x.Clamp(y, z) }, func(x, y, z float32) float32 { return oracle.Clamp(x, y, z) }},
	{"Fma", func(x, y, z dsl.Value) dsl.Value { return x.Fma(y, z) }, func(x, y, z float32) float32 { return oracle.Fma(x, y, z) }},
}

// mathInputs returns n triples: random bit patterns (every exponent, NaN, infinities and
// subnormals), values in the ranges the functions reduce over, the neighbours of their cuts,
// pow's exponents (integers, halves, moderate and huge values) and fma's near-cancellations.
func mathInputs(n int) (x, y, z []float32) {
	rng := rand.New(rand.NewSource(31))
	x, y, z = make([]float32, n), make([]float32, n), make([]float32, n)
	cuts := []float32{0, 0.625, 0.875, 4, 0x1p-12, 0x1p-126, 0x1p23, 0.5, 1, 2, 1.41421354, 0.70710677, 160, 89, -104, 12867}
	for i := range x {
		switch i % 6 {
		case 0:
			x[i] = math.Float32frombits(rng.Uint32())
		case 1:
			x[i] = float32((rng.Float64()*2 - 1) * 20)
		case 2:
			x[i] = float32((rng.Float64()*2 - 1) * 200)
		case 3:
			f := cuts[rng.Intn(len(cuts))]
			for s := rng.Intn(8); s > 0; s-- {
				f = math.Nextafter32(f, float32(math.Inf(2*rng.Intn(2)-1)))
			}
			x[i] = f
		case 4:
			x[i] = float32(rng.Intn(64)) / 2 * float32(1-2*rng.Intn(2)) // halves: round's ties
		default:
			x[i] = float32(math.Exp2(rng.Float64()*60 - 30))
		}
		switch i % 5 {
		case 0:
			y[i] = math.Float32frombits(rng.Uint32())
		case 1:
			y[i] = float32(rng.Intn(41) - 20)
		case 2:
			y[i] = float32(rng.Intn(41)-20) / 2
		default:
			y[i] = float32(rng.NormFloat64() * 8)
		}
		switch i % 4 {
		case 0:
			z[i] = -(x[i] * y[i]) // fma: the product's rounding error
		case 1:
			z[i] = math.Float32frombits(rng.Uint32())
		default:
			z[i] = float32(rng.NormFloat64() * 100)
		}
	}
	// Every pair of special values (NaN, ±Inf, ±0, ±1, halves, a subnormal, the largest float),
	// with c zero, one and the product's rounding error.
	sp := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		1, -1, 0.5, -2.5, 3, 0x1p-149, -math.MaxFloat32, 0x1p24, 7.5, -0.3}
	i := 0
	for _, a := range sp {
		for _, b := range sp {
			for _, c := range []float32{0, 1, -(a * b)} {
				x[i], y[i], z[i] = a, b, c
				i++
			}
		}
	}
	return x, y, z
}

// TestMathBitExactVulkan runs every method of the library on the Vulkan device over
// mathInputs and requires its oracle twin's bits (any NaN equals any NaN), lowered for the
// device and for the portable target.
func TestMathBitExactVulkan(t *testing.T) {
	d := vktest.Device(t)
	const n = 1 << 16
	xs, ys, zs := mathInputs(n)
	build := func() *dsl.Kernel {
		k := dsl.New("math", 64)
		x := k.Buffer("x", dsl.F32, dsl.Read)
		y := k.Buffer("y", dsl.F32, dsl.Read)
		z := k.Buffer("z", dsl.F32, dsl.Read)
		out := k.Buffer("out", dsl.F32, dsl.Write)
		i := k.GlobalID(dsl.X)
		xv, yv, zv := x.Load(i), y.Load(i), z.Load(i)
		for j, f := range mathCases {
			out.Store(i.Add(uint32(j*n)), f.dsl(xv, yv, zv))
		}
		return k
	}
	bufs := [][]byte{vktest.F32s(xs), vktest.F32s(ys), vktest.F32s(zs), make([]byte, 4*n*len(mathCases))}
	for _, caps := range []struct {
		name string
		c    lower.Caps
	}{{"device", d.Caps()}, {"portable", vulkan.PortableCaps}} {
		m := vktest.Compile(t, build(), caps.c)
		got := vktest.ToF32(vktest.RunModule(t, d, m, bufs, nil, [3]uint32{n / 64, 1, 1})[3])
		for j, f := range mathCases {
			bad := 0
			for i := 0; i < n; i++ {
				want := f.ref(xs[i], ys[i], zs[i])
				g := got[j*n+i]
				if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
					if bad < 3 {
						t.Errorf("%s: %s(%g, %g, %g) = %g (%08x), oracle %g (%08x)", caps.name, f.name, xs[i], ys[i], zs[i],
							g, math.Float32bits(g), want, math.Float32bits(want))
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s: %s: %d of %d differ", caps.name, f.name, bad, n)
			}
		}
	}
}

// TestMathErrors checks that the library refuses what it does not take, with errors naming the
// caller's line, and that Native refuses unknown functions and a wrong operand count.
func TestMathErrors(t *testing.T) {
	cases := []struct {
		name string
		body func(k *dsl.Kernel, f dsl.Value)
		want string
	}{
		{"u32 receiver", func(k *dsl.Kernel, f dsl.Value) { k.U32(1).Exp() }, "Exp: the math library takes f32 scalars, got u32"},
		{"vector receiver", func(k *dsl.Kernel, f dsl.Value) { k.Vec(f, f).Log2() }, "Log2: the math library takes f32 scalars, got vec2<f32>"},
		{"i32 exponent", func(k *dsl.Kernel, f dsl.Value) { f.Pow(k.I32(2)) }, "Pow: the math library takes f32 scalars, got i32"},
		{"fma operand", func(k *dsl.Kernel, f dsl.Value) { f.Fma(f, k.U32(1)) }, "Fma: the math library takes f32 scalars, got u32"},
		{"fma literal", func(k *dsl.Kernel, f dsl.Value) { f.Fma(2, "x") }, "Fma: cannot use x (string) as f32"},
		{"native arity", func(k *dsl.Kernel, f dsl.Value) { f.Native(dsl.NativePow) }, "Native pow: takes 1 operand(s) besides x, got 0"},
		{"native unknown", func(k *dsl.Kernel, f dsl.Value) { f.Native(dsl.NativeFunc(99)) }, "Native: unknown function 99"},
		{"clamp bound", func(k *dsl.Kernel, f dsl.Value) { f.Clamp(0, k.U32(1)) }, "Clamp: the math library takes f32 scalars, got u32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := dsl.New("bad", 64)
			x := k.Buffer("x", dsl.F32, dsl.Read)
			c.body(k, x.Load(k.GlobalID(dsl.X)))
			_, err := k.Build()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "math_test.go:") {
				t.Errorf("error %q does not name this file", err)
			}
		})
	}
}

// TestFmaAndNativeIR checks what Fma and Native build: one instruction each (the exact fma is
// one op until a target without an exact fused multiply-add lowers it), and that lowering for
// such a target leaves no OpFma while a target with one keeps it.
func TestFmaAndNativeIR(t *testing.T) {
	k := dsl.New("fn", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	v := x.Load(i)
	y.Store(i, v.Fma(v, 1).Add(v.Native(dsl.NativeExp)).Add(v.Native(dsl.NativePow, 2)))
	built := k.MustBuild()
	text := built.String()
	for _, want := range []string{"fma %", "native.exp %", "native.pow %"} {
		if !strings.Contains(text, want) {
			t.Errorf("IR lacks %q:\n%s", want, text)
		}
	}
	count := func(c lower.Caps) int {
		l, err := lower.Run(built, c)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		ir.Walk(l.Body, func(in *ir.Inst) bool {
			if in.Op == ir.OpFma {
				n++
			}
			return true
		})
		return n
	}
	if got := count(lower.Caps{}); got != 0 {
		t.Errorf("%d fma left for a target without an exact one", got)
	}
	if got := count(lower.Caps{ExactFma: true}); got != 1 {
		t.Errorf("%d fma for a target with an exact one, want 1", got)
	}
}
