package lower_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// fmaOperands returns triples that exercise every path of the emulation: random bit patterns
// (NaN, Inf, subnormals included), products that cancel c exactly or nearly, results on a
// rounding tie, results at the overflow and underflow thresholds, and subnormal operands.
func fmaOperands(n int) [][3]float32 {
	rng := rand.New(rand.NewSource(21))
	any32 := func() float32 { return math.Float32frombits(rng.Uint32()) }
	scaled := func(lo, hi int) float32 { // random significand, exponent in [lo, hi]
		e := lo + rng.Intn(hi-lo+1)
		return float32(math.Ldexp(1+rng.Float64(), e)) * float32(1-2*rng.Intn(2))
	}
	var out [][3]float32
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 0x1p-149, -0x1p-149, 0x1p-126, 0x1.fffffcp-127, 3, 0.1}
	for _, a := range special {
		for _, b := range special {
			for _, c := range special {
				out = append(out, [3]float32{a, b, c})
			}
		}
	}
	for len(out) < n {
		var a, b, c float32
		switch len(out) % 9 {
		case 8: // an exact product on a rounding tie, with a c far below it deciding the way
			m := float32(1<<23 + 2*rng.Intn(1<<21) + 1) // odd, 3*m < 2^25: the product has 25 bits
			a = float32(math.Ldexp(float64(m), rng.Intn(60)-30))
			b = float32(math.Ldexp(3, rng.Intn(60)-30))
			c = float32(math.Ldexp(1+rng.Float64(), int(math.Ilogb(float64(a)*float64(b)))-30-rng.Intn(60))) * float32(1-2*rng.Intn(2))
		case 0:
			a, b, c = any32(), any32(), any32()
		case 1: // c cancels the rounded product: the result is the product's rounding error
			a, b = scaled(-40, 40), scaled(-40, 40)
			c = -(a * b)
		case 2: // near ties: c moves the exact sum around a halfway point
			a, b = scaled(-20, 20), scaled(-20, 20)
			c = -(a * b) * (1 + float32(rng.Intn(5)-2)*0x1p-24)
		case 3: // products and sums in the subnormal range
			a, b, c = scaled(-80, -40), scaled(-100, -60), scaled(-149, -120)
		case 4: // overflow threshold
			a, b = scaled(60, 64), scaled(60, 64)
			c = -scaled(120, 127)
		case 5: // c far below or far above the product (alignment shifts of every size)
			a, b = scaled(-30, 30), scaled(-30, 30)
			c = scaled(-126, 127)
		case 6: // subnormal operands
			a = math.Float32frombits(rng.Uint32() & 0x807fffff)
			b, c = scaled(0, 127), any32()
		default: // small integers: exact results and exact zero sums
			a, b = float32(rng.Intn(200)-100), float32(rng.Intn(200)-100)
			c = float32(rng.Intn(20000) - 10000)
		}
		out = append(out, [3]float32{a, b, c})
	}
	return out
}

// TestFmaEmulation checks the exact fma emulation (what LegalizeFma emits, evaluated on the CPU
// by FmaF32) against the oracle's Fma (math/big) on every path: NaN results compare as NaN,
// everything else bit for bit.
func TestFmaEmulation(t *testing.T) {
	bad := 0
	for _, x := range fmaOperands(1_000_000) {
		got := lower.FmaF32(x[0], x[1], x[2])
		want := oracle.Fma(x[0], x[1], x[2])
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			if bad < 10 {
				t.Errorf("fma(%g, %g, %g) [%#x %#x %#x] = %g (%#x), want %g (%#x)", x[0], x[1], x[2],
					math.Float32bits(x[0]), math.Float32bits(x[1]), math.Float32bits(x[2]), got, math.Float32bits(got), want, math.Float32bits(want))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d mismatches", bad)
	}
}
