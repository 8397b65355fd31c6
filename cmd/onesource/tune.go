package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/tuning"
)

func init() {
	register("tune", "search each cell's schedules for the fastest bit-exact one on this device", runTune)
}

func runTune(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ops := fs.String("op", "", "comma-separated ops (default all; with PACKAGE arguments, the ops of their cells)")
	types := fs.String("type", "", "comma-separated types (default all)")
	backend := fs.String("backend", "vulkan", "the backend to tune on (vulkan: the device here)")
	shape := fs.String("shape", "", "workload shape: the op's primary variables (64x4096) or NAME=VALUE,... (default: the op's realistic shape)")
	cachePath := fs.String("cache", "tuning.json", "tuning cache file to update (created when missing)")
	rounds := fs.Int("rounds", 5, "timing rounds (each times every surviving candidate once)")
	n := fs.Int("n", 10, "dispatches per measurement")
	dryRun := fs.Bool("dry-run", false, "do not write the cache")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource tune [-op ..] [-type ..] [-backend vulkan] [-shape SHAPE] [-cache FILE] [-rounds N] [-n N] [-dry-run] [PACKAGE...]")
		fmt.Fprintln(stderr, "  PACKAGE...: packages whose cells (func Cells() []kernels.Cell) join the library's")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if rc, done := withCells("tune", args, fs.Args(), stdout, stderr); done {
		return rc
	}
	if *backend != "vulkan" {
		fmt.Fprintf(stderr, "onesource tune: -backend %s: only vulkan is tuned on this machine (CUDA and HIP tuning needs their device runtime)\n", *backend)
		return 2
	}
	if *rounds < 1 || *n < 1 {
		fmt.Fprintln(stderr, "onesource tune: -rounds and -n must be at least 1")
		return 2
	}
	f := conformance.Filter{Ops: opsOr(*ops), Types: splitList(*types)}
	cells := f.Cells()
	if len(cells) == 0 {
		fmt.Fprintln(stderr, noCells("tune", f))
		return 2
	}
	shapes, err := shapesFor(cells, *shape)
	if err != nil {
		fmt.Fprintf(stderr, "onesource tune: %v\n", err)
		return 2
	}
	cache, err := tuning.Open(*cachePath)
	if err != nil {
		fmt.Fprintf(stderr, "onesource tune: %v\n", err)
		return 1
	}
	for _, w := range kernels.TuningWarnings(cache) {
		fmt.Fprintln(stderr, w)
	}
	v := &conformance.Vulkan{}
	if err := v.Open(); err != nil {
		fmt.Fprintf(stderr, "onesource tune: Vulkan unavailable: %v\n", err)
		return 1
	}
	defer v.Close()
	if w := conformance.BusyWarning(); w != "" {
		fmt.Fprintln(stderr, w)
	}
	tty := isTerminal(stderr)
	var results []*conformance.TuneResult
	status := 0
	for i, c := range cells {
		o := conformance.TuneOptions{Shape: shapes[c.Op], Rounds: *rounds, N: *n}
		o.Progress = func(p conformance.TuneProgress) {
			if !tty {
				return
			}
			best := ""
			if p.Best != "" {
				best = fmt.Sprintf(", best so far %s %.3f ms", p.Best, p.BestSecs*1e3)
			}
			fmt.Fprintf(stderr, "\r[%d/%d cells] %s: %s %d/%d%s%s", i+1, len(cells), p.Cell, p.Stage, p.Done, p.Total, best, strings.Repeat(" ", 8))
		}
		r, err := conformance.Tune(v, c, o)
		if tty {
			fmt.Fprintln(stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "onesource tune: %v\n", err)
			status = 1
			continue
		}
		fmt.Fprintf(stderr, "%d/%d %s: best %s (%.3f ms), default %s (%.3f ms)\n", i+1, len(cells), r.Cell, r.Best, r.BestSeconds*1e3, r.Default, r.DefaultSeconds*1e3)
		if err := cache.Put(r.Entry); err != nil {
			fmt.Fprintf(stderr, "onesource tune: %s: %v\n", r.Cell, err)
			status = 1
			continue
		}
		results = append(results, r)
	}
	conformance.WriteTune(stdout, results)
	if !*dryRun && len(results) > 0 {
		if err := cache.Save(""); err != nil {
			fmt.Fprintf(stderr, "onesource tune: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "tuning cache: %s\n", *cachePath)
	}
	return status
}

// shapesFor parses -shape once per op of cells ("" gives every op its default); a shape that
// does not fit an op is an error naming the op.
func shapesFor(cells []kernels.Cell, text string) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	if text == "" {
		return out, nil
	}
	for _, c := range cells {
		if _, done := out[c.Op]; done {
			continue
		}
		sh, err := conformance.ParseShape(c.Op, text)
		if err != nil {
			return nil, fmt.Errorf("-shape %q for %s: %w", text, c.Name(), err)
		}
		out[c.Op] = sh
	}
	return out, nil
}
