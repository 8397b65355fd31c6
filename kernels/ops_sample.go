package kernels

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// Sampling on the device (oracle/sample.go): topk selects the best k (value, index) pairs of the
// logits in ArgMax's order, sample draws one of them with temperature and top-p, so a decode step
// reads back one token id, not the logits.

func init() {
	Register(Cell{Op: "topk", Type: oracle.F32, Width: oracle.ArgWidth, Build: TopK, Cases: topKCases})
	Register(Cell{Op: "sample", Type: oracle.F32, Build: SampleKernel, Cases: sampleCases})
}

// TopK builds top-k over chunks: workgroup g selects the best k items of the chunk of chunk
// items from g*chunk, in ArgMax's order (a NaN first; the larger value; ties to the lower
// index), as k pairs at out[2k*g ...] (value bits, index; the identity (-Inf, oracle.NoIndex)
// past the chunk's items). Pass p is a canonical argmax over the items that rank after pass
// p-1's pick (Canon.ArgPairs): k passes over the chunk.
//
// As Arg, the same kernel runs both passes over many values: with pairs = 0, x holds n f32
// values (their bits), with pairs = 1, n pairs (a first pass's out). The top-k of the chunks'
// top-k is the top-k of all, for every chunk and schedule.
//
// Bindings: 0 x (u32, n or 2n), 1 out (u32, 2k per workgroup). Parameters: n, chunk, k, pairs
// (u32). Dispatch (ceil(n/chunk), 1, 1).
func TopK(s Schedule) *dsl.Kernel {
	k := dsl.New("topk", s.Lanes)
	x := k.Buffer("x", dsl.U32, dsl.Read)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	n := k.Param("n", dsl.U32)
	chunk := k.Param("chunk", dsl.U32)
	kk := k.Param("k", dsl.U32)
	pairs := k.Param("pairs", dsl.U32).Ne(0)
	g := k.WorkgroupID(dsl.X)
	lo := g.Mul(chunk).Named("lo")
	count := k.Select(lo.Lt(n), n.Sub(lo).Min(chunk), k.U32(0)).Named("count")
	c := k.Canon(oracle.ArgWidth, s.Layout)
	lastV := k.Var("last", float32(0))
	lastI := k.Var("last_index", uint32(0))
	k.For("pass", uint32(0), kk, uint32(1), func(pass dsl.Value) {
		first := pass.Eq(0)
		p := c.ArgPairs(count, true, func(i dsl.Value) dsl.Pair {
			j := lo.Add(i)
			v := k.Var("item", x.Load(j))
			idx := k.Var("index", j)
			k.If(pairs, func() {
				v.Set(x.Load(j.Mul(2)))
				idx.Set(x.Load(j.Mul(2).Add(1)))
			})
			item := dsl.Pair{Value: v.Get().Bitcast(dsl.F32), Index: idx.Get()}
			// Only the items that rank after the last pick take part; the others are the
			// identity, which every item beats.
			in := first.Or(ranksBefore(k, dsl.Pair{Value: lastV.Get(), Index: lastI.Get()}, item))
			return dsl.Pair{
				Value: k.Select(in, item.Value, k.F32(float32(math.Inf(-1)))),
				Index: k.Select(in, item.Index, k.U32(oracle.NoIndex)),
			}
		})
		lastV.Set(p.Value)
		lastI.Set(p.Index)
		k.If(k.LocalIndex().Eq(0), func() {
			at := g.Mul(kk).Add(pass).Mul(2)
			out.Store(at, p.Value.Bitcast(dsl.U32))
			out.Store(at.Add(1), p.Index)
		})
	})
	return k
}

// ranksBefore is oracle's ranking: a before b when a is a NaN and b is not; of two numbers, when
// a is larger; of equal values (+0 and -0 too) or two NaNs, when its index is lower.
func ranksBefore(k *dsl.Kernel, a, b dsl.Pair) dsl.Value {
	an, bn := a.Value.Ne(a.Value), b.Value.Ne(b.Value)
	numbers := an.Or(bn).Not()
	lower := a.Index.Lt(b.Index)
	return an.And(bn.Not()).
		Or(numbers.And(a.Value.Gt(b.Value))).
		Or(an.And(bn).Or(numbers.And(a.Value.Eq(b.Value))).And(lower))
}

// SampleKernel builds sample: one invocation draws among k candidates (TopK's pairs, best
// first) exactly as oracle.Sample does, in order, and writes the pick's position in the
// candidates to out[0] and its index (the token) to out[1]. The other invocations of the one
// workgroup do nothing.
//
// Bindings: 0 cands (u32, 2k: value bits, index), 1 out (u32, 2). Parameters: k (u32), temp,
// top_p, u (f32: u the caller's draw in [0, 1)). Dispatch (1, 1, 1).
func SampleKernel(s Schedule) *dsl.Kernel {
	k := dsl.New("sample", s.Lanes)
	cands := k.Buffer("cands", dsl.U32, dsl.Read)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	kk := k.Param("k", dsl.U32)
	temp := k.Param("temp", dsl.F32)
	topP := k.Param("top_p", dsl.F32)
	u := k.Param("u", dsl.F32)
	value := func(i dsl.Value) dsl.Value { return cands.Load(i.Mul(2)).Bitcast(dsl.F32) }
	k.If(k.LocalIndex().Eq(0).And(kk.Gt(0)), func() {
		// Padding (index NoIndex) at the end is never picked.
		n := k.Var("n", kk)
		k.While(func() dsl.Value {
			return n.Get().Gt(1).And(cands.Load(n.Get().Sub(1).Mul(2).Add(1)).Eq(oracle.NoIndex))
		}, func() { n.Set(n.Get().Sub(1)) })
		m := value(k.U32(0))
		pick := k.Var("pick", uint32(0))
		greedy := temp.Gt(0).Not().Or(m.Ne(m)).Or(m.Eq(float32(math.Inf(-1)))).Or(n.Get().Eq(1))
		k.If(greedy.Not(), func() {
			t := k.F32(1).Div(temp)
			// The total first: the nucleus is a fraction of it.
			total := k.Var("total", float32(0))
			k.For("i", uint32(0), n.Get(), uint32(1), func(i dsl.Value) {
				e := value(i).Sub(m).Mul(t).Exp()
				total.Set(k.Select(i.Eq(0), e, total.Get().Add(e)))
			})
			cut := topP.Mul(total.Get())
			// j: the first i whose running sum reaches the cut; then the first i <= j whose
			// running sum passes u times the running sum at j.
			j := k.Var("j", n.Get().Sub(1))
			cj := k.Var("cj", total.Get())
			c := k.Var("c", float32(0))
			found := k.Var("found", false)
			k.For("i", uint32(0), n.Get(), uint32(1), func(i dsl.Value) {
				e := value(i).Sub(m).Mul(t).Exp()
				c.Set(k.Select(i.Eq(0), e, c.Get().Add(e)))
				k.If(found.Get().Not().And(c.Get().Ge(cut)), func() {
					j.Set(i)
					cj.Set(c.Get())
					found.Set(true)
				})
			})
			target := u.Mul(cj.Get())
			pick.Set(j.Get())
			done := k.Var("done", false)
			c.Set(float32(0))
			k.For("i", uint32(0), j.Get().Add(1), uint32(1), func(i dsl.Value) {
				e := value(i).Sub(m).Mul(t).Exp()
				c.Set(k.Select(i.Eq(0), e, c.Get().Add(e)))
				k.If(done.Get().Not().And(c.Get().Gt(target)), func() {
					pick.Set(i)
					done.Set(true)
				})
			})
		})
		out.Store(0, pick.Get())
		out.Store(1, cands.Load(pick.Get().Mul(2).Add(1)))
	})
	return k
}

// topKCases: the top 8 of a vocabulary of 32000 logits in one workgroup (with ties, NaNs and
// masked logits), k larger than n (padding), and the top 40 in two passes: over the vocabulary
// in 8 workgroups, over 10^5 values in 13.
//
// Each case keeps an invocation's loops within 65535 iterations in all at 8 lanes: Mesa's
// lavapipe (llvmpipe) ends every loop of an invocation past that many and the kernel's result
// is then wrong (measured: a counting loop of 70000 iterations stops at 65535). 40 passes over
// 32000 values at 8 lanes are 160000 iterations; the engine's 256 lanes make them 5000.
func topKCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(223))
	const vocab = 32000
	type shape struct {
		name     string
		x        []float32
		chunk, k int
	}
	x := randRow(rng, vocab, "normal")
	ties := randRow(rng, vocab, "normal")
	for i := 0; i < vocab; i += 997 {
		ties[i] = 3 // many equal values among the best
	}
	specials := randRow(rng, vocab, "normal")
	specials[777], specials[30000] = float32(math.NaN()), float32(math.NaN())
	for i := 0; i < vocab; i += 3 {
		specials[i] = float32(math.Inf(-1)) // masked
	}
	big := randRow(rng, 100000, "normal")
	shapes := []shape{
		{"vocab", x, vocab, 8},
		{"ties", ties, vocab, 8},
		{"specials", specials, vocab, 8},
		{"short", randRow(rng, 5, "normal"), 5, 8},
		{"pass1", x, 4000, 40},
		{"pass1", big, 8192, 16},
	}
	var out []Case
	for _, sh := range shapes {
		groups := (len(sh.x) + sh.chunk - 1) / sh.chunk
		parts := oracle.TopKChunks(sh.x, sh.chunk, sh.k)
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%d_k%d", sh.name, len(sh.x), sh.k),
			Buffers: [][]byte{f32Bytes(sh.x), make([]byte, 8*sh.k*groups)},
			Params:  []uint32{uint32(len(sh.x)), uint32(sh.chunk), uint32(sh.k), 0},
			Groups:  [3]uint32{uint32(groups), 1, 1},
			Outputs: []int{1}, Want: [][]byte{pairBytes(parts)}, Elem: []string{"u32"},
		})
		if sh.name == "pass1" {
			out = append(out, Case{
				Name:    fmt.Sprintf("pass2_%d_k%d", len(parts), sh.k),
				Buffers: [][]byte{pairBytes(parts), make([]byte, 8*sh.k)},
				Params:  []uint32{uint32(len(parts)), uint32(len(parts)), uint32(sh.k), 1},
				Groups:  [3]uint32{1, 1, 1},
				Outputs: []int{1}, Want: [][]byte{pairBytes(oracle.TopKPairs(parts, sh.k))}, Elem: []string{"u32"},
			})
		}
	}
	return out, nil
}

// sampleCases draw among the top 40 of random logits at several temperatures, nuclei and draws,
// and the greedy and special cases.
func sampleCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(227))
	logits := randRow(rng, 32000, "normal")
	top := oracle.TopK(logits, 40)
	nanFirst := append([]oracle.Pair{{Value: float32(math.NaN()), Index: 9}}, top[:5]...)
	padded := oracle.TopK([]float32{1, 2, 0.5}, 8)
	type draw struct {
		name          string
		cands         []oracle.Pair
		temp, topP, u float32
	}
	var draws []draw
	for i, temp := range []float32{0.7, 1, 1.5} {
		for j, topP := range []float32{0.9, 1, 0.05} {
			draws = append(draws, draw{fmt.Sprintf("t%d_p%d", i, j), top, temp, topP, rng.Float32()})
		}
	}
	draws = append(draws,
		draw{"greedy", top, 0, 0.9, 0.5},
		draw{"nan_first", nanFirst, 1, 1, 0.7},
		draw{"padded", padded, 1, 1, 0.999},
		draw{"last", top, 100, 1, 0.9999999},
	)
	var out []Case
	for _, d := range draws {
		pos, err := oracle.Sample(d.cands, d.temp, d.topP, d.u)
		if err != nil {
			return nil, err
		}
		out = append(out, Case{
			Name:    d.name,
			Buffers: [][]byte{pairBytes(d.cands), make([]byte, 8)},
			Params:  []uint32{uint32(len(d.cands)), fbits(d.temp), fbits(d.topP), fbits(d.u)},
			Groups:  [3]uint32{1, 1, 1},
			Outputs: []int{1}, Want: [][]byte{u32Bytes([]uint32{uint32(pos), d.cands[pos].Index})}, Elem: []string{"u32"},
		})
	}
	return out, nil
}
