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

// TestGateCommand runs `onesource gate` on add/f32 against the example incumbent and checks the
// scoreboard and the registry file it writes.
func TestGateCommand(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	manifest, _ := filepath.Abs("../../examples/incumbents/manifest.json")
	reg := filepath.Join(t.TempDir(), "cells.json")
	code, stdout, stderr := run(t, "gate", "-manifest", manifest, "-registry", reg, "-op", "add", "-type", "f32", "-pairs", "3", "-n", "3")
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
