package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
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
