package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/internal/incumbentstest"
	"github.com/onesource-go/onesource/registry"
)

// outputFixture writes the incumbents fixture (examples/incumbents, with mul and swiglu
// including common.glsl) into a temporary directory with a registry in
// which add flipped and the rest declined, and returns the directory, the manifest and the
// registry paths.
func outputFixture(t *testing.T) (dir, man, reg string) {
	t.Helper()
	dir = t.TempDir()
	man, err := incumbentstest.Write(dir, filepath.Join("..", "..", "examples", "incumbents"))
	if err != nil {
		t.Fatal(err)
	}
	reg = filepath.Join(dir, "registry.json")
	r, err := registry.Open(reg)
	if err != nil {
		t.Fatal(err)
	}
	for op, ratio := range map[string]float64{"add": 1.1, "rms_norm": 0.5} {
		k := registry.Key{Op: op, Type: "f32", Backend: "vulkan"}
		if err := r.Register(k, "h", "manifest"); err != nil {
			t.Fatal(err)
		}
		ev := registry.Evidence{Device: "d", Driver: "v", Toolchain: "t", BitExact: true, TwinGBps: ratio, IncumbentGBps: 1,
			Ratio: registry.SpreadOf([]float64{ratio}), TwinHash: "x", IncumbentHash: "h", Date: time.Unix(1e9, 0).UTC()}
		v, _ := registry.Judge(ev, r.Threshold())
		if err := r.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	return dir, man, reg
}

// TestOutputsNeverOverwriteInputs: every command that writes a file refuses an output that is one
// of its inputs (the registry, the manifest, a kernel source the manifest names, through a
// symbolic link too), exits 1 and leaves every file as it was; each exited 0 having overwritten
// the input before.
func TestOutputsNeverOverwriteInputs(t *testing.T) {
	dir, man, reg := outputFixture(t)
	comp := filepath.Join(dir, "rms_norm.comp")
	common := filepath.Join(dir, "common.glsl") // included by mul.comp and swiglu.comp, named by no entry
	link := filepath.Join(t.TempDir(), "registry-link.json")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{man, reg, comp, common} {
		before[p], _ = os.ReadFile(p)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"cells -html the registry", []string{"cells", "-registry", reg, "-html", reg}},
		{"cells -html a link to the registry", []string{"cells", "-registry", reg, "-html", link}},
		{"report -html the registry", []string{"report", "-registry", reg, "-manifest", man, "-html", reg}},
		{"report -html the manifest", []string{"report", "-registry", reg, "-manifest", man, "-html", man}},
		{"report -html a source", []string{"report", "-registry", reg, "-manifest", man, "-html", comp}},
		{"report -html an included file", []string{"report", "-registry", reg, "-manifest", man, "-html", common}},
		{"report -html a ledger file", []string{"report", "-registry", reg, "-html", comp, dir}},
		{"drain -json the manifest", []string{"drain", "-manifest", man, "-registry", reg, "-json", man}},
		{"drain -patch a source", []string{"drain", "-manifest", man, "-registry", reg, "-patch", comp}},
		{"drain -json the registry", []string{"drain", "-manifest", man, "-registry", reg, "-json", link}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			rc := runMain(tc.args, &out, &errb)
			if rc != 1 || !strings.Contains(errb.String(), "refusing to overwrite it") {
				t.Errorf("exit %d, stderr %q; want 1 and a refusal", rc, errb.String())
			}
			for p, b := range before {
				if now, _ := os.ReadFile(p); !bytes.Equal(now, b) {
					t.Errorf("%s changed", filepath.Base(p))
				}
			}
		})
	}
	// Another file is written, and keeps the mode it had.
	html := filepath.Join(t.TempDir(), "cells.html")
	os.WriteFile(html, nil, 0o640)
	var out, errb bytes.Buffer
	if rc := runMain([]string{"cells", "-registry", reg, "-html", html}, &out, &errb); rc != 0 {
		t.Fatalf("cells -html: exit %d: %s", rc, errb.String())
	}
	if st, err := os.Stat(html); err != nil || st.Size() == 0 || st.Mode().Perm() != 0o640 {
		t.Errorf("the report: %v, %v", st, err)
	}
}
