package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/onesource-go/onesource/conformance"
)

// The GPU day's steps beyond the tests: onesource conform, tune and bench, and the synthetic
// llama model per backend. The script runs each as a command, records "NAME RC SECONDS" in a
// steps file, and hands gpucheck the outputs; the summary keeps what each gave.

// Step is one command the script ran: its name, exit status and time. RC 124 is a timeout.
type Step struct {
	Name    string  `json:"name"`
	RC      int     `json:"rc"`
	Seconds float64 `json:"seconds"`
}

// ConformSummary counts `onesource conform -json` records per backend: how many cells ran, how
// many are bit-exact (or within a declared bound), and at which level they executed (X on a
// device, H by host emulation), with the cells that failed.
type ConformSummary struct {
	Records   int                        `json:"records"`
	ByBackend map[string]*ConformBackend `json:"by_backend"`
}

// ConformBackend is one backend's column.
type ConformBackend struct {
	Cells    int      `json:"cells"`
	BitExact int      `json:"bitexact"`
	Inexact  int      `json:"inexact_within_bound"`
	X        int      `json:"executed_x"` // on a real driver
	H        int      `json:"executed_h"` // by host emulation only
	Failed   []string `json:"failed,omitempty"`
}

// conformRecord is the part of a conform JSON record the summary reads.
type conformRecord struct {
	Op, Type, Backend, Schedule, Levels, Reason string
	BitExact                                    bool `json:"bitexact"`
	Inexact                                     bool
	Within                                      bool `json:"within_tolerance"`
}

// suiteOps lists the ops of the conformance suite's cells of ops and types (comma-separated; ""
// for all), in order, each once.
func suiteOps(ops, types string) []string {
	f := conformance.Filter{}
	if ops != "" {
		f.Ops = strings.Split(ops, ",")
	}
	if types != "" {
		f.Types = strings.Split(types, ",")
	}
	var out []string
	for _, c := range f.Cells() {
		if len(out) == 0 || out[len(out)-1] != c.Op {
			out = append(out, c.Op)
		}
	}
	return out
}

// readConform summarizes conform JSON files (each an array of records); the files that do not
// exist (a step the budget did not reach) are left out, and nil is returned when none does.
func readConform(paths []string) (*ConformSummary, error) {
	var recs []conformRecord
	found := false
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var some []conformRecord
		if err := json.Unmarshal(b, &some); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		recs, found = append(recs, some...), true
	}
	if !found {
		return nil, nil
	}
	s := &ConformSummary{Records: len(recs), ByBackend: map[string]*ConformBackend{}}
	for _, r := range recs {
		c := s.ByBackend[r.Backend]
		if c == nil {
			c = &ConformBackend{}
			s.ByBackend[r.Backend] = c
		}
		c.Cells++
		switch {
		case r.BitExact:
			c.BitExact++
		case r.Inexact && r.Within:
			c.Inexact++
		default:
			c.Failed = append(c.Failed, fmt.Sprintf("%s/%s/%s %s: %s", r.Op, r.Type, r.Backend, r.Schedule, r.Reason))
		}
		switch {
		case strings.Contains(r.Levels, "X"):
			c.X++
		case strings.Contains(r.Levels, "H"):
			c.H++
		}
	}
	return s, nil
}

// LlamaRun is one backend's run of the synthetic model (examples/llama): what it printed, its
// time, and the SHA-256 of its last logits.
type LlamaRun struct {
	Output       string `json:"output"`
	LogitsSHA256 string `json:"logits_sha256,omitempty"`
}

// readLlama reads a backend's llama output (FILE) and logits (FILE with .f32 for .txt).
func readLlama(path string) (LlamaRun, error) {
	var r LlamaRun
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	r.Output = tail(string(b), 20)
	if lb, err := os.ReadFile(strings.TrimSuffix(path, ".txt") + ".f32"); err == nil && len(lb) > 0 {
		h := sha256.Sum256(lb)
		r.LogitsSHA256 = hex.EncodeToString(h[:])
	}
	return r, nil
}

// readSteps reads the script's steps file: one "NAME RC SECONDS" line per step.
func readSteps(path string) ([]Step, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Step
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue
		}
		rc, err1 := strconv.Atoi(fields[1])
		secs, err2 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		out = append(out, Step{Name: fields[0], RC: rc, Seconds: secs})
	}
	return out, sc.Err()
}

// rawJSON reads a JSON file verbatim (the tuning cache, bench records), or nil when it is missing
// or not JSON.
func rawJSON(path string) json.RawMessage {
	b, err := os.ReadFile(path)
	if err != nil || !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

// addSteps fills the GPU day's sections of res from the files the flags name; llama maps a
// backend to its output file. A missing file is no error (its step did not run, or failed: the
// steps file says which); an unreadable one is.
func addSteps(res *Results, stepsPath, conformPath, tuningPath, benchPath string, llama map[string]string) error {
	if stepsPath != "" {
		steps, err := readSteps(stepsPath)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		res.Steps = steps
	}
	if conformPath != "" {
		s, err := readConform(strings.Split(conformPath, ","))
		if err != nil {
			return err
		}
		res.Conform = s
	}
	if tuningPath != "" {
		res.Tuning = rawJSON(tuningPath)
	}
	if benchPath != "" {
		res.MatvecBench = rawJSON(benchPath)
	}
	if len(llama) > 0 {
		res.Llama = map[string]LlamaRun{}
		var sums []string
		names := make([]string, 0, len(llama))
		for name := range llama {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			r, err := readLlama(llama[name])
			if err != nil {
				if os.IsNotExist(err) {
					continue
				}
				return err
			}
			res.Llama[name] = r
			sums = append(sums, r.LogitsSHA256)
		}
		if len(sums) == len(llama) && len(sums) > 1 {
			equal := sums[0] != ""
			for _, s := range sums[1:] {
				equal = equal && s == sums[0]
			}
			res.LlamaLogitsEqual = &equal
		}
	}
	return nil
}

// llamaFlag collects -llama NAME=FILE flags.
type llamaFlag map[string]string

func (f llamaFlag) String() string { return fmt.Sprint(map[string]string(f)) }

func (f llamaFlag) Set(v string) error {
	name, file, ok := strings.Cut(v, "=")
	if !ok || name == "" || file == "" {
		return fmt.Errorf("want NAME=FILE, got %q", v)
	}
	f[name] = file
	return nil
}
