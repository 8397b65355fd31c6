package oracle

import (
	"fmt"
	"math"
)

// This file defines the canonical reductions (DESIGN.md contract 4). Every reducing op of the
// oracle (dot products, sums of squares, softmax max and sum, the per-block partials of the
// quantized matvec) is one of these, parameterized by the schedule's lane count T, so a backend
// that follows the same order gets the same bits whatever its subgroup size.
//
// The order, for n elements x[0..n-1] and T lanes (T a power of two, T >= 1):
//
//  1. Lane l (0 <= l < T) owns the elements l, l+T, l+2T, ... in ascending order. Its accumulator
//     starts AT its first element (acc = x[l], not identity+x[l], so a lone -0 stays -0) and each
//     further element is combined as acc = op(acc, x[i]). A lane that owns no element (l >= n)
//     starts at the identity: +0 for sums, -Inf for max.
//  2. The lanes combine by xor-butterfly with strides s = 1, 2, 4, ..., T/2, lowest first. At
//     stride s, lanes l and l^s both take op(v[lo], v[hi]) where lo = min(l, l^s) and
//     hi = max(l, l^s): the lower lane's value is always the left operand. After the last stride
//     every lane holds the result. (For the commutative IEEE add this is the same as a pairwise
//     tree over the lanes in index order; for max the operand order fixes NaN and signed zeros.)
//
// Sum uses the IEEE float32 add (round to nearest even). Max is max(a, b) = a > b ? a : b, with
// no special NaN handling: a NaN on the right wins, a NaN on the left loses to the right operand,
// and max(-0, +0) = +0 while max(+0, -0) = -0. Sums of products (dot, sum of squares) round each
// product to float32 first and then add: two roundings per element, never a fused multiply-add.

// checkLanes panics unless t is a power of two >= 1: T is a schedule constant, so a wrong one is
// a programming error, not a data error.
func checkLanes(t int) {
	if t < 1 || t&(t-1) != 0 {
		panic(fmt.Sprintf("oracle: lane count T=%d is not a power of two >= 1", t))
	}
}

// butterfly combines the T lane values in place with the canonical xor-butterfly and returns the
// result (every lane ends with the same value).
func butterfly(v []float32, op func(lo, hi float32) float32) float32 {
	t := len(v)
	next := make([]float32, t)
	for s := 1; s < t; s <<= 1 {
		for l := 0; l < t; l++ {
			p := l ^ s
			if l < p {
				next[l] = op(v[l], v[p])
			} else {
				next[l] = op(v[p], v[l])
			}
		}
		copy(v, next)
	}
	return v[0]
}

func addOp(a, b float32) float32 { return a + b }

// MaxOp is the canonical float32 max: a > b ? a : b. It is the definition every backend follows
// (not fmax, not IEEE maxNum): if either operand is NaN the result is b; max(-0, +0) = +0 and
// max(+0, -0) = -0.
func MaxOp(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// laneReduce runs step 1 of the canonical order: lane l folds term(i) for i = l, l+T, ... with op,
// starting at its first term; lanes without terms hold identity. Then step 2.
func laneReduce(n, t int, identity float32, term func(i int) float32, op func(a, b float32) float32) float32 {
	checkLanes(t)
	lanes := make([]float32, t)
	for l := 0; l < t; l++ {
		if l >= n {
			lanes[l] = identity
			continue
		}
		acc := term(l)
		for i := l + t; i < n; i += t {
			acc = op(acc, term(i))
		}
		lanes[l] = acc
	}
	return butterfly(lanes, op)
}

// SumF32 returns the canonical float32 sum of x with T lanes (see the order above). The sum of no
// elements is +0. It panics if T is not a power of two >= 1.
func SumF32(x []float32, T int) float32 {
	return laneReduce(len(x), T, 0, func(i int) float32 { return x[i] }, addOp)
}

// MaxF32 returns the canonical float32 max of x with T lanes, using MaxOp. The max of no
// elements is -Inf. It panics if T is not a power of two >= 1.
func MaxF32(x []float32, T int) float32 {
	return laneReduce(len(x), T, float32(math.Inf(-1)), func(i int) float32 { return x[i] }, MaxOp)
}

// SumSqF32 returns the canonical sum of squares of x with T lanes: each term is float32(x[i]*x[i])
// (one rounding), then the terms are summed as SumF32 sums (a second rounding per add). rms_norm
// uses it. It panics if T is not a power of two >= 1.
func SumSqF32(x []float32, T int) float32 {
	return laneReduce(len(x), T, 0, func(i int) float32 { return float32(x[i] * x[i]) }, addOp)
}

// DotF32 returns the canonical dot product of a and b with T lanes: each term is
// float32(a[i]*b[i]) (one rounding), then the terms are summed as SumF32 sums. It panics if the
// lengths differ or T is not a power of two >= 1.
func DotF32(a, b []float32, T int) float32 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("oracle: DotF32: lengths %d and %d differ", len(a), len(b)))
	}
	return laneReduce(len(a), T, 0, func(i int) float32 { return float32(a[i] * b[i]) }, addOp)
}
