package cpu_test

import (
	"sync"
	"testing"

	"github.com/onesource-go/onesource/dsl"
)

// BenchmarkLaneOps measures the executor's cost per invocation and operation: a workgroup runs
// a chain of dependent integer and float operations (one varying operand, one constant), the
// kind of code the quantized formats' decoders are made of.
func BenchmarkLaneOps(b *testing.B) {
	for _, lanes := range []int{32, 128} {
		b.Run("lanes"+itoa(lanes), func(b *testing.B) {
			const chain = 256
			k := dsl.New("chain", lanes)
			x := k.Buffer("x", dsl.U32, dsl.Read)
			y := k.Buffer("y", dsl.U32, dsl.Write)
			g := k.GlobalID(dsl.X)
			v := x.Load(g)
			f := v.F32()
			for i := 0; i < chain; i++ {
				v = v.And(0xfff0fff).Add(uint32(i)).Shr(1).Xor(v)
				f = f.Mul(float32(1.0001)).Add(float32(0.5))
			}
			y.Store(g, v.Add(f.U32()))
			p := compile(b, k)
			const groups = 64
			in := make([]byte, 4*lanes*groups)
			out := make([]byte, 4*lanes*groups)
			p = p.WithWorkers(1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Run([][]byte{in, out}, nil, [3]uint32{groups, 1, 1}); err != nil {
					b.Fatal(err)
				}
			}
			ops := float64(b.N) * groups * float64(lanes) * chain * 6
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops, "ns/lane-op")
		})
	}
}

func itoa(n int) string {
	s := ""
	for n > 0 || s == "" {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}

// BenchmarkGoroutineBarrier measures the design the executor does not use: one goroutine per
// invocation of a workgroup, meeting at a reusable barrier (a mutex, a condition variable and a
// generation count). Every barrier and every subgroup shuffle would need such a meeting; in
// lockstep the same synchronization costs nothing (compare ns/round with BenchmarkLaneOps's
// ns/lane-op times the workgroup's invocations).
func BenchmarkGoroutineBarrier(b *testing.B) {
	for _, lanes := range []int{32, 128} {
		b.Run("lanes"+itoa(lanes), func(b *testing.B) {
			var (
				mu      sync.Mutex
				cond    = sync.NewCond(&mu)
				arrived int
				gen     int
			)
			wait := func() {
				mu.Lock()
				g := gen
				arrived++
				if arrived == lanes {
					arrived = 0
					gen++
					cond.Broadcast()
				} else {
					for g == gen {
						cond.Wait()
					}
				}
				mu.Unlock()
			}
			var wg sync.WaitGroup
			b.ResetTimer()
			for l := 0; l < lanes; l++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < b.N; i++ {
						wait()
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/round")
		})
	}
}
