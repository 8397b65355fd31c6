package engine

import (
	"bytes"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
)

// TestCPUWithoutVulkan: with the Vulkan library absent (ONESOURCE_VULKAN_LIBRARY names a file
// that does not exist), a Vulkan engine does not open, and a cpu engine does and serves a chain
// of ops (norm, quantized matvec, residual add) with the oracle's bytes, every cell keyed on
// backend cpu and the device named as the executor.
func TestCPUWithoutVulkan(t *testing.T) {
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	if err := vulkan.Available(); err == nil {
		t.Fatal("vulkan.Available with no library: no error")
	}
	if e, err := Open(Options{}); err == nil {
		e.Close()
		t.Fatal("a Vulkan engine opened with no Vulkan library")
	}
	e, err := Open(Options{Backend: CPU})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Backend() != CPU || !strings.Contains(e.Device().Name, "cpu executor") {
		t.Errorf("backend %q, device %q", e.Backend(), e.Device().Name)
	}
	if dev, drv := e.Evidence(); !strings.Contains(dev, "cpu executor") || !strings.Contains(drv, "backends/cpu") {
		t.Errorf("evidence %q / %q", dev, drv)
	}
	rng := rand.New(rand.NewSource(7))
	const n, rows = 256, 40
	x, w := randF32(rng, n, 1), randF32(rng, n, 0.3)
	wb, err := kernels.WeightRows(oracle.Q4_K, rows, n, 3)
	if err != nil {
		t.Fatal(err)
	}
	W, err := e.Upload(oracle.Q4_K, wb, rows, n)
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
	if err := oracle.MatVec(oracle.Q4_K, wb, hw, mw); err != nil {
		t.Fatal(err)
	}
	if err := oracle.AddF32(want, mw, rv); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "norm, q4_K matvec, add on cpu", y, want)
	tr := e.Trace()
	if len(tr) != 3 {
		t.Fatalf("%d calls traced, want 3", len(tr))
	}
	for i, cell := range []string{"rms_norm/f32/cpu", "matvec/q4_K/cpu", "add/f32/cpu"} {
		if c := tr[i]; c.Cell != cell || c.Impl != registry.Twin || !c.Flushed {
			t.Errorf("call %d: %+v, want %s by its twin", i, c, cell)
		}
	}
}

// TestCPUIncumbentFallsBack: incumbents are Vulkan SPIR-V, so on cpu a cell the registry sends
// to its incumbent is served by its twin, and the trace says why; a cell failing on this machine
// is still refused; a cell keyed on backend vulkan does not decide the cpu cell.
func TestCPUIncumbentFallsBack(t *testing.T) {
	e := openEngine(t, Options{Backend: CPU})
	a := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	b := []float32{0.5, -2, 30, 1e-3, 5, -6, 7.25, 8}
	at, bt := upload(t, e, a, 8), upload(t, e, b, 8)
	want := make([]float32, 8)
	if err := oracle.AddF32(want, a, b); err != nil {
		t.Fatal(err)
	}
	y := zeros(t, e, 8)

	reg := registry.New()
	for _, backend := range []string{CPU, Vulkan} {
		if err := reg.Register(registry.Key{Op: "add", Type: "f32", Backend: backend}, "hand_add_f32", "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(registry.Key{Op: "mul", Type: "f32", Backend: Vulkan}, "hand_mul_f32", "test"); err != nil {
		t.Fatal(err)
	}
	e.SetRegistry(reg)
	if err := e.Add(y, at, bt); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "add by the twin in place of the incumbent", y, want)
	if err := e.Mul(y, at, bt); err != nil {
		t.Fatal(err)
	}
	tr := e.Trace()
	if c := tr[0]; c.Cell != "add/f32/cpu" || c.Impl != registry.Twin || c.State != registry.Hand ||
		!strings.Contains(c.Why, "Vulkan SPIR-V") || !strings.Contains(c.Why, "twin serves") || !strings.HasPrefix(c.Kernel, "lanes=") {
		t.Errorf("add with a hand cell on cpu: %+v, want the twin and the reason", c)
	}
	if c := tr[1]; c.Cell != "mul/f32/cpu" || c.Impl != registry.Twin || c.State != registry.Missing ||
		!strings.Contains(c.Why, "no registry evidence") {
		t.Errorf("mul with only a vulkan cell: %+v, want the twin, no evidence", c)
	}

	// A twin failing on this machine, with an incumbent cpu cannot run: nothing serves.
	dev, drv := e.Evidence()
	failing := registry.New()
	if err := failing.Register(registry.Key{Op: "add", Type: "f32", Backend: CPU}, "hand_add_f32", "test"); err != nil {
		t.Fatal(err)
	}
	ev := registry.Evidence{Device: dev, Driver: drv, Toolchain: "t", BitExact: false, MaxULP: 3, TwinHash: "x", Date: time.Unix(0, 0).UTC()}
	if err := failing.Apply(registry.GateResult{Key: registry.Key{Op: "add", Type: "f32", Backend: CPU}, Evidence: ev, Verdict: registry.Fail}); err != nil {
		t.Fatal(err)
	}
	if ch := failing.SelectOn("add", "f32", CPU, dev, drv); ch.State != registry.Failing || ch.Impl != registry.Incumbent {
		t.Fatalf("the test registry's choice: %+v, want failing with an incumbent", ch)
	}
	e.SetRegistry(failing)
	if err := e.Add(y, at, bt); err == nil || !strings.Contains(err.Error(), "add/f32/cpu") || !strings.Contains(err.Error(), "failing") {
		t.Errorf("a failing cell on cpu: %v", err)
	}
}

// TestCPUTimedAndReleased: a timed cpu engine records each call's time; the copy roofline is a
// plausible bandwidth; a call on a released tensor fails when it runs, naming the buffer, and
// the engine still serves afterwards.
func TestCPUTimedAndReleased(t *testing.T) {
	e := openEngine(t, Options{Backend: CPU, Timed: true})
	x := upload(t, e, []float32{1, 2, 3, 4}, 4)
	y := zeros(t, e, 4)
	if err := e.Scale(y, x, 3); err != nil {
		t.Fatal(err)
	}
	got, err := y.F32()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(F32Bytes(got), F32Bytes([]float32{3, 6, 9, 12})) {
		t.Errorf("scale: %v", got)
	}
	if c := e.Trace()[0]; !c.Flushed || c.Time <= 0 {
		t.Errorf("timed call: %+v", c)
	}
	if bw, err := e.CopyBandwidth(); err != nil || bw < 0.1 || bw > 1e5 {
		t.Errorf("copy bandwidth %v GB/s, %v", bw, err)
	}
	gone := zeros(t, e, 4)
	if err := e.Scale(gone, x, 2); err != nil {
		t.Fatal(err)
	}
	gone.Release()
	if err := e.Flush(); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("a call on a released tensor: %v", err)
	}
	if _, err := gone.Read(); err == nil {
		t.Error("Read of a released tensor: no error")
	}
	if err := e.Scale(y, x, 2); err != nil {
		t.Fatal(err)
	}
	if got, err := y.F32(); err != nil || got[3] != 8 {
		t.Errorf("after the failed flush: %v, %v", got, err)
	}
}
