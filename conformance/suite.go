package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
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

// Targets returns every backend the suite knows, in report order, each a new value in checked
// mode (SetChecked turns it off; on Vulkan with robustBufferAccess where the device has it).
// Each still has to be opened.
func Targets() []Target {
	out := []Target{&Vulkan{Robust: true}}
	for _, t := range extraTargets {
		if c, ok := t.(*CFamily); ok {
			cp := *c
			t = &cp
		}
		if w, ok := t.(*WebGPU); ok {
			t = &WebGPU{Options: w.Options, Checked: w.Checked}
		}
		out = append(out, t)
	}
	return out
}

// extraTargets are the backends registered by other files of this package (C-family, host).
var extraTargets []Target

// Progress is told about every finished (cell, backend, schedule).
type Progress func(done, total int, r Result)

// Schedules chooses the schedules a cell runs at on an open target.
type Schedules func(c kernels.Cell, t Target) []kernels.Schedule

// DefaultSchedules runs each cell once, at its default schedule for the target's backend and
// device (kernels.Cell.DefaultScheduleFor with TargetSubgroup).
func DefaultSchedules(c kernels.Cell, t Target) []kernels.Schedule {
	return []kernels.Schedule{c.DefaultScheduleFor(t.Name(), TargetSubgroup(t))}
}

// AllSchedules runs each cell at every schedule of its space (kernels.Cell.Schedules).
func AllSchedules(c kernels.Cell, t Target) []kernels.Schedule {
	return withDefault(c.Schedules(), c.DefaultScheduleFor(t.Name(), TargetSubgroup(t)))
}

// SampleSchedules runs each cell at its four sample schedules (kernels.Cell.SampleSchedules)
// and at its default.
func SampleSchedules(c kernels.Cell, t Target) []kernels.Schedule {
	return withDefault(c.SampleSchedules(), c.DefaultScheduleFor(t.Name(), TargetSubgroup(t)))
}

// TargetSubgroup is the subgroup size of an open target's device as its lowering uses it (the
// target's SubgroupSize method, where it has one and knows), else kernels.SubgroupHint.
func TargetSubgroup(t Target) int {
	if s, ok := t.(interface{ SubgroupSize() int }); ok && s.SubgroupSize() > 0 {
		return s.SubgroupSize()
	}
	return kernels.SubgroupHint(t.Name())
}

func withDefault(list []kernels.Schedule, def kernels.Schedule) []kernels.Schedule {
	for _, s := range list {
		if s == def {
			return list
		}
	}
	return append([]kernels.Schedule{def}, list...)
}

// ParseSchedules reads a -schedules flag: "default", "sample", "all", or a list of schedules
// separated by semicolons ("lanes=8,strided;lanes=64"); a listed schedule that a cell cannot
// take (wider than its canonical width, narrower than its minimum) is left out for that cell.
func ParseSchedules(text string) (Schedules, error) {
	switch text {
	case "", "default":
		return DefaultSchedules, nil
	case "sample":
		return SampleSchedules, nil
	case "all":
		return AllSchedules, nil
	}
	var list []kernels.Schedule
	for _, part := range strings.Split(text, ";") {
		s, err := kernels.ParseSchedule(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("-schedules: %w (or default, sample, all)", err)
		}
		list = append(list, s)
	}
	return func(c kernels.Cell, _ Target) []kernels.Schedule {
		var out []kernels.Schedule
		for _, s := range list {
			if c.Fits(s) {
				out = append(out, s)
			}
		}
		return out
	}, nil
}

// Run judges every selected cell on every selected target at the schedules sched picks (nil:
// DefaultSchedules) and returns one Result per (cell, backend, schedule), unavailable backends
// included (Ran false, Reason the cause). Targets run concurrently, up to one per CPU; progress
// is called from one goroutine at a time.
func Run(f Filter, targets []Target, sched Schedules, progress Progress) []Result {
	if sched == nil {
		sched = DefaultSchedules
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
	total := len(results)
	for _, t := range active {
		for _, c := range cells {
			total += len(sched(c, t))
		}
	}
	// The backends run concurrently, at most one per CPU (each is its own device or toolchain
	// and mostly waits for a compiler or a driver); each runs its cells in order. Results keep
	// the target order, whatever finished first.
	done := len(results)
	var mu sync.Mutex
	per := make([][]Result, len(active))
	slots := make(chan struct{}, max(1, runtime.NumCPU()))
	var wg sync.WaitGroup
	for ti, t := range active {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			defer t.Close()
			for _, c := range cells {
				for _, s := range sched(c, t) {
					r := Judge(t, c, s)
					mu.Lock()
					per[ti] = append(per[ti], r)
					done++
					if progress != nil {
						progress(done, total, r)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, rs := range per {
		results = append(results, rs...)
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

// Failed reports whether any (cell, backend, schedule) that ran is not bit-exact, or a cell
// gave different bytes at different schedules or on different backends (Inconsistent).
func Failed(results []Result) bool {
	if NothingRan(results, nil) != "" {
		return true
	}
	for _, r := range results {
		if r.Ran && !r.Passed() {
			return true
		}
	}
	return len(Inconsistent(results)) > 0
}

// NothingRan says why, when none of the results ran, or when one of the asked backends (nil:
// any) ran nothing: "nothing ran on cuda: REASON"; "" otherwise.
func NothingRan(results []Result, asked []string) string {
	ran, why := map[string]int{}, map[string]string{}
	total := 0
	for _, r := range results {
		if r.Ran {
			ran[r.Backend]++
			total++
		} else if why[r.Backend] == "" {
			why[r.Backend] = r.Reason
		}
	}
	var out []string
	check := asked
	if len(check) == 0 && total == 0 {
		for b := range why {
			check = append(check, b)
		}
		sort.Strings(check)
	}
	for _, b := range check {
		if ran[b] == 0 {
			reason := why[b]
			if reason == "" {
				reason = "no cell ran there"
			}
			out = append(out, fmt.Sprintf("nothing ran on %s: %s", b, reason))
		}
	}
	if len(out) == 0 && total == 0 {
		return "nothing ran"
	}
	return strings.Join(out, "; ")
}

// Inconsistent returns, for every cell whose runs did not all give the same output bytes
// (compared by Digest, NaNs canonical), a line naming the cell and the groups of
// (backend, schedule) that agree. Runs that stopped before their outputs (no Digest) are left
// out: they are failures of their own.
func Inconsistent(results []Result) []string {
	type group struct {
		digest string
		runs   []string
	}
	byCell := map[string][]*group{}
	var order []string
	for _, r := range results {
		if !r.Ran || r.Digest == "" || r.Inexact {
			continue // inexact cells (a device's own functions) differ between backends by design
		}
		key := r.Op + "/" + r.Type
		gs, seen := byCell[key]
		if !seen {
			order = append(order, key)
		}
		var g *group
		for _, x := range gs {
			if x.digest == r.Digest {
				g = x
			}
		}
		if g == nil {
			g = &group{digest: r.Digest}
			byCell[key] = append(gs, g)
		}
		g.runs = append(g.runs, r.Backend+" "+r.Schedule)
	}
	var out []string
	for _, key := range order {
		gs := byCell[key]
		if len(gs) < 2 {
			continue
		}
		parts := make([]string, len(gs))
		for i, g := range gs {
			parts[i] = fmt.Sprintf("{%s} give %.12s", strings.Join(g.runs, ", "), g.digest)
		}
		out = append(out, key+": different bytes: "+strings.Join(parts, "; "))
	}
	return out
}

// countChecked counts the runs made in checked mode.
func countChecked(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Ran && r.Checked {
			n++
		}
	}
	return n
}

// WriteJSON writes the results as a JSON array, one record per (cell, backend, schedule).
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// WriteMatrix writes the matrix: a row per op/type, a column per backend with its levels (or
// NOT-EXACT, or unavailable; "x N" when the cell ran at N schedules there, the levels then being
// those of the first run that was not bit-exact, else of the first), then every run that is not
// bit-exact with its reason, the cells whose bytes differ between schedules or backends, and the
// totals.
func WriteMatrix(w io.Writer, results []Result) {
	var backends []string
	seen := map[string]bool{}
	rows := map[string]map[string]Result{}
	runs := map[string]int{}
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
		prev, had := rows[key][r.Backend]
		if !had || prev.Passed() && !r.Passed() && r.Ran {
			rows[key][r.Backend] = r
		}
		runs[key+" "+r.Backend]++
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
			case r.Inexact && r.Within:
				cols[i] = fmt.Sprintf("%s inexact, max ULP %g", r.Levels, r.MaxULP)
			case r.Inexact && r.OutOfBounds == "":
				cols[i] = r.Levels + " OVER-ULP-BOUND"
			case r.OutOfBounds != "":
				cols[i] = r.Levels + " OUT-OF-BOUNDS"
			default:
				cols[i] = r.Levels + " NOT-EXACT"
			}
			if n := runs[key+" "+b]; n > 1 && r.Ran {
				cols[i] += fmt.Sprintf(" x%d", n)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", key, strings.Join(cols, "\t"))
	}
	tw.Flush()
	var bad, inexact []Result
	unavailable := map[string]string{}
	exact, ran := 0, 0
	for _, r := range results {
		if !r.Ran {
			unavailable[r.Backend] = r.Reason
			continue
		}
		ran++
		switch {
		case r.BitExact:
			exact++
		case r.Passed():
			inexact = append(inexact, r)
		default:
			bad = append(bad, r)
		}
	}
	fmt.Fprintln(w, "\nlevels: E emitted, V validated by the vendor toolchain, X executed on a real driver, H host emulation (not a GPU), B bit-exact, P performance measured")
	if checked := countChecked(results); checked > 0 {
		fmt.Fprintf(w, "checked mode: %d of %d runs bounds-checked (an out-of-bounds buffer access fails the run)\n", checked, ran)
	}
	var perf []*CellBench
	for _, r := range results {
		if r.Perf != nil {
			perf = append(perf, r.Perf)
		}
	}
	if len(perf) > 0 {
		fmt.Fprintln(w, "\nperformance (level P), kernel-only at each op's realistic shape:")
		WriteBench(w, perf)
	}
	for _, b := range backends {
		if why, ok := unavailable[b]; ok {
			fmt.Fprintf(w, "%s: unavailable: %s\n", b, why)
		}
	}
	// Why levels are missing (H instead of X, a host check instead of the vendor's compiler):
	// the reasons of the runs that did run, once per backend.
	for _, b := range backends {
		notes, seenNote := []string{}, map[string]int{}
		total := 0
		for _, r := range results {
			if r.Backend != b || !r.Ran || !r.BitExact { // inexact runs' reasons are listed below
				continue
			}
			total++
			if r.Reason != "" {
				if seenNote[r.Reason] == 0 {
					notes = append(notes, r.Reason)
				}
				seenNote[r.Reason]++
			}
		}
		for _, n := range notes {
			fmt.Fprintf(w, "%s: %s (%d of %d runs)\n", b, n, seenNote[n], total)
		}
	}
	if len(inexact) > 0 {
		fmt.Fprintf(w, "\ninexact by declaration (a device's own functions; never bit-exact), within their bounds (%d):\n", len(inexact))
		for _, r := range inexact {
			fmt.Fprintf(w, "  %s/%s on %s at %s [%s]: %s\n", r.Op, r.Type, r.Backend, r.Schedule, r.Levels, r.Reason)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(w, "\nnot bit-exact (%d):\n", len(bad))
		for _, r := range bad {
			fmt.Fprintf(w, "  %s/%s on %s at %s [%s]: max %g ULP, max rel %g: %s\n", r.Op, r.Type, r.Backend, r.Schedule, r.Levels, r.MaxULP, r.MaxRel, r.Reason)
		}
	}
	if inc := Inconsistent(results); len(inc) > 0 {
		fmt.Fprintf(w, "\nnot the same bytes at every schedule and backend (%d):\n", len(inc))
		for _, line := range inc {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "\n%d of %d (cell, backend, schedule) runs are bit-exact", exact, ran)
	if len(inexact) > 0 {
		fmt.Fprintf(w, ", %d inexact by declaration within their bounds", len(inexact))
	}
	fmt.Fprintln(w)
	if ran > 0 {
		cells, multi := map[string]bool{}, 0
		for key := range rows {
			cells[key] = true
		}
		for _, r := range inexact { // their bytes differ between backends by design: not compared
			delete(cells, r.Op+"/"+r.Type)
		}
		for _, n := range runs {
			if n > 1 {
				multi++
			}
		}
		if multi > 0 && len(Inconsistent(results)) == 0 {
			fmt.Fprintf(w, "every cell gave the same bytes at every schedule and on every backend that ran it (%d cells)\n", len(cells))
		}
	}
}

// WritePhases prints, per backend, the total time of each phase over its runs (Phases) and the
// slowest run: where a suite's time went.
func WritePhases(w io.Writer, results []Result) {
	type total struct {
		p       Phases
		runs    int
		slowest Result
	}
	var order []string
	by := map[string]*total{}
	for _, r := range results {
		if !r.Ran {
			continue
		}
		t := by[r.Backend]
		if t == nil {
			t = &total{}
			by[r.Backend] = t
			order = append(order, r.Backend)
		}
		t.runs++
		p := r.Phases
		t.p.Build += p.Build
		t.p.Lower += p.Lower
		t.p.Emit += p.Emit
		t.p.Validate += p.Validate
		t.p.Driver += p.Driver
		t.p.Run += p.Run
		if r.Seconds > t.slowest.Seconds {
			t.slowest = r
		}
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintln(w, "where the time went (seconds, summed over the runs):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\truns\tbuild\tlower\temit\tvalidate\tdriver\trun\tslowest run")
	for _, b := range order {
		t := by[b]
		p := t.p
		s := t.slowest
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s/%s %s %.2fs\n", b, t.runs,
			p.Build, p.Lower, p.Emit, p.Validate, p.Driver, p.Run, s.Op, s.Type, s.Schedule, s.Seconds)
	}
	tw.Flush()
}
