package tokenizer

import (
	"fmt"
	"strings"
)

// piece is token id's text as llama.cpp's llama_token_to_piece writes it with special set:
// control, unknown and user-defined tokens as stored; a normal token with U+2581 read as a
// space (SentencePiece) or GPT-2's byte characters read back as bytes (BPE); a byte token as
// its byte; any other token (unused, undefined) as nothing.
func (t *Tokenizer) piece(id int32) string {
	a, text := t.attrs[id], t.tokens[id]
	switch {
	case a&(AttrUnknown|AttrControl|AttrUserDefined) != 0:
		return text
	case a&AttrNormal != 0:
		if !t.bpe {
			return strings.ReplaceAll(text, spmSpace, " ")
		}
		return decodeByteChars(text)
	case a&AttrByte != 0:
		return string([]byte{tokenByte(text)})
	}
	return ""
}

// decodeByteChars maps each character of a BPE token back to its byte; a character outside
// GPT-2's map is written as llama.cpp's llama_decode_text writes it, "[UNK_BYTE_0x" + the
// character's UTF-8 in hex + the whole token text + "]".
func decodeByteChars(text string) string {
	var b []byte
	var cpts []rune
	for _, c := range decodeCpts(text, cpts) {
		if x, ok := runeByte[c]; ok {
			b = append(b, byte(x))
			continue
		}
		b = append(b, "[UNK_BYTE_0x"...)
		for _, u := range appendCpt(nil, c) {
			b = fmt.Appendf(b, "%02x", u)
		}
		b = append(b, text...)
		b = append(b, ']')
	}
	return string(b)
}

// tokenByte is the byte of a byte token "<0xHH>": the hex digits after its third character, as
// llama.cpp's strtol reads them (0 without any).
func tokenByte(text string) byte {
	v := 0
	for i := 3; i < len(text) && i < 5; i++ {
		c := text[i]
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A'+10)
		default:
			return byte(v)
		}
	}
	return byte(v)
}

// Piece returns the text token id stands for: a control or unknown token's only with special.
func (t *Tokenizer) Piece(id int32, special bool) (string, error) {
	if id < 0 || int(id) >= len(t.tokens) {
		return "", fmt.Errorf("tokenizer: token id %d is outside the vocabulary's %d tokens", id, len(t.tokens))
	}
	if !special && t.attrs[id]&(AttrUnknown|AttrControl) != 0 {
		return "", nil
	}
	return t.pieces[id], nil
}

// Decode returns the text of ids: their pieces concatenated. With a SentencePiece vocabulary
// that adds the space prefix, the first piece after any leading BOS tokens loses one leading
// space, the one Encode put there (llama.cpp's llama_detokenize strips it from the first
// token only, so after a BOS it keeps it).
func (t *Tokenizer) Decode(ids []int32, opt DecodeOptions) (string, error) {
	var b []byte
	strip := !t.bpe && t.addSpacePrefix
	for _, id := range ids {
		p, err := t.Piece(id, opt.Special)
		if err != nil {
			return "", err
		}
		if strip && id != t.special.BOS {
			p = strings.TrimPrefix(p, " ")
			strip = false
		}
		b = append(b, p...)
	}
	if opt.CleanSpaces && t.cleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b), nil
}

// cleanSpaces is llama_detokenize's clean_up_tokenization_spaces, its three passes as written
// there: drop a space before ? ! . and ,; drop the spaces around a lone apostrophe; drop the
// space before 's, 'm, 're and 've.
func cleanSpaces(text []byte) []byte {
	total := len(text)
	if total == 0 {
		return text
	}
	n := total
	total = 1
	for i := 1; i < n; i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}
	n, total = total, 1
	for i := 1; i < n; i++ {
		x := text[i]
		if x == '\'' && i+1 < n && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++
			text[i] = 0
		}
		text[total] = x
		total++
	}
	n, total = total, 1
	for i := 1; i < n; i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < n {
			x1 := text[i+1]
			if x1 == 's' || x1 == 'm' {
				total--
			} else if i+2 < n {
				x2 := text[i+2]
				if x1 == 'r' && x2 == 'e' || x1 == 'v' && x2 == 'e' {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}
