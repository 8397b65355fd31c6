package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/sample.jsonl is recorded `go test -json` output: a package with passing, failing,
// skipped and sub-tests, benchmarks (one logging, one with custom metrics, one skipped), a
// package without tests, one that does not build, one whose test binary timed out, this
// repository's CUDA runtime tests on a machine without CUDA, then a go command message, a test
// whose run was cut off and a line cut in half (what an outer timeout leaves).
func sample(t *testing.T) []io.Reader {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return []io.Reader{bytes.NewReader(b)}
}

func TestSummarize(t *testing.T) {
	res, err := summarize(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Passed: 6, Failed: 1, Skipped: 4, Incomplete: 2, Benchmarks: 2}
	if res.Summary != want {
		t.Errorf("summary %+v, want %+v", res.Summary, want)
	}
	tests := map[string]Test{}
	for _, tt := range res.Tests {
		tests[tt.Test] = tt
	}
	for name, status := range map[string]string{
		"TestPass": "pass", "TestFail": "fail", "TestSkip": "skip", "TestSub/two": "skip", "TestSub/one": "pass",
		"TestHang": "incomplete", "TestKilled": "incomplete", "BenchmarkSkipped": "skip",
		"TestRuntimeSaxpy": "skip", "TestRuntimeAvailability": "pass",
	} {
		if got := tests[name].Status; got != status {
			t.Errorf("%s: status %q, want %q", name, got, status)
		}
	}
	if tt := tests["TestPass"]; tt.Seconds != 0.02 || tt.Package != "example.com/gcsample/pkga" || tt.Output != "" {
		t.Errorf("TestPass: %+v", tt)
	}
	if !strings.Contains(tests["TestFail"].Output, "y[3] = 1.5, want 1.25") {
		t.Errorf("TestFail output %q", tests["TestFail"].Output)
	}
	if !strings.Contains(tests["TestRuntimeSaxpy"].Output, "unavailable: cuda:") {
		t.Errorf("a skipped test keeps its reason: %q", tests["TestRuntimeSaxpy"].Output)
	}
	if !strings.Contains(tests["TestHang"].Output, "panic: test timed out") {
		t.Errorf("an incomplete test keeps the start of its output: %q", tests["TestHang"].Output)
	}
	if _, ok := tests["BenchmarkLaunch"]; ok {
		t.Error("a benchmark that reported a result is listed as a test")
	}
	pkgs := map[string]Package{}
	for _, p := range res.Packages {
		pkgs[p.Package] = p
	}
	for pkg, status := range map[string]string{
		"example.com/gcsample/pkga":                       "fail", // tests failed; the benchmark run passed: the worst counts
		"example.com/gcsample/pkgb":                       "skip",
		"example.com/gcsample/pkgc":                       "build-fail",
		"example.com/gcsample/pkgd":                       "fail",
		"example.com/gcsample/pkge":                       "incomplete",
		"github.com/onesource-go/onesource/backends/cuda": "pass",
	} {
		if got := pkgs[pkg].Status; got != status {
			t.Errorf("package %s: %q, want %q", pkg, got, status)
		}
	}
	if !strings.Contains(pkgs["example.com/gcsample/pkgc"].Output, "undefined: undefined") {
		t.Errorf("build failure output %q", pkgs["example.com/gcsample/pkgc"].Output)
	}
	if len(res.Benchmarks) != 2 {
		t.Fatalf("benchmarks %+v", res.Benchmarks)
	}
	b := res.Benchmarks[1]
	if b.Name != "BenchmarkSaxpy" || b.Procs != 2 || b.Iterations != 50 || b.NsPerOp != 718927 ||
		b.Metrics["MB/s"] != 17502.35 || b.Metrics["device-GB/s"] != 3900 {
		t.Errorf("BenchmarkSaxpy: %+v", b)
	}
	if b := res.Benchmarks[0]; b.Name != "BenchmarkLaunch" || b.Metrics["device-ns/launch"] != 1234 {
		t.Errorf("BenchmarkLaunch (result split across two output events): %+v", b)
	}
	if len(res.Messages) != 2 || !strings.HasPrefix(res.Messages[0], "go: downloading") {
		t.Errorf("messages %q", res.Messages)
	}
}

func TestParseBenchmark(t *testing.T) {
	cases := []struct {
		line string
		ok   bool
		want Benchmark
	}{
		{"BenchmarkX-16   \t     50\t  1234 ns/op\n", true, Benchmark{Name: "BenchmarkX", Procs: 16, Iterations: 50, NsPerOp: 1234}},
		{"BenchmarkX/sub=1-8 100 5.5 ns/op 3 B/op 1 allocs/op", true,
			Benchmark{Name: "BenchmarkX/sub=1", Procs: 8, Iterations: 100, NsPerOp: 5.5, Metrics: map[string]float64{"B/op": 3, "allocs/op": 1}}},
		{"BenchmarkNoProcs 7 1e+06 ns/op", true, Benchmark{Name: "BenchmarkNoProcs", Iterations: 7, NsPerOp: 1e6}},
		{"BenchmarkX", false, Benchmark{}},
		{"BenchmarkX-16 \t", false, Benchmark{}},
		{"    a_test.go:26: BenchmarkX 1 2 ns/op", false, Benchmark{}},
		{"BenchmarkX-2 50 abc ns/op", false, Benchmark{}},
	}
	for _, c := range cases {
		got, ok := parseBenchmark("p", c.line)
		if ok != c.ok {
			t.Errorf("%q: ok %v", c.line, ok)
			continue
		}
		if !ok {
			continue
		}
		c.want.Package = "p"
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(c.want)
		if string(gj) != string(wj) {
			t.Errorf("%q: %s, want %s", c.line, gj, wj)
		}
	}
}

func TestPlainText(t *testing.T) {
	var out bytes.Buffer
	if err := plainText(&out, sample(t)); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"=== RUN   TestFail\n    a_test.go:11: some context\n",
		"--- FAIL: TestFail (0.00s)\n",
		"BenchmarkLaunch-2    \t      50\t     47360 ns/op\t      1234 device-ns/launch\n",
		"pkgc/c_test.go:5:33: undefined: undefined\n",
		"go: downloading example.com/never v1.0.0\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("plain output lacks %q", want)
		}
	}
}

// TestRun writes results.json as gpu-check.sh does and checks the fields it promises.
func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-o", out, "-date", "2026-11-30T00:00:00Z", "-gpu", "NVIDIA H200", "-driver", "580.159.03",
		"-nvcc", "Cuda compilation tools, release 13.0, V13.0.48", filepath.Join("testdata", "sample.jsonl")}, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"date", "gpu", "driver", "nvcc", "tests", "benchmarks"} {
		if _, ok := m[k]; !ok {
			t.Errorf("results.json lacks %q", k)
		}
	}
	if m["gpu"] != "NVIDIA H200" || m["date"] != "2026-11-30T00:00:00Z" {
		t.Errorf("gpu %v date %v", m["gpu"], m["date"])
	}
	test := m["tests"].([]any)[0].(map[string]any)
	for _, k := range []string{"package", "test", "status", "seconds"} {
		if _, ok := test[k]; !ok {
			t.Errorf("a test lacks %q: %v", k, test)
		}
	}
	bench := m["benchmarks"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "ns_per_op"} {
		if _, ok := bench[k]; !ok {
			t.Errorf("a benchmark lacks %q: %v", k, bench)
		}
	}
	if !strings.Contains(stdout.String(), "6 passed, 1 failed") {
		t.Errorf("stdout %q", stdout.String())
	}
	// An empty input is a valid, empty summary.
	stdout.Reset()
	if code := run(nil, strings.NewReader(""), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"tests": []`) {
		t.Errorf("empty input: exit %d, %s", code, stdout.String())
	}
	if code := run([]string{"/nonexistent/x.jsonl"}, nil, &stdout, &stderr); code != 1 {
		t.Errorf("missing input: exit %d", code)
	}
}
