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

// TestHalfConversions checks the integer-only f16 decoders and the RNE encoder against the oracle
// for every f16 bit pattern and for f32 values around every rounding boundary, on the device, for
// both the device's lowering and the portable one.
func TestHalfConversions(t *testing.T) {
	d := vktest.Device(t)
	build := func() *dsl.Kernel {
		k := dsl.New("half_conv", 64)
		h := k.Buffer("h", dsl.U32, dsl.Read)
		x := k.Buffer("x", dsl.F32, dsl.Read)
		toF32 := k.Buffer("to_f32", dsl.F32, dsl.Write)
		toHalf := k.Buffer("to_half", dsl.U32, dsl.Write)
		bf := k.Buffer("bf_f32", dsl.F32, dsl.Write)
		i := k.GlobalID(dsl.X)
		toF32.Store(i, kernels.HalfToF32(k, h.Load(i)))
		bf.Store(i, kernels.BF16ToF32(k, h.Load(i)))
		toHalf.Store(i, kernels.F32ToHalf(k, x.Load(i)))
		return k
	}
	const n = 1 << 16
	hs := make([]uint32, n)
	for i := range hs {
		hs[i] = uint32(i)
	}
	xs := make([]float32, n)
	rng := rand.New(rand.NewSource(9))
	for i := range xs {
		switch i % 4 {
		case 0: // an f16 value exactly
			xs[i] = oracle.F16ToF32(uint16(i))
		case 1: // the midpoint between two neighbouring f16 values: a tie
			a, b := float64(oracle.F16ToF32(uint16(i))), float64(oracle.F16ToF32(uint16(i+1)))
			xs[i] = float32((a + b) / 2)
		case 2: // just beside the midpoint
			a, b := float64(oracle.F16ToF32(uint16(i))), float64(oracle.F16ToF32(uint16(i+1)))
			xs[i] = math.Nextafter32(float32((a+b)/2), float32(math.Inf(1)))
		default:
			xs[i] = math.Float32frombits(rng.Uint32())
		}
	}
	xs[3] = float32(math.Inf(-1))
	xs[7] = 65520 // rounds to infinity
	xs[11] = 1e-8 // below the smallest half subnormal
	for _, caps := range []struct {
		name string
		c    lower.Caps
	}{{"device", d.Caps()}, {"portable", vulkan.PortableCaps}} {
		m := vktest.Compile(t, build(), caps.c)
		out := vktest.RunModule(t, d, m, [][]byte{vktest.U32s(hs), vktest.F32s(xs), make([]byte, 4*n), make([]byte, 4*n), make([]byte, 4*n)}, nil, [3]uint32{n / 64, 1, 1})
		gotF := vktest.ToF32(out[2])
		gotH := vktest.ToF32(out[3])
		gotB := vktest.ToF32(out[4])
		for i := 0; i < n; i++ {
			want := oracle.F16ToF32(uint16(i))
			if math.Float32bits(gotF[i]) != math.Float32bits(want) {
				t.Fatalf("%s: HalfToF32(%#04x) = %08x, oracle %08x", caps.name, i, math.Float32bits(gotF[i]), math.Float32bits(want))
			}
			if wb := oracle.BF16ToF32(uint16(i)); math.Float32bits(gotB[i]) != math.Float32bits(wb) {
				t.Fatalf("%s: BF16ToF32(%#04x) = %08x, oracle %08x", caps.name, i, math.Float32bits(gotB[i]), math.Float32bits(wb))
			}
			if got, want := math.Float32bits(gotH[i]), uint32(oracle.F32ToF16(xs[i])); got != want {
				t.Fatalf("%s: F32ToHalf(%g = %08x) = %#04x, oracle %#04x", caps.name, xs[i], math.Float32bits(xs[i]), got, want)
			}
		}
	}
}
