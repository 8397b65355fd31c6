package oracle

import (
	"fmt"
	"math"
)

// This file defines the canonical reductions (the numeric contract, rule 4, in the package doc).
// Every reducing op of the oracle (dot products, sums of squares, softmax max and sum, the
// partials of both matvec paths) is one of these, over a width W that belongs to the op (the
// table Widths), never to a schedule: every schedule of every backend gets the same bits.
//
// The order, for n terms t[0..n-1] and width W (a power of two):
//
//  1. W virtual lanes. Virtual lane v (0 <= v < W) owns the terms v, v+W, v+2W, ... Its
//     accumulator starts at the identity (-0 for sums: -0 + x = x for every x, -0 and NaN
//     included; -Inf for max: MaxOp(-Inf, x) = x for every x) and folds its terms in ascending
//     order, acc = op(acc, t[i]). A virtual lane without terms keeps the identity.
//  2. The virtual lanes combine by xor-butterfly with strides s = 1, 2, 4, ..., W/2, lowest
//     first. At stride s, lanes v and v^s both take op(a[lo], a[hi]), lo = min(v, v^s) and
//     hi = max(v, v^s): the lower lane's value is always the left operand. After the last stride
//     every lane holds the result, which equals a pairwise tree over the lanes in index order
//     (for any op, since the left operand is always the lower half).
//
// A schedule with T invocations (T a power of two dividing W) holds S = W/T virtual lanes per
// invocation, its slots. Two layouts give the same bits:
//
//   - blocked: invocation l holds virtual lanes l*S .. l*S+S-1 (it reads S consecutive terms per
//     round: wide loads). Strides below S combine slots inside the invocation, the strides from S
//     up cross invocations (shuffles below the subgroup size, shared memory above).
//   - strided: invocation l holds virtual lanes l, l+T, ..., l+(S-1)T (adjacent invocations
//     read adjacent terms: coalesced scalar loads). Strides below T cross invocations, one
//     butterfly per slot; strides from T up combine slots inside the invocation.
//
// Sum uses the IEEE float32 add (round to nearest even). Max is MaxOp. Sums of products (dot, sum
// of squares) round each product to float32 first and then add: two roundings per term, never
// a fused multiply-add.

// The canonical widths of the ops (see the table in the package doc).
const (
	// RowWidth is W of the row reductions: rms_norm, add_rmsnorm and rms_norm_rope (sum of
	// squares) and softmax (max, then sum), over the row's values.
	RowWidth = 256
	// FloatDotWidth is W of the float-path matvec over f32, f16 and bf16 weights: one term per
	// value, float32(w[i]*x[i]).
	FloatDotWidth = 256
	// BlockDotWidth is W of the float-path matvec over quantized weights: one term per unit of
	// 32 values, the unit's partial (see ops_matvec.go).
	BlockDotWidth = 128
	// Q8_1DotWidth is W of the integer-path matvec with q8_1 activations: one term per 32-value
	// activation block, the block's partial.
	Q8_1DotWidth = 128
	// Q8_KDotWidth is W of the integer-path matvec with q8_K activations: one term per 256-value
	// super-block, the block's partial.
	Q8_KDotWidth = 64
)

// Width returns the canonical width W of op over type t (the weight type for matvec and
// matvec_q8, F32 for the row ops), and false for an op or type without a canonical reduction.
// Ops: "rms_norm", "add_rmsnorm", "rms_norm_rope", "softmax", "attn_decode", "argmax", "argmin", "topk",
// "matvec", "matvec_q8".
func Width(op string, t Type) (int, bool) {
	switch op {
	case "rms_norm", "add_rmsnorm", "rms_norm_rope", "softmax", "attn_decode":
		return RowWidth, t == F32
	case "argmax", "argmin", "topk":
		return ArgWidth, t == F32
	case "matvec":
		if _, ok := t.Info(); !ok {
			return 0, false
		}
		if isFloatType(t) {
			return FloatDotWidth, true
		}
		if _, ok := unitDecoders[t]; !ok {
			return 0, false
		}
		return BlockDotWidth, true
	case "matvec_q8":
		act, ok := ActivationType(t)
		if !ok {
			return 0, false
		}
		if act == Q8_K {
			return Q8_KDotWidth, true
		}
		return Q8_1DotWidth, true
	}
	return 0, false
}

// isFloatType reports whether t is a plain float type (one value per block, no scale).
func isFloatType(t Type) bool { return t == F32 || t == F16 || t == BF16 }

// checkWidth panics unless w is a power of two >= 1: W is an op's constant, so a wrong one is a
// programming error, not a data error.
func checkWidth(w int) {
	if w < 1 || w&(w-1) != 0 {
		panic(fmt.Sprintf("oracle: canonical width W=%d is not a power of two >= 1", w))
	}
}

// widthOK is checkWidth as an error, for the ops that return errors.
func widthOK(op string, w int) error {
	if w < 1 || w&(w-1) != 0 {
		return fmt.Errorf("oracle: %s: canonical width W=%d is not a power of two >= 1", op, w)
	}
	return nil
}

// butterfly combines the W lane values in place with the canonical xor-butterfly and returns the
// result (every lane ends with the same value).
func butterfly[T any](v []T, op func(lo, hi T) T) T {
	w := len(v)
	next := make([]T, w)
	for s := 1; s < w; s <<= 1 {
		for l := 0; l < w; l++ {
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

// negZero is -0, the identity of canonical sums.
var negZero = float32(math.Copysign(0, -1))

// Reduce is the canonical reduction of n terms over W virtual lanes (the order above): virtual
// lane v folds term(v), term(v+W), ... with op from identity, then the lanes combine by
// xor-butterfly. It is the one definition every reducing op of the oracle uses; a backend that
// follows it gets the same bits. It panics if W is not a power of two >= 1.
func Reduce(n, W int, identity float32, term func(i int) float32, op func(a, b float32) float32) float32 {
	return ReduceOf(n, W, identity, term, op)
}

// ReduceOf is Reduce over values of any type: the same order, for reductions whose terms are
// not single floats (the (value, index) pairs of ArgMax and ReducePairs).
func ReduceOf[T any](n, W int, identity T, term func(i int) T, op func(a, b T) T) T {
	checkWidth(W)
	lanes := make([]T, W)
	for v := range lanes {
		acc := identity
		for i := v; i < n; i += W {
			acc = op(acc, term(i))
		}
		lanes[v] = acc
	}
	return butterfly(lanes, op)
}

// CanonicalSum is Reduce with the IEEE add and identity -0: the canonical float32 sum of n terms
// over W virtual lanes.
func CanonicalSum(n, W int, term func(i int) float32) float32 {
	return Reduce(n, W, negZero, term, addOp)
}

// SumF32 returns the canonical float32 sum of x over W virtual lanes. The sum of no elements is
// -0. It panics if W is not a power of two >= 1.
func SumF32(x []float32, W int) float32 {
	return CanonicalSum(len(x), W, func(i int) float32 { return x[i] })
}

// MaxF32 returns the canonical float32 max of x over W virtual lanes, using MaxOp. The max of no
// elements is -Inf. It panics if W is not a power of two >= 1.
func MaxF32(x []float32, W int) float32 {
	return Reduce(len(x), W, float32(math.Inf(-1)), func(i int) float32 { return x[i] }, MaxOp)
}

// SumSqF32 returns the canonical sum of squares of x over W virtual lanes: each term is
// float32(x[i]*x[i]) (one rounding), then the terms are summed as SumF32 sums (a second rounding
// per add). rms_norm uses it with RowWidth. It panics if W is not a power of two >= 1.
func SumSqF32(x []float32, W int) float32 {
	return CanonicalSum(len(x), W, func(i int) float32 { return float32(x[i] * x[i]) })
}

// DotF32 returns the canonical dot product of a and b over W virtual lanes: each term is
// float32(a[i]*b[i]) (one rounding), then the terms are summed as SumF32 sums. The float-path
// matvec over f32, f16 and bf16 weights is DotF32 with FloatDotWidth. It panics if the lengths
// differ or W is not a power of two >= 1.
func DotF32(a, b []float32, W int) float32 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("oracle: DotF32: lengths %d and %d differ", len(a), len(b)))
	}
	return CanonicalSum(len(a), W, func(i int) float32 { return float32(a[i] * b[i]) })
}
