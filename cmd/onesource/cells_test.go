package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/registry"
)

// cellsFixture writes a registry with one cell in each interesting state and returns its path.
func cellsFixture(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "registry.json")
	r, err := registry.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	ev := func(dev string, exact bool, twin, hand float64) registry.Evidence {
		e := registry.Evidence{Device: dev, Driver: "mesa 24.2", Toolchain: "go1.26", BitExact: exact, TwinGBps: twin,
			IncumbentGBps: hand, RooflineGBps: 180, TwinHash: "sha256:t", Date: date}
		if hand > 0 {
			e.IncumbentHash = "sha256:h"
			e.Ratio = registry.SpreadOf([]float64{twin / hand, twin / hand * 0.99, twin / hand * 1.01})
		}
		if !exact {
			e.MaxULP = 4
		}
		return e
	}
	steps := []struct {
		k registry.Key
		e registry.Evidence
		v registry.Verdict
	}{
		{registry.Key{Op: "matvec", Type: "q4_K", Backend: "vulkan"}, ev("lavapipe", true, 101, 100), registry.Flip},
		{registry.Key{Op: "rms_norm", Type: "f32", Backend: "vulkan"}, ev("lavapipe", true, 80, 100), registry.Decline},
		{registry.Key{Op: "softmax", Type: "f32", Backend: "vulkan"}, ev("lavapipe", false, 90, 100), registry.Fail},
		{registry.Key{Op: "add", Type: "f32", Backend: "metal"}, ev("m2 <pro> & co", true, 50, 0), registry.Flip},
	}
	for _, s := range steps {
		if s.e.IncumbentHash != "" {
			if err := r.Register(s.k, s.e.IncumbentHash, "ggml"); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Apply(registry.GateResult{Key: s.k, Evidence: s.e, Verdict: s.v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Register(registry.Key{Op: "rope", Type: "f32", Backend: "vulkan"}, "sha256:h", "ggml"); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCellsTableAndHTML(t *testing.T) {
	p := cellsFixture(t)
	out := filepath.Join(t.TempDir(), "cells.html")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"cells", "-registry", p, "-html", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("cells exited %d: %s", code, stderr.String())
	}
	table := stdout.String()
	t.Log("\n" + table)
	for _, want := range []string{"matvec/q4_K/vulkan", "dsl", "declined", "failing", "fallback", "hand", "1.010 [", "lavapipe", "5 cells:"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkCellsHTML(t, b)
	t.Run("chromium", func(t *testing.T) { chromiumScreenshot(t, out, "1200,800") })
}

// checkCellsHTML parses the report as XML (it is written well formed) and checks its structure and
// that it needs no network.
func checkCellsHTML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	var stack []string
	count := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("report is not well formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			count[tok.Name.Local]++
			for _, a := range tok.Attr {
				if a.Name.Local == "src" || a.Name.Local == "href" {
					t.Errorf("<%s %s=%q>: the report must not load anything", tok.Name.Local, a.Name.Local, a.Value)
				}
			}
			switch tok.Name.Local {
			case "script", "link", "img", "iframe":
				t.Errorf("report has <%s>", tok.Name.Local)
			case "rect":
				if len(stack) < 2 || !strings.Contains(strings.Join(stack, "/"), "svg") {
					t.Errorf("rect outside svg: %v", stack)
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
	for el, n := range map[string]int{"html": 1, "style": 1, "table": 1, "svg": 1, "tr": 6} {
		if count[el] < n {
			t.Errorf("report has %d <%s>, want >= %d", count[el], el, n)
		}
	}
	// 4 cells with evidence: twin bars 4, incumbent 3 (the metal cell has none), roofline 4, + legend 3.
	if count["rect"] != 4+3+4+3 {
		t.Errorf("report has %d bars, want 14", count["rect"])
	}
	s := string(b)
	if strings.Contains(s, "http://") && strings.Count(s, "http://") != strings.Count(s, "xmlns=\"http://") {
		t.Errorf("report references a URL")
	}
	if !strings.Contains(s, "m2 &lt;pro&gt; &amp; co") {
		t.Errorf("device name not escaped")
	}
}

// chromiumScreenshot renders htmlPath in headless chromium at size ("W,H") and returns the
// screenshot's path, or skips the test with the reason when chromium is not installed.
func chromiumScreenshot(t *testing.T, htmlPath, size string) string {
	t.Helper()
	bin := chromium(t)
	png := filepath.Join(t.TempDir(), "shot.png")
	abs, _ := filepath.Abs(htmlPath)
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--screenshot="+png, "--window-size="+size, "file://"+abs)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	st, err := os.Stat(png)
	if err != nil || st.Size() == 0 {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	b, _ := os.ReadFile(png)
	if !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatal("screenshot is not a PNG")
	}
	return png
}

// chromium returns the path of a headless-capable chromium, or skips the test with the reason.
func chromium(t *testing.T) string {
	t.Helper()
	for _, c := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	t.Skip("no chromium at /usr/bin/chromium(-browser) or /usr/bin/google-chrome: the report was checked by XML parsing only")
	return ""
}

func TestCellsErrors(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"cells", "-registry", filepath.Join(dir, "none.json")}, &stdout, &stderr); code != 1 {
		t.Fatalf("missing registry: exit %d", code)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format": "onesource-registry", "version": 1, "threshold": 0.97, "cells": [`), 0o644)
	stderr.Reset()
	if code := runMain([]string{"cells", "-registry", bad}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "corrupt") {
		t.Fatalf("corrupt registry: exit %d, %s", code, stderr.String())
	}
	if code := runMain([]string{"cells", "extra"}, &stdout, &stderr); code != 2 {
		t.Fatalf("extra argument: exit %d", code)
	}
}

// TestCellsVars: `onesource cells -vars OP/TYPE` lists the variables a manifest's expressions may
// use for a cell with their values at its benchmark shape: an op's shape variables and what
// follows from them (rms_norm/f32: rows 64 of n 4096, the twin's parameter weighted, the operand
// sizes, the grid), or, for a cell without a workload, its largest case's fixed variables; an
// unknown cell is an error naming what was searched.
func TestCellsVars(t *testing.T) {
	code, out, stderr := run(t, "cells", "-vars", "rms_norm/f32")
	if code != 0 {
		t.Fatalf("cells -vars rms_norm/f32: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"rows      64", "shape (size)", "n         4096", "eps       1e-06", "shape (real)", "seed", "specials",
		"bytes_x   1048576", "derived", "grid_x    64", "lanes     64", "weighted  1", "the twin's parameter weighted (u32)"} {
		if !strings.Contains(out, want) {
			t.Errorf("cells -vars rms_norm/f32 has no %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "cells", "-vars", "histogram/f32")
	if code != 0 || !strings.Contains(out, "largest conformance case") || !strings.Contains(out, "bytes_key   20000  case") {
		t.Errorf("cells -vars histogram/f32 (no workload): exit %d:\n%s", code, out)
	}
	code, _, stderr = run(t, "cells", "-vars", "layer_norm_gelu/f32")
	if code != 2 || !strings.Contains(stderr, "searched the library's cells") || !strings.Contains(stderr, "./mycells") {
		t.Errorf("cells -vars of an unregistered cell: exit %d: %s", code, stderr)
	}
}
