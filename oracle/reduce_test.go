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

// treeReduce is an independent statement of the canonical order: lane partials as laneReduce's
// step 1, then a pairwise tree over the lanes in index order (left half op right half).
func opTreeReduce(x []float32, t int, identity float32, op func(a, b float32) float32) float32 {
	lanes := make([]float32, t)
	for l := range lanes {
		lanes[l] = identity
		for i := l; i < len(x); i += t {
			if i == l {
				lanes[l] = x[i]
			} else {
				lanes[l] = op(lanes[l], x[i])
			}
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

// subgroupReduce simulates a GPU with subgroup size sg: strides below sg within subgroups
// ("shuffles"), then strides from sg up across subgroups ("shared memory"), lower lane left.
func opSubgroupReduce(x []float32, t, sg int, identity float32, op func(a, b float32) float32) float32 {
	v := make([]float32, t)
	for l := range v {
		v[l] = identity
		for i := l; i < len(x); i += t {
			if i == l {
				v[l] = x[i]
			} else {
				v[l] = op(v[l], x[i])
			}
		}
	}
	step := func(s int) {
		nv := make([]float32, t)
		for l := range v {
			lo, hi := l, l^s
			if hi < lo {
				lo, hi = hi, lo
			}
			nv[l] = op(v[lo], v[hi])
		}
		v = nv
	}
	for s := 1; s < t && s < sg; s <<= 1 {
		step(s)
	}
	for s := sg; s < t; s <<= 1 {
		step(s)
	}
	return v[t-1] // every lane holds the result; read the last one
}

func opSame32(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func TestReductionsMatchIndependentOrders(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 31, 32, 33, 100, 4096, 4099} {
		x := opGauss(uint64(n)+7, n, 1000)
		for _, T := range []int{1, 2, 4, 8, 32, 64, 256} {
			for _, c := range []struct {
				name string
				got  float32
				id   float32
				op   func(a, b float32) float32
			}{
				{"sum", SumF32(x, T), 0, addOp},
				{"max", MaxF32(x, T), float32(math.Inf(-1)), MaxOp},
			} {
				want := opTreeReduce(x, T, c.id, c.op)
				if !opSame32(c.got, want) {
					t.Errorf("%s n=%d T=%d: %g, tree order gives %g", c.name, n, T, c.got, want)
				}
				for _, sg := range []int{1, 4, 16, 32, 64} {
					if g := opSubgroupReduce(x, T, sg, c.id, c.op); !opSame32(g, c.got) {
						t.Errorf("%s n=%d T=%d subgroup %d: %g != %g", c.name, n, T, sg, g, c.got)
					}
				}
			}
			sq := make([]float32, n)
			for i, v := range x {
				sq[i] = float32(v * v)
			}
			if a, b := SumSqF32(x, T), SumF32(sq, T); !opSame32(a, b) {
				t.Errorf("sumsq n=%d T=%d: %g != sum of rounded squares %g", n, T, a, b)
			}
			if a, b := DotF32(x, x, T), SumSqF32(x, T); !opSame32(a, b) {
				t.Errorf("dot(x,x) n=%d T=%d: %g != %g", n, T, a, b)
			}
		}
	}
}

func TestReductionSequentialT1(t *testing.T) {
	x := opGauss(3, 1000, 1)
	var acc float32 = x[0]
	for _, v := range x[1:] {
		acc += v
	}
	if got := SumF32(x, 1); got != acc {
		t.Errorf("T=1 sum %g != sequential %g", got, acc)
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
		{"sum empty", SumF32(nil, 4), 0},
		{"max empty", MaxF32(nil, 4), -inf},
		{"sum [-0] T=1 keeps -0", SumF32([]float32{negZero}, 1), negZero},
		{"sum [-0] T=2 meets identity +0", SumF32([]float32{negZero}, 2), 0},
		{"sum [-0,-0] T=2", SumF32([]float32{negZero, negZero}, 2), negZero},
		{"max [NaN,1] T=2: NaN on the left loses", MaxF32([]float32{nan, 1}, 2), 1},
		{"max [1,NaN] T=2: NaN on the right wins", MaxF32([]float32{1, nan}, 2), nan},
		{"max [NaN,1] T=1", MaxF32([]float32{nan, 1}, 1), 1},
		{"max [-0,+0] T=2", MaxF32([]float32{negZero, 0}, 2), 0},
		{"max [+0,-0] T=2", MaxF32([]float32{0, negZero}, 2), negZero},
		{"max all -Inf", MaxF32([]float32{-inf, -inf, -inf}, 4), -inf},
		{"sum Inf-Inf", SumF32([]float32{inf, -inf}, 2), nan},
		{"sum denormals kept", SumF32([]float32{0x1p-149, 0x1p-149, 0x1p-149}, 2), 0x1.8p-148},
		{"sumsq denormal squares: 2^-150 ties to even (0), 2^-148 kept", SumSqF32([]float32{0x1p-75, 0x1p-74}, 1), 0x1p-148},
		{"sumsq overflow", SumSqF32([]float32{2e19, 2e19}, 2), inf},
		{"dot order T=1", DotF32([]float32{1e8, -1e8, 1}, []float32{1, 1, 1}, 1), 1},
		{"dot order T=2", DotF32([]float32{1e8, -1e8, 1}, []float32{1, 1, 1}, 2), 0},
	}
	for _, c := range cases {
		if !opSame32(c.got, c.want) {
			t.Errorf("%s: got %g (%#x), want %g (%#x)", c.name, c.got, math.Float32bits(c.got), c.want, math.Float32bits(c.want))
		}
	}
}

func TestReductionBadLanesPanics(t *testing.T) {
	for _, T := range []int{0, -1, 3, 6, 100} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("T=%d: no panic", T)
				}
			}()
			SumF32([]float32{1}, T)
		}()
	}
}
