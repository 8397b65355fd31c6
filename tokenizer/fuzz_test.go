package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncodeDecode feeds arbitrary text to both test vocabularies. Encode and Decode must never
// fail or panic (both vocabularies can spell every byte), every id must be in the vocabulary,
// and for valid UTF-8 decoding must give the text back: always with GPT-2's byte-level BPE
// (with special-token parsing too, since a parsed special token decodes to its text), and with
// SentencePiece where the text has no U+2581 (which SentencePiece reads as a space) and spells
// no control token (which its merges may form, and which decodes only with Special).
func FuzzEncodeDecode(f *testing.F) {
	toks := []*Tokenizer{openTestdata(f, "ggml-vocab-gpt-2.gguf"), openTestdata(f, "ggml-vocab-llama-spm.gguf")}
	for _, c := range readVectors(f, filepath.Join("testdata", "ggml-vocab-gpt-2.gguf")) {
		f.Add(c.text)
	}
	f.Add("<s>Hello</s><|endoftext|> world\xff\xc3")
	f.Add("\xed\xa0\x80\xc0\x80\xf7\xbf\xbf\xbf") // a surrogate, an overlong NUL, above U+10FFFF
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			for _, parse := range []bool{false, true} {
				ids, err := tok.Encode(s, EncodeOptions{Special: parse})
				if err != nil {
					t.Fatalf("%s: Encode(%q, special %v): %v", tok.Model(), s, parse, err)
				}
				for _, id := range ids {
					if id < 0 || int(id) >= tok.Len() {
						t.Fatalf("%s: Encode(%q) gave id %d", tok.Model(), s, id)
					}
				}
				back, err := tok.Decode(ids, DecodeOptions{Special: parse})
				if err != nil {
					t.Fatalf("%s: Decode(%v): %v", tok.Model(), ids, err)
				}
				if !utf8.ValidString(s) {
					continue
				}
				roundTrips := tok.bpe || !parse && !strings.Contains(s, spmSpace) && !spellsControl(tok, s)
				if roundTrips && back != s {
					t.Fatalf("%s: Decode(Encode(%q, special %v)) = %q (ids %v)", tok.Model(), s, parse, back, ids)
				}
			}
		}
	})
}

func spellsControl(tok *Tokenizer, s string) bool {
	for id, a := range tok.attrs {
		if a&(AttrControl|AttrUnknown) != 0 && strings.Contains(s, tok.tokens[id]) {
			return true
		}
	}
	return false
}
