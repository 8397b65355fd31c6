package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/tuning"
)

// TestTuneAndBenchCommands tunes one cell into a new cache file, then benchmarks it with that
// cache: the bench record says the schedule was tuned and names the cache's schedule, at the
// shape asked for.
func TestTuneAndBenchCommands(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	dir := t.TempDir()
	cachePath := filepath.Join(dir, "tuning.json")
	code, stdout, stderr := run(t, "tune", "-op", "rms_norm", "-type", "f32", "-shape", "4x1024", "-cache", cachePath, "-rounds", "1", "-n", "2")
	if code != 0 {
		t.Fatalf("tune exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	cache, err := tuning.Load(cachePath)
	if err != nil {
		t.Fatal(err)
	}
	es := cache.Entries()
	if len(es) != 1 || es[0].Cell != "rms_norm/f32" || es[0].Backend != "vulkan" || es[0].Shape != "4x1024,eps=1e-06" || len(es[0].Candidates) < 4 {
		t.Fatalf("cache entries %+v", es)
	}
	if !strings.Contains(stdout, "rms_norm/f32/vulkan") || !strings.Contains(stdout, "tuning cache: "+cachePath) {
		t.Errorf("tune output:\n%s", stdout)
	}

	jsonPath := filepath.Join(dir, "bench.json")
	code, stdout, stderr = run(t, "bench", "-op", "rms_norm", "-type", "f32", "-shape", "4x1024", "-tuning", cachePath, "-json", jsonPath, "-n", "2", "-repeats", "2")
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d bench records, want 1", len(recs))
	}
	r := recs[0]
	for _, f := range []string{"cell", "shape", "schedule", "seconds", "gbps", "roofline_pct"} {
		if _, ok := r[f]; !ok {
			t.Errorf("bench record lacks %q: %v", f, r)
		}
	}
	if r["cell"] != "rms_norm/f32/vulkan" || r["shape"] != "4x1024,eps=1e-06" || r["schedule"] != es[0].Schedule || r["tuned"] != true || r["bitexact"] != true {
		t.Errorf("bench record %v; want the cache's schedule %s, tuned, bit-exact", r, es[0].Schedule)
	}
	if s, _ := r["seconds"].(float64); !(s > 0) {
		t.Errorf("seconds %v", r["seconds"])
	}
	if !strings.Contains(stdout, "(tuned)") {
		t.Errorf("bench table does not say the schedule was tuned:\n%s", stdout)
	}
}

func TestTuneAndBenchErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"tune", "-op", "no_such_op"}, 2, "no cell matches"},
		{[]string{"tune", "-backend", "cuda"}, 2, "only vulkan"},
		{[]string{"tune", "-op", "matvec", "-shape", "1x2x3x4"}, 2, "-shape"},
		{[]string{"tune", "-rounds", "0"}, 2, "-rounds"},
		{[]string{"bench", "-op", "softmax", "-schedule", "lanes=12"}, 2, "-schedule"},
		{[]string{"bench", "-op", "matvec_q8", "-type", "q4_K", "-schedule", "lanes=128"}, 2, "does not fit"},
		{[]string{"bench", "-op", "add", "-tuning", filepath.Join(dir, "missing.json")}, 1, "missing.json"},
		{[]string{"bench", "extra"}, 2, "the arguments after the flags are packages whose cells"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
	foreign := filepath.Join(dir, "cells.json")
	os.WriteFile(foreign, []byte("{\"format\": \"onesource-registry\", \"version\": 1}\n"), 0o644)
	if code, _, stderr := run(t, "tune", "-op", "add", "-cache", foreign); code != 1 || !strings.Contains(stderr, "not a onesource tuning cache") {
		t.Errorf("a registry file as the cache: exit %d, stderr %q", code, stderr)
	}
}
