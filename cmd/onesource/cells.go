package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
)

func init() {
	register("cells", "the registry as a table (-html OUT: offline report with a GB/s chart)", runCells)
}

// cellsDefaultRegistry is the registry file `onesource cells` and `onesource gate` use by default.
const cellsDefaultRegistry = "registry.json"

// trustFile loads the trust file path names, else the one $ONESOURCE_TRUST names; nil when
// neither is set.
func trustFile(path string) (*registry.Trust, error) {
	if path == "" {
		return registry.TrustFromEnv()
	}
	return registry.LoadTrust(path)
}

// trustSummary says how many of r's history entries are signed and, with a trust file, that
// every flip rests on evidence a trusted key signed (r passed CheckTrust when it loaded).
func trustSummary(r *registry.Registry, t *registry.Trust) string {
	if t != nil {
		if msg, err := r.CheckTrust(t); err == nil {
			return msg
		}
	}
	signed, h := 0, r.History()
	for _, e := range h {
		if e.Sig != nil {
			signed++
		}
	}
	return fmt.Sprintf("%d of %d history entries signed; no trust file (-trust or $%s): flips need no signature", signed, len(h), registry.TrustEnv)
}

// cellRow is one (cell, machine) line of the table and the chart.
type cellRow struct {
	Key                            string
	State                          string
	Ratio, Twin, Incumbent, Device string
	// TwinOK and HandOK are each side's correctness against the oracle (twinCorrectness,
	// handCorrectness): a speed ratio means little beside an incumbent that computes something
	// else.
	TwinOK, HandOK              string
	TwinGBps, IncGBps, RoofGBps float64
	HasEvidence                 bool
}

// twinCorrectness is the twin's verdict in e: "bit-exact", or "not bit-exact (N ULP)".
func twinCorrectness(e registry.Evidence) string {
	if e.BitExact {
		return "bit-exact"
	}
	return fmt.Sprintf("not bit-exact (%g ULP)", e.MaxULP)
}

// handCorrectness is the incumbent's output against the oracle at the benchmark shape in e: "-"
// without an incumbent; "exact"; "err E, N ULP" within the gate's tolerance; "WRONG: ..." beyond
// it or when the gate caught its timed runs (a bit-exact twin then flips on correctness).
func handCorrectness(e registry.Evidence) string {
	if !e.HasIncumbent() {
		return "-"
	}
	var caught []string
	for _, f := range e.Findings {
		if rest, ok := strings.CutPrefix(f, "incumbent: "); ok {
			caught = append(caught, rest)
		}
	}
	measured := fmt.Sprintf("err %.3g, %g ULP", e.IncumbentErr, e.IncumbentMaxULP)
	switch {
	case e.IncumbentWrong && len(caught) > 0:
		return "WRONG: " + strings.Join(caught, "; ")
	case e.IncumbentWrong:
		return "WRONG: " + measured
	case e.IncumbentErr == 0 && e.IncumbentMaxULP == 0:
		return "exact"
	}
	return measured
}

func cellRows(r *registry.Registry) []cellRow {
	var rows []cellRow
	for _, c := range r.Cells() {
		if len(c.Evidence) == 0 {
			rows = append(rows, cellRow{Key: c.Key.String(), State: string(c.State), Ratio: "-", Twin: "-", Incumbent: "-", Device: "-", TwinOK: "-", HandOK: "-"})
			continue
		}
		for _, e := range c.Evidence {
			row := cellRow{Key: c.Key.String(), State: string(c.State), Device: e.Device, HasEvidence: true,
				TwinGBps: e.TwinGBps, IncGBps: e.IncumbentGBps, RoofGBps: e.RooflineGBps,
				Ratio: "-", Twin: fmt.Sprintf("%.1f", e.TwinGBps), Incumbent: "-",
				TwinOK: twinCorrectness(e), HandOK: handCorrectness(e)}
			if e.Ratio.Pairs > 0 {
				row.Ratio = fmt.Sprintf("%.3f [%.3f-%.3f] n=%d", e.Ratio.Median, e.Ratio.Min, e.Ratio.Max, e.Ratio.Pairs)
			}
			if e.HasIncumbent() {
				row.Incumbent = fmt.Sprintf("%.1f", e.IncumbentGBps)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func runCells(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cells", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("registry", cellsDefaultRegistry, "registry file")
	htmlOut := fs.String("html", "", "also write an offline HTML report to this file")
	verify := fs.Bool("verify", false, "check the history (chain, head, signatures) and that the cells are its replay, and say so")
	trustPath := fs.String("trust", "", "trust file of public keys (default $"+registry.TrustEnv+"): every flip must rest on evidence one of them signed")
	migrate := fs.Bool("migrate", false, "convert a format-1 registry (no head hash) to the current format, saying what cannot be checked")
	vars := fs.String("vars", "", "list the variables a manifest's expressions may use for cell `OP/TYPE`, with their values at its benchmark shape, and stop")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource cells [-registry FILE] [-html OUT] [-verify [-trust KEYS]] [-migrate] [PACKAGE...]")
		fmt.Fprintln(stderr, "       onesource cells -vars OP/TYPE [PACKAGE...]")
		fmt.Fprintln(stderr, "  PACKAGE...: packages whose cells (func Cells() []kernels.Cell) join the library's")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if rc, done := withCells("cells", args, fs.Args(), stdout, stderr); done {
		return rc
	}
	if *vars != "" {
		return cellVars(*vars, stdout, stderr)
	}
	if *htmlOut != "" {
		if err := atomicfile.CheckOutput(*htmlOut, *path); err != nil {
			fmt.Fprintln(stderr, "onesource cells: -html:", err)
			return 1
		}
	}
	if *migrate {
		msg, err := registry.Migrate(*path)
		if err != nil {
			fmt.Fprintln(stderr, "onesource cells: -migrate:", err)
			return 1
		}
		fmt.Fprintln(stdout, msg)
		return 0
	}
	trust, err := trustFile(*trustPath)
	if err != nil {
		fmt.Fprintln(stderr, "onesource cells:", err)
		return 1
	}
	r, err := registry.LoadTrusted(*path, trust)
	if err != nil {
		fmt.Fprintln(stderr, "onesource cells:", err)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "onesource cells: no registry at %s yet: `onesource gate -manifest MANIFEST -registry %s` gates the cells and writes one (or name another file with -registry)\n", *path, *path)
		}
		return 1
	}
	if *verify {
		msg, err := r.Verify(trust)
		if err != nil {
			fmt.Fprintln(stderr, "onesource cells: verify:", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s\n", *path, msg)
		return 0
	}
	rows := cellRows(r)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tSTATE\tRATIO (median [min-max] pairs)\tTWIN\tINCUMBENT\tGB/s TWIN\tGB/s HAND\tDEVICE")
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Key, row.State, row.Ratio, row.TwinOK, row.HandOK, row.Twin, row.Incumbent, row.Device)
	}
	tw.Flush()
	counts := map[registry.State]int{}
	for _, c := range r.Cells() {
		counts[c.State]++
	}
	var parts []string
	for _, s := range []registry.State{registry.DSL, registry.Fallback, registry.Declined, registry.Hand, registry.Failing, registry.Missing} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(stdout, "%d cells: %s (threshold %.2f)\n", len(r.Cells()), strings.Join(parts, ", "), r.Threshold())
	if *htmlOut != "" {
		var buf bytes.Buffer
		if err := writeCellsHTML(&buf, *path, r, rows); err != nil {
			fmt.Fprintln(stderr, "onesource cells:", err)
			return 1
		}
		if err := atomicfile.WriteOutput(*htmlOut, buf.Bytes(), *path); err != nil {
			fmt.Fprintln(stderr, "onesource cells:", err)
			return 1
		}
		fmt.Fprintln(stdout, "wrote", *htmlOut)
	}
	return 0
}

// cellsBar is one rectangle of the SVG chart, with its caption (the value) right of its end.
type cellsBar struct {
	Y, W     float64
	Class    string
	CaptionX float64
	Caption  string
}

// cellsChartRow is one (cell, machine) group of bars: its label on a line of its own above the
// bars, so a long cell or device name never runs into them.
type cellsChartRow struct {
	LabelY float64
	Label  string
	Bars   []cellsBar
}

// The chart's layout: bars start at chartLeft and are at most chartBarW long; their captions
// need chartCaptionW past the longest bar (labelCharW a character).
const (
	chartLeft     = 8.0
	chartBarW     = 560.0
	chartBarH     = 12.0
	chartCaptionW = 160.0
)

var cellsTmpl = template.Must(template.New("cells").Funcs(template.FuncMap{"hasPrefix": strings.HasPrefix}).Parse(`<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en">
<head>
<meta charset="utf-8"/>
<title>onesource cells: {{.Path}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #eee; }
td.num { text-align: right; font-family: monospace; }
.s-dsl { background: #c8f0c8; } .s-fallback { background: #d8ecff; } .s-declined { background: #fff0c0; }
.s-failing { background: #f8c8c8; } .s-hand { background: #f4f4f4; } .s-missing { background: #fff; color: #999; }
td.wrong { color: #a00; font-weight: bold; }
svg text { font-size: 11px; font-family: sans-serif; }
.twin { fill: #2a7ab8; } .incumbent { fill: #d08a2a; } .roofline { fill: #bbbbbb; }
</style>
</head>
<body>
<h1>onesource cells</h1>
<p>Registry <code>{{.Path}}</code>: {{.NCells}} cells, threshold {{.Threshold}} (median twin/incumbent ratio needed to flip).</p>
<table>
<thead><tr><th>cell</th><th>state</th><th>ratio (median [min-max] pairs)</th><th>twin vs the oracle</th><th>incumbent vs the oracle</th><th>GB/s twin</th><th>GB/s incumbent</th><th>device</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="s-{{.State}}"><td>{{.Key}}</td><td>{{.State}}</td><td>{{.Ratio}}</td><td>{{.TwinOK}}</td><td{{if hasPrefix .HandOK "WRONG"}} class="wrong"{{end}}>{{.HandOK}}</td><td class="num">{{.Twin}}</td><td class="num">{{.Incumbent}}</td><td>{{.Device}}</td></tr>
{{end}}</tbody>
</table>
<h2>GB/s per cell</h2>
{{if .Chart}}<p><svg xmlns="http://www.w3.org/2000/svg" width="{{.ChartW}}" height="{{.ChartH}}" viewBox="0 0 {{.ChartW}} {{.ChartH}}" role="img" aria-label="GB/s per cell">
<rect class="twin" x="{{.Left}}" y="2" width="12" height="10"/><text x="{{.Legend1}}" y="11">twin</text>
<rect class="incumbent" x="{{.Legend2}}" y="2" width="12" height="10"/><text x="{{.Legend2t}}" y="11">incumbent</text>
<rect class="roofline" x="{{.Legend3}}" y="2" width="12" height="10"/><text x="{{.Legend3t}}" y="11">roofline (copy bandwidth)</text>
{{range .Chart}}<g><text x="{{$.Left}}" y="{{.LabelY}}">{{.Label}}</text>
{{range .Bars}}<rect class="{{.Class}}" x="{{$.Left}}" y="{{.Y}}" width="{{.W}}" height="{{$.BarH}}"><title>{{.Caption}}</title></rect><text x="{{.CaptionX}}" y="{{.Y}}" dy="10">{{.Caption}}</text>
{{end}}</g>
{{end}}</svg></p>{{else}}<p>No cell has benchmark evidence yet.</p>{{end}}
</body>
</html>
`))

func writeCellsHTML(w io.Writer, path string, r *registry.Registry, rows []cellRow) error {
	maxV := 0.0
	for _, row := range rows {
		maxV = max(maxV, row.TwinGBps, row.IncGBps, row.RoofGBps)
	}
	var chart []cellsChartRow
	chartW := chartLeft + chartBarW + chartCaptionW
	y := 20.0 // below the legend
	for _, row := range rows {
		if !row.HasEvidence {
			continue
		}
		cr := cellsChartRow{Label: row.Key + " @ " + row.Device}
		y += 14 // the label's line
		cr.LabelY = y
		chartW = max(chartW, labelBox(chartLeft, y, cr.Label, "start").x1+chartLeft)
		y += 5
		add := func(class string, v float64) {
			if v <= 0 || maxV <= 0 {
				return
			}
			wd := v / maxV * chartBarW
			cr.Bars = append(cr.Bars, cellsBar{Y: y, W: wd, Class: class, CaptionX: chartLeft + wd + 4,
				Caption: fmt.Sprintf("%s %.1f GB/s", class, v)})
			y += chartBarH + 2
		}
		add("twin", row.TwinGBps)
		add("incumbent", row.IncGBps)
		add("roofline", row.RoofGBps)
		y += 8
		chart = append(chart, cr)
	}
	data := map[string]any{
		"Path": path, "NCells": len(r.Cells()), "Threshold": r.Threshold(), "Rows": rows, "Chart": chart,
		"ChartW": chartW, "ChartH": y + 4, "Left": chartLeft, "BarH": chartBarH,
		"Legend1": chartLeft + 16, "Legend2": chartLeft + 60, "Legend2t": chartLeft + 76,
		"Legend3": chartLeft + 150, "Legend3t": chartLeft + 166,
	}
	return cellsTmpl.Execute(w, data)
}

// cellVars prints the variables of cell name's benchmark workload (conformance.WorkloadVars) at
// the schedule the gate benchmarks it at on a Vulkan device of unknown subgroup size (the
// cell's default there): `onesource cells -vars OP/TYPE`.
func cellVars(name string, stdout, stderr io.Writer) int {
	op, typ, _ := strings.Cut(name, "/")
	t, err := oracle.ParseType(typ)
	var c kernels.Cell
	ok := false
	if err == nil {
		c, ok = kernels.Lookup(op, t)
	}
	if !ok {
		fmt.Fprintf(stderr, "onesource cells: -vars %s: no such cell (want OP/TYPE, e.g. rms_norm/f32); searched %s\n", name, searched("cells"))
		return 2
	}
	s := c.DefaultSchedule("vulkan")
	vs, err := conformance.WorkloadVars(c, s)
	if err != nil {
		fmt.Fprintf(stderr, "onesource cells: -vars %s: %v\n", name, err)
		return 1
	}
	where := "its benchmark shape (shape variables: set them with gate/bench/tune -shape or a manifest entry's \"shape\"; derived ones follow from them)"
	if len(vs) > 0 && vs[0].Kind == "case" {
		where = "its largest conformance case (the cell declares no workload, kernels.Cell.Workload: no variable can be set)"
	}
	fmt.Fprintf(stdout, "%s: the variables of a manifest's expressions, at %s, schedule %s:\n", c.Name(), where, s)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tVALUE\tKIND\tWHAT")
	for _, v := range vs {
		kind := v.Kind
		if v.Type != "" {
			kind += " (" + v.Type + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Name, number(v.Value), kind, v.Doc)
	}
	tw.Flush()
	return 0
}

// number writes v as a manifest would: an integer in full ("2359296", not "2.359296e+06"), any
// other value in the shortest form that reads back the same.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
