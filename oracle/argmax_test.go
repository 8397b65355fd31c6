package oracle

import (
	"math"
	"math/rand"
	"testing"
)

// TestArgRule: the rule on hand-made inputs: ties go to the lowest index, a NaN beats every
// number and the first NaN wins, -0 and +0 tie, and no values give the identity.
func TestArgRule(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	negz := float32(math.Copysign(0, -1))
	for _, c := range []struct {
		name     string
		x        []float32
		max, min uint32
	}{
		{"plain", []float32{1, 5, 3, -2}, 1, 3},
		{"ties", []float32{2, 7, 7, 1, 1}, 1, 3},
		{"nan wins", []float32{1, 9, nan, 3, nan}, 2, 2},
		{"zeros tie", []float32{negz, 0, negz}, 0, 0},
		{"infinities", []float32{-inf, inf, -inf, inf}, 1, 0},
		{"all -inf", []float32{-inf, -inf}, 0, 0},
		{"none", nil, NoIndex, NoIndex},
	} {
		if got := ArgMax.Arg(c.x, 8); got.Index != c.max {
			t.Errorf("%s: argmax index %d, want %d", c.name, got.Index, c.max)
		}
		if got := ArgMin.Arg(c.x, 8); got.Index != c.min {
			t.Errorf("%s: argmin index %d, want %d", c.name, got.Index, c.min)
		}
	}
	if p := ArgMax.Arg(nil, 8); !math.IsInf(float64(p.Value), -1) {
		t.Errorf("argmax of nothing: %v", p)
	}
	// The winner's bits: the -0 at index 0, not a +0.
	if p := ArgMax.Arg([]float32{negz, 0}, 2); math.Float32bits(p.Value) != 0x80000000 {
		t.Errorf("argmax of (-0, +0) returns %#x, want -0's bits", math.Float32bits(p.Value))
	}
}

// TestArgIndependentOfOrder: the pair does not depend on the width or on a split into chunks
// (the two-pass form over several workgroups), over random values with many ties and NaNs;
// a plain scan agrees.
func TestArgIndependentOfOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 30; trial++ {
		n := 1 + rng.Intn(3000)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Intn(20) - 10) // many ties
			if rng.Intn(200) == 0 {
				x[i] = float32(math.NaN())
			}
		}
		for _, op := range []ArgOp{ArgMax, ArgMin} {
			scan := op.Identity
			for i, v := range x {
				scan = op.Combine(scan, Pair{v, uint32(i)})
			}
			for _, W := range []int{1, 8, 64, 256} {
				got := op.Arg(x, W)
				if got.Index != scan.Index {
					t.Fatalf("%s n=%d W=%d: index %d, a scan gives %d", op.Name, n, W, got.Index, scan.Index)
				}
				for _, chunk := range []int{1, 7, 256, 1024} {
					if two := op.Pairs(op.Chunks(x, chunk, W), W); two.Index != got.Index {
						t.Fatalf("%s n=%d W=%d chunk=%d: two passes give index %d, one %d", op.Name, n, W, chunk, two.Index, got.Index)
					}
				}
			}
		}
	}
}
