package oracle

import (
	"math"
	"math/rand"
	"testing"
)

// TestTopKRanks: the ranking on hand-made values (NaNs first, ties by index, padding past n),
// and chunk independence on random values with many ties.
func TestTopKRanks(t *testing.T) {
	nan := float32(math.NaN())
	got := TopK([]float32{3, nan, 7, 7, -1, nan, 3}, 9)
	want := []uint32{1, 5, 2, 3, 0, 6, 4, NoIndex, NoIndex}
	for i, p := range got {
		if p.Index != want[i] {
			t.Fatalf("TopK order %v, want indices %v", got, want)
		}
	}
	rng := rand.New(rand.NewSource(9))
	x := make([]float32, 5000)
	for i := range x {
		x[i] = float32(rng.Intn(50))
	}
	all := TopK(x, 40)
	for _, chunk := range []int{1, 33, 1024} {
		two := TopKPairs(TopKChunks(x, chunk, 40), 40)
		for i := range all {
			if two[i] != all[i] {
				t.Fatalf("chunk %d: pair %d is %+v, one pass %+v", chunk, i, two[i], all[i])
			}
		}
	}
}

// TestSample: draws worked out by hand. Two equal candidates split the mass evenly (c = 1, 2):
// u below 1/2 picks the first; a nucleus of 0.4 keeps the first alone; temperature 0, a NaN best
// value and padding behave as stated.
func TestSample(t *testing.T) {
	two := []Pair{{5, 10}, {5, 11}, {float32(math.Inf(-1)), NoIndex}}
	for _, c := range []struct {
		name          string
		cands         []Pair
		temp, topP, u float32
		want          int
	}{
		{"first half", two, 1, 1, 0.25, 0},
		{"second half", two, 1, 1, 0.75, 1},
		{"nucleus keeps the first", two, 1, 0.4, 0.99, 0},
		{"greedy", two, 0, 1, 0.99, 0},
		{"nan first", []Pair{{float32(math.NaN()), 3}, {1, 4}}, 1, 1, 0.9, 0},
		{"padding never picked", []Pair{{0, 1}, {float32(math.Inf(-1)), NoIndex}}, 1, 1, 0.999, 0},
		{"a masked candidate", []Pair{{0, 1}, {float32(math.Inf(-1)), 2}}, 1, 1, 0.999, 0},
	} {
		got, err := Sample(c.cands, c.temp, c.topP, c.u)
		if err != nil || got != c.want {
			t.Errorf("%s: picked %d (%v), want %d", c.name, got, err, c.want)
		}
	}
	// exp(0) = 1 and exp(-ln 3) = 1/3 at temperature 1: masses 3/4 and 1/4.
	p := []Pair{{0, 0}, {float32(-math.Log(3)), 1}}
	if got, _ := Sample(p, 1, 1, 0.70); got != 0 {
		t.Errorf("u=0.70 of masses 3/4, 1/4: picked %d, want 0", got)
	}
	if got, _ := Sample(p, 1, 1, 0.80); got != 1 {
		t.Errorf("u=0.80 of masses 3/4, 1/4: picked %d, want 1", got)
	}
}
