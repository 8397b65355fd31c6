package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/kernels"
)

func init() {
	register("conform", "run every cell on every available backend against the oracle", runConform)
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func runConform(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ops := fs.String("op", "", "comma-separated ops (default all; with PACKAGE arguments, the ops of their cells)")
	types := fs.String("type", "", "comma-separated types (default all)")
	backends := fs.String("backend", "", "comma-separated backends (default all): "+strings.Join(targetNames(), ", "))
	fs.StringVar(backends, "backends", "", "the same as -backend")
	jsonOut := fs.String("json", "", "write one JSON record per (cell, backend, schedule) to this file")
	bench := fs.Bool("bench", false, "also measure every bit-exact Vulkan run kernel-only at its op's realistic shape (level P; GB/s and % of the copy roofline in the JSON records)")
	tuningPath := fs.String("tuning", "", "tuning cache file: with -schedules default, Vulkan runs each cell at its tuned schedule (see onesource tune)")
	checked := fs.Bool("checked", true, "checked mode: run bounds-checked kernels (robustBufferAccess on Vulkan where the device has it) and fail a run whose kernel indexes a buffer out of bounds, naming the source line; -checked=false runs the kernels as production emits them")
	vulkanEnv := fs.String("vulkan-env", "", "the Vulkan environment the SPIR-V is emitted for: 1.1 (SPIR-V 1.3), 1.2 (1.5) or 1.3 (1.6); 1.1 and 1.2 also use the device at that Vulkan version, as an older driver (default: the device's)")
	verbose := fs.Bool("v", false, "print where each run's time went (build, lower, emit, validate, driver, run) and the totals per backend")
	schedules := fs.String("schedules", "default", "default (each backend's), sample (four per cell and the default), all (every schedule of each cell), or a list like 'lanes=8,strided;lanes=64'")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource conform [-op ..] [-type ..] [-backend ..] [-schedules default|sample|all|LIST] [-tuning FILE] [-bench] [-checked=false] [-vulkan-env 1.1|1.2|1.3] [-json FILE] [-v] [PACKAGE...]")
		fmt.Fprintln(stderr, "  PACKAGE...: packages whose cells (func Cells() []kernels.Cell) join the library's")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if rc, done := withCells("conform", args, fs.Args(), stdout, stderr); done {
		return rc
	}
	f := conformance.Filter{Ops: opsOr(*ops), Types: splitList(*types), Backends: splitList(*backends)}
	if len(f.Cells()) == 0 {
		fmt.Fprintln(stderr, noCells("conform", f))
		return 2
	}
	env, err := vulkan.ParseEnv(*vulkanEnv)
	if err != nil {
		fmt.Fprintf(stderr, "onesource conform: -vulkan-env: %v\n", err)
		return 2
	}
	sched, err := conformance.ParseSchedules(*schedules)
	if err != nil {
		fmt.Fprintf(stderr, "onesource conform: %v\n", err)
		return 2
	}
	if *jsonOut != "" {
		if err := atomicfile.CheckOutput(*jsonOut, *tuningPath); err != nil {
			fmt.Fprintf(stderr, "onesource conform: -json: %v\n", err)
			return 1
		}
	}
	if *tuningPath != "" {
		if *schedules != "default" {
			fmt.Fprintln(stderr, "onesource conform: -tuning goes with -schedules default")
			return 2
		}
		cache, tw, err := kernels.LoadTuning(*tuningPath)
		if err != nil {
			fmt.Fprintf(stderr, "onesource conform: %v\n", err)
			return 1
		}
		for _, w := range tw {
			fmt.Fprintln(stderr, w)
		}
		sched = conformance.TunedSchedules(cache)
	}
	start := time.Now()
	tty := isTerminal(stderr)
	progress := func(done, total int, r conformance.Result) {
		status := "ok"
		switch {
		case r.Inexact && r.Within:
			status = fmt.Sprintf("inexact, max ULP %g", r.MaxULP)
		case !r.BitExact:
			status = "NOT BIT-EXACT"
		}
		if tty && !*verbose {
			const width = 30
			filled := done * width / total
			fmt.Fprintf(stderr, "\r[%s%s] %d/%d %-56s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, r.Op+"/"+r.Type+"/"+r.Backend+" "+r.Schedule)
			if done == total {
				fmt.Fprintln(stderr)
			}
			return
		}
		line := fmt.Sprintf("%d/%d %s/%s/%s %s %s %s (%.2fs)", done, total, r.Op, r.Type, r.Backend, r.Schedule, r.Levels, status, r.Seconds)
		if *verbose {
			line += " " + r.Phases.String()
		}
		fmt.Fprintln(stderr, line)
	}
	targets := conformance.SetChecked(conformance.Targets(), *checked)
	for _, t := range targets {
		if v, ok := t.(*conformance.Vulkan); ok {
			v.Env = env
		}
	}
	results := conformance.Run(f, targets, sched, progress)
	if *bench {
		v := &conformance.Vulkan{}
		if err := v.Open(); err != nil {
			fmt.Fprintf(stderr, "onesource conform: -bench: Vulkan unavailable: %v\n", err)
		} else {
			if w := conformance.BusyWarning(); w != "" {
				fmt.Fprintln(stderr, w)
			}
			conformance.Measure(v, results, conformance.BenchOptions{})
			v.Close()
		}
	}
	conformance.WriteMatrix(stdout, results)
	if *verbose {
		conformance.WritePhases(stdout, results)
		writeCompileCounts(stdout, targets)
	}
	fmt.Fprintf(stdout, "suite time: %s\n", time.Since(start).Round(time.Millisecond))
	if *jsonOut != "" {
		file, err := atomicfile.CreateOutput(*jsonOut, *tuningPath)
		if err == nil {
			if err = conformance.WriteJSON(file, results); err != nil {
				file.Abort()
			} else {
				err = file.Commit()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "onesource conform: %v\n", err)
			return 1
		}
	}
	if why := conformance.NothingRan(results, f.Backends); why != "" {
		fmt.Fprintf(stderr, "onesource conform: %s\n", why)
		return 1
	}
	if conformance.Failed(results) {
		return 1
	}
	return 0
}

// targetNames lists the suite's backends in report order.
func targetNames() []string {
	var names []string
	for _, t := range conformance.Targets() {
		names = append(names, t.Name())
	}
	return names
}

// isTerminal reports whether w is a character device (a terminal), where a progress bar that
// redraws itself makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writeCompileCounts says what this run compiled and what it found already compiled: the
// Vulkan pipelines (created, and found in the driver's pipeline cache where the driver reports
// it) and the host-compiled C-family programs.
func writeCompileCounts(w io.Writer, targets []conformance.Target) {
	for _, t := range targets {
		v, ok := t.(*conformance.Vulkan)
		if !ok {
			continue
		}
		st, file := v.Stats()
		if st.PipelinesCreated == 0 {
			continue
		}
		hits := "the driver does not report pipeline cache hits"
		if st.Feedback {
			hits = fmt.Sprintf("%d found in the driver's pipeline cache", st.PipelineCacheHits)
		}
		where := "no pipeline cache file"
		if file != "" {
			where = fmt.Sprintf("pipeline cache %s: %d bytes loaded, %d saved", file, st.PipelineCacheLoaded, st.PipelineCacheSaved)
			if st.PipelineCacheSaved <= vulkan.PipelineCacheHeaderSize {
				where += " (the driver keeps no pipelines there: Mesa's lavapipe keeps its compiled shaders in its own shader cache)"
			}
		}
		fmt.Fprintf(w, "vulkan: %d pipelines created (%s); %s\n", st.PipelinesCreated, hits, where)
	}
	if built, cached := host.CompileStats(); built+cached > 0 {
		fmt.Fprintf(w, "host execution: %d programs compiled, %d found compiled in the cache\n", built, cached)
	}
}
