package llama

import (
	"fmt"
	"io"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/wire"
)

// Synthetic describes a small random llama model for tests and demos: its config and the weight
// types of its tensors (cycled over the matrices so that one model exercises several).
type Synthetic struct {
	Dim, Layers, FF, Heads, KVHeads, Vocab int
	Types                                  []oracle.Type // matrix types, used in turn
	EmbdType                               oracle.Type   // token_embd's type
	TiedOutput                             bool          // no output.weight: the logits reuse token_embd
	Seed                                   int64
}

// SmallSynthetic is the test model: 2 layers, dim 256, 8 query heads and 2 key/value heads of
// 32, weights in q4_0, q8_0, q4_K and q6_K, f32 norms.
var SmallSynthetic = Synthetic{
	Dim: 256, Layers: 2, FF: 512, Heads: 8, KVHeads: 2, Vocab: 512,
	Types:    []oracle.Type{oracle.Q4_0, oracle.Q8_0, oracle.Q4_K, oracle.Q6_K},
	EmbdType: oracle.Q4_0, Seed: 1,
}

// Write writes the synthetic model as a GGUF file, with the metadata keys and tensor names
// llama.cpp writes: weights N(0, 1/n) quantized by the oracle's reference quantizers, norm
// weights 1 + N(0, 0.1^2).
func (s Synthetic) Write(w io.Writer) error {
	if len(s.Types) == 0 {
		return fmt.Errorf("llama: synthetic model without weight types")
	}
	rng := rand.New(rand.NewSource(s.Seed))
	var tensors []gguf.WriteTensor
	next := 0
	matrix := func(name string, t oracle.Type, rows, n int) error {
		if t == oracle.Type(math.MaxUint32) {
			t = s.Types[next%len(s.Types)]
			next++
		}
		x := make([]float32, rows*n)
		sd := 1 / math.Sqrt(float64(n))
		for i := range x {
			x[i] = float32(rng.NormFloat64() * sd)
		}
		var data []byte
		if t == oracle.F32 {
			data = wire.F32(x)
		} else {
			size, err := oracle.RowSize(t, n)
			if err != nil {
				return fmt.Errorf("llama: synthetic %s: %w", name, err)
			}
			data = make([]byte, rows*size)
			if err := oracle.Quantize(t, x, data); err != nil {
				return fmt.Errorf("llama: synthetic %s: %w", name, err)
			}
		}
		tensors = append(tensors, gguf.WriteTensor{Name: name, Type: t, Dims: []uint64{uint64(n), uint64(rows)}, Data: data})
		return nil
	}
	vector := func(name string, n int) {
		x := make([]float32, n)
		for i := range x {
			x[i] = 1 + float32(rng.NormFloat64()*0.1)
		}
		tensors = append(tensors, gguf.WriteTensor{Name: name, Type: oracle.F32, Dims: []uint64{uint64(n)}, Data: wire.F32(x)})
	}
	cycle := oracle.Type(math.MaxUint32)
	hd := s.Dim / s.Heads
	if err := matrix("token_embd.weight", s.EmbdType, s.Vocab, s.Dim); err != nil {
		return err
	}
	for i := 0; i < s.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		vector(p+"attn_norm.weight", s.Dim)
		for _, m := range []struct {
			name    string
			rows, n int
		}{
			{"attn_q", s.Dim, s.Dim}, {"attn_k", s.KVHeads * hd, s.Dim}, {"attn_v", s.KVHeads * hd, s.Dim},
			{"attn_output", s.Dim, s.Dim},
		} {
			if err := matrix(p+m.name+".weight", cycle, m.rows, m.n); err != nil {
				return err
			}
		}
		vector(p+"ffn_norm.weight", s.Dim)
		for _, m := range []struct {
			name    string
			rows, n int
		}{{"ffn_gate", s.FF, s.Dim}, {"ffn_up", s.FF, s.Dim}, {"ffn_down", s.Dim, s.FF}} {
			if err := matrix(p+m.name+".weight", cycle, m.rows, m.n); err != nil {
				return err
			}
		}
	}
	vector("output_norm.weight", s.Dim)
	if !s.TiedOutput {
		if err := matrix("output.weight", cycle, s.Vocab, s.Dim); err != nil {
			return err
		}
	}
	meta := []gguf.KV{
		{Key: "general.architecture", Value: gguf.Value{V: "llama"}},
		{Key: "general.name", Value: gguf.Value{V: "onesource synthetic"}},
		{Key: "llama.context_length", Value: gguf.Value{V: uint32(256)}},
		{Key: "llama.embedding_length", Value: gguf.Value{V: uint32(s.Dim)}},
		{Key: "llama.block_count", Value: gguf.Value{V: uint32(s.Layers)}},
		{Key: "llama.feed_forward_length", Value: gguf.Value{V: uint32(s.FF)}},
		{Key: "llama.attention.head_count", Value: gguf.Value{V: uint32(s.Heads)}},
		{Key: "llama.attention.head_count_kv", Value: gguf.Value{V: uint32(s.KVHeads)}},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Value{V: float32(1e-5)}},
		{Key: "llama.rope.freq_base", Value: gguf.Value{V: float32(10000)}},
		{Key: "llama.rope.dimension_count", Value: gguf.Value{V: uint32(hd)}},
	}
	return gguf.Write(w, meta, tensors)
}
