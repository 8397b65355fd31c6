package tokenizer

import (
	"slices"
	"testing"
	"unicode"
)

// The expectations below are worked out by hand from llama.cpp's expressions (quoted in each
// group) under ECMAScript rules: at the leftmost position where the expression matches, its
// first matching alternative wins; quantifiers are greedy and give back what a later part needs;
// lookahead stops at the piece's end; every expression of a list splits the pieces the ones
// before it left, keeping the text between matches as pieces.
var pretokCases = []struct {
	pre  string
	text string
	want []string
}{
	// gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) (then \s+)
	{"gpt-2", "Hello world", []string{"Hello", " world"}},
	{"gpt-2", "I'm here", []string{"I", "'m", " here"}},
	{"gpt-2", "I'M", []string{"I", "'", "M"}}, // the contractions are lower-case only
	{"gpt-2", "abc123def", []string{"abc", "123", "def"}},
	{"gpt-2", "a  b", []string{"a", " ", " b"}}, // \s+(?!\S) gives back the space before b
	{"gpt-2", "x   ", []string{"x", "   "}},     // at the end nothing follows: all three
	{"gpt-2", "3.14", []string{"3", ".", "14"}},
	{"gpt-2", "hi!! ok", []string{"hi", "!!", " ok"}},
	{"gpt-2", "\n\nfoo", []string{"\n", "\n", "foo"}},
	{"gpt-2", "Führer нещо", []string{"Führer", " нещо"}},
	{"gpt-2", "a٣٤", []string{"a", "٣٤"}},               // Arabic-Indic digits are \p{N}
	{"gpt-2", "a\u00a0b", []string{"a", "\u00a0", "b"}}, // only U+0020 is the optional space
	{"gpt-2", " 🦙.cpp", []string{" 🦙.", "cpp"}},         // the emoji is [^\s\p{L}\p{N}]
	{"gpt-2", "'", []string{"'"}},                       // a quote at the piece's end
	{"gpt-2", "e\u0301", []string{"e", "\u0301"}},       // a combining mark is not \p{L}
	{"gpt-2", "\xffab", []string{"\ufffd", "ab"}},       // an invalid byte reads as U+FFFD
	{"gpt-2", "", nil},

	// llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
	//         ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
	{"llama3", "I'M here", []string{"I", "'M", " here"}},
	{"llama3", "12345", []string{"123", "45"}},
	{"llama3", "a.b", []string{"a", ".b"}}, // one non-letter may lead a word
	{"llama3", "hello\n\nworld", []string{"hello", "\n\n", "world"}},
	{"llama3", "  \n x", []string{"  \n", " x"}}, // \s*[\r\n]+ ends at the last newline
	{"llama3", "x  y", []string{"x", " ", " y"}},
	{"llama3", "!!\n\nok", []string{"!!\n\n", "ok"}},
	{"llama3", "\tword", []string{"\tword"}},
	{"llama3", "3rd", []string{"3", "rd"}},
	{"llama3", " 1234", []string{" ", "123", "4"}},
	{"llama3", "a\u3000b", []string{"a", "\u3000b"}}, // any non-newline space may lead a word
	{"llama-bpe", "12345", []string{"123", "45"}},

	// qwen2: llama3's expression with \p{N} for \p{N}{1,3}
	{"qwen2", "12345", []string{"1", "2", "3", "4", "5"}},
	{"qwen2", " 1234", []string{" ", "1", "2", "3", "4"}},
	{"qwen2", "I'M here", []string{"I", "'M", " here"}},
	{"qwen2", "a.b\r\n\r\nc", []string{"a", ".b", "\r\n\r\n", "c"}},

	// default: [\p{P}\$\+<=>\^~\|]+, then gpt-2's, then \p{N}+, then [0-9][0-9][0-9]
	{"default", " (x)", []string{" ", "(", "x", ")"}}, // gpt-2 alone: " (", "x", ")"
	{"default", "12345", []string{"123", "45"}},
	{"default", "1234567", []string{"123", "456", "7"}},
	{"default", "x`~y", []string{"x", "`", "~", "y"}}, // ~ is in the first class, ` is not
	{"default", "wait...what?!", []string{"wait", "...", "what", "?!"}},
	{"default", "it's", []string{"it", "'", "s"}}, // the first expression takes the quote
	{"default", "a—b", []string{"a", "—", "b"}},   // U+2014 is \p{P}

	// falcon: [\p{P}\$\+<=>\^~\|`]+, then gpt-2's, then [0-9][0-9][0-9]
	{"falcon", "x`~y", []string{"x", "`~", "y"}},
	{"falcon", "12345", []string{"123", "45"}},
	{"falcon", "٣٤٥٦", []string{"٣٤٥٦"}}, // no \p{N}+ step, and [0-9] is ASCII

	// smollm: \p{N}, then gpt-2's
	{"smollm", "abc 123", []string{"abc", " ", "1", "2", "3"}}, // gpt-2 alone: "abc", " 123"
	{"smollm", "I'm", []string{"I", "'m"}},

	// deepseek-coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N}
	{"deepseek-coder", "int x = 10;\n", []string{"int", " x", " = ", "1", "0", ";", "\n"}},
	{"deepseek-coder", "a\r\nb", []string{"a", "\r", "\n", "b"}},
	{"deepseek-coder", "a ,,b", []string{"a", " ,,", "b"}},
	{"deepseek-coder", "→=→", []string{"→", "=", "→"}},           // U+2192 is in U+0800-4E00
	{"deepseek-coder", "→\u3000→", []string{"→", "\u3000", "→"}}, // U+3000 is a space, not in it
	{"deepseek-coder", "a\u00a0b", []string{"a", "\u00a0b"}},     // \s is any White_Space
	// CJK ideographs are \p{L}, so \s?\p{L}+ takes " 世界"; the range expression then splits
	// the space off it again
	{"deepseek-coder", "你好 世界", []string{"你好", " ", "世界"}},
	{"deepseek-coder", "①②", []string{"①", "②"}}, // in the range, then \p{N} splits them
}

func TestPreTokenizers(t *testing.T) {
	for _, c := range pretokCases {
		p, ok := preTokenizers[c.pre]
		if !ok {
			t.Fatalf("pre-tokenizer %q is not implemented", c.pre)
		}
		got := p.splitWords(c.text)
		if len(got) == 0 {
			got = nil
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %q:\n got  %q\n want %q", c.pre, c.text, got, c.want)
		}
	}
}

// TestPreTokenizerNames checks the names the issue asks for are implemented.
func TestPreTokenizerNames(t *testing.T) {
	names := PreTokenizers()
	for _, n := range []string{"default", "gpt-2", "llama3", "llama-bpe", "qwen2", "deepseek-coder", "falcon", "smollm"} {
		if !slices.Contains(names, n) {
			t.Errorf("%q is not implemented (have %v)", n, names)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("PreTokenizers() is not sorted: %v", names)
	}
}

// TestCollapsedASCIIClasses checks the premise that lets the matchers use Unicode classes:
// the ASCII members llama.cpp's collapsed expressions give \p{N}, \p{L} and \p{P} (unicode.cpp,
// k_ucat_map: 0-9; A-Za-z; !-#%-*,-/:-;?-@[-]_{}) are exactly the ASCII code points of those
// general categories, and C++'s \s (space, \t \n \v \f \r) is White_Space's ASCII part.
func TestCollapsedASCIIClasses(t *testing.T) {
	in := func(ranges string) func(rune) bool {
		return func(c rune) bool {
			for i := 0; i+3 <= len(ranges); i += 3 {
				if c >= rune(ranges[i]) && c <= rune(ranges[i+2]) {
					return true
				}
			}
			return false
		}
	}
	for _, c := range []struct {
		name  string
		bit   uint8
		llama func(rune) bool
	}{
		{"N", clsN, in("0-9")},
		{"L", clsL, in("A-Za-z")},
		{"P", clsP, in("!-#%-*,-/:-;?-@[-]_-_{-{}-}")},
		{"White_Space", clsWS, in("\t-\r - ")},
	} {
		for r := rune(0); r < 128; r++ {
			if got, want := classTable()[r]&c.bit != 0, c.llama(r); got != want {
				t.Errorf("%q: in %s per Go's tables %v, per llama.cpp's collapsed class %v", r, c.name, got, want)
			}
		}
	}
	// and every non-ASCII White_Space code point is in no category llama.cpp collapses
	for r := rune(128); r < maxCpt; r++ {
		if unicode.Is(unicode.White_Space, r) && classTable()[r]&(clsL|clsN|clsP|clsS|clsM) != 0 {
			t.Errorf("%U is White_Space and in L, N, P, S or M", r)
		}
	}
}
