package conformance_test

import (
	"strings"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/tuning"
)

// addIndex is add's element of this invocation as kernels.AddKernel lays it out on
// kernels.BroadcastGroups' grid: b's position j along x and z, the row along y, i = row*nb + j.
func addIndex(k *dsl.Kernel, T int, n, nb dsl.Value, body func(i, j dsl.Value)) {
	j := k.WorkgroupID(dsl.Z).Mul(k.NumWorkgroups(dsl.X)).Add(k.WorkgroupID(dsl.X)).Mul(uint32(T)).Add(k.LocalIndex())
	i := k.WorkgroupID(dsl.Y).Mul(nb).Add(j)
	k.If(j.Lt(nb).And(i.Lt(n)), func() { body(i, j) })
}

// plantedSlowAdd is add (y = a + b[i % nb]) that multiplies each sum reps times by 1 before storing
// it: the same bytes (x*1 is exact for every float), and a chain of reps multiplies a value that
// no compiler can fold (the 1 is nb/nb, known only at run time; nb >= 1).
func plantedSlowAdd(s kernels.Schedule, reps int) *dsl.Kernel {
	k := dsl.New("add", s.Lanes)
	a := k.Buffer("a", dsl.F32, dsl.Read)
	b := k.Buffer("b", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	nb := k.Param("nb", dsl.U32)
	one := nb.Div(nb.Max(1)).F32()
	addIndex(k, s.Lanes, n, nb, func(i, j dsl.Value) {
		acc := k.Var("acc", a.Load(i).Add(b.Load(j)))
		k.For("r", uint32(0), uint32(reps), uint32(1), func(dsl.Value) { acc.Set(acc.Get().Mul(one)) })
		y.Store(i, acc.Get())
	})
	return k
}

// plantedWrongAdd is y = a - b: fast, and wrong.
func plantedWrongAdd(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("add", s.Lanes)
	a := k.Buffer("a", dsl.F32, dsl.Read)
	b := k.Buffer("b", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	nb := k.Param("nb", dsl.U32)
	addIndex(k, s.Lanes, n, nb, func(i, j dsl.Value) { y.Store(i, a.Load(i).Sub(b.Load(j))) })
	return k
}

// TestTuneReplacesSlowDefault plants a slow kernel at the default schedule: the tuner must time
// both candidates and choose the other one.
func TestTuneReplacesSlowDefault(t *testing.T) {
	v := vulkanTarget(t)
	c, ok := kernels.Lookup("add", oracle.F32)
	if !ok {
		t.Fatal("add/f32 is not registered")
	}
	def := c.DefaultScheduleFor("vulkan", v.SubgroupSize())
	other := kernels.Schedule{Lanes: 32}
	if other == def {
		other = kernels.Schedule{Lanes: 128}
	}
	r, err := conformance.Tune(v, c, conformance.TuneOptions{
		Shape: map[string]float64{"n": 1 << 16}, Space: []kernels.Schedule{def, other}, Rounds: 3, N: 3,
		Build: func(s kernels.Schedule) *dsl.Kernel {
			if s == def {
				return plantedSlowAdd(s, 64)
			}
			return c.Build(s)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Best != other {
		t.Fatalf("best %s (%.3g s), default %s (%.3g s): the planted slow default was kept (candidates %+v)", r.Best, r.BestSeconds, r.Default, r.DefaultSeconds, r.Entry.Candidates)
	}
	if !(r.DefaultSeconds > r.BestSeconds) {
		t.Fatalf("default %.3g s is not slower than the best %.3g s", r.DefaultSeconds, r.BestSeconds)
	}
	if len(r.Entry.Candidates) != 2 || r.Entry.Schedule != other.String() || r.Entry.TwinHash == "" {
		t.Fatalf("entry %+v", r.Entry)
	}
	t.Logf("default %s %.3f ms, best %s %.3f ms", r.Default, r.DefaultSeconds*1e3, r.Best, r.BestSeconds*1e3)
}

// TestTuneRejectsWrongCandidate plants a fast kernel that is not bit-exact: it is rejected with
// its reason and never chosen.
func TestTuneRejectsWrongCandidate(t *testing.T) {
	v := vulkanTarget(t)
	c, _ := kernels.Lookup("add", oracle.F32)
	def := c.DefaultScheduleFor("vulkan", v.SubgroupSize())
	bad := kernels.Schedule{Lanes: 256}
	if bad == def {
		bad = kernels.Schedule{Lanes: 32}
	}
	r, err := conformance.Tune(v, c, conformance.TuneOptions{
		Shape: map[string]float64{"n": 1 << 14}, Space: []kernels.Schedule{def, bad}, Rounds: 2, N: 2,
		Build: func(s kernels.Schedule) *dsl.Kernel {
			if s == bad {
				return plantedWrongAdd(s)
			}
			return c.Build(s)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Best != def {
		t.Fatalf("best %s: a candidate that is not bit-exact was chosen", r.Best)
	}
	var found bool
	for _, cd := range r.Entry.Candidates {
		if cd.Schedule == bad.String() {
			found = true
			if cd.Exact || cd.Seconds != 0 || !strings.Contains(cd.Reason, "not bit-exact") {
				t.Errorf("the wrong candidate: %+v, want rejected as not bit-exact and not timed", cd)
			}
		}
	}
	if !found {
		t.Fatal("the wrong candidate is not in the entry")
	}
}

// TestTunedScheduleFollowsTheCache checks that a cell runs at the cache's schedule for this
// device and this version of its twin, and at its default when the cache was tuned for another
// version (a changed kernel is tuned again, never run at a stale schedule).
func TestTunedScheduleFollowsTheCache(t *testing.T) {
	v := vulkanTarget(t)
	c, _ := kernels.Lookup("rms_norm", oracle.F32)
	key, err := conformance.TuningKey(v, c)
	if err != nil {
		t.Fatal(err)
	}
	def := c.DefaultScheduleFor("vulkan", v.SubgroupSize())
	want := kernels.Schedule{Lanes: 16, Layout: dsl.Strided}
	entry := tuning.Entry{Key: key, Shape: "rows=64,n=4096", Schedule: want.String(), Seconds: 1e-3, Date: "2026-12-01T00:00:00Z",
		Candidates: []tuning.Candidate{{Schedule: want.String(), Exact: true, Seconds: 1e-3}}}
	cache := tuning.New()
	if err := cache.Put(entry); err != nil {
		t.Fatal(err)
	}
	if s, tuned, why := conformance.TunedSchedule(cache, v, c); s != want || !tuned {
		t.Fatalf("TunedSchedule = %s, %v (%s); want %s from the cache", s, tuned, why, want)
	}
	stale := entry
	stale.TwinHash = "0123456789abcdef"
	old := tuning.New()
	if err := old.Put(stale); err != nil {
		t.Fatal(err)
	}
	if s, tuned, why := conformance.TunedSchedule(old, v, c); s != def || tuned || !strings.Contains(why, "another version") {
		t.Fatalf("stale cache: %s, %v (%s); want the default %s and a message about another version", s, tuned, why, def)
	}
	if s, tuned, _ := conformance.TunedSchedule(nil, v, c); s != def || tuned {
		t.Fatalf("no cache: %s, %v; want the default", s, tuned)
	}
}

// TestTuneTimesEachCandidateOnItsGrid: a candidate whose grid differs from the default's
// (get_rows at 8 lanes: a workgroup per 8 values of a row, not 64) is checked and timed on the
// grid bench uses at that schedule (NewWorkload at it), and is bit-exact there; the tuner used
// to run every candidate on the default's grid and reject this one as 1.19e9 ULP off.
func TestTuneTimesEachCandidateOnItsGrid(t *testing.T) {
	v := vulkanTarget(t)
	c, ok := kernels.Lookup("get_rows", oracle.Q4_0)
	if !ok {
		t.Fatal("get_rows/q4_0 is not registered")
	}
	def := c.DefaultScheduleFor("vulkan", v.SubgroupSize())
	narrow := kernels.Schedule{Lanes: 8}
	shape := map[string]float64{"rows": 4, "n": 256, "src_rows": 16}
	r, err := conformance.Tune(v, c, conformance.TuneOptions{Shape: shape, Space: []kernels.Schedule{def, narrow}, Rounds: 1, N: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []kernels.Schedule{def, narrow} {
		w, err := conformance.NewWorkload(c.Op, c.Type.String(), shape, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Grids[s.String()]; got != w.TwinGroups {
			t.Errorf("%s: tuned on grid %v, bench runs it on %v", s, got, w.TwinGroups)
		}
	}
	if a, b := r.Grids[def.String()], r.Grids[narrow.String()]; a == b {
		t.Fatalf("the planted schedules share a grid (%v): the test cannot tell", a)
	}
	for _, cand := range r.Entry.Candidates {
		if !cand.Exact {
			t.Errorf("%s rejected: %s", cand.Schedule, cand.Reason)
		}
	}
}
