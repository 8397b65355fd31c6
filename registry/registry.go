// Package registry is the per-(op, type, backend) record of which kernel serves each cell: the
// hand-written incumbent or the DSL twin, and the evidence that decided it.
//
// The contract:
//
//   - A cell is keyed by (op, type, backend) and is in one of the states missing, hand, dsl,
//     declined, fallback or failing (see State).
//   - The only way a cell becomes dsl is Apply with a GateResult whose Evidence passes the gate: the
//     twin is bit-exact against the oracle and the median twin/incumbent throughput ratio is at
//     least the registry's threshold (0.97 by default). A bit-exact twin that is slower is
//     declined (the incumbent keeps serving, the twin is kept as a fallback); a twin that is not
//     bit-exact is failing and never serves; a bit-exact twin with no incumbent serves by coverage
//     as fallback.
//   - A flip is never undone silently: evidence from a machine that would demote a dsl cell it
//     passed on is refused by Apply (a *DowngradeError) until Revert is called with a reason.
//     Another machine's decline or failure is that machine's verdict: recorded, the overall state
//     follows the policy (dsl only when every machine passes), and SelectOn keeps serving the twin
//     on the machines that passed. Merge reports two different measurements from one machine as a
//     Conflict.
//   - Evidence is keyed by (device, driver, toolchain), so registries written on several machines
//     merge without losing any evidence.
//   - Every registration, gate verdict, revert and merge is appended to a hash-chained history that
//     is never rewritten. The cells are the replay of the history (see replay): Load refuses a
//     file whose cells differ from it in any field of any evidence record, and a version-1 file
//     with a history (Migrate converts one). Entries may be signed with ed25519, and a trust file
//     then decides which flips load (see sign.go).
//   - Select answers which kernel serves a cell from an immutable snapshot: cheap and safe for
//     concurrent use with writers. The cell's state is over every machine's evidence (a report's
//     view); SelectOn answers for one machine from its own evidence, so a verdict on one device
//     never decides another device's cell (what a program serving calls uses).
//   - The file is indented JSON with a format name and version header and a stable order (see
//     Save); Load rejects corrupt, foreign, newer-format and hand-edited files, and Save is atomic
//     and never overwrites a file that changed on disk since it was read.
package registry

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

// DefaultThreshold is the minimum median twin/incumbent throughput ratio for a flip, unless the
// registry sets another with SetThreshold.
const DefaultThreshold = 0.97

// Key names a cell.
type Key struct {
	Op      string `json:"op"`
	Type    string `json:"type"`
	Backend string `json:"backend"`
}

// String returns "op/type/backend".
func (k Key) String() string { return k.Op + "/" + k.Type + "/" + k.Backend }

func (k Key) valid() error {
	if k.Op == "" || k.Type == "" || k.Backend == "" {
		return fmt.Errorf("registry: key %q: op, type and backend must all be set", k.String())
	}
	return nil
}

func keyLess(a, b Key) bool {
	if a.Op != b.Op {
		return a.Op < b.Op
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.Backend < b.Backend
}

// State is a cell's state.
type State string

// The cell states.
const (
	// Missing: no kernel serves this cell.
	Missing State = "missing"
	// Hand: the hand-written incumbent serves; the twin has not been gated (or was reverted).
	Hand State = "hand"
	// DSL: flipped; the twin serves, with passing evidence.
	DSL State = "dsl"
	// Declined: the twin is bit-exact but slower; the incumbent serves, the twin is kept as fallback.
	Declined State = "declined"
	// Fallback: no incumbent here; the bit-exact twin serves by coverage.
	Fallback State = "fallback"
	// Failing: the twin is not bit-exact; it never serves.
	Failing State = "failing"
)

func (s State) valid() bool {
	switch s {
	case Missing, Hand, DSL, Declined, Fallback, Failing:
		return true
	}
	return false
}

// Spread summarizes the per-pair twin/incumbent throughput ratios of an interleaved benchmark.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Pairs  int     `json:"pairs"`
}

// SpreadOf returns the median, minimum and maximum of ratios (one per A/B pair).
func SpreadOf(ratios []float64) Spread {
	if len(ratios) == 0 {
		return Spread{}
	}
	s := append([]float64(nil), ratios...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[n-1], Pairs: n}
}

// Evidence is one gate measurement of a cell on one machine. IncumbentHash empty and
// IncumbentGBps zero mean the cell has no incumbent (the twin can only serve as fallback).
type Evidence struct {
	Device    string `json:"device"`
	Driver    string `json:"driver"`
	Toolchain string `json:"toolchain"`
	// BitExact and MaxULP are the oracle verdict; Cases is how many conformance cases ran.
	BitExact bool    `json:"bitexact"`
	MaxULP   float64 `json:"max_ulp"`
	Cases    int     `json:"cases,omitempty"`
	// TwinGBps and IncumbentGBps are kernel-only throughputs; RooflineGBps is the device's copy
	// bandwidth when measured (0 when not).
	TwinGBps      float64 `json:"twin_gbps"`
	IncumbentGBps float64 `json:"incumbent_gbps"`
	RooflineGBps  float64 `json:"roofline_gbps,omitempty"`
	// Ratio is twin/incumbent over the interleaved pairs.
	Ratio Spread `json:"ratio"`
	// Threshold is the threshold the gate used; informational (the registry's own threshold decides).
	Threshold float64 `json:"threshold,omitempty"`
	// IncumbentErr is the incumbent's output against the oracle's at the benchmark shape: the
	// norm of the difference over the norm of the oracle's output (0 when exact), and
	// IncumbentMaxULP its largest distance in ULP. IncumbentWrong says the error is beyond the
	// gate's tolerance: the incumbent computes something else (zeros, the wrong buffers), and a
	// bit-exact twin flips on correctness, whatever the speeds.
	IncumbentErr    float64   `json:"incumbent_err,omitempty"`
	IncumbentMaxULP float64   `json:"incumbent_max_ulp,omitempty"`
	IncumbentWrong  bool      `json:"incumbent_wrong,omitempty"`
	TwinHash        string    `json:"twin_hash"`
	IncumbentHash   string    `json:"incumbent_hash,omitempty"`
	Date            time.Time `json:"date"`
	// Seed is the gate's base seed: its seeded inputs (the A/B's second input set, the extra
	// checks) are made from it, so a failure replays (onesource gate -seed SEED).
	Seed int64 `json:"seed,omitempty"`
	// Checks are the gate's correctness checks beyond the conformance cases: seeded extra shapes
	// (each shape names its seed).
	Checks []Check `json:"checks,omitempty"`
	// Findings says what the gate caught in the A/B runs: a side whose timed run's outputs were
	// not what it computed on those inputs (skipped or cached work), or whose second run on the
	// same inputs gave other bytes. A twin finding makes the evidence not bit-exact; an
	// incumbent finding makes the incumbent wrong.
	Findings []string `json:"findings,omitempty"`
}

// Check is one of the gate's extra correctness checks: the shape (with the seed of its inputs,
// and specials=1 where the activations hold NaN, infinities and subnormals) and what each side
// gave there ("exact", "differs: ...", "err 1.2e-07", "not run: ...").
type Check struct {
	Shape     string `json:"shape"`
	Twin      string `json:"twin"`
	Incumbent string `json:"incumbent,omitempty"`
}

// EvidenceKey identifies the machine an Evidence came from: evidence for a cell is kept per
// EvidenceKey, the newest replacing an older one from the same machine.
type EvidenceKey struct {
	Device, Driver, Toolchain string
}

// Key returns the machine key of e.
func (e Evidence) Key() EvidenceKey { return EvidenceKey{e.Device, e.Driver, e.Toolchain} }

// HasIncumbent reports whether e measured an incumbent.
func (e Evidence) HasIncumbent() bool { return e.IncumbentHash != "" || e.IncumbentGBps != 0 }

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// check reports whether e is well formed (not whether it passes).
func (e Evidence) check() error {
	switch {
	case e.Device == "":
		return errors.New("evidence has no device")
	case e.TwinHash == "":
		return errors.New("evidence has no twin hash")
	case e.Date.IsZero():
		return errors.New("evidence has no date")
	case !finite(e.MaxULP, e.TwinGBps, e.IncumbentGBps, e.RooflineGBps, e.Ratio.Median, e.Ratio.Min, e.Ratio.Max, e.Threshold, e.IncumbentErr, e.IncumbentMaxULP):
		return errors.New("evidence has a NaN or infinite number (clamp max_ulp before recording)")
	case e.MaxULP < 0 || e.TwinGBps < 0 || e.IncumbentGBps < 0 || e.RooflineGBps < 0 || e.Ratio.Pairs < 0 || e.IncumbentErr < 0 || e.IncumbentMaxULP < 0:
		return errors.New("evidence has a negative measurement")
	case e.IncumbentWrong && !e.HasIncumbent():
		return errors.New("evidence says the incumbent is wrong but measured no incumbent")
	}
	if e.HasIncumbent() && e.BitExact {
		switch {
		case e.IncumbentHash == "":
			return errors.New("evidence measured an incumbent but has no incumbent hash")
		case e.Ratio.Pairs == 0 || e.TwinGBps == 0 || e.IncumbentGBps == 0:
			return errors.New("evidence has an incumbent but no benchmark (pairs, twin and incumbent GB/s)")
		case e.Ratio.Min > e.Ratio.Median || e.Ratio.Median > e.Ratio.Max:
			return fmt.Errorf("evidence ratio spread is inconsistent: min %g, median %g, max %g", e.Ratio.Min, e.Ratio.Median, e.Ratio.Max)
		}
	}
	return nil
}

// finding returns the first of e's findings about the side prefix names ("twin: ", "incumbent: "),
// without the prefix ("" when none).
func (e Evidence) finding(prefix string) string {
	for _, f := range e.Findings {
		if rest, ok := strings.CutPrefix(f, prefix); ok {
			return rest
		}
	}
	return ""
}

// Verdict is a gate's decision for one cell.
type Verdict string

// The verdicts.
const (
	// Flip: bit-exact and fast enough (or bit-exact with no incumbent: the cell becomes fallback).
	Flip Verdict = "flip"
	// Decline: bit-exact but slower than the threshold allows.
	Decline Verdict = "decline"
	// Fail: not bit-exact.
	Fail Verdict = "fail"
	// Keep: record the evidence, leave the state as it is.
	Keep Verdict = "keep"
)

// Judge returns the verdict that evidence e implies at threshold, with a one-line reason.
func Judge(e Evidence, threshold float64) (Verdict, string) {
	switch {
	case !e.BitExact && e.finding("twin: ") != "":
		return Fail, fmt.Sprintf("not bit-exact on %s: %s", e.Device, e.finding("twin: "))
	case !e.BitExact:
		return Fail, fmt.Sprintf("not bit-exact on %s (max %g ULP)", e.Device, e.MaxULP)
	case !e.HasIncumbent():
		return Flip, fmt.Sprintf("bit-exact on %s, no incumbent: serves by coverage", e.Device)
	case e.IncumbentWrong && e.finding("incumbent: ") != "":
		return Flip, fmt.Sprintf("bit-exact on %s; the incumbent is wrong (%s): flipped on correctness", e.Device, e.finding("incumbent: "))
	case e.IncumbentWrong:
		return Flip, fmt.Sprintf("bit-exact on %s; the incumbent is wrong (error %.3g against the oracle, %g ULP): flipped on correctness", e.Device, e.IncumbentErr, e.IncumbentMaxULP)
	case e.Ratio.Median >= threshold:
		return Flip, fmt.Sprintf("bit-exact on %s, median ratio %.3f >= %.3f over %d pairs", e.Device, e.Ratio.Median, threshold, e.Ratio.Pairs)
	}
	return Decline, fmt.Sprintf("bit-exact on %s but median ratio %.3f < %.3f over %d pairs", e.Device, e.Ratio.Median, threshold, e.Ratio.Pairs)
}

// GateResult is what a gate run hands the registry for one cell. It is the only way a cell becomes
// dsl (see Registry.Apply).
type GateResult struct {
	Key      Key
	Evidence Evidence
	Verdict  Verdict
	Reason   string
}

// Cell is one cell's record. Evidence is sorted by machine (device, driver, toolchain).
type Cell struct {
	Key
	State State `json:"state"`
	// Incumbent is the hash of the hand-written kernel registered for this cell ("" when none).
	Incumbent string     `json:"incumbent,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Evidence  []Evidence `json:"evidence,omitempty"`
}

func (c Cell) clone() Cell {
	c.Evidence = append([]Evidence(nil), c.Evidence...)
	return c
}

// passing returns the first evidence that passes the gate for a flip to dsl at threshold.
func (c Cell) passing(threshold float64) (Evidence, bool) {
	for _, e := range c.Evidence {
		if e.check() != nil || !e.HasIncumbent() {
			continue
		}
		if v, _ := Judge(e, threshold); v == Flip && (c.Incumbent == "" || e.IncumbentHash == c.Incumbent) {
			return e, true
		}
	}
	return Evidence{}, false
}

// policy returns the state that evidence es implies for a cell with or without an incumbent.
func policy(es []Evidence, hasIncumbent bool, threshold float64) (State, string) {
	if len(es) == 0 {
		if hasIncumbent {
			return Hand, "no evidence"
		}
		return Missing, "no evidence"
	}
	var declined string
	for _, e := range es {
		v, why := Judge(e, threshold)
		if v == Fail {
			return Failing, why
		}
		if v == Decline && declined == "" {
			declined = why
		}
	}
	if !hasIncumbent {
		return Fallback, "bit-exact on every device with evidence, no incumbent: serves by coverage"
	}
	if declined != "" {
		return Declined, declined
	}
	return DSL, fmt.Sprintf("bit-exact and median ratio >= %.3f on every device with evidence", threshold)
}

// Impl says which implementation serves a cell.
type Impl string

// The implementations.
const (
	None      Impl = "none"
	Twin      Impl = "twin"
	Incumbent Impl = "hand"
)

// Choice is Select's answer.
type Choice struct {
	Impl  Impl
	State State
	// TwinHash and IncumbentHash identify the code that was gated ("" when unknown).
	TwinHash, IncumbentHash string
}

func choiceOf(c Cell) Choice {
	ch := Choice{State: c.State, IncumbentHash: c.Incumbent}
	for _, e := range c.Evidence {
		if e.BitExact {
			ch.TwinHash = e.TwinHash
			break
		}
	}
	switch c.State {
	case DSL, Fallback:
		ch.Impl = Twin
	case Hand, Declined:
		ch.Impl = Incumbent
	case Failing:
		ch.Impl = None
		if c.Incumbent != "" {
			ch.Impl = Incumbent
		}
	default:
		ch.Impl = None
	}
	return ch
}

// Entry is one history record. Prev is the hash of the previous entry (the chain makes an edit of
// the history detectable on Load). The cells are what the history replays to (see Parse), so
// every field of every evidence record is covered by the chain.
type Entry struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	Key
	// Action is register, flip, decline, fail, keep, revert, threshold, merge or conflict.
	Action   string    `json:"action"`
	From     State     `json:"from,omitempty"`
	To       State     `json:"to,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
	// Incumbent is the incumbent hash a register entry records (format 3; before, only its
	// reason said it: "... (incumbent HASH)").
	Incumbent string `json:"incumbent,omitempty"`
	// Kept is, in a conflict entry, the evidence the merge kept in the cell (Evidence is the one
	// it dropped); format 3.
	Kept *Evidence `json:"kept,omitempty"`
	// Threshold is the new threshold of a threshold entry.
	Threshold float64 `json:"threshold,omitempty"`
	// Sig is the entry's ed25519 signature by the key that wrote it (gate -sign), over the entry
	// without Seq, Prev and Sig (so it survives a merge into another history); nil when unsigned.
	Sig  *Signature `json:"sig,omitempty"`
	Prev string     `json:"prev"`
}

// DowngradeError is Apply's refusal to move a dsl cell to another state: call Revert first.
type DowngradeError struct {
	Key    Key
	To     State
	Reason string
}

// Error implements error.
func (e *DowngradeError) Error() string {
	return fmt.Sprintf("registry: %s is dsl; evidence would make it %s (%s): a flip is undone only by Revert", e.Key, e.To, e.Reason)
}

// Registry is the set of cells, the threshold and the history. Its methods are safe for concurrent
// use; Select never blocks on writers.
type Registry struct {
	mu        sync.Mutex
	threshold float64
	cells     map[Key]Cell
	history   []Entry
	snap      atomic.Pointer[snapshot]

	// file is the file this registry was read from (or will be created as) and the sha256 of its
	// content then ("" when it did not exist).
	file atomicfile.Binding
	// signer, when set, signs every entry this registry appends (SetSigner).
	signer *signer
	// Now returns the time recorded in history entries (time.Now when nil); for tests.
	Now func() time.Time
}

// New returns an empty registry with the default threshold.
func New() *Registry {
	r := &Registry{threshold: DefaultThreshold, cells: map[Key]Cell{}}
	r.publish()
	return r
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

// snapshot is what Select and SelectOn read: every cell's choice and a copy of the cell.
type snapshot struct {
	threshold float64
	cells     map[Key]snapCell
}

type snapCell struct {
	choice Choice
	cell   Cell
}

// publish rebuilds the Select snapshot; r.mu is held (or r is not yet shared).
func (r *Registry) publish() {
	s := &snapshot{threshold: r.threshold, cells: make(map[Key]snapCell, len(r.cells))}
	for k, c := range r.cells {
		s.cells[k] = snapCell{choiceOf(c), c.clone()}
	}
	r.snap.Store(s)
}

// Select returns which implementation serves (op, typ, backend), by the cell's state over the
// evidence of every machine. It reads an immutable snapshot: cheap, lock-free and safe for
// concurrent use with Apply, Revert and Merge. An unknown cell is {None, Missing}.
func (r *Registry) Select(op, typ, backend string) Choice {
	if c, ok := r.snap.Load().cells[Key{op, typ, backend}]; ok {
		return c.choice
	}
	return Choice{Impl: None, State: Missing}
}

// SelectOn is Select for one machine (device and driver, as evidence names them): the state
// the policy gives over that machine's evidence alone, so a cell's verdict on one device never
// decides another device's. A machine without evidence of its own gets the cell's incumbent
// when it has one (state hand), else nothing (state missing: the twin serves only by a caller's
// default). A dsl cell stays dsl on a machine whose evidence passes; a reverted cell (hand with
// evidence) is hand on every machine.
func (r *Registry) SelectOn(op, typ, backend, device, driver string) Choice {
	s := r.snap.Load()
	c, ok := s.cells[Key{op, typ, backend}]
	if !ok {
		return Choice{Impl: None, State: Missing}
	}
	if c.cell.State == Hand && len(c.cell.Evidence) > 0 {
		return c.choice // reverted: the policy over evidence never gives hand
	}
	mine := Cell{Key: c.cell.Key, Incumbent: c.cell.Incumbent}
	for _, e := range c.cell.Evidence {
		if e.Device == device && e.Driver == driver {
			mine.Evidence = append(mine.Evidence, e)
		}
	}
	mine.State, mine.Reason = policy(mine.Evidence, mine.Incumbent != "", s.threshold)
	return choiceOf(mine)
}

// Threshold returns the registry's flip threshold.
func (r *Registry) Threshold() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.threshold
}

// SetThreshold changes the flip threshold. It refuses a threshold under which a dsl cell would no
// longer have passing evidence (Revert those first).
func (r *Registry) SetThreshold(t float64, reason string) error {
	if !(t > 0) || !finite(t) {
		return fmt.Errorf("registry: threshold %g must be a positive number", t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.sortedKeys() {
		c := r.cells[k]
		if _, ok := c.passing(t); c.State == DSL && !ok {
			return fmt.Errorf("registry: threshold %g: dsl cell %s has no evidence passing it; Revert it first", t, k)
		}
	}
	r.appendEntry(Entry{Action: "threshold", Threshold: t, Reason: fmt.Sprintf("%g -> %g: %s", r.threshold, t, reason)})
	r.threshold = t
	return nil
}

func (r *Registry) sortedKeys() []Key {
	ks := make([]Key, 0, len(r.cells))
	for k := range r.cells {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return keyLess(ks[i], ks[j]) })
	return ks
}

// Cell returns a copy of the cell for k.
func (r *Registry) Cell(k Key) (Cell, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cells[k]
	return c.clone(), ok
}

// Cells returns copies of all cells in key order.
func (r *Registry) Cells() []Cell {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Cell, 0, len(r.cells))
	for _, k := range r.sortedKeys() {
		out = append(out, r.cells[k].clone())
	}
	return out
}

// History returns a copy of the history, oldest first.
func (r *Registry) History() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.history...)
}

// appendEntry stamps e with the next sequence number, the time and the chain hash; r.mu is held.
func (r *Registry) appendEntry(e Entry) {
	e.Seq = len(r.history) + 1
	if e.Time.IsZero() {
		e.Time = r.now()
	}
	e.Prev = ""
	if n := len(r.history); n > 0 {
		e.Prev = entryHash(r.history[n-1])
	}
	if r.signer != nil {
		e.Sig = r.signer.sign(e)
	}
	r.history = append(r.history, e)
}

// Register records that a hand-written incumbent with hash incumbent ("" for none) exists for k.
// A new cell starts hand (or missing without an incumbent); a missing or fallback cell with a new
// incumbent becomes hand (its twin must be gated against it); other states are kept.
func (r *Registry) Register(k Key, incumbent, reason string) error {
	if err := k.valid(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cells[k]
	if ok && c.Incumbent == incumbent {
		return nil
	}
	if ok && c.Incumbent != "" && c.State == DSL {
		return fmt.Errorf("registry: %s is dsl against incumbent %s; Revert before registering another", k, c.Incumbent)
	}
	from := c.State
	if !ok {
		c = Cell{Key: k, State: Missing}
		from = ""
	}
	c.Incumbent = incumbent
	if incumbent != "" && (c.State == Missing || c.State == Fallback) {
		c.State = Hand
	}
	c.Reason = reason
	r.cells[k] = c
	r.appendEntry(Entry{Key: k, Action: "register", From: from, To: c.State, Reason: reason + " (incumbent " + incumbent + ")", Incumbent: incumbent})
	r.publish()
	return nil
}

// Apply records a gate result. The evidence must be well formed and must imply g.Verdict (see
// Judge at the registry's threshold), except for Keep, which records the evidence and leaves the
// state alone. The evidence replaces any older evidence from the same machine; the new state is
// then the policy over all of the cell's evidence: failing if any machine saw the twin not
// bit-exact, fallback when there is no incumbent, dsl when every machine passes, declined
// otherwise. A machine's own flip is never undone by its own later evidence: when the cell is
// dsl and the evidence replaces passing evidence of the same machine with evidence that does not
// pass, Apply returns a *DowngradeError and changes nothing (Revert first). Evidence from another
// machine is that machine's verdict (SelectOn): it is recorded, and the cell's overall state
// follows the policy. An unknown cell is created (with the evidence's incumbent). The result is
// in Cell(g.Key).
func (r *Registry) Apply(g GateResult) error {
	if err := g.Key.valid(); err != nil {
		return err
	}
	e := g.Evidence
	if err := e.check(); err != nil {
		return fmt.Errorf("registry: %s: %v", g.Key, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	implied, why := Judge(e, r.threshold)
	switch g.Verdict {
	case Flip, Decline, Fail:
		if g.Verdict != implied {
			return fmt.Errorf("registry: %s: verdict %s does not follow from the evidence, which says %s: %s", g.Key, g.Verdict, implied, why)
		}
	case Keep:
	default:
		return fmt.Errorf("registry: %s: unknown verdict %q", g.Key, g.Verdict)
	}
	c, ok := r.cells[g.Key]
	if !ok {
		c = Cell{Key: g.Key, State: Missing, Incumbent: e.IncumbentHash}
	}
	c = c.clone()
	if c.Incumbent == "" && e.IncumbentHash != "" {
		c.Incumbent = e.IncumbentHash
	}
	if e.HasIncumbent() && e.IncumbentHash != c.Incumbent {
		return fmt.Errorf("registry: %s: evidence measured incumbent %s, the registry has %s", g.Key, e.IncumbentHash, c.Incumbent)
	}
	if c.Incumbent != "" && !e.HasIncumbent() && e.BitExact && g.Verdict != Keep {
		return fmt.Errorf("registry: %s: the cell has incumbent %s but the evidence did not benchmark it", g.Key, c.Incumbent)
	}
	replaced, regressed := false, false
	for i := range c.Evidence {
		if c.Evidence[i].Key() == e.Key() {
			if v, _ := Judge(c.Evidence[i], r.threshold); v == Flip && c.Evidence[i].HasIncumbent() {
				if nv, _ := Judge(e, r.threshold); nv != Flip {
					regressed = true
				}
			}
			c.Evidence[i] = e
			replaced = true
		}
	}
	if !replaced {
		c.Evidence = append(c.Evidence, e)
		sortEvidence(c.Evidence)
	}
	from := c.State
	to, reason := from, g.Reason
	if g.Verdict != Keep {
		var pwhy string
		to, pwhy = policy(c.Evidence, c.Incumbent != "", r.threshold)
		if from == DSL && to != DSL && regressed {
			return &DowngradeError{Key: g.Key, To: to, Reason: pwhy}
		}
		if reason == "" {
			reason = pwhy
		} else {
			reason += "; " + pwhy
		}
	}
	if reason == "" {
		reason = why
	}
	c.State = to
	c.Reason = reason
	r.cells[g.Key] = c
	ev := e
	r.appendEntry(Entry{Key: g.Key, Action: string(g.Verdict), From: from, To: to, Reason: reason, Evidence: &ev})
	r.publish()
	return nil
}

// Revert undoes a flip: the dsl cell k goes back to hand (its incumbent serves again). Its
// evidence is kept; only a later Apply can flip it again.
func (r *Registry) Revert(k Key, reason string) error {
	if reason == "" {
		return fmt.Errorf("registry: revert %s: a reason is required", k)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cells[k]
	if !ok || c.State != DSL {
		return fmt.Errorf("registry: revert %s: cell is not dsl (state %q)", k, c.State)
	}
	c.State = Hand
	c.Reason = "reverted: " + reason
	r.cells[k] = c
	r.appendEntry(Entry{Key: k, Action: "revert", From: DSL, To: Hand, Reason: reason})
	r.publish()
	return nil
}

func sortEvidence(es []Evidence) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Key(), es[j].Key()
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		if a.Driver != b.Driver {
			return a.Driver < b.Driver
		}
		return a.Toolchain < b.Toolchain
	})
}
