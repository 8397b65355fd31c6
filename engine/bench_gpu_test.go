package engine

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"

	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// BenchmarkMatVecGPU times the engine's matvec twins at 4096x4096 on a CUDA or HIP GPU (skipped
// without one: the emulated devices time the emulation, not a kernel): each iteration one
// MatVec and a flush, the device time of the dispatch (CUDA or HIP events, Options.Timed)
// reported as device-ns/op and the op's minimal traffic over it as GB/s. scripts/gpu-check.sh
// runs it on the GPU day; it asserts no speed.
func BenchmarkMatVecGPU(b *testing.B) {
	const rows, n = 4096, 4096
	var gpus []string
	var why []string
	for backend, avail := range map[string]func() error{CUDA: cuda.Available, HIP: hip.Available} {
		if err := avail(); err != nil {
			why = append(why, err.Error())
		} else {
			gpus = append(gpus, backend)
		}
	}
	if len(gpus) == 0 {
		// Skipped here, not in sub-benchmarks: a benchmark whose every sub-benchmark skips
		// reports nothing at all through test2json.
		b.Skip(strings.Join(why, "; "))
	}
	slices.Sort(gpus)
	for _, backend := range gpus {
		b.Run(backend, func(b *testing.B) {
			e := openEngine(b, Options{Backend: backend, Timed: true})
			e.SetTracing(true)
			for _, typ := range []oracle.Type{oracle.F32, oracle.F16, oracle.Q4_0, oracle.Q8_0, oracle.Q4_K, oracle.Q6_K} {
				b.Run(typ.String(), func(b *testing.B) {
					wb, err := kernels.WeightRows(typ, rows, n, 1)
					if err != nil {
						b.Fatal(err)
					}
					W, err := e.Upload(typ, wb, rows, n)
					if err != nil {
						b.Fatal(err)
					}
					defer W.Release()
					x, err := e.UploadF32(randF32(rand.New(rand.NewSource(1)), n, 1), n)
					if err != nil {
						b.Fatal(err)
					}
					y, err := e.NewTensor(oracle.F32, rows)
					if err != nil {
						b.Fatal(err)
					}
					var device time.Duration
					bytes := 0
					for i := 0; i < b.N+1; i++ { // the first, untimed, compiles and warms up
						e.ResetTrace()
						if err := e.MatVec(y, W, x); err != nil {
							b.Fatal(err)
						}
						if err := e.Flush(); err != nil {
							b.Fatal(err)
						}
						if i == 0 {
							b.ResetTimer()
							continue
						}
						for _, c := range e.Trace() {
							device += c.Time
							bytes += c.Bytes
						}
					}
					if device > 0 {
						b.ReportMetric(float64(device.Nanoseconds())/float64(b.N), "device-ns/op")
						b.ReportMetric(float64(bytes)/float64(device.Nanoseconds()), "GB/s")
					}
				})
			}
		})
	}
}
