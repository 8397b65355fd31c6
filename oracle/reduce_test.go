package oracle

import (
	"math"
	"testing"
)

// opSplitmix is the PRNG of the shared testdata (testdata/ggml/README.md).
type opSplitmix uint64

func (s *opSplitmix) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// gauss returns n values ~N(0, scale^2) (Irwin-Hall(4)), deterministic from seed.
func opGauss(seed uint64, n int, scale float64) []float32 {
	s := opSplitmix(seed)
	out := make([]float32, n)
	for i := range out {
		g := 0.0
		for k := 0; k < 4; k++ {
			g += float64(s.next()>>40) * 0x1p-24
		}
		out[i] = float32((g - 2) * 1.7320508075688772 * scale)
	}
	return out
}

// opTreeReduce is an independent statement of the canonical order: virtual lane v folds terms
// v, v+W, ... from identity, then a pairwise tree over the lanes in index order (left half op
// right half).
func opTreeReduce(x []float32, w int, identity float32, op func(a, b float32) float32) float32 {
	lanes := make([]float32, w)
	for l := range lanes {
		lanes[l] = identity
		for i := l; i < len(x); i += w {
			lanes[l] = op(lanes[l], x[i])
		}
	}
	var tree func(a []float32) float32
	tree = func(a []float32) float32 {
		if len(a) == 1 {
			return a[0]
		}
		return op(tree(a[:len(a)/2]), tree(a[len(a)/2:]))
	}
	return tree(lanes)
}

// opSchedule simulates a GPU schedule of the canonical reduction of width w: T invocations
// (T a power of two dividing w), S = w/T slots each, in the blocked or strided layout, on a
// device with subgroup size sg. Each invocation folds its slots' terms as it would read them
// (round by round, slot by slot); then the butterfly runs on (invocation, slot) pairs: strides
// that stay inside an invocation combine its slots, the others cross invocations (within a
// subgroup: "shuffles", across subgroups: "shared memory"), each stride in increasing order,
// lower virtual lane left.
func opSchedule(x []float32, w, T, sg int, blocked bool, identity float32, op func(a, b float32) float32) float32 {
	S := w / T
	vlane := func(l, j int) int { // virtual lane of invocation l, slot j
		if blocked {
			return l*S + j
		}
		return l + T*j
	}
	acc := make([][]float32, T)
	for l := range acc {
		acc[l] = make([]float32, S)
		for j := range acc[l] {
			acc[l][j] = identity
		}
	}
	for round := 0; round*w < len(x); round++ {
		for l := 0; l < T; l++ {
			for j := 0; j < S; j++ {
				if i := round*w + vlane(l, j); i < len(x) {
					acc[l][j] = op(acc[l][j], x[i])
				}
			}
		}
	}
	// where holds, for each virtual lane, its (invocation, slot).
	where := make([][2]int, w)
	for l := 0; l < T; l++ {
		for j := 0; j < S; j++ {
			where[vlane(l, j)] = [2]int{l, j}
		}
	}
	for s := 1; s < w; s <<= 1 {
		next := make([][]float32, T)
		for l := range next {
			next[l] = append([]float32(nil), acc[l]...)
		}
		for v := 0; v < w; v++ {
			lo, hi := v, v^s
			if hi < lo {
				lo, hi = hi, lo
			}
			a, b := where[lo], where[hi]
			me := where[v]
			next[me[0]][me[1]] = op(acc[a[0]][a[1]], acc[b[0]][b[1]])
		}
		acc = next
	}
	_ = sg // the subgroup size decides only how a cross-invocation stride is carried out
	return acc[T-1][S-1]
}

func opSame32(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// TestReductionsMatchIndependentOrders checks the canonical sum and max against the tree
// statement, and that every schedule (T from 1 to W, blocked and strided) of the same width
// gives the same bits, while a different width does not (so the schedule cannot matter and the
// width does).
func TestReductionsMatchIndependentOrders(t *testing.T) {
	negz := float32(math.Copysign(0, -1))
	for _, n := range []int{0, 1, 2, 3, 31, 32, 33, 100, 4096, 4099} {
		x := opGauss(uint64(n)+7, n, 1000)
		for _, W := range []int{1, 8, 64, 256} {
			for _, c := range []struct {
				name string
				got  float32
				id   float32
				op   func(a, b float32) float32
			}{
				{"sum", SumF32(x, W), negz, addOp},
				{"max", MaxF32(x, W), float32(math.Inf(-1)), MaxOp},
			} {
				want := opTreeReduce(x, W, c.id, c.op)
				if !opSame32(c.got, want) {
					t.Errorf("%s n=%d W=%d: %g, tree order gives %g", c.name, n, W, c.got, want)
				}
				for T := 1; T <= W; T *= 2 {
					for _, blocked := range []bool{true, false} {
						if g := opSchedule(x, W, T, 8, blocked, c.id, c.op); !opSame32(g, c.got) {
							t.Errorf("%s n=%d W=%d T=%d blocked=%v: %g != %g", c.name, n, W, T, blocked, g, c.got)
						}
					}
				}
			}
			sq := make([]float32, n)
			for i, v := range x {
				sq[i] = float32(v * v)
			}
			if a, b := SumSqF32(x, W), SumF32(sq, W); !opSame32(a, b) {
				t.Errorf("sumsq n=%d W=%d: %g != sum of rounded squares %g", n, W, a, b)
			}
			if a, b := DotF32(x, x, W), SumSqF32(x, W); !opSame32(a, b) {
				t.Errorf("dot(x,x) n=%d W=%d: %g != %g", n, W, a, b)
			}
		}
	}
	x := opGauss(1, 4099, 1)
	for i := range x {
		x[i] *= float32(int(1) << (i % 23)) // magnitudes far apart: the grouping shows in the bits
	}
	if opSame32(SumF32(x, 64), SumF32(x, 256)) {
		t.Error("the test input does not tell width 64 from width 256")
	}
}

func TestReductionSequentialW1(t *testing.T) {
	x := opGauss(3, 1000, 1)
	var acc float32 = x[0]
	for _, v := range x[1:] {
		acc += v
	}
	if got := SumF32(x, 1); got != acc {
		t.Errorf("W=1 sum %g != sequential %g", got, acc)
	}
}

func TestWidthTable(t *testing.T) {
	for _, c := range []struct {
		op   string
		t    Type
		want int
	}{
		{"rms_norm", F32, RowWidth}, {"softmax", F32, RowWidth}, {"add_rmsnorm", F32, RowWidth},
		{"matvec", F32, FloatDotWidth}, {"matvec", BF16, FloatDotWidth}, {"matvec", Q4_0, BlockDotWidth},
		{"matvec", Q6_K, BlockDotWidth}, {"matvec_q8", Q4_0, Q8_1DotWidth}, {"matvec_q8", Q4_K, Q8_KDotWidth},
	} {
		if got, ok := Width(c.op, c.t); !ok || got != c.want {
			t.Errorf("Width(%s, %s) = %d, %v; want %d", c.op, c.t, got, ok, c.want)
		}
	}
	for _, c := range []struct {
		op string
		t  Type
	}{{"add", F32}, {"rms_norm", Q4_0}, {"matvec_q8", F32}, {"matvec_q8", IQ2_XXS}} {
		if _, ok := Width(c.op, c.t); ok {
			t.Errorf("Width(%s, %s) claims a canonical width", c.op, c.t)
		}
	}
}

func TestReductionEdgeCases(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		got  float32
		want float32
	}{
		{"sum empty is -0", SumF32(nil, 4), negZero},
		{"max empty", MaxF32(nil, 4), -inf},
		{"sum [-0] W=1 keeps -0", SumF32([]float32{negZero}, 1), negZero},
		{"sum [-0] W=2 keeps -0 (empty lanes hold -0)", SumF32([]float32{negZero}, 2), negZero},
		{"sum [-0,+0] W=2", SumF32([]float32{negZero, 0}, 2), 0},
		{"max [NaN,1] W=2: NaN on the left loses", MaxF32([]float32{nan, 1}, 2), 1},
		{"max [1,NaN] W=2: NaN on the right wins", MaxF32([]float32{1, nan}, 2), nan},
		{"max [NaN,1] W=1: -Inf then NaN then 1", MaxF32([]float32{nan, 1}, 1), 1},
		{"max [NaN] W=1: the identity lets a NaN through", MaxF32([]float32{nan}, 1), nan},
		{"max [-0,+0] W=2", MaxF32([]float32{negZero, 0}, 2), 0},
		{"max [+0,-0] W=2", MaxF32([]float32{0, negZero}, 2), negZero},
		{"max all -Inf", MaxF32([]float32{-inf, -inf, -inf}, 4), -inf},
		{"sum Inf-Inf", SumF32([]float32{inf, -inf}, 2), nan},
		{"sum denormals kept", SumF32([]float32{0x1p-149, 0x1p-149, 0x1p-149}, 2), 0x1.8p-148},
		{"sumsq denormal squares: 2^-150 ties to even (0), 2^-148 kept", SumSqF32([]float32{0x1p-75, 0x1p-74}, 1), 0x1p-148},
		{"sumsq overflow", SumSqF32([]float32{2e19, 2e19}, 2), inf},
		{"dot order W=1", DotF32([]float32{1e8, -1e8, 1}, []float32{1, 1, 1}, 1), 1},
		{"dot order W=2", DotF32([]float32{1e8, -1e8, 1}, []float32{1, 1, 1}, 2), 0},
	}
	for _, c := range cases {
		if !opSame32(c.got, c.want) {
			t.Errorf("%s: got %g (%#x), want %g (%#x)", c.name, c.got, math.Float32bits(c.got), c.want, math.Float32bits(c.want))
		}
	}
}

func TestReductionBadWidthPanics(t *testing.T) {
	for _, W := range []int{0, -1, 3, 6, 100} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("W=%d: no panic", W)
				}
			}()
			SumF32([]float32{1}, W)
		}()
	}
}
