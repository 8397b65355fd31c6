package conformance

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/kernels"
)

// The kernel-only benchmark on the CPU backends (onesource bench -backend native|cpu): the twin
// at a schedule over the workload's operands as byte slices (made once), warm-up, then N
// dispatches timed by the wall clock, Repeats times; the median per dispatch, its GB/s of the
// op's minimal traffic, and the percentage of the machine's copy bandwidth measured on as many
// threads. The CPU time the dispatches took (the process's, divided by the threads) is reported
// too: on a shared machine the wall clock also counts the time other processes held the cores,
// the CPU time does not.

// HostBackends are the backends BenchHostCell runs: native CPU code and the Go executor.
var HostBackends = []string{"native", "cpu"}

// hostProgram is a twin compiled for a CPU backend.
type hostProgram interface {
	Run(bufs [][]byte, params []uint32, groups [3]uint32) error
}

// compileHost compiles k for backend ("native" or "cpu") on threads workers.
func compileHost(backend string, c kernels.Cell, s kernels.Schedule, threads int) (hostProgram, error) {
	k, err := c.Build(s).Build()
	if err != nil {
		return nil, fmt.Errorf("bench %s at %s: twin does not build: %w", c.Name(), s, err)
	}
	switch backend {
	case "native":
		p, err := native.Compile(k)
		if err != nil {
			return nil, fmt.Errorf("bench %s on native: %w", c.Name(), err)
		}
		return p.WithWorkers(threads), nil
	case "cpu":
		p, err := cpu.Compile(k)
		if err != nil {
			return nil, fmt.Errorf("bench %s on cpu: %w", c.Name(), err)
		}
		return p.WithWorkers(threads), nil
	}
	return nil, fmt.Errorf("bench: backend %q is not a CPU backend (want native or cpu)", backend)
}

// HostSubgroup is the subgroup size of a CPU backend's lowering (for default schedules).
func HostSubgroup(backend string) int {
	if backend == "native" {
		return native.VL
	}
	return cpu.SubgroupSize
}

// BenchHostCell benchmarks cell c's twin at schedule s on workload w on a CPU backend (native or
// cpu) with threads workers (0: one per CPU). The record's Seconds is the wall clock per dispatch
// (the median of the repeats), CPUSeconds the process's CPU time per dispatch and thread.
func BenchHostCell(backend string, c kernels.Cell, w *Workload, s kernels.Schedule, threads int, o BenchOptions) (*CellBench, error) {
	if threads <= 0 {
		threads = runtime.NumCPU()
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
	p, err := compileHost(backend, c, s, threads)
	if err != nil {
		return nil, err
	}
	k, _ := c.Build(s).Build()
	var bufs [][]byte
	outs := map[string]int{}
	for i, kb := range k.Buffers {
		op, ok := w.operand(kb.Name)
		if !ok {
			return nil, fmt.Errorf("bench %s: binding %s is not an operand of the workload", c.Name(), kb.Name)
		}
		bufs = append(bufs, append([]byte(nil), op.Data...))
		if op.Output {
			outs[op.Name] = i
		}
	}
	r := &CellBench{Cell: c.Name() + "/" + backend, Shape: ShortShape(c.Op, w.Shape), Schedule: s.String(), Bytes: w.Bytes(), Threads: threads}
	if err := p.Run(bufs, w.TwinParams, w.TwinGroups); err != nil {
		return nil, fmt.Errorf("bench %s on %s: %w", c.Name(), backend, err)
	}
	if w.Want != nil {
		want, err := w.Want()
		if err != nil {
			return nil, fmt.Errorf("bench %s: oracle: %w", c.Name(), err)
		}
		r.BitExact = true
		for name, b := range want {
			i, ok := outs[name]
			if !ok {
				return nil, fmt.Errorf("bench %s: the oracle's output %s is not a binding", c.Name(), name)
			}
			if !bytes.Equal(bufs[i], b) && !Compare(bufs[i], b, "f32").Exact {
				r.BitExact = false
			}
		}
	}
	for i := 0; i < o.Warmup; i++ {
		if err := p.Run(bufs, w.TwinParams, w.TwinGroups); err != nil {
			return nil, err
		}
	}
	var secs, cpus []float64
	for i := 0; i < o.Repeats; i++ {
		c0, t0 := cpuTime(), time.Now()
		for j := 0; j < o.N; j++ {
			if err := p.Run(bufs, w.TwinParams, w.TwinGroups); err != nil {
				return nil, err
			}
		}
		secs = append(secs, time.Since(t0).Seconds()/float64(o.N))
		if c1 := cpuTime(); c0 >= 0 && c1 >= 0 {
			cpus = append(cpus, (c1-c0).Seconds()/float64(o.N)/float64(threads))
		}
	}
	r.Seconds = Summarize(secs).Median
	r.GBps = float64(r.Bytes) / r.Seconds / 1e9
	if len(cpus) > 0 {
		r.CPUSeconds = Summarize(cpus).Median
	}
	if roof := HostCopyBandwidth(threads); roof > 0 {
		r.RooflineGBs = roof
		r.RooflinePct = 100 * r.GBps / roof
	}
	return r, nil
}

// HostCopyBandwidth is bytes read plus written per second by threads goroutines copying 64 MiB
// between two buffers of their own (one share each), the best of five copies; 0 when it cannot
// be measured. It is the roofline of the CPU backends (the Vulkan one copies on the device).
func HostCopyBandwidth(threads int) float64 {
	const size = 64 << 20
	threads = max(threads, 1)
	share := size / threads &^ 63
	if share == 0 {
		return 0
	}
	src := make([][]byte, threads)
	dst := make([][]byte, threads)
	for i := range src {
		src[i], dst[i] = make([]byte, share), make([]byte, share)
		for j := range src[i] {
			src[i][j] = byte(j)
		}
	}
	best := 0.0
	for rep := 0; rep < 5; rep++ {
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < threads; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				copy(dst[i], src[i])
			}()
		}
		wg.Wait()
		if bw := 2 * float64(share*threads) / time.Since(start).Seconds() / 1e9; bw > best {
			best = bw
		}
	}
	return best
}
