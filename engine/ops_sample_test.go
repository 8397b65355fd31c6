package engine

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/oracle"
)

// pairsOf reads an I32 tensor of (value bits, index) pairs.
func pairsOf(t *testing.T, x *Tensor) []oracle.Pair {
	t.Helper()
	b, err := x.Read()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]oracle.Pair, len(b)/8)
	for i := range out {
		out[i] = oracle.Pair{Value: math.Float32frombits(binary.LittleEndian.Uint32(b[8*i:])), Index: binary.LittleEndian.Uint32(b[8*i+4:])}
	}
	return out
}

// TestPickOps runs ArgMax, ArgMin and TopK in one pass (a vocabulary of 32000 logits) and in
// two (152000, a pass per chunk then one over their pairs), and Sample over TopK's candidates,
// on each backend, against the oracle: the same pairs and the same draw, bit for bit.
func TestPickOps(t *testing.T) { onEach(t, testPickOps) }

func testPickOps(t *testing.T, backend string) {
	e := openEngine(t, Options{Backend: backend})
	rng := rand.New(rand.NewSource(31))
	sizes := []int{32000, 152000}
	if backend == emulatedCUDA || backend == emulatedHIP {
		sizes = sizes[:1] // host emulation: one lane at a time
	}
	for _, n := range sizes {
		x := randF32(rng, n, 1)
		x[n/3], x[n-1] = 9, 9 // a tie at the max: the first wins
		logits := upload(t, e, x, n)
		one, err := e.NewTensor(I32, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			run  func(out, x *Tensor) error
			want oracle.Pair
		}{{e.ArgMax, oracle.ArgMax.Arg(x, oracle.ArgWidth)}, {e.ArgMin, oracle.ArgMin.Arg(x, oracle.ArgWidth)}} {
			if err := c.run(one, logits); err != nil {
				t.Fatal(err)
			}
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := pairsOf(t, one)[0]; got != c.want {
				t.Errorf("n=%d: %+v, the oracle %+v", n, got, c.want)
			}
		}
		const k = 40
		top, err := e.NewTensor(I32, 2*k)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.TopK(top, logits, k); err != nil {
			t.Fatal(err)
		}
		pick, err := e.NewTensor(I32, 2)
		if err != nil {
			t.Fatal(err)
		}
		u := float32(0.37)
		if err := e.Sample(pick, top, 0.8, 0.9, u); err != nil {
			t.Fatal(err)
		}
		if err := e.Flush(); err != nil {
			t.Fatal(err)
		}
		want := oracle.TopK(x, k)
		got := pairsOf(t, top)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("n=%d: top-k pair %d is %+v, the oracle's %+v", n, i, got[i], want[i])
			}
		}
		pos, _ := oracle.Sample(want, 0.8, 0.9, u)
		if p := pairsOf(t, pick)[0]; p.Index != want[pos].Index || math.Float32bits(p.Value) != uint32(pos) {
			t.Errorf("n=%d: drew position %d token %d, the oracle %d token %d", n, math.Float32bits(p.Value), p.Index, pos, want[pos].Index)
		}
	}
}
