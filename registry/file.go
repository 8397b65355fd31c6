package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

// FormatName and FormatVersion are the header every registry file starts with.
const (
	FormatName    = "onesource-registry"
	FormatVersion = 2 // 2: the head hash anchors the history; 1 (still read): no head
)

// ErrChanged is returned (wrapped) by Save when the file changed on disk since it was read.
var ErrChanged = errors.New("registry: file changed on disk since it was loaded")

// file is the on-disk form. encoding/json writes struct fields in declaration order, cells are
// sorted by key and evidence by machine, so the output is stable and diffs line by line.
type file struct {
	Format    string  `json:"format"`
	Version   int     `json:"version"`
	Threshold float64 `json:"threshold"`
	Cells     []Cell  `json:"cells"`
	History   []Entry `json:"history"`
	// Head is the hash of the last history entry ("" for none): a truncated history, or an
	// edited last entry, no longer matches it.
	Head string `json:"head"`
}

func entryHash(e Entry) string {
	b, _ := json.Marshal(e)
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:12])
}

// Marshal returns the file form of r: indented JSON, a trailing newline, stable order.
func (r *Registry) Marshal() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.marshal()
}

func (r *Registry) marshal() ([]byte, error) {
	f := file{Format: FormatName, Version: FormatVersion, Threshold: r.threshold, Cells: []Cell{}, History: r.history, Head: headOf(r.history)}
	if f.History == nil {
		f.History = []Entry{}
	}
	for _, k := range r.sortedKeys() {
		f.Cells = append(f.Cells, r.cells[k])
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("registry: encode: %v", err)
	}
	return append(b, '\n'), nil
}

// lineCol turns a byte offset into 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	pre := b[:off]
	line := bytes.Count(pre, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(pre, '\n')
	return line, col
}

// Parse reads a registry from the file form. name is used in errors. It rejects: malformed JSON
// or unknown fields (corrupt, with line and column), a missing or different format name
// (foreign), a newer version, unknown states, duplicate cells, malformed evidence, a broken
// history chain, and any cell claiming dsl without evidence that passes the gate at the file's
// threshold (a hand-edited flip; the error names the cell).
func Parse(name string, b []byte) (*Registry, error) {
	var hdr struct {
		Format  *string `json:"format"`
		Version *int    `json:"version"`
	}
	if err := json.Unmarshal(b, &hdr); err != nil {
		return nil, syntaxErr(name, b, err)
	}
	if hdr.Format == nil || *hdr.Format != FormatName {
		got := "no format field"
		if hdr.Format != nil {
			got = fmt.Sprintf("format %q", *hdr.Format)
		}
		return nil, fmt.Errorf("%s: not a onesource registry (%s, want %q)", name, got, FormatName)
	}
	if hdr.Version == nil || *hdr.Version < 1 {
		return nil, fmt.Errorf("%s: registry has no valid version", name)
	}
	if *hdr.Version > FormatVersion {
		return nil, fmt.Errorf("%s: registry format version %d is newer than this onesource reads (%d): upgrade onesource", name, *hdr.Version, FormatVersion)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, syntaxErr(name, b, err)
	}
	if dec.More() {
		line, col := lineCol(b, dec.InputOffset())
		return nil, fmt.Errorf("%s:%d:%d: corrupt registry: data after the end", name, line, col)
	}
	if !(f.Threshold > 0) || !finite(f.Threshold) {
		return nil, fmt.Errorf("%s: threshold %g must be a positive number", name, f.Threshold)
	}
	r := &Registry{threshold: f.Threshold, cells: map[Key]Cell{}, history: f.History}
	for i, c := range f.Cells {
		where := fmt.Sprintf("%s: cell %d (%s)", name, i, c.Key)
		if err := c.Key.valid(); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		if !c.State.valid() {
			return nil, fmt.Errorf("%s: unknown state %q", where, c.State)
		}
		if _, dup := r.cells[c.Key]; dup {
			return nil, fmt.Errorf("%s: duplicate cell", where)
		}
		seen := map[EvidenceKey]bool{}
		for _, e := range c.Evidence {
			if err := e.check(); err != nil {
				return nil, fmt.Errorf("%s: evidence from %s: %v", where, e.Device, err)
			}
			if seen[e.Key()] {
				return nil, fmt.Errorf("%s: two evidence records from the same machine %v", where, e.Key())
			}
			seen[e.Key()] = true
		}
		if c.State == DSL {
			if _, ok := c.passing(f.Threshold); !ok {
				return nil, fmt.Errorf("%s: state dsl without evidence that passes the gate (bit-exact, incumbent %q benchmarked, median ratio >= %g): a flip must come from `onesource gate`", where, c.Incumbent, f.Threshold)
			}
		}
		if c.Incumbent == "" && (c.State == Hand || c.State == Declined || c.State == DSL) {
			return nil, fmt.Errorf("%s: state %s needs an incumbent", where, c.State)
		}
		c.Evidence = append([]Evidence(nil), c.Evidence...)
		sortEvidence(c.Evidence)
		r.cells[c.Key] = c
	}
	for i, e := range f.History {
		if e.Seq != i+1 {
			return nil, fmt.Errorf("%s: history entry %d has seq %d: the history was edited", name, i+1, e.Seq)
		}
		want := ""
		if i > 0 {
			want = entryHash(f.History[i-1])
		}
		if e.Prev != want {
			return nil, fmt.Errorf("%s: history entry %d does not chain to entry %d: the history was edited", name, e.Seq, i)
		}
	}
	if *hdr.Version >= 2 && f.Head != headOf(f.History) {
		return nil, fmt.Errorf("%s: the history's head hash is %q but its last entry hashes to %q: the history was truncated or its last entry edited", name, f.Head, headOf(f.History))
	}
	r.anchored = *hdr.Version >= 2
	if err := r.checkReplay(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	r.publish()
	return r, nil
}

// headOf is the hash of the last entry of h, "" for an empty history.
func headOf(h []Entry) string {
	if len(h) == 0 {
		return ""
	}
	return entryHash(h[len(h)-1])
}

// replayed is what a history replays to: each cell's state, the action that last set it and
// the threshold in force then, and the threshold.
type replayed struct {
	state     map[Key]State
	action    map[Key]string
	threshold map[Key]float64
	current   float64
}

// replay walks a history: every entry with a key and a To state sets the cell's state; a
// threshold entry sets the threshold (its Threshold field, or, in files written before it had
// one, the new value its reason states: "OLD -> NEW: why").
func replay(h []Entry) (replayed, error) {
	rp := replayed{state: map[Key]State{}, action: map[Key]string{}, threshold: map[Key]float64{}, current: DefaultThreshold}
	for _, e := range h {
		if e.Action == "threshold" {
			t := e.Threshold
			if t == 0 {
				var from float64
				if _, err := fmt.Sscanf(e.Reason, "%g -> %g:", &from, &t); err != nil {
					return rp, fmt.Errorf("history entry %d: a threshold change that does not say the new threshold", e.Seq)
				}
			}
			rp.current = t
			continue
		}
		if e.Key.Op == "" || e.To == "" {
			continue
		}
		rp.state[e.Key] = e.To
		rp.action[e.Key] = e.Action
		rp.threshold[e.Key] = rp.current
	}
	return rp, nil
}

// checkReplay checks that the cells are what the history says, and that each cell's state is
// what its evidence implies: the threshold is the one the history set, every cell is in the
// state its last history entry left it in (and has one), and a cell whose state was last set by
// a gate verdict at today's threshold has the state the policy gives its evidence. (Register,
// revert, keep and merge set a state the evidence alone does not give: a new incumbent, an undone
// flip, a recorded measurement, a merge that does not flip.)
func (r *Registry) checkReplay() error {
	rp, err := replay(r.history)
	if err != nil {
		return err
	}
	if rp.current != r.threshold {
		return fmt.Errorf("threshold %g is not the %g the history sets: change it with onesource gate -threshold, not by editing the file", r.threshold, rp.current)
	}
	for _, k := range r.sortedKeys() {
		c := r.cells[k]
		st, ok := rp.state[k]
		if !ok {
			return fmt.Errorf("cell %s has no history: the file was edited", k)
		}
		if st != c.State {
			return fmt.Errorf("cell %s is %s, but its history leaves it %s: the file was edited", k, c.State, st)
		}
		switch rp.action[k] {
		case string(Flip), string(Decline), string(Fail):
			if rp.threshold[k] == r.threshold {
				if want, why := policy(c.Evidence, c.Incumbent != "", r.threshold); want != c.State {
					return fmt.Errorf("cell %s is %s, but its evidence says %s (%s): the file was edited", k, c.State, want, why)
				}
			}
		}
	}
	for k := range rp.state {
		if _, ok := r.cells[k]; !ok {
			return fmt.Errorf("the history has cell %s, which the file lacks: the file was edited", k)
		}
	}
	return nil
}

// Verify checks the registry as Load does (the history's chain, its anchor, the cells against
// the history and their evidence) and describes the result: "N entries, chained and anchored,
// M cells match the history". A registry read from a format-1 file is chained but not anchored:
// it says so (saving it anchors it).
func (r *Registry) Verify() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.history {
		want := ""
		if i > 0 {
			want = entryHash(r.history[i-1])
		}
		if e.Seq != i+1 || e.Prev != want {
			return "", fmt.Errorf("history entry %d does not chain: the history was edited", i+1)
		}
	}
	if err := r.checkReplay(); err != nil {
		return "", err
	}
	anchor := fmt.Sprintf("anchored at %s", headOf(r.history))
	if !r.anchored {
		anchor = "NOT anchored (a format-1 file: save it with this onesource to anchor it)"
	}
	return fmt.Sprintf("%d history entries, chained, %s; %d cells match the history and their evidence", len(r.history), anchor, len(r.cells)), nil
}

func syntaxErr(name string, b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(b, se.Offset)
		return fmt.Errorf("%s:%d:%d (offset %d): corrupt registry: %v", name, line, col, se.Offset, err)
	case errors.As(err, &te):
		line, col := lineCol(b, te.Offset)
		return fmt.Errorf("%s:%d:%d (offset %d): corrupt registry: %v", name, line, col, te.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: corrupt registry: truncated (%v)", name, err)
	}
	return fmt.Errorf("%s: corrupt registry: %v", name, err)
}

// Load reads the registry file at path; the file must exist. The registry is bound to path, and Save
// later refuses to overwrite the file if it changed on disk in between.
func Load(path string) (*Registry, error) {
	b, bind, err := atomicfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r, err := Parse(path, b)
	if err != nil {
		return nil, err
	}
	r.file = bind
	return r, nil
}

// Open is Load, except that a file that does not exist yields an empty registry bound to path (Save
// then creates it, refusing if someone else created it first).
func Open(path string) (*Registry, error) {
	r, err := Load(path)
	if err == nil {
		return r, nil
	}
	if atomicfile.NotExist(path) {
		r = New()
		r.file.Path = path
		return r, nil
	}
	return nil, err
}

// Path returns the file the registry was read from or last saved to ("" for New and Parse).
func (r *Registry) Path() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.file.Path
}

// Save writes the registry to path ("" means the file it was opened from) atomically: a temporary
// file in the same directory, fsync, rename, fsync of the directory. It refuses (ErrChanged) to
// overwrite a file whose content changed since Load/Open, and refuses to overwrite an existing file
// this registry was not read from. After a successful Save the registry is bound to path.
func (r *Registry) Save(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := r.marshal()
	if err != nil {
		return err
	}
	return r.file.Save(path, data, "registry", ErrChanged)
}

// Conflict explains one disagreement found by Merge. Nothing is dropped: the evidence involved is
// kept (in the cell or in the history) and the conflict is also written to the history.
type Conflict struct {
	Key    Key
	Device string
	Reason string
}

// Merge folds other's cells, evidence and history into r (typically registries written by
// different machines). Thresholds must agree. Evidence is united per machine; when both sides hold
// different evidence from the same machine the newer (by date) is kept in the cell, the other
// stays in the history, and a Conflict says so. The state of each cell is recomputed by the policy
// of Apply over the united evidence, except that merge never flips (a cell is dsl afterwards only
// if it was dsl on one side). Machines that disagree are not in conflict: each machine's cell
// follows its own evidence (SelectOn), and the overall state says whether every machine passes.
// History entries of other that r lacks are appended after r's (r's history stays a prefix).
func (r *Registry) Merge(other *Registry) ([]Conflict, error) {
	if other == r {
		return nil, errors.New("registry: merge with itself")
	}
	other.mu.Lock()
	oth := other.threshold
	ocells := map[Key]Cell{}
	for k, c := range other.cells {
		ocells[k] = c.clone()
	}
	ohist := append([]Entry(nil), other.history...)
	other.mu.Unlock()

	r.mu.Lock()
	defer r.mu.Unlock()
	if oth != r.threshold {
		return nil, fmt.Errorf("registry: merge: thresholds differ (%g here, %g there): set one first", r.threshold, oth)
	}
	// Check everything before changing anything.
	for k, oc := range ocells {
		if c, ok := r.cells[k]; ok && c.Incumbent != "" && oc.Incumbent != "" && c.Incumbent != oc.Incumbent {
			return nil, fmt.Errorf("registry: merge: %s has incumbent %s here and %s there: gate both against one incumbent", k, c.Incumbent, oc.Incumbent)
		}
	}
	// Append the other history's entries we lack (compared without seq/prev).
	have := map[string]bool{}
	for _, e := range r.history {
		have[entryID(e)] = true
	}
	for _, e := range ohist {
		if !have[entryID(e)] {
			have[entryID(e)] = true
			r.appendEntry(e)
		}
	}
	var conflicts []Conflict
	keys := make([]Key, 0, len(ocells))
	for k := range ocells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	for _, k := range keys {
		oc := ocells[k]
		c, ok := r.cells[k]
		if !ok {
			r.cells[k] = oc
			continue
		}
		c = c.clone()
		if c.Incumbent == "" {
			c.Incumbent = oc.Incumbent
		}
		for _, oe := range oc.Evidence {
			found := false
			for i, e := range c.Evidence {
				if e.Key() != oe.Key() {
					continue
				}
				found = true
				if evidenceEqual(e, oe) {
					break
				}
				keep, drop := e, oe
				if oe.Date.After(e.Date) {
					keep, drop = oe, e
				}
				c.Evidence[i] = keep
				cf := Conflict{Key: k, Device: oe.Device, Reason: fmt.Sprintf("two measurements from %s/%s/%s: kept the one of %s, the one of %s stays in the history", oe.Device, oe.Driver, oe.Toolchain, keep.Date.Format(time.RFC3339), drop.Date.Format(time.RFC3339))}
				conflicts = append(conflicts, cf)
				d := drop
				r.appendEntry(Entry{Key: k, Action: "conflict", Reason: cf.Reason, Evidence: &d})
			}
			if !found {
				c.Evidence = append(c.Evidence, oe)
			}
		}
		sortEvidence(c.Evidence)
		from := c.State
		to, why := policy(c.Evidence, c.Incumbent != "", r.threshold)
		wasDSL := c.State == DSL || oc.State == DSL
		if !wasDSL && to == DSL {
			// Merge never flips: the incumbent keeps serving until a gate flips the cell.
			to = c.State
			if oc.State != c.State && (c.State == Missing || c.State == Fallback) {
				to = oc.State
			}
			if to == Missing || to == Fallback || to == DSL {
				to = Hand
			}
		}
		// A dsl side meeting another machine's decline or failure is no conflict: each machine's
		// cell follows its own evidence (SelectOn); the overall state follows the policy.
		if to != from {
			c.State = to
			c.Reason = "merge: " + why
			r.appendEntry(Entry{Key: k, Action: "merge", From: from, To: to, Reason: why})
		}
		r.cells[k] = c
	}
	// The other side's entries were appended after ours: where they leave a cell in another state
	// than the merge gave it, a merge entry records the state, so the history replays to the
	// cells.
	if rp, err := replay(r.history); err == nil {
		for _, k := range r.sortedKeys() {
			if c := r.cells[k]; rp.state[k] != c.State {
				r.appendEntry(Entry{Key: k, Action: "merge", From: rp.state[k], To: c.State, Reason: "the state after the merge"})
			}
		}
	}
	r.appendEntry(Entry{Action: "merge", Reason: fmt.Sprintf("merged %d cells, %d conflicts", len(ocells), len(conflicts))})
	r.publish()
	return conflicts, nil
}

func entryID(e Entry) string {
	e.Seq, e.Prev = 0, ""
	return entryHash(e)
}

func evidenceEqual(a, b Evidence) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
