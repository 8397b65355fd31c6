package cfamily

import (
	"fmt"
	"strconv"
	"strings"
)

// cxxKeywords are the C++ keywords and alternative tokens, plus names every dialect's text
// relies on (types, math functions, vector types).
var cxxKeywords = strings.Fields(`
	alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
	char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
	co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
	extern false float for friend goto if inline int long mutable namespace new noexcept not
	not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
	return short signed sizeof static static_assert static_cast struct switch template this
	thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
	wchar_t while xor xor_eq restrict _Float16 __fp16 NULL main
	half uint uchar ushort size_t ptrdiff_t
	abs fabs fabsf floor floorf sqrt sqrtf min max select memcpy
	kernel device constant threadgroup thread metal
`)

func init() {
	for _, s := range []string{"bool", "char", "uchar", "short", "ushort", "int", "uint", "half", "float", "double", "long", "ulong"} {
		for n := 2; n <= 4; n++ {
			cxxKeywords = append(cxxKeywords, fmt.Sprintf("%s%d", s, n))
		}
	}
}

// namer hands out unique, valid C identifiers for one kernel.
type namer struct {
	used     map[string]bool
	reserved map[string]bool
	next     map[string]int // per sanitized base: the first suffix fresh may find free
}

func newNamer(reserved []string) *namer {
	n := &namer{used: map[string]bool{}, reserved: map[string]bool{}, next: map[string]int{}}
	for _, r := range cxxKeywords {
		n.reserved[r] = true
	}
	for _, r := range reserved {
		n.reserved[r] = true
	}
	return n
}

// sanitize turns s into an identifier that is not reserved: characters other than letters,
// digits and '_' become '_', runs of '_' collapse (C++ reserves "__"), leading and trailing
// underscores go, a leading digit gets a letter prefix, a reserved word or a name in the printer's os_ namespace gets a
// trailing or leading mark. An empty result is "v".
func (n *namer) sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			r = '_'
		}
		if r == '_' && strings.HasSuffix(b.String(), "_") {
			continue
		}
		b.WriteRune(r)
	}
	out := strings.Trim(b.String(), "_")
	if out == "" {
		return "v"
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "v" + out
	}
	if strings.HasPrefix(out, "os_") || strings.HasPrefix(out, "loop") && strings.HasSuffix(out, "_first") {
		out = "u" + out
	}
	if n.reserved[out] {
		out += "_"
	}
	return out
}

// fresh returns a new unique identifier based on base (sanitized): base itself, or else base_2,
// base_3, ..., the first that is free. Names are never released, so every suffix below one fresh
// returned for base stays taken: the next search for base starts after it, which keeps a kernel
// with many values of one name linear to print.
func (n *namer) fresh(base string) string {
	base = n.sanitize(base)
	name := base
	if n.used[name] || n.reserved[name] {
		stem := strings.TrimRight(base, "_") + "_"
		i := max(n.next[base], 2)
		for {
			name = stem + strconv.Itoa(i)
			if !n.used[name] && !n.reserved[name] {
				break
			}
			i++
		}
		n.next[base] = i + 1
	}
	n.used[name] = true
	return name
}

// exact claims name as it is (the printer's own names, such as loop flags); it returns false if
// the name is taken.
func (n *namer) exact(name string) bool {
	if n.used[name] || n.reserved[name] {
		return false
	}
	n.used[name] = true
	return true
}
