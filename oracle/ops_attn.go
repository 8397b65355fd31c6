package oracle

import (
	"fmt"
	"math"
)

// AttnDecodeParams describes one decode-time attention (AttnDecodeF32): one query token with
// NHeads heads attending to NKV positions of a KV cache of NKVHeads heads (grouped-query
// attention).
type AttnDecodeParams struct {
	HeadDim  int     // values per head (of q, of each key, of each value, of out)
	NHeads   int     // query heads
	NKVHeads int     // key/value heads; NHeads is a multiple of it
	NKV      int     // positions attended: 0 .. NKV-1 (at least 1)
	KVStride int     // values from one position of k (and v) to the next; >= NKVHeads*HeadDim
	Scale    float32 // the scores' scale, e.g. 1/sqrt(HeadDim)
}

// maxAttnDim bounds every parameter of AttnDecodeParams, so that the products of two that the
// checks form fit a 64-bit int.
const maxAttnDim = math.MaxInt32

// AttnDecodeF32 is the decode-time attention of a llama-style model for one query token with
// grouped-query attention: what ggml's flash_attn_ext (or its mul_mat, soft_max, mul_mat chain)
// computes for one token without mask, ALiBi or softcap, in onesource's own order. The layouts:
//
//	q    [NHeads][HeadDim]
//	k    [NKV][KVStride]: position t's keys start at t*KVStride; kv head g's at t*KVStride + g*HeadDim
//	v    the same layout as k
//	out  [NHeads][HeadDim]
//
// Query head h reads kv head g = h / (NHeads/NKVHeads). Per head h, the op sequence:
//
//	s[t]   = Dot_t * Scale                  for t = 0 .. NKV-1, one rounding
//	         Dot_t = serial sum over i = 0 .. HeadDim-1, in increasing i, from -0:
//	         acc = -0; acc = acc + float32(q[h][i] * k[t][g][i])   (each product rounded, then added: no FMA)
//	m      = MaxF32(s, RowWidth)            (the canonical max: Reduce with width RowWidth, identity -Inf, MaxOp)
//	e[t]   = Exp(s[t] - m)                  (the portable Exp, as SoftmaxF32)
//	sum    = SumF32(e, RowWidth)            (the canonical sum: width RowWidth, identity -0)
//	r      = 1 / sum                        (computed once, as SoftmaxF32)
//	out[h][d] = O_d * r                     for d = 0 .. HeadDim-1, one rounding
//	         O_d = serial sum over t = 0 .. NKV-1, in increasing t, from -0:
//	         acc = -0; acc = acc + float32(e[t] * v[t][g][d])
//
// The serial sums (Dot_t and O_d) have one order whatever the schedule as long as one
// invocation owns each of them; the max and sum are canonical reductions of width RowWidth (the
// softmax's, over the NKV scores). Special values follow SoftmaxF32 under IEEE rules: a score of
// -Inf gets weight exactly 0; a +Inf score gives Inf - Inf = NaN, and a NaN in q, k or s makes
// the head's sum, hence its whole output, NaN; a weight of 0 times an infinite value is NaN.
//
// The parameters must satisfy HeadDim, NHeads, NKVHeads, NKV >= 1, NHeads a multiple of NKVHeads,
// KVStride >= NKVHeads*HeadDim, len(q) = len(out) = NHeads*HeadDim, and k and v must hold every
// value read: at least (NKV-1)*KVStride + NKVHeads*HeadDim each. out must not overlap q, k or v.
// A violation is an error (the op never panics).
func AttnDecodeF32(out, q, k, v []float32, p AttnDecodeParams) error {
	if err := p.check(len(out), len(q), len(k), len(v)); err != nil {
		return err
	}
	D, group := p.HeadDim, p.NHeads/p.NKVHeads
	e := make([]float32, p.NKV)
	for h := 0; h < p.NHeads; h++ {
		g := h / group
		qh := q[h*D : (h+1)*D]
		for t := range e {
			kt := k[t*p.KVStride+g*D : t*p.KVStride+(g+1)*D]
			acc := negZero
			for i, qv := range qh {
				acc = acc + float32(qv*kt[i])
			}
			e[t] = float32(acc * p.Scale)
		}
		m := MaxF32(e, RowWidth)
		for t := range e {
			e[t] = Exp(e[t] - m)
		}
		r := 1 / SumF32(e, RowWidth)
		oh := out[h*D : (h+1)*D]
		for d := range oh {
			acc := negZero
			for t, et := range e {
				acc = acc + float32(et*v[t*p.KVStride+g*D+d])
			}
			oh[d] = float32(acc * r)
		}
	}
	return nil
}

// check validates p and the lengths of out, q, k and v (AttnDecodeF32's requirements).
func (p AttnDecodeParams) check(nOut, nQ, nK, nV int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("oracle: attn_decode: "+format, args...)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"head_dim", p.HeadDim}, {"n_heads", p.NHeads}, {"n_kv_heads", p.NKVHeads}, {"n_kv", p.NKV}, {"kv_stride", p.KVStride}} {
		if f.v < 1 || f.v > maxAttnDim {
			return bad("%s = %d: want 1 .. %d", f.name, f.v, maxAttnDim)
		}
	}
	if p.NHeads%p.NKVHeads != 0 {
		return bad("n_heads = %d is not a multiple of n_kv_heads = %d", p.NHeads, p.NKVHeads)
	}
	if p.KVStride < p.NKVHeads*p.HeadDim {
		return bad("kv_stride = %d is less than n_kv_heads*head_dim = %d", p.KVStride, p.NKVHeads*p.HeadDim)
	}
	want := p.NHeads * p.HeadDim
	if nQ != want {
		return bad("q has %d values, want n_heads*head_dim = %d", nQ, want)
	}
	if nOut != want {
		return bad("out has %d values, want n_heads*head_dim = %d", nOut, want)
	}
	need := (p.NKV-1)*p.KVStride + p.NKVHeads*p.HeadDim
	if nK < need {
		return bad("k has %d values, %d positions need %d", nK, p.NKV, need)
	}
	if nV < need {
		return bad("v has %d values, %d positions need %d", nV, p.NKV, need)
	}
	return nil
}
