package prebuilt_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/generate"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/prebuilt"
)

// TestVulkanRunsGeneratedSPIRV builds saxpy into a Set in memory with generate.NewSet (the value
// a generated file declares over its embedded files) and runs the SPIR-V on the Vulkan device,
// against saxpy's reference.
func TestVulkanRunsGeneratedSPIRV(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skip(err)
	}
	set, err := generate.NewSet("example.com/saxpy", saxpy.Kernels(), []string{"vulkan", "cuda"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := set.Kernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := prebuilt.NewRuntime(prebuilt.Options{Backends: []string{"vulkan"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pl, err := rt.Place(k)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(pl.Placement())
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = rng.Float32()*4-2, rng.Float32()*4-2
	}
	a := float32(-1.25)
	want := saxpy.Reference(a, x, y)
	bufs := [][]byte{vktest.F32s(x), vktest.F32s(y)}
	if err := pl.Run([3]uint32{(n + 63) / 64, 1, 1}, bufs, a, n); err != nil {
		t.Fatal(err)
	}
	got := vktest.ToF32(bufs[1])
	for i, w := range want {
		if math.Float32bits(got[i]) != math.Float32bits(w) {
			t.Fatalf("y[%d] = %g, want %g", i, got[i], w)
		}
	}
	if vktest.ToF32(bufs[0])[0] != x[0] {
		t.Error("the read-only buffer x was overwritten")
	}
}
