package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var k1 = Key{"matvec", "q4_K", "vulkan"}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// ev builds evidence from device; ratio < 0 means no incumbent.
func ev(device string, bitExact bool, ratio float64) Evidence {
	e := Evidence{Device: device, Driver: "mesa 24", Toolchain: "go1.26", BitExact: bitExact, TwinGBps: 100,
		Ratio: Spread{Median: ratio, Min: ratio - 0.01, Max: ratio + 0.01, Pairs: 9}, TwinHash: "sha256:twin", Date: t0}
	if !bitExact {
		e.MaxULP = 3
	}
	if ratio >= 0 {
		e.IncumbentGBps = 100 / ratio
		e.IncumbentHash = "sha256:hand"
		e.RooflineGBps = 200
	} else {
		e.Ratio = Spread{}
	}
	return e
}

func newReg(t *testing.T) *Registry {
	r := New()
	n := 0
	r.Now = func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
	return r
}

func TestTransitions(t *testing.T) {
	type step struct {
		verdict Verdict
		e       Evidence
		revert  bool
	}
	cases := []struct {
		name    string
		setup   []step
		step    step
		want    State
		wantErr string
		impl    Impl
	}{
		{name: "hand->dsl", step: step{verdict: Flip, e: ev("gpu0", true, 1.02)}, want: DSL, impl: Twin},
		{name: "hand->dsl at threshold", step: step{verdict: Flip, e: ev("gpu0", true, 0.97)}, want: DSL, impl: Twin},
		{name: "hand->declined", step: step{verdict: Decline, e: ev("gpu0", true, 0.90)}, want: Declined, impl: Incumbent},
		{name: "hand->failing", step: step{verdict: Fail, e: ev("gpu0", false, 1.5)}, want: Failing, impl: Incumbent},
		{name: "missing->fallback", step: step{verdict: Flip, e: ev("gpu0", true, -1)}, want: Fallback, impl: Twin},
		{name: "missing->failing", step: step{verdict: Fail, e: ev("gpu0", false, -1)}, want: Failing, impl: None},
		{name: "flip claimed on slow evidence", step: step{verdict: Flip, e: ev("gpu0", true, 0.96)}, want: Hand, wantErr: "does not follow"},
		{name: "flip claimed on inexact evidence", step: step{verdict: Flip, e: ev("gpu0", false, 1.2)}, want: Hand, wantErr: "does not follow"},
		{name: "decline claimed on fast evidence", step: step{verdict: Decline, e: ev("gpu0", true, 1.2)}, want: Hand, wantErr: "does not follow"},
		{name: "keep records only", step: step{verdict: Keep, e: ev("gpu0", true, 1.2)}, want: Hand, impl: Incumbent},
		{name: "declined->dsl", setup: []step{{verdict: Decline, e: ev("gpu0", true, 0.9)}}, step: step{verdict: Flip, e: ev("gpu0", true, 1.0)}, want: DSL, impl: Twin},
		{name: "failing->dsl", setup: []step{{verdict: Fail, e: ev("gpu0", false, 1)}}, step: step{verdict: Flip, e: ev("gpu0", true, 1.0)}, want: DSL, impl: Twin},
		{name: "dsl not downgraded by decline", setup: []step{{verdict: Flip, e: ev("gpu0", true, 1)}}, step: step{verdict: Decline, e: ev("gpu0", true, 0.5)}, want: DSL, wantErr: "undone only by Revert", impl: Twin},
		{name: "dsl not downgraded by fail", setup: []step{{verdict: Flip, e: ev("gpu0", true, 1)}}, step: step{verdict: Fail, e: ev("gpu0", false, 1)}, want: DSL, wantErr: "undone only by Revert", impl: Twin},
		{name: "another machine fails", setup: []step{{verdict: Flip, e: ev("gpu0", true, 1)}}, step: step{verdict: Fail, e: ev("gpu1", false, 1)}, want: Failing, impl: Incumbent},
		{name: "another machine declines", setup: []step{{verdict: Flip, e: ev("gpu0", true, 1)}}, step: step{verdict: Decline, e: ev("gpu1", true, 0.5)}, want: Declined, impl: Incumbent},
		{name: "dsl->hand by revert", setup: []step{{verdict: Flip, e: ev("gpu0", true, 1)}}, step: step{revert: true}, want: Hand, impl: Incumbent},
		{name: "revert of non-dsl refused", step: step{revert: true}, want: Hand, wantErr: "not dsl"},
		{name: "reverted then declined", setup: []step{{verdict: Flip, e: ev("gpu0", true, 1)}, {revert: true}}, step: step{verdict: Decline, e: ev("gpu0", true, 0.5)}, want: Declined, impl: Incumbent},
		{name: "two devices, one declines", setup: []step{{verdict: Decline, e: ev("gpu1", true, 0.8)}}, step: step{verdict: Flip, e: ev("gpu0", true, 1.1)}, want: Declined, impl: Incumbent},
		{name: "wrong incumbent", step: step{verdict: Flip, e: func() Evidence { e := ev("gpu0", true, 1); e.IncumbentHash = "other"; return e }()}, want: Hand, wantErr: "measured incumbent"},
		{name: "no benchmark of a registered incumbent", step: step{verdict: Flip, e: ev("gpu0", true, -1)}, want: Hand, wantErr: "did not benchmark"},
		{name: "malformed evidence", step: step{verdict: Flip, e: func() Evidence { e := ev("gpu0", true, 1); e.Device = ""; return e }()}, want: Hand, wantErr: "no device"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReg(t)
			incumbent := !strings.HasPrefix(tc.name, "missing")
			if incumbent {
				if err := r.Register(k1, "sha256:hand", "ggml"); err != nil {
					t.Fatal(err)
				}
			}
			do := func(s step) error {
				if s.revert {
					return r.Revert(k1, "bug 12")
				}
				return r.Apply(GateResult{Key: k1, Evidence: s.e, Verdict: s.verdict})
			}
			for _, s := range tc.setup {
				if err := do(s); err != nil {
					t.Fatalf("setup: %v", err)
				}
			}
			before := len(r.History())
			err := do(tc.step)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if len(r.History()) != before {
					t.Fatalf("a refused step wrote history")
				}
			}
			c, _ := r.Cell(k1)
			if c.State != tc.want {
				t.Fatalf("state %q, want %q (%s)", c.State, tc.want, c.Reason)
			}
			if tc.impl != "" {
				if got := r.Select(k1.Op, k1.Type, k1.Backend); got.Impl != tc.impl || got.State != tc.want {
					t.Fatalf("Select = %+v, want %s/%s", got, tc.impl, tc.want)
				}
			}
		})
	}
}

func TestDowngradeErrorType(t *testing.T) {
	r := newReg(t)
	r.Register(k1, "sha256:hand", "")
	if err := r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 1), Verdict: Flip}); err != nil {
		t.Fatal(err)
	}
	err := r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.5), Verdict: Decline})
	var de *DowngradeError
	if !errors.As(err, &de) || de.To != Declined {
		t.Fatalf("got %v, want *DowngradeError to declined", err)
	}
}

func TestSelectConcurrent(t *testing.T) {
	r := newReg(t)
	r.Register(k1, "sha256:hand", "")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := r.Select("matvec", "q4_K", "vulkan")
				if c.Impl == None {
					t.Error("registered cell selected none")
					return
				}
				r.Select("nope", "f32", "vulkan")
			}
		}()
	}
	for i := 0; i < 200; i++ {
		if err := r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 1), Verdict: Flip}); err != nil {
			t.Fatal(err)
		}
		if err := r.Revert(k1, "flap"); err != nil {
			t.Fatal(err)
		}
		r.Register(Key{"rms_norm", "f32", "vulkan"}, "h", "")
	}
	close(stop)
	wg.Wait()
}

func BenchmarkSelect(b *testing.B) {
	r := New()
	r.Register(k1, "sha256:hand", "")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Select("matvec", "q4_K", "vulkan")
		}
	})
}

func TestHistoryAppendOnly(t *testing.T) {
	r := newReg(t)
	r.Register(k1, "sha256:hand", "")
	prev := r.History()
	steps := []func() error{
		func() error { return r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.9), Verdict: Decline}) },
		func() error { return r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 1.1), Verdict: Flip}) },
		func() error { return r.Revert(k1, "regression in prod") },
		func() error { return r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 1.1), Verdict: Flip}) },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
		h := r.History()
		if len(h) != len(prev)+1 {
			t.Fatalf("step %d: history %d entries, want %d", i, len(h), len(prev)+1)
		}
		for j := range prev {
			if entryHash(prev[j]) != entryHash(h[j]) {
				t.Fatalf("step %d rewrote entry %d", i, j)
			}
		}
		prev = h
	}
	h := r.History()
	h[0].Reason = "mutated copy"
	if r.History()[0].Reason == "mutated copy" {
		t.Fatal("History returned shared storage")
	}
	var acts []string
	for _, e := range r.History() {
		acts = append(acts, e.Action)
	}
	if got := strings.Join(acts, ","); got != "register,decline,flip,revert,flip" {
		t.Fatalf("actions %s", got)
	}
	// An edited history is rejected on load.
	b, _ := r.Marshal()
	edited := strings.Replace(string(b), "regression in prod", "nothing happened", 1)
	if _, err := Parse("x", []byte(edited)); err == nil || !strings.Contains(err.Error(), "history was edited") {
		t.Fatalf("edited history: %v", err)
	}
}

func TestRoundTripStable(t *testing.T) {
	r := newReg(t)
	r.Register(k1, "sha256:hand", "ggml")
	r.Apply(GateResult{Key: k1, Evidence: ev("gpu1", true, 1.01), Verdict: Flip})
	r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 1.05), Verdict: Flip})
	r.Apply(GateResult{Key: Key{"add", "f32", "vulkan"}, Evidence: ev("gpu0", true, -1), Verdict: Flip})
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Parse("x", b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := r2.Marshal()
	if string(b) != string(b2) {
		t.Fatalf("round trip differs:\n%s\n---\n%s", b, b2)
	}
	if !strings.HasPrefix(string(b), "{\n  \"format\": \"onesource-registry\",\n  \"version\": 3,") {
		t.Fatalf("header: %.80s", b)
	}
	if c := r2.Select("matvec", "q4_K", "vulkan"); c.Impl != Twin || c.State != DSL {
		t.Fatalf("loaded select %+v", c)
	}
}

func TestLoadErrors(t *testing.T) {
	r := newReg(t)
	r.Register(k1, "sha256:hand", "ggml")
	r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.9), Verdict: Decline})
	good, _ := r.Marshal()
	g := string(good)
	cases := []struct{ name, data, want string }{
		{"corrupt", g[:len(g)/2], "corrupt registry"},
		{"corrupt syntax", strings.Replace(g, `"state": "declined",`, `"state": "declined"`, 1), ":"},
		{"empty", "", "corrupt registry"},
		{"foreign", `{"format": "something-else", "version": 1}`, "not a onesource registry"},
		{"foreign no header", `{"cells": []}`, "not a onesource registry"},
		{"foreign array", `[1, 2]`, "corrupt registry"},
		{"newer", strings.Replace(g, `"version": 3,`, `"version": 4,`, 1), "newer"},
		{"hand-edited flip", strings.Replace(g, `"state": "declined"`, `"state": "dsl"`, 1), "matvec/q4_K/vulkan): state dsl without evidence"},
		{"hand-edited flip with ratio", strings.Replace(strings.Replace(g, `"state": "declined"`, `"state": "dsl"`, 1), `"median": 0.9`, `"median": 0.99`, 1), "ratio spread is inconsistent"},
		{"unknown state", strings.Replace(g, `"state": "declined"`, `"state": "great"`, 1), "unknown state"},
		{"unknown field", strings.Replace(g, `"threshold": 0.97,`, `"threshold": 0.97, "extra": 1,`, 1), "unknown field"},
		{"trailing", g + "{}", "corrupt registry"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("reg.json", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			t.Log(err)
		})
	}
	// Line and column of a syntax error.
	bad := strings.Replace(g, `"state": "declined",`, `"state": "declined",,`, 1)
	_, err := Parse("reg.json", []byte(bad))
	line := 1 + strings.Count(g[:strings.Index(g, `"state": "declined"`)], "\n")
	if err == nil || !strings.Contains(err.Error(), "reg.json:"+strconv.Itoa(line)+":") {
		t.Fatalf("syntax error %v, want line %d", err, line)
	}
}

func TestSaveRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cells.json")
	r, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	r.Register(k1, "sha256:hand", "")
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	// Another writer changes the file.
	r2, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	r2.Register(Key{"add", "f32", "vulkan"}, "h", "")
	if err := r2.Save(""); err != nil {
		t.Fatal(err)
	}
	r.Register(Key{"mul", "f32", "vulkan"}, "h", "")
	if err := r.Save(""); !errors.Is(err, ErrChanged) {
		t.Fatalf("save over a changed file: %v", err)
	}
	// A fresh registry does not overwrite an existing file.
	if err := New().Save(p); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Fatalf("save of a new registry over a file: %v", err)
	}
	// Open of a missing file, then someone else creates it: refused.
	q := filepath.Join(dir, "other.json")
	r3, _ := Open(q)
	os.WriteFile(q, []byte("{}"), 0o644)
	if err := r3.Save(""); err == nil {
		t.Fatal("save over a file created after Open succeeded")
	}
	// No temp files left behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Cell(Key{"add", "f32", "vulkan"}); !ok {
		t.Fatal("second writer's save was lost")
	}
}

func TestMergeTwoMachines(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, steps func(r *Registry)) string {
		p := filepath.Join(dir, name)
		r, _ := Open(p)
		r.Now = func() time.Time { return t0 }
		r.Register(k1, "sha256:hand", "ggml")
		steps(r)
		if err := r.Save(""); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kb := Key{"rms_norm", "f32", "vulkan"}
	pa := mk("a.json", func(r *Registry) {
		must(t, r.Apply(GateResult{Key: k1, Evidence: ev("radv", true, 1.02), Verdict: Flip}))
		must(t, r.Register(kb, "sha256:hand", ""))
		must(t, r.Apply(GateResult{Key: kb, Evidence: ev("radv", true, 1.1), Verdict: Flip}))
	})
	pb := mk("b.json", func(r *Registry) {
		must(t, r.Apply(GateResult{Key: k1, Evidence: ev("lavapipe", true, 0.80), Verdict: Decline}))
		must(t, r.Register(kb, "sha256:hand", ""))
		e := ev("radv", true, 1.3)
		e.Date = t0.Add(time.Hour)
		must(t, r.Apply(GateResult{Key: kb, Evidence: e, Verdict: Flip}))
		must(t, r.Apply(GateResult{Key: Key{"add", "f32", "metal"}, Evidence: ev("m2", true, -1), Verdict: Flip}))
	})
	a, err := Load(pa)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(pb)
	if err != nil {
		t.Fatal(err)
	}
	prefix := a.History()
	conflicts, err := a.Merge(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conflicts {
		t.Logf("conflict: %s %s: %s", c.Key, c.Device, c.Reason)
	}
	// k1: dsl on radv (a), declined on lavapipe (b): no conflict, both evidence kept; declined
	// overall, each machine its own verdict.
	c, _ := a.Cell(k1)
	if c.State != Declined || len(c.Evidence) != 2 {
		t.Fatalf("k1 after merge: %s with %d evidence", c.State, len(c.Evidence))
	}
	if s := a.SelectOn(k1.Op, k1.Type, k1.Backend, "radv", ev("radv", true, 1).Driver).State; s != DSL {
		t.Fatalf("k1 on radv: %s, want dsl", s)
	}
	// kb: two measurements from radv: newer kept, conflict reported.
	cb, _ := a.Cell(kb)
	if len(cb.Evidence) != 1 || cb.Evidence[0].Ratio.Median != 1.3 {
		t.Fatalf("kb evidence %+v", cb.Evidence)
	}
	if len(conflicts) != 1 {
		t.Fatalf("%d conflicts, want 1", len(conflicts))
	}
	if ch := a.Select("add", "f32", "metal"); ch.Impl != Twin || ch.State != Fallback {
		t.Fatalf("add/metal %+v", ch)
	}
	h := a.History()
	for i := range prefix {
		if entryHash(prefix[i]) != entryHash(h[i]) {
			t.Fatalf("merge rewrote history entry %d", i)
		}
	}
	// The merged registry saves and reloads.
	if err := a.Save(""); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(pa); err != nil {
		t.Fatal(err)
	}
	// Merging again adds no cell evidence.
	b2, _ := Load(pb)
	if _, err := a.Merge(b2); err != nil {
		t.Fatal(err)
	}
	if c, _ := a.Cell(k1); len(c.Evidence) != 2 {
		t.Fatalf("second merge duplicated evidence: %d", len(c.Evidence))
	}
	// Differing thresholds refuse.
	b3, _ := Load(pb)
	must(t, b3.SetThreshold(0.5, "test"))
	if _, err := a.Merge(b3); err == nil {
		t.Fatal("merge across thresholds succeeded")
	}
}

func TestMergeNeverFlips(t *testing.T) {
	a, b := newReg(t), newReg(t)
	a.Register(k1, "sha256:hand", "")
	b.Register(k1, "sha256:hand", "")
	must(t, b.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 1.2), Verdict: Keep}))
	if _, err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if c, _ := a.Cell(k1); c.State != Hand {
		t.Fatalf("merge flipped: %s", c.State)
	}
}

func TestSetThresholdGuardsDSL(t *testing.T) {
	r := newReg(t)
	r.Register(k1, "sha256:hand", "")
	must(t, r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.98), Verdict: Flip}))
	if err := r.SetThreshold(0.99, "stricter"); err == nil {
		t.Fatal("threshold change stranded a dsl cell")
	}
	must(t, r.SetThreshold(0.95, "looser"))
}

func TestSpreadOf(t *testing.T) {
	s := SpreadOf([]float64{1.0, 0.9, 1.1, 0.95})
	if s.Median != 0.975 || s.Min != 0.9 || s.Max != 1.1 || s.Pairs != 4 {
		t.Fatalf("%+v", s)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSelectOn: each machine's cell follows its own evidence. A twin declined on one device and
// flipped on another is hand on the first and dsl on the second; not bit-exact on one device
// leaves the other's verdict alone; a machine without evidence gets the incumbent; a reverted
// cell is hand everywhere.
func TestSelectOn(t *testing.T) {
	k := Key{Op: "matvec", Type: "q4_0", Backend: "vulkan"}
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(dev string, exact bool, ratio float64) Evidence {
		e := Evidence{Device: dev, Driver: "drv", Toolchain: "tc", BitExact: exact, TwinGBps: 100 * ratio, IncumbentGBps: 100,
			Ratio: SpreadOf([]float64{ratio, ratio, ratio}), TwinHash: "t", IncumbentHash: "h", Date: date}
		if !exact {
			e.MaxULP = 2
		}
		return e
	}
	apply := func(r *Registry, e Evidence) {
		t.Helper()
		v, _ := Judge(e, r.Threshold())
		if err := r.Apply(GateResult{Key: k, Evidence: e, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	r := New()
	if err := r.Register(k, "h", "test"); err != nil {
		t.Fatal(err)
	}
	apply(r, ev("A", true, 0.5)) // declined on A
	apply(r, ev("B", true, 1.2)) // fast on B
	if got := r.Select(k.Op, k.Type, k.Backend).State; got != Declined {
		t.Fatalf("aggregate state %s, want declined", got)
	}
	for _, c := range []struct {
		dev   string
		state State
		impl  Impl
	}{{"A", Declined, Incumbent}, {"B", DSL, Twin}, {"C", Hand, Incumbent}} {
		ch := r.SelectOn(k.Op, k.Type, k.Backend, c.dev, "drv")
		if ch.State != c.state || ch.Impl != c.impl {
			t.Errorf("on %s: %s/%s, want %s/%s", c.dev, ch.State, ch.Impl, c.state, c.impl)
		}
	}
	if ch := r.SelectOn(k.Op, k.Type, k.Backend, "B", "another driver"); ch.State != Hand {
		t.Errorf("B with another driver: %s, want hand (no evidence of its own)", ch.State)
	}
	apply(r, ev("D", false, 1.5)) // not bit-exact on D
	if ch := r.SelectOn(k.Op, k.Type, k.Backend, "B", "drv"); ch.State != DSL {
		t.Errorf("B after D failed: %s, want dsl", ch.State)
	}
	if ch := r.SelectOn(k.Op, k.Type, k.Backend, "D", "drv"); ch.State != Failing || ch.Impl != Incumbent {
		t.Errorf("D: %s/%s, want failing served by the incumbent", ch.State, ch.Impl)
	}
	// A cell dsl everywhere, then reverted: hand on every machine.
	r2 := New()
	if err := r2.Register(k, "h", "test"); err != nil {
		t.Fatal(err)
	}
	apply(r2, ev("B", true, 1.2))
	if err := r2.Revert(k, "a user saw garbage"); err != nil {
		t.Fatal(err)
	}
	if ch := r2.SelectOn(k.Op, k.Type, k.Backend, "B", "drv"); ch.State != Hand || ch.Impl != Incumbent {
		t.Errorf("reverted cell on B: %s/%s, want hand", ch.State, ch.Impl)
	}
	if ch := r2.SelectOn("nope", "f32", "vulkan", "B", "drv"); ch.State != Missing || ch.Impl != None {
		t.Errorf("unknown cell: %+v", ch)
	}
}

// TestLoadRefusesEdits: hand edits that would make Select serve what the evidence does not
// allow, or that hide part of the history, are refused by Load: a declined cell edited to
// fallback, a lowered threshold beside a dsl state, fallback beside evidence that the twin is not
// bit-exact, a dropped or edited last history entry. A format-1 file (no head hash) still loads,
// and Verify says it is not anchored.
func TestLoadRefusesEdits(t *testing.T) {
	r := newReg(t)
	kd := Key{"softmax", "f32", "vulkan"}
	kf := Key{"add", "f32", "metal"}
	must(t, r.Register(k1, "sha256:hand", "ggml"))
	must(t, r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.5), Verdict: Decline}))
	must(t, r.Register(kd, "sha256:hand", "ggml"))
	must(t, r.Apply(GateResult{Key: kd, Evidence: ev("gpu0", true, 1.2), Verdict: Flip}))
	must(t, r.Apply(GateResult{Key: kf, Evidence: ev("m2", true, -1), Verdict: Flip}))
	must(t, r.Apply(GateResult{Key: Key{"rope", "f32", "vulkan"}, Evidence: ev("gpu0", false, -1), Verdict: Fail}))
	good, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("good", good); err != nil {
		t.Fatalf("the untouched file: %v", err)
	}
	if msg, err := r.Verify(nil); err != nil || !strings.Contains(msg, "anchored at") {
		t.Fatalf("Verify: %q, %v", msg, err)
	}
	g := string(good)
	// The declined cell's state is the first "declined" in the file's cells.
	stateOf := func(s, key, from, to string) string {
		i := strings.Index(s, `"op": "`+key+`"`)
		j := strings.Index(s[i:], `"state": "`+from+`"`)
		return s[:i+j] + `"state": "` + to + `"` + s[i+j+len(`"state": "`+from+`"`):]
	}
	var doc map[string]any
	json.Unmarshal(good, &doc)
	hist := doc["history"].([]any)
	dropLast := func() string {
		d := map[string]any{}
		for k, v := range doc {
			d[k] = v
		}
		d["history"] = hist[:len(hist)-1]
		b, _ := json.MarshalIndent(d, "", "  ")
		return string(b)
	}
	editLast := func() string {
		d := map[string]any{}
		for k, v := range doc {
			d[k] = v
		}
		h := append([]any(nil), hist...)
		last := map[string]any{}
		for k, v := range h[len(h)-1].(map[string]any) {
			last[k] = v
		}
		last["reason"] = "nothing to see here"
		h[len(h)-1] = last
		d["history"] = h
		b, _ := json.MarshalIndent(d, "", "  ")
		return string(b)
	}
	cases := []struct {
		name, text, want string
	}{
		{"declined to fallback", stateOf(g, "matvec", "declined", "fallback"), "is fallback, but its history leaves it declined"},
		{"lowered threshold", strings.Replace(g, `"threshold": 0.97`, `"threshold": 0.5`, 1), "threshold 0.5 is not the 0.97 the history sets"},
		{"dropped last entry", dropLast(), "truncated or its last entry edited"},
		{"edited last entry", editLast(), "truncated or its last entry edited"},
	}
	// The declined cell's evidence edited (in the cell, not in its history) to pass.
	m := strings.Index(g, `"op": "matvec"`)
	i := m + strings.Index(g[m:], `"ratio": {`)
	j := i + strings.Index(g[i:], "}")
	edited := g[:i] + `"ratio": {"median": 1.5, "min": 1.4, "max": 1.6, "pairs": 3` + g[j:]
	cases = append(cases, struct{ name, text, want string }{"evidence edited", edited, "its evidence is not what its history recorded (record 1, from gpu0: ratio differ)"})
	cases = append(cases, struct{ name, text, want string }{"fallback beside inexact evidence", stateOf(g, "rope", "failing", "fallback"), "is fallback, but its history leaves it failing"})
	for _, c := range cases {
		_, err := Parse(c.name, []byte(c.text))
		if err == nil || (c.want != "" && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// FuzzParse: Parse never panics, and whatever it accepts is consistent: Select agrees with each
// cell's state, a dsl cell has evidence that passes the gate, and the registry verifies and
// round-trips.
func FuzzParse(f *testing.F) {
	r := New()
	r.Now = func() time.Time { return t0 }
	r.Register(k1, "sha256:hand", "ggml")
	r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 1.2), Verdict: Flip})
	r.Apply(GateResult{Key: Key{"add", "f32", "metal"}, Evidence: ev("m2", true, -1), Verdict: Flip})
	good, _ := r.Marshal()
	f.Add(good)
	f.Add([]byte(`{"format": "onesource-registry", "version": 1, "threshold": 0.97, "cells": [], "history": []}`))
	f.Add([]byte(`{"format": "onesource-registry", "version": 2, "threshold": 0.5, "cells": [{"op": "a", "type": "f32", "backend": "vulkan", "state": "dsl"}], "history": [], "head": ""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse("fuzz", b)
		if err != nil {
			return
		}
		if _, err := r.Verify(nil); err != nil {
			t.Fatalf("parsed but does not verify: %v", err)
		}
		for _, c := range r.Cells() {
			ch := r.Select(c.Op, c.Type, c.Backend)
			if ch.State != c.State {
				t.Fatalf("%s: Select says %s, the cell %s", c.Key, ch.State, c.State)
			}
			if c.State == DSL {
				if _, ok := c.passing(r.Threshold()); !ok {
					t.Fatalf("%s: dsl without passing evidence", c.Key)
				}
			}
		}
		out, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("again", out); err != nil {
			t.Fatalf("a parsed registry does not parse again: %v", err)
		}
	})
}

// TestEvidenceEditsRefused: an edit of any field of a cell's evidence record (not of its history)
// is refused on load: the cells must be the replay of the history. Before, these loaded (and
// `cells -verify` said so) as long as the state still followed from the edited evidence: the
// renamed device with a copy claiming ratio 1.6 then served the twin where the incumbent served.
func TestEvidenceEditsRefused(t *testing.T) {
	r := newReg(t)
	must(t, r.Register(k1, "sha256:hand", "ggml"))
	must(t, r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.5), Verdict: Decline}))
	kd := Key{"softmax", "f32", "vulkan"}
	must(t, r.Register(kd, "sha256:hand", "ggml"))
	must(t, r.Apply(GateResult{Key: kd, Evidence: ev("gpu0", true, 1.2), Verdict: Flip}))
	good, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(key Key, f func(es []map[string]any) []map[string]any) []byte {
		var doc map[string]any
		json.Unmarshal(good, &doc)
		for _, c := range doc["cells"].([]any) {
			cm := c.(map[string]any)
			if cm["op"] != key.Op {
				continue
			}
			var es []map[string]any
			for _, e := range cm["evidence"].([]any) {
				es = append(es, e.(map[string]any))
			}
			cm["evidence"] = f(es)
		}
		b, _ := json.MarshalIndent(doc, "", "  ")
		return b
	}
	set := func(field string, v any) func([]map[string]any) []map[string]any {
		return func(es []map[string]any) []map[string]any { es[0][field] = v; return es }
	}
	for _, tc := range []struct {
		name string
		text []byte
	}{
		{"the device renamed and a passing copy appended", edit(k1, func(es []map[string]any) []map[string]any {
			cp := map[string]any{}
			for k, v := range es[0] {
				cp[k] = v
			}
			es[0]["device"] = "gpu9"
			cp["ratio"] = map[string]any{"median": 1.6, "min": 1.5, "max": 1.7, "pairs": 9}
			return append(es, cp)
		})},
		{"device", edit(kd, set("device", "gpu1"))},
		{"max_ulp", edit(kd, set("max_ulp", 2))},
		{"twin_hash", edit(kd, set("twin_hash", "sha256:other"))},
		{"date", edit(kd, set("date", "2030-01-01T00:00:00Z"))},
		{"threshold", edit(kd, set("threshold", 0.5))},
		{"roofline", edit(kd, set("roofline_gbps", 999))},
		{"cases", edit(kd, set("cases", 7))},
		{"a record dropped", edit(k1, func([]map[string]any) []map[string]any { return []map[string]any{} })},
	} {
		if _, err := Parse(tc.name, tc.text); err == nil || !strings.Contains(err.Error(), "the file was edited") {
			t.Errorf("%s: %v, want the edit refused", tc.name, err)
		}
	}
}

// TestVersion1NotADowngrade: setting "version": 1 does not turn the head check off: a format-1
// file with a history is refused (before, the head was not checked and a dropped tail loaded);
// Migrate converts one on purpose and says what it could not check; one without a history loads.
func TestVersion1NotADowngrade(t *testing.T) {
	r := newReg(t)
	must(t, r.Register(k1, "sha256:hand", "ggml"))
	must(t, r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.5), Verdict: Decline}))
	good, _ := r.Marshal()
	var doc map[string]any
	json.Unmarshal(good, &doc)
	doc["version"] = 1
	delete(doc, "head")
	hist := doc["history"].([]any)
	hist = hist[:len(hist)-1] // the decline dropped
	for _, h := range hist {
		delete(h.(map[string]any), "incumbent") // a field format 1 did not have
	}
	doc["history"] = hist
	doc["cells"].([]any)[0].(map[string]any)["state"] = "hand"
	doc["cells"].([]any)[0].(map[string]any)["evidence"] = []any{}
	dropped, _ := json.MarshalIndent(doc, "", "  ")
	if _, err := Parse("v1", dropped); err == nil || !strings.Contains(err.Error(), "format-1 registry with a history") {
		t.Fatalf("a format-1 file with a dropped tail: %v", err)
	}
	path := filepath.Join(t.TempDir(), "cells.json")
	os.WriteFile(path, dropped, 0o644)
	msg, err := Migrate(path)
	if err != nil || !strings.Contains(msg, "NOT checked: whether entries were dropped after the last one, seq 1 (register matvec/q4_K/vulkan") {
		t.Fatalf("Migrate: %q, %v", msg, err)
	}
	if m, err := Load(path); err != nil || len(m.History()) != 1 {
		t.Fatalf("the migrated file: %v", err)
	}
	if _, err := Parse("v1 empty", []byte(`{"format": "onesource-registry", "version": 1, "threshold": 0.97, "cells": [], "history": []}`)); err != nil {
		t.Errorf("a format-1 file without a history: %v", err)
	}
	for _, f := range []string{`"sig": {"key": "x", "sig": "y"}`, `"kept": {}`} {
		v2 := strings.Replace(strings.Replace(string(good), `"version": 3,`, `"version": 2,`, 1), `"prev": ""`, f+`, "prev": ""`, 1)
		if _, err := Parse("v2", []byte(v2)); err == nil || !strings.Contains(err.Error(), "downgraded") {
			t.Errorf("format-3 field %s in a format-2 file: %v", f, err)
		}
	}
}
