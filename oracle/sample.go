package oracle

import (
	"fmt"
	"math"
	"sort"
)

// Sampling a token on the device: the top-k candidates of the logits, then a draw among them
// with temperature and top-p (nucleus), each with one stated meaning so that a seeded draw picks
// the same token on every backend.
//
// TopK is the first k pairs of the logits in ArgMax's order (ArgMaxOp): NaNs first (the lowest
// index first), then the larger value, equal values by the lower index. It is a ranking by a
// total order, so it does not depend on how the values are split over workgroups: the top-k of
// the top-k of each chunk is the top-k of all.
//
// Sample draws among candidates in that order (cands[0] the best) with u in [0, 1):
//
//	m = cands[0].Value; t = 1 / temp                   (f32 division)
//	e[i] = Exp((cands[i].Value - m) * t)               (the portable Exp; two roundings)
//	c[i] = c[i-1] + e[i], c[0] = e[0]                   (in order: a sequential sum)
//	j = the first i with c[i] >= topP * c[k-1]          (the nucleus; k-1 when none)
//	pick the first i <= j with c[i] > u * c[j]          (j when none)
//
// temp <= 0, a NaN or -Inf best value, or k == 1 pick cands[0] (greedy); a candidate with index NoIndex
// (fewer values than k) is never picked. The draw u comes from the caller (a seeded generator on
// the host): the same seed gives the same token on every backend, because the logits are the
// same bytes.

// TopK returns the first k pairs of x in ArgMax's order (fewer when x is shorter, padded with
// ArgMax.Identity up to k).
func TopK(x []float32, k int) []Pair {
	p := make([]Pair, len(x))
	for i, v := range x {
		p[i] = Pair{v, uint32(i)}
	}
	return topPairs(p, k)
}

// TopKPairs returns the first k of pairs in ArgMax's order (padded with ArgMax.Identity): the
// second pass over the top-k of several chunks.
func TopKPairs(p []Pair, k int) []Pair {
	return topPairs(append([]Pair(nil), p...), k)
}

// TopKChunks is the first pass over several workgroups: the TopK of each chunk of chunk
// consecutive values, indices counted from the start of x, k pairs a chunk.
func TopKChunks(x []float32, chunk, k int) []Pair {
	var out []Pair
	for lo := 0; lo < len(x); lo += chunk {
		hi := min(lo+chunk, len(x))
		part := make([]Pair, hi-lo)
		for i := range part {
			part[i] = Pair{x[lo+i], uint32(lo + i)}
		}
		out = append(out, topPairs(part, k)...)
	}
	return out
}

// ranksBefore reports whether a comes before b in ArgMax's order: a NaN before a number, then
// the larger value, then (equal values, +0 and -0 too, or two NaNs) the lower index.
func ranksBefore(a, b Pair) bool {
	an, bn := isNaN32(a.Value), isNaN32(b.Value)
	switch {
	case an != bn:
		return an
	case !an && a.Value != b.Value:
		return a.Value > b.Value
	}
	return a.Index < b.Index
}

func topPairs(p []Pair, k int) []Pair {
	sort.SliceStable(p, func(i, j int) bool { return ranksBefore(p[i], p[j]) })
	out := make([]Pair, k)
	for i := range out {
		out[i] = ArgMax.Identity
		if i < len(p) {
			out[i] = p[i]
		}
	}
	return out
}

// Sample picks one of cands (TopK's order) as the comment above defines; it returns the pick's
// index in cands.
func Sample(cands []Pair, temp, topP, u float32) (int, error) {
	k := len(cands)
	if k == 0 {
		return 0, fmt.Errorf("oracle: Sample: no candidates")
	}
	for k > 1 && cands[k-1].Index == NoIndex {
		k-- // padding: never picked
	}
	m := cands[0].Value
	if !(temp > 0) || m != m || math.IsInf(float64(m), -1) || k == 1 {
		return 0, nil
	}
	t := 1 / temp
	c := make([]float32, k)
	for i := 0; i < k; i++ {
		e := Exp(float32(cands[i].Value-m) * t)
		if i == 0 {
			c[i] = e
		} else {
			c[i] = c[i-1] + e
		}
	}
	j := k - 1
	cut := float32(topP * c[k-1])
	for i := 0; i < k; i++ {
		if c[i] >= cut {
			j = i
			break
		}
	}
	target := float32(u * c[j])
	for i := 0; i <= j; i++ {
		if c[i] > target {
			return i, nil
		}
	}
	return j, nil
}
