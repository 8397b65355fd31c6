package drain

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/internal/incumbentstest"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/ledger"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
)

// fixture writes the incumbents fixture tree and returns its manifest's path.
func fixture(t *testing.T) string {
	t.Helper()
	path, err := incumbentstest.Write(t.TempDir(), filepath.Join("..", "examples", "incumbents"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// gate records verdicts as a gate run on machine (device, driver) would: ratio >= 0.97 flips,
// below declines.
func gate(t *testing.T, m *incumbent.Manifest, device, driver string, ratios map[string]float64) *registry.Registry {
	t.Helper()
	reg := registry.New()
	for _, e := range m.Incumbents {
		k := registry.Key{Op: e.Op, Type: e.Type, Backend: e.Backend}
		if err := reg.Register(k, "hand:"+e.Name, "manifest"); err != nil {
			t.Fatal(err)
		}
		r := ratios[e.Op]
		ev := registry.Evidence{Device: device, Driver: driver, Toolchain: "test", BitExact: true, TwinGBps: 10 * r, IncumbentGBps: 10,
			Ratio: registry.SpreadOf([]float64{r, r, r}), TwinHash: "twin", IncumbentHash: "hand:" + e.Name, Date: time.Unix(1e9, 0).UTC()}
		v, _ := registry.Judge(ev, reg.Threshold())
		if err := reg.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

var ratios = map[string]float64{"add": 1.2, "mul": 1.05, "matvec": 1.5, "rms_norm": 0.8, "swiglu": 0.9}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestPlan: the plan names exactly the files whose every cell flipped: add.comp, matvec.comp and
// mul.comp go; common.glsl stays (swiglu declined and includes it), and so do rms_norm.comp and
// swiglu.comp. Nothing changes on disk; the patch applies.
func TestPlan(t *testing.T) {
	path := fixture(t)
	m, err := incumbent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, filepath.Dir(path))
	p, err := Make(m, gate(t, m, "dev", "drv", ratios))
	if err != nil {
		t.Fatal(err)
	}
	got := p.Deletable()
	sort.Strings(got)
	if want := []string{"add.comp", "matvec.comp", "mul.comp"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("deletable %v, want %v", got, want)
	}
	for _, f := range p.Files {
		if f.Path == "common.glsl" && (f.Delete || !strings.Contains(f.Why, "swiglu/f32/vulkan (declined)") || len(f.Cells) != 2) {
			t.Errorf("common.glsl: %+v", f)
		}
		if f.Lines <= 0 {
			t.Errorf("%s: %d ledger lines", f.Path, f.Lines)
		}
	}
	if p.LinesRemoved <= 0 || p.LinesRemoved >= p.LinesBefore {
		t.Errorf("lines removed %d of %d", p.LinesRemoved, p.LinesBefore)
	}
	nm, err := incumbent.Parse(p.NewManifest(), path, filepath.Dir(path))
	if err != nil {
		t.Fatalf("the new manifest does not parse: %v\n%s", err, p.NewManifest())
	}
	var names []string
	for _, e := range nm.Incumbents {
		names = append(names, e.Name)
	}
	if strings.Join(names, " ") != "hand_rms_norm_f32 hand_swiglu_f32" {
		t.Errorf("entries kept: %v", names)
	}
	var out bytes.Buffer
	p.Write(&out)
	if !strings.Contains(out.String(), "common.glsl") || !strings.Contains(out.String(), "delete") {
		t.Errorf("table:\n%s", out.String())
	}
	if after := snapshot(t, filepath.Dir(path)); len(after) != len(before) {
		t.Error("Make changed the tree")
	}
	patch, err := p.Patch()
	if err != nil {
		t.Fatal(err)
	}
	if git, err := exec.LookPath("git"); err == nil {
		pf := filepath.Join(t.TempDir(), "drain.patch")
		os.WriteFile(pf, patch, 0o644)
		cmd := exec.Command(git, "apply", "--check", "-v", pf)
		cmd.Dir = filepath.Dir(path)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("git apply --check: %v\n%s\n%s", err, msg, patch)
		}
		cmd = exec.Command(git, "apply", pf)
		cmd.Dir = filepath.Dir(path)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply: %v\n%s", err, msg)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, p.NewManifest()) {
			t.Error("the patched manifest differs from the plan's")
		}
		for _, f := range []string{"add.comp", "matvec.comp", "mul.comp"} {
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), f)); err == nil {
				t.Errorf("the patch left %s", f)
			}
		}
	} else {
		t.Logf("git not found (%v): the patch is not applied", err)
	}
}

// TestApply: -apply removes the files and entries, the manifest still loads, and an engine with
// the registry and the drained manifest serves every cell: the flipped ones by their twins,
// bit-exact; the declined ones by their incumbents.
func TestApply(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	path := fixture(t)
	m, err := incumbent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Entry("add", "f32", "vulkan").SPIRV(); err != nil {
		t.Skipf("the incumbents do not compile here: %v", err)
	}
	probe, err := engine.Open(engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dev, drv := probe.Device().Evidence()
	probe.Close()
	reg := gate(t, m, dev, drv, ratios)
	p, err := Make(m, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	left := snapshot(t, dir)
	for _, f := range []string{"add.comp", "matvec.comp", "mul.comp"} {
		if _, ok := left[f]; ok {
			t.Errorf("%s was not deleted", f)
		}
	}
	for _, f := range []string{"common.glsl", "rms_norm.comp", "swiglu.comp", "manifest.json"} {
		if _, ok := left[f]; !ok {
			t.Errorf("%s was deleted", f)
		}
	}
	for name := range left {
		if strings.HasPrefix(name, ".") {
			t.Errorf("left behind: %s", name)
		}
	}
	nm, err := incumbent.Load(path)
	if err != nil {
		t.Fatalf("the drained manifest does not load: %v", err)
	}
	e, err := engine.Open(engine.Options{Registry: reg, Manifest: nm})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewSource(1))
	const rows, n = 3, 256
	x, b := make([]float32, rows*n), make([]float32, rows*n)
	for i := range x {
		x[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	xt, _ := e.UploadF32(x, rows, n)
	bt, _ := e.UploadF32(b, rows, n)
	w, _ := e.UploadF32(b[:n], n)
	check := func(name string, run func(y *engine.Tensor) error, ref func(y []float32) error, exact bool) {
		t.Helper()
		yl := rows * n
		if name == "matvec" {
			yl = rows
		}
		y, _ := e.NewTensor(oracle.F32, yl)
		if err := run(y); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := y.F32()
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, yl)
		if err := ref(want); err != nil {
			t.Fatal(err)
		}
		if exact && !bytes.Equal(engine.F32Bytes(got), engine.F32Bytes(want)) {
			t.Errorf("%s: not bit-exact", name)
		}
	}
	wm, err := kernels.WeightRows(oracle.F32, rows, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	W, _ := e.Upload(oracle.F32, wm, rows, n)
	xv, _ := e.UploadF32(x[:n], n)
	check("add", func(y *engine.Tensor) error { return e.Add(y, xt, bt) }, func(y []float32) error { return oracle.AddF32(y, x, b) }, true)
	check("mul", func(y *engine.Tensor) error { return e.Mul(y, xt, bt) }, func(y []float32) error { return oracle.MulF32(y, x, b) }, true)
	check("matvec", func(y *engine.Tensor) error { return e.MatVec(y, W, xv) }, func(y []float32) error { return oracle.MatVec(oracle.F32, wm, x[:n], y) }, true)
	check("rms_norm", func(y *engine.Tensor) error { return e.RMSNorm(y, xt, w, 1e-6) }, func(y []float32) error { return oracle.RMSNormF32(y, x, b[:n], n, 1e-6) }, false)
	check("swiglu", func(y *engine.Tensor) error { return e.Swiglu(y, xt, bt) }, func(y []float32) error { return oracle.SwigluF32(y, x, b) }, false)
	who := map[string]registry.Impl{}
	for _, c := range e.Trace() {
		who[c.Cell] = c.Impl
	}
	for cell, want := range map[string]registry.Impl{"add/f32/vulkan": registry.Twin, "mul/f32/vulkan": registry.Twin, "matvec/f32/vulkan": registry.Twin,
		"rms_norm/f32/vulkan": registry.Incumbent, "swiglu/f32/vulkan": registry.Incumbent} {
		if who[cell] != want {
			t.Errorf("%s served by %q, want %s", cell, who[cell], want)
		}
	}
}

// TestApplyFailsCleanly: a step that fails midway (the second file cannot be moved, or the
// manifest cannot be replaced) leaves the tree exactly as it was.
func TestApplyFailsCleanly(t *testing.T) {
	for _, failAt := range []int{2, 4} { // the second file; the manifest (after three files)
		path := fixture(t)
		m, err := incumbent.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Make(m, gate(t, m, "dev", "drv", ratios))
		if err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, filepath.Dir(path))
		calls := 0
		atomicfile.RenameHook = func(from, to string) error {
			calls++
			if calls == failAt {
				return errors.New("injected failure")
			}
			return os.Rename(from, to)
		}
		err = p.Apply()
		atomicfile.RenameHook = os.Rename
		if err == nil || !strings.Contains(err.Error(), "injected failure") || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("fail at %d: %v", failAt, err)
		}
		after := snapshot(t, filepath.Dir(path))
		if len(after) != len(before) {
			t.Fatalf("fail at %d: files before %d, after %d", failAt, len(before), len(after))
		}
		for name, text := range before {
			if after[name] != text {
				t.Errorf("fail at %d: %s changed", failAt, name)
			}
		}
	}
}

// TestNoServerRefused: a plan whose result would leave a cell without a server is refused before
// anything changes (here: a dsl cell whose twin does not exist).
func TestNoServerRefused(t *testing.T) {
	path := fixture(t)
	m, err := incumbent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := gate(t, m, "dev", "drv", ratios)
	p, err := Make(m, reg)
	if err != nil {
		t.Fatal(err)
	}
	// Change the registry under the plan: the manifest's rms_norm entry would go (its cell is
	// now dsl), but pretend the twin is gone by asking for a cell no twin has.
	k := registry.Key{Op: "no_such_op", Type: "f32", Backend: "vulkan"}
	if err := reg.Register(k, "hand:x", "test"); err != nil {
		t.Fatal(err)
	}
	p.old.Incumbents = append(p.old.Incumbents, &incumbent.Entry{Op: k.Op, Type: k.Type, Backend: k.Backend})
	before := snapshot(t, filepath.Dir(path))
	if err := p.Apply(); err == nil || !strings.Contains(err.Error(), "no_such_op/f32/vulkan would have no server") {
		t.Fatalf("Apply: %v", err)
	}
	if after := snapshot(t, filepath.Dir(path)); len(after) != len(before) {
		t.Error("a refused plan changed the tree")
	}
}

// TestBurnDown replays a history (add flips, then mul, a decline, matvec, and add reverted): the
// lines remaining after each change into or out of dsl are the total less the files every user
// of which is dsl at that moment, counted here file by file.
func TestBurnDown(t *testing.T) {
	path := fixture(t)
	m, err := incumbent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	lines := func(names ...string) int {
		n := 0
		for _, name := range names {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			n += ledger.CountLines(b, ledger.GLSL)
		}
		return n
	}
	total := lines("add.comp", "matvec.comp", "rms_norm.comp", "mul.comp", "swiglu.comp", "common.glsl")
	reg := registry.New()
	for _, e := range m.Incumbents {
		if err := reg.Register(registry.Key{Op: e.Op, Type: e.Type, Backend: e.Backend}, "hand:"+e.Name, "manifest"); err != nil {
			t.Fatal(err)
		}
	}
	step := func(op string, ratio float64) {
		t.Helper()
		k := registry.Key{Op: op, Type: "f32", Backend: "vulkan"}
		c, _ := reg.Cell(k)
		ev := registry.Evidence{Device: "d", Driver: "v", Toolchain: "t", BitExact: true, TwinGBps: ratio, IncumbentGBps: 1,
			Ratio: registry.SpreadOf([]float64{ratio}), TwinHash: "x", IncumbentHash: c.Incumbent, Date: time.Unix(1e9, 0).UTC()}
		v, _ := registry.Judge(ev, reg.Threshold())
		if err := reg.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	step("add", 1.1)
	step("mul", 1.0)
	step("swiglu", 0.5) // declined: no point
	step("matvec", 2)
	if err := reg.Revert(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, "test"); err != nil {
		t.Fatal(err)
	}
	pts, err := BurnDown(m, reg)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		cell      string
		remaining int
	}{
		{"", total},
		{"add/f32/vulkan", total - lines("add.comp")},
		{"mul/f32/vulkan", total - lines("add.comp", "mul.comp")},
		{"matvec/f32/vulkan", total - lines("add.comp", "mul.comp", "matvec.comp")},
		{"add/f32/vulkan", total - lines("mul.comp", "matvec.comp")},
	}
	if len(pts) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(pts), len(want), pts)
	}
	for i, w := range want {
		if pts[i].Cell != w.cell || pts[i].Remaining != w.remaining {
			t.Errorf("point %d: %s %d, want %s %d", i, pts[i].Cell, pts[i].Remaining, w.cell, w.remaining)
		}
	}
	if pts[4].Change != "dsl -> hand" {
		t.Errorf("the revert's change: %q", pts[4].Change)
	}
}

// TestApplyKeepsManifestMode: the drained manifest keeps the mode the manifest had (Apply wrote
// it 0600, the mode of its temporary file) and nothing of the transaction is left in the tree.
func TestApplyKeepsManifestMode(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640, 0o664} {
		path := fixture(t)
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		m, err := incumbent.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Make(m, gate(t, m, "dev", "drv", ratios))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != mode {
			t.Errorf("manifest mode %v after the drain, want %v (%v)", st.Mode().Perm(), mode, err)
		}
		for name := range snapshot(t, filepath.Dir(path)) {
			if strings.HasPrefix(name, ".") {
				t.Errorf("left behind: %s", name)
			}
		}
	}
}

// TestRelativePaths: a manifest loaded by a relative path (as `onesource drain -manifest
// incumbents/manifest.json` loads it) plans, patches and applies as one loaded by an absolute
// path: Patch failed with "Rel: can't make incumbents/manifest.json relative to /...".
func TestRelativePaths(t *testing.T) {
	abs := fixture(t)
	t.Chdir(filepath.Dir(filepath.Dir(abs)))
	rel := filepath.Join(filepath.Base(filepath.Dir(abs)), filepath.Base(abs))
	m, err := incumbent.Load(rel)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(m, gate(t, m, "d", "v", ratios))
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifest != rel {
		t.Errorf("Plan.Manifest = %q, want the path it was loaded by, %q", p.Manifest, rel)
	}
	patch, err := p.Patch()
	if err != nil {
		t.Fatalf("Patch with a relative manifest path: %v", err)
	}
	if !bytes.Contains(patch, []byte("--- a/manifest.json\n")) || !bytes.Contains(patch, []byte("diff --git a/add.comp b/add.comp\n")) {
		t.Errorf("patch names the files relative to the manifest's directory wrongly:\n%s", patch)
	}
	if err := p.Apply(); err != nil {
		t.Fatalf("Apply with a relative manifest path: %v", err)
	}
	for _, f := range []string{"add.comp", "matvec.comp", "mul.comp"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(abs), f)); err == nil {
			t.Errorf("%s still there after Apply", f)
		}
	}
	if _, err := incumbent.Load(rel); err != nil {
		t.Errorf("the drained manifest does not load: %v", err)
	}
}
