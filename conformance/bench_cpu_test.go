package conformance

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/kernels"
)

// cpuVsVulkan is one cell's measurement in BenchmarkCPUvsLavapipe.
type cpuVsVulkan struct {
	cell, shape       string
	cpuSched, vkSched string
	cpuSec, vkSec     float64 // median per dispatch
	ratio             Spread  // per pair: cpu time / Vulkan time
	exact             string  // the output at this shape against the oracle: "yes", "NO", "inexact (declared)"
	skip              string
}

// BenchmarkCPUvsLavapipe measures every cell's twin on the CPU executor (backends/cpu, all of
// this machine's cores) and on the Vulkan device (Mesa lavapipe here) in one run, at the cell's
// realistic workload (NewWorkload: the shape the A/B benchmark and the gate use), each backend
// at its own default schedule for the cell (what it serves unless tuned). The two alternate, a
// Vulkan measurement then an executor one, for b.N pairs (run with -benchtime Nx, N >= 3): the
// Vulkan side is the kernel-only method (N dispatches in one submission, device timestamps),
// the executor side the wall clock of whole dispatches (at least 3, and at least 100 ms). Per
// cell it reports the median time per dispatch of each and the median of the per-pair ratios
// cpu time / lavapipe time (above 1: the executor is that many times slower), and checks the
// executor's output at the workload's shape against the oracle. A table of every cell is
// printed at the end:
//
//	go test ./conformance -run '^$' -bench CPUvsLavapipe -benchtime 3x -timeout 60m
func BenchmarkCPUvsLavapipe(b *testing.B) {
	v := &Vulkan{}
	if err := v.Open(); err != nil {
		b.Skipf("Vulkan unavailable: %v", err)
	}
	defer v.Close()
	d := v.dev
	var mu sync.Mutex
	results := map[string]*cpuVsVulkan{}
	var order []string
	for _, c := range kernels.Cells() {
		b.Run(c.Name(), func(b *testing.B) {
			r := benchCPUvsVulkan(b, d, c, max(b.N, 1))
			mu.Lock()
			defer mu.Unlock()
			if _, ok := results[c.Name()]; !ok {
				order = append(order, c.Name())
			}
			results[c.Name()] = r
			if r.skip != "" {
				b.Skip(r.skip)
			}
			b.ReportMetric(r.ratio.Median, "cpu/lavapipe")
			b.ReportMetric(r.cpuSec*1e3, "cpu-ms")
			b.ReportMetric(r.vkSec*1e3, "lavapipe-ms")
		})
	}
	var ratios []float64
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\ncell\tshape\tcpu schedule\tcpu ms\tlavapipe schedule\tlavapipe ms\tcpu/lavapipe (median [min, max])\tcpu bit-exact")
	for _, name := range order {
		r := results[name]
		if r.skip != "" {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\tskipped: %s\t\n", r.cell, r.skip)
			continue
		}
		ratios = append(ratios, r.ratio.Median)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\t%.3f\t%.1f [%.1f, %.1f]\t%s\n", r.cell, r.shape, r.cpuSched, r.cpuSec*1e3, r.vkSched, r.vkSec*1e3, r.ratio.Median, r.ratio.Min, r.ratio.Max, r.exact)
	}
	tw.Flush()
	if len(ratios) > 0 {
		s := Summarize(ratios)
		fmt.Printf("\n%d cells: cpu/lavapipe time ratio median %.1f, quartiles %.1f .. %.1f, range %.1f .. %.1f (%s)\n", len(ratios), s.Median, s.Q1, s.Q3, s.Min, s.Max, d.Info().Name)
	}
}

// benchCPUvsVulkan measures one cell (see BenchmarkCPUvsLavapipe) over pairs pairs.
func benchCPUvsVulkan(b *testing.B, d *vulkan.Device, c kernels.Cell, pairs int) *cpuVsVulkan {
	r := &cpuVsVulkan{cell: c.Name()}
	cs := c.DefaultScheduleFor("cpu", cpu.SubgroupSize)
	vs := c.DefaultScheduleFor("vulkan", d.Caps().SubgroupSize)
	r.cpuSched, r.vkSched = cs.String(), vs.String()
	cw, err := NewWorkload(c.Op, c.Type.String(), nil, cs)
	if err != nil {
		r.skip = err.Error()
		return r
	}
	vw, err := NewWorkload(c.Op, c.Type.String(), nil, vs)
	if err != nil {
		r.skip = err.Error()
		return r
	}
	r.shape = ShortShape(c.Op, cw.Shape)
	if parts := strings.Split(r.shape, ","); len(parts) > 3 { // a case workload: its size variables only
		var keep []string
		for _, p := range parts {
			if !strings.HasPrefix(p, "bytes_") && !strings.HasPrefix(p, "grid_") && !strings.HasPrefix(p, "lanes=") {
				keep = append(keep, p)
			}
		}
		r.shape = strings.Join(keep, ",")
	}
	ck, err := c.Build(cs).Build()
	if err != nil {
		b.Fatal(err)
	}
	vk, err := c.Build(vs).Build()
	if err != nil {
		b.Fatal(err)
	}
	p, err := cpu.Compile(ck)
	if err != nil {
		r.skip = "cpu: " + firstLine(err.Error())
		return r
	}
	bs := &bufferSet{d: d, byOp: map[string]*vulkan.Buffer{}}
	defer bs.release()
	x, err := prepareTwin(d, vk, vw, bs)
	if err != nil {
		r.skip = "vulkan: " + firstLine(err.Error())
		return r
	}
	var bufs [][]byte
	outs := map[string]int{}
	for i, kb := range ck.Buffers {
		op, ok := cw.operand(kb.Name)
		if !ok {
			b.Fatalf("%s: binding %s is not an operand of the workload", c.Name(), kb.Name)
		}
		bufs = append(bufs, append([]byte(nil), op.Data...))
		if op.Output {
			outs[op.Name] = i
		}
	}
	runCPU := func() time.Duration {
		start := time.Now()
		if err := p.Run(bufs, cw.TwinParams, cw.TwinGroups); err != nil {
			b.Fatalf("%s on cpu: %v", c.Name(), err)
		}
		return time.Since(start)
	}
	runCPU() // warm-up, and the output to check
	r.exact = "yes"
	if cases, err := c.Cases(cs); err == nil {
		for _, x := range cases {
			if x.Inexact() {
				r.exact = "inexact (declared)" // a device's own functions: judged by TestConformance
			}
		}
	}
	if cw.Want != nil && r.exact == "yes" {
		want, err := cw.Want()
		if err != nil {
			b.Fatal(err)
		}
		for name, w := range want {
			i, ok := outs[name]
			if !ok {
				continue
			}
			elem := "f32"
			if op, ok := cw.operand(name); ok && op.Elem != "" {
				elem = op.Elem
			}
			if diff := Compare(bufs[i], w, elem); !diff.Exact {
				r.exact = "NO"
				b.Errorf("%s on cpu at %s: output %s not bit-exact: %s", c.Name(), r.shape, name, diff.First)
			}
		}
	}
	var cpuT, vkT, ratios []float64
	for i := 0; i < pairs; i++ {
		br, err := d.Bench(x.p, x.bufs, x.push, x.groups, 1, 5)
		if err != nil {
			b.Fatalf("%s on vulkan: %v", c.Name(), err)
		}
		var total time.Duration
		n := 0
		for n < 3 || total < 100*time.Millisecond {
			total += runCPU()
			n++
		}
		ct := total.Seconds() / float64(n)
		vt := br.PerDispatch.Seconds()
		cpuT, vkT, ratios = append(cpuT, ct), append(vkT, vt), append(ratios, ct/vt)
	}
	r.cpuSec, r.vkSec, r.ratio = Summarize(cpuT).Median, Summarize(vkT).Median, Summarize(ratios)
	return r
}
