package tokenizer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/gguf"
)

func kv(key string, v any) gguf.KV { return gguf.KV{Key: key, Value: gguf.Value{V: v}} }

// load writes metadata as a GGUF file in memory and loads its tokenizer.
func load(t *testing.T, md ...gguf.KV) (*Tokenizer, error) {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, md, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return Load(f)
}

func mustLoad(t *testing.T, md ...gguf.KV) *Tokenizer {
	t.Helper()
	tok, err := load(t, md...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func openTestdata(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tok, err := Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func encode(t *testing.T, tok *Tokenizer, s string, opt EncodeOptions) []int32 {
	t.Helper()
	ids, err := tok.Encode(s, opt)
	if err != nil {
		t.Fatalf("Encode(%q): %v", s, err)
	}
	return ids
}

// A small SentencePiece vocabulary: 0 <unk>, 1 <s>, 2 </s>, then normal tokens with scores.
// "ab" and "ba" score the same, so which of them forms in "aba" shows the tie rule.
func spmMeta(extra ...gguf.KV) []gguf.KV {
	tokens := []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "ab", "ba", "▁a", "<0x63>", "<|end|>", "x", "▁x", "▁▁"}
	scores := []float32{0, 0, 0, -1, -2, -3, -0.5, -0.5, -0.1, 0, 0, -2, -0.3, -0.4}
	types := []int32{2, 3, 3, 1, 1, 1, 1, 1, 1, 6, 3, 1, 1, 1}
	return append([]gguf.KV{
		kv("tokenizer.ggml.model", "llama"),
		kv("tokenizer.ggml.tokens", tokens),
		kv("tokenizer.ggml.scores", scores),
		kv("tokenizer.ggml.token_type", types),
	}, extra...)
}

func TestSPMMerges(t *testing.T) {
	tok := mustLoad(t, spmMeta(kv("tokenizer.ggml.add_space_prefix", false))...)
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"aba", []int32{6, 4}},  // ab and ba tie at -0.5: the leftmost pair merges first
		{"bab", []int32{7, 5}},  // the same, from the other side
		{"c", []int32{9}},       // no token "c": its byte, <0x63>
		{" a", []int32{8}},      // the space is U+2581
		{"a a", []int32{4, 8}},  // "a▁" is no token, "▁a" is
		{"", []int32{}},         // nothing
		{"xa", []int32{11, 4}},  // x and a do not merge
		{"  x", []int32{3, 12}}, // ▁x (-0.3) beats ▁▁ (-0.4), then ▁ + ▁x is no token
		{"\u2581a", []int32{8}}, // a literal U+2581 is a space to SentencePiece
	} {
		got := encode(t, tok, c.text, EncodeOptions{})
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
		}
	}
	if _, err := tok.Encode("d", EncodeOptions{}); err == nil || !strings.Contains(err.Error(), "<0x64>") {
		t.Errorf(`Encode("d") with no token for d nor <0x64>: err = %v, want one naming <0x64>`, err)
	}

	// With the space prefix (the default): a space before the text, and Decode removes it.
	tok = mustLoad(t, spmMeta()...)
	if got := encode(t, tok, "a", EncodeOptions{}); !slices.Equal(got, []int32{8}) {
		t.Errorf("prefixed %q: got %v, want [8]", "a", got)
	}
	if got, _ := tok.Decode([]int32{8}, DecodeOptions{}); got != "a" {
		t.Errorf("Decode([▁a]) = %q, want %q", got, "a")
	}
	if got, _ := tok.Decode([]int32{1, 8}, DecodeOptions{}); got != "a" {
		t.Errorf("Decode([<s> ▁a]) = %q, want %q (the prefix space removed after a BOS too)", got, "a")
	}
	if got, _ := tok.Decode([]int32{1, 8}, DecodeOptions{Special: true}); got != "<s>a" {
		t.Errorf("Decode([<s> ▁a], Special) = %q, want %q", got, "<s>a")
	}
}

func TestSpecialParsing(t *testing.T) {
	spm := openTestdata(t, "ggml-vocab-llama-spm.gguf")
	// "Hello world" is 15043 3186 (llama.cpp's vectors); after a special token the text gets the
	// space prefix again, so "world" is ▁world too.
	if got := encode(t, spm, "Hello<s>world", EncodeOptions{Special: true}); !slices.Equal(got, []int32{15043, 1, 3186}) {
		t.Errorf("SPM Hello<s>world with Special: %v, want [15043 1 3186]", got)
	}
	if got := encode(t, spm, "<s>", EncodeOptions{Special: true}); !slices.Equal(got, []int32{1}) {
		t.Errorf("SPM <s> with Special: %v, want [1]", got)
	}
	plain := encode(t, spm, "Hello<s>world", EncodeOptions{})
	if slices.Contains(plain, 1) {
		t.Errorf("SPM Hello<s>world without Special has the BOS token: %v", plain)
	}
	if back, _ := spm.Decode(plain, DecodeOptions{}); back != "Hello<s>world" {
		t.Errorf("SPM decode of %v = %q", plain, back)
	}
	if got := encode(t, spm, "Hello world", EncodeOptions{BOS: true, EOS: true}); !slices.Equal(got, []int32{1, 15043, 3186, 2}) {
		t.Errorf("SPM with BOS and EOS: %v, want [1 15043 3186 2]", got)
	}

	gpt2 := openTestdata(t, "ggml-vocab-gpt-2.gguf")
	eot := "<|endoftext|>"
	if got := encode(t, gpt2, "Hello world"+eot, EncodeOptions{Special: true}); !slices.Equal(got, []int32{15496, 995, 50256}) {
		t.Errorf("BPE with Special: %v, want [15496 995 50256]", got)
	}
	plain = encode(t, gpt2, eot, EncodeOptions{})
	if len(plain) < 2 || slices.Contains(plain, 50256) {
		t.Errorf("BPE %s without Special: %v, want its text's pieces", eot, plain)
	}
	if back, _ := gpt2.Decode(plain, DecodeOptions{}); back != eot {
		t.Errorf("BPE decode of %v = %q", plain, back)
	}
	if got, _ := gpt2.Decode([]int32{15496, 50256}, DecodeOptions{}); got != "Hello" {
		t.Errorf("a control token without Special decodes to %q, want nothing after Hello", got)
	}
	if got, _ := gpt2.Decode([]int32{15496, 50256}, DecodeOptions{Special: true}); got != "Hello"+eot {
		t.Errorf("a control token with Special decodes to %q", got)
	}
	if !gpt2.IsEOG(50256) || gpt2.IsEOG(15496) {
		t.Error("IsEOG: want <|endoftext|> and not Hello")
	}
	if s := gpt2.Special(); s.BOS != 50256 || s.EOS != 50256 || s.UNK != NoToken || s.EOT != 50256 {
		t.Errorf("gpt-2 special ids: %+v", s)
	}
	if s := spm.Special(); s.BOS != 1 || s.EOS != 2 || s.UNK != 0 || !spm.AddBOS() || gpt2.AddBOS() {
		t.Errorf("llama special ids: %+v, add_bos %v (gpt-2 %v)", s, spm.AddBOS(), gpt2.AddBOS())
	}
}

// TestRStrip checks llama.cpp's Phi-3 rule: by general.name, special tokens swallow the white
// space after them when parsed.
func TestRStrip(t *testing.T) {
	opt := EncodeOptions{Special: true}
	plain := mustLoad(t, spmMeta()...)
	// <|end|>, then " x" with the prefix space: ▁▁x, where ▁x (-0.3) beats ▁▁ (-0.4): ▁ ▁x
	if got := encode(t, plain, "<|end|> x", opt); !slices.Equal(got, []int32{10, 3, 12}) {
		t.Errorf("without the Phi-3 rule: %v, want [10 3 12]", got)
	}
	phi := mustLoad(t, spmMeta(kv("general.name", "Phi-3-mini-4k-instruct"))...)
	if got := encode(t, phi, "<|end|> x", opt); !slices.Equal(got, []int32{10, 12}) {
		t.Errorf("with the Phi-3 rule: %v, want [10 12] (the space after <|end|> dropped)", got)
	}
	if got := encode(t, phi, "a<s> x", opt); !slices.Equal(got, []int32{8, 1, 3, 12}) {
		t.Errorf("Phi-3's <s> is not RStrip: %v, want [8 1 3 12]", got)
	}
}

// A small byte-level BPE vocabulary over the letters a, b, c and the space (Ġ).
func bpeMeta(pre string, merges []string, extra ...gguf.KV) []gguf.KV {
	return append([]gguf.KV{
		kv("tokenizer.ggml.model", "gpt2"),
		kv("tokenizer.ggml.pre", pre),
		kv("tokenizer.ggml.tokens", []string{"a", "b", "c", "Ġ", "ab", "bc", "abc", "Ġa", "<|eot_id|>"}),
		kv("tokenizer.ggml.token_type", []int32{1, 1, 1, 1, 1, 1, 1, 1, 3}),
		kv("tokenizer.ggml.merges", merges),
		kv("tokenizer.ggml.bos_token_id", uint32(8)),
	}, extra...)
}

func TestBPEMerges(t *testing.T) {
	for _, c := range []struct {
		pre    string
		merges []string
		text   string
		want   []int32
	}{
		{"gpt-2", []string{"a b", "b c"}, "abc", []int32{4, 2}}, // rank 0 (a b) first, then no "ab c"
		{"gpt-2", []string{"b c", "a b"}, "abc", []int32{0, 5}}, // rank 0 (b c) first
		{"gpt-2", []string{"a b", "ab c"}, "abc", []int32{6}},
		{"gpt-2", []string{"Ġ a"}, " a ab", []int32{7, 7, 1}}, // words " a", " ab"; no merge Ġa b
		// llama3 ignores the merges for a word that is a token; dbrx has its expression only
		{"llama3", []string{"a b"}, "abc", []int32{6}},
		{"dbrx", []string{"a b"}, "abc", []int32{4, 2}},
		{"gpt-2", []string{"a b", "a b"}, "ab", []int32{4}}, // a repeated merge keeps its first rank
	} {
		tok := mustLoad(t, bpeMeta(c.pre, c.merges)...)
		if got := encode(t, tok, c.text, EncodeOptions{}); !slices.Equal(got, c.want) {
			t.Errorf("%s %v %q: got %v, want %v", c.pre, c.merges, c.text, got, c.want)
		}
	}
	tok := mustLoad(t, bpeMeta("gpt-2", nil)...)
	if _, err := tok.Encode("d", EncodeOptions{}); err == nil || !strings.Contains(err.Error(), `"d"`) {
		t.Errorf(`Encode("d") with no token for d: err = %v, want one naming it`, err)
	}
	// llama3's add_bos_token default is true; <|eot_id|> is found as EOT and EOG by its text.
	tok = mustLoad(t, bpeMeta("llama3", nil)...)
	if !tok.AddBOS() || tok.Special().EOT != 8 || !tok.IsEOG(8) {
		t.Errorf("llama3: AddBOS %v, EOT %d, IsEOG(8) %v; want true, 8, true", tok.AddBOS(), tok.Special().EOT, tok.IsEOG(8))
	}
}

func TestCleanSpaces(t *testing.T) {
	gpt2 := openTestdata(t, "ggml-vocab-gpt-2.gguf")
	for _, c := range []struct{ in, want string }{
		{"Hello , world ?", "Hello, world?"},
		{"it 's a ' b", "it's a'b"},
		{"we 're here , they 'll go", "we're here, they 'll go"}, // 'll keeps its space in llama.cpp
	} {
		ids := encode(t, gpt2, c.in, EncodeOptions{})
		if got, _ := gpt2.Decode(ids, DecodeOptions{CleanSpaces: true}); got != c.want {
			t.Errorf("CleanSpaces %q: %q, want %q", c.in, got, c.want)
		}
		if got, _ := gpt2.Decode(ids, DecodeOptions{}); got != c.in {
			t.Errorf("without CleanSpaces %q: %q", c.in, got)
		}
	}
	// a vocabulary whose pre-tokenizer does not clean (qwen2) is left alone
	q := mustLoad(t, bpeMeta("qwen2", nil)...)
	ids := encode(t, q, "a b", EncodeOptions{})
	if got, _ := q.Decode(ids, DecodeOptions{CleanSpaces: true}); got != "a b" {
		t.Errorf("qwen2 CleanSpaces: %q", got)
	}
}

func TestLoadErrors(t *testing.T) {
	good := spmMeta()
	with := func(key string, v any) []gguf.KV {
		md := slices.Clone(good)
		for i := range md {
			if md[i].Key == key {
				md[i].Value = gguf.Value{V: v}
				return md
			}
		}
		return append(md, kv(key, v))
	}
	without := func(md []gguf.KV, key string) []gguf.KV {
		return slices.DeleteFunc(slices.Clone(md), func(e gguf.KV) bool { return e.Key == key })
	}
	for _, c := range []struct {
		name        string
		md          []gguf.KV
		want        string
		unsupported bool
	}{
		{"no model", without(good, "tokenizer.ggml.model"), "no tokenizer.ggml.model", false},
		{"model not a string", with("tokenizer.ggml.model", uint32(1)), "tokenizer.ggml.model is a u32, want a string", false},
		{"bert", with("tokenizer.ggml.model", "bert"), `"bert"`, true},
		{"unknown pre", bpeMeta("tekken", nil), `pre-tokenizer "tekken"`, true},
		{"no pre", without(bpeMeta("gpt-2", nil), "tokenizer.ggml.pre"), "without tokenizer.ggml.pre", true},
		{"no tokens", without(good, "tokenizer.ggml.tokens"), "no tokenizer.ggml.tokens", false},
		{"tokens not strings", with("tokenizer.ggml.tokens", []int32{1, 2}), "array of i32, want an array of strings", false},
		{"duplicate token", with("tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "a", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}), `duplicate token "a": ids 3 and 4`, false},
		{"short scores", with("tokenizer.ggml.scores", []float32{1, 2}), "scores has 2 values for 14 tokens", false},
		{"scores of strings", with("tokenizer.ggml.scores", []string{"x"}), "want an array of f32 or i32", false},
		{"short types", with("tokenizer.ggml.token_type", []int32{1}), "token_type has 1 values for 14 tokens", false},
		{"types of u8", with("tokenizer.ggml.token_type", []uint8{1}), "token_type is an array of u8", false},
		{"no merges", without(bpeMeta("gpt-2", nil), "tokenizer.ggml.merges"), "without tokenizer.ggml.merges", false},
		{"bos id a string", with("tokenizer.ggml.bos_token_id", "1"), "bos_token_id is", false},
		{"add_bos not a bool", with("tokenizer.ggml.add_bos_token", uint8(1)), "add_bos_token is a u8, want a bool", false},
		{"add_bos without bos", append(without(bpeMeta("gpt-2", nil), "tokenizer.ggml.bos_token_id"), kv("tokenizer.ggml.add_bos_token", true)), "no BOS token", false},
	} {
		_, err := load(t, c.md...)
		if err == nil {
			t.Errorf("%s: loaded, want an error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.want)
		}
		if errors.Is(err, ErrUnsupported) != c.unsupported {
			t.Errorf("%s: errors.Is(err, ErrUnsupported) = %v", c.name, !c.unsupported)
		}
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), "bad.gguf") {
		t.Errorf("Open of a truncated file: %v, want an error naming it", err)
	}
	if _, err := Open(filepath.Join(dir, "none.gguf")); err == nil {
		t.Error("Open of a missing file: no error")
	}
}

func TestBadIDs(t *testing.T) {
	tok := openTestdata(t, "ggml-vocab-gpt-2.gguf")
	for _, id := range []int32{-1, 50257, 1 << 30} {
		if _, err := tok.Decode([]int32{15496, id}, DecodeOptions{}); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("Decode with id %d: %v, want an error", id, err)
		}
	}
	if _, _, ok := tok.Token(50257); ok {
		t.Error("Token(50257) exists")
	}
	if s, a, ok := tok.Token(50256); !ok || s != "<|endoftext|>" || a&AttrControl == 0 {
		t.Errorf("Token(50256) = %q, %v, %v", s, a, ok)
	}
	if id, ok := tok.ID("Hello"); !ok || id != 15496 {
		t.Errorf(`ID("Hello") = %d, %v; want 15496 (llama.cpp's vectors)`, id, ok)
	}
	// a vocabulary without EOS
	q := mustLoad(t, bpeMeta("glm4", nil, kv("tokenizer.ggml.eos_token_id", uint32(99)))...)
	if _, err := q.Encode("a", EncodeOptions{EOS: true}); err == nil {
		t.Error("EOS with no EOS token: no error")
	}
}

// TestConcurrent encodes llama.cpp's vectors from several goroutines at once on one Tokenizer
// (go test -race checks the claim that it is safe for concurrent use).
func TestConcurrent(t *testing.T) {
	tok := openTestdata(t, "ggml-vocab-gpt-2.gguf")
	cases := readVectors(t, filepath.Join("testdata", "ggml-vocab-gpt-2.gguf"))
	errs := make(chan string, 4*len(cases))
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for _, c := range cases {
				if got, err := tok.Encode(c.text, EncodeOptions{}); err != nil || !slices.Equal(got, c.ids) {
					errs <- c.text
				}
			}
			done <- true
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs from llama.cpp's ids", s)
	}
}
