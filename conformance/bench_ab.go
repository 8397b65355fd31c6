package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
)

// The kernel-only A/B benchmark of docs/contracts.md: a cell's DSL twin against its hand-written
// incumbent (package incumbent) on one Vulkan device, at a realistic shape. Buffers are created
// and filled once; each measurement is the side's warm-up dispatches, then its outputs poisoned
// (poisonByte), then (*vulkan.Device).BenchContext: N dispatches recorded back to back in one
// command buffer, one submission, one wait, device timestamps; then the timed run's own outputs
// are read and must be the bytes the side gave on those inputs in its correctness runs, where it
// ran twice and had to give the same bytes both times. The timed pairs alternate between the
// benchmark inputs and a second, seeded set of the same shape (inputSets), so a side that skips
// the timed work, or serves a result it cached from earlier dispatches, is caught
// (ABResult.TwinFindings, IncumbentFindings; the gate then counts the twin not bit-exact, or the
// incumbent wrong). Scratch buffers are zeroed once, as the manifest promises, not between runs:
// an incumbent keeping state there meets it again. Twin and
// incumbent alternate A B A B ... for P pairs in one process; each pair gives a ratio (twin
// throughput / incumbent throughput = incumbent time / twin time), summarized by its median,
// min, max and interquartile range. Throughput is also reported as GB/s of the op's minimal
// traffic (every bound operand's bytes once) and as a percentage of the roofline: the device's
// copy bandwidth, measured with its copy engine by (*vulkan.Device).BenchCopy (N
// vkCmdCopyBuffer recorded back to back, one submission, one wait, device timestamps), counting
// the bytes read plus the bytes written (2*size per copy). The bandwidth of a DSL copy kernel
// (read n u32, write n u32, measured like a twin) is reported beside it for reference.

// ABOptions sets the benchmark's sizes; zero values take the defaults.
type ABOptions struct {
	Pairs  int                // A B pairs (default 9)
	N      int                // dispatches per measurement (default 10)
	Warmup int                // warm-up dispatches per measurement (default 2)
	Shape  map[string]float64 // shape overrides (after the manifest entry's own; not with Workload)
	Twin   *ir.Kernel         // the twin to run (default: the cell's kernel at the schedule)
	// Schedule is the twin's schedule (nil: the cell's default on the device); the workload's
	// dispatch is laid out for it, and Twin, when set, must be built for it.
	Schedule *kernels.Schedule
	// Workload, when set, is the input RunAB runs instead of building one with NewWorkload: the
	// shape overrides (the manifest entry's and Shape) then do not apply. It must suit the twin
	// RunAB runs (Twin, else the cell's kernel at its default schedule on the device): its
	// TwinParams and TwinGroups are used as they are, and its Vars (Shape and Derived) feed the
	// incumbent's expressions.
	Workload *Workload
	// Seed is the seed of the second input set the timed pairs alternate with (0: one from the
	// clock; see inputSets).
	Seed int64
}

func (o ABOptions) withDefaults() ABOptions {
	if o.Pairs <= 0 {
		o.Pairs = 9
	}
	if o.N <= 0 {
		o.N = 10
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = 2
	}
	return o
}

// Spread summarizes the per-pair ratios.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
	IQR    float64 `json:"iqr"`
}

// Summarize returns the median, extremes and quartiles of xs (linear interpolation).
func Summarize(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		pos := p * float64(len(s)-1)
		i := int(pos)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (pos-float64(i))*(s[i+1]-s[i])
	}
	r := Spread{Median: q(0.5), Min: s[0], Max: s[len(s)-1], Q1: q(0.25), Q3: q(0.75)}
	r.IQR = r.Q3 - r.Q1
	return r
}

// ABResult is the outcome of one A/B benchmark.
type ABResult struct {
	Cell          string             `json:"cell"` // op/type/backend
	Incumbent     string             `json:"incumbent"`
	Shape         map[string]float64 `json:"shape"`
	Bytes         int                `json:"bytes"` // minimal traffic per dispatch
	Pairs         int                `json:"pairs"`
	N             int                `json:"n"`
	TwinNS        []float64          `json:"twin_ns"`      // per pair, ns per dispatch
	IncumbentNS   []float64          `json:"incumbent_ns"` // per pair
	Ratios        []float64          `json:"ratios"`       // per pair: twin throughput / incumbent throughput
	Ratio         Spread             `json:"ratio"`
	TwinGBs       float64            `json:"twin_gbs"` // at the median pair time
	IncumbentGBs  float64            `json:"incumbent_gbs"`
	RooflineGBs   float64            `json:"roofline_gbs"`    // copy-engine bandwidth, read + written (0: not measured)
	KernelCopyGBs float64            `json:"kernel_copy_gbs"` // DSL copy kernel's bandwidth, read + written (0: not measured)
	TwinRoof      float64            `json:"twin_roofline_pct"`
	IncumbentRoof float64            `json:"incumbent_roofline_pct"`
	Timestamps    bool               `json:"timestamps"` // device timestamps (else wall clock)
	CoresUsed     float64            `json:"cores_used"` // process CPU time / wall time during the pairs (lavapipe)
	TwinHash      string             `json:"twin_hash"`  // sha256 of the twin's SPIR-V words
	IncumbentHash string             `json:"incumbent_hash"`
	// TwinExact: the twin's output at the benchmark shape is bit-exact against the oracle.
	TwinExact bool `json:"twin_exact"`
	// IncumbentExact and IncumbentMaxULP: the incumbent's output against the oracle
	// (informative: an incumbent is judged for speed only).
	IncumbentExact  bool    `json:"incumbent_exact"`
	IncumbentMaxULP float64 `json:"incumbent_max_ulp"`
	// IncumbentErr is the incumbent's normwise error against the oracle, ||got-want||/||want||.
	IncumbentErr float64 `json:"incumbent_err"`
	// Seed is the seed of the second input set (0: none, a case workload).
	Seed int64 `json:"seed,omitempty"`
	// TwinFindings and IncumbentFindings say what the checks of the timed runs caught: a side
	// whose second run gave other bytes, or whose timed run did not give what it gave in its
	// correctness run (it skipped the timed work, or served a cached result). TimedChecked
	// counts the timed runs whose outputs were checked.
	TwinFindings      []string `json:"twin_findings,omitempty"`
	IncumbentFindings []string `json:"incumbent_findings,omitempty"`
	TimedChecked      int      `json:"timed_checked"`
	Seconds           float64  `json:"seconds"`
}

// prepared is one side of the A/B: a pipeline with its buffers and push constants.
type prepared struct {
	p      *vulkan.Pipeline
	bufs   []*vulkan.Buffer
	push   []byte
	groups [3]uint32
	outs   map[string]*vulkan.Buffer // output operand -> buffer
	hash   string
}

func (x *prepared) bench(ctx context.Context, d *vulkan.Device, o ABOptions) (vulkan.BenchResult, error) {
	return d.BenchContext(ctx, x.p, x.bufs, x.push, x.groups, o.Warmup, o.N)
}

// poisonByte fills an output before every run whose output is checked: 0x7f7f7f7f is a finite
// f32 (3.4e38) no op computes from these inputs, and, unlike a NaN, never equal to a NaN the
// oracle expects. A side that skips work (or returns what it cached from an earlier dispatch)
// leaves it, or the earlier inputs' result, where the op's output belongs.
const poisonByte = 0x7f

// resetOutputs prepares x's outputs for a checked run: poisoned (see poisonByte), or, for a
// case workload (w.Derived nil, whose kernels may read their outputs' initial bytes, as atomics
// do), restored to their initial bytes.
func (x *prepared) resetOutputs(w *Workload) error {
	for name, buf := range x.outs {
		op, ok := w.operand(name)
		if !ok {
			continue
		}
		data := op.Data
		if w.Derived != nil {
			data = bytes.Repeat([]byte{poisonByte}, len(op.Data))
		}
		if err := buf.Write(0, data); err != nil {
			return err
		}
	}
	return nil
}

// readOutputs reads x's outputs, as many bytes of each as w's operand has.
func (x *prepared) readOutputs(w *Workload) (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, buf := range x.outs {
		op, ok := w.operand(name)
		if !ok {
			continue
		}
		got := make([]byte, len(op.Data))
		if err := buf.Read(0, got); err != nil {
			return nil, err
		}
		out[name] = got
	}
	return out, nil
}

// run runs x once on reset outputs (resetOutputs) and returns its outputs.
func (x *prepared) run(ctx context.Context, d *vulkan.Device, w *Workload) (map[string][]byte, error) {
	if err := x.resetOutputs(w); err != nil {
		return nil, err
	}
	if err := d.RunContext(ctx, x.p, x.bufs, x.push, x.groups); err != nil {
		return nil, err
	}
	return x.readOutputs(w)
}

// reference runs x twice on the same inputs and returns the first run's outputs, and, when the
// second run's bytes differ (a side that is not reproducible, or not the function of its inputs
// it claims to be), what differs.
func (x *prepared) reference(ctx context.Context, d *vulkan.Device, w *Workload) (map[string][]byte, string, error) {
	first, err := x.run(ctx, d, w)
	if err != nil {
		return nil, "", err
	}
	second, err := x.run(ctx, d, w)
	if err != nil {
		return nil, "", err
	}
	return first, sameOutputs(first, second, "a second run on the same inputs"), nil
}

// sameOutputs says where got differs from want ("" when every output has the same bytes); what
// names got.
func sameOutputs(want, got map[string][]byte, what string) string {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		a, b := want[name], got[name]
		if i := firstDiff(a, b); i >= 0 {
			return fmt.Sprintf("%s gave other bytes in %s (from byte %d of %d)", what, name, i, len(a))
		}
	}
	return ""
}

func firstDiff(a, b []byte) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// check runs x once (run) and compares its outputs with want; it returns exactness and max ULP.
func (x *prepared) check(ctx context.Context, d *vulkan.Device, w *Workload, want map[string][]byte) (bool, float64, error) {
	got, err := x.run(ctx, d, w)
	if err != nil {
		return false, 0, err
	}
	c := compareOutputs(w, got, want)
	return c.exact, c.ulp, nil
}

// outputCheck is how a kernel's outputs compare with the oracle's: exact, the largest ULP
// distance, and the normwise error ||got - want|| / ||want|| over the f32 outputs (NaN where the
// oracle has a finite value counts as an infinite error).
type outputCheck struct {
	exact   bool
	ulp     float64
	normErr float64
}

// compareOutputs compares outputs got with the oracle's want.
func compareOutputs(w *Workload, got, want map[string][]byte) outputCheck {
	c := outputCheck{exact: true}
	var diff2, norm2 float64
	for _, name := range slices.Sorted(maps.Keys(want)) {
		wb := want[name]
		g, ok := got[name]
		if !ok {
			continue
		}
		op, _ := w.operand(name)
		df := Compare(g, wb, op.Elem)
		if !df.Exact {
			c.exact = false
			c.ulp = math.Max(c.ulp, df.ULP)
		}
		if op.Elem == "f32" {
			for i := 0; i+4 <= len(wb) && i+4 <= len(g); i += 4 {
				gv, v := float64(math.Float32frombits(le32(g[i:]))), float64(math.Float32frombits(le32(wb[i:])))
				switch {
				case math.IsNaN(v) || math.IsInf(v, 0):
					continue // the oracle's specials are judged by Compare
				case math.IsNaN(gv) || math.IsInf(gv, 0):
					diff2 = math.Inf(1)
				default:
					diff2 += (gv - v) * (gv - v)
				}
				norm2 += v * v
			}
		} else if !df.Exact {
			diff2 = math.Inf(1)
		}
	}
	switch {
	case diff2 == 0:
	case norm2 == 0:
		c.normErr = math.Inf(1)
	default:
		c.normErr = math.Sqrt(diff2 / norm2)
	}
	return c
}

// timed is one timed measurement of x (see the file comment): its warm-up dispatches, then its
// outputs poisoned, then o.N dispatches timed, then its outputs read and compared with ref, what
// x gave on these inputs in its correctness runs. diff says how the timed run's outputs differ
// ("" when they do not): a side that skipped the timed work, or served an earlier result.
func (x *prepared) timed(ctx context.Context, d *vulkan.Device, o ABOptions, w *Workload, ref map[string][]byte, what string) (vulkan.BenchResult, string, error) {
	if o.Warmup > 0 {
		if _, err := d.BenchContext(ctx, x.p, x.bufs, x.push, x.groups, 0, o.Warmup); err != nil {
			return vulkan.BenchResult{}, "", err
		}
	}
	if err := x.resetOutputs(w); err != nil {
		return vulkan.BenchResult{}, "", err
	}
	res, err := d.BenchContext(ctx, x.p, x.bufs, x.push, x.groups, 0, o.N)
	if err != nil {
		return vulkan.BenchResult{}, "", err
	}
	got, err := x.readOutputs(w)
	if err != nil {
		return vulkan.BenchResult{}, "", err
	}
	return res, sameOutputs(ref, got, what), nil
}

// inputSets returns the input sets the A/B benchmark runs on: w, and, for an op workload (not a
// case workload), the same shape with inputs of seed o.Seed (0: a seed from the clock), whose
// seed it returns; the timed pairs alternate between them, so that a side which serves the
// result of earlier inputs is caught.
func inputSets(w *Workload, o ABOptions, s kernels.Schedule) ([]*Workload, int64, error) {
	if w.Derived == nil || w.Op == "" {
		return []*Workload{w}, 0, nil
	}
	seed := o.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()%1_000_000 + 1
	}
	sh := maps.Clone(w.Shape)
	sh["seed"] = float64(seed)
	w2, err := NewWorkload(w.Op, w.Type, sh, s)
	if err != nil {
		return nil, 0, fmt.Errorf("the inputs of seed %d: %w", seed, err)
	}
	if len(w2.Operands) != len(w.Operands) {
		return nil, 0, fmt.Errorf("the inputs of seed %d have %d operands, the benchmark's %d", seed, len(w2.Operands), len(w.Operands))
	}
	for i := range w.Operands {
		if w2.Operands[i].Name != w.Operands[i].Name || len(w2.Operands[i].Data) != len(w.Operands[i].Data) {
			return nil, 0, fmt.Errorf("the inputs of seed %d: operand %s differs in size from the benchmark's", seed, w.Operands[i].Name)
		}
	}
	return []*Workload{w, w2}, seed, nil
}

// writeInputs writes the input operands of w into the buffers of bs.
func writeInputs(bs *bufferSet, w *Workload) error {
	for _, op := range w.Operands {
		if op.Output {
			continue
		}
		if b, ok := bs.byOp[op.Name]; ok {
			if err := b.Write(0, op.Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// twinSide binds the twin's pipeline p (of module m) to w's operands in bs, with w's parameters
// and grid.
func twinSide(c kernels.Cell, m *vulkan.Module, p *vulkan.Pipeline, w *Workload, bs *bufferSet) (*prepared, error) {
	twin := &prepared{p: p, groups: w.TwinGroups, outs: map[string]*vulkan.Buffer{}, hash: incumbent.HashWords(m.Words)}
	for _, b := range m.Bindings {
		op, ok := w.operand(b.Name)
		if !ok {
			return nil, fmt.Errorf("twin binding %q is not an operand of the %s workload", b.Name, c.Name())
		}
		buf, err := bs.get(op)
		if err != nil {
			return nil, err
		}
		twin.bufs = append(twin.bufs, buf)
		if op.Output {
			twin.outs[op.Name] = buf
		}
	}
	twin.push = make([]byte, 4*len(w.TwinParams))
	for i, v := range w.TwinParams {
		binary.LittleEndian.PutUint32(twin.push[4*i:], v)
	}
	return twin, nil
}

// incumbentSide instantiates incumbent e at w's shape on d (its launch within the work the shape
// implies, incumbent.CheckWork) and binds it to w's operands in bs, with zeroed scratch buffers.
func incumbentSide(d *vulkan.Device, c kernels.Cell, e *incumbent.Entry, w *Workload, bs *bufferSet) (*prepared, error) {
	l, err := e.VulkanFor(d.Info(), w.Vars())
	var uv *incumbent.UnknownVarError
	if errors.As(err, &uv) {
		vars := slices.Sorted(maps.Keys(w.Vars()))
		return nil, fmt.Errorf("%w; the variables of %s are %s (onesource cells -vars %s lists them with their values)", err, c.Name(), strings.Join(vars, ", "), c.Name())
	}
	if err != nil {
		return nil, err
	}
	if !l.Whole() {
		return nil, fmt.Errorf("incumbent %s binds operands at byte offsets (%v): the A/B benchmark binds whole buffers", e.Name, l.Offsets)
	}
	if err := incumbent.CheckWork(l, w.Bytes()); err != nil {
		return nil, fmt.Errorf("incumbent %s at %s: %w", e.Name, ShapeString(w.Shape), err)
	}
	inc := &prepared{groups: l.Groups, push: l.Push, outs: map[string]*vulkan.Buffer{}, hash: l.Hash}
	if inc.p, err = d.Pipeline(l.Module); err != nil {
		return nil, fmt.Errorf("incumbent %s: %w", e.Name, err)
	}
	for i, name := range l.Operands {
		if name == "" {
			b, err := bs.new(l.Scratch[i])
			if err != nil {
				return nil, err
			}
			inc.bufs = append(inc.bufs, b)
			continue
		}
		op, ok := w.operand(name)
		if !ok {
			var names []string
			for _, o := range w.Operands {
				names = append(names, o.Name)
			}
			return nil, fmt.Errorf("incumbent %s: binding %d: %q is not an operand of %s (operands: %s)", e.Name, i, name, c.Name(), strings.Join(names, ", "))
		}
		buf, err := bs.get(op)
		if err != nil {
			return nil, err
		}
		inc.bufs = append(inc.bufs, buf)
		if op.Output {
			inc.outs[op.Name] = buf
		}
	}
	return inc, nil
}

// bufferSet creates the operand buffers once; both sides bind the same buffers.
type bufferSet struct {
	d    *vulkan.Device
	byOp map[string]*vulkan.Buffer
	all  []*vulkan.Buffer
}

func (s *bufferSet) get(o *Operand) (*vulkan.Buffer, error) {
	if b, ok := s.byOp[o.Name]; ok {
		return b, nil
	}
	b, err := s.new(len(o.Data))
	if err != nil {
		return nil, err
	}
	if err := b.Write(0, o.Data); err != nil {
		return nil, err
	}
	s.byOp[o.Name] = b
	return b, nil
}

func (s *bufferSet) new(n int) (*vulkan.Buffer, error) {
	b, err := s.d.NewBuffer(max(n, 4))
	if err != nil {
		return nil, err
	}
	s.all = append(s.all, b)
	return b, nil
}

func (s *bufferSet) release() {
	for _, b := range s.all {
		b.Release()
	}
}

// RunAB benchmarks the twin of cell c against incumbent e on device d (see the file comment).
// The shape is the op's default, overridden by e.Shape, then by o.Shape; with o.Workload set,
// RunAB runs that workload as it is instead, and neither e.Shape nor o.Shape applies. The
// incumbent's launch must stay within the work its shape implies (incumbent.CheckWork).
func RunAB(d *vulkan.Device, c kernels.Cell, e *incumbent.Entry, o ABOptions) (*ABResult, error) {
	return RunABContext(context.Background(), d, c, e, o)
}

// RunABContext is RunAB whose every wait for the device follows ctx: at its deadline the
// benchmark stops with ctx's error (the work left in flight is the device's next use's to wait
// for).
func RunABContext(ctx context.Context, d *vulkan.Device, c kernels.Cell, e *incumbent.Entry, o ABOptions) (*ABResult, error) {
	start := time.Now()
	o = o.withDefaults()
	s := c.DefaultScheduleFor("vulkan", d.Caps().SubgroupSize)
	if o.Schedule != nil {
		s = *o.Schedule
	}
	w, err := o.Workload, error(nil)
	if w == nil {
		shape := map[string]float64{}
		for k, v := range e.Shape {
			shape[k] = v
		}
		for k, v := range o.Shape {
			shape[k] = v
		}
		if w, err = NewWorkload(c.Op, c.Type.String(), shape, s); err != nil {
			return nil, err
		}
	}
	bs := &bufferSet{d: d, byOp: map[string]*vulkan.Buffer{}}
	defer bs.release()

	// A: the twin.
	k := o.Twin
	if k == nil {
		if k, err = c.Build(s).Build(); err != nil {
			return nil, fmt.Errorf("twin does not build: %w", err)
		}
	}
	m, err := d.Compile(k)
	if err != nil {
		return nil, fmt.Errorf("twin: emit: %w", err)
	}
	p, err := d.Pipeline(m)
	if err != nil {
		return nil, fmt.Errorf("twin: %w", err)
	}
	twin, err := twinSide(c, m, p, w, bs)
	if err != nil {
		return nil, err
	}
	inc, err := incumbentSide(d, c, e, w, bs)
	if err != nil {
		return nil, err
	}

	r := &ABResult{Cell: c.Name() + "/vulkan", Incumbent: e.Name, Shape: w.Shape, Bytes: w.Bytes(), Pairs: o.Pairs, N: o.N,
		TwinHash: twin.hash, IncumbentHash: inc.hash, TwinExact: true, IncumbentExact: true}
	sets, seed, err := inputSets(w, o, s)
	if err != nil {
		return nil, err
	}
	r.Seed = seed
	// Correctness on every input set: each side twice (the same bytes both times), against the
	// oracle; the first run's bytes are what the side's timed runs must give on that set.
	type refs struct{ twin, inc map[string][]byte }
	var ref []refs
	for i, ws := range sets {
		label := "the benchmark inputs"
		if i > 0 {
			label = fmt.Sprintf("the inputs of seed %d", seed)
			if err := writeInputs(bs, ws); err != nil {
				return nil, err
			}
		}
		tr, tdiff, err := twin.reference(ctx, d, ws)
		if err != nil {
			return nil, fmt.Errorf("twin: %w", err)
		}
		ir, idiff, err := inc.reference(ctx, d, ws)
		if err != nil {
			return nil, fmt.Errorf("incumbent %s: %w", e.Name, err)
		}
		if tdiff != "" {
			r.TwinFindings = append(r.TwinFindings, label+": "+tdiff)
		}
		if idiff != "" {
			r.IncumbentFindings = append(r.IncumbentFindings, label+": "+idiff)
		}
		if ws.Want != nil {
			want, err := ws.Want()
			if err != nil {
				return nil, fmt.Errorf("oracle at the benchmark shape: %w", err)
			}
			tc, ic := compareOutputs(ws, tr, want), compareOutputs(ws, ir, want)
			r.TwinExact = r.TwinExact && tc.exact
			r.IncumbentExact = r.IncumbentExact && ic.exact
			r.IncumbentMaxULP = max(r.IncumbentMaxULP, clampULP(ic.ulp))
			r.IncumbentErr = max(r.IncumbentErr, clampULP(ic.normErr))
		}
		ref = append(ref, refs{tr, ir})
	}

	// The timed runs: pair i runs on input set i mod the sets, each side's outputs poisoned
	// after its warm-up and checked after its timed dispatches against what it gave on that set.
	cpu0, wall0 := cpuTime(), time.Now()
	r.Timestamps = true
	for i := 0; i < o.Pairs; i++ {
		set := i % len(sets)
		if len(sets) > 1 {
			if err := writeInputs(bs, sets[set]); err != nil {
				return nil, err
			}
		}
		what := fmt.Sprintf("the timed run of pair %d", i+1)
		a, diff, err := twin.timed(ctx, d, o, sets[set], ref[set].twin, what)
		if err != nil {
			return nil, fmt.Errorf("twin: %w", err)
		}
		if diff != "" {
			r.TwinFindings = append(r.TwinFindings, diff)
		}
		b, diff, err := inc.timed(ctx, d, o, sets[set], ref[set].inc, what)
		if err != nil {
			return nil, fmt.Errorf("incumbent %s: %w", e.Name, err)
		}
		if diff != "" {
			r.IncumbentFindings = append(r.IncumbentFindings, diff)
		}
		r.TimedChecked += 2
		r.Timestamps = r.Timestamps && a.Timestamps && b.Timestamps
		ta, tb := float64(a.Total.Nanoseconds())/float64(o.N), float64(b.Total.Nanoseconds())/float64(o.N)
		r.TwinNS = append(r.TwinNS, ta)
		r.IncumbentNS = append(r.IncumbentNS, tb)
		r.Ratios = append(r.Ratios, tb/ta)
	}
	r.TwinExact = r.TwinExact && len(r.TwinFindings) == 0
	if cpu := cpuTime(); cpu >= 0 && cpu0 >= 0 {
		r.CoresUsed = float64(cpu-cpu0) / float64(time.Since(wall0))
	}
	r.Ratio = Summarize(r.Ratios)
	tm, im := Summarize(r.TwinNS).Median, Summarize(r.IncumbentNS).Median
	r.TwinGBs = float64(r.Bytes) / tm
	r.IncumbentGBs = float64(r.Bytes) / im
	if roof, err := CopyBandwidth(d, o); err == nil && roof > 0 {
		r.RooflineGBs = roof
		r.TwinRoof = 100 * r.TwinGBs / roof
		r.IncumbentRoof = 100 * r.IncumbentGBs / roof
	}
	if v, err := KernelCopyBandwidth(d, o); err == nil {
		r.KernelCopyGBs = v
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

var (
	roofMu      sync.Mutex
	roofs       = map[*vulkan.Device]float64{} // CopyBandwidth
	kernelRoofs = map[*vulkan.Device]float64{} // KernelCopyBandwidth
)

// CopyWords is the size of the roofline copy: 4M u32 (16 MiB read, 16 MiB written).
const CopyWords = 4 << 20

// CopyBandwidth is the roofline: the device's copy bandwidth in GB/s (bytes read + written per
// ns), the median of 5 (*vulkan.Device).BenchCopy runs of o.N copies of 4*CopyWords bytes
// between two buffers, each copy counting 2*4*CopyWords bytes. It is measured once per device
// and cached.
func CopyBandwidth(d *vulkan.Device, o ABOptions) (float64, error) {
	roofMu.Lock()
	defer roofMu.Unlock()
	if v, ok := roofs[d]; ok {
		return v, nil
	}
	o = o.withDefaults()
	bs := &bufferSet{d: d, byOp: map[string]*vulkan.Buffer{}}
	defer bs.release()
	src, dst, err := copyBuffers(bs)
	if err != nil {
		return 0, err
	}
	var ns []float64
	for i := 0; i < 5; i++ {
		r, err := d.BenchCopy(src, dst, 4*CopyWords, o.Warmup, o.N)
		if err != nil {
			return 0, err
		}
		ns = append(ns, float64(r.Total.Nanoseconds())/float64(o.N))
	}
	v := 2 * 4 * CopyWords / Summarize(ns).Median
	roofs[d] = v
	return v, nil
}

// copyBuffers makes the two buffers of a roofline copy, 4*CopyWords bytes each.
func copyBuffers(bs *bufferSet) (src, dst *vulkan.Buffer, err error) {
	if src, err = bs.get(&Operand{Name: "src", Data: make([]byte, 4*CopyWords)}); err != nil {
		return nil, nil, err
	}
	if dst, err = bs.get(&Operand{Name: "dst", Data: make([]byte, 4*CopyWords)}); err != nil {
		return nil, nil, err
	}
	return src, dst, nil
}

// CopyKernel is the DSL copy kernel: dst[i] = src[i] for i < n, a grid-stride loop with
// adjacent invocations on adjacent words. KernelCopyBandwidth runs it with 256 lanes and one
// word per invocation.
func CopyKernel(lanes int) *dsl.Kernel {
	k := dsl.New("copy_u32", lanes)
	src := k.Buffer("src", dsl.U32, dsl.Read)
	dst := k.Buffer("dst", dsl.U32, dsl.Write)
	n := k.Param("n", dsl.U32)
	stride := k.NumWorkgroups(dsl.X).Mul(uint32(lanes))
	k.For("i", k.GlobalID(dsl.X), n, stride, func(i dsl.Value) { dst.Store(i, src.Load(i)) })
	return k
}

// KernelCopyBandwidth is the bandwidth in GB/s (bytes read + written per ns) of CopyKernel over
// CopyWords words: the median of 5 kernel-only benchmarks. It was the roofline before
// CopyBandwidth measured the copy engine and is kept for reference (it underestimates the
// device on lavapipe). It is measured once per device and cached.
func KernelCopyBandwidth(d *vulkan.Device, o ABOptions) (float64, error) {
	roofMu.Lock()
	defer roofMu.Unlock()
	if v, ok := kernelRoofs[d]; ok {
		return v, nil
	}
	o = o.withDefaults()
	const lanes = 256 // CopyWords/lanes workgroups: one word per invocation, within the grid limit
	k, err := CopyKernel(lanes).Build()
	if err != nil {
		return 0, err
	}
	m, err := d.Compile(k)
	if err != nil {
		return 0, err
	}
	p, err := d.Pipeline(m)
	if err != nil {
		return 0, err
	}
	bs := &bufferSet{d: d, byOp: map[string]*vulkan.Buffer{}}
	defer bs.release()
	src, dst, err := copyBuffers(bs)
	if err != nil {
		return 0, err
	}
	push := binary.LittleEndian.AppendUint32(nil, CopyWords)
	groups := [3]uint32{uint32(min((CopyWords+lanes-1)/lanes, 65535)), 1, 1}
	var ns []float64
	for i := 0; i < 5; i++ {
		r, err := d.Bench(p, []*vulkan.Buffer{src, dst}, push, groups, o.Warmup, o.N)
		if err != nil {
			return 0, err
		}
		ns = append(ns, float64(r.Total.Nanoseconds())/float64(o.N))
	}
	v := 8 * CopyWords / Summarize(ns).Median
	kernelRoofs[d] = v
	return v, nil
}

// WriteAB writes a one-paragraph human summary of r.
func WriteAB(r *ABResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s vs %s shape %v (%d bytes/dispatch, %d pairs x %d dispatches", r.Cell, r.Incumbent, r.Shape, r.Bytes, r.Pairs, r.N)
	if r.Timestamps {
		b.WriteString(", device timestamps)\n")
	} else {
		b.WriteString(", wall clock)\n")
	}
	fmt.Fprintf(&b, "  ratio twin/incumbent: median %.3f  min %.3f  max %.3f  IQR %.3f [%.3f, %.3f]\n",
		r.Ratio.Median, r.Ratio.Min, r.Ratio.Max, r.Ratio.IQR, r.Ratio.Q1, r.Ratio.Q3)
	fmt.Fprintf(&b, "  twin %.2f GB/s (%.0f%% of roofline)  incumbent %.2f GB/s (%.0f%%)  cores used %.2f\n",
		r.TwinGBs, r.TwinRoof, r.IncumbentGBs, r.IncumbentRoof, r.CoresUsed)
	fmt.Fprintf(&b, "  roofline (vkCmdCopyBuffer, read + written = 2*size per copy) %.2f GB/s  DSL copy kernel %.2f GB/s\n",
		r.RooflineGBs, r.KernelCopyGBs)
	fmt.Fprintf(&b, "  twin bit-exact at this shape: %v; incumbent vs oracle: exact %v, max ULP %g, normwise error %.3g", r.TwinExact, r.IncumbentExact, r.IncumbentMaxULP, r.IncumbentErr)
	return b.String()
}
