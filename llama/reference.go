package llama

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/oracle"
)

// Reference is the decoder computed on the CPU by package oracle's ops, in the order Model runs
// them: the judge of the engine's logits.
type Reference struct {
	Config Config
	Ctx    int
	w      *Weights
	kc, vc [][]float32 // per layer: Ctx x KVDim
}

// NewReference returns the CPU decoder of weights w with a KV cache of ctx positions.
func NewReference(c Config, w *Weights, ctx int) *Reference {
	r := &Reference{Config: c, Ctx: ctx, w: w}
	for range w.Layers {
		r.kc = append(r.kc, make([]float32, ctx*c.KVDim()))
		r.vc = append(r.vc, make([]float32, ctx*c.KVDim()))
	}
	return r
}

// Step is Model.Step on the CPU.
func (r *Reference) Step(token int32, pos int) ([]float32, error) {
	c, w := r.Config, r.w
	if pos < 0 || pos >= r.Ctx {
		return nil, fmt.Errorf("llama: position %d is outside the KV cache's %d positions", pos, r.Ctx)
	}
	if token < 0 || int(token) >= c.Vocab {
		return nil, fmt.Errorf("llama: token %d is outside the vocabulary of %d", token, c.Vocab)
	}
	var err error
	check := func(e error) {
		if err == nil && e != nil {
			err = e
		}
	}
	mv := func(wt Weight, x []float32) []float32 {
		y := make([]float32, wt.Rows)
		check(oracle.MatVec(wt.Type, wt.Data, x, y))
		return y
	}
	norm := func(x []float32, wt Weight) []float32 {
		y := make([]float32, len(x))
		check(oracle.RMSNormF32(y, x, f32s(wt.Data), c.Dim, c.Eps))
		return y
	}
	rope := func(x []float32) []float32 {
		y := make([]float32, len(x))
		check(oracle.RopeF32(y, x, []int32{int32(pos)}, oracle.RopeParams{HeadDim: c.HeadDim, NDims: c.HeadDim &^ 1, Base: c.RopeBase, Mode: oracle.RopeNormal}))
		return y
	}
	add := func(a, b []float32) []float32 {
		y := make([]float32, len(a))
		check(oracle.AddF32(y, a, b))
		return y
	}
	x := make([]float32, c.Dim)
	check(oracle.GetRows(w.TokenEmbd.Type, w.TokenEmbd.Data, c.Dim, []int32{token}, x))
	kv := c.KVDim()
	for i, l := range w.Layers {
		h := norm(x, l.AttnNorm)
		q := rope(mv(l.Q, h))
		copy(r.kc[i][pos*kv:], rope(mv(l.K, h)))
		copy(r.vc[i][pos*kv:], mv(l.V, h))
		att := make([]float32, c.Dim)
		check(oracle.AttnDecodeF32(att, q, r.kc[i], r.vc[i], oracle.AttnDecodeParams{
			HeadDim: c.HeadDim, NHeads: c.Heads, NKVHeads: c.KVHeads, NKV: pos + 1, KVStride: kv, Scale: attnScale(c.HeadDim)}))
		x2 := add(x, mv(l.O, att))
		h2 := norm(x2, l.FFNNorm)
		s := make([]float32, c.FF)
		check(oracle.SwigluF32(s, mv(l.Gate, h2), mv(l.Up, h2)))
		x = add(x2, mv(l.Down, s))
		if err != nil {
			return nil, fmt.Errorf("llama: reference layer %d: %w", i, err)
		}
	}
	logits := mv(w.Output, norm(x, w.OutputNorm))
	if err != nil {
		return nil, fmt.Errorf("llama: reference: %w", err)
	}
	return logits, nil
}

func f32s(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return x
}
