package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/onesource-go/onesource/ledger"
)

func init() {
	register("ledger", "hand-written kernel lines per tree and language: [-v] [-json] DIR...", runLedger)
}

const ledgerUsage = `usage: onesource ledger [-v] [-json] DIR...

Counts the hand-written GPU kernel lines (non-blank, non-comment) of each DIR per language: cuda
(.cu .cuh), hip (.hip; .cpp/.h/.hpp in hip/ or rocm/ folders when they declare __global__ or
__device__ code), metal (.metal), glsl (.comp and the .glsl files they #include), wgsl (.wgsl).
Generated files, vendored code, build artifacts and machine-generated numeric tables are excluded;
see the documentation of package ledger for the exact rules.

  -v     list every excluded file with the reason
  -json  print {"trees": [{"path", "languages": {...}, "total"}], "excluded": [{"path", "reason"}]}
`

// runLedger is the ledger subcommand. Exit status: 0 success, 1 a DIR is missing or unreadable,
// 2 usage error.
func runLedger(args []string, stdout, stderr io.Writer) int {
	var verbose, asJSON bool
	var dirs []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--":
			dirs = append(dirs, args[i+1:]...)
			i = len(args)
		case "-v", "--v":
			verbose = true
		case "-json", "--json":
			asJSON = true
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, ledgerUsage)
			return 0
		default:
			if len(a) > 1 && a[0] == '-' {
				fmt.Fprintf(stderr, "onesource ledger: unknown flag %s\n%s", a, ledgerUsage)
				return 2
			}
			dirs = append(dirs, a)
		}
	}
	if len(dirs) == 0 {
		fmt.Fprint(stderr, "onesource ledger: want at least one DIR\n"+ledgerUsage)
		return 2
	}
	for i, d := range dirs {
		dirs[i] = filepath.Clean(d)
	}
	r, err := ledger.Count(dirs...)
	if err != nil {
		fmt.Fprintf(stderr, "onesource ledger: %v\n", err)
		return 1
	}
	if asJSON {
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "onesource ledger: %v\n", err)
			return 1
		}
		stdout.Write(append(data, '\n'))
		return 0
	}
	writeLedger(stdout, r, verbose)
	return 0
}

// writeLedger prints the report as a table (one row per tree, a total row when there are several)
// followed by the number of excluded files, or with verbose their list.
func writeLedger(w io.Writer, r *ledger.Report, verbose bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"TREE"}
	for _, l := range ledger.Languages {
		header = append(header, strings.ToUpper(string(l)))
	}
	header = append(header, "TOTAL")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	row := func(name string, c ledger.Counts) {
		cells := []string{name}
		for _, l := range ledger.Languages {
			cells = append(cells, fmt.Sprint(c.Get(l)))
		}
		cells = append(cells, fmt.Sprint(c.Total()))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	for _, t := range r.Trees {
		row(t.Path, t.Languages)
	}
	if len(r.Trees) > 1 {
		row("total", r.Total())
	}
	tw.Flush()
	if !verbose {
		if len(r.Excluded) > 0 {
			fmt.Fprintf(w, "excluded: %d files (-v lists them)\n", len(r.Excluded))
		}
		return
	}
	fmt.Fprintf(w, "excluded: %d files\n", len(r.Excluded))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range r.Excluded {
		fmt.Fprintf(tw, "  %s\t%s\n", e.Path, e.Reason)
	}
	tw.Flush()
}
