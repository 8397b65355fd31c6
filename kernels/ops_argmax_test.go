package kernels

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/oracle"
)

// TestArgTwoPasses runs an argmax and an argmin over 10^6 values as a program would, on the cpu
// executor: the first pass over 245 workgroups, the second over its own output in one, and
// requires the one-pass oracle's pair (oracle.ArgOp.Arg over all the values) at two schedules.
func TestArgTwoPasses(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	x := randRow(rng, 1000000, "normal")
	x[500000], x[999999] = 1e9, 1e9 // a tie at the max: the first wins
	x[123] = float32(math.Inf(-1))
	for _, op := range []oracle.ArgOp{oracle.ArgMax, oracle.ArgMin} {
		want := op.Arg(x, oracle.ArgWidth)
		for _, s := range []Schedule{{Lanes: 64}, {Lanes: 256, Layout: 1}} {
			prog, err := cpu.Compile(Arg(op, s).MustBuild())
			if err != nil {
				t.Fatal(err)
			}
			const chunk = 4096
			g := (len(x) + chunk - 1) / chunk
			partials := make([]byte, 8*g)
			if err := prog.Run([][]byte{f32Bytes(x), partials}, []uint32{uint32(len(x)), chunk, 0}, [3]uint32{uint32(g), 1, 1}); err != nil {
				t.Fatal(err)
			}
			final := make([]byte, 8)
			if err := prog.Run([][]byte{partials, final}, []uint32{uint32(g), uint32(g), 1}, [3]uint32{1, 1, 1}); err != nil {
				t.Fatal(err)
			}
			got := oracle.Pair{Value: math.Float32frombits(binary.LittleEndian.Uint32(final)), Index: binary.LittleEndian.Uint32(final[4:])}
			if got != want {
				t.Errorf("%s at %s: two passes give %+v, the oracle %+v", op.Name, s, got, want)
			}
		}
	}
}
