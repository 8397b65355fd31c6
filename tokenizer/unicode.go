package tokenizer

import (
	"sync"
	"unicode"
)

// Code point classes, one bit each, from Go's unicode tables: the general category's major class
// (L, N, P, S, M, Z, C; unassigned code points, Cn, have none of them) and the White_Space
// property. llama.cpp's unicode-data.cpp is generated from the same two sources (Python's regex
// module: \p{L} ... \p{C} and \s, which is White_Space: the 25 code points U+0009-000D, U+0020,
// U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000). Go's tables are
// Unicode 15.0.0; a code point assigned in a later edition is unassigned here.
const (
	clsL uint8 = 1 << iota
	clsN
	clsP
	clsS
	clsM
	clsZ
	clsC
	clsWS
)

// maxCpt is one past the largest code point.
const maxCpt = 0x110000

// classTable is the class bits of every code point: 1.1 MB, filled once from the range tables on
// the first load (about 1 ms here), so classifying a code point is one load.
var classTable = sync.OnceValue(func() []uint8 {
	t := make([]uint8, maxCpt)
	for _, c := range []struct {
		tab *unicode.RangeTable
		bit uint8
	}{
		{unicode.L, clsL}, {unicode.N, clsN}, {unicode.P, clsP}, {unicode.S, clsS},
		{unicode.M, clsM}, {unicode.Z, clsZ}, {unicode.C, clsC}, {unicode.White_Space, clsWS},
	} {
		for _, r := range c.tab.R16 {
			for x := int(r.Lo); x <= int(r.Hi); x += int(r.Stride) {
				t[x] |= c.bit
			}
		}
		for _, r := range c.tab.R32 {
			for x := int(r.Lo); x <= int(r.Hi); x += int(r.Stride) {
				t[x] |= c.bit
			}
		}
	}
	return t
})

// replacement is U+FFFD, what an invalid UTF-8 sequence decodes to.
const replacement = 0xFFFD

// decodeCpts decodes s as llama.cpp's unicode_cpts_from_utf8 does, which is more lenient than
// Go's decoder: a lead byte followed by the right number of continuation bytes is one code point
// whatever it encodes (overlong forms and surrogates included); a byte that starts no such
// sequence is U+FFFD and the decoder moves on by one byte. Where llama.cpp would decode a
// 4-byte sequence above U+10FFFF (and then fail to re-encode it, an exception out of its
// tokenizer) this decoder treats the lead byte as invalid instead.
func decodeCpts(s string, out []rune) []rune {
	out = out[:0]
	for i := 0; i < len(s); {
		b := s[i]
		switch {
		case b < 0x80:
			out = append(out, rune(b))
			i++
			continue
		case b&0x40 == 0: // a continuation byte
		case b&0x20 == 0:
			if i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
				out = append(out, rune(b&0x1F)<<6|rune(s[i+1]&0x3F))
				i += 2
				continue
			}
		case b&0x10 == 0:
			if i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
				out = append(out, rune(b&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F))
				i += 3
				continue
			}
		case b&0x08 == 0:
			if i+3 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 && s[i+3]&0xC0 == 0x80 {
				c := rune(b&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
				if c < maxCpt {
					out = append(out, c)
					i += 4
					continue
				}
			}
		}
		out = append(out, replacement)
		i++
	}
	return out
}

// appendCpt appends the UTF-8 encoding of c (0 <= c < maxCpt) as llama.cpp's unicode_cpt_to_utf8
// writes it: plain arithmetic, so a surrogate decoded by decodeCpts is written back as the same
// three bytes (Go's utf8.AppendRune would write U+FFFD).
func appendCpt(b []byte, c rune) []byte {
	switch {
	case c < 0x80:
		return append(b, byte(c))
	case c < 0x800:
		return append(b, 0xC0|byte(c>>6), 0x80|byte(c&0x3F))
	case c < 0x10000:
		return append(b, 0xE0|byte(c>>12), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F))
	}
	return append(b, 0xF0|byte(c>>18), 0x80|byte(c>>12&0x3F), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F))
}

// utf8Len is the length of the UTF-8 sequence that lead byte b starts, from its high four bits
// alone, as llama.cpp's unicode_len_utf8: 1 for ASCII and for a stray continuation byte.
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// byteRunes is GPT-2's byte-to-character map (bytes_to_unicode): the printable bytes ! to ~,
// ¡ to ¬ and ® to ÿ stand for themselves, the other 68 bytes for U+0100 onwards in byte order.
// byteRuneStr holds each as its UTF-8 string; runeByte is the inverse (-1: no byte).
var byteRunes, byteRuneStr, runeByte = func() ([256]rune, [256]string, map[rune]int) {
	var br [256]rune
	var bs [256]string
	rb := make(map[rune]int, 256)
	n := rune(0)
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			br[b] = rune(b)
		} else {
			br[b] = 256 + n
			n++
		}
		bs[b] = string(br[b])
		rb[br[b]] = b
	}
	return br, bs, rb
}()
