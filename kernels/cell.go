// Package kernels is the DSL twin library: one DSL kernel per (op, type) cell of the matrix
// (docs/contracts.md), each with the conformance inputs that judge it against package oracle.
//
// A cell is registered once, from the file of its op (Register in an init function), with:
//
//   - Build: the kernel builder; its Schedule argument is the schedule (lanes per workgroup,
//     the layout of the canonical reductions), so the same source specializes per backend;
//   - Cases: the op's conformance inputs (several shapes, sizes that are not multiples of the
//     block or workgroup, zeros, extremes and special values, each type's edge blocks), each with
//     the bytes the oracle says the kernel must write: the same bytes at every schedule;
//   - Width: the canonical width W of its reductions (oracle.Width), which fixes every result
//     bit; its schedule space (Schedules) is every lane count up to W in both layouts.
//
// Adding an op is one file here (its kernels and cases) and one in oracle (its meaning); adding
// a type is its decoder here and its format in oracle. Package conformance runs every cell on
// every available backend and compares byte for byte.
//
// Cells outside the library come from a user's package (`func Cells() []Cell`), which the
// onesource commands register with Add; such a cell may declare its own benchmark input at a
// shape of its own variables (Workload).
package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/tuning"
)

// Schedule is how a kernel is laid out on the device: its knobs. No knob changes a result bit:
// a cell's reductions run in the canonical order of its fixed width (Cell.Width, oracle.Width),
// whatever the schedule, so a schedule can be chosen for speed alone.
type Schedule struct {
	// Lanes is the workgroup size (a power of two; for a cell with a canonical width W, at most
	// W and dividing it).
	Lanes int
	// Layout is how the W virtual lanes of the cell's canonical reductions sit on the Lanes
	// invocations (dsl.Blocked or dsl.Strided). Cells without a reduction ignore it.
	Layout dsl.Layout
	// Rows is how many matrix rows one workgroup computes (matvec, matvec_q8: the rows share
	// their activation loads and their reductions' barriers); 0 means 1. Other cells ignore it.
	Rows int
}

// RowsPerGroup is Rows, at least 1.
func (s Schedule) RowsPerGroup() int { return max(1, s.Rows) }

// String describes the schedule as reports and test names show it: "lanes=64,blocked", and
// ",rows=R" for more than one row per workgroup.
func (s Schedule) String() string {
	out := fmt.Sprintf("lanes=%d,%s", s.Lanes, s.Layout)
	if s.Rows > 1 {
		out += fmt.Sprintf(",rows=%d", s.Rows)
	}
	return out
}

// ParseSchedule reads what String writes ("lanes=64,blocked", "lanes=8,strided,rows=2"; the
// layout may be left out: blocked; rows too: 1).
func ParseSchedule(text string) (Schedule, error) {
	var s Schedule
	bad := func(why string) (Schedule, error) {
		return Schedule{}, fmt.Errorf("kernels: schedule %q: %s (want lanes=N[,blocked|strided][,rows=R], N and R powers of two)", text, why)
	}
	parts := strings.Split(text, ",")
	lanes, ok := strings.CutPrefix(parts[0], "lanes=")
	n, err := strconv.Atoi(lanes)
	if !ok || err != nil || n < 1 || n&(n-1) != 0 {
		return bad("no power-of-two lane count first")
	}
	s.Lanes = n
	rest := parts[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "rows=") {
		switch rest[0] {
		case "blocked":
			s.Layout = dsl.Blocked
		case "strided":
			s.Layout = dsl.Strided
		default:
			return bad(fmt.Sprintf("layout %q is neither blocked nor strided", rest[0]))
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		v, ok := strings.CutPrefix(rest[0], "rows=")
		r, err := strconv.Atoi(v)
		if !ok || err != nil || r < 1 || r&(r-1) != 0 {
			return bad(fmt.Sprintf("%q is not rows=R with R a power of two", rest[0]))
		}
		if r > 1 {
			s.Rows = r
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		return bad(fmt.Sprintf("unexpected %q", strings.Join(rest, ",")))
	}
	return s, nil
}

// DefaultSchedule is the schedule a backend runs a cell at unless told otherwise, for a cell
// without a canonical width (Cell.DefaultSchedule narrows it to the cell's).
func DefaultSchedule(backend string) Schedule {
	switch backend {
	case "cuda", "hip":
		return Schedule{Lanes: 128}
	}
	return Schedule{Lanes: 64}
}

// Case is one conformance input of a cell.
type Case struct {
	Name    string
	Buffers [][]byte  // initial bytes of every binding, in binding order; outputs are zero-filled at their size
	Params  []uint32  // the kernel's 32-bit parameters in declaration order (f32 as bits)
	Groups  [3]uint32 // workgroups to dispatch
	Outputs []int     // bindings whose final bytes are compared
	Want    [][]byte  // the oracle's bytes, one per Outputs entry
	Elem    []string  // element type of each output for error reporting: "f32", "u8", ...
	// Tol declares outputs inexact: Tol[j], when Tol is not nil and Tol[j] is not nil, is the
	// tolerance of Outputs[j] (an f32 output computed with a device's own functions, such as
	// dsl.Value.Native). Every other output must be bit-exact.
	Tol []*Tolerance
}

// Tolerance is what an inexact output is judged by: its largest distance from the oracle's
// values in float32 ULPs (on the ordered integer line: adjacent floats are 1 apart, +0 and -0
// too). A NaN must meet a NaN and an infinity the same infinity, or the distance is infinite.
// The conformance suite reports such an output as "inexact, max ULP N" with the measured N, never
// as bit-exact, and fails it when N exceeds MaxULP.
type Tolerance struct {
	Name   string  // what the output holds, for reports ("exp", ...)
	MaxULP float64 // the largest distance allowed
}

// Inexact reports whether any output of the case has a tolerance.
func (c Case) Inexact() bool {
	for _, t := range c.Tol {
		if t != nil {
			return true
		}
	}
	return false
}

// Cell is one (op, type) of the matrix.
type Cell struct {
	Op    string
	Type  oracle.Type // the weight or data type; F32 for ops on f32 activations
	Build func(s Schedule) *dsl.Kernel
	// Cases returns the conformance inputs laid out for schedule s. Only the dispatch (Groups)
	// may depend on s: the inputs and the oracle's bytes are the same for every schedule.
	Cases func(s Schedule) ([]Case, error)
	// Width is the canonical width W of the cell's reductions (oracle.Width), 0 for a cell whose
	// bits do not depend on any order (element-wise ops, get_rows, quantize_q8_1).
	Width int
	// DefaultSubgroups is the cell's default workgroup size in subgroups of the device it runs
	// on (0: the backend's default lane count, DefaultSchedule).
	DefaultSubgroups int
	// MaxRows is the most rows per workgroup the cell's kernel takes (Schedule.Rows); 0 or 1:
	// the cell has no rows knob.
	MaxRows int
	// Feature, when not empty, marks a cell that exists to exercise a DSL feature on every
	// backend (dsl.Subgroup, atomics, the math library, value types), not an op a model runs:
	// it names the feature. Such a cell has no realistic workload (benchmarks use its largest
	// conformance case) and no hand-written incumbent.
	Feature string
	// Workload, when not nil, is the cell's benchmark input at a shape of its own variables:
	// how a cell outside the library (a user's package, see Add) gets a realistic benchmark
	// shape that a manifest's expressions and `onesource gate -shape` name. The library's ops
	// have theirs in package conformance; without either, a benchmark runs the cell's largest
	// conformance case.
	Workload *Workload
}

// rowChoices are the rows-per-workgroup values of the cell's space.
func (c Cell) rowChoices() []int {
	out := []int{0}
	for r := 2; r <= c.MaxRows; r *= 2 {
		out = append(out, r)
	}
	return out
}

// maxLanes is the widest workgroup a cell is scheduled on.
const maxLanes = 256

// Schedules returns the cell's schedule space: every power-of-two lane count from 8 up to
// min(W, 256) (256 for a cell without a reduction), in both layouts where a lane holds more than
// one virtual lane, each with every rows-per-workgroup choice up to MaxRows (1, 2, 4, ...).
func (c Cell) Schedules() []Schedule {
	var out []Schedule
	for t := 8; t <= c.maxLanes(); t *= 2 {
		for _, r := range c.rowChoices() {
			out = append(out, Schedule{Lanes: t, Rows: r})
			if c.Width > t {
				out = append(out, Schedule{Lanes: t, Layout: dsl.Strided, Rows: r})
			}
		}
	}
	return out
}

func (c Cell) maxLanes() int {
	if c.Width > 0 {
		return min(c.Width, maxLanes)
	}
	return maxLanes
}

// SampleSchedules returns four schedules of the space spread from the narrowest to the widest
// (8, 32, a wide one, the widest), with both layouts among them where the cell has a reduction:
// what the tests run every cell at.
func (c Cell) SampleSchedules() []Schedule {
	lo, hi := 8, c.maxLanes()
	lanes := []int{lo}
	for _, t := range []int{lo * 4, hi / 2, hi} {
		if t > lanes[len(lanes)-1] && t <= hi {
			lanes = append(lanes, t)
		}
	}
	for t := lo * 2; len(lanes) < 4 && t < hi; t *= 2 { // narrow spaces: fill in the gaps
		if !slices.Contains(lanes, t) {
			lanes = append(lanes, t)
		}
	}
	slices.Sort(lanes)
	rows := c.rowChoices()
	out := make([]Schedule, len(lanes))
	for i, t := range lanes {
		out[i] = Schedule{Lanes: t, Rows: rows[i%len(rows)]}
		if i%2 == 0 && c.Width > t {
			out[i].Layout = dsl.Strided
		}
	}
	return out
}

// Fits reports whether the cell can run at schedule s: a power-of-two lane count up to its
// canonical width (when it has one) and 1024, and a known layout.
func (c Cell) Fits(s Schedule) bool {
	t := s.Lanes
	r := s.RowsPerGroup()
	return t >= 1 && t&(t-1) == 0 && t <= 1024 && (c.Width == 0 || t <= c.Width) &&
		(s.Layout == dsl.Blocked || s.Layout == dsl.Strided) &&
		s.Rows >= 0 && r&(r-1) == 0 && (r == 1 || r <= c.MaxRows)
}

// SubgroupHint is the subgroup size assumed for backend when the device is not known: 32 (a
// CUDA warp; the C-family lowerings use 32 on every target; a Vulkan GPU's is 32 or 64).
func SubgroupHint(backend string) int { return 32 }

// DefaultSchedule is the schedule backend runs the cell at unless told otherwise, on a device
// whose subgroup size is not known (SubgroupHint): DefaultScheduleFor.
func (c Cell) DefaultSchedule(backend string) Schedule {
	return c.DefaultScheduleFor(backend, SubgroupHint(backend))
}

// DefaultScheduleFor is the schedule backend runs the cell at on a device with subgroups of
// subgroup invocations, unless told otherwise: DefaultSubgroups subgroups where the cell sets
// it, else the backend's default lane count; narrowed to the cell's widest (W for a cell with
// a reduction); the blocked layout.
func (c Cell) DefaultScheduleFor(backend string, subgroup int) Schedule {
	s := DefaultSchedule(backend)
	if c.DefaultSubgroups > 0 {
		sg := 1
		for sg < subgroup && sg < maxLanes {
			sg *= 2
		}
		s.Lanes = c.DefaultSubgroups * sg
	}
	s.Lanes = max(min(s.Lanes, c.maxLanes()), 1)
	if backend == "native" && c.MaxRows > 1 {
		// Native CPU code (backends/native) lays a workgroup's invocations on vectors: a vector
		// of adjacent invocations reads adjacent units (strided), and the rows of a workgroup
		// share their activation loads. At 4096x14336 on 2 threads, by the CPU time per thread,
		// against the blocked one-row default: matvec f32 31.4 -> 15.6 ms, q4_0 12.2 -> 6.2,
		// q6_K 14.1 -> 10.4; matvec_q8 q4_0 7.3 -> 3.7, q4_K 5.7 -> 3.6 (onesource bench
		// -backend native; the machine shared, so orders of magnitude).
		s.Rows = c.MaxRows
		if c.Width > s.Lanes {
			s.Layout = dsl.Strided
		}
	}
	return s
}

// Name is "op/type", as in reports and test names.
func (c Cell) Name() string { return c.Op + "/" + c.Type.String() }

var (
	mu    sync.Mutex
	cells = map[string]Cell{}
)

// Register adds a cell of the library from an init function: Add, where an error (a cell
// registered twice, an incomplete cell) is a programming error and panics.
func Register(c Cell) {
	if err := Add(c); err != nil {
		panic(err.Error())
	}
}

// Add adds a cell at run time, as the commands add the cells of a user's package (its `func
// Cells() []kernels.Cell`): an error, not a panic, for a cell that is incomplete (no op, no
// builder or cases, a width that is not a power of two, a workload whose variables are not
// well formed: CheckWorkload) or whose (op, type) is registered already.
func Add(c Cell) error {
	if err := check(c); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := cells[c.Name()]; dup {
		return fmt.Errorf("kernels: cell %s registered twice", c.Name())
	}
	cells[c.Name()] = c
	return nil
}

// check is what Add requires of a cell.
func check(c Cell) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("kernels: cell %s: %s", c.Name(), fmt.Sprintf(format, args...))
	}
	switch {
	case c.Op == "" || strings.ContainsAny(c.Op, "/ \t\n,="):
		return bad("op %q is empty or holds '/', ',', '=' or spaces (cell keys are op/type/backend)", c.Op)
	case c.Type.String() == "" || strings.HasPrefix(c.Type.String(), "type("):
		return bad("type %d is not a GGUF type of package oracle", uint32(c.Type))
	case c.Build == nil:
		return bad("no Build (the twin's builder)")
	case c.Cases == nil:
		return bad("no Cases (the conformance inputs with the oracle's bytes)")
	case c.Width < 0 || c.Width&(c.Width-1) != 0:
		return bad("canonical width %d is not 0 or a power of two", c.Width)
	case c.MaxRows < 0 || c.DefaultSubgroups < 0:
		return bad("negative MaxRows or DefaultSubgroups")
	}
	if c.Workload != nil {
		if err := c.Workload.Check(); err != nil {
			return bad("%v", err)
		}
	}
	return nil
}

// Cells returns every registered cell, sorted by op then type id.
func Cells() []Cell {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Cell, 0, len(cells))
	for _, c := range cells {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Op != out[j].Op {
			return out[i].Op < out[j].Op
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// Lookup returns the cell of op and t.
func Lookup(op string, t oracle.Type) (Cell, bool) {
	mu.Lock()
	defer mu.Unlock()
	c, ok := cells[op+"/"+t.String()]
	return c, ok
}

// SourceHash identifies the source of the cell's twin: the SHA-256 (first 16 bytes, hex) of its
// IR text at a reference schedule (its default for a device of unknown subgroup size). Any change
// to the kernel's code (or to the DSL that builds it) changes the hash; the schedule it runs at
// does not enter. The tuning cache keys its entries by it.
func (c Cell) SourceHash() (string, error) {
	s := c.DefaultScheduleFor("", SubgroupHint(""))
	k, err := c.Build(s).Build()
	if err != nil {
		return "", fmt.Errorf("%s: twin does not build: %w", c.Name(), err)
	}
	sum := sha256.Sum256([]byte(k.String()))
	return hex.EncodeToString(sum[:16]), nil
}

// InSpace reports whether s is one of the cell's schedules (Schedules), or def: what a tuner may
// choose. A schedule that merely Fits (lanes=4, lanes=1) was never measured and may not even
// build a pipeline.
func (c Cell) InSpace(s, def Schedule) bool {
	if s.String() == def.String() {
		return true
	}
	for _, x := range c.Schedules() {
		if x.String() == s.String() {
			return true
		}
	}
	return false
}

// ChooseSchedule is the schedule cell c runs at given a tuning cache and the cell's key in it:
// the cached one when the cache has one for exactly key in the cell's space (InSpace), else def
// (tuning.Cache.Choose says why: a forged or corrupted schedule falls back to the default).
func ChooseSchedule(cache *tuning.Cache, key tuning.Key, c Cell, def Schedule) (s Schedule, tuned bool, why string) {
	text, tuned, why := cache.Choose(key, def.String(), func(text string) bool {
		s, err := ParseSchedule(text)
		return err == nil && c.Fits(s) && c.InSpace(s, def)
	})
	if !tuned {
		return def, false, why
	}
	s, _ = ParseSchedule(text)
	return s, true, why
}

// TuningWarnings lists, one line each, the entries of cache whose cell is a registered cell and
// whose schedule is outside that cell's space (InSpace with the cell's defaults): a forged or
// corrupted cache. ChooseSchedule never serves them (the default does); a command that loads a
// cache prints these when it loads it (LoadTuning).
func TuningWarnings(cache *tuning.Cache) []string {
	if cache == nil {
		return nil
	}
	var out []string
	for _, e := range cache.Entries() {
		op, typ, ok := strings.Cut(e.Cell, "/")
		if !ok {
			continue
		}
		t, err := oracle.ParseType(typ)
		if err != nil {
			continue
		}
		c, ok := Lookup(op, t)
		if !ok {
			continue
		}
		s, err := ParseSchedule(e.Schedule)
		inSpace := err == nil && c.Fits(s)
		if inSpace {
			inSpace = false
			for _, sg := range []int{1, 8, 16, 32, 64, 128} {
				if c.InSpace(s, c.DefaultScheduleFor(e.Backend, sg)) {
					inSpace = true
					break
				}
			}
		}
		if !inSpace {
			out = append(out, fmt.Sprintf("warning: tuning cache %s: %s on %s: schedule %q is outside the cell's schedule space (8 to %d lanes): ignored, the cell runs at its default schedule", cache.Path(), e.Cell, e.Device, e.Schedule, c.maxLanes()))
		}
	}
	return out
}

// LoadTuning loads the tuning cache at path (tuning.Load) and its TuningWarnings.
func LoadTuning(path string) (*tuning.Cache, []string, error) {
	c, err := tuning.Load(path)
	if err != nil {
		return nil, nil, err
	}
	return c, TuningWarnings(c), nil
}
