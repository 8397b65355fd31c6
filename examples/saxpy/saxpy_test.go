package saxpy_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/internal/vktest"
)

// TestLavapipe runs saxpy on the Vulkan device for sizes that are and are not multiples of the
// workgroup, and compares every output bit with the plain-Go reference.
func TestLavapipe(t *testing.T) {
	d := vktest.Device(t)
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 63, 64, 1000, 4097} {
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			y[i] = float32(rng.NormFloat64() * 100)
		}
		a := float32(1.0009765625)
		groups := uint32((n + 63) / 64)
		out := vktest.Run(t, d, saxpy.Saxpy(64), [][]byte{vktest.F32s(x), vktest.F32s(y)}, vktest.Push(a, n), [3]uint32{groups, 1, 1})
		got := vktest.ToF32(out[1])
		if i := vktest.DiffF32(got, saxpy.Reference(a, x, y)); i >= 0 {
			t.Fatalf("n=%d: element %d = %g, want %g", n, i, got[i], saxpy.Reference(a, x, y)[i])
		}
	}
}

// TestNoContraction uses inputs where a*x+y fused into one FMA differs from two roundings, and
// checks the device gives the unfused result for every one of them.
func TestNoContraction(t *testing.T) {
	d := vktest.Device(t)
	rng := rand.New(rand.NewSource(2))
	var x, y []float32
	a := float32(1) + float32(math.Ldexp(1, -12))
	for len(x) < 256 {
		xi := float32(1) + float32(rng.Intn(1<<20))*float32(math.Ldexp(1, -20))
		yi := -(a * xi) // cancels the rounded product, exposing the product's rounding error
		fused := float32(math.FMA(float64(a), float64(xi), float64(yi)))
		unfused := a*xi + yi
		if fused != unfused {
			x, y = append(x, xi), append(y, yi)
		}
	}
	n := len(x)
	out := vktest.Run(t, d, saxpy.Saxpy(64), [][]byte{vktest.F32s(x), vktest.F32s(y)}, vktest.Push(a, n), [3]uint32{uint32((n + 63) / 64), 1, 1})
	got := vktest.ToF32(out[1])
	for i := range got {
		unfused := float32(a*x[i]) + y[i]
		fused := float32(math.FMA(float64(a), float64(x[i]), float64(y[i])))
		if math.Float32bits(got[i]) != math.Float32bits(unfused) {
			t.Fatalf("element %d: device %g, unfused %g, fused %g: the device contracted a*x+y", i, got[i], unfused, fused)
		}
	}
	t.Logf("%d inputs where fused and unfused differ: device matched unfused on all", n)
}
