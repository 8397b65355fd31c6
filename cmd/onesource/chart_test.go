package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/registry"
)

// laidOut is one element of a page's SVG charts as headless chromium lays it out: its box in
// CSS pixels.
type laidOut struct {
	SVG            int
	Tag, Class     string
	Text           string
	X0, Y0, X1, Y1 float64
}

// layoutScript records the client box of every SVG, and of every text and rect in one, into a
// <pre id="layout"> element as JSON, for --dump-dom to print.
const layoutScript = `<script>
const out = [];
document.querySelectorAll("svg").forEach((svg, i) => {
  for (const el of [svg, ...svg.querySelectorAll("text, rect")]) {
    const b = el.getBoundingClientRect();
    out.push({SVG: i, Tag: el.tagName.toLowerCase(), Class: el.getAttribute("class") || "",
      Text: el.tagName.toLowerCase() === "text" ? el.textContent : "", X0: b.left, Y0: b.top, X1: b.right, Y1: b.bottom});
  }
});
const pre = document.createElement("pre");
pre.id = "layout";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>
`

// chromiumLayout renders the page at htmlPath in headless chromium (skipping without one) and
// returns the laid-out boxes of its SVG elements.
func chromiumLayout(t *testing.T, htmlPath string) []laidOut {
	t.Helper()
	bin := chromium(t)
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(probe, bytes.Replace(page, []byte("</body>"), []byte(layoutScript+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1000", "--dump-dom", "file://"+probe)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`(?s)<pre id="layout">(.*?)</pre>`).FindSubmatch(stdout.Bytes())
	if m == nil {
		t.Fatalf("chromium's DOM has no layout record (did the script run?):\n%.2000s", stdout.String())
	}
	var boxes []laidOut
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &boxes); err != nil {
		t.Fatal(err)
	}
	return boxes
}

// overlap reports whether two boxes share more than half a pixel (antialiasing) each way.
func overlap(a, b laidOut) bool {
	const slack = 0.5
	return a.X0+slack < b.X1 && b.X0+slack < a.X1 && a.Y0+slack < b.Y1 && b.Y0+slack < a.Y1
}

// checkLabels fails for every text of a chart that overlaps another text or a bar of its chart,
// or leaves its SVG, as chromium lays the page out; it returns how many texts it checked.
func checkLabels(t *testing.T, page string, boxes []laidOut) int {
	t.Helper()
	svgs := map[int]laidOut{}
	for _, b := range boxes {
		if b.Tag == "svg" {
			svgs[b.SVG] = b
		}
	}
	n := 0
	for i, a := range boxes {
		if a.Tag != "text" || a.X1 <= a.X0 {
			continue
		}
		n++
		if s := svgs[a.SVG]; a.X0 < s.X0-0.5 || a.X1 > s.X1+0.5 || a.Y0 < s.Y0-0.5 || a.Y1 > s.Y1+0.5 {
			t.Errorf("%s: label %q [%.0f,%.0f]-[%.0f,%.0f] leaves its chart [%.0f,%.0f]-[%.0f,%.0f]", page, a.Text, a.X0, a.Y0, a.X1, a.Y1, s.X0, s.Y0, s.X1, s.Y1)
		}
		for j, b := range boxes {
			if j == i || b.SVG != a.SVG || (b.Tag == "text" && j < i) || b.Tag == "svg" || !overlap(a, b) {
				continue
			}
			what := fmt.Sprintf("label %q", b.Text)
			if b.Tag == "rect" {
				what = "a " + b.Class + " bar"
			}
			t.Errorf("%s: label %q [%.0f,%.0f]-[%.0f,%.0f] overlaps %s [%.0f,%.0f]-[%.0f,%.0f]", page, a.Text, a.X0, a.Y0, a.X1, a.Y1, what, b.X0, b.Y0, b.X1, b.Y1)
		}
	}
	return n
}

// TestChartLabels renders both report pages in headless chromium and checks the laid-out boxes
// of their chart labels: none overlaps another label or a bar, none leaves its chart. The cells
// page has a long cell and device name (its label ran into the bars); the report's burn-down has
// a point per get_rows cell flipped (their labels ran into each other).
func TestChartLabels(t *testing.T) {
	dir := t.TempDir()
	regPath := filepath.Join(dir, "registry.json")
	reg, err := registry.Open(regPath)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reg.Now = func() time.Time { day = day.Add(time.Hour); return day }
	var getRows []kernels.Cell
	for _, c := range kernels.Cells() {
		if c.Op == "get_rows" {
			getRows = append(getRows, c)
		}
	}
	if len(getRows) < 20 {
		t.Fatalf("%d get_rows cells: the burn-down needs at least 20 points", len(getRows))
	}
	var entries []string
	for i, c := range getRows {
		typ := c.Type.String()
		src := fmt.Sprintf("get_rows_%s.comp", typ)
		body := "#version 450\nlayout(local_size_x = 64) in;\nlayout(binding = 0) readonly buffer S { uint s[]; };\nlayout(binding = 1) readonly buffer I { int ids[]; };\nlayout(binding = 2) writeonly buffer Y { float y[]; };\nvoid main() {\n" +
			strings.Repeat("    y[gl_GlobalInvocationID.x] = 0.0;\n", 3+i%7) + "}\n"
		if err := os.WriteFile(filepath.Join(dir, src), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, fmt.Sprintf(`{"name": "hand_get_rows_%s", "op": "get_rows", "type": %q, "backend": "vulkan", "source": {"glsl": %q},
      "bindings": [{"binding": 0, "operand": "src", "readonly": true}, {"binding": 1, "operand": "ids", "readonly": true}, {"binding": 2, "operand": "y"}],
      "workgroup_size": [64, 1, 1], "grid": ["rows", 1, 1]}`, typ, typ, src))
		k := registry.Key{Op: "get_rows", Type: typ, Backend: "vulkan"}
		if err := reg.Register(k, "hand:"+typ, "manifest"); err != nil {
			t.Fatal(err)
		}
		ev := registry.Evidence{Device: "llvmpipe (LLVM 15.0.6, 256 bits)", Driver: "mesa 22.3.6 (LLVM 15.0.6)", Toolchain: "go", BitExact: true,
			TwinGBps: 3 + float64(i%5), IncumbentGBps: 3, RooflineGBps: 54.8, Ratio: registry.SpreadOf([]float64{1.1, 1.2, 1.3}),
			TwinHash: "twin", IncumbentHash: "hand:" + typ, Date: day}
		if err := reg.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: registry.Flip}); err != nil {
			t.Fatal(err)
		}
	}
	// The long label of the issue: a user's cell and the device's full name.
	long := registry.Key{Op: "layer_norm_gelu_fused_residual", Type: "f32", Backend: "vulkan"}
	if err := reg.Register(long, "hand:ln", "manifest"); err != nil {
		t.Fatal(err)
	}
	ev := registry.Evidence{Device: "llvmpipe (LLVM 15.0.6, 256 bits) on AMD EPYC 7B13 64-Core Processor", Driver: "mesa", Toolchain: "go", BitExact: true,
		TwinGBps: 0.5, IncumbentGBps: 0.4, RooflineGBps: 54.8, Ratio: registry.SpreadOf([]float64{1.25}), TwinHash: "twin", IncumbentHash: "hand:ln",
		IncumbentWrong: true, IncumbentErr: 0.36, IncumbentMaxULP: 1e6, Date: day}
	if err := reg.Apply(registry.GateResult{Key: long, Evidence: ev, Verdict: registry.Flip}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Save(""); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(man, []byte("{\"version\": 1, \"incumbents\": [\n    "+strings.Join(entries, ",\n    ")+"\n]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cellsPage, reportPage := filepath.Join(t.TempDir(), "cells.html"), filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if rc := runMain([]string{"cells", "-registry", regPath, "-html", cellsPage}, &stdout, &stderr); rc != 0 {
		t.Fatalf("cells: exit %d\n%s", rc, stderr.String())
	}
	if rc := runMain([]string{"report", "-registry", regPath, "-manifest", man, "-html", reportPage}, &stdout, &stderr); rc != 0 {
		t.Fatalf("report: exit %d\n%s", rc, stderr.String())
	}
	if b, _ := os.ReadFile(cellsPage); !strings.Contains(string(b), "WRONG: err 0.36") {
		t.Error("the cells page does not say the incumbent of the long cell is wrong")
	}
	if n := checkLabels(t, "cells -html", chromiumLayout(t, cellsPage)); n < 3*len(getRows) {
		t.Errorf("cells -html: %d labels checked, want at least %d", n, 3*len(getRows))
	}
	if n := checkLabels(t, "report -html", chromiumLayout(t, reportPage)); n < len(getRows)/2 {
		t.Errorf("report -html: %d labels checked, want at least %d", n, len(getRows)/2)
	}
}
