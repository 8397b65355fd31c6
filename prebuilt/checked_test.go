package prebuilt_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/generate"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/prebuilt"
)

// available skips the test where backend b cannot run here (cuda and hip: the emulated devices).
func available(t *testing.T, b string) {
	t.Helper()
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
}

// TestChecked: with Options.Checked (or ONESOURCE_CHECKED=1) a kernel that stores past its
// buffer (the grid covers more elements than the buffer holds: a short output buffer) fails the
// run naming this file's line, on Vulkan, the emulated CUDA and HIP devices and the cpu executor;
// saxpy's checked build gives the bytes of its plain one; a set generated without checked builds
// is not placed in checked mode, and says how to generate them.
func TestChecked(t *testing.T) {
	k := dsl.New("overrun", 64)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	y.Store(k.GlobalID(dsl.X), float32(1)) // no bound check in the kernel
	kernels := append(saxpy.Kernels(), k)
	backends := []string{"vulkan", "cuda", "hip", "cpu"}
	set, err := generate.NewCheckedSet("example.com/overrun", kernels, backends)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := generate.NewSet("example.com/overrun", kernels, backends)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 1000
	x, y0 := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y0[i] = rng.Float32()*4-2, rng.Float32()*4-2
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			available(t, b)
			t.Setenv(lower.CheckedEnv, "1")
			rt, err := prebuilt.NewRuntime(prebuilt.Options{Backends: []string{b}, Emulated: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			over, err := set.Kernel("overrun")
			if err != nil {
				t.Fatal(err)
			}
			pl, err := rt.Place(over)
			if err != nil {
				t.Fatal(err)
			}
			if !pl.Placement().Checked {
				t.Errorf("%s=1: the placement is not checked", lower.CheckedEnv)
			}
			err = pl.Run([3]uint32{2, 1, 1}, [][]byte{make([]byte, 4*100)})
			if err == nil || !strings.Contains(err.Error(), "prebuilt/checked_test.go:") || !strings.Contains(err.Error(), "store y[100] outside its 100 elements") {
				t.Fatalf("a store past the buffer in checked mode: %v; want y[100] out of bounds at this file's line", err)
			}
			t.Log(err)

			// A correct kernel: the checked build's bytes are the plain build's.
			var outs [][]byte
			for _, s := range []*prebuilt.Set{set, plain} {
				sk, err := s.Kernel("saxpy")
				if err != nil {
					t.Fatal(err)
				}
				r := rt
				if s == plain {
					t.Setenv(lower.CheckedEnv, "0")
					if r, err = prebuilt.NewRuntime(prebuilt.Options{Backends: []string{b}, Emulated: true}); err != nil {
						t.Fatal(err)
					}
					defer r.Close()
				}
				p, err := r.Place(sk)
				if err != nil {
					t.Fatal(err)
				}
				bufs := [][]byte{vktest.F32s(x), vktest.F32s(y0)}
				if err := p.Run([3]uint32{(n + 63) / 64, 1, 1}, bufs, float32(0.75), uint32(n)); err != nil {
					t.Fatal(err)
				}
				outs = append(outs, bufs[1])
			}
			if !bytes.Equal(outs[0], outs[1]) || !bytes.Equal(outs[0], vktest.F32s(saxpy.Reference(0.75, x, y0))) {
				t.Error("saxpy's checked build does not give the plain build's bytes, or the reference's")
			}
			if b == "cpu" {
				return
			}
			// No checked build: not placed in checked mode.
			rc, err := prebuilt.NewRuntime(prebuilt.Options{Backends: []string{b}, Emulated: true, Checked: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			pk, err := plain.Kernel("saxpy")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rc.Place(pk); err == nil || !strings.Contains(err.Error(), "onesource gen -checked") {
				t.Errorf("checked mode with a set that has no checked builds: %v", err)
			}
		})
	}
}
