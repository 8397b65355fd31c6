package ledger

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fixture is the hand-built tree under testdata/tree.
const fixture = "testdata/tree"

// wantFiles are the counted files of the fixture and their lines, worked out by hand from the
// sources (C = a counted line; blank and comment-only lines do not count).
var wantFiles = []File{
	// common.cuh: #pragma once, the __device__ line, the return (its // comment trails code), the
	// closing brace = 4. The blank line and the "// Helpers" line do not count.
	{fixture + "/cuda/common.cuh", CUDA, 4},
	// kernels.cu = 11: the #include; the __global__ line (trailing // comment); the int i line; the
	// line with code between two /* */ comments; the closing brace; the four __device__ lines whose
	// literals hold "// not a comment /* nor this", '/', '"' and an escaped \" followed by "//" (all
	// code, so none of them opens a comment and the lines after them stay code); "int x = 1; /*"
	// and "ends here */ int y = 2;" (code on both sides of a two-line block comment). Not counted:
	// the first line (//), the three-line /* */ block, three blank lines, the comment-only
	// "/* only a comment */", the // comment continued by a trailing backslash onto the next line
	// (2 lines), the last two-line block comment and a line holding only a tab.
	{fixture + "/cuda/kernels.cu", CUDA, 11},
	// add.hip: #include, __global__ line, body, brace = 4; the 3-line /* */ block does not count.
	{fixture + "/hip/add.hip", HIP, 4},
	// device.cpp, a .cpp in hip/ with a __global__ kernel: #include, __global__ line, body,
	// brace = 4 (a // line and a blank line do not count).
	{fixture + "/hip/device.cpp", HIP, 4},
	// metal/ops.metal = 10: #include, using, the 4-entry constant table (declaration, two numeric
	// lines, "};" = 4: 2 numeric lines of 10 is far below the table bar), the two lines of the
	// kernel signature, the body (trailing /* */), the brace. The // line and 2 blank lines do not.
	{fixture + "/metal/ops.metal", Metal, 10},
	// rocm/helpers.hpp, a header in rocm/ with a __device__ function: all 4 lines are code.
	{fixture + "/rocm/helpers.hpp", HIP, 4},
	// common.glsl, included by rms_norm.comp: the #include and the function = 2 (a // line not).
	{fixture + "/vulkan/common.glsl", GLSL, 2},
	// inc/types.glsl, included by common.glsl (resolved relative to it): 2 layout lines; the
	// /* */ line does not count.
	{fixture + "/vulkan/inc/types.glsl", GLSL, 2},
	// rms_norm.comp = 7: #version, #extension, #include, layout, main's header, its one statement,
	// the brace. Not: two blank lines, the // line that mentions #include "unused.glsl" (a comment,
	// so unused.glsl is not included), the /* normalize */ line.
	{fixture + "/vulkan/rms_norm.comp", GLSL, 7},
	// add.wgsl = 5: the var line, @compute, fn main, the body (trailing //), the brace. Not: the //
	// line, the one-line nested comment "/* outer /* nested */ still a comment */" (WGSL comments
	// nest, so "still a comment" is inside it), the 4-line nested block and a blank line.
	{fixture + "/wgsl/add.wgsl", WGSL, 5},
}

// wantExcluded are the fixture's excluded files. README.md, scripts/gen.py and src/host.cpp (a
// .cpp outside hip/ and rocm/) are not kernel files at all, so they are neither counted nor listed.
var wantExcluded = []Exclusion{
	{fixture + "/build/add.cu", "build artifact (build/)"},
	{fixture + "/csrc/quantization/gptq_marlin/marlin.cu", "vendored upstream kernels (gptq_marlin/)"},
	{fixture + "/generated/copy.wgsl", "generated (generated-by comment)"},
	{fixture + "/generated/softmax.cu", "generated (Code generated ... DO NOT EDIT. header)"},
	{fixture + "/generated/softmax.metal", "generated (@generated marker)"},
	{fixture + "/hip/runtime.h", "not a kernel (C++ file under hip/ or rocm/ without __global__ or __device__ code)"},
	{fixture + "/node_modules/shaders/add.wgsl", "build artifact (node_modules/)"},
	// 1 declaration line + 16 lines of four hex constants + "};" = 18 code lines, 16 numeric.
	{fixture + "/tables/iq_grids.cuh", "machine-generated table (16 of 18 code lines are numeric literals)"},
	{fixture + "/target/package/fixture-0.1.0/kernels/add.cu", "build artifact (target/package/ copy of a packaged crate)"},
	{fixture + "/third_party/cutlass/gemm.cu", "vendored (third_party/)"},
	{fixture + "/vulkan/unused.glsl", "not a kernel (.glsl file not #included by any counted .comp shader)"},
}

// TestFixture checks the exact counts, files and exclusions of the fixture tree.
func TestFixture(t *testing.T) {
	r, err := Count(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trees) != 1 {
		t.Fatalf("got %d trees, want 1", len(r.Trees))
	}
	tr := r.Trees[0]
	// Per language, the sums of wantFiles: cuda 4+11, hip 4+4+4, metal 10, glsl 2+2+7, wgsl 5.
	want := Counts{CUDA: 15, HIP: 12, Metal: 10, GLSL: 11, WGSL: 5}
	if tr.Path != fixture || tr.Languages != want || tr.Total != 53 {
		t.Errorf("tree = %q %+v total %d, want %q %+v total 53", tr.Path, tr.Languages, tr.Total, fixture, want)
	}
	if !reflect.DeepEqual(tr.Files, wantFiles) {
		t.Errorf("files:\n%s\nwant:\n%s", fmtFiles(tr.Files), fmtFiles(wantFiles))
	}
	if !reflect.DeepEqual(r.Excluded, wantExcluded) {
		t.Errorf("excluded:\n%s\nwant:\n%s", fmtEx(r.Excluded), fmtEx(wantExcluded))
	}
	// Deterministic: a second run gives the same report.
	r2, err := Count(fixture)
	if err != nil || !reflect.DeepEqual(r, r2) {
		t.Errorf("second run differs (err %v)", err)
	}
}

func fmtFiles(fs []File) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.Path + " " + string(f.Language) + " " + strconv.Itoa(f.Lines) + "\n")
	}
	return b.String()
}

func fmtEx(es []Exclusion) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("  " + e.Path + ": " + e.Reason + "\n")
	}
	return b.String()
}

// TestCountLines covers the comment and literal rules on small snippets.
func TestCountLines(t *testing.T) {
	cases := []struct {
		name string
		lang Language
		src  string
		want int
	}{
		{"empty", CUDA, "", 0},
		{"no final newline", CUDA, "int x;", 1},
		{"blank and whitespace", CUDA, "\n \t \n\r\n", 0},
		{"line comment", CUDA, "// a\n  // b\nx; // c\n", 1},
		{"block on one line", Metal, "/* a */\n/* a */ x; /* b */\n", 1},
		{"block over lines", GLSL, "/* a\nb\nc */\n", 0},
		{"code after block end", GLSL, "/* a\n*/ x;\n", 1},
		{"block in string", CUDA, "s = \"/*\";\nx;\n", 2},
		{"line comment in string", HIP, "s = \"//\"; \n", 1},
		{"escaped quote in string", CUDA, "s = \"\\\"/*\";\nx;\n", 2},
		{"char literal quote", CUDA, "c = '\"'; /* x */\ny;\n", 2},
		{"digit separator is no char literal", CUDA, "n = 1'000; // ok\n", 1},
		{"continued line comment", CUDA, "// a \\\nstill comment\nx;\n", 1},
		{"wgsl: no continuation", WGSL, "// a \\\nx;\n", 1},
		{"wgsl nested", WGSL, "/* a /* b */ c */ x;\n/* /* */\n*/\n", 1},
		{"non-wgsl does not nest", CUDA, "/* a /* b */ c */\n", 1},
		{"crlf", CUDA, "x;\r\n\r\n// c\r\ny;\r\n", 2},
		{"unterminated string ends at line end", CUDA, "s = \"abc\n/* c */\n", 1},
		{"wgsl has no strings", WGSL, "\"/*\" x\n*/\n", 1},
	}
	for _, c := range cases {
		if got := CountLines([]byte(c.src), c.lang); got != c.want {
			t.Errorf("%s: CountLines(%q, %s) = %d, want %d", c.name, c.src, c.lang, got, c.want)
		}
	}
}

// TestGenerated checks the generated-file markers and a few look-alikes that are not.
func TestGenerated(t *testing.T) {
	yes := []string{
		"// Code generated by onesource from DSL kernel saxpy (saxpy.go:13). DO NOT EDIT.\n",
		"/*\n * @generated\n */\nx;\n",
		"// generated by gen.py\n",
		"// This file was automatically generated from grid.txt\n",
		"// Auto-generated with kgen\n",
		"#pragma once\n// autogenerated, do not edit\n",
	}
	for _, s := range yes {
		if _, ok := Generated([]byte(s), CUDA); !ok {
			t.Errorf("Generated(%q) = false, want true", s)
		}
	}
	no := []string{
		"// this is not generated by any tool\nx;\n",
		"const char *s = \"// Code generated by x. DO NOT EDIT.\";\n",
		strings.Repeat("x;\n", 30) + "// Code generated by x. DO NOT EDIT.\n",
		"// the table below was hand-written\n",
	}
	for _, s := range no {
		if m, ok := Generated([]byte(s), CUDA); ok {
			t.Errorf("Generated(%q) = true (%s), want false", s, m)
		}
	}
}

// TestNumericTable checks the table heuristic: lines of literals, the 80% bar and the minimum size.
func TestNumericTable(t *testing.T) {
	for _, s := range []string{"0x1, 0x2,", "  1.0f, -2.5e-3f, .5, 7u,", "{ 1, 2, 3 },", "0b101, 1'000,", "42"} {
		if !numericLine(s) {
			t.Errorf("numericLine(%q) = false", s)
		}
	}
	for _, s := range []string{"x, 1,", "f(1, 2);", "};", "return 0;", ""} {
		if numericLine(s) {
			t.Errorf("numericLine(%q) = true", s)
		}
	}
	table := func(numeric, other int) []byte {
		return []byte(strings.Repeat("0x1, 0x2,\n", numeric) + strings.Repeat("x = y;\n", other))
	}
	if n, c, ok := NumericTable(table(9, 1), CUDA); !ok || n != 9 || c != 10 {
		t.Errorf("9 of 10: %d %d %v, want table", n, c, ok)
	}
	if _, _, ok := NumericTable(table(8, 2), CUDA); ok {
		t.Error("8 of 10 (exactly 80%) taken for a table; the bar is more than 80%")
	}
	if _, _, ok := NumericTable(table(7, 0), CUDA); ok {
		t.Error("7 lines taken for a table; the minimum is 8")
	}
}

// TestTreeRules checks the path rules on a scratch tree: .git is not walked, a tree may itself be
// named build, hip/ and rocm/ matching is case-insensitive, and Count fails on a missing or
// non-directory path.
func TestTreeRules(t *testing.T) {
	root := filepath.Join(t.TempDir(), "build")
	write := func(rel, s string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".git/objects/a.cu", "x;\n")
	write("a.cu", "x;\ny;\n")
	write("ROCm/k.cpp", "__global__ void k() {}\n")
	write("src/Vendor/v.metal", "x;\n")
	write("FlashInfer/attn.cuh", "x;\n")
	tr, ex, err := CountTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{CUDA: 2, HIP: 1}); tr.Languages != want || tr.Total != 3 {
		t.Errorf("counts %+v total %d, want %+v total 3", tr.Languages, tr.Total, want)
	}
	slash := filepath.ToSlash(root)
	wantEx := []Exclusion{
		{slash + "/FlashInfer/attn.cuh", "vendored upstream kernels (FlashInfer/)"},
		{slash + "/src/Vendor/v.metal", "vendored (Vendor/)"},
	}
	if !reflect.DeepEqual(ex, wantEx) {
		t.Errorf("excluded:\n%s\nwant:\n%s", fmtEx(ex), fmtEx(wantEx))
	}
	if _, err := Count(fixture, filepath.Join(root, "missing")); err == nil {
		t.Error("Count of a missing directory succeeded")
	}
	if _, err := Count(filepath.Join(root, "a.cu")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Count of a file: %v, want a not-a-directory error", err)
	}
}

// TestOwnTree runs the ledger on the repository itself. What is knowable: it succeeds; every
// emitted golden under backends/*/testdata carries the generated header and is excluded for it;
// the host emulation headers are .h files, so those in include/hip are listed as not kernels and
// the others are not looked at; and the fixture's counted files appear with their counts.
func TestOwnTree(t *testing.T) {
	r, err := Count("..")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, e := range r.Excluded {
		reasons[e.Path] = e.Reason
	}
	goldens := 0
	for _, ext := range []string{"cu", "cuh", "hip", "metal", "comp", "wgsl"} {
		ms, err := filepath.Glob("../backends/*/testdata/*." + ext)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			goldens++
			p := filepath.ToSlash(m)
			if got := reasons[p]; got != "generated (Code generated ... DO NOT EDIT. header)" {
				t.Errorf("%s: excluded as %q, want the generated header", p, got)
			}
		}
	}
	if goldens == 0 {
		t.Error("no emitted goldens under backends/*/testdata")
	}
	counted := map[string]int{}
	for _, f := range r.Trees[0].Files {
		counted[f.Path] = f.Lines
		if strings.HasSuffix(f.Path, ".h") && !strings.Contains(f.Path, "/hip/") && !strings.Contains(f.Path, "/rocm/") {
			t.Errorf("%s: a .h outside hip/ and rocm/ counted", f.Path)
		}
	}
	for _, h := range []string{"../backends/cfamily/host/include/hip/hip_runtime.h", "../backends/cfamily/host/include/hip/hip_fp16.h"} {
		if _, err := os.Stat(h); err != nil {
			continue
		}
		if _, ok := counted[h]; ok {
			t.Errorf("%s: host emulation header counted", h)
		}
		if !strings.HasPrefix(reasons[h], "not a kernel") {
			t.Errorf("%s: excluded as %q, want not a kernel", h, reasons[h])
		}
	}
	for _, f := range wantFiles {
		p := "../ledger/" + f.Path
		if counted[p] != f.Lines {
			t.Errorf("%s: %d lines in the own-tree run, want %d", p, counted[p], f.Lines)
		}
	}
	if r.Trees[0].Total < 53 {
		t.Errorf("own tree total %d, below the fixture's 53", r.Trees[0].Total)
	}
	t.Logf("own tree: %+v total %d, %d excluded", r.Trees[0].Languages, r.Trees[0].Total, len(r.Excluded))
}
