package kernels

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

func init() {
	Register(Cell{Op: "attn_decode", Type: oracle.F32, Build: AttnDecode, Cases: attnDecodeCases, Width: oracle.RowWidth})
}

// AttnDecode builds the decode-time attention of one query token with grouped-query attention
// (oracle.AttnDecodeF32) with s.Lanes invocations per workgroup, one workgroup per query head.
// Per head h, reading kv head g = h / (n_heads/n_kv_heads), in the oracle's op sequence:
//
//	s[t] = (serial dot of q[h] and k[t][g], from -0, increasing i) * scale
//	m = canonical max of s        e[t] = Exp(s[t] - m)        sum = canonical sum of e
//	out[h][d] = (serial sum over t of e[t]*v[t][g][d], from -0, increasing t) * (1/sum)
//
// The max and the sum are canonical reductions of width oracle.RowWidth over the n_kv positions
// (dsl.Canon laid out as s.Layout says, as softmax's). Three phases:
//
//  1. The max: the invocation that owns position t in the canonical layout computes its dot
//     alone (so its order is the serial one) and stores s[t] to scores.
//  2. The sum: the same invocation rereads s[t] (only what it wrote itself: the same layout) and
//     overwrites it with e[t]. A barrier then makes every e[t] visible to the workgroup.
//  3. The output: invocation l takes the elements d = l, l+T, ... (adjacent invocations read
//     adjacent values of v) and sums over every t serially, then multiplies by 1/sum.
//
// Bindings: 0 q (f32, n_heads*head_dim), 1 k (f32, the cache: position t's keys at t*kv_stride,
// kv head g's at t*kv_stride + g*head_dim; at least (n_kv-1)*kv_stride + n_kv_heads*head_dim
// values), 2 v (f32, the same layout as k), 3 out (f32, n_heads*head_dim), 4 scores (f32 scratch
// of at least (n_heads-1)*scores_stride + n_kv values: head h's row at h*scores_stride; it holds
// the weights e[t] afterwards, which are not part of the op's result). Parameters: head_dim
// (u32), n_heads (u32), n_kv_heads (u32, dividing n_heads), n_kv (u32, >= 1), kv_stride (u32,
// >= n_kv_heads*head_dim), scores_stride (u32, >= n_kv), scale (f32). Every index (n_kv*kv_stride
// and n_heads*scores_stride included) must fit a u32. Dispatch (n_heads, 1, 1).
func AttnDecode(s Schedule) *dsl.Kernel {
	T := s.Lanes
	k := dsl.New("attn_decode", T)
	q := k.Buffer("q", dsl.F32, dsl.Read)
	kc := k.Buffer("k", dsl.F32, dsl.Read)
	vc := k.Buffer("v", dsl.F32, dsl.Read)
	out := k.Buffer("out", dsl.F32, dsl.Write)
	scores := k.Buffer("scores", dsl.F32, dsl.ReadWrite)
	headDim := k.Param("head_dim", dsl.U32)
	nHeads := k.Param("n_heads", dsl.U32)
	nKVHeads := k.Param("n_kv_heads", dsl.U32)
	nKV := k.Param("n_kv", dsl.U32)
	kvStride := k.Param("kv_stride", dsl.U32)
	scoresStride := k.Param("scores_stride", dsl.U32)
	scale := k.Param("scale", dsl.F32)
	h := k.WorkgroupID(dsl.X).Named("head")
	g := h.Div(nHeads.Div(nKVHeads)).Named("kv_head")
	qRow := h.Mul(headDim).Named("q_row")
	kvOff := g.Mul(headDim).Named("kv_off")
	sRow := h.Mul(scoresStride).Named("scores_row")
	c := rowCanon(k, s)
	m := c.Max(nKV, func(t dsl.Value) dsl.Value {
		kt := t.Mul(kvStride).Add(kvOff)
		dot := k.Var("dot", negZero)
		k.For("i", uint32(0), headDim, uint32(1), func(i dsl.Value) {
			dot.Set(dot.Get().Add(q.Load(qRow.Add(i)).Mul(kc.Load(kt.Add(i)))))
		})
		st := dot.Get().Mul(scale)
		scores.Store(sRow.Add(t), st)
		return st
	}).Named("max")
	sum := c.Sum(nKV, func(t dsl.Value) dsl.Value {
		e := Exp(k, scores.Load(sRow.Add(t)).Sub(m))
		scores.Store(sRow.Add(t), e)
		return e
	})
	r := k.F32(1).Div(sum).Named("inv_sum")
	k.Barrier() // every e[t] of the head, stored by its owner, visible to every invocation
	k.For("d", k.LocalIndex(), headDim, uint32(T), func(d dsl.Value) {
		acc := k.Var("acc", negZero)
		vd := kvOff.Add(d)
		k.For("t", uint32(0), nKV, uint32(1), func(t dsl.Value) {
			acc.Set(acc.Get().Add(scores.Load(sRow.Add(t)).Mul(vc.Load(t.Mul(kvStride).Add(vd)))))
		})
		out.Store(qRow.Add(d), acc.Get().Mul(r))
	})
	return k
}

// attnShape is one attn_decode case: the op's parameters, the padding of each head's scores row
// beyond n_kv, the kinds (randRow) of q, k and v, and edits applied after they are drawn.
type attnShape struct {
	name      string
	p         oracle.AttnDecodeParams
	scoresPad int
	kq, kk    string // randRow kinds of q and of the keys
	kv        string // randRow kind of the values
	edit      func(a attnArrays)
}

// attnArrays gives a case's edits access to its inputs by head and position.
type attnArrays struct {
	p       oracle.AttnDecodeParams
	q, k, v []float32
}

// Q returns the index in q of head h, value i.
func (a attnArrays) Q(h, i int) int { return h*a.p.HeadDim + i }

// KV returns the index in k and v of position t, kv head g, value i.
func (a attnArrays) KV(t, g, i int) int { return t*a.p.KVStride + g*a.p.HeadDim + i }

// attnDecodeShapes are the attn_decode cases, the same at every schedule (T is the canonical
// width).
func attnDecodeShapes() []attnShape {
	const T = oracle.RowWidth
	p := func(headDim, heads, kvHeads, nKV, kvStride int, scale float32) oracle.AttnDecodeParams {
		return oracle.AttnDecodeParams{HeadDim: headDim, NHeads: heads, NKVHeads: kvHeads, NKV: nKV, KVStride: kvStride, Scale: scale}
	}
	return []attnShape{
		{name: "n1_mqa", p: p(64, 4, 1, 1, 64+8, 0.125)},
		{name: "odd_mha", p: p(5, 3, 3, 7, 15, 0.4472136), scoresPad: 2},
		{name: "gqa_d128_long", p: p(128, 8, 2, 3*T+5, 2*128+32, 0.088388346), scoresPad: 3},
		{name: "mha_d64", p: p(64, 4, 4, 300, 4*64, 0.125)},
		{name: "exact", p: p(32, 4, 1, T, 32, 0.17677669)},
		{name: "below", p: p(16, 2, 1, T-1, 16, 0.25), scoresPad: 1},
		{name: "order", p: p(64, 8, 2, 8*T+5, 2*64+4, 0.02), kq: "unit", kk: "unit", kv: "unit"}, // sums whose bits depend on the order
		{name: "wide", p: p(128, 4, 4, 100, 4*128, 0.088388346), kq: "normal", kk: "normal", kv: "normal"},
		{name: "zeros", p: p(16, 2, 1, 50, 16, 0.25), kq: "zeros", kk: "zeros", kv: "zeros"},
		{name: "tiny_values", p: p(32, 2, 2, 40, 64, 0.17677669), kv: "tiny"},
		{name: "scale_overflow", p: p(16, 4, 2, 37, 2*16+1, 3e37), edit: func(a attnArrays) {
			// Kv head 0 (heads 0, 1): q >= 1 and keys <= -1, so every dot is <= -16 and every
			// score -Inf, except position 0, whose keys are 0: score +0, weight 1, out = v[0].
			// Kv head 1 (heads 2, 3): scores up to about ±1e38, so s - m overflows to -Inf
			// (weight 0) far below the max.
			for h := 0; h < 2; h++ {
				for i := 0; i < 16; i++ {
					a.q[a.Q(h, i)] = 1 + float32(math.Abs(float64(a.q[a.Q(h, i)])))
				}
			}
			for t := 0; t < a.p.NKV; t++ {
				for i := 0; i < 16; i++ {
					j := a.KV(t, 0, i)
					a.k[j] = -1 - float32(math.Abs(float64(a.k[j])))
					if t == 0 {
						a.k[j] = 0
					}
				}
			}
		}},
		{name: "specials", p: p(8, 6, 6, T+5, 6*8+3, 1), edit: func(a attnArrays) {
			n := a.p.NKV
			a.q[a.Q(0, 2)] = nanF // head 0: NaN in q: NaN everywhere
			a.q[a.Q(1, 0)] = 1.5  // head 1: two -Inf scores (weight exactly 0), one of them
			a.k[a.KV(4, 1, 0)] = negInfF
			a.k[a.KV(9, 1, 0)] = negInfF
			a.v[a.KV(9, 1, 3)] = posInf // times its weight 0: NaN in out[1][3] only
			a.v[a.KV(20, 1, 5)] = maxSub
			a.q[a.Q(2, 1)] = 2 // head 2: a +Inf score: Inf - Inf = NaN
			a.k[a.KV(3, 2, 1)] = posInf
			for i := 0; i < 8; i++ { // head 3: scores exactly k[t][3][0]: a tie at the max 0,
				a.q[a.Q(3, i)] = 0 // the rest -87..-104 below: subnormal weights
			}
			a.q[a.Q(3, 0)] = 1
			for t := 0; t < n; t++ {
				a.k[a.KV(t, 3, 0)] = -87 - float32(t%18)
			}
			a.k[a.KV(0, 3, 0)], a.k[a.KV(n/2, 3, 0)] = 0, 0
			for i := 0; i < 8; i++ { // head 4: zero queries of both signs: uniform weights
				a.q[a.Q(4, i)] = 0
				if i%2 == 1 {
					a.q[a.Q(4, i)] = negZero
				}
			}
			a.v[a.KV(7, 4, 0)] = negZero
			a.q[a.Q(5, 0)] = 1e20 // head 5: one huge score; the largest values in v
			a.k[a.KV(0, 5, 0)] = 1e18
			a.v[a.KV(0, 5, 1)] = maxFinite
			a.v[a.KV(1, 5, 1)] = -maxFinite
			a.v[a.KV(2, 5, 2)] = minSub
		}},
	}
}

// attnCache draws a kv cache of p's layout: every position's n_kv_heads*head_dim values of the
// given kind, its padding (up to kv_stride) NaN, so that a kernel reading it shows.
func attnCache(rng *rand.Rand, p oracle.AttnDecodeParams, kind string) []float32 {
	used := p.NKVHeads * p.HeadDim
	c := make([]float32, p.NKV*p.KVStride)
	for t := 0; t < p.NKV; t++ {
		row := c[t*p.KVStride : (t+1)*p.KVStride]
		copy(row, randRow(rng, used, kind))
		for i := used; i < len(row); i++ {
			row[i] = nanF
		}
	}
	return c
}

func attnDecodeCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(106))
	kindOr := func(k string) string {
		if k == "" {
			return "unit"
		}
		return k
	}
	var out []Case
	for _, sh := range attnDecodeShapes() {
		p := sh.p
		a := attnArrays{p: p}
		a.q = randRow(rng, p.NHeads*p.HeadDim, kindOr(sh.kq))
		a.k = attnCache(rng, p, kindOr(sh.kk))
		a.v = attnCache(rng, p, kindOr(sh.kv))
		if sh.edit != nil {
			sh.edit(a)
		}
		want := make([]float32, len(a.q))
		if err := oracle.AttnDecodeF32(want, a.q, a.k, a.v, p); err != nil {
			return nil, fmt.Errorf("attn_decode %s: %w", sh.name, err)
		}
		scoresStride := p.NKV + sh.scoresPad
		out = append(out, Case{
			Name: fmt.Sprintf("%s_%dh%dkv%dx%d", sh.name, p.NHeads, p.NKVHeads, p.NKV, p.HeadDim),
			Buffers: [][]byte{f32Bytes(a.q), f32Bytes(a.k), f32Bytes(a.v), make([]byte, 4*len(a.q)),
				make([]byte, 4*p.NHeads*scoresStride)},
			Params: []uint32{uint32(p.HeadDim), uint32(p.NHeads), uint32(p.NKVHeads), uint32(p.NKV),
				uint32(p.KVStride), uint32(scoresStride), fbits(p.Scale)},
			Groups:  [3]uint32{uint32(p.NHeads), 1, 1},
			Outputs: []int{3},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}
