package cpu_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/internal/irtest"
)

// TestRandomKernels compiles and runs random kernels (internal/irtest: every value op on
// scalars and vectors, memory of every space, atomics, shuffles, nested control flow with
// break, continue and return, odd constants) on random inputs. A run may end, go out of bounds
// (an *OutOfBoundsError) or loop until its deadline; it must never panic or fail inside the
// executor.
func TestRandomKernels(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	ended, oob, timeouts := 0, 0, 0
	for seed := int64(0); seed < int64(n); seed++ {
		k, err := irtest.Random(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		p, err := cpu.Compile(k)
		if err != nil {
			t.Fatalf("seed %d: compile: %v", seed, err)
		}
		if cpu.RaceDetector {
			// Random kernels store to shared buffer elements from several workgroups without
			// atomics (a race on a device too): under the race detector one worker runs them.
			p = p.WithWorkers(1)
		}
		r := rand.New(rand.NewPCG(uint64(seed), 9))
		bufs := make([][]byte, len(p.Kernel().Buffers))
		for i, b := range p.Kernel().Buffers {
			bufs[i] = make([]byte, b.Elem.Stride()*(1+r.IntN(300)))
			for j := range bufs[i] {
				bufs[i][j] = byte(r.Uint32())
			}
		}
		params := make([]uint32, len(p.Kernel().Params))
		for i := range params {
			params[i] = r.Uint32() % 50
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err = p.RunContext(ctx, bufs, params, [3]uint32{uint32(1 + r.IntN(3)), 1, 1})
		cancel()
		var o *cpu.OutOfBoundsError
		switch {
		case err == nil:
			ended++
		case errors.As(err, &o):
			oob++
			if o.Pos.Line == 0 || !strings.Contains(err.Error(), ".go:") {
				t.Errorf("seed %d: out of bounds without a source line: %v", seed, err)
			}
		case errors.Is(err, context.DeadlineExceeded):
			timeouts++
		default:
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	t.Logf("%d kernels: %d ended, %d out of bounds, %d still running at their deadline", n, ended, oob, timeouts)
}
