package llama

import (
	"errors"
	"fmt"
	"math"

	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/oracle"
)

// Weight is one tensor of the model: its type, rows and row length (ggml's Dims[1], Dims[0];
// one row for a vector) and its bytes in the file.
type Weight struct {
	Name    string
	Type    oracle.Type
	Rows, N int
	Data    []byte
}

// Weights are the model's tensors, read and checked against its config.
type Weights struct {
	TokenEmbd, OutputNorm, Output Weight
	Layers                        []LayerWeights
}

// LayerWeights are one block's tensors.
type LayerWeights struct {
	AttnNorm, Q, K, V, O, FFNNorm, Gate, Up, Down Weight
}

// ReadWeights finds every tensor of c's model in f and checks its shape.
func ReadWeights(f *gguf.File, c Config) (*Weights, error) {
	get := func(name string, rows, n int, vector bool) (Weight, error) {
		t, ok := f.Tensor(name)
		if !ok {
			return Weight{}, fmt.Errorf("llama: tensor %s is missing", name)
		}
		want := []uint64{uint64(n), uint64(rows)}
		if vector {
			want = want[:1]
		}
		if len(t.Dims) != len(want) || t.Dims[0] != want[0] || (!vector && t.Dims[1] != want[1]) {
			return Weight{}, fmt.Errorf("llama: tensor %s has dims %v: want %v", name, t.Dims, want)
		}
		if vector && t.Type != oracle.F32 {
			return Weight{}, fmt.Errorf("llama: tensor %s is %s: norm weights must be f32", name, t.Type)
		}
		data := t.Data()
		if data == nil {
			return Weight{}, fmt.Errorf("llama: tensor %s has no data", name)
		}
		return Weight{Name: name, Type: t.Type, Rows: rows, N: n, Data: data}, nil
	}
	w := &Weights{}
	var err error
	if w.TokenEmbd, err = get("token_embd.weight", c.Vocab, c.Dim, false); err != nil {
		return nil, err
	}
	if w.OutputNorm, err = get("output_norm.weight", 1, c.Dim, true); err != nil {
		return nil, err
	}
	if _, ok := f.Tensor("output.weight"); ok {
		if w.Output, err = get("output.weight", c.Vocab, c.Dim, false); err != nil {
			return nil, err
		}
	} else {
		w.Output = w.TokenEmbd // tied embeddings
	}
	for i := 0; i < c.Layers; i++ {
		var l LayerWeights
		p := fmt.Sprintf("blk.%d.", i)
		for _, t := range []struct {
			dst     *Weight
			name    string
			rows, n int
			vector  bool
		}{
			{&l.AttnNorm, "attn_norm", 1, c.Dim, true},
			{&l.Q, "attn_q", c.Dim, c.Dim, false},
			{&l.K, "attn_k", c.KVDim(), c.Dim, false},
			{&l.V, "attn_v", c.KVDim(), c.Dim, false},
			{&l.O, "attn_output", c.Dim, c.Dim, false},
			{&l.FFNNorm, "ffn_norm", 1, c.Dim, true},
			{&l.Gate, "ffn_gate", c.FF, c.Dim, false},
			{&l.Up, "ffn_up", c.FF, c.Dim, false},
			{&l.Down, "ffn_down", c.Dim, c.FF, false},
		} {
			if *t.dst, err = get(p+t.name+".weight", t.rows, t.n, t.vector); err != nil {
				return nil, err
			}
		}
		w.Layers = append(w.Layers, l)
	}
	return w, nil
}

// Model is a llama model loaded on an engine, with its KV cache.
type Model struct {
	Config Config
	Ctx    int // positions the KV cache holds

	e      *engine.Engine
	tokEmb *engine.Tensor
	outW   *engine.Tensor
	outN   *engine.Tensor
	layers []layer
	// Per-step tensors.
	ids, pos                       *engine.Tensor
	x, h, q, qr, kt, att, o, x2    *engine.Tensor
	h2, g, u, s, d, logits, scores *engine.Tensor
	owned                          []*engine.Tensor
}

type layer struct {
	attnNorm, q, k, v, o, ffnNorm, gate, up, down *engine.Tensor
	kc, vc                                        *engine.Tensor // ctx x KVDim
}

// Load uploads f's llama model to e with a KV cache of ctx positions (0: the model's context
// length, at most 2048).
func Load(e *engine.Engine, f *gguf.File, ctx int) (*Model, error) {
	c, err := ConfigOf(f)
	if err != nil {
		return nil, err
	}
	w, err := ReadWeights(f, c)
	if err != nil {
		return nil, err
	}
	if ctx <= 0 {
		ctx = c.Context
		if ctx <= 0 || ctx > 2048 {
			ctx = 2048
		}
	}
	m := &Model{Config: c, Ctx: ctx, e: e}
	if err := m.upload(w); err != nil {
		m.Release()
		return nil, err
	}
	return m, nil
}

func (m *Model) keep(t *engine.Tensor, err error) (*engine.Tensor, error) {
	if err == nil {
		m.owned = append(m.owned, t)
	}
	return t, err
}

func (m *Model) upload(w *Weights) error {
	e, c := m.e, m.Config
	var err error
	up := func(wt Weight) *engine.Tensor {
		if err != nil {
			return nil
		}
		var t *engine.Tensor
		shape := []int{wt.Rows, wt.N}
		if wt.Rows == 1 {
			shape = []int{wt.N}
		}
		if t, err = m.keep(e.Upload(wt.Type, wt.Data, shape...)); err != nil {
			err = fmt.Errorf("llama: %s: %w", wt.Name, err)
		}
		return t
	}
	zeros := func(shape ...int) *engine.Tensor {
		if err != nil {
			return nil
		}
		var t *engine.Tensor
		t, err = m.keep(e.NewTensor(oracle.F32, shape...))
		return t
	}
	m.tokEmb, m.outN = up(w.TokenEmbd), up(w.OutputNorm)
	if w.Output.Name == w.TokenEmbd.Name {
		m.outW = m.tokEmb
	} else {
		m.outW = up(w.Output)
	}
	for _, lw := range w.Layers {
		m.layers = append(m.layers, layer{
			attnNorm: up(lw.AttnNorm), q: up(lw.Q), k: up(lw.K), v: up(lw.V), o: up(lw.O),
			ffnNorm: up(lw.FFNNorm), gate: up(lw.Gate), up: up(lw.Up), down: up(lw.Down),
			kc: zeros(m.Ctx, c.KVDim()), vc: zeros(m.Ctx, c.KVDim()),
		})
	}
	if err != nil {
		return err
	}
	if m.ids, err = m.keep(e.NewTensor(engine.I32, 1)); err != nil {
		return err
	}
	if m.pos, err = m.keep(e.NewTensor(engine.I32, 1)); err != nil {
		return err
	}
	m.x, m.h, m.o, m.x2, m.h2, m.d = zeros(c.Dim), zeros(c.Dim), zeros(c.Dim), zeros(c.Dim), zeros(c.Dim), zeros(c.Dim)
	m.q, m.qr, m.att = zeros(1, c.Heads, c.HeadDim), zeros(1, c.Heads, c.HeadDim), zeros(c.Heads, c.HeadDim)
	m.kt = zeros(1, c.KVHeads, c.HeadDim)
	m.g, m.u, m.s = zeros(c.FF), zeros(c.FF), zeros(c.FF)
	m.logits = zeros(c.Vocab)
	m.scores = zeros(c.Heads, m.Ctx)
	return err
}

// Release frees the model's tensors.
func (m *Model) Release() {
	for _, t := range m.owned {
		t.Release()
	}
	m.owned = nil
}

// Step runs the decoder on token at position pos (the cache holds positions 0..pos-1 from the
// earlier steps) and returns the logits.
func (m *Model) Step(token int32, pos int) ([]float32, error) {
	c, e := m.Config, m.e
	if pos < 0 || pos >= m.Ctx {
		return nil, fmt.Errorf("llama: position %d is outside the KV cache's %d positions", pos, m.Ctx)
	}
	if token < 0 || int(token) >= c.Vocab {
		return nil, fmt.Errorf("llama: token %d is outside the vocabulary of %d", token, c.Vocab)
	}
	// A vocabulary too large for one buffer is split by rows: the step gathers from the part
	// that holds the token.
	emb, local, err := m.tokEmb.PartOf(int(token))
	if err != nil {
		return nil, err
	}
	if err := m.ids.WriteI32([]int32{int32(local)}); err != nil {
		return nil, err
	}
	if err := m.pos.WriteI32([]int32{int32(pos)}); err != nil {
		return nil, err
	}
	do := func(label string, f func() error) {
		if err == nil {
			e.SetLabel(label)
			err = f()
		}
	}
	x1, _ := m.x.Reshape(1, c.Dim)
	do("token_embd", func() error { return e.GetRows(x1, emb, m.ids) })
	for i, l := range m.layers {
		b := fmt.Sprintf("blk.%d.", i)
		kRow, kerr := l.kc.Slice(pos, 1)
		vRow, verr := l.vc.Slice(pos, 1)
		if err = errors.Join(kerr, verr); err != nil {
			return nil, err
		}
		kRow, _ = kRow.Reshape(1, c.KVHeads, c.HeadDim)
		vRow, _ = vRow.Reshape(c.KVDim())
		qv, _ := m.q.Reshape(c.Dim)
		ktv, _ := m.kt.Reshape(c.KVDim())
		qr, _ := m.qr.Reshape(c.Heads, c.HeadDim)
		attv, _ := m.att.Reshape(c.Dim)
		do(b+"attn_norm", func() error { return e.RMSNorm(m.h, m.x, l.attnNorm, c.Eps) })
		do(b+"attn_q", func() error { return e.MatVec(qv, l.q, m.h) })
		do(b+"attn_k", func() error { return e.MatVec(ktv, l.k, m.h) })
		do(b+"attn_v", func() error { return e.MatVec(vRow, l.v, m.h) })
		do(b+"rope_q", func() error { return e.Rope(m.qr, m.q, m.pos, oracle.RopeNormal, c.RopeBase) })
		do(b+"rope_k", func() error { return e.Rope(kRow, m.kt, m.pos, oracle.RopeNormal, c.RopeBase) })
		do(b+"attn", func() error {
			return e.AttnDecode(m.att, qr, l.kc, l.vc, m.scores, engine.AttnParams{
				NHeads: c.Heads, NKVHeads: c.KVHeads, HeadDim: c.HeadDim, NKV: pos + 1, Scale: attnScale(c.HeadDim)})
		})
		do(b+"attn_output", func() error { return e.MatVec(m.o, l.o, attv) })
		do(b+"attn_residual", func() error { return e.Add(m.x2, m.x, m.o) })
		do(b+"ffn_norm", func() error { return e.RMSNorm(m.h2, m.x2, l.ffnNorm, c.Eps) })
		do(b+"ffn_gate", func() error { return e.MatVec(m.g, l.gate, m.h2) })
		do(b+"ffn_up", func() error { return e.MatVec(m.u, l.up, m.h2) })
		do(b+"ffn_swiglu", func() error { return e.Swiglu(m.s, m.g, m.u) })
		do(b+"ffn_down", func() error { return e.MatVec(m.d, l.down, m.s) })
		do(b+"ffn_residual", func() error { return e.Add(m.x, m.x2, m.d) })
		if err != nil {
			return nil, err
		}
	}
	do("output_norm", func() error { return e.RMSNorm(m.h, m.x, m.outN, c.Eps) })
	do("output", func() error { return e.MatVec(m.logits, m.outW, m.h) })
	e.SetLabel("")
	if err != nil {
		return nil, err
	}
	return m.logits.F32()
}

// attnScale is 1/sqrt(head_dim) in f32, as llama.cpp computes it.
func attnScale(headDim int) float32 { return float32(1 / math.Sqrt(float64(headDim))) }

// Stepper is a decoder that runs one step: Model on the engine, Reference on the CPU.
type Stepper interface {
	Step(token int32, pos int) ([]float32, error)
}

// Generate feeds the prompt tokens (positions 0..len-1), then decodes steps tokens greedily
// (the lowest index among equal maxima), and returns the generated tokens and the last step's
// logits.
func Generate(s Stepper, prompt []int32, steps int) ([]int32, []float32, error) {
	if len(prompt) == 0 {
		return nil, nil, errors.New("llama: Generate needs at least one prompt token")
	}
	var logits []float32
	var err error
	pos := 0
	for _, t := range prompt {
		if logits, err = s.Step(t, pos); err != nil {
			return nil, nil, err
		}
		pos++
	}
	var out []int32
	for i := 0; i < steps; i++ {
		next := Argmax(logits)
		out = append(out, next)
		if i == steps-1 {
			break
		}
		if logits, err = s.Step(next, pos); err != nil {
			return out, nil, err
		}
		pos++
	}
	return out, logits, nil
}

// Argmax is the index of the largest logit (the first of equal ones; NaN never wins).
func Argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] || (x[best] != x[best] && v == v) {
			best = i
		}
	}
	return int32(best)
}
