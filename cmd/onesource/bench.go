package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/tuning"
)

func init() {
	register("bench", "kernel-only benchmark of cells at a shape: GB/s, % of the copy roofline, ratio to an incumbent", runBench)
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ops := fs.String("op", "", "comma-separated ops (default all; with PACKAGE arguments, the ops of their cells)")
	types := fs.String("type", "", "comma-separated types (default all)")
	shape := fs.String("shape", "", "workload shape: the op's primary variables (4096x4096) or NAME=VALUE,... (default: the op's realistic shape)")
	schedule := fs.String("schedule", "", "schedule to run at, e.g. lanes=32,blocked (default: the tuning cache's for this device, else the cell's default)")
	cachePath := fs.String("tuning", "", "tuning cache file (see onesource tune)")
	manifest := fs.String("manifest", "", "incumbents manifest: adds the ratio to the cell's incumbent (A/B, interleaved)")
	jsonOut := fs.String("json", "", "write the records as a JSON array to this file")
	backend := fs.String("backend", "vulkan", "backend to measure on: vulkan, native (native CPU code) or cpu (the Go executor)")
	threads := fs.Int("threads", 0, "native and cpu: threads the workgroups run on (default: one per CPU)")
	n := fs.Int("n", 10, "dispatches per measurement")
	repeats := fs.Int("repeats", 5, "measurements (the median is reported)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource bench [-backend vulkan|native|cpu] [-threads N] [-op ..] [-type ..] [-shape SHAPE] [-schedule S] [-tuning FILE] [-manifest FILE] [-json FILE] [-n N] [-repeats N] [PACKAGE...]")
		fmt.Fprintln(stderr, "  PACKAGE...: packages whose cells (func Cells() []kernels.Cell) join the library's")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if rc, done := withCells("bench", args, fs.Args(), stdout, stderr); done {
		return rc
	}
	if *n < 1 || *repeats < 1 {
		fmt.Fprintln(stderr, "onesource bench: -n and -repeats must be at least 1")
		return 2
	}
	f := conformance.Filter{Ops: opsOr(*ops), Types: splitList(*types)}
	cells := f.Cells()
	if len(cells) == 0 {
		fmt.Fprintln(stderr, noCells("bench", f))
		return 2
	}
	shapes, err := shapesFor(cells, *shape)
	if err != nil {
		fmt.Fprintf(stderr, "onesource bench: %v\n", err)
		return 2
	}
	var fixed *kernels.Schedule
	if *schedule != "" {
		s, err := kernels.ParseSchedule(*schedule)
		if err != nil {
			fmt.Fprintf(stderr, "onesource bench: -schedule: %v\n", err)
			return 2
		}
		for _, c := range cells {
			if !c.Fits(s) {
				fmt.Fprintf(stderr, "onesource bench: -schedule %s does not fit %s (canonical width %d)\n", s, c.Name(), c.Width)
				return 2
			}
		}
		fixed = &s
	}
	if *jsonOut != "" {
		if err := atomicfile.CheckOutput(*jsonOut, *cachePath, *manifest); err != nil {
			fmt.Fprintf(stderr, "onesource bench: -json: %v\n", err)
			return 1
		}
	}
	var cache *tuning.Cache
	if *cachePath != "" {
		var tw []string
		if cache, tw, err = kernels.LoadTuning(*cachePath); err != nil {
			fmt.Fprintf(stderr, "onesource bench: %v\n", err)
			return 1
		}
		for _, w := range tw {
			fmt.Fprintln(stderr, w)
		}
	}
	var m *incumbent.Manifest
	if *manifest != "" {
		if m, err = incumbent.Load(*manifest); err != nil {
			fmt.Fprintf(stderr, "onesource bench: %v\n", err)
			return 1
		}
		if err := unregistered("bench", m); err != nil {
			fmt.Fprintf(stderr, "onesource bench: %v\n", err)
			return 2
		}
	}
	if *backend != "vulkan" {
		return benchHost(*backend, *threads, cells, shapes, fixed, *manifest != "" || *cachePath != "", *n, *repeats, *jsonOut, stdout, stderr)
	}
	v := &conformance.Vulkan{}
	if err := v.Open(); err != nil {
		fmt.Fprintf(stderr, "onesource bench: Vulkan unavailable: %v\n", err)
		return 1
	}
	defer v.Close()
	if w := conformance.BusyWarning(); w != "" {
		fmt.Fprintln(stderr, w)
	}
	var rs []*conformance.CellBench
	status := 0
	for _, c := range cells {
		s, tuned, _ := conformance.TunedSchedule(cache, v, c)
		if fixed != nil {
			s, tuned = *fixed, false
		}
		w, err := conformance.NewWorkload(c.Op, c.Type.String(), shapes[c.Op], s)
		if err != nil {
			fmt.Fprintf(stderr, "onesource bench: %s: %v\n", c.Name(), err)
			status = 1
			continue
		}
		r, err := conformance.BenchCell(v, c, w, s, conformance.BenchOptions{N: *n, Repeats: *repeats})
		if err != nil {
			fmt.Fprintf(stderr, "onesource bench: %v\n", err)
			status = 1
			continue
		}
		r.Tuned = tuned
		if !r.BitExact {
			status = 1
		}
		if m != nil {
			if e := m.Entry(c.Op, c.Type.String(), "vulkan"); e != nil {
				k, err := c.Build(s).Build()
				if err == nil {
					var ab *conformance.ABResult
					ab, err = conformance.RunAB(v.Device(), c, e, conformance.ABOptions{N: *n, Pairs: *repeats, Twin: k, Workload: w, Schedule: &s})
					if err == nil {
						ratio := ab.Ratio.Median
						r.Ratio, r.Incumbent = &ratio, e.Name
						// The timed runs' outputs are checked (see conformance.RunAB): what they
						// caught voids the ratio.
						for _, f := range ab.TwinFindings {
							err = errors.Join(err, fmt.Errorf("twin: %s", f))
						}
						for _, f := range ab.IncumbentFindings {
							err = errors.Join(err, fmt.Errorf("incumbent: %s", f))
						}
						if err != nil {
							r.Ratio = nil
						}
					}
				}
				if err != nil {
					fmt.Fprintf(stderr, "onesource bench: %s: incumbent %s: %v\n", c.Name(), e.Name, err)
					status = 1
				}
			}
		}
		fmt.Fprintf(stderr, "%s %s at %s: %.3f ms, %.2f GB/s\n", r.Cell, r.Shape, r.Schedule, r.Seconds*1e3, r.GBps)
		rs = append(rs, r)
	}
	conformance.WriteBench(stdout, rs)
	if *jsonOut != "" {
		file, err := atomicfile.CreateOutput(*jsonOut, *cachePath, *manifest)
		if err == nil {
			if err = conformance.WriteBenchJSON(file, rs); err != nil {
				file.Abort()
			} else {
				err = file.Commit()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "onesource bench: %v\n", err)
			return 1
		}
	}
	return status
}

// benchHost is onesource bench on a CPU backend (native or cpu): each cell at the -schedule or its
// default for the backend (the tuning cache and incumbents are Vulkan's), timed by
// conformance.BenchHostCell.
func benchHost(backend string, threads int, cells []kernels.Cell, shapes map[string]map[string]float64, fixed *kernels.Schedule, vulkanOnly bool, n, repeats int, jsonOut string, stdout, stderr io.Writer) int {
	known := false
	for _, b := range conformance.HostBackends {
		known = known || b == backend
	}
	if !known {
		fmt.Fprintf(stderr, "onesource bench: -backend %q: want vulkan, %s\n", backend, strings.Join(conformance.HostBackends, " or "))
		return 2
	}
	if vulkanOnly {
		fmt.Fprintf(stderr, "onesource bench: -tuning and -manifest apply to -backend vulkan only\n")
		return 2
	}
	if backend == "native" {
		if err := native.Available(); err != nil {
			fmt.Fprintf(stderr, "onesource bench: native CPU code unavailable: %v\n", err)
			return 1
		}
	}
	if w := conformance.BusyWarning(); w != "" {
		fmt.Fprintln(stderr, w)
	}
	var rs []*conformance.CellBench
	status := 0
	for _, c := range cells {
		s := c.DefaultScheduleFor(backend, conformance.HostSubgroup(backend))
		if fixed != nil {
			s = *fixed
		}
		w, err := conformance.NewWorkload(c.Op, c.Type.String(), shapes[c.Op], s)
		if err != nil {
			fmt.Fprintf(stderr, "onesource bench: %s: %v\n", c.Name(), err)
			status = 1
			continue
		}
		r, err := conformance.BenchHostCell(backend, c, w, s, threads, conformance.BenchOptions{N: n, Repeats: repeats})
		if err != nil {
			fmt.Fprintf(stderr, "onesource bench: %v\n", err)
			status = 1
			continue
		}
		if !r.BitExact {
			status = 1
		}
		fmt.Fprintf(stderr, "%s %s at %s on %d threads: %.3f ms, %.2f GB/s (cpu %.3f ms per thread)\n", r.Cell, r.Shape, r.Schedule, r.Threads, r.Seconds*1e3, r.GBps, r.CPUSeconds*1e3)
		rs = append(rs, r)
	}
	conformance.WriteBench(stdout, rs)
	if jsonOut != "" {
		file, err := os.Create(jsonOut)
		if err == nil {
			err = conformance.WriteBenchJSON(file, rs)
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "onesource bench: %v\n", err)
			return 1
		}
	}
	return status
}
