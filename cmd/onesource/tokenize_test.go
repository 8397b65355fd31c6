package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/gguf"
)

// The vocabularies of llama.cpp's tokenizer test vectors (the tokenizer package's copy); the
// expected ids are llama.cpp's for the same strings (their .out files).
var (
	tokGPT2 = filepath.Join("..", "..", "tokenizer", "testdata", "ggml-vocab-gpt-2.gguf")
	tokSPM  = filepath.Join("..", "..", "tokenizer", "testdata", "ggml-vocab-llama-spm.gguf")
)

func tokenizeRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runMain(append([]string{"tokenize"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestTokenize(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{tokGPT2, "Hello world"}, "15496 995\n"},
		{[]string{tokSPM, "Hello world"}, "15043 3186\n"},
		{[]string{tokSPM, " Hello world"}, "29871 15043 3186\n"},
		{[]string{"-bos", tokSPM, "Hello world"}, "1 15043 3186\n"},
		{[]string{tokSPM, "Hello world", "-bos"}, "1 15043 3186\n"}, // options anywhere
		{[]string{tokGPT2, ""}, "\n"},
		{[]string{"-special", tokGPT2, "Hello world<|endoftext|>"}, "15496 995 50256\n"},
		{[]string{tokGPT2, "--", "-"}, "12\n"}, // GPT-2's first tokens are ! to ~ in order: "-" is 12
		{[]string{"-decode", tokGPT2, "15496 995"}, "Hello world\n"},
		{[]string{"-decode", tokGPT2, "15496", "995"}, "Hello world\n"},
		{[]string{"-decode", tokGPT2, "[15496, 11, 995, 0]"}, "Hello, world!\n"},
		{[]string{"-decode", tokSPM, "1 15043 3186"}, "Hello world\n"},
		{[]string{"-decode", "-special", tokSPM, "1 15043 3186"}, "<s>Hello world\n"},
		{[]string{"-decode", tokGPT2, "15496 50256"}, "Hello\n"},
		{[]string{"-decode", "-special", tokGPT2, "15496 50256"}, "Hello<|endoftext|>\n"},
	} {
		code, out, errs := tokenizeRun(c.args...)
		if code != 0 || out != c.want {
			t.Errorf("tokenize %q: exit %d, stdout %q, stderr %q; want 0, %q", c.args, code, out, errs, c.want)
		}
	}

	// a vocabulary whose pre-tokenizer is not implemented is refused with its name
	dir := t.TempDir()
	unsup := filepath.Join(dir, "tekken.gguf")
	f, err := os.Create(unsup)
	if err != nil {
		t.Fatal(err)
	}
	md := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Value{V: "gpt2"}},
		{Key: "tokenizer.ggml.pre", Value: gguf.Value{V: "tekken"}},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Value{V: []string{"a"}}},
		{Key: "tokenizer.ggml.merges", Value: gguf.Value{V: []string{}}},
	}
	if err := gguf.Write(f, md, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage"},
		{[]string{tokGPT2}, 2, "want MODEL.gguf and one TEXT"},
		{[]string{tokGPT2, "a", "b"}, 2, "want MODEL.gguf and one TEXT"},
		{[]string{"-x", tokGPT2, "a"}, 2, `unknown option "-x"`},
		{[]string{"-decode", tokGPT2, "1 x"}, 2, `"x" is not a token id`},
		{[]string{"-decode", tokGPT2, ","}, 2, "no token ids"},
		{[]string{"-decode", "-bos", tokGPT2, "1"}, 2, "-bos is for encoding"},
		{[]string{"-decode", tokGPT2, "50257"}, 1, "outside the vocabulary"},
		{[]string{filepath.Join(dir, "none.gguf"), "a"}, 1, "none.gguf"},
		{[]string{unsup, "a"}, 1, `pre-tokenizer "tekken"`},
	} {
		code, out, errs := tokenizeRun(c.args...)
		if code != c.code || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("tokenize %q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errs, c.code, c.want)
		}
	}

	code, out, _ := tokenizeRun("-h")
	if code != 0 || !strings.Contains(out, "onesource tokenize -decode") {
		t.Errorf("tokenize -h: exit %d, %q", code, out)
	}
	var help bytes.Buffer
	runMain([]string{"help"}, &help, &help)
	if !strings.Contains(help.String(), "tokenize") {
		t.Errorf("onesource help does not list tokenize:\n%s", help.String())
	}
}
