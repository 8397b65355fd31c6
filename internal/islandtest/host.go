package islandtest

import (
	"errors"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
)

// Emitter prints a built test kernel for one target.
type Emitter func(k *ir.Kernel) (string, error)

// RunHost runs every case through host execution (level H, EMULATION ON THE CPU) of the text
// emit prints for the kernels build makes (Kernel or SmallKernel), with subgroups of warp lanes,
// in ascending, descending and shuffled lane order, and fails t where d differs from the
// oracle's. It returns the number of runs; it skips t when host execution is unavailable.
func RunHost(t *testing.T, lang host.Lang, warp int, build func(accumulate bool) *dsl.Kernel, emit Emitter) int {
	t.Helper()
	opts := host.Options{SubgroupSize: warp, Timeout: 2 * time.Minute}
	if err := host.Available(opts); err != nil {
		t.Skipf("host execution (H) %v", err)
	}
	var srcs, names [2]string
	var wg uint32
	for i, acc := range []bool{false, true} {
		k, err := build(acc).Build()
		if err != nil {
			t.Fatal(err)
		}
		if srcs[i], err = emit(k); err != nil {
			t.Fatal(err)
		}
		names[i], wg = k.Name, k.WorkgroupSize[0]
	}
	n := 0
	for _, c := range Cases() {
		i := 0
		if c.Accumulate {
			i = 1
		}
		for _, order := range []host.Order{host.Ascending, host.Descending, host.Shuffled} {
			o := opts
			o.Order, o.Seed = order, 7
			out, err := host.Run(srcs[i], lang, names[i], c.Bufs(), nil, [3]uint32{c.Groups, 1, 1}, [3]uint32{wg, 1, 1}, o)
			if err != nil {
				var ee *host.ExecError
				if errors.As(err, &ee) {
					t.Fatalf("%s (order %d, warp %d): %v", c.Name, order, warp, err)
				}
				t.Fatal(err)
			}
			if d := Diff(out[2], c.Want); d != "" {
				t.Errorf("%s (order %d, warp %d): %s", c.Name, order, warp, d)
			}
			n++
		}
	}
	return n
}
