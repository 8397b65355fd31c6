package host

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// tgDecl matches a kernel-scope MSL threadgroup declaration statement on its own line:
// `threadgroup T name[N];` (no parentheses or initializer, so casts never match).
var tgDecl = regexp.MustCompile(`(?m)^([ \t]*)threadgroup([ \t]+[^;(){}=\n]*;)`)

// rewriteThreadgroup turns MSL threadgroup declarations into statics (one per workgroup, since
// workgroups run one after another), keeping every line where it was.
func rewriteThreadgroup(src string) string {
	return tgDecl.ReplaceAllString(src, "${1}static$2")
}

// stripComments blanks comments (keeping newlines and offsets) so signatures are found in code.
func stripComments(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"' || b[i] == '\'':
			q := b[i]
			for i++; i < len(b) && b[i] != q && b[i] != '\n'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			b[i], b[i+1] = ' ', ' '
			for i += 2; i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/'); i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			if i+1 < len(b) {
				b[i], b[i+1] = ' ', ' '
				i++
			}
		}
	}
	return string(b)
}

// kernelArgs finds the definition of the kernel function name and returns its parameter
// declarations (attributes included), split at top-level commas.
func kernelArgs(src string, lang Lang, name string) ([]string, error) {
	code := stripComments(src)
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*\(`)
	qual := regexp.MustCompile(`\b__global__\b`)
	if lang == MSL {
		qual = regexp.MustCompile(`\bkernel\b`)
	}
	for _, m := range re.FindAllStringIndex(code, -1) {
		line := code[strings.LastIndex(code[:m[0]], "\n")+1 : m[0]]
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue // a preprocessor line
		}
		start := strings.LastIndexAny(code[:m[0]], ";{}#") + 1
		decl := code[start:m[0]]
		if !qual.MatchString(decl) || !regexp.MustCompile(`\bvoid\b`).MatchString(decl) {
			continue
		}
		// Balanced parameter list.
		depth, i := 0, m[1]-1
		end := -1
		for ; i < len(code); i++ {
			switch code[i] {
			case '(', '[', '<':
				depth++
			case ')', ']', '>':
				depth--
			}
			if depth == 0 {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("host execution (H): the parameter list of kernel %s does not close", name)
		}
		inner := strings.TrimSpace(code[m[1]:end])
		if inner == "" || inner == "void" {
			return nil, nil
		}
		var args []string
		depth, last := 0, 0
		for j := 0; j < len(inner); j++ {
			switch inner[j] {
			case '(', '[', '<':
				depth++
			case ')', ']', '>':
				depth--
			case ',':
				if depth == 0 {
					args = append(args, strings.TrimSpace(inner[last:j]))
					last = j + 1
				}
			}
		}
		return append(args, strings.TrimSpace(inner[last:])), nil
	}
	what := `extern "C" __global__ void ` + name + "(...)"
	if lang == MSL {
		what = "kernel void " + name + "(...)"
	}
	return nil, fmt.Errorf("host execution (H): no %s kernel definition %s in the source", lang, what)
}

var attrRe = regexp.MustCompile(`\[\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([0-9]+)\s*\))?\s*\]\]`)

// mslBuiltins maps MSL argument attributes to the runtime's per-lane values.
var mslBuiltins = map[string]string{
	"thread_position_in_grid":        "::oshost::msl_gid()",
	"thread_position_in_threadgroup": "::oshost::msl_lid()",
	"threadgroup_position_in_grid":   "::oshost::msl_wgid()",
	"threadgroups_per_grid":          "::oshost::msl_nwg()",
	"threads_per_threadgroup":        "::oshost::msl_tpg()",
	"threads_per_grid":               "::oshost::msl_grid_threads()",
	"thread_index_in_threadgroup":    "::oshost::msl_lidx()",
	"threads_per_simdgroup":          "::oshost::msl_sgsize()",
	"thread_execution_width":         "::oshost::msl_sgsize()",
	"thread_index_in_simdgroup":      "::oshost::msl_lane()",
	"simdgroup_index_in_threadgroup": "::oshost::msl_sgid()",
	"simdgroups_per_threadgroup":     "::oshost::msl_nsg()",
}

// callArgs returns the C++ argument expressions the harness passes to the kernel.
func callArgs(src string, lang Lang, name string, nbufs, nparams int) ([]string, error) {
	decls, err := kernelArgs(src, lang, name)
	if err != nil {
		return nil, err
	}
	var out []string
	if lang != MSL {
		if len(decls) != nbufs+nparams {
			return nil, fmt.Errorf("host execution (H): kernel %s declares %d arguments, but %d buffers and %d parameters were given: %q",
				name, len(decls), nbufs, nparams, decls)
		}
		for i, d := range decls {
			ptr := strings.Contains(d, "*")
			if i < nbufs {
				if !ptr {
					return nil, fmt.Errorf("host execution (H): kernel %s argument %d (%s) is not a pointer, but buffer %d binds there", name, i, d, i)
				}
				out = append(out, fmt.Sprintf("::oshost::AnyPtr{::oshost::g.bufs[%d]}", i))
			} else {
				if ptr {
					return nil, fmt.Errorf("host execution (H): kernel %s argument %d (%s) is a pointer, but parameter %d binds there", name, i, d, i-nbufs)
				}
				out = append(out, fmt.Sprintf("::oshost::AnyVal{::oshost::g.params[%d]}", i-nbufs))
			}
		}
		return out, nil
	}
	seen := map[int]bool{}
	for i, d := range decls {
		m := attrRe.FindStringSubmatch(d)
		if m == nil {
			return nil, fmt.Errorf("host execution (H): kernel %s argument %d (%s) has no [[...]] attribute to bind it by", name, i, d)
		}
		if m[1] == "buffer" && m[2] != "" {
			k, _ := strconv.Atoi(m[2])
			seen[k] = true
			switch {
			case k < nbufs:
				out = append(out, fmt.Sprintf("::oshost::AnyPtr{::oshost::g.bufs[%d]}", k))
			case k == nbufs && nparams > 0:
				if strings.Contains(d, "&") {
					out = append(out, "::oshost::AnyRef{::oshost::g.params}")
				} else {
					out = append(out, "::oshost::AnyPtr{::oshost::g.params}")
				}
			default:
				return nil, fmt.Errorf("host execution (H): kernel %s argument %d (%s): [[buffer(%d)]] is beyond the %d buffers and the parameter block (%d parameters)",
					name, i, d, k, nbufs, nparams)
			}
			continue
		}
		v, ok := mslBuiltins[m[1]]
		if !ok {
			return nil, fmt.Errorf("host execution (H): kernel %s argument %d (%s): the emulation has no value for [[%s]]", name, i, d, m[1])
		}
		out = append(out, v)
	}
	for k := 0; k < nbufs; k++ {
		if !seen[k] {
			return nil, fmt.Errorf("host execution (H): kernel %s has no [[buffer(%d)]] argument, but %d buffers were given", name, k, nbufs)
		}
	}
	if nparams > 0 && !seen[nbufs] {
		return nil, fmt.Errorf("host execution (H): kernel %s has no [[buffer(%d)]] parameter block, but %d parameters were given", name, nbufs, nparams)
	}
	return out, nil
}

// generateHarness returns harness.cpp: the dialect header, the kernel text (kernel.<ext>) and
// a main that calls the kernel on every lane.
func generateHarness(src string, lang Lang, name string, nbufs, nparams int) (string, error) {
	if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(name) {
		return "", fmt.Errorf("host execution (H): %q is not a kernel function name", name)
	}
	args, err := callArgs(src, lang, name, nbufs, nparams)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by onesource (backends/cfamily/host): host execution (level H) of the %s kernel %s.\n", lang, name)
	b.WriteString("// EMULATION ON THE CPU, not a GPU run.\n")
	fmt.Fprintf(&b, "#include \"%s\"\n", lang.header())
	fmt.Fprintf(&b, "#include \"kernel.%s\"\n\n", lang.ext())
	b.WriteString("static void oshost_entry(void) {\n")
	fmt.Fprintf(&b, "  %s(", name)
	for i, a := range args {
		if i > 0 {
			b.WriteString(",\n      ")
		}
		b.WriteString(a)
	}
	b.WriteString(");\n}\n\n")
	fmt.Fprintf(&b, "int main(void) { return ::oshost::run_main(oshost_entry, %q, %d, %d); }\n", name, nbufs, nparams)
	return b.String(), nil
}
