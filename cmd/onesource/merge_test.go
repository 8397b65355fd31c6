package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/registry"
)

// gatedOn writes a registry file holding what a gate run on device dev found: the given cells
// flipped (fast) or declined (slow), against incumbent "h".
func gatedOn(t *testing.T, dir, dev string, date time.Time, cells map[string]float64) string {
	t.Helper()
	p := filepath.Join(dir, dev+".json")
	r, err := registry.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	for op, ratio := range cells {
		k := registry.Key{Op: op, Type: "f32", Backend: "vulkan"}
		if err := r.Register(k, "h", "manifest"); err != nil {
			t.Fatal(err)
		}
		e := registry.Evidence{Device: dev, Driver: "drv 1", Toolchain: "tc", BitExact: true, TwinGBps: 100 * ratio, IncumbentGBps: 100,
			Ratio: registry.SpreadOf([]float64{ratio, ratio, ratio}), TwinHash: "t", IncumbentHash: "h", Date: date}
		v, _ := registry.Judge(e, r.Threshold())
		if err := r.Apply(registry.GateResult{Key: k, Evidence: e, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMerge: two devices' files merge into one holding both machines' evidence, each device's
// verdict its own (SelectOn); merging a second, different measurement from the same machine is a
// conflict reported by cell and device (exit 3), the newer kept and the older in the history; a
// file that cannot be merged writes nothing.
func TestMerge(t *testing.T) {
	dir := t.TempDir()
	d1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a := gatedOn(t, dir, "gpuA", d1, map[string]float64{"rms_norm": 1.3, "softmax": 0.6})
	b := gatedOn(t, dir, "gpuB", d1, map[string]float64{"rms_norm": 1.1, "softmax": 1.2})
	out := filepath.Join(dir, "merged.json")
	var stdout, stderr bytes.Buffer
	if rc := runMain([]string{"merge", "-o", out, a, b}, &stdout, &stderr); rc != 0 {
		t.Fatalf("merge: exit %d\n%s%s", rc, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "0 conflict(s)") {
		t.Errorf("output: %s", stdout.String())
	}
	m, err := registry.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := m.Cell(registry.Key{Op: "softmax", Type: "f32", Backend: "vulkan"})
	if len(c.Evidence) != 2 || c.State != registry.Declined {
		t.Fatalf("softmax: %d pieces of evidence, state %s; want 2, declined (over both machines)", len(c.Evidence), c.State)
	}
	if s := m.SelectOn("softmax", "f32", "vulkan", "gpuA", "drv 1").State; s != registry.Declined {
		t.Errorf("softmax on gpuA: %s, want declined", s)
	}
	if s := m.SelectOn("softmax", "f32", "vulkan", "gpuB", "drv 1").State; s != registry.DSL {
		t.Errorf("softmax on gpuB: %s, want dsl (gpuA's decline does not decide gpuB)", s)
	}
	if s := m.Select("rms_norm", "f32", "vulkan").State; s != registry.DSL {
		t.Errorf("rms_norm: %s, want dsl on both", s)
	}

	// gpuA measured softmax again (a later run, another ratio): merged into the same output, a
	// conflict on softmax/gpuA.
	again := gatedOn(t, t.TempDir(), "gpuA", d1.Add(24*time.Hour), map[string]float64{"softmax": 0.7})
	stdout.Reset()
	if rc := runMain([]string{"merge", "-o", out, again}, &stdout, &stderr); rc != 3 {
		t.Fatalf("merge with a conflict: exit %d, want 3\n%s", rc, stdout.String())
	}
	if !strings.Contains(stdout.String(), "conflict: softmax/f32/vulkan on gpuA") || !strings.Contains(stdout.String(), "1 conflict(s)") {
		t.Errorf("the conflict is not reported by cell and device:\n%s", stdout.String())
	}
	m, err = registry.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c, _ = m.Cell(registry.Key{Op: "softmax", Type: "f32", Backend: "vulkan"})
	for _, e := range c.Evidence {
		if e.Device == "gpuA" && !e.Date.Equal(d1.Add(24*time.Hour)) {
			t.Errorf("kept gpuA's evidence of %s, want the newer", e.Date)
		}
	}
	conflicts := 0
	for _, h := range m.History() {
		if h.Action == "conflict" {
			conflicts++
		}
	}
	if conflicts != 1 {
		t.Errorf("%d conflicts in the history, want 1", conflicts)
	}

	// A file that cannot be merged (another threshold) writes nothing.
	odd := filepath.Join(dir, "odd.json")
	r, _ := registry.Open(odd)
	if err := r.SetThreshold(0.9, "test"); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(out)
	if rc := runMain([]string{"merge", "-o", out, odd}, &stdout, &stderr); rc != 1 || !strings.Contains(stderr.String(), "thresholds differ") {
		t.Errorf("merging another threshold: exit %d, %s", rc, stderr.String())
	}
	after, _ := os.ReadFile(out)
	if !bytes.Equal(before, after) {
		t.Error("a failed merge changed the output file")
	}
	if rc := runMain([]string{"merge", a}, &stdout, &stderr); rc != 2 {
		t.Errorf("merge without -o: exit %d", rc)
	}
}

// TestCellsVerify: `onesource cells -verify` says the history is chained, anchored and matches
// the cells; a file whose history lost its last entry does not load.
func TestCellsVerify(t *testing.T) {
	dir := t.TempDir()
	p := gatedOn(t, dir, "gpuA", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), map[string]float64{"rms_norm": 1.3})
	var out, errb bytes.Buffer
	if rc := runMain([]string{"cells", "-registry", p, "-verify"}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "chained, anchored at") {
		t.Fatalf("verify: exit %d\n%s%s", rc, out.String(), errb.String())
	}
	b, _ := os.ReadFile(p)
	s := string(b)
	// Drop the last history entry (keeping the JSON valid): the head no longer matches.
	i := strings.LastIndex(s, "    {\n      \"seq\"")
	j := strings.LastIndex(s, "  ],\n  \"head\"")
	cut := strings.TrimRight(s[:i], ",\n ") + "\n" + s[j:]
	os.WriteFile(p, []byte(cut), 0o644)
	errb.Reset()
	if rc := runMain([]string{"cells", "-registry", p, "-verify"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "truncated") {
		t.Errorf("a truncated history: exit %d, %s", rc, errb.String())
	}
}

// TestCellsNoRegistry: `onesource cells` without a registry file says how to make one.
func TestCellsNoRegistry(t *testing.T) {
	var out, errb bytes.Buffer
	p := filepath.Join(t.TempDir(), "registry.json")
	if rc := runMain([]string{"cells", "-registry", p}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "onesource gate -manifest") {
		t.Errorf("cells with no registry: exit %d\n%s", rc, errb.String())
	}
}
