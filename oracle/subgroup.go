package oracle

// Subgroup collectives: the meaning of dsl.Subgroup's reductions and scans. The lanes of a
// subgroup are taken in clusters of W consecutive lanes (W a power of two); each function below
// returns one result per lane of x (len(x) a multiple of W). The order of every combination is
// fixed by W alone, so it is the same on every device whatever its subgroup size:
//
//   - SubgroupReduce: the pairwise tree of the cluster in lane order, tree(a..b) =
//     op(tree(first half), tree(second half)); every lane gets it.
//   - SubgroupInclusiveScan: lane c of a cluster starts from its own value and, for each bit s =
//     1, 2, 4, ... set in c, prepends the tree of the s lanes just below its aligned block of s
//     lanes: prefix = op(tree(lower sibling block), prefix).
//   - SubgroupExclusiveScan: lane c > 0 gets the inclusive result of lane c-1; lane 0 the identity.
//
// op(lo, hi) always receives the lower lanes' value first; float max and min are MaxOp and MinOp
// (their NaN rules depend on the operand order).

// MinOp is the canonical float32 min: b < a ? b : a (if either operand is NaN the result is a).
func MinOp(a, b float32) float32 {
	if b < a {
		return b
	}
	return a
}

func subgroupTree[T any](x []T, op func(lo, hi T) T) T {
	if len(x) == 1 {
		return x[0]
	}
	h := len(x) / 2
	return op(subgroupTree(x[:h], op), subgroupTree(x[h:], op))
}

func subgroupCheck(n, w int) bool {
	return w >= 1 && w&(w-1) == 0 && n%w == 0
}

// SubgroupReduce returns, for every lane of x, the tree combination of its cluster of w lanes.
// It returns nil if w is not a power of two or does not divide len(x).
func SubgroupReduce[T any](x []T, w int, op func(lo, hi T) T) []T {
	if !subgroupCheck(len(x), w) {
		return nil
	}
	out := make([]T, len(x))
	for b := 0; b < len(x); b += w {
		t := subgroupTree(x[b:b+w], op)
		for j := b; j < b+w; j++ {
			out[j] = t
		}
	}
	return out
}

// SubgroupInclusiveScan returns the inclusive scan of every cluster of w lanes in the butterfly
// order above. It returns nil if w is not a power of two or does not divide len(x).
func SubgroupInclusiveScan[T any](x []T, w int, op func(lo, hi T) T) []T {
	if !subgroupCheck(len(x), w) {
		return nil
	}
	out := make([]T, len(x))
	for b := 0; b < len(x); b += w {
		for c := 0; c < w; c++ {
			p := x[b+c]
			for s := 1; s < w; s *= 2 {
				if c&s != 0 {
					lo := c&^(s-1) - s
					p = op(subgroupTree(x[b+lo:b+lo+s], op), p)
				}
			}
			out[b+c] = p
		}
	}
	return out
}

// SubgroupExclusiveScan returns, at lane c > 0 of every cluster, the inclusive scan at lane c-1,
// and identity at lane 0. It returns nil if w is not a power of two or does not divide len(x).
func SubgroupExclusiveScan[T any](x []T, w int, op func(lo, hi T) T, identity T) []T {
	in := SubgroupInclusiveScan(x, w, op)
	if in == nil {
		return nil
	}
	out := make([]T, len(x))
	for j := range out {
		if j%w == 0 {
			out[j] = identity
		} else {
			out[j] = in[j-1]
		}
	}
	return out
}
