package tokenizer

import (
	"sort"
	"unicode"
)

// Pre-tokenization splits a text into words before BPE merges run inside each word. llama.cpp
// (llm_tokenizer_bpe, unicode_regex_split) applies a list of regular expressions in turn: each
// one splits every piece the previous ones left, keeping both its matches and the text between
// them as pieces (std::regex_iterator over the piece, ECMAScript semantics: at the leftmost
// position where the expression matches, the first alternative that matches wins, quantifiers
// greedy with backtracking, lookahead bounded by the piece). Two expressions, GPT-2's and
// Llama 3's, it runs through hand-written splitters (unicode.cpp); the others through std::regex
// over a "collapsed" text where each code point above U+007F is replaced by one byte standing
// for its class, so \p{L} means ASCII letters or a non-ASCII letter, and so on.
//
// Go's regexp has neither the lookahead (?!\S) nor backtracking, so every expression here is a
// matcher written by hand from its definition: given a piece and a position it returns where the
// expression's match starting there ends, or -1. The classes it tests are the collapsed ones,
// which are the Unicode classes with one exception llama.cpp's table makes (its \p{S} leaves out
// "~"; no expression here uses \p{S}): \p{L}, \p{N} and \p{P} are the general categories (the
// ASCII members llama.cpp lists for each are exactly the category's), \s is White_Space (C++'s
// \s is the six ASCII ones, and every non-ASCII White_Space code point collapses to U+000B).

// cptText is a text as code points with their classes.
type cptText struct {
	cpts []rune
	cls  []uint8
}

func (t *cptText) set(s string) {
	t.cpts = decodeCpts(s, t.cpts)
	table := classTable()
	t.cls = t.cls[:0]
	for _, c := range t.cpts {
		t.cls = append(t.cls, table[c])
	}
}

// matcher returns the end of the match of its expression at pos inside the piece that ends at
// end (pos < end), or -1 when the expression does not match at pos. A match is never empty.
type matcher func(t *cptText, pos, end int) int

// class returns the class bits of code point i, 0 outside the piece (i >= end).
func (t *cptText) class(i, end int) uint8 {
	if i >= end {
		return 0
	}
	return t.cls[i]
}

// isOther reports [^\s\p{L}\p{N}] for code point i of a piece ending at end.
func (t *cptText) isOther(i, end int) bool {
	return i < end && t.cls[i]&(clsWS|clsL|clsN) == 0
}

func isNL(c rune) bool { return c == '\r' || c == '\n' }

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at pos, case-sensitively or not.
func contraction(t *cptText, pos, end int, fold bool) int {
	if t.cpts[pos] != '\'' || pos+1 >= end {
		return -1
	}
	lower := func(c rune) rune {
		if fold {
			return unicode.ToLower(c)
		}
		return c
	}
	switch lower(t.cpts[pos+1]) {
	case 's', 't', 'm', 'd':
		return pos + 2
	}
	if pos+2 < end {
		a, b := lower(t.cpts[pos+1]), lower(t.cpts[pos+2])
		if a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l' {
			return pos + 3
		}
	}
	return -1
}

// whitespace matches the expression's whitespace alternatives at pos: with newlines true,
// \s*[\r\n]+ first (the run of white space up to and including its last \r or \n), then
// \s+(?!\S) (the run, less its last code point when a non-space follows it inside the piece),
// then \s+.
func whitespace(t *cptText, pos, end int, newlines bool) int {
	n, lastNL := 0, -1
	for pos+n < end && t.cls[pos+n]&clsWS != 0 {
		if isNL(t.cpts[pos+n]) {
			lastNL = pos + n + 1
		}
		n++
	}
	switch {
	case newlines && lastNL > 0:
		return lastNL
	case n > 1 && pos+n < end:
		return pos + n - 1
	case n > 0:
		return pos + n
	}
	return -1
}

// matchGPT2 is GPT-2's expression, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S),
// as llama.cpp's unicode_regex_split_custom_gpt2 runs it: with \s+ after it, so every code point
// lands in a match.
func matchGPT2(t *cptText, pos, end int) int {
	if e := contraction(t, pos, end, false); e > 0 {
		return e
	}
	p := pos
	if t.cpts[pos] == ' ' {
		p++
	}
	if c := t.class(p, end); c&clsL != 0 {
		for t.class(p, end)&clsL != 0 {
			p++
		}
		return p
	} else if c&clsN != 0 {
		for t.class(p, end)&clsN != 0 {
			p++
		}
		return p
	}
	if t.isOther(p, end) {
		for t.isOther(p, end) {
			p++
		}
		return p
	}
	if e := whitespace(t, pos, end, false); e > 0 {
		return e
	}
	return pos + 1 // unreachable: every code point is white space, L, N or other
}

// matchLlama3 returns Llama 3's expression with \p{N}{1,digits}:
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (llama.cpp's unicode_regex_split_custom_llama3); digits 1 is Qwen2's, which llama.cpp runs
// through std::regex and which matches the same way otherwise.
func matchLlama3(digits int) matcher {
	return func(t *cptText, pos, end int) int {
		if e := contraction(t, pos, end, true); e > 0 {
			return e
		}
		c, cls := t.cpts[pos], t.cls[pos]
		// [^\r\n\p{L}\p{N}]?\p{L}+: the optional code point is taken when it can be, and given
		// back when no letter follows it (then the letters must start at pos).
		if !isNL(c) && cls&clsN == 0 && (cls&clsL != 0 || t.class(pos+1, end)&clsL != 0) {
			p := pos + 1
			for t.class(p, end)&clsL != 0 {
				p++
			}
			return p
		}
		if cls&clsN != 0 {
			p := pos + 1
			for p-pos < digits && t.class(p, end)&clsN != 0 {
				p++
			}
			return p
		}
		p := pos
		if c == ' ' {
			p++
		}
		if t.isOther(p, end) {
			for t.isOther(p, end) {
				p++
			}
			for p < end && isNL(t.cpts[p]) {
				p++
			}
			return p
		}
		if e := whitespace(t, pos, end, true); e > 0 {
			return e
		}
		return pos + 1 // unreachable, as in matchGPT2
	}
}

// matchRun returns [class]+ for a code point predicate.
func matchRun(in func(t *cptText, i, end int) bool) matcher {
	return func(t *cptText, pos, end int) int {
		p := pos
		for p < end && in(t, p, end) {
			p++
		}
		if p == pos {
			return -1
		}
		return p
	}
}

// matchOne returns [class], one code point.
func matchOne(in func(t *cptText, i, end int) bool) matcher {
	return func(t *cptText, pos, end int) int {
		if in(t, pos, end) {
			return pos + 1
		}
		return -1
	}
}

// matchSpaceThen returns \s?[class]+.
func matchSpaceThen(bit uint8) matcher {
	return func(t *cptText, pos, end int) int {
		p := pos
		if t.cls[pos]&clsWS != 0 {
			p++
		}
		if t.class(p, end)&bit == 0 {
			return -1 // when pos was white space, [class] cannot start there either
		}
		for t.class(p, end)&bit != 0 {
			p++
		}
		return p
	}
}

// match3Digits is [0-9][0-9][0-9].
func match3Digits(t *cptText, pos, end int) int {
	if pos+3 > end {
		return -1
	}
	for _, c := range t.cpts[pos : pos+3] {
		if c < '0' || c > '9' {
			return -1
		}
	}
	return pos + 3
}

func hasClass(bit uint8) func(t *cptText, i, end int) bool {
	return func(t *cptText, i, end int) bool { return t.cls[i]&bit != 0 }
}

// punctOr returns [\p{P}...] with the ASCII code points of extra added.
func punctOr(extra string) func(t *cptText, i, end int) bool {
	var ascii [128]bool
	for _, c := range extra {
		ascii[c] = true
	}
	return func(t *cptText, i, end int) bool {
		c := t.cpts[i]
		return t.cls[i]&clsP != 0 || c < 128 && ascii[c]
	}
}

// deepseekCJK is [一-龥ࠀ-一가-퟿] (U+4E00-9FA5, U+0800-4E00, U+AC00-D7FF), matched by llama.cpp
// with std::wregex over code points in which every non-ASCII White_Space code point was first
// replaced by U+000B, so the ideographic space U+3000 and the other spaces in U+0800-4E00 are
// not in it.
func deepseekCJK(t *cptText, i, end int) bool {
	c := t.cpts[i]
	if t.cls[i]&clsWS != 0 {
		return false
	}
	return c >= 0x0800 && c <= 0x9FA5 || c >= 0xAC00 && c <= 0xD7FF
}

// preTokenizer is one tokenizer.ggml.pre: its expressions and the flags llama.cpp sets with it.
type preTokenizer struct {
	steps        []matcher
	ignoreMerges bool // a word that is itself a token is that token, merges or not
	addBOS       bool // add_bos_token's default
	cleanSpaces  bool // clean_up_tokenization_spaces (decoding)
	noBOS        bool // the BOS id has no default (only the file's bos_token_id sets one)
}

var (
	stepsGPT2    = []matcher{matchGPT2}
	stepsLlama3  = []matcher{matchLlama3(3)}
	stepsQwen2   = []matcher{matchLlama3(1)}
	stepsSmolLM  = []matcher{matchOne(hasClass(clsN)), matchGPT2}
	stepsDefault = []matcher{matchRun(punctOr(`$+<=>^~|`)), matchGPT2, matchRun(hasClass(clsN)), match3Digits}
	stepsFalcon  = []matcher{matchRun(punctOr("$+<=>^~|`")), matchGPT2, match3Digits}
	stepsDSCoder = []matcher{
		matchOne(func(t *cptText, i, end int) bool { return isNL(t.cpts[i]) }),
		matchSpaceThen(clsL),
		matchSpaceThen(clsP),
		matchRun(deepseekCJK),
		matchOne(hasClass(clsN)),
	}
)

// preTokenizers maps each tokenizer.ggml.pre this package implements to llama.cpp's behaviour
// for it (llama-vocab.cpp: the name to pre-type table, the regex_exprs of each pre type, and
// the flags each name sets). Several names share one pre type, or two pre types one list of
// expressions; a name is here only when every expression of its type is implemented. Any other
// name is refused.
var preTokenizers = map[string]preTokenizer{
	"default": {steps: stepsDefault, cleanSpaces: true},

	"gpt-2": {steps: stepsGPT2, cleanSpaces: true}, "phi-2": {steps: stepsGPT2, cleanSpaces: true},
	"jina-es": {steps: stepsGPT2, cleanSpaces: true}, "jina-de": {steps: stepsGPT2, cleanSpaces: true},
	"gigachat": {steps: stepsGPT2, cleanSpaces: true}, "a.x-4.0": {steps: stepsGPT2, cleanSpaces: true},
	"mellum": {steps: stepsGPT2, cleanSpaces: true}, "exaone4": {steps: stepsGPT2, cleanSpaces: true},
	"mpt": {steps: stepsGPT2, cleanSpaces: true}, "olmo": {steps: stepsGPT2, cleanSpaces: true},
	"jais": {steps: stepsGPT2, cleanSpaces: true}, "trillion": {steps: stepsGPT2},
	"granite-docling": {steps: stepsGPT2},

	"llama3":       {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"llama-v3":     {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"llama-bpe":    {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"falcon3":      {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"falcon-h1":    {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"pixtral":      {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"midm-2.0":     {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"lfm2":         {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"jina-v5-nano": {steps: stepsLlama3, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"dbrx":         {steps: stepsLlama3, cleanSpaces: true},
	"smaug-bpe":    {steps: stepsLlama3, cleanSpaces: true},
	"glm4":         {steps: stepsLlama3, cleanSpaces: true, noBOS: true},
	"chatglm-bpe":  {steps: stepsLlama3, cleanSpaces: true, noBOS: true},

	"qwen2": {steps: stepsQwen2}, "deepseek-r1-qwen": {steps: stepsQwen2},
	"kormo": {steps: stepsQwen2}, "f2llmv2": {steps: stepsQwen2},
	"hunyuan": {steps: stepsQwen2}, "solar-open": {steps: stepsQwen2},
	"megrez": {steps: stepsQwen2, cleanSpaces: true}, "stablelm2": {steps: stepsQwen2, cleanSpaces: true},

	"smollm": {steps: stepsSmolLM}, "command-r": {steps: stepsSmolLM},
	"starcoder": {steps: stepsSmolLM, cleanSpaces: true}, "refact": {steps: stepsSmolLM, cleanSpaces: true},
	"codeshell": {steps: stepsSmolLM, cleanSpaces: true}, "exaone": {steps: stepsSmolLM, cleanSpaces: true},
	"minerva-7b": {steps: stepsSmolLM, cleanSpaces: true}, "mellum2": {steps: stepsSmolLM, cleanSpaces: true},

	"deepseek-coder": {steps: stepsDSCoder},
	"falcon":         {steps: stepsFalcon, cleanSpaces: true},
}

// PreTokenizers returns the tokenizer.ggml.pre names this package implements, sorted.
func PreTokenizers() []string {
	names := make([]string, 0, len(preTokenizers))
	for n := range preTokenizers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// split appends to bounds the end (in code points) of every word of t: each step splits every
// piece the steps before it left into its matches and the text between them. scratch is reused.
func (p *preTokenizer) split(t *cptText, bounds, scratch []int) (words, spare []int) {
	bounds = append(bounds[:0], len(t.cpts))
	if len(t.cpts) == 0 {
		return bounds[:0], scratch
	}
	for _, m := range p.steps {
		next := scratch[:0]
		lo := 0
		for _, hi := range bounds {
			gap := lo
			for pos := lo; pos < hi; {
				e := m(t, pos, hi)
				if e < 0 {
					pos++
					continue
				}
				if pos > gap {
					next = append(next, pos)
				}
				next = append(next, e)
				pos, gap = e, e
			}
			if gap < hi {
				next = append(next, hi)
			}
			lo = hi
		}
		bounds, scratch = next, bounds
	}
	return bounds, scratch
}

// splitWords returns the words of s as UTF-8 (before GPT-2's byte-to-character mapping), the
// code points re-encoded as llama.cpp does (an invalid byte becomes U+FFFD).
func (p *preTokenizer) splitWords(s string) []string {
	var t cptText
	t.set(s)
	bounds, _ := p.split(&t, nil, nil)
	words := make([]string, 0, len(bounds))
	lo := 0
	for _, hi := range bounds {
		var b []byte
		for _, c := range t.cpts[lo:hi] {
			b = appendCpt(b, c)
		}
		words = append(words, string(b))
		lo = hi
	}
	return words
}
