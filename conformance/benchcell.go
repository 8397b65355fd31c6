package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
)

// The kernel-only benchmark of one cell at one shape (onesource bench): the twin at a schedule,
// timed as the A/B benchmark times it (buffers made once, warm-up, N dispatches in one
// submission, device timestamps), Repeats times; the median per dispatch, its GB/s of the op's
// minimal traffic and the percentage of the device's copy bandwidth. Given an incumbent, the
// A/B benchmark adds the ratio.

// CellBench is one measured cell: a record of `onesource bench -json`.
type CellBench struct {
	Cell        string  `json:"cell"`     // "matvec/q4_0/vulkan"
	Shape       string  `json:"shape"`    // ShortShape: "4096x4096", "64x4096,eps=1e-06"
	Schedule    string  `json:"schedule"` // kernels.Schedule.String()
	Tuned       bool    `json:"tuned"`    // the schedule came from the tuning cache
	Seconds     float64 `json:"seconds"`  // median per dispatch
	GBps        float64 `json:"gbps"`     // the op's minimal traffic per second
	RooflinePct float64 `json:"roofline_pct"`
	RooflineGBs float64 `json:"roofline_gbps"`
	Bytes       int     `json:"bytes"`    // minimal traffic per dispatch
	BitExact    bool    `json:"bitexact"` // the twin's output at this shape equals the oracle's
	Timestamps  bool    `json:"timestamps"`
	// Threads and CPUSeconds, on the CPU backends (BenchHostCell): the workers the dispatches
	// ran on, and the process's CPU time per dispatch and thread (on a shared machine the wall
	// clock, Seconds, also counts the time other processes held the cores).
	Threads    int     `json:"threads,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Incumbent and Ratio (twin throughput / incumbent throughput, median of the A/B pairs)
	// when a manifest named an incumbent for the cell.
	Incumbent string   `json:"incumbent,omitempty"`
	Ratio     *float64 `json:"ratio,omitempty"`
}

// BenchOptions configures BenchCell.
type BenchOptions struct {
	N, Warmup int // dispatches per measurement (default 10) after warm-up (default 2)
	Repeats   int // measurements; the median is reported (default 5)
}

// BenchCell benchmarks cell c's twin at schedule s on workload w on the open Vulkan target v.
func BenchCell(v *Vulkan, c kernels.Cell, w *Workload, s kernels.Schedule, o BenchOptions) (*CellBench, error) {
	d := v.dev
	if d == nil {
		return nil, errors.New("bench: the Vulkan target is not open")
	}
	if o.N <= 0 {
		o.N = 10
	}
	if o.Warmup <= 0 {
		o.Warmup = 2
	}
	if o.Repeats <= 0 {
		o.Repeats = 5
	}
	var want map[string][]byte
	if w.Want != nil {
		var err error
		if want, err = w.Want(); err != nil {
			return nil, fmt.Errorf("bench %s: oracle: %w", c.Name(), err)
		}
	}
	bs := &bufferSet{d: d, byOp: map[string]*vulkan.Buffer{}}
	defer bs.release()
	k, err := c.Build(s).Build()
	if err != nil {
		return nil, fmt.Errorf("bench %s at %s: twin does not build: %w", c.Name(), s, err)
	}
	x, err := prepareTwin(d, k, w, bs)
	if err != nil {
		return nil, fmt.Errorf("bench %s at %s: %w", c.Name(), s, err)
	}
	r := &CellBench{Cell: c.Name() + "/vulkan", Shape: ShortShape(c.Op, w.Shape), Schedule: s.String(), Bytes: w.Bytes(), Timestamps: true}
	if want != nil {
		if r.BitExact, _, err = x.check(context.Background(), d, w, want); err != nil {
			return nil, fmt.Errorf("bench %s: %w", c.Name(), err)
		}
	}
	var secs []float64
	for i := 0; i < o.Repeats; i++ {
		br, err := d.Bench(x.p, x.bufs, x.push, x.groups, o.Warmup, o.N)
		if err != nil {
			return nil, fmt.Errorf("bench %s: %w", c.Name(), err)
		}
		r.Timestamps = r.Timestamps && br.Timestamps
		secs = append(secs, br.PerDispatch.Seconds())
	}
	r.Seconds = Summarize(secs).Median
	r.GBps = float64(r.Bytes) / r.Seconds / 1e9
	if roof, err := CopyBandwidth(d, ABOptions{N: o.N, Warmup: o.Warmup}); err == nil && roof > 0 {
		r.RooflineGBs = roof
		r.RooflinePct = 100 * r.GBps / roof
	}
	return r, nil
}

// prepareTwin compiles the twin kernel k for device d and binds it to workload w's operands
// (buffers from bs, shared with whatever else runs on the same workload).
func prepareTwin(d *vulkan.Device, k *ir.Kernel, w *Workload, bs *bufferSet) (*prepared, error) {
	m, err := d.Compile(k)
	if err != nil {
		return nil, err
	}
	x := &prepared{groups: w.TwinGroups, outs: map[string]*vulkan.Buffer{}, hash: incumbent.HashWords(m.Words), push: pushWords(w.TwinParams)}
	if x.p, err = d.Pipeline(m); err != nil {
		return nil, err
	}
	for _, b := range m.Bindings {
		op, ok := w.operand(b.Name)
		if !ok {
			return nil, fmt.Errorf("binding %q is not an operand of the %s/%s workload", b.Name, w.Op, w.Type)
		}
		buf, err := bs.get(op)
		if err != nil {
			return nil, err
		}
		x.bufs = append(x.bufs, buf)
		if op.Output {
			x.outs[op.Name] = buf
		}
	}
	return x, nil
}

// pushWords is the push-constant block of 32-bit parameters.
func pushWords(params []uint32) []byte {
	b := make([]byte, 4*len(params))
	for i, p := range params {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(p), byte(p>>8), byte(p>>16), byte(p>>24)
	}
	return b
}

// WriteBench prints the benchmark table: cell, shape, schedule (tuned or default), time per
// dispatch, GB/s, % of the copy roofline, bit-exactness, and the ratio to the incumbent where
// there is one.
func WriteBench(w io.Writer, rs []*CellBench) {
	host := false // a CPU backend's records: their CPU time too
	for _, r := range rs {
		host = host || r.CPUSeconds > 0
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "cell\tshape\tschedule\tms/dispatch\tGB/s\troofline %\toracle\tvs incumbent"
	if host {
		head += "\tthreads\tcpu ms/thread"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rs {
		sched := r.Schedule
		if r.Tuned {
			sched += " (tuned)"
		}
		exact := "bit-exact"
		if !r.BitExact {
			exact = "NOT EXACT"
		}
		ratio := "-"
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.2fx %s", *r.Ratio, r.Incumbent)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.2f\t%.1f\t%s\t%s", r.Cell, r.Shape, sched, r.Seconds*1e3, r.GBps, r.RooflinePct, exact, ratio)
		if host {
			fmt.Fprintf(tw, "\t%d\t%.3f", r.Threads, r.CPUSeconds*1e3)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if len(rs) > 0 && rs[0].RooflineGBs > 0 {
		fmt.Fprintf(w, "roofline: the device's copy bandwidth, %.2f GB/s (read + written)\n", rs[0].RooflineGBs)
	}
}

// WriteBenchJSON writes the records as a JSON array.
func WriteBenchJSON(w io.Writer, rs []*CellBench) error {
	if rs == nil {
		rs = []*CellBench{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}

// BusyWarning samples OtherLoad for half a second and returns a warning when other processes
// kept at least a quarter of a core busy (timings on a shared machine are noisy), or "".
func BusyWarning() string {
	cores, ok := OtherLoad(500 * time.Millisecond)
	if !ok || cores < 0.25 {
		return ""
	}
	return fmt.Sprintf("warning: other processes kept %.1f of this machine's %d cores busy; the timings will be noisy (stop them, or measure again)", cores, runtime.NumCPU())
}

// Measure adds level P to the bit-exact Vulkan results: each cell is benchmarked (BenchCell) at
// its op's realistic default shape and at the schedule its result ran at, on the open Vulkan
// target v, and the measurement is kept in Result.Perf. Other results are left as they are; a
// cell that cannot be measured gets the reason appended to its Reason.
func Measure(v *Vulkan, results []Result, o BenchOptions) {
	for i := range results {
		r := &results[i]
		if r.Backend != "vulkan" || !r.Ran || !r.BitExact {
			continue
		}
		c, ok := lookupCell(strings.ToLower(r.Op + "/" + r.Type))
		if !ok {
			continue
		}
		s, err := kernels.ParseSchedule(r.Schedule)
		var b *CellBench
		if err == nil {
			var w *Workload
			if w, err = NewWorkload(c.Op, c.Type.String(), nil, s); err == nil {
				b, err = BenchCell(v, c, w, s, o)
			}
		}
		if err != nil {
			if r.Reason != "" {
				r.Reason += "; "
			}
			r.Reason += "P not measured: " + err.Error()
			continue
		}
		r.Perf = b
		r.Levels += "P"
	}
}
