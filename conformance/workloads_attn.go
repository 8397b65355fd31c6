package conformance

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// The attn_decode workload (its entry in opWorkloads):
//
//	op           variables (positional form first)            default
//	attn_decode  n_kv x heads x head_dim, kv_heads, scale     4096 x 32 x 128, kv_heads 8,
//	                                                          scale 1/sqrt(128)
//
// n_kv is the number of cached positions the token attends to (the context so far), heads the
// query heads and kv_heads the key/value heads (grouped-query attention: heads is a multiple of
// kv_heads; 32 and 8 are llama-3-8B's), head_dim the values per head.

// attnDecodeWorkload is the attention of one decoded token of a llama-style model: heads query
// heads of head_dim N(0,1) values attending to n_kv positions of a KV cache of kv_heads heads
// (keys and values N(0,1)), the cache compact (kv_stride = kv_heads*head_dim, one position's
// heads next to each other, as ggml's cache views one layer), the scores scratch one row of n_kv
// per head.
func attnDecodeWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, cache, err := sizes(sh, "n_kv", "kv_heads", "head_dim")
	if err != nil {
		return nil, err
	}
	nKV, kvHeads, headDim, scale := d[0], d[1], d[2], float32(sh["scale"])
	qd, qTotal, err := sizes(sh, "heads", "head_dim")
	if err != nil {
		return nil, err
	}
	heads := qd[0]
	if _, _, err := sizes(sh, "heads", "n_kv"); err != nil {
		return nil, err
	}
	if heads%kvHeads != 0 {
		return nil, fmt.Errorf("heads = %d is not a multiple of kv_heads = %d", heads, kvHeads)
	}
	if err := groupsOK(heads, "one per head"); err != nil {
		return nil, err
	}
	p := oracle.AttnDecodeParams{HeadDim: headDim, NHeads: heads, NKVHeads: kvHeads, NKV: nKV, KVStride: kvHeads * headDim, Scale: scale}
	rng := rngOf(sh, 16)
	q := acts(sh, rng, qTotal, 1, 0)
	k := acts(sh, rng, cache, 1, 0)
	v := acts(sh, rng, cache, 1, 0)
	return &Workload{
		Operands: []Operand{
			{Name: "q", Data: f32le(q)},
			{Name: "k", Data: f32le(k)},
			{Name: "v", Data: f32le(v)},
			{Name: "out", Data: make([]byte, 4*qTotal), Output: true, Elem: "f32"},
			{Name: "scores", Data: make([]byte, 4*heads*nKV)}, // scratch: written and read, not compared
		},
		TwinParams: []uint32{uint32(headDim), uint32(heads), uint32(kvHeads), uint32(nKV), uint32(p.KVStride),
			uint32(nKV), math.Float32bits(scale)},
		Grid: func(kernels.Schedule) [3]uint32 { return [3]uint32{uint32(heads), 1, 1} },
		Want: func() (map[string][]byte, error) {
			out := make([]float32, qTotal)
			if err := oracle.AttnDecodeF32(out, q, k, v, p); err != nil {
				return nil, err
			}
			return map[string][]byte{"out": f32le(out)}, nil
		},
	}, nil
}
