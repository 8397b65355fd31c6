package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/registry"
)

// gatedRegistry writes a registry at path whose f32 vulkan cells of ratios were gated bit-exact
// at those twin/incumbent ratios: 0.97 or more flips, less declines.
func gatedRegistry(t *testing.T, path string, ratios map[string]float64) {
	t.Helper()
	reg, err := registry.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for op, ratio := range ratios {
		k := registry.Key{Op: op, Type: "f32", Backend: "vulkan"}
		if err := reg.Register(k, "h", "manifest"); err != nil {
			t.Fatal(err)
		}
		ev := registry.Evidence{Device: "d", Driver: "v", Toolchain: "t", BitExact: true, TwinGBps: ratio, IncumbentGBps: 1,
			Ratio: registry.SpreadOf([]float64{ratio}), TwinHash: "x", IncumbentHash: "h", Date: time.Unix(1e9, 0).UTC()}
		v, _ := registry.Judge(ev, reg.Threshold())
		if err := reg.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Save(""); err != nil {
		t.Fatal(err)
	}
}

// TestDrainCommand: with add flipped and the others declined, `onesource drain` plans to delete
// add.comp only (table, JSON and patch), changes nothing without -apply, and with -apply deletes
// it and drops its manifest entry.
func TestDrainCommand(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "incumbents")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(src, e.Name()))
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	regPath := filepath.Join(dir, "registry.json")
	gatedRegistry(t, regPath, map[string]float64{"add": 1.1, "rms_norm": 0.5, "matvec": 0.9})
	man := filepath.Join(dir, "manifest.json")
	jsonOut, patchOut := filepath.Join(t.TempDir(), "plan.json"), filepath.Join(t.TempDir(), "plan.patch")
	var out, errb bytes.Buffer
	if rc := runMain([]string{"drain", "-manifest", man, "-registry", regPath, "-json", jsonOut, "-patch", patchOut, dir}, &out, &errb); rc != 0 {
		t.Fatalf("drain: exit %d\n%s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "add.comp") || !strings.Contains(out.String(), "nothing was changed") || !strings.Contains(out.String(), "ledger now") {
		t.Errorf("plan output:\n%s", out.String())
	}
	var plan struct {
		Files []struct {
			Path   string
			Delete bool
		}
	}
	b, _ := os.ReadFile(jsonOut)
	if err := json.Unmarshal(b, &plan); err != nil {
		t.Fatal(err)
	}
	var del []string
	for _, f := range plan.Files {
		if f.Delete {
			del = append(del, f.Path)
		}
	}
	if strings.Join(del, ",") != "add.comp" {
		t.Errorf("JSON plan deletes %v, want [add.comp]", del)
	}
	if p, _ := os.ReadFile(patchOut); !strings.Contains(string(p), "+++ /dev/null") || !strings.Contains(string(p), "-    {") {
		t.Errorf("patch:\n%s", p)
	}
	if _, err := os.Stat(filepath.Join(dir, "add.comp")); err != nil {
		t.Fatal("add.comp deleted without -apply")
	}
	out.Reset()
	if rc := runMain([]string{"drain", "-manifest", man, "-registry", regPath, "-apply", dir}, &out, &errb); rc != 0 {
		t.Fatalf("drain -apply: exit %d\n%s", rc, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "add.comp")); err == nil {
		t.Error("add.comp still there after -apply")
	}
	if b, _ := os.ReadFile(man); strings.Contains(string(b), "hand_add_f32") || !strings.Contains(string(b), "hand_rms_norm_f32") {
		t.Errorf("manifest after -apply:\n%s", b)
	}
	if !strings.Contains(out.String(), "drained: 1 files deleted, 1 manifest entries removed") || !strings.Contains(out.String(), "ledger after") {
		t.Errorf("apply output:\n%s", out.String())
	}
}

// TestDrainRelativePaths is `onesource drain -manifest incumbents/manifest.json incumbents` run
// from the tree's parent, every path relative: the plan, the patch, -apply and the ledger work as
// with absolute paths (the patch failed with "Rel: can't make incumbents/manifest.json relative").
func TestDrainRelativePaths(t *testing.T) {
	root := t.TempDir()
	copyTree(t, filepath.Join("..", "..", "examples", "incumbents"), filepath.Join(root, "incumbents"))
	t.Chdir(root)
	gatedRegistry(t, "registry.json", map[string]float64{"add": 1.1, "rms_norm": 0.5, "matvec": 0.9})
	var out, errb bytes.Buffer
	args := []string{"drain", "-manifest", "incumbents/manifest.json", "-registry", "registry.json", "-patch", "plan.patch", "-json", "plan.json", "incumbents"}
	if rc := runMain(args, &out, &errb); rc != 0 {
		t.Fatalf("drain with relative paths: exit %d\n%s", rc, errb.String())
	}
	p, err := os.ReadFile("plan.patch")
	if err != nil || !strings.Contains(string(p), "diff --git a/add.comp b/add.comp") || !strings.Contains(string(p), "--- a/manifest.json") {
		t.Errorf("patch (%v):\n%s", err, p)
	}
	if !strings.Contains(out.String(), "ledger now: incumbents:") {
		t.Errorf("no ledger line for the relative tree:\n%s", out.String())
	}
	out.Reset()
	if rc := runMain([]string{"drain", "-manifest", "incumbents/manifest.json", "-registry", "registry.json", "-apply", "incumbents"}, &out, &errb); rc != 0 {
		t.Fatalf("drain -apply with relative paths: exit %d\n%s", rc, errb.String())
	}
	if _, err := os.Stat(filepath.Join("incumbents", "add.comp")); err == nil {
		t.Error("add.comp still there after -apply")
	}
	if !strings.Contains(out.String(), "drained: 1 files deleted, 1 manifest entries removed") {
		t.Errorf("apply output:\n%s", out.String())
	}
}
