package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
)

// benchText is 4 KB of llama.cpp's test strings (English, code, Cyrillic, Khmer, CJK, emoji,
// runs of spaces and digits), four times over.
func benchText(b *testing.B) string {
	var parts []string
	for _, c := range readVectors(b, filepath.Join("testdata", "ggml-vocab-gpt-2.gguf")) {
		parts = append(parts, c.text)
	}
	return strings.Repeat(strings.Join(parts, "\n")+"\n", 4)
}

// BenchmarkEncode measures Encode on benchText (the figures in the package comment).
func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"} {
		tok := openTestdata(b, name)
		b.Run(tok.Model(), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := tok.Encode(text, EncodeOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpen measures reading a vocabulary from its file.
func BenchmarkOpen(b *testing.B) {
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				openTestdata(b, name)
			}
		})
	}
}
