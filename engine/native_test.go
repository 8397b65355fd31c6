package engine

import (
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
)

// TestNative: with no Vulkan library, a native engine serves a chain of ops (norm, quantized
// matvec, residual add) with the oracle's bytes, every cell keyed on backend native and the device
// named as native CPU code. Skips, saying why, without a C compiler.
func TestNative(t *testing.T) {
	if err := native.Available(); err != nil {
		t.Skipf("native CPU code unavailable: %v", err)
	}
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	e, err := Open(Options{Backend: Native})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Backend() != Native || e.Fallback() != "" || !strings.Contains(e.Device().Name, "native CPU code") {
		t.Errorf("backend %q, fallback %q, device %q", e.Backend(), e.Fallback(), e.Device().Name)
	}
	if dev, drv := e.Evidence(); !strings.Contains(dev, "native CPU code") || !strings.Contains(drv, "backends/native") {
		t.Errorf("evidence %q / %q", dev, drv)
	}
	rng := rand.New(rand.NewSource(7))
	const n, rows = 256, 40
	x, w := randF32(rng, n, 1), randF32(rng, n, 0.3)
	wb, err := kernels.WeightRows(oracle.Q6_K, rows, n, 3)
	if err != nil {
		t.Fatal(err)
	}
	W, err := e.Upload(oracle.Q6_K, wb, rows, n)
	if err != nil {
		t.Fatal(err)
	}
	xt, wt := upload(t, e, x, n), upload(t, e, w, n)
	h, m := zeros(t, e, n), zeros(t, e, rows)
	r := upload(t, e, randF32(rng, rows, 1), rows)
	rv, _ := r.F32()
	y := zeros(t, e, rows)
	for _, err := range []error{e.RMSNorm(h, xt, wt, 1e-5), e.MatVec(m, W, h), e.Add(y, m, r)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	hw := make([]float32, n)
	mw := make([]float32, rows)
	want := make([]float32, rows)
	if err := oracle.RMSNormF32(hw, x, w, n, 1e-5); err != nil {
		t.Fatal(err)
	}
	if err := oracle.MatVec(oracle.Q6_K, wb, hw, mw); err != nil {
		t.Fatal(err)
	}
	if err := oracle.AddF32(want, mw, rv); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "norm, q6_K matvec, add on native", y, want)
	tr := e.Trace()
	if len(tr) != 3 {
		t.Fatalf("%d calls traced, want 3", len(tr))
	}
	for i, cell := range []string{"rms_norm/f32/native", "matvec/q6_K/native", "add/f32/native"} {
		if c := tr[i]; c.Cell != cell || c.Impl != registry.Twin || !c.Flushed {
			t.Errorf("call %d: %+v, want cell %s served by its twin", i, c, cell)
		}
	}
}

// TestNativeFallback: without a C compiler, an engine asked for native CPU code serves on the Go
// executor and says why.
func TestNativeFallback(t *testing.T) {
	t.Setenv(native.CompilerEnv, filepath.Join(t.TempDir(), "no-such-cc"))
	e, err := Open(Options{Backend: Native})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Backend() != CPU || !strings.Contains(e.Fallback(), "native CPU code unavailable") || !strings.Contains(e.Fallback(), "no-such-cc") {
		t.Errorf("backend %q, fallback %q", e.Backend(), e.Fallback())
	}
	if b, why := DefaultBackend(); b == Native || why == "" {
		t.Errorf("DefaultBackend without a C compiler: %q (%s)", b, why)
	}
}
