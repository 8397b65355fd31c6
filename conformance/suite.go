package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/onesource-go/onesource/kernels"
)

// Filter selects cells and backends by name; an empty list selects all.
type Filter struct {
	Ops, Types, Backends []string
}

func in(list []string, s string) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// Cells returns the cells the filter selects.
func (f Filter) Cells() []kernels.Cell {
	var out []kernels.Cell
	for _, c := range kernels.Cells() {
		if in(f.Ops, c.Op) && in(f.Types, c.Type.String()) {
			out = append(out, c)
		}
	}
	return out
}

// Targets returns every backend the suite knows, in report order. Each still has to be opened.
func Targets() []Target {
	return append([]Target{&Vulkan{}}, extraTargets...)
}

// extraTargets are the backends registered by other files of this package (C-family, host).
var extraTargets []Target

// Progress is told about every finished (cell, backend).
type Progress func(done, total int, r Result)

// Run judges every selected cell on every selected target and returns one Result per
// (cell, backend), unavailable backends included (Ran false, Reason the cause).
func Run(f Filter, targets []Target, schedule func(backend string) kernels.Schedule, progress Progress) []Result {
	if schedule == nil {
		schedule = kernels.DefaultSchedule
	}
	cells := f.Cells()
	var active []Target
	var results []Result
	for _, t := range targets {
		if !in(f.Backends, t.Name()) {
			continue
		}
		if err := t.Open(); err != nil {
			for _, c := range cells {
				results = append(results, Result{Op: c.Op, Type: c.Type.String(), Backend: t.Name(), Reason: unavailableReason(err)})
			}
			continue
		}
		active = append(active, t)
	}
	total := len(cells)*len(active) + len(results)
	done := len(results)
	for _, t := range active {
		s := schedule(t.Name())
		for _, c := range cells {
			r := Judge(t, c, s)
			results = append(results, r)
			done++
			if progress != nil {
				progress(done, total, r)
			}
		}
		t.Close()
	}
	sort.SliceStable(results, func(i, j int) bool {
		a, b := results[i], results[j]
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		return a.Type < b.Type
	})
	return results
}

func unavailableReason(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "unavailable") {
		return msg
	}
	return "unavailable: " + msg
}

// Failed reports whether any (cell, backend) that ran is not bit-exact.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Ran && !r.BitExact {
			return true
		}
	}
	return false
}

// WriteJSON writes the results as a JSON array, one record per (cell, backend).
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// WriteMatrix writes the matrix: a row per op/type, a column per backend with its levels (or
// FAIL, or unavailable), then every cell that is not bit-exact with its reason, and the totals.
func WriteMatrix(w io.Writer, results []Result) {
	var backends []string
	seen := map[string]bool{}
	rows := map[string]map[string]Result{}
	var order []string
	for _, r := range results {
		if !seen[r.Backend] {
			seen[r.Backend] = true
			backends = append(backends, r.Backend)
		}
		key := r.Op + "/" + r.Type
		if rows[key] == nil {
			rows[key] = map[string]Result{}
			order = append(order, key)
		}
		rows[key][r.Backend] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "cell\t%s\n", strings.Join(backends, "\t"))
	for _, key := range order {
		cols := make([]string, len(backends))
		for i, b := range backends {
			r, ok := rows[key][b]
			switch {
			case !ok:
				cols[i] = "-"
			case !r.Ran:
				cols[i] = "unavailable"
			case r.BitExact:
				cols[i] = r.Levels
			default:
				cols[i] = r.Levels + " NOT-EXACT"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", key, strings.Join(cols, "\t"))
	}
	tw.Flush()
	var bad []Result
	unavailable := map[string]string{}
	exact, ran := 0, 0
	for _, r := range results {
		if !r.Ran {
			unavailable[r.Backend] = r.Reason
			continue
		}
		ran++
		if r.BitExact {
			exact++
		} else {
			bad = append(bad, r)
		}
	}
	fmt.Fprintln(w, "\nlevels: E emitted, V validated by the vendor toolchain, X executed on a real driver, H host emulation (not a GPU), B bit-exact")
	for _, b := range backends {
		if why, ok := unavailable[b]; ok {
			fmt.Fprintf(w, "%s: %s\n", b, why)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(w, "\nnot bit-exact (%d):\n", len(bad))
		for _, r := range bad {
			fmt.Fprintf(w, "  %s/%s on %s [%s]: max %g ULP, max rel %g: %s\n", r.Op, r.Type, r.Backend, r.Levels, r.MaxULP, r.MaxRel, r.Reason)
		}
	}
	fmt.Fprintf(w, "\n%d of %d (cell, backend) pairs that ran are bit-exact\n", exact, ran)
}
