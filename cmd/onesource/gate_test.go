package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/registry"
)

// TestGateCommand runs `onesource gate -sign KEY` on add/f32 against the example incumbent and
// checks the scoreboard and the registry file it writes: every entry signed by the key, the
// registry verified against a trust file naming it.
func TestGateCommand(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	manifest, _ := filepath.Abs("../../examples/incumbents/manifest.json")
	reg := filepath.Join(t.TempDir(), "cells.json")
	keyPath, trustPath := filepath.Join(t.TempDir(), "gate.pem"), filepath.Join(t.TempDir(), "trust.keys")
	if code, out, errs := run(t, "key", "-o", keyPath, "-name", "gate-test"); code != 0 {
		t.Fatalf("key: %d %s", code, errs)
	} else {
		os.WriteFile(trustPath, []byte(out), 0o644)
	}
	code, stdout, stderr := run(t, "gate", "-manifest", manifest, "-registry", reg, "-sign", keyPath, "-op", "add", "-type", "f32", "-pairs", "3", "-n", "3")
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("gate exited %d", code)
	}
	if !strings.Contains(stdout, "add/f32/vulkan") || !strings.Contains(stdout, "ratio (median") {
		t.Fatalf("no scoreboard row for add/f32/vulkan")
	}
	r, err := registry.Load(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := r.Cell(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"})
	if !ok || (c.State != registry.DSL && c.State != registry.Declined) || len(c.Evidence) != 1 || c.Evidence[0].Ratio.Pairs != 3 {
		t.Fatalf("registry cell %+v", c)
	}
	for _, e := range r.History() {
		if e.Sig == nil {
			t.Errorf("history entry %d (%s) is not signed", e.Seq, e.Action)
		}
	}
	if code, out, errs := run(t, "cells", "-registry", reg, "-verify", "-trust", trustPath); code != 0 || !strings.Contains(out, "by gate-test") {
		t.Errorf("cells -verify -trust: exit %d\n%s%s", code, out, errs)
	}
}

func TestGateCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n \"version\": 1,\n \"incumbents\": [\n  {\"op\": ]\n}\n"), 0o644)
	code, _, stderr := run(t, "gate", "-manifest", bad, "-registry", filepath.Join(dir, "cells.json"))
	if code != 1 || !strings.Contains(stderr, "bad.json:4:") {
		t.Fatalf("bad manifest: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := run(t, "gate", "-op", "no_such_op"); code != 2 {
		t.Fatalf("unknown op: exit %d, want 2", code)
	}
	if code, _, _ := run(t, "gate", "extra"); code != 2 {
		t.Fatalf("extra argument: exit %d, want 2", code)
	}
}

// TestGateShapeErrors checks that a -shape that does not fit a gated cell's op exits 2 with an
// error naming the cell and the op's variables, before any device is opened.
func TestGateShapeErrors(t *testing.T) {
	manifest, _ := filepath.Abs("../../examples/incumbents/manifest.json")
	reg := filepath.Join(t.TempDir(), "cells.json")
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"-op", "add", "-type", "f32", "-shape", "64x32x128"}, []string{"add/f32", "rows, n"}},
		{[]string{"-op", "add", "-type", "f32", "-shape", "rows=0"}, []string{"add/f32", "positive integer"}},
		{[]string{"-op", "rms_norm", "-shape", "rows=2,heads=3"}, []string{"rms_norm/f32", `no shape variable "heads"`}},
		{[]string{"-all", "-op", "rope_norm", "-shape", "rows=2,n=256"}, []string{"rope_norm/f32", "tokens, heads, head_dim"}},
		{[]string{"-all", "-op", "add,rope_neox", "-shape", "2x256"}, []string{"rope_neox/f32", "tokens x heads x head_dim"}},
		{[]string{"-op", "matvec", "-type", "f32", "-shape", "bogus"}, []string{"matvec/f32", "neither NAME=VALUE"}},
	} {
		args := append([]string{"gate", "-manifest", manifest, "-registry", reg, "-dry-run"}, c.args...)
		code, _, stderr := run(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(stderr, s) {
				t.Errorf("%v: stderr %q does not say %q", c.args, stderr, s)
			}
		}
	}
	if _, err := os.Stat(reg); err == nil {
		t.Errorf("a refused -shape wrote the registry")
	}
}

// TestGateCommandShape gates add/f32 at a small -shape: it runs to a scoreboard row.
func TestGateCommandShape(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	manifest, _ := filepath.Abs("../../examples/incumbents/manifest.json")
	reg := filepath.Join(t.TempDir(), "cells.json")
	code, stdout, stderr := run(t, "gate", "-manifest", manifest, "-registry", reg, "-op", "add", "-type", "f32",
		"-pairs", "2", "-n", "2", "-shape", "4x1024", "-dry-run")
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if code != 0 || !strings.Contains(stdout, "add/f32/vulkan") {
		t.Fatalf("gate -shape 4x1024 exited %d", code)
	}
}

// TestGateBoundsIncumbentWork: a manifest grid of 65535 x 65535 workgroups at rows=4,n=256 is
// refused at once by the bound on a dispatch's work (the gate ran it until killed at 70 s).
func TestGateBoundsIncumbentWork(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	man := incumbentVariant(t, addComp, `[65535, 65535, 1]`)
	start := time.Now()
	code, stdout, stderr := run(t, "gate", "-manifest", man, "-op", "add", "-type", "f32", "-pairs", "1", "-n", "1", "-shape", "rows=4,n=256", "-dry-run")
	if code != 1 || !strings.Contains(stdout, "is 1099478073600 invocations; the call's operands are 12288 bytes") || time.Since(start) > time.Minute {
		t.Errorf("gate on a 65535x65535 grid: exit %d after %v\n%s%s", code, time.Since(start), stdout, stderr)
	}
}

const addComp = `#version 450
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; } p;
void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = a[i] + b[i];
    }
}
`

// spinComp computes add but first spins (llvmpipe ends a loop after 65535 iterations, so 60000
// atomic adds per invocation): at 4096 workgroups of 256, minutes of work within the bound.
const spinComp = `#version 450
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) coherent buffer Y { uint y[]; };
layout(push_constant) uniform Params { uint n; } p;
void main() {
    const uint i = gl_GlobalInvocationID.x;
    for (uint j = 0u; j < 60000u; j++) {
        atomicAdd(y[0], 0u);
    }
    if (i < p.n) {
        y[i] = floatBitsToUint(a[i] + b[i]);
    }
}
`

// incumbentVariant writes a manifest with one add/f32 incumbent of source text and grid, and
// returns its path.
func incumbentVariant(t *testing.T, text, grid string) string {
	return incumbentWith(t, text, grid, "")
}

// incumbentWith is incumbentVariant with more bindings (JSON objects, each with a leading comma).
func incumbentWith(t *testing.T, text, grid, more string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "add.comp"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "manifest.json")
	m := `{"version": 1, "incumbents": [{"name": "hand_add_f32", "op": "add", "type": "f32", "backend": "vulkan", "source": {"glsl": "add.comp"},
  "bindings": [{"binding": 0, "operand": "a", "readonly": true}, {"binding": 1, "operand": "b", "readonly": true}, {"binding": 2, "operand": "y"}` + more + `],
  "push_constants": [{"name": "n", "type": "u32", "value": "rows*n"}], "workgroup_size": [256, 1, 1], "grid": ` + grid + `}]}`
	if err := os.WriteFile(man, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return man
}

const gateChildEnv = "ONESOURCE_GATE_CHILD"

// TestHelperGateChild runs `onesource gate` with the arguments in gateChildEnv (tab-separated)
// and exits with its status: a child process, so that a runaway dispatch dies with it.
func TestHelperGateChild(t *testing.T) {
	spec := os.Getenv(gateChildEnv)
	if spec == "" {
		t.Skip("helper process for TestGateTimeout")
	}
	os.Exit(runMain(strings.Split(spec, "\t"), os.Stdout, os.Stderr))
}

// TestGateTimeout: an incumbent whose dispatch runs for minutes within the bound on its work is
// stopped by the gate's -timeout: the gate reports the cell's timeout and exits (without waiting
// for the device to become idle) instead of waiting up to the 10-minute fence timeout.
func TestGateTimeout(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	man := incumbentVariant(t, spinComp, `[4096, 1, 1]`)
	args := []string{"gate", "-manifest", man, "-op", "add", "-type", "f32", "-pairs", "1", "-n", "1", "-shape", "rows=4,n=256", "-timeout", "2s", "-dry-run"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperGateChild$")
	cmd.Env = append(os.Environ(), gateChildEnv+"="+strings.Join(args, "\t"))
	start := time.Now()
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "passed the gate's timeout of 2s") {
			t.Errorf("gate -timeout 2s on a spinning incumbent: %v after %v\n%s", err, time.Since(start), out)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("gate -timeout 2s still running after 2 minutes")
	}
}

// TestEngineBoundsIncumbentWork: the engine refuses to dispatch an incumbent whose manifest
// grid asks for more work than the call's operands imply, naming the bound.
func TestEngineBoundsIncumbentWork(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	m, err := incumbent.Load(incumbentVariant(t, addComp, `[65535, 65535, 1]`))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New()
	if err := reg.Register(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, "h", "test"); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(engine.Options{Registry: reg, Manifest: m})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	x, _ := e.UploadF32(make([]float32, 4*256), 4, 256)
	y, _ := e.UploadF32(make([]float32, 4*256), 4, 256)
	start := time.Now()
	err = e.Add(y, x, x)
	if err == nil {
		err = e.Flush()
	}
	if err == nil || !strings.Contains(err.Error(), "the manifest's grid is not this shape's") || time.Since(start) > time.Minute {
		t.Errorf("Add through a 65535x65535 incumbent grid: %v after %v", err, time.Since(start))
	}
}

// cachingComp is add that caches its output between dispatches: it counts the workgroups that
// finished in a scratch word, and once a whole dispatch has finished it returns at once, leaving
// whatever the output holds (the result of the first dispatch). Checked once and timed after, it
// is exact and very fast.
const cachingComp = `#version 450
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };
layout(binding = 3) coherent buffer S { uint finished; } s;
layout(push_constant) uniform Params { uint n; } p;
void main() {
    if (s.finished >= gl_NumWorkGroups.x) {
        return;
    }
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = a[i] + b[i];
    }
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        atomicAdd(s.finished, 1u);
    }
}
`

// TestGateCatchesCachingIncumbent: an incumbent that computes once and serves its cached output
// on later dispatches is caught: its second run on the same inputs leaves the poisoned output,
// and so do its timed runs; the evidence says so, the incumbent counts as wrong and the
// bit-exact twin flips on correctness (the gate measured it fast and declined the twin).
func TestGateCatchesCachingIncumbent(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	man := incumbentWith(t, cachingComp, `["cdiv(rows*n, 256)", 1, 1]`, `, {"binding": 3, "scratch_bytes": "4"}`)
	reg := filepath.Join(t.TempDir(), "cells.json")
	code, stdout, stderr := run(t, "gate", "-manifest", man, "-registry", reg, "-op", "add", "-type", "f32", "-pairs", "3", "-n", "5", "-shape", "rows=8,n=4096", "-seed", "7")
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("gate exited %d", code)
	}
	r, err := registry.Load(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.Cell(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"})
	if len(c.Evidence) != 1 {
		t.Fatalf("cell %+v", c)
	}
	ev := c.Evidence[0]
	caught := false
	for _, f := range ev.Findings {
		caught = caught || strings.HasPrefix(f, "incumbent: ") && strings.Contains(f, "gave other bytes")
	}
	if !caught || !ev.IncumbentWrong || c.State != registry.DSL || ev.Seed != 7 {
		t.Errorf("the caching incumbent was not caught: state %s, wrong %v, seed %d, findings %q", c.State, ev.IncumbentWrong, ev.Seed, ev.Findings)
	}
	if !strings.Contains(stdout, "the incumbent is wrong (") {
		t.Errorf("the scoreboard does not say why")
	}
}
