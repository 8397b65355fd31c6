package oracle

import "math"

// Reductions that carry an index: argmax and argmin, and canonical reductions over (value,
// index) pairs (ReduceOf with Pair terms: the dsl's Canon.ReducePairs).
//
// The rule (ArgMaxOp, ArgMinOp): of two pairs, the one with the larger (argmax) or smaller
// (argmin) value wins; equal values (+0 and -0 are equal), the lower index wins; a NaN beats
// every number (the first NaN wins: among NaNs, the lower index). This is a strict total order on
// pairs with distinct indices, so the winner does not depend on the order of the combinations:
// ArgMaxF32 gives the same pair at every canonical width W and for every split of the values
// into chunks reduced separately (a pass per workgroup, then a pass over the partials), and a
// backend that follows the canonical order gets it a fortiori. The value returned is the
// winner's, bit for bit (a NaN's payload is the winner's too).

// Pair is a value with the index it came from.
type Pair struct {
	Value float32
	Index uint32
}

// NoIndex is the index of the identity pairs: what ArgMaxF32 and ArgMinF32 return for no values
// (with -Inf and +Inf).
const NoIndex = math.MaxUint32

// ArgWidth is the canonical width of the argmax and argmin cells (any width gives the same
// pair; see above).
const ArgWidth = 256

func isNaN32(x float32) bool { return x != x }

// ArgMaxOp combines two pairs, lo from the lower virtual lane: the larger value, else the lower
// index; a NaN beats every number.
func ArgMaxOp(lo, hi Pair) Pair {
	if takeHi(lo, hi, hi.Value > lo.Value) {
		return hi
	}
	return lo
}

// ArgMinOp is ArgMaxOp with the smaller value winning (a NaN still beats every number).
func ArgMinOp(lo, hi Pair) Pair {
	if takeHi(lo, hi, hi.Value < lo.Value) {
		return hi
	}
	return lo
}

// takeHi says whether hi wins over lo, better saying whether hi's value beats lo's (both
// numbers).
func takeHi(lo, hi Pair, better bool) bool {
	ln, hn := isNaN32(lo.Value), isNaN32(hi.Value)
	switch {
	case hn && !ln:
		return true
	case ln && !hn:
		return false
	case hn && ln, hi.Value == lo.Value:
		return hi.Index < lo.Index
	}
	return better
}

// ArgOp is argmax or argmin: its combination and the identity pair every pair beats.
type ArgOp struct {
	Name     string
	Combine  func(lo, hi Pair) Pair
	Identity Pair
}

// The two ArgOps.
var (
	ArgMax = ArgOp{"argmax", ArgMaxOp, Pair{float32(math.Inf(-1)), NoIndex}}
	ArgMin = ArgOp{"argmin", ArgMinOp, Pair{float32(math.Inf(1)), NoIndex}}
)

// Arg returns the pair op selects from x over W virtual lanes: ArgMax gives the largest value and
// its lowest index, ArgMin the smallest; a NaN first in both (the identity for no values).
func (op ArgOp) Arg(x []float32, W int) Pair {
	return ReduceOf(len(x), W, op.Identity, func(i int) Pair { return Pair{x[i], uint32(i)} }, op.Combine)
}

// Chunks is the first pass of op over several workgroups: the pair of each chunk of chunk
// consecutive values of x, with indices counted from the start of x.
func (op ArgOp) Chunks(x []float32, chunk, W int) []Pair {
	var out []Pair
	for lo := 0; lo < len(x); lo += chunk {
		hi := min(lo+chunk, len(x))
		out = append(out, ReduceOf(hi-lo, W, op.Identity, func(i int) Pair { return Pair{x[lo+i], uint32(lo + i)} }, op.Combine))
	}
	return out
}

// Pairs is the second pass: the pair op selects from pairs (the partials of Chunks).
func (op ArgOp) Pairs(p []Pair, W int) Pair {
	return ReduceOf(len(p), W, op.Identity, func(i int) Pair { return p[i] }, op.Combine)
}

// PairChunks is a later pass over pairs: the pair of each chunk of chunk consecutive pairs of p.
func (op ArgOp) PairChunks(p []Pair, chunk, W int) []Pair {
	var out []Pair
	for lo := 0; lo < len(p); lo += chunk {
		out = append(out, op.Pairs(p[lo:min(lo+chunk, len(p))], W))
	}
	return out
}
