package conformance

import (
	"fmt"
	"os"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// ggmlMatVec are issue 29's figures for ggml's hand-written CPU kernels at 4096 rows of 14336, one
// token, 2 threads, measured from outside on this machine when it was quiet: the fastest and
// slowest of the runs, in milliseconds.
var ggmlMatVec = map[oracle.Type][2]float64{
	oracle.F32:  {5.5, 6.6},
	oracle.Q4_0: {1.69, 1.73},
	oracle.Q8_0: {1.52, 2.24},
	oracle.Q4_K: {1.13, 1.68},
	oracle.Q6_K: {1.34, 1.53},
}

// BenchmarkNativeVsGGML measures matvec at 4096x14336 on native CPU code, 2 threads, for the types
// of issue 29's table: the float path (op matvec, what the engine serves a model's weights with)
// and, for the quantized types, the integer path (matvec_q8: the activations quantized to q8,
// as ggml's kernels do it), each at native's default schedule. It prints the time per dispatch,
// GB/s of the op's minimal traffic, the CPU time per thread, and the ratio of speed to ggml's
// figures (ggml's time / ours: at least 0.5 is the goal), with the machine's copy
// bandwidth and the other processes' load as the conditions. On a shared machine the wall clock
// also counts the time other processes held the cores: the CPU time per thread is what a quiet
// machine would get closest to, and the figures are orders of magnitude until they are measured
// again there.
//
//	go test ./conformance -run '^$' -bench NativeVsGGML -benchtime 1x
func BenchmarkNativeVsGGML(b *testing.B) {
	if err := native.Available(); err != nil {
		b.Skipf("native CPU code unavailable: %v", err)
	}
	const threads = 2
	shape, err := ParseShape("matvec", "4096x14336")
	if err != nil {
		b.Fatal(err)
	}
	busy, _ := OtherLoad(500 * time.Millisecond)
	type row struct {
		r        *CellBench
		ggml     [2]float64
		op, typ  string
		schedule kernels.Schedule
	}
	var rows []row
	for _, op := range []string{"matvec", "matvec_q8"} {
		for _, t := range []oracle.Type{oracle.F32, oracle.Q4_0, oracle.Q8_0, oracle.Q4_K, oracle.Q6_K} {
			c, ok := kernels.Lookup(op, t)
			if !ok {
				continue
			}
			s := c.DefaultScheduleFor("native", native.VL)
			b.Run(op+"/"+t.String(), func(b *testing.B) {
				w, err := NewWorkload(op, t.String(), shape, s)
				if err != nil {
					b.Fatal(err)
				}
				r, err := BenchHostCell("native", c, w, s, threads, BenchOptions{N: 5, Repeats: 5})
				if err != nil {
					b.Fatal(err)
				}
				if !r.BitExact {
					b.Errorf("%s: not bit-exact at this shape", r.Cell)
				}
				b.ReportMetric(r.Seconds*1e3, "ms")
				b.ReportMetric(r.GBps, "GB/s")
				b.ReportMetric(r.CPUSeconds*1e3, "cpu-ms/thread")
				b.ReportMetric(ggmlMatVec[t][0]/(r.Seconds*1e3), "vs-ggml-fastest")
				rows = append(rows, row{r, ggmlMatVec[t], op, t.String(), s})
			})
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nmatvec 4096x14336 on native CPU code, %d threads (%s)\n", threads, native.CompilerOrWhy())
	fmt.Fprintln(tw, "op\ttype\tschedule\tms\tGB/s\tcpu ms/thread\tggml ms\tspeed vs ggml (wall)\tspeed vs ggml (cpu)")
	for _, x := range rows {
		wall, cpu := x.r.Seconds*1e3, x.r.CPUSeconds*1e3
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f-%.2f\t%.2f-%.2f\t%.2f-%.2f\n", x.op, x.typ, x.schedule, wall, x.r.GBps, cpu,
			x.ggml[0], x.ggml[1], x.ggml[0]/wall, x.ggml[1]/wall, x.ggml[0]/cpu, x.ggml[1]/cpu)
	}
	tw.Flush()
	if len(rows) > 0 {
		fmt.Printf("conditions: copy bandwidth %.1f GB/s on %d threads; other processes kept %.1f cores busy while the run began (the machine has 2)\n",
			rows[0].r.RooflineGBs, threads, busy)
	}
}
