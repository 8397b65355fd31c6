package dsl_test

import (
	"encoding/binary"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// pairKernel reduces x (n values) to one pair per workgroup, written by invocation 0 to
// out[2g] (the value's bits) and out[2g+1] (the index): argmax, argmin, or ReducePairs with a
// combination whose result depends on the order (mix), over a Canon of width w on t invocations.
func pairKernel(t, w int, layout dsl.Layout, kind string) *dsl.Kernel {
	k := dsl.New("pairs_"+kind, t)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	n := k.Param("n", dsl.U32)
	c := k.Canon(w, layout)
	var p dsl.Pair
	switch kind {
	case "argmax":
		p = c.ArgMax(n, func(i dsl.Value) dsl.Value { return x.Load(i) })
	case "argmin":
		p = c.ArgMin(n, func(i dsl.Value) dsl.Value { return x.Load(i) })
	default:
		id := dsl.Pair{Value: k.F32(0), Index: k.U32(1)}
		p = c.ReducePairs(n, id, func(i dsl.Value) dsl.Pair { return dsl.Pair{Value: x.Load(i), Index: i} }, func(lo, hi dsl.Pair) dsl.Pair {
			return dsl.Pair{Value: lo.Value.Mul(0.5).Add(hi.Value), Index: lo.Index.Mul(3).Add(hi.Index)}
		})
	}
	k.If(k.LocalIndex().Eq(0), func() {
		out.Store(0, p.Value.Bitcast(dsl.U32))
		out.Store(1, p.Index)
	})
	return k
}

// mixOp is pairKernel's order-dependent combination, in Go.
func mixOp(lo, hi oracle.Pair) oracle.Pair {
	return oracle.Pair{Value: float32(lo.Value*0.5) + hi.Value, Index: lo.Index*3 + hi.Index}
}

// TestCanonPairs runs the index-carrying reductions on the cpu executor at several widths,
// workgroup sizes and both layouts (slots unrolled and in a loop), on values with ties and NaNs,
// and requires oracle's pair bit for bit: ArgMax and ArgMin against oracle.ArgMax and ArgMin,
// ReducePairs with an order-dependent combination against oracle.ReduceOf.
func TestCanonPairs(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	inputs := map[string][]float32{"none": nil}
	for _, n := range []int{1, 7, 300, 2000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Intn(9) - 4) // ties
			if rng.Intn(97) == 0 {
				x[i] = float32(math.NaN())
			}
		}
		inputs[string(rune('a'+len(inputs)))] = x
	}
	for _, s := range []struct {
		t, w   int
		layout dsl.Layout
	}{{1, 8, dsl.Blocked}, {8, 8, dsl.Blocked}, {8, 32, dsl.Strided}, {8, 256, dsl.Blocked}, {8, 256, dsl.Strided}, {64, 256, dsl.Blocked}, {64, 256, dsl.Strided}, {256, 256, dsl.Blocked}} {
		for _, kind := range []string{"argmax", "argmin", "mix"} {
			prog, err := cpu.Compile(pairKernel(s.t, s.w, s.layout, kind).MustBuild())
			if err != nil {
				t.Fatalf("%s T=%d W=%d %s: %v", kind, s.t, s.w, s.layout, err)
			}
			for name, x := range inputs {
				var want oracle.Pair
				switch kind {
				case "argmax":
					want = oracle.ArgMax.Arg(x, s.w)
				case "argmin":
					want = oracle.ArgMin.Arg(x, s.w)
				default:
					want = oracle.ReduceOf(len(x), s.w, oracle.Pair{Value: 0, Index: 1}, func(i int) oracle.Pair { return oracle.Pair{Value: x[i], Index: uint32(i)} }, mixOp)
				}
				xb := make([]byte, 4*max(1, len(x)))
				for i, v := range x {
					binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(v))
				}
				out := make([]byte, 8)
				if err := prog.Run([][]byte{xb, out}, []uint32{uint32(len(x))}, [3]uint32{1, 1, 1}); err != nil {
					t.Fatalf("%s T=%d W=%d %s on %s: %v", kind, s.t, s.w, s.layout, name, err)
				}
				gv, gi := binary.LittleEndian.Uint32(out), binary.LittleEndian.Uint32(out[4:])
				wv := math.Float32bits(want.Value)
				if gi != want.Index || (gv != wv && !(want.Value != want.Value && math.Float32frombits(gv) != math.Float32frombits(gv))) {
					t.Errorf("%s T=%d W=%d %s on %d values: (%#x, %d), want (%#x, %d)", kind, s.t, s.w, s.layout, len(x), gv, gi, wv, want.Index)
				}
			}
		}
	}
}

// TestCanonPairsErrors: a term whose index is not a u32, or whose value type differs from the
// identity's, is an error at the caller's line.
func TestCanonPairsErrors(t *testing.T) {
	k := dsl.New("bad", 8)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	n := k.Param("n", dsl.U32)
	c := k.Canon(8, dsl.Blocked)
	c.ReducePairs(n, dsl.Pair{Value: k.F32(0), Index: k.U32(0)}, func(i dsl.Value) dsl.Pair {
		return dsl.Pair{Value: x.Load(i), Index: i.I32()}
	}, func(lo, hi dsl.Pair) dsl.Pair { return lo })
	_, err := k.Build()
	if err == nil || !strings.Contains(err.Error(), "canon_pairs_test.go") || !strings.Contains(err.Error(), "i32 index") {
		t.Errorf("a term with an i32 index: %v", err)
	}
}
