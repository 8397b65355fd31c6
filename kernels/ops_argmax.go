package kernels

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

func init() {
	for _, op := range []oracle.ArgOp{oracle.ArgMax, oracle.ArgMin} {
		Register(Cell{
			Op: op.Name, Type: oracle.F32, Width: oracle.ArgWidth,
			Build: func(s Schedule) *dsl.Kernel { return Arg(op, s) },
			Cases: func(s Schedule) ([]Case, error) { return argCases(op, s) },
		})
	}
}

// Arg builds argmax or argmin (op) over chunks: workgroup g reduces the chunk of chunk
// consecutive items from g*chunk to the (value, index) pair op selects (dsl.Canon.ArgPairs:
// the larger, or smaller, value; ties to the lower index; a NaN beats every number), written to
// out[2g] (the value's bits) and out[2g+1] (the index; oracle.NoIndex for an empty chunk).
//
// The same kernel runs both passes of an argmax over many values: with pairs = 0, x holds n f32
// values (as their bits) and an item's index is its position; with pairs = 1, x holds n pairs
// (value bits, index: the first pass's out) and the result keeps their indices. A dispatch of one
// workgroup (chunk >= n) gives the answer; for more, a second dispatch with pairs = 1 over the
// first's output. The rule is a total order, so the answer is the same for every chunk and
// schedule: oracle.ArgOp.Arg's.
//
// Bindings: 0 x (u32, n or 2n), 1 out (u32, 2 per workgroup). Parameters: n, chunk, pairs (u32).
// Dispatch (ceil(n/chunk), 1, 1).
func Arg(op oracle.ArgOp, s Schedule) *dsl.Kernel {
	k := dsl.New(op.Name, s.Lanes)
	x := k.Buffer("x", dsl.U32, dsl.Read)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	n := k.Param("n", dsl.U32)
	chunk := k.Param("chunk", dsl.U32)
	pairs := k.Param("pairs", dsl.U32).Ne(0)
	g := k.WorkgroupID(dsl.X)
	lo := g.Mul(chunk).Named("lo")
	count := k.Select(lo.Lt(n), n.Sub(lo).Min(chunk), k.U32(0)).Named("count")
	c := k.Canon(oracle.ArgWidth, s.Layout)
	p := c.ArgPairs(count, op.Name == "argmax", func(i dsl.Value) dsl.Pair {
		j := lo.Add(i)
		v := k.Var("item", x.Load(j))
		idx := k.Var("index", j)
		k.If(pairs, func() {
			v.Set(x.Load(j.Mul(2)))
			idx.Set(x.Load(j.Mul(2).Add(1)))
		})
		return dsl.Pair{Value: v.Get().Bitcast(dsl.F32), Index: idx.Get()}
	})
	k.If(k.LocalIndex().Eq(0), func() {
		out.Store(g.Mul(2), p.Value.Bitcast(dsl.U32))
		out.Store(g.Mul(2).Add(1), p.Index)
	})
	return k
}

// pairBytes lays pairs out as Arg's out: value bits and index, little-endian u32s.
func pairBytes(ps []oracle.Pair) []byte {
	w := make([]uint32, 0, 2*len(ps))
	for _, p := range ps {
		w = append(w, math.Float32bits(p.Value), p.Index)
	}
	return u32Bytes(w)
}

// argCases: one-workgroup argmaxes over a vocabulary of 32000 logits with ties, NaNs, infinities
// and signed zeros; the two passes over 10^6 values in several workgroups (the second over the
// oracle's partials of the first); ragged chunks and empty ones.
func argCases(op oracle.ArgOp, s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(211))
	const vocab = 32000
	logits := func() []float32 { return randRow(rng, vocab, "normal") }
	type shape struct {
		name   string
		x      []float32
		chunk  int
		groups int // dispatched workgroups (0: ceil(n/chunk)); more than needed get empty chunks
	}
	var shapes []shape
	add := func(name string, x []float32, chunk, groups int) {
		shapes = append(shapes, shape{name, x, chunk, groups})
	}
	add("vocab", logits(), vocab, 0)
	x := logits()
	for _, i := range []int{17, 9000, 31999} { // the best value three times: the first wins
		x[i] = 1e6
	}
	add("ties", x, vocab, 0)
	x = logits()
	x[12345], x[20000] = float32(math.NaN()), float32(math.NaN())
	add("nan", x, vocab, 0)
	x = make([]float32, 1000)
	for i := range x {
		x[i] = float32(math.Inf(-1 + 2*(i%2))) // alternating -Inf, +Inf
	}
	add("infinities", x, 1000, 0)
	x = make([]float32, 300)
	for i := range x {
		if i%3 == 0 {
			x[i] = float32(math.Copysign(0, -1))
		}
	}
	add("zeros", x, 300, 0)
	add("ragged", logits()[:777], 100, 10) // the last two workgroups have nothing
	big := randRow(rng, 1000000, "normal")
	big[654321] = 1e7
	big[987654] = 1e7
	add("million_pass1", big, 4096, 0)
	var out []Case
	for _, sh := range shapes {
		groups := sh.groups
		if groups == 0 {
			groups = (len(sh.x) + sh.chunk - 1) / sh.chunk
		}
		want := make([]oracle.Pair, groups)
		parts := op.Chunks(sh.x, sh.chunk, oracle.ArgWidth)
		for g := range want {
			want[g] = op.Identity
			if g < len(parts) {
				want[g] = parts[g]
			}
		}
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%d", sh.name, len(sh.x)),
			Buffers: [][]byte{f32Bytes(sh.x), make([]byte, 8*groups)},
			Params:  []uint32{uint32(len(sh.x)), uint32(sh.chunk), 0},
			Groups:  [3]uint32{uint32(groups), 1, 1},
			Outputs: []int{1}, Want: [][]byte{pairBytes(want)}, Elem: []string{"u32"},
		})
		if sh.name == "million_pass1" {
			// The second pass, over the oracle's partials of the first, in four workgroups
			// (a third pass of one would finish it; any split gives the same pair).
			const chunk2 = 64
			g2 := (len(parts) + chunk2 - 1) / chunk2
			out = append(out, Case{
				Name:    fmt.Sprintf("million_pass2_%d", len(parts)),
				Buffers: [][]byte{pairBytes(parts), make([]byte, 8*g2)},
				Params:  []uint32{uint32(len(parts)), chunk2, 1},
				Groups:  [3]uint32{uint32(g2), 1, 1},
				Outputs: []int{1}, Want: [][]byte{pairBytes(op.PairChunks(parts, chunk2, oracle.ArgWidth))}, Elem: []string{"u32"},
			})
		}
	}
	return out, nil
}
