package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/onesource-go/onesource/oracle"
)

// TestF16Conversions pins the f16 conversions to package oracle's: every f16 to f32, and f32 to
// f16 over a spread of every exponent (each 251st bit pattern, and every pattern near the f16
// range's edges and rounding points).
func TestF16Conversions(t *testing.T) {
	for h := uint32(0); h < 1<<16; h++ {
		if got, want := math.Float32bits(h2f(h)), math.Float32bits(oracle.F16ToF32(uint16(h))); got != want {
			t.Fatalf("h2f(%#04x) = %#08x, want %#08x", h, got, want)
		}
	}
	check := func(b uint32) {
		if got, want := f2h(math.Float32frombits(b)), uint32(oracle.F32ToF16(math.Float32frombits(b))); got != want {
			t.Fatalf("f2h(%#08x) = %#04x, want %#04x", b, got, want)
		}
	}
	for b := uint64(0); b < 1<<32; b += 251 {
		check(uint32(b))
	}
	for h := uint32(0); h < 1<<16; h++ { // every f16 value and the f32 values around it and its midpoints
		f := math.Float32bits(h2f(h))
		for d := uint32(0); d < 8; d++ {
			check(f + d)
			check(f - d)
			check(f + 0x1000 + d - 4) // the midpoint to the next f16 (for normal values)
		}
	}
}

// TestD2H: f64 -> f16 rounds once to the nearest f16, ties to even (checked against the
// midpoints of neighbouring f16 values, which are exact in float64).
func TestD2H(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float64{0, math.Copysign(0, -1), 65504, 65519.999, 65520, 1e300, 5.960464477539063e-08, 2.98023223876953125e-08, 2.98023223876953126e-08, math.Inf(1), math.Inf(-1)}
	for i := 0; i < 200000; i++ {
		vals = append(vals, math.Ldexp(r.Float64()+0.5, r.IntN(50)-30)*float64(1-2*r.IntN(2)))
		h := uint32(r.IntN(0x7c00))
		vals = append(vals, (h2d(h)+h2d(h+1))/2) // exact midpoints
	}
	for _, x := range vals {
		h := d2h(x)
		if f32bits := f2h(float32(x)); float64(float32(x)) == x && f32bits != h {
			t.Fatalf("d2h(%g) = %#04x, f2h of the same value %#04x", x, h, f32bits)
		}
		if h&0x7fff >= 0x7c00 { // infinity: x at or past the midpoint of 65504 and 65536
			if math.Abs(x) < 65520 {
				t.Fatalf("d2h(%g) = %#04x, infinity below 65520", x, h)
			}
			continue
		}
		v := h2d(h)
		mag := h & 0x7fff
		up := h2d(mag + 1)
		if mag+1 >= 0x7c00 {
			up = 65536
		}
		if math.Abs(x) > (math.Abs(v)+up)/2 || math.Abs(x) == (math.Abs(v)+up)/2 && mag&1 == 1 {
			t.Fatalf("d2h(%g) = %#04x (%g): the next value up %g is nearer", x, h, v, up)
		}
		if mag > 0 {
			down := h2d(mag - 1)
			if math.Abs(x) < (math.Abs(v)+down)/2 || math.Abs(x) == (math.Abs(v)+down)/2 && mag&1 == 1 {
				t.Fatalf("d2h(%g) = %#04x (%g): the next value down %g is nearer", x, h, v, down)
			}
		}
		if math.Signbit(x) != (h&0x8000 != 0) {
			t.Fatalf("d2h(%g) = %#04x: sign", x, h)
		}
	}
	if h := d2h(math.NaN()); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Fatalf("d2h(NaN) = %#04x", h)
	}
}

// TestUndefinedCases: the values the IR leaves undefined, as the C printer's os_* helpers give
// them (backends/cfamily).
func TestUndefinedCases(t *testing.T) {
	const imin = 0x80000000
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"i32 7/0", divI32(7, 0), 0xffffffff},
		{"i32 -7/0", divI32(uint32(0xfffffff9), 0), 0xffffffff},
		{"i32 MIN/-1", divI32(imin, 0xffffffff), imin},
		{"i32 -7/2", divI32(uint32(0xfffffff9), 2), uint32(0xfffffffd)},
		{"i32 7%0", remI32(7, 0), 7},
		{"i32 MIN%-1", remI32(imin, 0xffffffff), 0},
		{"i32 -7%2", remI32(uint32(0xfffffff9), 2), 0xffffffff},
		{"u32 7/0", divU32(7, 0), 0xffffffff},
		{"u32 7%0", remU32(7, 0), 7},
		{"f32 NaN->i32", f2i(float32(math.NaN())), imin},
		{"f32 3e9->i32", f2i(3e9), imin},
		{"f32 -2^31->i32", f2i(-2147483648), imin},
		{"f32 -3.7->i32", f2i(-3.7), uint32(0xfffffffd)},
		{"f32 -0.5->u32", f2u(-0.5), 0},
		{"f32 -1->u32", f2u(-1), imin},
		{"f32 4e9->u32", f2u(4e9), 4000000000},
		{"f32 5e9->u32", f2u(5e9), imin},
		{"f32 +Inf->u32", f2u(float32(math.Inf(1))), imin},
		{"f64 -2147483648.9->i32", d2i(-2147483648.9), imin},
		{"f64 -2147483649->i32", d2i(-2147483649), imin},
		{"f64 2147483647.9->i32", d2i(2147483647.9), 0x7fffffff},
		{"f64 4294967295.5->u32", d2u(4294967295.5), 0xffffffff},
		{"f64 NaN->u32", d2u(math.NaN()), imin},
		{"shl 33", shlI32(1, 33), 2},
		{"shr i32 -8>>33", shrI32(uint32(0xfffffff8), 33), uint32(0xfffffffc)},
		{"shr u32", shrU32(0x80000000, 63), 1},
		{"abs MIN", absI32(imin), imin},
		{"dot saturates never", dotI8x4(0x80808080, 0x80808080), 65536},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

// TestFma: fmaF32 equals package oracle's exact Fma (math/big) on random operands, on products
// that land exactly halfway between float32 values with addends far below them (where rounding
// the float64 sum to float32 would round twice), near overflow, on subnormals and specials.
func TestFma(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(a, b, c float32) {
		got := math.Float32frombits(fmaF32(math.Float32bits(a), math.Float32bits(b), math.Float32bits(c)))
		want := oracle.Fma(a, b, c)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("fma(%g, %g, %g) = %g (%#08x), want %g (%#08x)", a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	rnd := func() float32 {
		switch r.IntN(6) {
		case 0:
			return math.Float32frombits(r.Uint32())
		case 1:
			return float32(r.NormFloat64())
		case 2:
			return math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
		case 3:
			return float32(math.Ldexp(r.Float64(), r.IntN(250)-125))
		}
		return []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}[r.IntN(10)]
	}
	for i := 0; i < 300000; i++ {
		check(rnd(), rnd(), rnd())
	}
	for i := 0; i < 100000; i++ {
		// Odd 13-bit factors whose product has exactly 25 significant bits: a product exactly
		// halfway between two float32 values; an addend far below it decides the rounding,
		// which rounding the float64 sum to float32 would get wrong (two roundings).
		m1, m2 := 4097+2*r.IntN(800), 4097+2*r.IntN(800)
		e1, e2 := r.IntN(40)-20, r.IntN(40)-20
		a, b := float32(math.Ldexp(float64(m1), e1)), float32(math.Ldexp(float64(m2), e2))
		tiny := float32(math.Ldexp(float64(1+r.IntN(1000)), e1+e2-40-r.IntN(30)))
		check(a, b, tiny)
		check(a, b, -tiny)
		check(-a, b, tiny)
	}
	// a*b exactly 2^128 - 2^103, halfway between the largest float32 and 2^128 (18631*1801 =
	// 2^25-1): an addend below decides between the largest float32 and infinity.
	for _, k := range []int{40, 60, 90} {
		a, b := float32(math.Ldexp(18631, k)), float32(math.Ldexp(1801, 103-k))
		for _, c := range []float32{1, -1, 1e20, -1e20, 0} {
			check(a, b, c)
			check(-a, b, c)
		}
	}
	for i := 0; i < 20000; i++ { // near the overflow threshold 2^128 - 2^103
		a := math.Float32frombits(0x7f7fffff - uint32(r.IntN(4)))
		b := float32(1 + math.Ldexp(float64(r.IntN(8)), -24))
		check(a, b, float32(math.Ldexp(float64(r.IntN(1<<20)), 80+r.IntN(20)))*float32(1-2*r.IntN(2)))
	}
}

// TestOpsGenFresh: ops_gen.go is what genops.go writes (go generate in this package).
func TestOpsGenFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the go command")
	}
	out := filepath.Join(t.TempDir(), "ops_gen.go")
	if msg, err := exec.Command("go", "run", "genops.go", "-o", out).CombinedOutput(); err != nil {
		t.Skipf("cannot run genops.go: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("ops_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(want) {
		t.Error("ops_gen.go is stale: run go generate in backends/cpu")
	}
}
