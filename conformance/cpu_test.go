package conformance_test

import (
	"testing"
	"time"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/kernels"
)

// TestConformanceCPUSchedules runs every cell on the CPU executor at its sample schedules (lane
// counts from 8 to its canonical width, both layouts, and its default): every run must pass
// (bit-exact against the oracle, or within its declared bound for a cell of inexact native
// functions) and give the same bytes at every schedule. TestConformance runs the cpu column at
// the default schedule with the other backends; `onesource conform -backend cpu -schedules all`
// runs every schedule of every cell.
func TestConformanceCPUSchedules(t *testing.T) {
	start := time.Now()
	var cpu conformance.Target
	for _, tg := range conformance.Targets() {
		if tg.Name() == "cpu" {
			cpu = tg
		}
	}
	if cpu == nil {
		t.Fatal("the suite has no cpu target")
	}
	rs := conformance.Run(conformance.Filter{}, []conformance.Target{cpu}, conformance.SampleSchedules, nil)
	if len(rs) < len(kernels.Cells()) {
		t.Fatalf("%d runs for %d cells", len(rs), len(kernels.Cells()))
	}
	for _, r := range rs {
		if !r.Ran {
			t.Fatalf("%s/%s did not run on cpu: %s", r.Op, r.Type, r.Reason)
		}
		if !r.Passed() {
			t.Errorf("%s/%s on cpu at %s [%s]: %s", r.Op, r.Type, r.Schedule, r.Levels, r.Reason)
		}
	}
	for _, line := range conformance.Inconsistent(rs) {
		t.Error(line)
	}
	t.Logf("%d runs on cpu in %s", len(rs), time.Since(start).Round(time.Millisecond))
}

// TestConformanceNativeSchedules runs every cell on the native CPU backend at its sample
// schedules, as TestConformanceCPUSchedules does for the executor: every run must pass and give
// the same bytes at every schedule. It skips, saying why, on a machine without a C compiler.
// The first run builds every kernel (minutes on two cores); the cache makes the next ones fast.
func TestConformanceNativeSchedules(t *testing.T) {
	start := time.Now()
	var nt conformance.Target
	for _, tg := range conformance.Targets() {
		if tg.Name() == "native" {
			nt = tg
		}
	}
	if nt == nil {
		t.Fatal("the suite has no native target")
	}
	if err := nt.Open(); err != nil {
		t.Skipf("native CPU code unavailable: %v", err)
	}
	rs := conformance.Run(conformance.Filter{}, []conformance.Target{nt}, conformance.SampleSchedules, nil)
	if len(rs) < len(kernels.Cells()) {
		t.Fatalf("%d runs for %d cells", len(rs), len(kernels.Cells()))
	}
	for _, r := range rs {
		if !r.Ran {
			t.Fatalf("%s/%s did not run on native: %s", r.Op, r.Type, r.Reason)
		}
		if !r.Passed() {
			t.Errorf("%s/%s on native at %s [%s]: %s", r.Op, r.Type, r.Schedule, r.Levels, r.Reason)
		}
	}
	for _, line := range conformance.Inconsistent(rs) {
		t.Error(line)
	}
	t.Logf("%d runs on native in %s", len(rs), time.Since(start).Round(time.Millisecond))
}
