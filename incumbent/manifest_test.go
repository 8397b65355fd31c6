package incumbent

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
)

func TestExpr(t *testing.T) {
	vars := map[string]float64{"n": 4096, "rows": 512, "eps": 1e-6}
	for _, c := range []struct {
		src string
		i   int64
		f   float64
	}{
		{"n", 4096, 4096},
		{"n*rows", 2097152, 2097152},
		{"(n + 63) / 64", 64, (4096 + 63) / 64.0},
		{"cdiv(n+1, 512)", 9, 9},
		{"-rows + 2*(n - 1)", 7678, 7678},
		{"min(n, rows) + max(1, 0x10)", 528, 528},
		{"7/2", 3, 3.5},
	} {
		x, err := ParseExpr(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if i, err := x.EvalInt(vars); err != nil || i != c.i {
			t.Errorf("EvalInt(%s) = %d, %v; want %d", c.src, i, err, c.i)
		}
		if f, err := x.EvalFloat(vars); err != nil || f != c.f {
			t.Errorf("EvalFloat(%s) = %v, %v; want %v", c.src, f, err, c.f)
		}
	}
	if f, _ := mustExpr(t, "eps").EvalFloat(vars); float32(f) != float32(1e-6) {
		t.Errorf("eps = %v", f)
	}
	if _, err := mustExpr(t, "eps").EvalInt(vars); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Errorf("EvalInt(eps): %v, want a not-an-integer error", err)
	}
	if _, err := mustExpr(t, "k").EvalInt(vars); err == nil || !strings.Contains(err.Error(), `unknown shape variable "k"`) {
		t.Errorf("unknown variable: %v", err)
	}
	if _, err := mustExpr(t, "n/(rows-512)").EvalInt(vars); err == nil {
		t.Error("division by zero: no error")
	}
	for _, bad := range []string{"", "n +", "(n", "n)", "2 $ 3", "foo(1)", "cdiv(1)", "1..2"} {
		if _, err := ParseExpr(bad); err == nil {
			t.Errorf("ParseExpr(%q): no error", bad)
		}
	}
}

func mustExpr(t *testing.T, s string) *Expr {
	t.Helper()
	x, err := ParseExpr(s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// ggmlRMSNorm registers ggml's Vulkan rms_norm.comp (ggml/src/ggml-vulkan/vulkan-shaders)
// unmodified: its bindings A, B, D (generic_binary_head.glsl), the binary push-constant block
// (ne; ne00..nb03; ne10..nb13; ne20..nb23; misalign_offsets; param1 = eps, param2, param3 as
// i32), the spec constants norepeat (0, bool), do_multiply (1, bool) and BLOCK_SIZE (3, which
// also sets local_size_x through local_size_x_id), and the one-workgroup-per-row grid. Strides
// are in elements, as ggml passes them. The shape is a contiguous rows x n f32 matrix with an
// n-element weight.
const ggmlRMSNorm = `{
  "version": 1,
  "incumbents": [{
    "name": "ggml_rms_norm_mul_f32",
    "op": "rms_norm", "type": "f32", "backend": "vulkan",
    "source": {
      "glsl": "rms_norm.comp",
      "defines": {"A_TYPE": "float", "B_TYPE": "float", "D_TYPE": "float", "FLOAT_TYPE": "float"},
      "include_dirs": ["."],
      "glslc_args": ["--target-env=vulkan1.2"]
    },
    "entry": "main",
    "bindings": [
      {"binding": 0, "operand": "x", "readonly": true},
      {"binding": 1, "operand": "w", "readonly": true},
      {"binding": 2, "operand": "y"}
    ],
    "push_constants": [
      {"name": "ne",   "type": "u32", "value": "n*rows"},
      {"name": "ne00", "type": "u32", "value": "n"},
      {"name": "ne01", "type": "u32", "value": "rows"},
      {"name": "ne02", "type": "u32", "value": 1},
      {"name": "ne03", "type": "u32", "value": 1},
      {"name": "nb00", "type": "u32", "value": 1},
      {"name": "nb01", "type": "u32", "value": "n"},
      {"name": "nb02", "type": "u32", "value": "n*rows"},
      {"name": "nb03", "type": "u32", "value": "n*rows"},
      {"name": "ne10", "type": "u32", "value": "n"},
      {"name": "ne11", "type": "u32", "value": 1},
      {"name": "ne12", "type": "u32", "value": 1},
      {"name": "ne13", "type": "u32", "value": 1},
      {"name": "nb10", "type": "u32", "value": 1},
      {"name": "nb11", "type": "u32", "value": "n"},
      {"name": "nb12", "type": "u32", "value": "n"},
      {"name": "nb13", "type": "u32", "value": "n"},
      {"name": "ne20", "type": "u32", "value": "n"},
      {"name": "ne21", "type": "u32", "value": "rows"},
      {"name": "ne22", "type": "u32", "value": 1},
      {"name": "ne23", "type": "u32", "value": 1},
      {"name": "nb20", "type": "u32", "value": 1},
      {"name": "nb21", "type": "u32", "value": "n"},
      {"name": "nb22", "type": "u32", "value": "n*rows"},
      {"name": "nb23", "type": "u32", "value": "n*rows"},
      {"name": "misalign_offsets", "type": "u32", "value": 0},
      {"name": "param1", "type": "f32", "value": "eps"},
      {"name": "param2", "type": "f32", "value": 0},
      {"name": "param3", "type": "i32", "value": 0}
    ],
    "spec_constants": [
      {"id": 0, "type": "bool", "value": 0},
      {"id": 1, "type": "bool", "value": 1},
      {"id": 3, "type": "i32", "value": 512}
    ],
    "workgroup_size": [512, 1, 1],
    "grid": ["rows", 1, 1],
    "shape": {"rows": 512, "n": 4096},
    "notes": "ggml's rms_norm with the weight multiply fused (do_multiply); BLOCK_SIZE 512 as ggml-vulkan.cpp uses"
  }]
}`

// ggmlStub declares the same interface as ggml's rms_norm.comp (push block, bindings, spec
// constants, local_size_x_id) so the entry above can be instantiated here without ggml's tree.
const ggmlStub = `#version 450
layout (push_constant) uniform parameter {
    uint ne;
    uint ne00; uint ne01; uint ne02; uint ne03; uint nb00; uint nb01; uint nb02; uint nb03;
    uint ne10; uint ne11; uint ne12; uint ne13; uint nb10; uint nb11; uint nb12; uint nb13;
    uint ne20; uint ne21; uint ne22; uint ne23; uint nb20; uint nb21; uint nb22; uint nb23;
    uint misalign_offsets;
    float param1; float param2; int param3;
} p;
layout (binding = 0) readonly buffer A {A_TYPE data_a[];};
layout (binding = 1) readonly buffer B {B_TYPE data_b[];};
layout (binding = 2) writeonly buffer D {D_TYPE data_d[];};
layout (constant_id = 0) const bool norepeat = false;
layout (constant_id = 3) const int BLOCK_SIZE = 512;
layout (local_size_x_id = 3, local_size_y = 1, local_size_z = 1) in;
layout (constant_id = 1) const bool do_multiply = false;
shared FLOAT_TYPE sumsh[BLOCK_SIZE];
void main() {
    uint i = gl_WorkGroupID.x * p.nb01 + gl_LocalInvocationID.x;
    sumsh[gl_LocalInvocationID.x] = data_a[i];
    barrier();
    FLOAT_TYPE v = sumsh[0] * p.param1;
    if (do_multiply && !norepeat) { v *= data_b[0]; }
    data_d[i] = D_TYPE(v);
}
`

func TestGGMLRMSNormEntry(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rms_norm.comp"), []byte(ggmlStub), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Parse([]byte(ggmlRMSNorm), "ggml.json", dir)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Entry("rms_norm", "f32", "vulkan")
	if e == nil || len(e.PushConstants) != 29 || strings.Join(e.Operands(), ",") != "x,w,y" {
		t.Fatalf("entry %+v", e)
	}
	if got := strings.Join(e.Vars(), ","); got != "eps,n,rows" {
		t.Fatalf("vars %s", got)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the entry is parsed but not instantiated")
	}
	l, err := e.Vulkan(map[string]float64{"rows": 512, "n": 4096, "eps": 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Push) != 116 || l.Groups != [3]uint32{512, 1, 1} || l.Module.WorkgroupSize != [3]uint32{512, 1, 1} {
		t.Fatalf("push %d bytes, groups %v, workgroup %v", len(l.Push), l.Groups, l.Module.WorkgroupSize)
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(l.Push[4*i:]) }
	if word(0) != 512*4096 || word(1) != 4096 || word(6) != 4096 || math.Float32frombits(word(26)) != float32(1e-6) || word(28) != 0 {
		t.Fatalf("push words %v", l.Push)
	}
	// The bool spec constant 1 (do_multiply) was patched to true.
	base, _ := e.SPIRV()
	if HashWords(base) == l.Hash {
		t.Fatal("spec constants did not change the module")
	}
}

func TestPatchSpecConstants(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	m, err := Load(filepath.Join("..", "examples", "incumbents", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := m.Entry("matvec", "f32", "vulkan")
	words, err := e.SPIRV()
	if err != nil {
		t.Fatal(err)
	}
	out, err := PatchSpecConstants(words, map[uint32]uint32{0: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	diff := 0
	for i := range words {
		if words[i] != out[i] {
			diff++
			if words[i] != 128 && words[i] != 1 || out[i] != 64 {
				t.Fatalf("word %d: %d -> %d, want 128 or 1 -> 64", i, words[i], out[i])
			}
		}
	}
	// glslang declares SpecId 0 twice: BLOCK (default 128) and the workgroup width of
	// local_size_x_id (default 1!); both are patched.
	if diff != 2 {
		t.Fatalf("%d words changed, want 2", diff)
	}
	if _, err := PatchSpecConstants(words, map[uint32]uint32{7: 1}, nil); err == nil || !strings.Contains(err.Error(), "SpecId 7") {
		t.Fatalf("unknown SpecId: %v", err)
	}
	if _, err := PatchSpecConstants(words, nil, map[uint32]bool{0: true}); err == nil {
		t.Fatal("bool for a numeric spec constant: no error")
	}
	// A manifest workgroup size that disagrees with a literal local_size is refused.
	e2 := m.Entry("add", "f32", "vulkan")
	e2.WorkgroupSize[0] = "128"
	e2.exprs["incumbents[1].workgroup_size[0]"] = mustExpr(t, "128")
	if _, err := e2.Vulkan(map[string]float64{"rows": 1, "n": 1000}); err == nil || !strings.Contains(err.Error(), "declares [256 1 1]") {
		t.Fatalf("workgroup mismatch: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "k.comp"), []byte("#version 450\nvoid main(){}\n"), 0o644)
	entry := func(extra string) string {
		return `{"version": 1, "incumbents": [{"op": "add", "type": "f32", "backend": "vulkan", "source": {"glsl": "k.comp"},
"bindings": [{"binding": 0, "operand": "a"}], "workgroup_size": [64, 1, 1], "grid": ["n", 1, 1]` + extra + `}]}`
	}
	for _, c := range []struct{ data, want string }{
		{"{\n  \"version\": 1,\n  \"incumbents\": [\n    {\"op\": }\n  ]\n}", "m.json:4:"},
		{`{"version": 1, "incumbents": [{"op": 3}]}`, "m.json:1:"},
		{`{"version": 2, "incumbents": []}`, "version: 2"},
		{`{"incumbents": []}`, "version: missing"},
		{`{"version": 1, "incumbents": [{"op": "add"}]}`, "incumbents[0]: op, type and backend are required"},
		{`{"version": 1, "bogus": 1}`, `unknown field "bogus"`},
		{entry(`, "push_constants": [{"name": "n", "type": "u32", "value": "n +"}]`), "incumbents[0].push_constants[0].value: expression"},
		{entry(`, "push_constants": [{"name": "n", "type": "u64", "value": "n"}]`), `incumbents[0].push_constants[0].type: "u64"`},
		{entry(`, "spec_constants": [{"id": 1, "type": "u32", "value": 1}, {"id": 1, "type": "u32", "value": 2}]`), "spec_constants[1].id: spec constant 1 set twice"},
		{entry(`, "features": ["warp_drive"]`), `features[0]: unknown feature "warp_drive"`},
		{strings.Replace(entry(""), `"binding": 0`, `"binding": 1`, 1), "incumbents[0].bindings[0].binding: 1, want 0..0"},
		{strings.Replace(entry(""), `k.comp`, `missing.comp`, 1), "incumbents[0].source.glsl:"},
		{strings.Replace(entry(""), `"glsl": "k.comp"`, `"glsl": "k.comp", "spirv": "k.comp"`, 1), "want exactly one of glsl, spirv"},
		{strings.Replace(entry(""), `"operand": "a"`, `"operand": "a", "scratch_bytes": 4`, 1), "operand and scratch_bytes are exclusive"},
		{``, "empty or truncated"},
		// Requirements.
		{entry(`, "requires": ["subgroup_telepathy"]`), `incumbents[0].requires[0]: unknown requirement "subgroup_telepathy" (known: atomic_float32_add, float16, float64, int16, int8, int8_dot,`},
		{entry(`, "features": ["subgroup_vote"]`), `incumbents[0].features[0]: unknown feature "subgroup_vote"`},
		{entry(`, "subgroup_size": "sg +"`), "incumbents[0].subgroup_size: expression"},
		{entry(`, "subgroup_size": 32, "full_subgroups": false`), "incumbents[0].full_subgroups: false, but a required subgroup size (incumbents[0].subgroup_size) runs with full subgroups"},
		{entry(`, "full_subgroups": "yes"`), "m.json:2:"},
		// Buffer views.
		{strings.Replace(entry(""), `"operand": "a"`, `"operand": "a", "offset": "4 *"`, 1), "incumbents[0].bindings[0].offset: expression"},
		{strings.Replace(entry(""), `"operand": "a"`, `"scratch_bytes": 64, "offset": 16`, 1), "incumbents[0].bindings[0].offset: a scratch buffer is bound whole"},
		{strings.Replace(entry(""), `"operand": "a"`, `"scratch_bytes": 64, "size": 16`, 1), "incumbents[0].bindings[0].size: a scratch buffer is bound whole"},
		// Variants.
		{entry(`, "variants": [{"grid": [1, 1, 1]}]`), "incumbents[0].variants[0].when: missing value"},
		{entry(`, "variants": [{"when": "n >"}]`), "incumbents[0].variants[0].when: expression"},
		{entry(`, "variants": [null]`), "incumbents[0].variants[0]: null variant"},
		{entry(`, "variants": [{"when": 1, "grid": ["n", 1]}]`), "incumbents[0].variants[0].grid[2]: missing value"},
		{entry(`, "variants": [{"when": 1, "workgroup_size": ["64 64", 1, 1]}]`), "incumbents[0].variants[0].workgroup_size[0]: expression"},
		{entry(`, "variants": [{"when": 1, "bindings": []}]`), "incumbents[0].variants[0].bindings: at least one binding is required"},
		{entry(`, "variants": [{"when": 1, "bindings": [{"binding": 1, "operand": "a"}]}]`), "incumbents[0].variants[0].bindings[0].binding: 1, want 0..0"},
		{entry(`, "variants": [{"when": 1, "push_constants": [{"name": "x", "type": "f64", "value": 1}]}]`), `incumbents[0].variants[0].push_constants[0].type: "f64"`},
		{entry(`, "push_constants": [{"name": "x", "type": "u32", "value": 1}], "variants": [{"when": 1, "push_constant_size": 2}]`), "incumbents[0].variants[0].push_constant_size: 2, the fields need 4 bytes"},
		{entry(`, "variants": [{"when": 1, "spec_constants": [{"id": 0, "type": "u32", "value": 1}, {"id": 0, "type": "u32", "value": 1}]}]`), "incumbents[0].variants[0].spec_constants[1].id: spec constant 0 set twice"},
		{entry(`, "variants": [{"when": 1, "source": {"glsl": "nope.comp"}}]`), "incumbents[0].variants[0].source.glsl:"},
		{entry(`, "variants": [{"when": 1, "source": {"cuda": "k.comp"}}]`), "incumbents[0].variants[0].source: a vulkan incumbent needs glsl or spirv"},
		{entry(`, "variants": [{"when": 1, "source": {"spirv": "k.comp"}, "defines": {"A": "1"}}]`), "incumbents[0].variants[0].defines: defines apply to a glsl, cuda or hip source"},
		{entry(`, "variants": [{"when": 1, "requires": ["warp_drive"]}]`), `incumbents[0].variants[0].requires[0]: unknown requirement "warp_drive"`},
		{entry(`, "subgroup_size": 32, "variants": [{"when": 1, "full_subgroups": false}]`), "incumbents[0].variants[0].full_subgroups: false, but a required subgroup size (incumbents[0].subgroup_size)"},
		{entry(`, "variants": [{"name": "a", "when": 1}, {"name": "a", "when": 0}]`), `incumbents[0].variants[1].name: "a" already used by incumbents[0].variants[0]`},
		{entry(`, "variants": [{"when": 1, "bogus": 1}]`), `unknown field "bogus"`},
	} {
		_, err := Parse([]byte(c.data), "m.json", dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.60q): %v, want an error containing %q", c.data, err, c.want)
		}
	}
	if _, err := Parse([]byte(entry("")), "m.json", dir); err != nil {
		t.Fatalf("valid entry: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "nope.json")); err == nil {
		t.Fatal("Load of a missing file: no error")
	}
}

// TestCheckWork: a launch's invocations (grid times workgroup, saturating) are bounded by the
// call's operand bytes: 64 per byte, at least 2^20.
func TestCheckWork(t *testing.T) {
	launch := func(g [3]uint32, wg [3]uint32) *Launch {
		return &Launch{Groups: g, Module: &vulkan.Module{WorkgroupSize: wg}}
	}
	for _, tc := range []struct {
		name  string
		l     *Launch
		bytes int
		ok    bool
	}{
		{"add at rows=4,n=256", launch([3]uint32{4, 1, 1}, [3]uint32{256, 1, 1}), 12288, true},
		{"65535 x 65535 workgroups at rows=4,n=256", launch([3]uint32{65535, 65535, 1}, [3]uint32{256, 1, 1}), 12288, false},
		{"the floor at a tiny shape", launch([3]uint32{1024, 1, 1}, [3]uint32{1024, 1, 1}), 16, true},
		{"just over the floor", launch([3]uint32{1025, 1, 1}, [3]uint32{1024, 1, 1}), 16, false},
		{"64 per byte", launch([3]uint32{1 << 16, 1, 1}, [3]uint32{1024, 1, 1}), 1 << 20, true},
		{"past 64 per byte", launch([3]uint32{1<<16 + 1, 1, 1}, [3]uint32{1024, 1, 1}), 1 << 20, false},
		{"saturating", launch([3]uint32{1 << 31, 1 << 31, 1 << 31}, [3]uint32{1024, 1024, 64}), 1 << 40, false},
	} {
		err := CheckWork(tc.l, tc.bytes)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %d invocations, %d bytes: %v", tc.name, tc.l.Invocations(), tc.bytes, err)
		}
	}
	if n := launch([3]uint32{1 << 31, 1 << 31, 1 << 31}, [3]uint32{1024, 1024, 64}).Invocations(); n != math.MaxUint64 {
		t.Errorf("a product past 2^64 gives %d, want it saturated", n)
	}
}
