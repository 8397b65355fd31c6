package cells_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
)

// TestCommands runs the method on this package's cells from the command line, as a user would
// from the module's root, with the onesource command this module requires (go tool onesource):
//
//	onesource cells -vars layer_norm_gelu/f32 ./cells
//	onesource conform ./cells
//	onesource gate -manifest incumbents/manifest.json -registry R ./cells
//	onesource drain -manifest incumbents/manifest.json -registry R incumbents ./cells
//	onesource drain -manifest COPY/manifest.json -registry R -apply COPY ./cells
//	onesource report -manifest incumbents/manifest.json -registry R -html OUT ./cells
//
// The gate flips layer_norm_gelu (its naive incumbent is wrong) and declines cumsum (its
// incumbent is faster); the drain plans the flipped cell's file away, keeps the declined one's,
// and applies that to a copy of the incumbents (the module's own files stay as they are); the
// report says the same. Without Vulkan or glslc it stops after conform, saying why.
func TestCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the onesource command and helper programs with the go command")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "onesource")
	if out, err := goCmd(root, "build", "-o", bin, "github.com/onesource-go/onesource/cmd/onesource"); err != nil {
		t.Fatalf("go build onesource: %v\n%s", err, out)
	}
	before := snapshot(t, root)
	run := func(want int, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		rc := 0
		if ee, ok := err.(*exec.ExitError); ok {
			rc = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("onesource %s: %v", strings.Join(args, " "), err)
		}
		if rc != want {
			t.Fatalf("onesource %s: exit %d, want %d\n%s", strings.Join(args, " "), rc, want, out.String())
		}
		return out.String()
	}
	expect := func(out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("no %q in:\n%s", w, out)
			}
		}
	}

	// The variables a manifest may use for the cell, with their values at the benchmark shape.
	expect(run(0, "cells", "-vars", "layer_norm_gelu/f32", "./cells"),
		"rows      64", "center    300", "bytes_x   1048576", "grid_x    64", "lanes     64")
	// Mistakes name what was searched.
	expect(run(2, "gate", "-manifest", "incumbents/manifest.json", "-op", "layer_norm", "-dry-run", "./cells"),
		"no cell matches -op layer_norm", "example.com/onesource-cells/cells")
	stray := filepath.Join(tmp, "stray.json")
	if err := os.WriteFile(stray, []byte(`{"version": 1, "incumbents": [{"name": "hand_stray", "op": "stray", "type": "f32", "backend": "vulkan",
  "source": {"glsl": "`+filepath.Join(root, "incumbents", "cumsum.comp")+`"}, "bindings": [{"binding": 0, "operand": "x", "readonly": true}, {"binding": 1, "operand": "y"}],
  "push_constants": [{"name": "n", "type": "u32", "value": "n"}, {"name": "rows", "type": "u32", "value": "rows"}], "workgroup_size": [64, 1, 1], "grid": ["rows", 1, 1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(run(2, "gate", "-manifest", stray, "-dry-run", "./cells"),
		"hand_stray (cell stray/f32/vulkan)", "example.com/onesource-cells/cells")

	// conform: every backend this machine has, both cells bit-exact.
	out := run(0, "conform", "./cells")
	expect(out, "cumsum/f32", "layer_norm_gelu/f32", "runs are bit-exact")
	if strings.Contains(out, "rms_norm") {
		t.Errorf("conform ./cells ran the library's cells too:\n%s", out)
	}

	if err := vulkan.Available(); err != nil {
		t.Skipf("conform ran; gate, drain and report need Vulkan: %v", err)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skipf("conform ran; gate, drain and report need glslc for the GLSL incumbents: %v", err)
	}
	// A manifest expression naming a variable the cell does not have: the gate's error lists
	// those it has.
	b, err := os.ReadFile(filepath.Join(root, "incumbents", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	badVar := filepath.Join(tmp, "badvar", "manifest.json")
	copyDir(t, filepath.Join(root, "incumbents"), filepath.Dir(badVar))
	if err := os.WriteFile(badVar, bytes.Replace(b, []byte(`"grid": ["cdiv(rows, 64)", 1, 1],
      "notes": "64 rows`), []byte(`"grid": ["cdiv(nrows, 64)", 1, 1],
      "notes": "64 rows`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(run(1, "gate", "-manifest", badVar, "-op", "cumsum", "-dry-run", "./cells"),
		`unknown shape variable "nrows"`, "the variables of cumsum/f32 are", "rows", "onesource cells -vars cumsum/f32")

	reg := filepath.Join(tmp, "registry.json")
	out = run(0, "gate", "-manifest", "incumbents/manifest.json", "-registry", reg, "./cells")
	expect(out, "layer_norm_gelu/f32/vulkan: flip -> dsl", "cumsum/f32/vulkan: decline -> declined", "the incumbent is wrong", "registry: "+reg)

	// drain, dry run: the flipped cell's file goes, the declined cell's stays; nothing changes.
	plan := filepath.Join(tmp, "plan.json")
	out = run(0, "drain", "-manifest", "incumbents/manifest.json", "-registry", reg, "-json", plan, "incumbents", "./cells")
	expect(out, "layer_norm_gelu.comp  24", "delete", "nothing was changed", "ledger now: incumbents: 42 hand-written lines")
	var p struct {
		LinesBefore  int `json:"lines_before"`
		LinesRemoved int `json:"lines_removed"`
		Files        []struct {
			Path   string
			Delete bool
		}
	}
	b, err = os.ReadFile(plan)
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Files {
		if f.Delete != (f.Path == "layer_norm_gelu.comp") {
			t.Errorf("the plan's verdict on %s: delete %v", f.Path, f.Delete)
		}
	}
	// Without the package, the command has no twin for the cell: the file stays, and it says why.
	expect(run(0, "drain", "-manifest", "incumbents/manifest.json", "-registry", reg),
		"0 of 42 hand-written lines can go", "no package registers the twin of layer_norm_gelu/f32/vulkan")

	// drain -apply, on a copy of the incumbents.
	cp := filepath.Join(tmp, "incumbents")
	copyDir(t, filepath.Join(root, "incumbents"), cp)
	out = run(0, "drain", "-manifest", filepath.Join(cp, "manifest.json"), "-registry", reg, "-apply", cp, "./cells")
	expect(out, "drained: 1 files deleted, 1 manifest entries removed", "ledger after: "+cp+": 18 hand-written lines")
	if _, err := os.Stat(filepath.Join(cp, "layer_norm_gelu.comp")); err == nil {
		t.Error("layer_norm_gelu.comp is still in the copy after drain -apply")
	}
	if m, _ := os.ReadFile(filepath.Join(cp, "manifest.json")); strings.Contains(string(m), "hand_layer_norm_gelu") || !strings.Contains(string(m), "hand_cumsum") {
		t.Errorf("the copy's manifest after drain -apply:\n%s", m)
	}

	// report: the same plan, the flip and the decline, each incumbent's correctness.
	html := filepath.Join(tmp, "report.html")
	out = run(0, "report", "-manifest", "incumbents/manifest.json", "-registry", reg, "-html", html, "./cells")
	expect(out, "the drain: 24 of the 42 hand-written lines the manifest uses go (1 of 2 files); 18 stay",
		"FLIPPED", "layer_norm_gelu/f32/vulkan", "WRONG", "DECLINED", "cumsum/f32/vulkan", "hand -> dsl")
	if p.LinesBefore != 42 || p.LinesRemoved != 24 {
		t.Errorf("drain's plan: %d of %d lines; the report: 24 of 42", p.LinesRemoved, p.LinesBefore)
	}
	if _, err := os.Stat(html); err != nil {
		t.Error(err)
	}
	if after := snapshot(t, root); !maps.Equal(before, after) {
		t.Error("the commands changed the module's own files")
	}
}

// goCmd runs the go command in dir (outside any workspace) and returns its combined output.
func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// snapshot maps every regular file under dir to its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
