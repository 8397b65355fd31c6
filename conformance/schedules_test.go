package conformance_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/testmode"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// scheduleSample is, per backend, how many representatives (conformance_test.go) of each op
// TestConformanceSchedules runs at several schedules, and how many of a cell's four sample
// schedules: Vulkan (lavapipe: the SPIR-V path) every representative at all four, CUDA's host
// execution (the C-family printer; every run a C++ compile) four representatives at the
// narrowest and the widest. HIP and MSL print the same lowered kernels through the same printer
// with other spellings, WebGPU and the cpu executor take the same lowered IR: they run the
// default schedule in TestConformance. With ONESOURCE_FULL=1 every cell runs at every sample
// schedule on every backend, as in the main job (`onesource conform -schedules sample`).
var scheduleSample = map[string]struct{ types, schedules int }{
	"vulkan": {len(representative), 4},
	"cuda":   {4, 2},
}

// TestConformanceSchedules runs cells at their sample schedules (lane counts from 8 to the
// canonical width, both layouts; see scheduleSample), the backends and halves of the schedules
// in parallel, requires every run to be bit-exact against the oracle, and every cell to give
// the same bytes at every schedule and on every backend.
func TestConformanceSchedules(t *testing.T) {
	var (
		mu      sync.Mutex
		results []conformance.Result
		ran     = map[string]bool{}
	)
	type part struct {
		name  string
		tg    conformance.Target
		sched conformance.Schedules
	}
	// part i of n of a backend's schedules, over its sample of cells.
	only := func(cells []kernels.Cell, count, i, n int) conformance.Schedules {
		in := map[string]bool{}
		for _, c := range cells {
			in[c.Name()] = true
		}
		return func(c kernels.Cell, tg conformance.Target) []kernels.Schedule {
			if !in[c.Name()] {
				return nil
			}
			s := c.SampleSchedules()
			if count < len(s) { // the narrowest and the widest
				s = []kernels.Schedule{s[0], s[len(s)-1]}
			}
			per := (len(s) + n - 1) / n
			return s[min(i*per, len(s)):min((i+1)*per, len(s))]
		}
	}
	var parts []part
	for _, tg := range conformance.Targets() {
		ss, ok := scheduleSample[tg.Name()]
		if testmode.Full() {
			ss, ok = struct{ types, schedules int }{len(representative), 4}, true
		}
		if !ok {
			continue
		}
		cells := sampled(ss.types)
		// Each backend's schedules run as two parallel parts, each on its own target (device or
		// toolchain), so both cores work.
		second := conformance.Targets()
		for _, o := range second {
			if o.Name() == tg.Name() {
				parts = append(parts,
					part{tg.Name() + "/first", tg, only(cells, ss.schedules, 0, 2)},
					part{tg.Name() + "/second", o, only(cells, ss.schedules, 1, 2)})
			}
		}
	}
	t.Run("backends", func(t *testing.T) {
		for _, p := range parts {
			tg := p.tg
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				rs := conformance.Run(conformance.Filter{}, []conformance.Target{tg}, p.sched, nil)
				for _, r := range rs {
					if !r.Ran {
						t.Skipf("%s: %s", r.Backend, r.Reason)
					}
					if !r.Passed() {
						t.Errorf("%s/%s on %s at %s [%s]: not bit-exact (max %g ULP): %s", r.Op, r.Type, r.Backend, r.Schedule, r.Levels, r.MaxULP, r.Reason)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				results = append(results, rs...)
				ran[tg.Name()] = true
				t.Logf("%d runs", len(rs))
			})
		}
	})
	if len(ran) == 0 {
		t.Skip("no backend with schedules to run is available here (reasons above)")
	}
	for _, line := range conformance.Inconsistent(results) {
		t.Error(line)
	}
}

// plantedRMSNorm is rms_norm with the reduction order the project had before the canonical
// width: the workgroup's T invocations each fold every T-th square and ReduceSum combines them,
// so the sum's order (and, for some rows, its bits) follows the schedule.
func plantedRMSNorm(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("rms_norm_planted", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eps := k.Param("eps", dsl.F32)
	weighted := k.Param("weighted", dsl.U32).Ne(0)
	row := k.WorkgroupID(dsl.X).Mul(n)
	lane := k.LocalIndex()
	acc := k.Var("acc", float32(0))
	k.For("i", lane, n, s.Lanes, func(i dsl.Value) {
		v := x.Load(row.Add(i))
		acc.Set(acc.Get().Add(v.Mul(v)))
	})
	ss := k.ReduceSum(acc.Get())
	scale := k.F32(1).Div(ss.Div(n.F32()).Add(eps).Sqrt())
	k.For("j", lane, n, s.Lanes, func(j dsl.Value) {
		v := x.Load(row.Add(j)).Mul(scale)
		k.If(weighted, func() { y.Store(row.Add(j), v.Mul(w.Load(j))) }).Else(func() { y.Store(row.Add(j), v) })
	})
	return k
}

// TestScheduleCheckBites plants a schedule-dependent order in rms_norm and shows that running it
// at several schedules catches it: some schedule is not bit-exact against the oracle, and the
// runs' bytes differ between schedules (Inconsistent names the cell).
func TestScheduleCheckBites(t *testing.T) {
	var vk conformance.Target
	for _, tg := range conformance.Targets() {
		if tg.Name() == "vulkan" {
			vk = tg
		}
	}
	if err := vk.Open(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	defer vk.Close()
	real, ok := kernels.Lookup("rms_norm", oracle.F32)
	if !ok {
		t.Fatal("rms_norm/f32 is not registered")
	}
	planted := real
	planted.Build = plantedRMSNorm
	var results []conformance.Result
	exact := 0
	for _, s := range planted.SampleSchedules() {
		r := conformance.Judge(vk, planted, s)
		if r.Digest == "" {
			t.Fatalf("%s: the planted kernel did not run: %s", s, r.Reason)
		}
		if r.BitExact {
			exact++
		}
		results = append(results, r)
	}
	if exact == len(results) {
		t.Fatal("a T-lane order passed the W-lane oracle at every schedule: the cases cannot tell the orders apart")
	}
	inc := conformance.Inconsistent(results)
	if len(inc) != 1 || !strings.Contains(inc[0], "rms_norm/f32") {
		t.Fatalf("Inconsistent = %q, want one line naming rms_norm/f32", inc)
	}
	if !conformance.Failed(results) {
		t.Fatal("Failed does not report the planted order")
	}
	t.Logf("%d of %d schedules bit-exact; %s", exact, len(results), inc[0])

	// The real twin gives one digest at the same schedules.
	var good []conformance.Result
	for _, s := range real.SampleSchedules() {
		good = append(good, conformance.Judge(vk, real, s))
	}
	if conformance.Failed(good) {
		t.Fatalf("the real rms_norm fails: %+v", good)
	}
}

// TestNothingRan: no run at all, or an asked backend with no run, is reported with the reason.
func TestNothingRan(t *testing.T) {
	ran := conformance.Result{Op: "add", Type: "f32", Backend: "vulkan", Ran: true, BitExact: true}
	off := conformance.Result{Op: "add", Type: "f32", Backend: "cuda", Reason: "no CUDA driver"}
	for _, c := range []struct {
		results []conformance.Result
		asked   []string
		want    string
	}{
		{[]conformance.Result{ran, off}, nil, ""},
		{[]conformance.Result{ran, off}, []string{"vulkan"}, ""},
		{[]conformance.Result{ran, off}, []string{"vulkan", "cuda"}, "nothing ran on cuda: no CUDA driver"},
		{[]conformance.Result{off}, nil, "nothing ran on cuda: no CUDA driver"},
		{nil, nil, "nothing ran"},
	} {
		if got := conformance.NothingRan(c.results, c.asked); got != c.want {
			t.Errorf("NothingRan(%d results, %v) = %q, want %q", len(c.results), c.asked, got, c.want)
		}
	}
	if !conformance.Failed([]conformance.Result{off}) || conformance.Failed([]conformance.Result{ran, off}) {
		t.Error("Failed: a suite where nothing ran must fail; one where something ran exactly must not")
	}
}
