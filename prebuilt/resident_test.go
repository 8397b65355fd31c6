package prebuilt_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/generate"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/prebuilt"
)

// TestDeviceBuffersStay places saxpy on every backend this machine has (cpu always; Vulkan;
// CUDA and HIP on the emulated devices) and runs it three times on device buffers written once:
// y accumulates a*x three times without a copy between the runs, bit for bit saxpy's reference
// applied three times, and only the final read brings y back. A buffer of another device is
// refused.
func TestDeviceBuffersStay(t *testing.T) {
	set, err := generate.NewSet("example.com/saxpy", saxpy.Kernels(), []string{"cpu", "vulkan", "cuda", "hip"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := set.Kernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = rng.Float32()*4-2, rng.Float32()*4-2
	}
	a := float32(0.75)
	want := y
	for r := 0; r < 3; r++ {
		want = saxpy.Reference(a, x, want)
	}
	var cpuBuf *prebuilt.DeviceBuffer
	for _, b := range []string{"cpu", "vulkan", "cuda", "hip"} {
		t.Run(b, func(t *testing.T) {
			switch b {
			case "vulkan":
				if err := vulkan.Available(); err != nil {
					t.Skip(err)
				}
			case "cuda", "hip":
				if err := host.Available(host.Options{}); err != nil {
					t.Skip(err)
				}
			}
			rt, err := prebuilt.NewRuntime(prebuilt.Options{Backends: []string{b}, Emulated: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			pl, err := rt.Place(k)
			if err != nil {
				t.Fatal(err)
			}
			if b == "cuda" || b == "hip" {
				if d := pl.Placement().Device; !strings.Contains(d, "host emulation (H)") {
					t.Fatalf("placed on %q, want the emulated device", d)
				}
			}
			xb, err := pl.NewBuffer(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			yb, err := pl.NewBuffer(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			if err := xb.Write(0, vktest.F32s(x)); err != nil {
				t.Fatal(err)
			}
			if err := yb.Write(0, vktest.F32s(y)); err != nil {
				t.Fatal(err)
			}
			for r := 0; r < 3; r++ {
				if err := pl.RunOn([3]uint32{(n + 63) / 64, 1, 1}, []*prebuilt.DeviceBuffer{xb, yb}, a, n); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, 4*n)
			if err := yb.Read(0, got); err != nil {
				t.Fatal(err)
			}
			for i, w := range want {
				if g := vktest.ToF32(got)[i]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("y[%d] = %g after three runs, want %g", i, g, w)
				}
			}
			if b == "cpu" {
				cpuBuf = xb
				return
			}
			if cpuBuf != nil {
				if err := pl.RunOn([3]uint32{1, 1, 1}, []*prebuilt.DeviceBuffer{cpuBuf, yb}, a, n); err == nil || !strings.Contains(err.Error(), "not on this kernel's device") {
					t.Errorf("a cpu buffer bound on %s: %v", b, err)
				}
			}
		})
	}
}
