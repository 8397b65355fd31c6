package main

import (
	"bytes"
	"flag"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/onesource-go/onesource/drain"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/ledger"
	"github.com/onesource-go/onesource/registry"
)

func init() {
	register("report", "the drain report: the ledger before and after, flipped and declined cells, what stays hand-written, the burn-down (-html OUT)", runReport)
}

// treeRow is one ledger tree before and after the drain.
type treeRow struct {
	Path          string
	Before, After ledger.Counts
	BeforeTotal   int
	AfterTotal    int
}

// verdictRow is one cell on one machine: the speed ratio beside both sides' correctness.
type verdictRow struct {
	Cell, Device, Ratio, Correctness, HandCorrectness, Twin, Hand, Date string
}

// keptRow is a cell its incumbent still serves.
type keptRow struct {
	Cell, State, Why string
}

// burnPoint is one point of the burn-down chart. Its labels (the index under the axis, the lines
// left above the point) are drawn only where they do not overlap another label (ShowIndex,
// ShowRemaining); the point's tooltip and the table below the chart have every value.
type burnPoint struct {
	X, Y                     float64
	Index                    int
	Cell                     string
	Change                   string
	Date                     string
	Remaining                int
	ShowIndex, ShowRemaining bool
}

type reportData struct {
	Registry, Manifest string
	Threshold          float64
	Trust              string // what the signatures and the trust file say
	Trees              []treeRow
	Excluded           []ledger.Exclusion
	Flips, Declines    []verdictRow
	Kept               []keptRow
	Burn               []burnPoint
	BurnLine           string
	YTicks             []burnTick
	Plan               *drain.Plan
}

type burnTick struct {
	Y     float64
	Label string
}

const (
	burnW, burnH       = 760.0, 300.0
	burnLeft, burnTop  = 70.0, 20.0
	burnRight, burnBot = 20.0, 40.0
)

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	regPath := fs.String("registry", cellsDefaultRegistry, "registry file")
	manPath := fs.String("manifest", "", "incumbents manifest (its files make the burn-down and the ledger after the drain)")
	htmlOut := fs.String("html", "", "write the report as an offline HTML page")
	trustPath := fs.String("trust", "", "trust file of public keys (default $"+registry.TrustEnv+"): every flip must rest on evidence one of them signed")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource report [-registry FILE] [-manifest FILE] [-html OUT] [DIR...] [PACKAGE...]")
		fmt.Fprintln(stderr, "  DIR...: the hand-written kernel trees of the ledger, directories without Go files (default: the manifest's directory)")
		fmt.Fprintln(stderr, "  PACKAGE...: packages whose cells (func Cells() []kernels.Cell) join the library's: their twins let files go")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	patterns, dirs := splitArgs(fs.Args())
	if rc, done := withCells("report", args, patterns, stdout, stderr); done {
		return rc
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "onesource report:", err)
		return 1
	}
	trust, err := trustFile(*trustPath)
	if err != nil {
		return fail(err)
	}
	reg, err := registry.LoadTrusted(*regPath, trust)
	if err != nil {
		return fail(err)
	}
	d := &reportData{Registry: *regPath, Manifest: *manPath, Threshold: reg.Threshold(), Trust: trustSummary(reg, trust)}
	var m *incumbent.Manifest
	if *manPath != "" {
		if m, err = incumbent.Load(*manPath); err != nil {
			return fail(err)
		}
		if d.Plan, err = drain.Make(m, reg); err != nil {
			return fail(err)
		}
	}
	if len(dirs) == 0 && m != nil {
		dirs = []string{m.Dir}
	}
	inputs := append([]string{*regPath}, ledgerInputs(dirs)...)
	if m != nil {
		inputs = append(inputs, m.Inputs()...)
	}
	if *htmlOut != "" {
		if err := atomicfile.CheckOutput(*htmlOut, inputs...); err != nil {
			return fail(err)
		}
	}
	if len(dirs) > 0 {
		if err := d.ledger(dirs); err != nil {
			return fail(err)
		}
	}
	d.cells(reg)
	if d.Plan != nil {
		// One plan: the burn-down replays the history over the plan's own files and lines, so
		// its last point is what the drain leaves.
		d.burn(d.Plan.BurnDown())
	}
	d.text(stdout)
	if d.Plan != nil {
		if note := noTwinNote("report", d.Plan); note != "" {
			fmt.Fprintln(stdout, note)
		}
	}
	if *htmlOut != "" {
		var b bytes.Buffer
		if err := reportTmpl.Execute(&b, d); err != nil {
			return fail(err)
		}
		if err := atomicfile.WriteOutput(*htmlOut, b.Bytes(), inputs...); err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, "wrote", *htmlOut)
	}
	return 0
}

// Stay is how many of the manifest's hand-written lines the drain leaves.
func (d *reportData) Stay() int { return d.Plan.LinesBefore - d.Plan.LinesRemoved }

// ledger counts the trees, and what remains of each once the plan's files are deleted.
func (d *reportData) ledger(dirs []string) error {
	r, err := ledger.Count(dirs...)
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	if d.Plan != nil {
		for _, f := range d.Plan.DeletablePaths() {
			gone[f] = true
		}
	}
	for _, t := range r.Trees {
		row := treeRow{Path: t.Path, Before: t.Languages, BeforeTotal: t.Total}
		for _, f := range t.Files {
			abs, err := filepath.Abs(filepath.FromSlash(f.Path))
			if err == nil && gone[abs] {
				continue
			}
			switch f.Language {
			case ledger.CUDA:
				row.After.CUDA += f.Lines
			case ledger.HIP:
				row.After.HIP += f.Lines
			case ledger.Metal:
				row.After.Metal += f.Lines
			case ledger.GLSL:
				row.After.GLSL += f.Lines
			case ledger.WGSL:
				row.After.WGSL += f.Lines
			}
		}
		row.AfterTotal = row.After.Total()
		d.Trees = append(d.Trees, row)
	}
	d.Excluded = r.Excluded
	return nil
}

// cells sorts the registry's cells into flips, declines and the cells still hand-written. With a
// plan, what stays hand-written is what the plan keeps (its entries' reasons: a dsl cell whose
// twin this program lacks stays too), then the registry's hand, declined and failing cells the
// manifest has no entry for.
func (d *reportData) cells(reg *registry.Registry) {
	inPlan := map[string]bool{}
	if d.Plan != nil {
		for _, e := range d.Plan.Entries {
			inPlan[e.Cell] = true
			if !e.Remove {
				// The registry's reason says why a hand, declined or failing cell is so; the
				// plan's says why a dsl cell keeps its incumbent (no twin here).
				why := e.Why
				if c, ok := reg.Cell(keyOf(e.Cell)); ok && c.Reason != "" && c.State != registry.DSL {
					why = c.Reason
				}
				d.Kept = append(d.Kept, keptRow{Cell: e.Cell, State: e.State, Why: why})
			}
		}
	}
	for _, c := range reg.Cells() {
		for _, e := range c.Evidence {
			v, _ := registry.Judge(e, reg.Threshold())
			row := verdictRow{Cell: c.Key.String(), Device: e.Device + " / " + e.Driver, Date: e.Date.Format("2006-01-02"),
				Twin: fmt.Sprintf("%.2f", e.TwinGBps), Hand: "-", Ratio: "-", Correctness: twinCorrectness(e), HandCorrectness: handCorrectness(e)}
			if e.HasIncumbent() {
				row.Hand = fmt.Sprintf("%.2f", e.IncumbentGBps)
				row.Ratio = fmt.Sprintf("%.3f [%.3f-%.3f] n=%d", e.Ratio.Median, e.Ratio.Min, e.Ratio.Max, e.Ratio.Pairs)
			}
			switch v {
			case registry.Flip:
				d.Flips = append(d.Flips, row)
			case registry.Decline:
				d.Declines = append(d.Declines, row)
			}
		}
		if inPlan[c.Key.String()] {
			continue
		}
		switch c.State {
		case registry.Hand, registry.Declined, registry.Failing:
			d.Kept = append(d.Kept, keptRow{Cell: c.Key.String(), State: string(c.State), Why: c.Reason})
		}
	}
}

// keyOf reads "op/type/backend" (incumbent.Entry.Cell, registry.Key.String).
func keyOf(cell string) registry.Key {
	parts := strings.SplitN(cell, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return registry.Key{Op: parts[0], Type: parts[1], Backend: parts[2]}
}

// burn lays the burn-down points out on the chart.
func (d *reportData) burn(pts []drain.Point) {
	if len(pts) == 0 {
		return
	}
	top := 1
	for _, p := range pts {
		top = max(top, p.Remaining)
	}
	plotW, plotH := burnW-burnLeft-burnRight, burnH-burnTop-burnBot
	var line []string
	for i, p := range pts {
		x := burnLeft
		if len(pts) > 1 {
			x += plotW * float64(i) / float64(len(pts)-1)
		}
		y := burnTop + plotH*(1-float64(p.Remaining)/float64(top))
		bp := burnPoint{X: x, Y: y, Index: i, Cell: p.Cell, Change: p.Change, Remaining: p.Remaining}
		if !p.Time.IsZero() {
			bp.Date = p.Time.Format("2006-01-02 15:04")
		}
		if i == 0 {
			bp.Cell, bp.Change = "start", "no cell flipped"
		}
		d.Burn = append(d.Burn, bp)
		line = append(line, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	d.BurnLine = strings.Join(line, " ")
	var placed []textBox
	for i := 0; i <= 4; i++ {
		v := top * i / 4
		t := burnTick{Y: burnTop + plotH*(1-float64(v)/float64(top)), Label: fmt.Sprint(v)}
		d.YTicks = append(d.YTicks, t)
		placed = append(placed, labelBox(burnLeft-8, t.Y+4, t.Label, "end"))
	}
	// Labels in order, each drawn only if it overlaps none drawn before: the first and the last
	// point's first, so the start and the end always have theirs.
	order := []int{0}
	if n := len(d.Burn); n > 1 {
		order = append(order, n-1)
		for i := 1; i < n-1; i++ {
			order = append(order, i)
		}
	}
	place := func(b textBox) bool {
		for _, o := range placed {
			if b.overlaps(o) {
				return false
			}
		}
		placed = append(placed, b)
		return true
	}
	for _, i := range order {
		p := &d.Burn[i]
		p.ShowIndex = place(labelBox(p.X, burnH-22, fmt.Sprint(p.Index), "middle"))
		p.ShowRemaining = place(labelBox(p.X, p.Y-8, fmt.Sprint(p.Remaining), "middle"))
	}
}

// textBox is the box an SVG text label of the reports takes (11px sans-serif), as estimated
// before the browser lays it out: labelBox.
type textBox struct{ x0, y0, x1, y1 float64 }

func (a textBox) overlaps(b textBox) bool {
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
}

// labelCharW is the width the charts allow per character of an 11px sans-serif label: more than
// any common face's digits and lower-case letters take (DejaVu Sans, the widest of them, about
// 6.9px for digits and 7.4px for upper-case at 11px), so an estimated box holds the real one.
const labelCharW = 7.5

// labelBox is the box of text drawn at (x, y), y its baseline, anchored "start", "middle" or
// "end", with a pixel of room on every side.
func labelBox(x, y float64, text string, anchor string) textBox {
	w := labelCharW * float64(len([]rune(text)))
	switch anchor {
	case "middle":
		x -= w / 2
	case "end":
		x -= w
	}
	return textBox{x - 1, y - 12, x + w + 1, y + 4}
}

// text prints the report's tables.
func (d *reportData) text(w io.Writer) {
	fmt.Fprintf(w, "signatures: %s\n\n", d.Trust)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(d.Trees) > 0 {
		fmt.Fprintln(tw, "LEDGER TREE\tCUDA\tHIP\tMETAL\tGLSL\tWGSL\tTOTAL\tAFTER THE DRAIN")
		for _, t := range d.Trees {
			b := t.Before
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", t.Path, b.CUDA, b.HIP, b.Metal, b.GLSL, b.WGSL, t.BeforeTotal, t.AfterTotal)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if d.Plan != nil {
		p := d.Plan
		fmt.Fprintf(w, "the drain: %d of the %d hand-written lines the manifest uses go (%d of %d files); %d stay\n\n",
			p.LinesRemoved, p.LinesBefore, len(p.Deletable()), len(p.Files), p.LinesBefore-p.LinesRemoved)
	}
	for _, sec := range []struct {
		title string
		rows  []verdictRow
	}{{"FLIPPED", d.Flips}, {"DECLINED", d.Declines}} {
		fmt.Fprintf(tw, "%s\tDEVICE\tRATIO (median [min-max] pairs)\tTWIN\tINCUMBENT\tDATE\n", sec.title)
		for _, r := range sec.rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Cell, r.Device, r.Ratio, r.Correctness, r.HandCorrectness, r.Date)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	fmt.Fprintln(tw, "STILL HAND-WRITTEN\tSTATE\tWHY")
	for _, r := range d.Kept {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Cell, r.State, r.Why)
	}
	tw.Flush()
	if len(d.Burn) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "BURN-DOWN\tCELL\tCHANGE\tLINES LEFT")
		for _, p := range d.Burn {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\n", p.Index, p.Cell, p.Change, p.Remaining)
		}
		tw.Flush()
	}
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"sub": func(a, b float64) float64 { return a - b },
	"add": func(a, b float64) float64 { return a + b },
}).Parse(`<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en">
<head>
<meta charset="utf-8"/>
<title>onesource: the drain report</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; font-size: 13px; margin-bottom: 1em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #eee; }
td.num { text-align: right; font-family: monospace; }
tr.flip { background: #c8f0c8; } tr.decline { background: #fff0c0; } tr.kept { background: #f4f4f4; }
svg text { font-size: 11px; font-family: sans-serif; }
.axis { stroke: #444; stroke-width: 1; } .grid { stroke: #ddd; stroke-width: 1; }
.burn { fill: none; stroke: #1f6feb; stroke-width: 2.5; } .pt { fill: #1f6feb; }
</style>
</head>
<body>
<h1>The drain report</h1>
<p>Registry <code>{{.Registry}}</code> (flip threshold {{.Threshold}}){{if .Manifest}}, incumbents <code>{{.Manifest}}</code>{{end}}.</p>
<p>Signatures: {{.Trust}}.</p>
<h2>The ledger: hand-written kernel lines</h2>
{{if .Trees}}<table>
<thead><tr><th>tree</th><th>CUDA</th><th>HIP</th><th>Metal</th><th>GLSL</th><th>WGSL</th><th>total now</th><th>after the drain</th></tr></thead>
<tbody>
{{range .Trees}}<tr><td>{{.Path}}</td><td class="num">{{.Before.CUDA}}</td><td class="num">{{.Before.HIP}}</td><td class="num">{{.Before.Metal}}</td><td class="num">{{.Before.GLSL}}</td><td class="num">{{.Before.WGSL}}</td><td class="num">{{.BeforeTotal}}</td><td class="num">{{.AfterTotal}}</td></tr>
{{end}}</tbody>
</table>
{{if .Excluded}}<p>Left out of the ledger:</p><table><thead><tr><th>file</th><th>why</th></tr></thead><tbody>
{{range .Excluded}}<tr><td>{{.Path}}</td><td>{{.Reason}}</td></tr>
{{end}}</tbody></table>{{end}}{{else}}<p>No tree was counted.</p>{{end}}
{{if .Plan}}<p>The drain ({{len .Plan.Deletable}} of {{len .Plan.Files}} files) removes {{.Plan.LinesRemoved}} of the {{.Plan.LinesBefore}} hand-written lines the manifest uses; {{.Stay}} stay.</p>{{end}}
<h2>Flipped cells: the twin serves</h2>
{{if .Flips}}<table><thead><tr><th>cell</th><th>device</th><th>speed (twin/hand, median [min-max] pairs)</th><th>twin vs the oracle</th><th>incumbent vs the oracle</th><th>GB/s twin</th><th>GB/s hand</th><th>date</th></tr></thead><tbody>
{{range .Flips}}<tr class="flip"><td>{{.Cell}}</td><td>{{.Device}}</td><td>{{.Ratio}}</td><td>{{.Correctness}}</td><td>{{.HandCorrectness}}</td><td class="num">{{.Twin}}</td><td class="num">{{.Hand}}</td><td>{{.Date}}</td></tr>
{{end}}</tbody></table>{{else}}<p>No cell has flipped.</p>{{end}}
<h2>Declined: bit-exact, but slower than the hand-written kernel</h2>
{{if .Declines}}<table><thead><tr><th>cell</th><th>device</th><th>speed (twin/hand, median [min-max] pairs)</th><th>twin vs the oracle</th><th>incumbent vs the oracle</th><th>GB/s twin</th><th>GB/s hand</th><th>date</th></tr></thead><tbody>
{{range .Declines}}<tr class="decline"><td>{{.Cell}}</td><td>{{.Device}}</td><td>{{.Ratio}}</td><td>{{.Correctness}}</td><td>{{.HandCorrectness}}</td><td class="num">{{.Twin}}</td><td class="num">{{.Hand}}</td><td>{{.Date}}</td></tr>
{{end}}</tbody></table>{{else}}<p>No decline.</p>{{end}}
<h2>Still hand-written (behind islands, declined, or not yet gated)</h2>
{{if .Kept}}<table><thead><tr><th>cell</th><th>state</th><th>why</th></tr></thead><tbody>
{{range .Kept}}<tr class="kept"><td>{{.Cell}}</td><td>{{.State}}</td><td>{{.Why}}</td></tr>
{{end}}</tbody></table>{{else}}<p>Every cell is served by its twin.</p>{{end}}
<h2>Burn-down: hand-written lines left after each flip</h2>
{{if .Burn}}<svg xmlns="http://www.w3.org/2000/svg" width="760" height="300" viewBox="0 0 760 300" role="img" aria-label="burn-down of hand-written lines">
{{range .YTicks}}<line class="grid" x1="70" y1="{{.Y}}" x2="740" y2="{{.Y}}"/><text x="62" y="{{.Y}}" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}<line class="axis" x1="70" y1="20" x2="70" y2="260"/><line class="axis" x1="70" y1="260" x2="740" y2="260"/>
<text x="14" y="150" transform="rotate(-90 14 150)" text-anchor="middle">lines left</text>
<polyline class="burn" points="{{.BurnLine}}"/>
{{range .Burn}}<circle class="pt" cx="{{.X}}" cy="{{.Y}}" r="4"><title>{{.Index}}: {{.Cell}}: {{.Change}}, {{.Remaining}} lines left</title></circle>{{if .ShowIndex}}<text x="{{.X}}" y="278" text-anchor="middle">{{.Index}}</text>{{end}}{{if .ShowRemaining}}<text x="{{.X}}" y="{{sub .Y 8}}" text-anchor="middle">{{.Remaining}}</text>{{end}}
{{end}}<text x="405" y="296" text-anchor="middle">change (see the table)</text>
</svg>
<table><thead><tr><th>#</th><th>cell</th><th>change</th><th>when</th><th>lines left</th></tr></thead><tbody>
{{range .Burn}}<tr><td class="num">{{.Index}}</td><td>{{.Cell}}</td><td>{{.Change}}</td><td>{{.Date}}</td><td class="num">{{.Remaining}}</td></tr>
{{end}}</tbody></table>{{else}}<p>No manifest: no burn-down.</p>{{end}}
</body>
</html>
`))
