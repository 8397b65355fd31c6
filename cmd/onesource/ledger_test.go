package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// ledgerFixture is the ledger package's fixture tree, seen from this package's directory.
const ledgerFixture = "../../ledger/testdata/tree"

// TestLedgerText checks the table and the -v listing on the fixture (whose figures the ledger
// package's tests work out by hand).
func TestLedgerText(t *testing.T) {
	code, stdout, stderr := run(t, "ledger", ledgerFixture)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	want := "" +
		"                        TREE  CUDA  HIP  METAL  GLSL  WGSL  TOTAL\n" +
		"  ../../ledger/testdata/tree    15   12     10    11     5     53\n" +
		"excluded: 11 files (-v lists them)\n"
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}

	code, stdout, stderr = run(t, "ledger", "-v", ledgerFixture)
	if code != 0 {
		t.Fatalf("-v: exit %d, stderr %s", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 3+11 || lines[2] != "excluded: 11 files" {
		t.Fatalf("-v output:\n%s", stdout)
	}
	wantEx := [][2]string{
		{"build/add.cu", "build artifact (build/)"},
		{"csrc/quantization/gptq_marlin/marlin.cu", "vendored upstream kernels (gptq_marlin/)"},
		{"generated/copy.wgsl", "generated (generated-by comment)"},
		{"generated/softmax.cu", "generated (Code generated ... DO NOT EDIT. header)"},
		{"generated/softmax.metal", "generated (@generated marker)"},
		{"hip/runtime.h", "not a kernel (C++ file under hip/ or rocm/ without __global__ or __device__ code)"},
		{"node_modules/shaders/add.wgsl", "build artifact (node_modules/)"},
		{"tables/iq_grids.cuh", "machine-generated table (16 of 18 code lines are numeric literals)"},
		{"target/package/fixture-0.1.0/kernels/add.cu", "build artifact (target/package/ copy of a packaged crate)"},
		{"third_party/cutlass/gemm.cu", "vendored (third_party/)"},
		{"vulkan/unused.glsl", "not a kernel (.glsl file not #included by any counted .comp shader)"},
	}
	for i, w := range wantEx {
		f := strings.Fields(lines[3+i])
		if len(f) < 2 || f[0] != ledgerFixture+"/"+w[0] || strings.Join(f[1:], " ") != w[1] {
			t.Errorf("-v line %d = %q, want %s  %s", 3+i, lines[3+i], w[0], w[1])
		}
	}
}

// TestLedgerJSON checks the exact JSON shape: the two top-level keys, a tree's three keys, all five
// language keys in order, and the exclusions' two keys.
func TestLedgerJSON(t *testing.T) {
	code, stdout, stderr := run(t, "ledger", "-json", ledgerFixture, ledgerFixture+"/vulkan")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(doc) != 2 || doc["trees"] == nil || doc["excluded"] == nil {
		t.Fatalf("top-level keys: %s", stdout)
	}
	var trees []map[string]json.RawMessage
	if err := json.Unmarshal(doc["trees"], &trees); err != nil || len(trees) != 2 {
		t.Fatalf("trees: %v %s", err, doc["trees"])
	}
	for _, tr := range trees {
		if len(tr) != 3 || tr["path"] == nil || tr["languages"] == nil || tr["total"] == nil {
			t.Errorf("tree keys: %v", tr)
		}
	}
	if !strings.Contains(stdout, `"languages": {
        "cuda": 15,
        "hip": 12,
        "metal": 10,
        "glsl": 11,
        "wgsl": 5
      },
      "total": 53`) {
		t.Errorf("first tree's languages not in order or wrong:\n%s", stdout)
	}
	var typed struct {
		Trees []struct {
			Path      string         `json:"path"`
			Languages map[string]int `json:"languages"`
			Total     int            `json:"total"`
		} `json:"trees"`
		Excluded []map[string]string `json:"excluded"`
	}
	if err := json.Unmarshal([]byte(stdout), &typed); err != nil {
		t.Fatal(err)
	}
	// The second tree is vulkan/ alone: rms_norm.comp 7 + common.glsl 2 + inc/types.glsl 2, with
	// all five keys present although four are zero.
	second := typed.Trees[1]
	wantLang := map[string]int{"cuda": 0, "hip": 0, "metal": 0, "glsl": 11, "wgsl": 0}
	if second.Path != ledgerFixture+"/vulkan" || !reflect.DeepEqual(second.Languages, wantLang) || second.Total != 11 {
		t.Errorf("second tree: %+v", second)
	}
	// 11 exclusions from the whole fixture, then vulkan/unused.glsl again from the second tree.
	if len(typed.Excluded) != 12 {
		t.Fatalf("%d exclusions, want 12", len(typed.Excluded))
	}
	for _, e := range typed.Excluded {
		if len(e) != 2 || e["path"] == "" || e["reason"] == "" {
			t.Errorf("exclusion keys: %v", e)
		}
	}
	if e := typed.Excluded[11]; e["path"] != ledgerFixture+"/vulkan/unused.glsl" {
		t.Errorf("last exclusion %v", e)
	}

	// A tree with nothing excluded still has "excluded": [] (not null).
	code, stdout, _ = run(t, "ledger", "-json", ledgerFixture+"/wgsl")
	if code != 0 || !strings.Contains(stdout, `"excluded": []`) {
		t.Errorf("exit %d, want an empty excluded list:\n%s", code, stdout)
	}
}

// TestLedgerErrors checks the exit statuses: 2 for usage errors, 1 for a missing directory.
func TestLedgerErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"ledger"}, 2, "want at least one DIR"},
		{[]string{"ledger", "-x", ledgerFixture}, 2, "unknown flag -x"},
		{[]string{"ledger", ledgerFixture, "/nonexistent/ledger-dir"}, 1, "/nonexistent/ledger-dir"},
		{[]string{"ledger", ledgerFixture + "/README.md"}, 1, "not a directory"},
	} {
		code, stdout, stderr := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d stderr %q, want exit %d mentioning %q", c.args, code, stderr, c.code, c.msg)
		}
		if c.code == 1 && stdout != "" {
			t.Errorf("%v: printed %q before failing", c.args, stdout)
		}
	}
	if code, stdout, _ := run(t, "ledger", "-h"); code != 0 || !strings.Contains(stdout, "usage: onesource ledger") {
		t.Errorf("-h: exit %d, stdout %q", code, stdout)
	}
}

// TestLedgerOwnTree runs the command on the repository: it must succeed and list the emitted
// goldens as generated.
func TestLedgerOwnTree(t *testing.T) {
	code, stdout, stderr := run(t, "ledger", "-v", "../..")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "../../backends/cuda/testdata/saxpy.cu") || !strings.Contains(stdout, "generated (Code generated ... DO NOT EDIT. header)") {
		t.Errorf("goldens not listed as generated:\n%s", stdout)
	}
	t.Logf("\n%s", stdout)
}
