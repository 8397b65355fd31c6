// Package llama runs a llama-architecture decoder read from a GGUF file on the engine: every op
// of a decode step (token embedding, rms_norm, the q/k/v/o and MLP matvecs, rope, attention over
// a KV cache, swiglu, residual adds, the output logits) is an engine call, served by whichever
// kernel the registry chose for its cell.
//
// The contract:
//
//   - Config reads llama.cpp's metadata keys (llama.embedding_length, llama.block_count,
//     llama.feed_forward_length, llama.attention.head_count[_kv],
//     llama.attention.layer_norm_rms_epsilon, llama.rope.freq_base, llama.context_length) and
//     Load its tensor names (token_embd, blk.N.attn_norm/attn_q/attn_k/attn_v/attn_output,
//     blk.N.ffn_norm/ffn_gate/ffn_up/ffn_down, output_norm, output, tied to token_embd when
//     absent). A missing key or tensor, or a shape that disagrees with the config, is an error
//     naming it.
//   - Rope is llama.cpp's normal mode (adjacent pairs; the GGUF converter permutes q and k for
//     it), over the whole head.
//   - A step of Model issues one submission (the logits read) and writes two small tensors (the
//     token id and its position) before its ops: no host copy between ops.
//   - Reference computes the same step on the CPU with package oracle's ops in the same order:
//     the engine's logits equal it byte for byte when every cell is served by its twin.
package llama

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/gguf"
)

// Config is a llama model's hyperparameters.
type Config struct {
	Dim, Layers, FF int
	Heads, KVHeads  int
	HeadDim         int
	Vocab           int
	Eps             float32
	RopeBase        float32
	Context         int // the model's trained context (llama.context_length; 0 if absent)
}

// KVDim is the width of one position's keys (and values): KVHeads*HeadDim.
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// ConfigOf reads the config of a GGUF file's llama model.
func ConfigOf(f *gguf.File) (Config, error) {
	arch := "llama"
	if v, ok := f.Lookup("general.architecture"); ok {
		s, _ := v.Str()
		if s != "llama" {
			return Config{}, fmt.Errorf("llama: general.architecture is %q: only llama is supported", s)
		}
	}
	geti := func(key string, def int) (int, error) {
		v, ok := f.Lookup(arch + "." + key)
		if !ok {
			if def >= 0 {
				return def, nil
			}
			return 0, fmt.Errorf("llama: metadata key %s.%s is missing", arch, key)
		}
		n, ok := v.Int()
		if !ok || n <= 0 || n > math.MaxInt32 {
			return 0, fmt.Errorf("llama: metadata key %s.%s = %v: want a positive integer", arch, key, v)
		}
		return int(n), nil
	}
	getf := func(key string, def float64) (float32, error) {
		v, ok := f.Lookup(arch + "." + key)
		if !ok {
			return float32(def), nil
		}
		x, ok := v.Float()
		if !ok || !(x > 0) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("llama: metadata key %s.%s = %v: want a positive number", arch, key, v)
		}
		return float32(x), nil
	}
	var c Config
	var err error
	for _, p := range []struct {
		dst *int
		key string
		def int
	}{
		{&c.Dim, "embedding_length", -1},
		{&c.Layers, "block_count", -1},
		{&c.FF, "feed_forward_length", -1},
		{&c.Heads, "attention.head_count", -1},
		{&c.Context, "context_length", 0},
	} {
		if *p.dst, err = geti(p.key, p.def); err != nil {
			return Config{}, err
		}
	}
	if c.KVHeads, err = geti("attention.head_count_kv", c.Heads); err != nil {
		return Config{}, err
	}
	if c.Eps, err = getf("attention.layer_norm_rms_epsilon", 1e-5); err != nil {
		return Config{}, err
	}
	if c.RopeBase, err = getf("rope.freq_base", 10000); err != nil {
		return Config{}, err
	}
	if c.Dim%c.Heads != 0 {
		return Config{}, fmt.Errorf("llama: embedding_length %d is not a multiple of head_count %d", c.Dim, c.Heads)
	}
	if c.Heads%c.KVHeads != 0 {
		return Config{}, fmt.Errorf("llama: head_count %d is not a multiple of head_count_kv %d", c.Heads, c.KVHeads)
	}
	c.HeadDim = c.Dim / c.Heads
	if rd, err := geti("rope.dimension_count", c.HeadDim); err != nil {
		return Config{}, err
	} else if rd != c.HeadDim {
		return Config{}, fmt.Errorf("llama: rope.dimension_count %d: only rope over the whole head (%d) is supported", rd, c.HeadDim)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return Config{}, fmt.Errorf("llama: tensor token_embd.weight is missing")
	}
	if len(emb.Dims) != 2 || emb.Dims[0] != uint64(c.Dim) || emb.Dims[1] == 0 || emb.Dims[1] > math.MaxInt32 {
		return Config{}, fmt.Errorf("llama: token_embd.weight has dims %v: want [%d, vocab]", emb.Dims, c.Dim)
	}
	c.Vocab = int(emb.Dims[1])
	return c, nil
}
