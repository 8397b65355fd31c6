// Command gpucheck summarizes `go test -json` output for scripts/gpu-check.sh: it writes a JSON
// object with every test's status and time and every benchmark's figures, or, with -text, the
// plain output the tests printed (for the raw log).
//
//	go test -json ./... >tests.jsonl
//	go run ./scripts/gpucheck -gpu "$gpu" -driver "$driver" -nvcc "$nvcc" -o results.json tests.jsonl bench.jsonl
//	go run ./scripts/gpucheck -text tests.jsonl >>log.txt
//
// With -steps, -conform, -tuning, -bench and -llama NAME=FILE it adds the GPU day's other
// commands to the summary (steps.go): their exit statuses, the conformance matrix per backend
// (cells, bit-exact, executed at X or by host emulation H, failures), the tuning cache and bench
// records, and each backend's synthetic llama run with whether their logits are the same bytes.
//
// Lines that are not JSON events (a go command's own messages, a stream cut off by a timeout) are
// kept: verbatim in -text, and in "messages" in the summary. A test that started and never
// finished (the test binary timed out or crashed, or the whole run was killed) is "incomplete".
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json), with the build events of Go 1.24+.
type event struct {
	Time        time.Time `json:"Time"`
	Action      string    `json:"Action"`
	Package     string    `json:"Package"`
	ImportPath  string    `json:"ImportPath"`
	Test        string    `json:"Test"`
	Elapsed     float64   `json:"Elapsed"`
	Output      string    `json:"Output"`
	FailedBuild string    `json:"FailedBuild"`
}

// Results is the summary gpucheck writes.
type Results struct {
	Date       string      `json:"date"`
	GPU        string      `json:"gpu"`
	Driver     string      `json:"driver"`
	NVCC       string      `json:"nvcc"`
	Go         string      `json:"go,omitempty"`
	Summary    Summary     `json:"summary"`
	Packages   []Package   `json:"packages"`
	Tests      []Test      `json:"tests"`
	Benchmarks []Benchmark `json:"benchmarks"`
	Messages   []string    `json:"messages,omitempty"`

	// The GPU day's commands (steps.go): each step's status, the conformance matrix's summary,
	// the tuning cache and bench records of the matvec cells, and the synthetic llama model per
	// backend, with whether every backend's last logits were the same bytes.
	Steps            []Step              `json:"steps,omitempty"`
	Conform          *ConformSummary     `json:"conform,omitempty"`
	Tuning           json.RawMessage     `json:"tuning,omitempty"`
	MatvecBench      json.RawMessage     `json:"matvec_bench,omitempty"`
	Llama            map[string]LlamaRun `json:"llama,omitempty"`
	LlamaLogitsEqual *bool               `json:"llama_logits_equal,omitempty"`
}

// Summary counts the tests by status.
type Summary struct {
	Passed     int `json:"passed"`
	Failed     int `json:"failed"`
	Skipped    int `json:"skipped"`
	Incomplete int `json:"incomplete"`
	Benchmarks int `json:"benchmarks"`
}

// Package is a package's overall result: pass, fail, skip (no tests), build-fail or incomplete.
type Package struct {
	Package string  `json:"package"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
	Output  string  `json:"output,omitempty"` // build errors or a failure outside any test
}

// Test is one test's result: pass, fail, skip or incomplete. Output holds the end of what a
// test that did not pass printed (its skip reason or failure).
type Test struct {
	Package string  `json:"package"`
	Test    string  `json:"test"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
	Output  string  `json:"output,omitempty"`
}

// Benchmark is one benchmark result line.
type Benchmark struct {
	Package    string             `json:"package"`
	Name       string             `json:"name"`  // without the -GOMAXPROCS suffix
	Procs      int                `json:"procs"` // GOMAXPROCS, from the suffix (0 if none)
	Iterations int64              `json:"iterations"`
	NsPerOp    float64            `json:"ns_per_op"`
	Metrics    map[string]float64 `json:"metrics,omitempty"` // every other unit: MB/s, B/op, device-ns/launch, ...
}

// benchLine matches a benchmark result: name[-procs], iterations, then value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S*?)(?:-(\d+))?\s+(\d+)\s+(.*\bns/op\b.*)$`)

// parseBenchmark parses a benchmark result line, or returns false.
func parseBenchmark(pkg, line string) (Benchmark, bool) {
	m := benchLine.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
	if m == nil {
		return Benchmark{}, false
	}
	b := Benchmark{Package: pkg, Name: m[1], Metrics: map[string]float64{}}
	b.Procs, _ = strconv.Atoi(m[2])
	b.Iterations, _ = strconv.ParseInt(m[3], 10, 64)
	fields := strings.Fields(m[4])
	for i := 0; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return Benchmark{}, false
		}
		if fields[i+1] == "ns/op" {
			b.NsPerOp = v
		} else {
			b.Metrics[fields[i+1]] = v
		}
	}
	if len(b.Metrics) == 0 {
		b.Metrics = nil
	}
	return b, true
}

// tail shortens s to at most n lines (its first 4, "...", and its last) and 4 KiB, keeping the
// start, where a panic or timeout says what happened, and the end.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(append(lines[:4:4], "..."), lines[len(lines)-(n-5):]...)
	}
	out := strings.Join(lines, "\n")
	if len(out) > 4096 {
		out = "..." + out[len(out)-4093:]
	}
	return out
}

type key struct{ pkg, test string }

// seconds rounds a sum of elapsed times to the millisecond test2json reports.
func seconds(s float64) float64 { return math.Round(s*1000) / 1000 }

// summarize reads go test -json streams and builds the summary (without the machine fields).
func summarize(inputs []io.Reader) (*Results, error) {
	res := &Results{Packages: []Package{}, Tests: []Test{}, Benchmarks: []Benchmark{}}
	output := map[key]*strings.Builder{}
	buildOutput := map[string]*strings.Builder{} // by ImportPath
	var order []key                              // tests and packages in order of first appearance
	status := map[key]string{}
	elapsed := map[key]float64{}
	failedBuild := map[string]string{}
	seen := map[key]bool{}
	pending := map[string]bool{} // a package run started and not finished
	rank := map[string]int{"": 0, "skip": 1, "pass": 2, "fail": 3, "build-fail": 4}
	note := func(k key) {
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	for _, in := range inputs {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			var e event
			if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
				if strings.TrimSpace(line) != "" && len(res.Messages) < 200 {
					res.Messages = append(res.Messages, line)
				}
				continue
			}
			switch e.Action {
			case "build-output":
				b := buildOutput[e.ImportPath]
				if b == nil {
					b = &strings.Builder{}
					buildOutput[e.ImportPath] = b
				}
				b.WriteString(e.Output)
				continue
			case "build-fail":
				continue
			}
			k := key{e.Package, e.Test}
			note(key{e.Package, ""})
			note(k)
			switch e.Action {
			case "start":
				pending[e.Package] = true
			case "run":
				if _, ok := status[k]; !ok {
					status[k] = "incomplete"
				}
			case "output":
				b := output[k]
				if b == nil {
					b = &strings.Builder{}
					output[k] = b
				}
				b.WriteString(e.Output)
			case "pass", "fail", "skip":
				elapsed[k] += e.Elapsed
				st := e.Action
				if e.FailedBuild != "" {
					st = "build-fail"
					failedBuild[e.Package] = e.FailedBuild
				}
				if e.Test == "" {
					// A package may run more than once (tests, then benchmarks): keep the worst.
					pending[e.Package] = false
					if rank[st] > rank[status[k]] {
						status[k] = st
					}
				} else {
					status[k] = st
				}
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	for _, k := range order {
		text := ""
		if b := output[k]; b != nil {
			text = b.String()
		}
		st := status[k]
		if st == "" || (k.test == "" && pending[k.pkg]) {
			st = "incomplete"
		}
		if k.test == "" {
			p := Package{Package: k.pkg, Status: st, Seconds: seconds(elapsed[k])}
			if st == "build-fail" {
				if b := buildOutput[failedBuild[k.pkg]]; b != nil {
					p.Output = tail(b.String(), 40)
				}
			} else if st != "pass" && st != "skip" {
				p.Output = tail(text, 30)
			}
			res.Packages = append(res.Packages, p)
			// Benchmarks print their results at package level in older Go releases.
			for _, line := range strings.Split(text, "\n") {
				if b, ok := parseBenchmark(k.pkg, line); ok {
					res.Benchmarks = append(res.Benchmarks, b)
				}
			}
			continue
		}
		if strings.HasPrefix(k.test, "Benchmark") {
			found := false
			for _, line := range strings.Split(text, "\n") {
				if b, ok := parseBenchmark(k.pkg, line); ok {
					res.Benchmarks = append(res.Benchmarks, b)
					found = true
				}
			}
			if found {
				continue // a benchmark that reported its result has no pass event: it is not a test
			}
		}
		t := Test{Package: k.pkg, Test: k.test, Status: st, Seconds: seconds(elapsed[k])}
		if st != "pass" {
			t.Output = tail(text, 20)
		}
		res.Tests = append(res.Tests, t)
		switch st {
		case "pass":
			res.Summary.Passed++
		case "fail":
			res.Summary.Failed++
		case "skip":
			res.Summary.Skipped++
		default:
			res.Summary.Incomplete++
		}
	}
	res.Summary.Benchmarks = len(res.Benchmarks)
	sort.SliceStable(res.Packages, func(i, j int) bool { return res.Packages[i].Package < res.Packages[j].Package })
	return res, nil
}

// plainText writes what the tests printed, in order: the Output of every event and every line
// that is not an event.
func plainText(w io.Writer, inputs []io.Reader) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	for _, in := range inputs {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			var e event
			if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
				fmt.Fprintln(bw, line)
				continue
			}
			if e.Action == "output" || e.Action == "build-output" {
				bw.WriteString(e.Output)
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpucheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the JSON summary to this file (default: standard output)")
	text := fs.Bool("text", false, "print the tests' plain output instead of the summary")
	date := fs.String("date", "", "the run's date (default: now, RFC 3339)")
	gpu := fs.String("gpu", "", "the GPU (nvidia-smi's name)")
	driver := fs.String("driver", "", "the driver version")
	nvcc := fs.String("nvcc", "", "nvcc's version")
	goVersion := fs.String("go", "", "the Go version")
	stepsPath := fs.String("steps", "", "the script's steps file (NAME RC SECONDS per line)")
	conformPath := fs.String("conform", "", "onesource conform -json outputs to summarize, comma-separated")
	tuningPath := fs.String("tuning", "", "onesource tune's cache file to include")
	benchPath := fs.String("bench", "", "onesource bench -json output to include")
	listOps := fs.Bool("ops", false, "print the ops of the conformance suite's cells, one a line (the script runs conform per op)")
	opFilter := fs.String("op", "", "with -ops: only these ops (comma-separated)")
	typeFilter := fs.String("type", "", "with -ops: only ops with cells of these types (comma-separated)")
	llama := llamaFlag{}
	fs.Var(llama, "llama", "NAME=FILE: a backend's examples/llama output (its logits in FILE with .f32 for .txt); repeatable")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *listOps {
		for _, op := range suiteOps(*opFilter, *typeFilter) {
			fmt.Fprintln(stdout, op)
		}
		return 0
	}
	var inputs []io.Reader
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, "gpucheck:", err)
			return 1
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	if len(inputs) == 0 {
		inputs = []io.Reader{stdin}
	}
	if *text {
		if err := plainText(stdout, inputs); err != nil {
			fmt.Fprintln(stderr, "gpucheck:", err)
			return 1
		}
		return 0
	}
	res, err := summarize(inputs)
	if err != nil {
		fmt.Fprintln(stderr, "gpucheck:", err)
		return 1
	}
	res.Date = *date
	if res.Date == "" {
		res.Date = time.Now().UTC().Format(time.RFC3339)
	}
	res.GPU, res.Driver, res.NVCC, res.Go = *gpu, *driver, *nvcc, *goVersion
	if err := addSteps(res, *stepsPath, *conformPath, *tuningPath, *benchPath, llama); err != nil {
		fmt.Fprintln(stderr, "gpucheck:", err)
		return 1
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "gpucheck:", err)
		return 1
	}
	data = append(data, '\n')
	if *out == "" {
		stdout.Write(data)
		return 0
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(stderr, "gpucheck:", err)
		return 1
	}
	fmt.Fprintf(stdout, "gpucheck: %d passed, %d failed, %d skipped, %d incomplete, %d benchmarks -> %s\n",
		res.Summary.Passed, res.Summary.Failed, res.Summary.Skipped, res.Summary.Incomplete, res.Summary.Benchmarks, *out)
	return 0
}
