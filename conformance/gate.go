package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/registry"
	"github.com/onesource-go/onesource/tuning"
)

// The gate (docs/contracts.md, "Cells, the registry and the gate"): for every selected cell on Vulkan,
//
//	(a) correctness: Judge of the twin against the oracle on the cell's conformance cases;
//	(b) performance: where the manifest has an incumbent, the kernel-only A/B benchmark (RunAB).
//
// The evidence (device, driver, toolchain, code hashes, throughputs, ratio and spread, date) goes
// to the registry through registry.Apply with the verdict registry.Judge implies at the
// registry's threshold: flip when bit-exact and the median ratio reaches the threshold (or
// bit-exact with no incumbent: fallback), decline when bit-exact but slower (the incumbent
// stays, the twin is kept as fallback), fail when not bit-exact. A dsl cell is never demoted by
// the gate: the registry refuses, and the row says so.

// GateOptions configures Gate.
type GateOptions struct {
	Filter Filter    // ops and types (Backends is ignored: the gate runs on Vulkan)
	AB     ABOptions // benchmark sizes
	// Threshold, when not zero, is set on the registry (SetThreshold) before judging.
	Threshold float64
	// Build, when set, replaces the twin of a cell (tests: a deliberately slowed twin).
	Build func(c kernels.Cell) func(kernels.Schedule) *dsl.Kernel
	// All gates every selected cell; otherwise only cells with an incumbent in the manifest.
	All bool
	// Progress is told about every finished row.
	Progress func(GateRow)
	// Tuning, when set, gives each cell the schedule tuned for this device and this version of
	// its twin (TunedSchedule); cells it does not hold run at their default.
	Tuning *tuning.Cache
	// IncumbentTolerance is the normwise error against the oracle beyond which an incumbent is
	// wrong (0: DefaultIncumbentTolerance).
	IncumbentTolerance float64
	// Seed is the base seed of the gate's seeded inputs (the A/B's second input set and the extra
	// checks, see gateChecks); 0: one from the clock. Every evidence records its seed, so a
	// failure replays with this seed.
	Seed int64
	// Timeout bounds each cell's runs on the device (0: DefaultGateTimeout): at it the cell's
	// row records the error and the gate goes on (the device then waits, under the next call's
	// deadline, for the work left in flight).
	Timeout time.Duration
}

// DefaultGateTimeout is the most one cell's device runs in the gate may take: a realistic A/B
// benchmark takes seconds (`onesource gate -op matvec -type f32`, 9 pairs of 10 dispatches at
// the default shape, took 6 s in all on lavapipe with 2 cores); a dispatch that has not finished
// in 5 minutes is a runaway, not a measurement.
const DefaultGateTimeout = 5 * time.Minute

// GateRow is the gate's outcome for one cell.
type GateRow struct {
	Key      registry.Key
	Judge    Result    // the correctness gate
	AB       *ABResult // the performance gate (nil without an incumbent or when it failed)
	Evidence registry.Evidence
	Verdict  registry.Verdict
	State    registry.State // the cell's state in the registry afterwards
	Reason   string
	Err      string // what went wrong (the row then records what could be measured)
	// TimedOut: the cell's runs passed GateOptions.Timeout; the device may still be running the
	// work (closing it waits for that).
	TimedOut bool
}

var (
	toolOnce sync.Once
	toolStr  string
)

// Toolchain describes the toolchain of the evidence: the Go version and glslc's version.
func Toolchain() string {
	toolOnce.Do(func() {
		parts := []string{runtime.Version()}
		if out, err := exec.Command("glslc", "--version").Output(); err == nil {
			line := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
			parts = append(parts, "glslc "+strings.TrimSpace(line))
		}
		toolStr = strings.Join(parts, "; ")
	})
	return toolStr
}

// DeviceEvidence returns the device and driver strings evidence is keyed by.
func DeviceEvidence(d *vulkan.Device) (device, driver string) { return d.Info().Evidence() }

func clampULP(u float64) float64 {
	if math.IsInf(u, 0) || math.IsNaN(u) || u > math.MaxFloat32 {
		return math.MaxFloat32
	}
	return u
}

// Gate runs both gates for every selected cell that has an incumbent in m (every selected cell
// with o.All) on the open Vulkan target v, applies the results to reg and returns one row per
// cell. reg is not saved.
func Gate(v *Vulkan, m *incumbent.Manifest, reg *registry.Registry, o GateOptions) ([]GateRow, error) {
	d := v.Device()
	if d == nil {
		return nil, errors.New("gate: the Vulkan target is not open")
	}
	if o.Threshold != 0 && o.Threshold != reg.Threshold() {
		if err := reg.SetThreshold(o.Threshold, "onesource gate -threshold"); err != nil {
			return nil, err
		}
	}
	device, driver := DeviceEvidence(d)
	var rows []GateRow
	for _, c := range o.Filter.Cells() {
		var e *incumbent.Entry
		if m != nil {
			e = m.Entry(c.Op, c.Type.String(), "vulkan")
		}
		if e == nil && !o.All {
			continue
		}
		if o.Build != nil {
			if b := o.Build(c); b != nil {
				c.Build = b
			}
		}
		s, _, _ := TunedSchedule(o.Tuning, v, c)
		row := gateCell(v, d, c, e, s, o)
		row.Evidence.Device, row.Evidence.Driver, row.Evidence.Toolchain = device, driver, Toolchain()
		apply(reg, &row, e)
		rows = append(rows, row)
		if o.Progress != nil {
			o.Progress(row)
		}
	}
	return rows, nil
}

// gateCell runs the two gates and fills the row's evidence (but not the machine fields).
func gateCell(v *Vulkan, d *vulkan.Device, c kernels.Cell, e *incumbent.Entry, s kernels.Schedule, o GateOptions) GateRow {
	row := GateRow{Key: registry.Key{Op: c.Op, Type: c.Type.String(), Backend: "vulkan"}}
	row.Judge = Judge(v, c, s)
	ev := &row.Evidence
	ev.Date = time.Now().UTC().Truncate(time.Second)
	ev.BitExact = row.Judge.BitExact
	ev.MaxULP = clampULP(row.Judge.MaxULP)
	ev.Cases = row.Judge.Cases
	ev.Seed = o.Seed
	if ev.Seed == 0 {
		ev.Seed = time.Now().UnixNano()%1_000_000_000 + 1
	}
	var mod *vulkan.Module
	if k, err := c.Build(s).Build(); err == nil {
		if m, err := d.Compile(k); err == nil {
			mod = m
			ev.TwinHash = "sha256:" + incumbent.HashWords(m.Words)
		}
	}
	if ev.TwinHash == "" {
		ev.TwinHash = "unbuildable"
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultGateTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	failed := func(what string, err error) {
		row.Err = join(row.Err, what+": "+err.Error())
		if errors.Is(err, context.DeadlineExceeded) {
			row.TimedOut = true
			row.Err += fmt.Sprintf(" (the cell's device runs passed the gate's timeout of %v)", timeout)
		}
	}
	if row.Judge.BitExact && mod != nil {
		// The seeded extra shapes: the twin must be bit-exact there too.
		bench := map[string]float64{}
		if e != nil {
			maps.Copy(bench, e.Shape)
		}
		maps.Copy(bench, o.AB.Shape)
		checks, exact, err := gateChecks(ctx, d, c, e, mod, s, extraShapes(c, bench, ev.Seed, s))
		ev.Checks = checks
		if err != nil {
			failed("extra checks", err)
			if row.TimedOut {
				return row
			}
		}
		if !exact {
			ev.BitExact = false
			for _, ck := range checks {
				if ck.Twin != "exact" && !strings.HasPrefix(ck.Twin, "not built") && !strings.HasPrefix(ck.Twin, "no oracle") {
					ev.Findings = append(ev.Findings, fmt.Sprintf("twin: at %s: %s", ck.Shape, ck.Twin))
				}
			}
		}
	}
	if e == nil {
		return row
	}
	if !ev.BitExact {
		// The incumbent's hash is still recorded (the cell has one), without a benchmark.
		if w, err := NewWorkload(c.Op, c.Type.String(), e.Shape, s); err == nil {
			if l, err := e.VulkanFor(d.Info(), w.Vars()); err == nil {
				ev.IncumbentHash = "sha256:" + l.Hash
			}
		}
		return row
	}
	ab := o.AB
	ab.Schedule = &s
	ab.Seed = ev.Seed
	r, err := RunABContext(ctx, d, c, e, ab)
	if err != nil {
		failed("benchmark", err)
		return row
	}
	row.AB = r
	ev.TwinHash = "sha256:" + r.TwinHash
	ev.IncumbentHash = "sha256:" + r.IncumbentHash
	ev.TwinGBps, ev.IncumbentGBps, ev.RooflineGBps = r.TwinGBs, r.IncumbentGBs, r.RooflineGBs
	ev.Ratio = registry.Spread{Median: r.Ratio.Median, Min: r.Ratio.Min, Max: r.Ratio.Max, Pairs: len(r.Ratios)}
	// The twin's timed runs must be what it computes, and bit-exact at the benchmark shape on
	// both input sets.
	for _, f := range r.TwinFindings {
		ev.Findings = append(ev.Findings, "twin: "+f)
	}
	if !r.TwinExact {
		ev.BitExact = false
		if len(r.TwinFindings) == 0 {
			ev.Findings = append(ev.Findings, "twin: not bit-exact at the benchmark shape "+ShapeString(r.Shape))
		}
	}
	// The incumbent is judged by the oracle too: one that computes something else (zeros, the
	// wrong buffers), or whose timed runs did not compute what it gave when checked (skipped or
	// cached work), cannot decline a correct twin.
	for _, f := range r.IncumbentFindings {
		ev.Findings = append(ev.Findings, "incumbent: "+f)
	}
	ev.IncumbentErr, ev.IncumbentMaxULP = r.IncumbentErr, r.IncumbentMaxULP
	tol := o.IncumbentTolerance
	if tol == 0 {
		tol = DefaultIncumbentTolerance
	}
	ev.IncumbentWrong = r.IncumbentErr > tol || len(r.IncumbentFindings) > 0
	return row
}

// DefaultIncumbentTolerance is the largest normwise error against the oracle,
// ||incumbent - oracle|| / ||oracle||, at which an incumbent still counts as computing the op (a
// hand-written kernel need not be bit-exact: other summation orders, fused multiply-adds,
// faster math differ by far less); beyond it the incumbent is wrong and a bit-exact twin flips on
// correctness.
const DefaultIncumbentTolerance = 1e-2

// apply registers the incumbent and applies the row's evidence to reg, filling Verdict, State
// and Reason.
func apply(reg *registry.Registry, row *GateRow, e *incumbent.Entry) {
	ev := row.Evidence
	ev.Threshold = reg.Threshold()
	row.Evidence = ev
	if e != nil {
		if ev.IncumbentHash == "" {
			// Nothing measured the incumbent: record the evidence without a verdict.
			row.Verdict = registry.Keep
		}
		if ev.IncumbentHash != "" {
			src := e.Source.GLSL + e.Source.SPIRV
			if err := reg.Register(row.Key, ev.IncumbentHash, fmt.Sprintf("incumbent %s (%s)", e.Name, src)); err != nil {
				row.Err = join(row.Err, err.Error())
			}
		}
	}
	verdict, why := registry.Judge(ev, reg.Threshold())
	if row.Verdict == registry.Keep {
		verdict, why = registry.Keep, "kept: "+row.Err
	}
	row.Verdict = verdict
	reason := why
	if row.AB != nil {
		r := row.AB
		reason += fmt.Sprintf(" (ratio min %.3f max %.3f IQR %.3f; twin %.2f GB/s, incumbent %s %.2f GB/s; roofline %.2f GB/s; cores used %.2f)",
			r.Ratio.Min, r.Ratio.Max, r.Ratio.IQR, r.TwinGBs, r.Incumbent, r.IncumbentGBs, r.RooflineGBs, r.CoresUsed)
		if verdict == registry.Decline {
			reason += "; the incumbent stays, the twin is kept as fallback"
		}
	}
	err := reg.Apply(registry.GateResult{Key: row.Key, Evidence: ev, Verdict: verdict, Reason: reason})
	var de *registry.DowngradeError
	switch {
	case errors.As(err, &de):
		row.Err = join(row.Err, err.Error())
		reason = "kept dsl: " + reason
	case err != nil:
		row.Err = join(row.Err, err.Error())
	}
	row.Reason = reason
	if cell, ok := reg.Cell(row.Key); ok {
		row.State = cell.State
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// WriteScoreboard prints the gate's rows as a table: cell, oracle levels, both throughputs, the
// ratio with its spread, the share of the roofline, the verdict and the resulting state, then
// the reasons.
func WriteScoreboard(w io.Writer, rows []GateRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cell\toracle\thand vs oracle\ttwin GB/s\thand GB/s\tratio (median [min, max] IQR)\troofline %\tcores\tverdict\tstate")
	for _, r := range rows {
		oracleCol := r.Judge.Levels
		if !r.Judge.BitExact {
			oracleCol += " FAIL"
		}
		twin, hand, ratio, roof, cores, handOK := "-", "-", "-", "-", "-", "-"
		if a := r.AB; a != nil {
			switch {
			case a.IncumbentExact:
				handOK = "exact"
			case r.Evidence.IncumbentWrong:
				handOK = fmt.Sprintf("WRONG err %.3g", a.IncumbentErr)
			default:
				handOK = fmt.Sprintf("err %.2g, %g ULP", a.IncumbentErr, a.IncumbentMaxULP)
			}
			twin, hand = fmt.Sprintf("%.2f", a.TwinGBs), fmt.Sprintf("%.2f", a.IncumbentGBs)
			ratio = fmt.Sprintf("%.3f [%.3f, %.3f] %.3f", a.Ratio.Median, a.Ratio.Min, a.Ratio.Max, a.Ratio.IQR)
			if a.RooflineGBs > 0 {
				roof = fmt.Sprintf("%.0f / %.0f", a.TwinRoof, a.IncumbentRoof)
			}
			if a.CoresUsed > 0 {
				cores = fmt.Sprintf("%.2f", a.CoresUsed)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Key, oracleCol, handOK, twin, hand, ratio, roof, cores, r.Verdict, r.State)
	}
	tw.Flush()
	for _, r := range rows {
		fmt.Fprintf(w, "%s: %s\n", r.Key, r.Reason)
		if r.Err != "" {
			fmt.Fprintf(w, "%s: error: %s\n", r.Key, r.Err)
		}
	}
}
