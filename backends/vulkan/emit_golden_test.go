package vulkan_test

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (go test ./backends/vulkan -run Golden -update)")

// goldenCases are the representative kernels whose disassembly is kept in testdata/.
var goldenCases = []string{
	"arith_f32", "narrow_storage", "dot_shuffle", "memory_spaces", "atomics", "builtins",
	"cf_loops", "cf_terminating_branches", "cf_return_in_continuing", "names_and_consts",
	// Vulkan 1.1 (SPIR-V 1.3): the extensions, the Input-only interface, the splatted select.
	"narrow_storage@vulkan1.1", "dot_shuffle@vulkan1.1", "arith_vec4_f32@vulkan1.1",
	// Native f32 atomic adds (SPV_EXT_shader_atomic_float_add in every environment).
	"atomics_f32@vulkan1.1",
}

// TestGolden compares the spirv-dis text of representative kernels, preceded by their IR as
// comments, with testdata/<name>.spvasm (name@env: emitted for that environment, in
// testdata/<name>.<env>.spvasm). A different spirv-tools version may print some
// instructions differently: look at the diff, then regenerate with -update.
func TestGolden(t *testing.T) {
	needSPIRVTools(t)
	byName := map[string]emitCase{}
	for _, c := range emitCases {
		byName[c.name] = c
	}
	for _, name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			base, envName, _ := strings.Cut(name, "@")
			env, err := vulkan.ParseEnv(envName)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := byName[base]
			if !ok {
				t.Fatalf("no emit case %q", base)
			}
			k := buildCase(t, c)
			mod, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: c.sub, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			dis, err := spirvDis(t, mod.Words, false)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			sb.WriteString("; Golden file: go test ./backends/vulkan -run Golden -update\n; IR:\n")
			for _, line := range strings.Split(strings.TrimRight(k.String(), "\n"), "\n") {
				sb.WriteString(";   " + line + "\n")
			}
			sb.WriteString(dis)
			got := sb.String()
			path := goldenPath(strings.ReplaceAll(name, "@", "."))
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (create it with -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the emitted module (regenerate with -update after checking):\n%s", path, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff shows the first differing lines of two texts.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var sb strings.Builder
	n := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			sb.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + a + "\n  got:  " + b + "\n")
			if n++; n == 10 {
				break
			}
		}
	}
	return sb.String()
}
