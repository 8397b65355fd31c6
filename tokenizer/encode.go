package tokenizer

import (
	"errors"
	"fmt"
	"strings"
)

// fragment is a run of the text to tokenize (token < 0) or a special token found in it.
type fragment struct {
	token  int32
	lo, hi int
}

func isCSpace(b byte) bool {
	return b == ' ' || b >= '\t' && b <= '\r'
}

// partition splits text at the special tokens it spells, longest token first, as llama.cpp's
// tokenizer_st_partition: the user-defined tokens always, the control and unknown tokens only
// when parse is set. A token marked LStrip (RStrip) takes the white space before (after) it.
func (t *Tokenizer) partition(text string, parse bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{token: -1, lo: 0, hi: len(text)}}
	var next []fragment
	for _, id := range t.specials {
		a := t.attrs[id]
		if !parse && a&(AttrControl|AttrUnknown) != 0 {
			continue
		}
		tok := t.tokens[id]
		next = next[:0]
		for _, f := range frags {
			if f.token >= 0 {
				next = append(next, f)
				continue
			}
			lo, hi := f.lo, f.hi
			for lo < hi {
				k := strings.Index(text[lo:hi], tok)
				if k < 0 {
					break
				}
				left := lo + k
				if a&AttrLStrip != 0 {
					for left > lo && isCSpace(text[left-1]) {
						left--
					}
				}
				if left > lo {
					next = append(next, fragment{token: -1, lo: lo, hi: left})
				}
				next = append(next, fragment{token: id})
				lo += k + len(tok)
				if a&AttrRStrip != 0 {
					for lo < hi && isCSpace(text[lo]) {
						lo++
					}
				}
			}
			if lo < hi {
				next = append(next, fragment{token: -1, lo: lo, hi: hi})
			}
		}
		frags, next = next, frags
	}
	return frags
}

// Encode returns the token ids of text.
func (t *Tokenizer) Encode(text string, opt EncodeOptions) ([]int32, error) {
	out := make([]int32, 0, len(text)/3+2)
	if opt.BOS {
		if t.special.BOS == NoToken {
			return nil, errors.New("tokenizer: the vocabulary has no BOS token")
		}
		out = append(out, t.special.BOS)
	}
	var err error
	frags := t.partition(text, opt.Special)
	if t.bpe {
		s := new(bpeState)
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				continue
			}
			if out, err = t.encodeBPE(s, text[f.lo:f.hi], out); err != nil {
				return nil, err
			}
		}
	} else {
		s := new(spmState)
		afterSpecial := true // the text's start counts as following a special token
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				afterSpecial = true
				continue
			}
			run := text[f.lo:f.hi]
			if t.addSpacePrefix && afterSpecial {
				run = " " + run
			}
			if out, err = t.encodeSPM(s, strings.ReplaceAll(run, " ", spmSpace), out); err != nil {
				return nil, err
			}
			afterSpecial = false
		}
	}
	if opt.EOS {
		if t.special.EOS == NoToken {
			return nil, errors.New("tokenizer: the vocabulary has no EOS token")
		}
		out = append(out, t.special.EOS)
	}
	return out, nil
}

// spmSpace is U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space.
const spmSpace = "\u2581"

// symbol is a run of the text being merged: bytes [lo, lo+n) of it, linked to its neighbours
// (-1: none). A symbol merged into its left neighbour has n == 0.
type symbol struct {
	prev, next int
	lo, n      int
}

// bigram is a candidate merge of two adjacent symbols: size is their joint length when it was
// queued, so a pair one of whose symbols changed since is recognized as stale.
type bigram struct {
	left, right int
	size        int
	score       float32 // SentencePiece: the merged token's score, highest first
	rank        int32   // BPE: the merge's rank, lowest first
}

// queue is a binary heap of bigrams ordered by less.
type queue struct {
	items []bigram
	less  func(a, b *bigram) bool
}

func (q *queue) push(b bigram) {
	q.items = append(q.items, b)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(&q.items[i], &q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *queue) pop() bigram {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.less(&q.items[l], &q.items[m]) {
			m = l
		}
		if r < last && q.less(&q.items[r], &q.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}

// spmLess is llama.cpp's llm_bigram_spm order: higher score first, then the leftmost pair.
func spmLess(a, b *bigram) bool {
	return a.score > b.score || a.score == b.score && a.left < b.left
}

// bpeLess is llm_bigram_bpe's order: lower rank first, then the leftmost pair.
func bpeLess(a, b *bigram) bool {
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

type spmState struct {
	syms []symbol
	q    queue
}

// encodeSPM is llama.cpp's llm_tokenizer_spm_session: the text (spaces already U+2581) as
// UTF-8 characters, adjacent pairs whose concatenation is a token merged highest score first,
// and what is left that is not a token written as its bytes' tokens.
func (t *Tokenizer) encodeSPM(s *spmState, text string, out []int32) ([]int32, error) {
	if text == "" {
		return out, nil
	}
	s.syms = s.syms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := len(s.syms)
		s.syms = append(s.syms, symbol{prev: i - 1, next: i + 1, lo: off, n: n})
		off += n
	}
	s.syms[len(s.syms)-1].next = -1
	s.q = queue{items: s.q.items[:0], less: spmLess}
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		lo := s.syms[l].lo
		size := s.syms[l].n + s.syms[r].n
		if id, ok := t.ids[text[lo:lo+size]]; ok {
			s.q.push(bigram{left: l, right: r, size: size, score: t.scores[id]})
		}
	}
	for i := 1; i < len(s.syms); i++ {
		try(i-1, i)
	}
	for len(s.q.items) > 0 {
		b := s.q.pop()
		l, r := &s.syms[b.left], &s.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	// A symbol that is not a token was never merged (a merge makes a token), so it is one
	// character; llama.cpp's resegment then finds it among no merge either and writes its bytes.
	for i := 0; i != -1; i = s.syms[i].next {
		piece := text[s.syms[i].lo : s.syms[i].lo+s.syms[i].n]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			id := t.byteTok[piece[j]]
			if id == NoToken {
				return nil, fmt.Errorf("tokenizer: no token for %q and no byte token <0x%02X> to spell it", piece, piece[j])
			}
			out = append(out, id)
		}
	}
	return out, nil
}

type bpeState struct {
	text   cptText
	bounds []int
	spare  []int
	word   []byte
	syms   []symbol
	q      queue
}

// encodeBPE is llama.cpp's llm_tokenizer_bpe_session: the text split into words by the
// pre-tokenizer, each word's bytes written as GPT-2's byte characters, adjacent symbols merged
// lowest merge rank first, and each final symbol written as its token.
func (t *Tokenizer) encodeBPE(s *bpeState, text string, out []int32) ([]int32, error) {
	s.text.set(text)
	s.bounds, s.spare = t.pretok.split(&s.text, s.bounds, s.spare)
	lo := 0
	var err error
	for _, hi := range s.bounds {
		s.word = s.word[:0]
		var utf [4]byte
		for _, c := range s.text.cpts[lo:hi] {
			for _, b := range appendCpt(utf[:0], c) {
				s.word = append(s.word, byteRuneStr[b]...)
			}
		}
		lo = hi
		if t.pretok.ignoreMerges {
			if id, ok := t.ids[string(s.word)]; ok {
				out = append(out, id)
				continue
			}
		}
		if out, err = t.mergeWord(s, string(s.word), out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *Tokenizer) mergeWord(s *bpeState, word string, out []int32) ([]int32, error) {
	s.syms = s.syms[:0]
	for off := 0; off < len(word); {
		n := min(utf8Len(word[off]), len(word)-off)
		i := len(s.syms)
		s.syms = append(s.syms, symbol{prev: i - 1, next: i + 1, lo: off, n: n})
		off += n
	}
	if len(s.syms) == 0 {
		return out, nil
	}
	s.syms[len(s.syms)-1].next = -1
	s.q = queue{items: s.q.items[:0], less: bpeLess}
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		a, b := s.syms[l], s.syms[r]
		if rank, ok := t.ranks[mergePair{word[a.lo : a.lo+a.n], word[b.lo : b.lo+b.n]}]; ok {
			s.q.push(bigram{left: l, right: r, size: a.n + b.n, rank: rank})
		}
	}
	for i := 1; i < len(s.syms); i++ {
		try(i-1, i)
	}
	for len(s.q.items) > 0 {
		b := s.q.pop()
		l, r := &s.syms[b.left], &s.syms[b.right]
		// llama.cpp compares the pair's text with the queued one; both symbols only ever grow
		// from a fixed start, so equal lengths mean equal text.
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	for _, sym := range s.syms {
		if sym.n == 0 {
			continue
		}
		piece := word[sym.lo : sym.lo+sym.n]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		// llama.cpp looks each byte of the symbol up as a one-byte token and drops the bytes
		// that are none; dropping text silently is refused here instead.
		for j := 0; j < len(piece); j++ {
			id, ok := t.ids[piece[j:j+1]]
			if !ok {
				return nil, fmt.Errorf("tokenizer: no token for %q, nor for its byte 0x%02X", piece, piece[j])
			}
			out = append(out, id)
		}
	}
	return out, nil
}
