package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/tuning"
)

// The tuner. Every schedule of a cell gives the same bytes (the canonical orders of package
// oracle), so a schedule can be chosen for speed alone. Tune searches a cell's schedule space on
// one Vulkan device:
//
//  1. prune: a candidate the cell does not fit, or wider than the device's workgroup limit, or
//     whose kernel does not build or compile for the device (shared memory, say), is rejected
//     with its reason;
//  2. check: every remaining candidate runs the cell's conformance cases (Judge) and the
//     workload once, and must be bit-exact against the oracle on all of them: one that is not is
//     rejected and never timed (a tuner that could pick a wrong kernel would be worse than none);
//  3. time: the survivors are timed kernel-only on the workload (buffers made once, warm-up, N
//     dispatches in one submission, device timestamps), interleaved: each round times every
//     survivor once, in a rotated order, and a candidate's time is the median over its rounds; a
//     candidate more than 30% slower than the best after a round is not timed again, and
//     tuning stops early when a candidate reaches RooflineStop of the device's copy bandwidth.
//
// The fastest survivor wins; a tie (within 1%) keeps the default. The result is an entry for the
// tuning cache (package tuning) keyed by cell, backend, device, driver and the twin's source
// hash (TwinHash): a changed kernel misses the cache and is tuned again.

// pruneMargin: after a round, a candidate slower than the best by more than this factor is not
// timed again (the spread between identical runs on a shared 2-core machine is about 10%).
const pruneMargin = 1.3

// TuneOptions configures Tune.
type TuneOptions struct {
	// Shape overrides the variables of the op's default workload shape (nil: the default).
	Shape map[string]float64
	// Workload, when set, is the workload to time on (Shape then does not apply).
	Workload *Workload
	// Space is the candidates, in order (nil: the cell's schedule space, kernels.Cell.Schedules).
	Space []kernels.Schedule
	// Rounds of interleaved timing (default 5); N dispatches per measurement (default 10) after
	// Warmup (default 2).
	Rounds, N, Warmup int
	// RooflineStop ends the search when a candidate reaches this fraction of the copy roofline
	// (default 0.95; negative: never).
	RooflineStop float64
	// Build, when set, replaces the cell's builder (tests plant slow or wrong candidates).
	Build func(s kernels.Schedule) *dsl.Kernel
	// Progress is told about each candidate checked or timed.
	Progress func(TuneProgress)
}

// TuneProgress is one step of a search.
type TuneProgress struct {
	Cell     string
	Stage    string // "check" or "time"
	Schedule kernels.Schedule
	Done     int     // candidates (or timings) done in this stage
	Total    int     // in this stage
	Best     string  // the best schedule so far ("" before any timing)
	BestSecs float64 // its median seconds per dispatch so far
}

// TuneResult is what Tune found for one cell.
type TuneResult struct {
	Cell           string // op/type/backend
	Shape          string // the workload's shape, ShapeString form
	Bytes          int    // the workload's minimal traffic per dispatch
	Default        kernels.Schedule
	DefaultSeconds float64 // median per dispatch; 0 when the default was not timed (rejected)
	Best           kernels.Schedule
	BestSeconds    float64
	RooflineGBs    float64
	Stopped        string // why the search ended early ("" when every round ran)
	Entry          tuning.Entry
	// Grids is the grid each candidate that ran was checked and timed on, by schedule.
	Grids map[string][3]uint32
}

// TwinHash identifies the source of a cell's twin (kernels.Cell.SourceHash).
func TwinHash(c kernels.Cell) (string, error) { return c.SourceHash() }

// TuningKey is the tuning-cache key of cell c on the open Vulkan target v.
func TuningKey(v *Vulkan, c kernels.Cell) (tuning.Key, error) {
	if v.dev == nil {
		return tuning.Key{}, errors.New("the Vulkan target is not open")
	}
	h, err := TwinHash(c)
	if err != nil {
		return tuning.Key{}, err
	}
	device, driver := DeviceEvidence(v.dev)
	return tuning.Key{Cell: c.Name(), Backend: "vulkan", Device: device, Driver: driver, TwinHash: h}, nil
}

// TunedSchedule returns the schedule cell c runs at on the open Vulkan target v: the tuning
// cache's for this device and this version of the twin when cache has one, else the default
// (kernels.Cell.DefaultScheduleFor). why says which, and why a cache entry was not used
// (tuning.Cache.Choose).
func TunedSchedule(cache *tuning.Cache, v *Vulkan, c kernels.Cell) (s kernels.Schedule, tuned bool, why string) {
	def := c.DefaultScheduleFor("vulkan", v.SubgroupSize())
	if cache == nil {
		return def, false, "default (no tuning cache)"
	}
	key, err := TuningKey(v, c)
	if err != nil {
		return def, false, "default (" + err.Error() + ")"
	}
	return kernels.ChooseSchedule(cache, key, c, def)
}

// TunedSchedules is DefaultSchedules with the tuning cache's schedule for the Vulkan target
// where cache has one (other targets: their default).
func TunedSchedules(cache *tuning.Cache) Schedules {
	return func(c kernels.Cell, t Target) []kernels.Schedule {
		if v, ok := t.(*Vulkan); ok && cache != nil {
			s, _, _ := TunedSchedule(cache, v, c)
			return []kernels.Schedule{s}
		}
		return DefaultSchedules(c, t)
	}
}

// Tune searches the schedule space of cell c on the open Vulkan target v (see the comment at
// the top of this file).
func Tune(v *Vulkan, c kernels.Cell, o TuneOptions) (*TuneResult, error) {
	d := v.dev
	if d == nil {
		return nil, errors.New("tune: the Vulkan target is not open")
	}
	if o.Rounds <= 0 {
		o.Rounds = 5
	}
	if o.N <= 0 {
		o.N = 10
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = 2
	}
	if o.RooflineStop == 0 {
		o.RooflineStop = 0.95
	}
	cell := c
	if o.Build != nil {
		cell.Build = o.Build
	}
	def := c.DefaultScheduleFor("vulkan", v.SubgroupSize())
	space := o.Space
	if space == nil {
		space = withDefault(c.Schedules(), def)
	}
	key, err := TuningKey(v, c)
	if err != nil {
		return nil, err
	}
	w := o.Workload
	if w == nil {
		if w, err = NewWorkload(c.Op, c.Type.String(), o.Shape, def); err != nil {
			return nil, err
		}
	}
	var want map[string][]byte
	if w.Want != nil {
		if want, err = w.Want(); err != nil {
			return nil, fmt.Errorf("tune %s: oracle at the workload shape: %w", c.Name(), err)
		}
	}
	res := &TuneResult{Cell: c.Name() + "/vulkan", Shape: ShortShape(c.Op, w.Shape), Bytes: w.Bytes(), Default: def, Grids: map[string][3]uint32{}}
	bs := &bufferSet{d: d, byOp: map[string]*vulkan.Buffer{}}
	defer bs.release()
	info := d.Info()
	maxLanes := int(info.MaxWorkgroupInvocations)

	type cand struct {
		s     kernels.Schedule
		x     *prepared
		times []float64
		tc    tuning.Candidate
	}
	var cands []*cand
	var survivors []*cand
	for i, s := range space {
		cd := &cand{s: s, tc: tuning.Candidate{Schedule: s.String()}}
		cands = append(cands, cd)
		reject := func(format string, args ...any) { cd.tc.Reason = fmt.Sprintf(format, args...) }
		switch {
		case !c.Fits(s):
			reject("does not fit the cell (canonical width %d)", c.Width)
		case maxLanes > 0 && s.Lanes > maxLanes:
			reject("%d lanes exceed the device's %d invocations per workgroup", s.Lanes, maxLanes)
		default:
			if x, why := prepareCandidate(v, cell, s, w, want, bs); why != "" {
				reject("%s", why)
			} else {
				cd.x, cd.tc.Exact = x, true
				survivors = append(survivors, cd)
				res.Grids[s.String()] = x.groups
			}
		}
		if o.Progress != nil {
			o.Progress(TuneProgress{Cell: res.Cell, Stage: "check", Schedule: s, Done: i + 1, Total: len(space)})
		}
	}
	if len(survivors) == 0 {
		var why []string
		for _, cd := range cands {
			why = append(why, cd.s.String()+": "+cd.tc.Reason)
		}
		return nil, fmt.Errorf("tune %s: no candidate is usable: %s", c.Name(), strings.Join(why, "; "))
	}
	roof, _ := CopyBandwidth(d, ABOptions{N: o.N, Warmup: o.Warmup})
	res.RooflineGBs = roof
	median := func(cd *cand) float64 { return Summarize(cd.times).Median }
	best := func() *cand {
		var b *cand
		for _, cd := range survivors {
			if len(cd.times) == 0 {
				continue
			}
			if b == nil || median(cd) < median(b) {
				b = cd
			}
		}
		return b
	}
	done, total := 0, o.Rounds*len(survivors)
rounds:
	for r := 0; r < o.Rounds; r++ {
		for i := range survivors {
			cd := survivors[(i+r)%len(survivors)]
			br, err := d.Bench(cd.x.p, cd.x.bufs, cd.x.push, cd.x.groups, o.Warmup, o.N)
			if err != nil {
				return nil, fmt.Errorf("tune %s at %s: %w", c.Name(), cd.s, err)
			}
			cd.times = append(cd.times, br.PerDispatch.Seconds())
			done++
			if o.Progress != nil {
				p := TuneProgress{Cell: res.Cell, Stage: "time", Schedule: cd.s, Done: done, Total: total}
				if b := best(); b != nil {
					p.Best, p.BestSecs = b.s.String(), median(b)
				}
				o.Progress(p)
			}
		}
		// Candidates clearly slower than the best after a round (by more than pruneMargin) are
		// not timed again; the default always is, for the report.
		if b := best(); b != nil && r+1 < o.Rounds {
			kept := survivors[:0:0]
			for _, cd := range survivors {
				if cd == b || cd.s == def || median(cd) <= pruneMargin*median(b) {
					kept = append(kept, cd)
				} else {
					cd.tc.Reason = fmt.Sprintf("timed %d of %d rounds: more than %.0f%% slower than %s", len(cd.times), o.Rounds, 100*(pruneMargin-1), b.s)
				}
			}
			total -= (len(survivors) - len(kept)) * (o.Rounds - r - 1)
			survivors = kept
		}
		if b := best(); roof > 0 && o.RooflineStop > 0 && r > 0 {
			if gbs := float64(w.Bytes()) / median(b) / 1e9; gbs >= o.RooflineStop*roof {
				res.Stopped = fmt.Sprintf("after round %d: %s reached %.0f%% of the copy roofline", r+1, b.s, 100*gbs/roof)
				break rounds
			}
		}
	}
	b := best()
	for _, cd := range survivors {
		if cd.s == def && median(cd) <= median(b)*1.01 {
			b = cd // a tie keeps the default
		}
	}
	for _, cd := range cands {
		if len(cd.times) == 0 {
			continue
		}
		cd.tc.Seconds = median(cd)
		cd.tc.GBps = float64(w.Bytes()) / cd.tc.Seconds / 1e9
		if cd.s == def {
			res.DefaultSeconds = cd.tc.Seconds
		}
	}
	res.Best, res.BestSeconds = b.s, median(b)
	res.Entry = tuning.Entry{
		Key: key, Shape: res.Shape, Schedule: b.s.String(), Seconds: res.BestSeconds,
		Date: time.Now().UTC().Format(time.RFC3339), Tool: runtime.Version(),
	}
	for _, cd := range cands {
		res.Entry.Candidates = append(res.Entry.Candidates, cd.tc)
	}
	return res, nil
}

// prepareCandidate builds, compiles and checks one candidate: bit-exact on the cell's
// conformance cases and on the workload. It returns the prepared pipeline, or why it is rejected.
func prepareCandidate(v *Vulkan, c kernels.Cell, s kernels.Schedule, w *Workload, want map[string][]byte, bs *bufferSet) (*prepared, string) {
	d := v.dev
	k, err := c.Build(s).Build()
	if err != nil {
		return nil, "does not build: " + firstLine(err.Error())
	}
	if r := Judge(v, c, s); !r.BitExact {
		if !strings.Contains(r.Levels, "X") {
			return nil, "does not run on the device: " + firstLine(r.Reason)
		}
		return nil, "not bit-exact on the conformance cases: " + firstLine(r.Reason)
	}
	x, err := prepareTwin(d, k, w, bs)
	if err != nil {
		return nil, "does not run on the device: " + firstLine(err.Error())
	}
	// The candidate runs the workload's operands on its own grid: timed on the default's, a
	// schedule with other lanes or rows per workgroup computes a part of the output or too
	// much (get_rows at 8 lanes was rejected as 1.19e9 ULP off, rope_norm at 8 lanes chosen as
	// 1.50x faster when, on its grid, it is 0.75x as fast).
	if w.Grid != nil {
		x.groups = w.Grid(s)
	}
	if want != nil {
		exact, ulp, err := x.check(context.Background(), d, w, want)
		if err != nil {
			return nil, "workload run failed: " + firstLine(err.Error())
		}
		if !exact {
			return nil, fmt.Sprintf("not bit-exact at the workload shape (max %g ULP)", ulp)
		}
	}
	return x, ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// WriteTune prints one line per tuned cell: default and best schedules with their times, the
// speed-up, and the candidates rejected.
func WriteTune(w interface{ Write([]byte) (int, error) }, rs []*TuneResult) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Cell < rs[j].Cell })
	for _, r := range rs {
		up := math.NaN()
		if r.DefaultSeconds > 0 {
			up = r.DefaultSeconds / r.BestSeconds
		}
		rejected := 0
		for _, c := range r.Entry.Candidates {
			if !c.Exact {
				rejected++
			}
		}
		fmt.Fprintf(w, "%-24s %s: default %s %.3f ms, best %s %.3f ms (%.2fx), %d candidates, %d rejected\n",
			r.Cell, r.Shape, r.Default, r.DefaultSeconds*1e3, r.Best, r.BestSeconds*1e3, up, len(r.Entry.Candidates), rejected)
	}
}
