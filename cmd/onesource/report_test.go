package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/incumbentstest"
	"github.com/onesource-go/onesource/registry"
)

// reportFixture writes the incumbents fixture and a registry whose history flips add, mul and
// matvec, declines swiglu, and leaves rms_norm hand-written; it returns the manifest's and the
// registry's paths.
func reportFixture(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	man, err := incumbentstest.Write(dir, filepath.Join("..", "..", "examples", "incumbents"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := incumbent.Load(man)
	if err != nil {
		t.Fatal(err)
	}
	regPath := filepath.Join(t.TempDir(), "registry.json")
	reg, err := registry.Open(regPath)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	reg.Now = func() time.Time { day = day.Add(24 * time.Hour); return day }
	for _, e := range m.Incumbents {
		if err := reg.Register(registry.Key{Op: e.Op, Type: e.Type, Backend: e.Backend}, "hand:"+e.Name, "manifest"); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []struct {
		op    string
		ratio float64
	}{{"add", 1.21}, {"swiglu", 0.88}, {"mul", 1.04}, {"matvec", 1.6}} {
		k := registry.Key{Op: s.op, Type: "f32", Backend: "vulkan"}
		c, _ := reg.Cell(k)
		ev := registry.Evidence{Device: "llvmpipe <lavapipe> & co", Driver: "mesa 22.3.6", Toolchain: "go", BitExact: true, TwinGBps: 10 * s.ratio, IncumbentGBps: 10,
			Ratio: registry.SpreadOf([]float64{s.ratio * 0.98, s.ratio, s.ratio * 1.02}), TwinHash: "twin", IncumbentHash: c.Incumbent, Date: day}
		v, _ := registry.Judge(ev, reg.Threshold())
		if err := reg.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Save(""); err != nil {
		t.Fatal(err)
	}
	return man, regPath
}

// TestReport: the report shows the ledger before and after the drain, the flips, the declines,
// what stays hand-written and the burn-down, as text and as an offline HTML page that a headless
// browser renders (its screenshot shows the chart's line and the flipped rows).
func TestReport(t *testing.T) {
	man, regPath := reportFixture(t)
	out := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if rc := runMain([]string{"report", "-registry", regPath, "-manifest", man, "-html", out}, &stdout, &stderr); rc != 0 {
		t.Fatalf("report: exit %d\n%s", rc, stderr.String())
	}
	text := stdout.String()
	for _, want := range []string{"LEDGER TREE", "AFTER THE DRAIN", "FLIPPED", "add/f32/vulkan", "DECLINED", "swiglu/f32/vulkan",
		"STILL HAND-WRITTEN", "rms_norm/f32/vulkan", "BURN-DOWN", "hand -> dsl"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the text report:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	count := wellFormed(t, b)
	if count["polyline"] != 1 || count["circle"] != 4 {
		t.Errorf("burn-down: %d polylines, %d points; want 1 and 4 (start and three flips)", count["polyline"], count["circle"])
	}
	s := string(b)
	for _, want := range []string{"The ledger", "after the drain", "Flipped cells", "Declined", "Still hand-written", "Burn-down",
		"llvmpipe &lt;lavapipe&gt; &amp; co", "1.210 [", "0.880 ["} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in the HTML", want)
		}
	}
	t.Run("chromium", func(t *testing.T) {
		img := chromiumScreenshot(t, out, "1200,2200")
		f, err := os.Open(img)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pic, err := png.Decode(f)
		if err != nil {
			t.Fatalf("the screenshot does not decode: %v", err)
		}
		line, flip, decline := 0, 0, 0
		bounds := pic.Bounds()
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			for x := bounds.Min.X; x < bounds.Max.X; x++ {
				r, g, bl, _ := pic.At(x, y).RGBA()
				c := [3]uint32{r >> 8, g >> 8, bl >> 8}
				switch {
				case near(c, [3]uint32{0x1f, 0x6f, 0xeb}):
					line++
				case near(c, [3]uint32{0xc8, 0xf0, 0xc8}):
					flip++
				case near(c, [3]uint32{0xff, 0xf0, 0xc0}):
					decline++
				}
			}
		}
		// The line and its points, three flipped rows and one declined row, as rendered.
		if line < 500 || flip < 3000 || decline < 1000 {
			t.Errorf("the screenshot shows %d pixels of the burn-down line, %d of flipped rows, %d of declined rows", line, flip, decline)
		}
		if dir := os.Getenv("ONESOURCE_SCREENSHOTS"); dir != "" {
			data, _ := os.ReadFile(img)
			os.WriteFile(filepath.Join(dir, "report.png"), data, 0o644)
		}
	})
}

func near(a, b [3]uint32) bool {
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < -6 || d > 6 {
			return false
		}
	}
	return true
}

// wellFormed parses an HTML report as XML (the reports are written well formed), checks that it
// loads nothing, and counts its elements.
func wellFormed(t *testing.T, b []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	count := map[string]int{}
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the report is not well formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			count[tok.Name.Local]++
			for _, a := range tok.Attr {
				if a.Name.Local == "src" || a.Name.Local == "href" {
					t.Errorf("<%s %s=%q>: the report must not load anything", tok.Name.Local, a.Name.Local, a.Value)
				}
			}
			switch tok.Name.Local {
			case "script", "link", "img", "iframe":
				t.Errorf("the report has <%s>", tok.Name.Local)
			}
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Fatal("unclosed elements")
	}
	return count
}

// TestReportAgreesWithPlan: the report's numbers come from one drain plan. The fixture adds a
// flipped cell whose twin this program does not have (a user's op, its package not named): the
// plan keeps its file, so the report lists the cell as still hand-written, with the reason, and
// never says every cell is served by its twin; the ledger's lines after the drain, the drain's
// summary and the burn-down's last point are the same number of lines.
func TestReportAgreesWithPlan(t *testing.T) {
	man, regPath := reportFixture(t)
	dir := filepath.Dir(man)
	b, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	user := `{"name": "hand_ln_gelu", "op": "layer_norm_gelu", "type": "f32", "backend": "vulkan", "source": {"glsl": "ln_gelu.comp"},
      "bindings": [{"binding": 0, "operand": "x", "readonly": true}, {"binding": 1, "operand": "y"}],
      "workgroup_size": [64, 1, 1], "grid": ["rows", 1, 1]},
    `
	b = bytes.Replace(b, []byte(`"incumbents": [`), []byte(`"incumbents": [`+"\n    "+user), 1)
	if err := os.WriteFile(man, b, 0o644); err != nil {
		t.Fatal(err)
	}
	glsl := "#version 450\nlayout(local_size_x = 64) in;\nlayout(binding = 0) readonly buffer X { float x[]; };\nlayout(binding = 1) writeonly buffer Y { float y[]; };\nvoid main() {\n    y[gl_GlobalInvocationID.x] = x[gl_GlobalInvocationID.x];\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "ln_gelu.comp"), []byte(glsl), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(regPath)
	if err != nil {
		t.Fatal(err)
	}
	k := registry.Key{Op: "layer_norm_gelu", Type: "f32", Backend: "vulkan"}
	if err := reg.Register(k, "hand:hand_ln_gelu", "manifest"); err != nil {
		t.Fatal(err)
	}
	ev := registry.Evidence{Device: "d", Driver: "v", Toolchain: "go", BitExact: true, TwinGBps: 2, IncumbentGBps: 1, Ratio: registry.SpreadOf([]float64{2}),
		TwinHash: "twin", IncumbentHash: "hand:hand_ln_gelu", Date: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	if err := reg.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: registry.Flip}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Save(""); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if rc := runMain([]string{"report", "-registry", regPath, "-manifest", man, "-html", out}, &stdout, &stderr); rc != 0 {
		t.Fatalf("report: exit %d\n%s", rc, stderr.String())
	}
	text := stdout.String()
	var removed, before, stay int
	at := strings.Index(text, "the drain: ")
	if at < 0 {
		t.Fatalf("no drain summary in the report:\n%s", text)
	}
	if _, err := fmt.Sscanf(text[at:], "the drain: %d of the %d hand-written lines the manifest uses go", &removed, &before); err != nil {
		t.Fatalf("no drain summary in the report (%v):\n%s", err, text)
	}
	m := regexp.MustCompile(`(\d+) stay\n`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the drain summary says nothing of what stays:\n%s", text)
	}
	stay, _ = strconv.Atoi(m[1])
	if before-removed != stay {
		t.Errorf("the drain summary: %d - %d != %d", before, removed, stay)
	}
	var treeBefore, treeAfter int
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) == 8 && f[0] == dir {
			treeBefore, _ = strconv.Atoi(f[6])
			treeAfter, _ = strconv.Atoi(f[7])
		}
	}
	if treeBefore-treeAfter != removed {
		t.Errorf("the ledger of %s goes from %d to %d lines, the plan removes %d:\n%s", dir, treeBefore, treeAfter, removed, text)
	}
	kb, bb := strings.Index(text, "STILL HAND-WRITTEN"), strings.Index(text, "BURN-DOWN")
	if kb < 0 || bb < kb {
		t.Fatalf("no kept cells or burn-down in the report:\n%s", text)
	}
	burn := text[bb:]
	last := -1
	for _, l := range strings.Split(burn, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err == nil {
			last, _ = strconv.Atoi(f[len(f)-1])
		}
	}
	if last != stay {
		t.Errorf("the burn-down ends at %d lines, the plan leaves %d:\n%s", last, stay, burn)
	}
	kept := text[kb:bb]
	if !strings.Contains(kept, "layer_norm_gelu/f32/vulkan  dsl") || !strings.Contains(kept, "no DSL twin") {
		t.Errorf("the flipped cell without a twin here is not listed as still hand-written, with the reason:\n%s", kept)
	}
	page, _ := os.ReadFile(out)
	if strings.Contains(string(page), "Every cell is served by its twin") || !strings.Contains(string(page), "layer_norm_gelu/f32/vulkan") {
		t.Error("the HTML report says every cell is served by its twin, or omits the kept cell")
	}
}
