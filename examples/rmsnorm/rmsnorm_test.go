package rmsnorm_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/rmsnorm"
	"github.com/onesource-go/onesource/internal/vktest"
)

func input(rows, n int, seed int64) []float32 {
	rng := rand.New(rand.NewSource(seed))
	x := make([]float32, rows*n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3)))
	}
	return x
}

// TestLavapipe runs rms_norm on the Vulkan device for several workgroup sizes, both layouts and
// several row lengths, and compares with the plain-Go reference bit for bit. Each schedule is
// lowered twice: for the device (subgroup shuffles for the low strides) and portably (shared
// memory only); the canonical order makes every one give the same bits.
func TestLavapipe(t *testing.T) {
	d := vktest.Device(t)
	const eps = 1e-6
	for _, wg := range []int{8, 32, 64, 256} {
		for _, layout := range []dsl.Layout{dsl.Blocked, dsl.Strided} {
			for _, n := range []int{1, 100, 1000, 4096} {
				rows := 3
				x := input(rows, n, int64(n))
				want := rmsnorm.Reference(x, n, rmsnorm.Width, eps)
				for _, target := range []struct {
					name string
					m    *vulkan.Module
				}{
					{"device", vktest.Compile(t, rmsnorm.RMSNorm(wg, layout), d.Caps())},
					{"portable", vktest.Compile(t, rmsnorm.RMSNorm(wg, layout), vulkan.PortableCaps)},
				} {
					out := vktest.RunModule(t, d, target.m, [][]byte{vktest.F32s(x), make([]byte, 4*len(x))}, vktest.Push(n, float32(eps)), [3]uint32{uint32(rows), 1, 1})
					got := vktest.ToF32(out[1])
					if i := vktest.DiffF32(got, want); i >= 0 {
						t.Fatalf("wg=%d %s n=%d %s: element %d = %g (%08x), want %g (%08x)", wg, layout, n, target.name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestWidthChangesBits shows why the width is fixed by the op: the same row summed with widths
// 32 and 256 adds in different orders, so (for this row) the bits differ. The workgroup size
// does not enter: TestLavapipe gets the width-256 bits from 8, 32, 64 and 256 invocations.
func TestWidthChangesBits(t *testing.T) {
	x := input(1, 4096, 7)
	a := rmsnorm.Reference(x, 4096, 32, 1e-6)
	b := rmsnorm.Reference(x, 4096, 256, 1e-6)
	diff := 0
	for i := range a {
		if a[i] != b[i] {
			diff++
		}
	}
	t.Logf("W=32 vs W=256: %d of %d outputs differ in their last bits", diff, len(a))
	if diff == 0 {
		t.Fatal("widths 32 and 256 gave identical bits: the reference ignores the width")
	}
}
