package engine

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// offByOneScale is a scale twin with a bug: y[i] = x[i+1] * s, so the last invocation loads
// x[n], one past the end.
func offByOneScale(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("scale", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	sc := k.Param("s", dsl.F32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() { y.Store(i, x.Load(i.Add(uint32(1))).Mul(sc)) })
	return k
}

// TestChecked: in checked mode (Options.Checked, or ONESOURCE_CHECKED=1) an out-of-bounds load
// of a twin fails the flush with the kernel's Go line, on every backend (Vulkan, the emulated
// CUDA and HIP devices, the cpu executor, which checks every access itself); correct twins give
// the oracle's bytes as unchecked ones do, over several flushes (the report slots are reused).
func TestChecked(t *testing.T) {
	for _, b := range []string{Vulkan, emulatedCUDA, emulatedHIP, CPU} {
		t.Run(b, func(t *testing.T) {
			t.Run("catches", func(t *testing.T) {
				e := openEngine(t, Options{Backend: b, Checked: true})
				if !e.Checked() {
					t.Fatal("Options.Checked: the engine says it is not checked")
				}
				e.twinBuild = func(c kernels.Cell) func(kernels.Schedule) *dsl.Kernel {
					if c.Op == "scale" {
						return offByOneScale
					}
					return nil
				}
				const n = 100
				x := upload(t, e, randF32(rand.New(rand.NewSource(1)), n, 1), n)
				y := zeros(t, e, n)
				if err := e.Scale(y, x, 2); err != nil {
					t.Fatal(err)
				}
				_, err := y.F32()
				if err == nil || !strings.Contains(err.Error(), "checked_test.go:") || !strings.Contains(err.Error(), "load x[100] outside its 100 elements") {
					t.Fatalf("the off-by-one twin in checked mode: %v; want an out-of-bounds error naming checked_test.go and x[100]", err)
				}
				if b != CPU && !strings.Contains(err.Error(), "scale/f32/"+e.Backend()) {
					t.Errorf("the error does not name the cell: %v", err)
				}
				t.Log(err)
			})
			t.Run("exact", func(t *testing.T) {
				t.Setenv(lower.CheckedEnv, "1")
				e := openEngine(t, Options{Backend: b})
				if !e.Checked() {
					t.Fatalf("%s=1: the engine is not checked", lower.CheckedEnv)
				}
				rng := rand.New(rand.NewSource(2))
				const rows, n = 3, 300
				xv, wv := randF32(rng, rows*n, 1), randF32(rng, n, 0.5)
				x, w := upload(t, e, xv, rows, n), upload(t, e, wv, n)
				want := make([]float32, rows*n)
				if err := oracle.RMSNormF32(want, xv, wv, n, 1e-5); err != nil {
					t.Fatal(err)
				}
				scaled := make([]float32, rows*n)
				if err := oracle.ScaleF32(scaled, want, 0.5); err != nil {
					t.Fatal(err)
				}
				for round := 0; round < 3; round++ {
					h, y := zeros(t, e, rows, n), zeros(t, e, rows, n)
					if err := e.RMSNorm(h, x, w, 1e-5); err != nil {
						t.Fatal(err)
					}
					if err := e.Scale(y, h, 0.5); err != nil {
						t.Fatal(err)
					}
					sameBits(t, "rms_norm then scale, checked", y, scaled)
				}
				for _, c := range e.Trace() {
					if b != CPU && !strings.Contains(c.Why, "bounds-checked") {
						t.Errorf("%s: the trace does not say the twin is bounds-checked: %s", c.Cell, c.Why)
					}
				}
			})
		})
	}
}

// BenchmarkChecked is the cost of checked mode: one decode-like step (rms_norm of 4096 values, a
// q4_0 matvec of 4096x4096, a residual add, the result read back: one flush) on an unchecked and
// a checked engine of the same backend, alternating step by step in one run so that load from
// other processes falls on both. It reports the median wall time of each side's step
// (unchecked-ms, checked-ms) and the median of the per-pair ratios checked/unchecked. On cpu both
// engines are the same (the executor checks every access anyway): its ratio is the noise. It
// asserts no speed (the README records what it measured).
func BenchmarkChecked(b *testing.B) {
	const n = 4096
	for _, backend := range []string{Vulkan, CPU} {
		b.Run(backend, func(b *testing.B) {
			steps := make([]func(), 2)
			for i, checked := range []bool{false, true} {
				e := openEngine(b, Options{Backend: backend, Checked: checked})
				e.SetTracing(false)
				rng := rand.New(rand.NewSource(1))
				wb, err := kernels.WeightRows(oracle.Q4_0, n, n, 1)
				if err != nil {
					b.Fatal(err)
				}
				W, err := e.Upload(oracle.Q4_0, wb, n, n)
				if err != nil {
					b.Fatal(err)
				}
				x, err := e.UploadF32(randF32(rng, n, 1), n)
				if err != nil {
					b.Fatal(err)
				}
				g, err := e.UploadF32(randF32(rng, n, 0.5), n)
				if err != nil {
					b.Fatal(err)
				}
				h, _ := e.NewTensor(oracle.F32, n)
				y, _ := e.NewTensor(oracle.F32, n)
				z, _ := e.NewTensor(oracle.F32, n)
				steps[i] = func() {
					for _, err := range []error{e.RMSNorm(h, x, g, 1e-5), e.MatVec(y, W, h), e.Add(z, y, x)} {
						if err != nil {
							b.Fatal(err)
						}
					}
					if _, err := z.F32(); err != nil {
						b.Fatal(err)
					}
				}
				steps[i]() // compile the pipelines
			}
			var times [2][]float64
			var ratios []float64
			b.ResetTimer()
			for it := range b.N {
				var d [2]float64
				for j := range 2 {
					side := (it + j) % 2 // alternate which side goes first
					t0 := time.Now()
					steps[side]()
					d[side] = float64(time.Since(t0).Nanoseconds())
				}
				times[0], times[1] = append(times[0], d[0]), append(times[1], d[1])
				ratios = append(ratios, d[1]/d[0])
			}
			median := func(v []float64) float64 {
				v = slices.Clone(v)
				slices.Sort(v)
				return v[len(v)/2]
			}
			b.ReportMetric(median(times[0])/1e6, "unchecked-ms")
			b.ReportMetric(median(times[1])/1e6, "checked-ms")
			b.ReportMetric(median(ratios), "checked/unchecked")
		})
	}
}
