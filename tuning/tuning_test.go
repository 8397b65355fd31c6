package tuning

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

// key builds a key on machine dev for cell with the twin hash twin.
func key(cell, dev, twin string) Key {
	return Key{Cell: cell, Backend: "vulkan", Device: dev, Driver: "mesa 24.1", TwinHash: twin}
}

// entry builds a valid entry choosing sched among two exact candidates and one inexact one.
func entry(k Key, sched string, date string) Entry {
	cands := []Candidate{
		{Schedule: "lanes=32,blocked", Exact: true, Seconds: 2e-5, GBps: 410},
		{Schedule: "lanes=64", Exact: true, Seconds: 3e-5, GBps: 300},
		{Schedule: "lanes=16,split", Exact: false, Reason: "max ulp 3"},
	}
	secs := 0.0
	for _, c := range cands {
		if c.Schedule == sched {
			secs = c.Seconds
		}
	}
	return Entry{Key: k, Shape: "rows=1024,n=4096", Schedule: sched, Seconds: secs, Date: date, Tool: "onesource tune", Candidates: cands}
}

const (
	d1 = "2025-01-02T03:04:05Z"
	d2 = "2025-02-03T04:05:06Z"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sample(t *testing.T) *Cache {
	c := New()
	// Put in an order different from the file order.
	must(t, c.Put(entry(key("rms_norm/f32", "gpu1", "h1"), "lanes=64", d1)))
	must(t, c.Put(entry(key("matvec/q4_0", "gpu1", "h2"), "lanes=32,blocked", d2)))
	must(t, c.Put(entry(key("matvec/q4_0", "gpu0", "h2"), "lanes=32,blocked", d1)))
	must(t, c.Put(entry(key("matvec/q4_0", "gpu0", "h1"), "lanes=64", d1)))
	return c
}

func TestPutValidates(t *testing.T) {
	ok := entry(key("matvec/q4_0", "gpu0", "h1"), "lanes=32,blocked", d1)
	cases := []struct {
		name    string
		edit    func(e *Entry)
		wantErr string
	}{
		{"valid", func(e *Entry) {}, ""},
		{"valid with offset date", func(e *Entry) { e.Date = "2025-01-02T05:04:05+02:00" }, ""},
		{"no cell", func(e *Entry) { e.Cell = "" }, "no cell"},
		{"no backend", func(e *Entry) { e.Backend = "" }, "no backend"},
		{"no device", func(e *Entry) { e.Device = "" }, "no device"},
		{"no driver", func(e *Entry) { e.Driver = "" }, "no driver"},
		{"no twin hash", func(e *Entry) { e.TwinHash = "" }, "no twin_hash"},
		{"no schedule", func(e *Entry) { e.Schedule = "" }, "no schedule"},
		{"schedule not a candidate", func(e *Entry) { e.Schedule = "lanes=128" }, "not one of the candidates"},
		{"schedule not exact", func(e *Entry) { e.Schedule = "lanes=16,split" }, "not bit-exact"},
		{"no candidates", func(e *Entry) { e.Candidates = nil }, "not one of the candidates"},
		{"zero seconds", func(e *Entry) { e.Seconds = 0 }, "positive"},
		{"negative seconds", func(e *Entry) { e.Seconds = -1 }, "positive"},
		{"NaN seconds", func(e *Entry) { e.Seconds = math.NaN() }, "positive"},
		{"Inf seconds", func(e *Entry) { e.Seconds = math.Inf(1) }, "positive"},
		{"bad date", func(e *Entry) { e.Date = "yesterday" }, "RFC 3339"},
		{"no date", func(e *Entry) { e.Date = "" }, "RFC 3339"},
		{"date without zone", func(e *Entry) { e.Date = "2025-01-02T03:04:05" }, "RFC 3339"},
		{"candidate without schedule", func(e *Entry) { e.Candidates[2].Schedule = "" }, "candidate 2 has no schedule"},
		{"duplicate candidate", func(e *Entry) { e.Candidates[1].Schedule = e.Candidates[0].Schedule }, "listed twice"},
		{"NaN candidate seconds", func(e *Entry) { e.Candidates[1].Seconds = math.NaN() }, "candidate 1"},
		{"negative candidate gbps", func(e *Entry) { e.Candidates[1].GBps = -3 }, "candidate 1"},
		{"invalid UTF-8 device", func(e *Entry) { e.Device = "gpu\xff" }, "UTF-8"},
		{"invalid UTF-8 shape", func(e *Entry) { e.Shape = "\xfe" }, "UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := ok.clone()
			tc.edit(&e)
			c := New()
			err := c.Put(e)
			if tc.wantErr == "" {
				must(t, err)
				got, found := c.Lookup(e.Key)
				if !found || got.String() != e.String() {
					t.Fatalf("Lookup = %v, %v after Put", got, found)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Put error %v, want %q", err, tc.wantErr)
			}
			if c.Len() != 0 {
				t.Fatalf("a refused entry was stored")
			}
		})
	}
}

func TestPutCopies(t *testing.T) {
	c := New()
	e := entry(key("matvec/q4_0", "gpu0", "h1"), "lanes=64", d1)
	must(t, c.Put(e))
	e.Candidates[0].Schedule = "mutated"
	got, _ := c.Lookup(e.Key)
	if got.Candidates[0].Schedule == "mutated" {
		t.Fatal("Put kept the caller's slice")
	}
	got.Candidates[1].Schedule = "mutated"
	again, _ := c.Lookup(e.Key)
	if again.Candidates[1].Schedule == "mutated" {
		t.Fatal("Lookup returned the cache's slice")
	}
	// Put replaces the entry of the same key.
	must(t, c.Put(entry(e.Key, "lanes=32,blocked", d2)))
	if got, _ := c.Lookup(e.Key); got.Schedule != "lanes=32,blocked" || c.Len() != 1 {
		t.Fatalf("Put did not replace: %v (len %d)", got, c.Len())
	}
}

func TestRoundTripStable(t *testing.T) {
	c := sample(t)
	b1, err := c.Marshal()
	must(t, err)
	if !bytes.HasSuffix(b1, []byte("}\n")) || bytes.HasSuffix(b1, []byte("\n\n")) {
		t.Fatalf("no single trailing newline:\n%s", b1)
	}
	if !bytes.HasPrefix(b1, []byte("{\n  \"format\": \"onesource-tuning\",\n  \"version\": 1,\n  \"entries\": [")) {
		t.Fatalf("header:\n%s", b1)
	}
	c2, err := Parse("x.json", b1)
	must(t, err)
	b2, err := c2.Marshal()
	must(t, err)
	if !bytes.Equal(b1, b2) {
		t.Fatalf("round trip changed the bytes:\n%s\n---\n%s", b1, b2)
	}
	// The same entries put in another order give the same bytes.
	c3 := New()
	es := c.Entries()
	for i := len(es) - 1; i >= 0; i-- {
		must(t, c3.Put(es[i]))
	}
	b3, err := c3.Marshal()
	must(t, err)
	if !bytes.Equal(b1, b3) {
		t.Fatalf("insertion order changed the bytes")
	}
	// Entries and the file are sorted by (cell, backend, device, driver, twin_hash).
	var order []string
	for _, e := range c2.Entries() {
		order = append(order, e.Cell+"|"+e.Device+"|"+e.TwinHash)
	}
	want := "matvec/q4_0|gpu0|h1 matvec/q4_0|gpu0|h2 matvec/q4_0|gpu1|h2 rms_norm/f32|gpu1|h1"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	re := regexp.MustCompile(`"twin_hash": "(h\d)"`)
	var fileOrder []string
	for _, m := range re.FindAllStringSubmatch(string(b1), -1) {
		fileOrder = append(fileOrder, m[1])
	}
	if got := strings.Join(fileOrder, ","); got != "h1,h2,h2,h1" {
		t.Fatalf("file order %s", got)
	}
	// Schedules and tools are written as they are, not HTML-escaped.
	h := New()
	he := entry(key("matvec/q4_0", "gpu0", "h1"), "lanes=64", d1)
	he.Tool = "tune <fast> & exact"
	must(t, h.Put(he))
	hb, err := h.Marshal()
	must(t, err)
	if !bytes.Contains(hb, []byte(`"tool": "tune <fast> & exact"`)) {
		t.Fatalf("HTML-escaped:\n%s", hb)
	}
	// An empty cache has an empty (not null) entry list and parses back.
	eb, err := New().Marshal()
	must(t, err)
	if !bytes.Contains(eb, []byte(`"entries": []`)) {
		t.Fatalf("empty cache:\n%s", eb)
	}
	if _, err := Parse("empty", eb); err != nil {
		t.Fatal(err)
	}
}

func TestSortOrderAllFields(t *testing.T) {
	base := Key{Cell: "b", Backend: "b", Device: "b", Driver: "b", TwinHash: "b"}
	// Each later field decides only when the earlier ones are equal.
	ks := []Key{
		{Cell: "a", Backend: "z", Device: "z", Driver: "z", TwinHash: "z"},
		{Cell: "b", Backend: "a", Device: "z", Driver: "z", TwinHash: "z"},
		{Cell: "b", Backend: "b", Device: "a", Driver: "z", TwinHash: "z"},
		{Cell: "b", Backend: "b", Device: "b", Driver: "a", TwinHash: "z"},
		{Cell: "b", Backend: "b", Device: "b", Driver: "b", TwinHash: "a"},
		base,
	}
	c := New()
	for i := len(ks) - 1; i >= 0; i-- {
		must(t, c.Put(entry(ks[i], "lanes=64", d1)))
	}
	for i, e := range c.Entries() {
		if e.Key != ks[i] {
			t.Fatalf("entry %d is %v, want %v", i, e.Key, ks[i])
		}
	}
}

func TestLookupAndStale(t *testing.T) {
	c := New()
	old1 := key("matvec/q4_0", "gpu0", "old1")
	old2 := key("matvec/q4_0", "gpu0", "old2")
	cur := key("matvec/q4_0", "gpu0", "new")
	must(t, c.Put(entry(old1, "lanes=64", d1)))
	must(t, c.Put(entry(old2, "lanes=64", d2)))
	// Same twin hash on other machines / cells / drivers: not stale for cur.
	other := []Key{key("matvec/q4_0", "gpu1", "old1"), key("matvec/q8_0", "gpu0", "old1")}
	o := key("matvec/q4_0", "gpu0", "old1")
	o.Driver = "mesa 25"
	other = append(other, o)
	o = key("matvec/q4_0", "gpu0", "old1")
	o.Backend = "cuda"
	other = append(other, o)
	for _, k := range other {
		must(t, c.Put(entry(k, "lanes=64", d1)))
	}

	if e, ok := c.Lookup(cur); ok {
		t.Fatalf("Lookup of a changed kernel returned %v", e)
	}
	st := c.Stale(cur)
	if len(st) != 2 || st[0].TwinHash != "old2" || st[1].TwinHash != "old1" {
		t.Fatalf("Stale = %v, want old2 (newer) then old1", st)
	}
	if e, ok := c.Lookup(old1); !ok || e.Key != old1 {
		t.Fatalf("Lookup of exact key = %v, %v", e, ok)
	}
	if st := c.Stale(old1); len(st) != 1 || st[0].TwinHash != "old2" {
		t.Fatalf("Stale(old1) = %v, want old2 only", st)
	}
	if st := c.Stale(key("softmax/f32", "gpu0", "x")); len(st) != 0 {
		t.Fatalf("Stale of an unknown cell = %v", st)
	}
	// Once retuned, Lookup hits.
	must(t, c.Put(entry(cur, "lanes=32,blocked", d2)))
	if e, ok := c.Lookup(cur); !ok || e.Schedule != "lanes=32,blocked" {
		t.Fatalf("Lookup after retune = %v, %v", e, ok)
	}
}

func TestMergeTwoMachines(t *testing.T) {
	a, b := New(), New()
	ka, kb := key("matvec/q4_0", "gpu0", "h1"), key("matvec/q4_0", "gpu1", "h1")
	must(t, a.Put(entry(ka, "lanes=64", d1)))
	must(t, b.Put(entry(kb, "lanes=32,blocked", d2)))
	if cf := a.Merge(b); len(cf) != 0 {
		t.Fatalf("different machines conflict: %v", cf)
	}
	if a.Len() != 2 {
		t.Fatalf("merged cache has %d entries, want 2", a.Len())
	}
	if e, ok := a.Lookup(ka); !ok || e.Schedule != "lanes=64" {
		t.Fatalf("lost machine a: %v %v", e, ok)
	}
	if e, ok := a.Lookup(kb); !ok || e.Schedule != "lanes=32,blocked" {
		t.Fatalf("lost machine b: %v %v", e, ok)
	}
	if b.Len() != 1 {
		t.Fatalf("Merge changed its argument")
	}
	if cf := a.Merge(a); cf != nil || a.Len() != 2 {
		t.Fatalf("merge with itself: %v, len %d", cf, a.Len())
	}
	if cf := a.Merge(nil); cf != nil {
		t.Fatalf("merge with nil: %v", cf)
	}
}

func TestMergeSameKey(t *testing.T) {
	k := key("matvec/q4_0", "gpu0", "h1")
	cases := []struct {
		name         string
		mine, theirs Entry
		keep         string // schedule kept
		keepDate     string
		conflict     bool
	}{
		{"theirs newer, other schedule", entry(k, "lanes=64", d1), entry(k, "lanes=32,blocked", d2), "lanes=32,blocked", d2, true},
		{"mine newer, other schedule", entry(k, "lanes=64", d2), entry(k, "lanes=32,blocked", d1), "lanes=64", d2, true},
		{"theirs newer, same schedule", entry(k, "lanes=64", d1), entry(k, "lanes=64", d2), "lanes=64", d2, false},
		{"identical", entry(k, "lanes=64", d1), entry(k, "lanes=64", d1), "lanes=64", d1, false},
		{"same instant, other zone", entry(k, "lanes=64", "2025-01-02T03:04:05Z"), entry(k, "lanes=32,blocked", "2025-01-02T05:04:05+02:00"), "lanes=32,blocked", "2025-01-02T05:04:05+02:00", true},
		{"same date: faster wins", entry(k, "lanes=64", d1), entry(k, "lanes=32,blocked", d1), "lanes=32,blocked", d1, true},
		// A later date in an earlier zone: compared as instants, not strings.
		{"newer by instant not by text", entry(k, "lanes=64", "2025-01-02T10:00:00+09:00"), entry(k, "lanes=32,blocked", "2025-01-02T02:00:00Z"), "lanes=32,blocked", "2025-01-02T02:00:00Z", true},
	}
	for _, tc := range cases {
		for _, flip := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/flip=%v", tc.name, flip), func(t *testing.T) {
				mine, theirs := tc.mine, tc.theirs
				if flip { // the outcome must not depend on which side is merged into which
					mine, theirs = theirs, mine
				}
				a, b := New(), New()
				must(t, a.Put(mine))
				must(t, b.Put(theirs))
				cf := a.Merge(b)
				got, ok := a.Lookup(k)
				if !ok || got.Schedule != tc.keep || got.Date != tc.keepDate || a.Len() != 1 {
					t.Fatalf("kept %v (len %d), want %s at %s", got, a.Len(), tc.keep, tc.keepDate)
				}
				if !tc.conflict {
					if len(cf) != 0 {
						t.Fatalf("unexpected conflicts %v", cf)
					}
					return
				}
				if len(cf) != 1 {
					t.Fatalf("conflicts %v, want one", cf)
				}
				drop := mine.Schedule
				if drop == tc.keep {
					drop = theirs.Schedule
				}
				if cf[0].Key != k || cf[0].Kept != tc.keep || cf[0].Dropped != drop || !strings.Contains(cf[0].Reason, drop) {
					t.Fatalf("conflict %+v, want kept %s dropped %s", cf[0], tc.keep, drop)
				}
			})
		}
	}
}

func TestMergeConflictsSorted(t *testing.T) {
	a, b := New(), New()
	for _, cell := range []string{"z/f32", "a/f32", "m/f32"} {
		k := key(cell, "gpu0", "h")
		must(t, a.Put(entry(k, "lanes=64", d1)))
		must(t, b.Put(entry(k, "lanes=32,blocked", d2)))
	}
	cf := a.Merge(b)
	var cells []string
	for _, c := range cf {
		cells = append(cells, c.Key.Cell)
	}
	if got := strings.Join(cells, " "); got != "a/f32 m/f32 z/f32" {
		t.Fatalf("conflicts in order %s", got)
	}
}

// valid is a well-formed one-entry file that the rejection cases below edit.
const valid = `{
  "format": "onesource-tuning",
  "version": 1,
  "entries": [
    {
      "cell": "matvec/q4_0",
      "backend": "vulkan",
      "device": "gpu0 (discrete)",
      "driver": "mesa 24.1",
      "twin_hash": "sha256:aa",
      "shape": "rows=1024,n=4096",
      "schedule": "lanes=32,blocked",
      "seconds": 2e-05,
      "date": "2025-01-02T03:04:05Z",
      "candidates": [
        {
          "schedule": "lanes=32,blocked",
          "exact": true,
          "seconds": 2e-05
        },
        {
          "schedule": "lanes=16",
          "exact": false,
          "reason": "max ulp 3"
        }
      ]
    }
  ]
}
`

func TestParseRejects(t *testing.T) {
	if _, err := Parse("t.json", []byte(valid)); err != nil {
		t.Fatalf("the base file is rejected: %v", err)
	}
	// two is a valid two-entry file: matvec/q4_0 (twin sha256:aa, date d1) then rope/f16 (twin
	// sha256:bb, date d2).
	tw := New()
	must(t, tw.Put(entry(Key{"matvec/q4_0", "vulkan", "gpu0", "mesa", "sha256:aa"}, "lanes=64", d1)))
	must(t, tw.Put(entry(Key{"rope/f16", "vulkan", "gpu0", "mesa", "sha256:bb"}, "lanes=64", d2)))
	twoB, err := tw.Marshal()
	must(t, err)
	two := string(twoB)
	if _, err := Parse("t.json", twoB); err != nil {
		t.Fatal(err)
	}
	dup := strings.Replace(strings.Replace(two, `"rope/f16"`, `"matvec/q4_0"`, 1), "sha256:bb", "sha256:aa", 1)
	cases := []struct {
		name string
		data string
		want []string // substrings the error must contain
	}{
		{"empty", "", []string{"t.json", "corrupt"}},
		{"syntax error", strings.Replace(valid, `"vulkan",`, `"vulkan"`, 1), []string{"t.json:8:7:", "corrupt"}},
		{"truncated", valid[:len(valid)/2], []string{"t.json", "corrupt"}},
		{"data after the end", valid + "{}", []string{"t.json:30:1:", "corrupt"}},
		{"wrong type", strings.Replace(valid, `"seconds": 2e-05,`, `"seconds": "fast",`, 1), []string{"t.json:13:18:", "corrupt"}},
		{"not an object", `[1, 2]`, []string{"t.json:1:", "corrupt"}},
		{"unknown field", strings.Replace(valid, `"shape":`, `"speed": 1, "shape":`, 1), []string{"t.json", "unknown field", "speed"}},
		{"unknown top-level field", strings.Replace(valid, `"version": 1,`, `"version": 1, "extra": true,`, 1), []string{"t.json", "unknown field", "extra"}},
		{"unknown candidate field", strings.Replace(valid, `"exact": false,`, `"exact": false, "ulp": 3,`, 1), []string{"t.json", "unknown field", "ulp"}},
		{"registry file", `{"format": "onesource-registry", "version": 1, "threshold": 0.97, "cells": [], "history": []}`, []string{"t.json", "not a onesource tuning cache", "onesource-registry"}},
		{"no format", `{"version": 1, "entries": []}`, []string{"t.json", "no format field"}},
		{"null", `null`, []string{"t.json", "no format field"}},
		{"newer version", strings.Replace(valid, `"version": 1,`, `"version": 2,`, 1), []string{"t.json", "version 2 is newer", "upgrade"}},
		{"no version", strings.Replace(valid, `"version": 1,`, ``, 1), []string{"t.json", "no valid version"}},
		{"version zero", strings.Replace(valid, `"version": 1,`, `"version": 0,`, 1), []string{"t.json", "no valid version"}},
		{"bad entry: no device", strings.Replace(valid, `"device": "gpu0 (discrete)",`, `"device": "",`, 1), []string{"t.json", "entry 0 (matvec/q4_0)", "no device"}},
		{"bad entry: schedule not exact", strings.Replace(valid, `"schedule": "lanes=32,blocked",
      "seconds"`, `"schedule": "lanes=16",
      "seconds"`, 1), []string{"t.json", "entry 0 (matvec/q4_0)", "not bit-exact"}},
		{"bad entry: seconds", strings.Replace(valid, `"seconds": 2e-05,
      "date"`, `"seconds": 0,
      "date"`, 1), []string{"t.json", "entry 0 (matvec/q4_0)", "positive"}},
		{"bad entry: date", strings.Replace(valid, `2025-01-02T03:04:05Z`, `2025-13-02`, 1), []string{"t.json", "entry 0 (matvec/q4_0)", "RFC 3339"}},
		{"bad second entry", strings.Replace(two, d2, "2025-02-30T00:00:00Z", 1), []string{"t.json: entry 1 (rope/f16)", "RFC 3339"}},
		{"bad candidate", strings.Replace(two, `"lanes=16,split",
          "exact": false`, `"lanes=16,split",
          "exact": false, "seconds": -1`, 2), []string{"t.json: entry 0 (matvec/q4_0)", "candidate 2"}},
		{"duplicate key", dup, []string{"t.json", "entry 1 (matvec/q4_0)", "duplicate key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.json", []byte(tc.data))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.data)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestErrorPositions checks that FILE:LINE:COL points at the offending character of a syntax
// error and at the start of a value of the wrong type.
func TestErrorPositions(t *testing.T) {
	hdr := "{\"format\": \"onesource-tuning\", \"version\": 1,\n"
	cases := []struct{ data, want string }{
		{hdr + `"entries": [}`, "f:2:13:"},
		{hdr + `"entries": [{"cell" "x"}]}`, "f:2:21:"},
		{hdr + `"entries": [{"cell": 7}]}`, "f:2:22:"},
		{hdr + `"entries": [{"cell": -1.5e+3}]}`, "f:2:22:"},
		{hdr + `"entries": [{"cell": true}]}`, "f:2:22:"},
		{hdr + `"entries": [{"cell": {"a": 1}}]}`, "f:2:22:"},
		{hdr + `"entries": [{"cell": "a", "seconds": [1]}]}`, "f:2:38:"},
		{hdr + `"entries": [{"cell": "a", "seconds": "x\"y\\"}]}`, "f:2:38:"},
		{hdr + `"entries": {}}`, "f:2:12:"},
		{`{"format": 1}`, "f:1:12:"},
		{`{"format": "onesource-tuning", "version": "1"}`, "f:1:43:"},
		{"{\n\n  x", "f:3:3:"},
	}
	for _, tc := range cases {
		_, err := Parse("f", []byte(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want position %s", tc.data, err, tc.want)
		}
	}
}

func TestLoadNamesFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tuning.json")
	must(t, os.WriteFile(p, []byte(strings.Replace(valid, `"vulkan",`, `"vulkan"`, 1)), 0o644))
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p+":8:7:") {
		t.Fatalf("Load error %v does not name %s:8:7", err, p)
	}
	if _, err := Open(p); err == nil {
		t.Fatal("Open accepted a corrupt file")
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
	// Open of something that exists but cannot be read as a file is an error, not an empty cache.
	if _, err := Open(dir); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
}

func TestOpenMissingThenSave(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tuning.json")
	c, err := Open(p)
	must(t, err)
	if c.Len() != 0 || c.Path() != p {
		t.Fatalf("Open of a missing file: len %d path %q", c.Len(), c.Path())
	}
	must(t, c.Put(entry(key("matvec/q4_0", "gpu0", "h1"), "lanes=64", d1)))
	must(t, c.Save(""))
	c2, err := Load(p)
	must(t, err)
	if e, ok := c2.Lookup(key("matvec/q4_0", "gpu0", "h1")); !ok || e.Schedule != "lanes=64" {
		t.Fatalf("saved file lacks the entry: %v %v", e, ok)
	}
	// Saving again after a successful Save works (the cache is bound to the new content).
	must(t, c.Put(entry(key("matvec/q4_0", "gpu1", "h1"), "lanes=64", d1)))
	must(t, c.Save(""))
	// Open of an existing file loads it.
	c3, err := Open(p)
	must(t, err)
	if c3.Len() != 2 {
		t.Fatalf("Open loaded %d entries, want 2", c3.Len())
	}
	if err := New().Save(""); err == nil {
		t.Fatal("Save with no path succeeded")
	}
}

func TestSaveRefuses(t *testing.T) {
	k := key("matvec/q4_0", "gpu0", "h1")
	cases := []struct {
		name    string
		between func(t *testing.T, p string) // runs between Load/Open and Save
		open    bool                         // Open a missing file instead of Load
		changed bool                         // the error must wrap ErrChanged
		want    string
	}{
		{name: "changed on disk", changed: true, want: "reload", between: func(t *testing.T, p string) {
			other, err := Load(p)
			must(t, err)
			must(t, other.Put(entry(key("rope/f16", "gpu0", "h1"), "lanes=64", d1)))
			must(t, other.Save(""))
		}},
		{name: "deleted", changed: true, want: "was removed", between: func(t *testing.T, p string) { must(t, os.Remove(p)) }},
		{name: "appeared", open: true, changed: true, want: "was created by someone else", between: func(t *testing.T, p string) {
			must(t, os.WriteFile(p, []byte(valid), 0o644))
		}},
		{name: "unchanged", between: func(t *testing.T, p string) {}},
		{name: "rewritten with the same bytes", between: func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, b, 0o644))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "tuning.json")
			var c *Cache
			var err error
			if tc.open {
				c, err = Open(p)
			} else {
				must(t, os.WriteFile(p, []byte(valid), 0o644))
				c, err = Load(p)
			}
			must(t, err)
			tc.between(t, p)
			before, _ := os.ReadFile(p)
			must(t, c.Put(entry(k, "lanes=64", d2)))
			err = c.Save("")
			if tc.want == "" {
				must(t, err)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrChanged) != tc.changed {
				t.Fatalf("Save error %v, want %q (ErrChanged %v)", err, tc.want, tc.changed)
			}
			after, _ := os.ReadFile(p)
			if !bytes.Equal(before, after) {
				t.Fatalf("a refused Save changed the file")
			}
			assertNoTemp(t, filepath.Dir(p))
		})
	}
}

func TestSaveRefusesForeignFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tuning.json")
	must(t, os.WriteFile(p, []byte(valid), 0o644))
	c := sample(t)
	err := c.Save(p)
	if err == nil || !strings.Contains(err.Error(), "was not loaded from it") {
		t.Fatalf("Save over a file it did not load: %v", err)
	}
	// Neither does a cache loaded from another file overwrite it.
	q := filepath.Join(dir, "other.json")
	must(t, os.WriteFile(q, []byte(valid), 0o644))
	c2, err := Load(q)
	must(t, err)
	if err := c2.Save(p); err == nil || !strings.Contains(err.Error(), "was not loaded from it") {
		t.Fatalf("Save of another file's cache over p: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != valid {
		t.Fatal("the file was changed")
	}
	// Saving to a new path is allowed and binds the cache to it.
	r := filepath.Join(dir, "new.json")
	must(t, c2.Save(r))
	if c2.Path() != r {
		t.Fatalf("Path after Save = %q, want %q", c2.Path(), r)
	}
	must(t, c2.Save(""))
}

func TestSaveAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tuning.json")
	must(t, os.WriteFile(p, []byte(valid), 0o644))
	c, err := Load(p)
	must(t, err)
	must(t, c.Put(entry(key("rope/f16", "gpu0", "h1"), "lanes=64", d1)))

	old := atomicfile.WriteHook
	defer func() { atomicfile.WriteHook = old }()
	var wrote int
	atomicfile.WriteHook = func(f *os.File, data []byte) error {
		n, err := f.Write(data[:len(data)/2])
		wrote = n
		if err != nil {
			return err
		}
		return errors.New("disk full")
	}
	err = c.Save("")
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Save error %v, want the write failure", err)
	}
	if wrote == 0 {
		t.Fatal("the hook was not called")
	}
	if b, _ := os.ReadFile(p); string(b) != valid {
		t.Fatalf("a failed Save changed the file:\n%s", b)
	}
	assertNoTemp(t, dir)

	// The cache still saves once the disk recovers, and the file then holds both entries.
	atomicfile.WriteHook = old
	must(t, c.Save(""))
	c2, err := Load(p)
	must(t, err)
	if c2.Len() != 2 {
		t.Fatalf("saved %d entries, want 2", c2.Len())
	}
	want, _ := c.Marshal()
	if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
		t.Fatal("the file does not hold Marshal's bytes")
	}
	assertNoTemp(t, dir)
}

// TestSaveRacingWriter: another process writes the file while Save writes its temporary file;
// Save must notice before renaming and keep the other writer's file.
func TestSaveRacingWriter(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tuning.json")
	must(t, os.WriteFile(p, []byte(valid), 0o644))
	c, err := Load(p)
	must(t, err)
	must(t, c.Put(entry(key("rope/f16", "gpu0", "h1"), "lanes=64", d1)))
	theirs := strings.Replace(valid, "gpu0 (discrete)", "gpu7", 1)
	old := atomicfile.WriteHook
	defer func() { atomicfile.WriteHook = old }()
	atomicfile.WriteHook = func(f *os.File, data []byte) error {
		if err := os.WriteFile(p, []byte(theirs), 0o644); err != nil {
			return err
		}
		return old(f, data)
	}
	if err := c.Save(""); !errors.Is(err, ErrChanged) {
		t.Fatalf("Save error %v, want ErrChanged", err)
	}
	if b, _ := os.ReadFile(p); string(b) != theirs {
		t.Fatalf("Save overwrote the other writer's file:\n%s", b)
	}
	assertNoTemp(t, dir)
}

// assertNoTemp fails if dir holds anything but tuning files (a temporary file left behind).
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	must(t, err)
	for _, de := range des {
		if strings.Contains(de.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left behind", de.Name())
		}
	}
}

func TestZeroCache(t *testing.T) {
	var c Cache
	k := key("matvec/q4_0", "gpu0", "h1")
	if _, ok := c.Lookup(k); ok || c.Len() != 0 || len(c.Entries()) != 0 || len(c.Stale(k)) != 0 {
		t.Fatal("zero cache not empty")
	}
	if b, err := c.Marshal(); err != nil || !bytes.Contains(b, []byte(`"entries": []`)) {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var m Cache
	o := New()
	must(t, o.Put(entry(k, "lanes=64", d1)))
	if cf := m.Merge(o); cf != nil || m.Len() != 1 {
		t.Fatalf("Merge into zero cache: %v, len %d", cf, m.Len())
	}
	must(t, c.Put(entry(k, "lanes=64", d1)))
	if _, ok := c.Lookup(k); !ok {
		t.Fatal("Put into a zero cache lost the entry")
	}
	if !c.Delete(k) || c.Delete(k) || c.Len() != 0 {
		t.Fatal("Delete")
	}
}

func TestConcurrent(t *testing.T) {
	c := New()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				k := key(fmt.Sprintf("op%d/f32", i), fmt.Sprintf("gpu%d", g), "h")
				if err := c.Put(entry(k, "lanes=64", d1)); err != nil {
					t.Error(err)
					return
				}
				if _, ok := c.Lookup(k); !ok {
					t.Error("lost an entry")
					return
				}
				c.Stale(k)
				c.Entries()
				if _, err := c.Marshal(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	other := New()
	must(t, other.Put(entry(key("x/f32", "gpu9", "h"), "lanes=64", d1)))
	wg.Add(1)
	go func() { defer wg.Done(); c.Merge(other); other.Merge(c) }()
	wg.Wait()
	if c.Len() != 8*50+1 {
		t.Fatalf("len %d, want %d", c.Len(), 8*50+1)
	}
}

func TestStrings(t *testing.T) {
	e := entry(key("matvec/q4_0", "gpu0", "h1"), "lanes=64", d1)
	s := fmt.Sprint(e)
	if !strings.Contains(s, "lanes=64") || !strings.Contains(s, "matvec/q4_0") {
		t.Fatalf("Entry prints as %q", s)
	}
	if got := Date(mustTime(t, "2025-01-02T05:04:05+02:00")); got != "2025-01-02T03:04:05Z" {
		t.Fatalf("Date = %s", got)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	e := Entry{Date: s}
	tm, err := e.Time()
	must(t, err)
	return tm
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	b, _ := func() ([]byte, error) {
		c := New()
		c.Put(entry(key("matvec/q4_0", "gpu0", "h1"), "lanes=64", d1))
		c.Put(entry(key("matvec/q4_0", "gpu0", "h2"), "lanes=32,blocked", d2))
		return c.Marshal()
	}()
	f.Add(b)
	f.Add([]byte(`{"format":"onesource-tuning","version":1,"entries":null}`))
	f.Add([]byte(`{"format":"onesource-registry","version":1}`))
	f.Add([]byte(`{"format":"onesource-tuning","version":2}`))
	f.Add([]byte(`{"format":"onesource-tuning","version":1,"entries":[{"cell":"a","backend":"b","device":"c","driver":"d","twin_hash":"e","shape":"","schedule":"s","seconds":1e-300,"date":"2025-01-02T03:04:05.123456789-07:00","candidates":[{"schedule":"s","exact":true,"reason":"\u2028<&>"}]}]}`))
	f.Add([]byte(``))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		b1, err := c.Marshal()
		if err != nil {
			t.Fatalf("accepted input does not marshal: %v", err)
		}
		c2, err := Parse("again", b1)
		if err != nil {
			t.Fatalf("marshaled form rejected: %v\n%s", err, b1)
		}
		b2, err := c2.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("not stable:\n%s\n---\n%s", b1, b2)
		}
	})
}
