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
	"strings"
	"time"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

// FormatName and FormatVersion are the header every registry file starts with.
//
// Versions: 1 had no head; 2 anchored the history with the head hash; 3 adds the register
// entry's incumbent, a conflict's kept evidence and signatures. A version-2 file is read with
// every check of version 3 (its cells are the replay of its history); a version-1 file only
// without a history (a version-1 file with a history could hide a dropped tail: Migrate
// converts one on purpose, saying what it cannot check). A file is saved at FormatVersion.
const (
	FormatName    = "onesource-registry"
	FormatVersion = 3
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
// (foreign), a newer version, a version-1 file with a history, unknown states, duplicate cells,
// malformed evidence, a broken history chain or head, a signed entry whose signature does not
// verify, cells that are not exactly what the history replays to (state, incumbent and every
// field of every evidence record, in order; see replay), and any cell claiming dsl without
// evidence that passes the gate at the file's threshold (a hand-edited flip; the error names
// the cell).
func Parse(name string, b []byte) (*Registry, error) {
	return parse(name, b, false)
}

// parse is Parse; legacy accepts a version-1 file with a history (Migrate).
func parse(name string, b []byte, legacy bool) (*Registry, error) {
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
	if *hdr.Version < 3 {
		for _, e := range f.History {
			if e.Sig != nil || e.Kept != nil || e.Incumbent != "" {
				return nil, fmt.Errorf("%s: history entry %d has fields of format 3 in a format-%d file: the file was downgraded", name, e.Seq, *hdr.Version)
			}
		}
	}
	if err := checkChain(f.History); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	switch {
	case *hdr.Version >= 2 && f.Head != headOf(f.History):
		return nil, fmt.Errorf("%s: the history's head hash is %q but its last entry hashes to %q: the history was truncated or its last entry edited", name, f.Head, headOf(f.History))
	case *hdr.Version == 1 && len(f.History) > 0 && !legacy:
		return nil, fmt.Errorf("%s: a format-1 registry with a history has no head hash, so a dropped tail would not show: refused (`onesource cells -migrate` converts it, saying what it cannot check)", name)
	}
	if err := r.checkReplay(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	r.publish()
	return r, nil
}

// checkChain checks that h is numbered 1, 2, ..., that each entry chains to the one before, and
// that every signed entry's signature verifies.
func checkChain(h []Entry) error {
	for i, e := range h {
		if e.Seq != i+1 {
			return fmt.Errorf("history entry %d has seq %d: the history was edited", i+1, e.Seq)
		}
		want := ""
		if i > 0 {
			want = entryHash(h[i-1])
		}
		if e.Prev != want {
			return fmt.Errorf("history entry %d does not chain to entry %d: the history was edited", e.Seq, i)
		}
		if e.Sig != nil {
			if err := verifySig(e); err != nil {
				return fmt.Errorf("history entry %d (%s %s): %v", e.Seq, e.Action, e.Key, err)
			}
		}
	}
	return nil
}

// headOf is the hash of the last entry of h, "" for an empty history.
func headOf(h []Entry) string {
	if len(h) == 0 {
		return ""
	}
	return entryHash(h[len(h)-1])
}

// replayed is what a history replays to: every cell (state, incumbent, evidence; not its
// reason, a note), the action that last set each cell's state and the threshold in force then,
// and the threshold.
type replayed struct {
	cells     map[Key]Cell
	action    map[Key]string
	threshold map[Key]float64
	current   float64
}

// registerIncumbent is the incumbent a register entry records: its Incumbent field, or in files
// written before it had one, what its reason ends with, "(incumbent HASH)".
func registerIncumbent(e Entry) string {
	if e.Incumbent != "" {
		return e.Incumbent
	}
	const tag = " (incumbent "
	if i := strings.LastIndex(e.Reason, tag); i >= 0 && strings.HasSuffix(e.Reason, ")") {
		return e.Reason[i+len(tag) : len(e.Reason)-1]
	}
	return ""
}

// replay walks a history doing to the cells what each entry records, as the method that wrote
// it did: register sets the cell's incumbent and state; a gate verdict (flip, decline, fail,
// keep) puts its evidence in the cell (replacing the same machine's, else added in machine
// order; a new cell takes the evidence's incumbent) and sets the state; revert and merge set
// the state; a conflict puts back the evidence the merge kept (format 3: the entry's Kept;
// before, the newest by date of the two measurements, the rule Merge kept them by); a
// threshold entry sets the threshold (its Threshold field, or, in files written before it had
// one, the new value its reason states: "OLD -> NEW: why").
func replay(h []Entry) (replayed, error) {
	rp := replayed{cells: map[Key]Cell{}, action: map[Key]string{}, threshold: map[Key]float64{}, current: DefaultThreshold}
	// seen keeps, per cell and machine, every evidence recorded (for conflicts of files without
	// Kept).
	seen := map[Key]map[EvidenceKey][]Evidence{}
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
		if e.Key.Op == "" {
			continue
		}
		c, ok := rp.cells[e.Key]
		if !ok {
			c = Cell{Key: e.Key, State: Missing}
			if e.Evidence != nil && e.Action != "conflict" {
				c.Incumbent = e.Evidence.IncumbentHash
			}
		}
		c = c.clone()
		switch e.Action {
		case "register":
			c.Incumbent = registerIncumbent(e)
		case string(Flip), string(Decline), string(Fail), string(Keep):
			if e.Evidence == nil {
				return rp, fmt.Errorf("history entry %d: a %s of %s without evidence", e.Seq, e.Action, e.Key)
			}
			ev := *e.Evidence
			if c.Incumbent == "" && ev.IncumbentHash != "" {
				c.Incumbent = ev.IncumbentHash
			}
			putEvidence(&c, ev)
			if seen[e.Key] == nil {
				seen[e.Key] = map[EvidenceKey][]Evidence{}
			}
			seen[e.Key][ev.Key()] = append(seen[e.Key][ev.Key()], ev)
		case "conflict":
			if e.Evidence == nil {
				return rp, fmt.Errorf("history entry %d: a conflict of %s without evidence", e.Seq, e.Key)
			}
			if e.Kept != nil {
				putEvidence(&c, *e.Kept)
				break
			}
			drop := *e.Evidence
			var keep *Evidence
			for _, x := range seen[e.Key][drop.Key()] {
				if !evidenceEqual(x, drop) && (keep == nil || x.Date.After(keep.Date)) {
					keep = &x
				}
			}
			if keep != nil {
				putEvidence(&c, *keep)
			}
		}
		if e.To != "" {
			c.State = e.To
			rp.action[e.Key] = e.Action
			rp.threshold[e.Key] = rp.current
		}
		rp.cells[e.Key] = c
	}
	return rp, nil
}

// putEvidence puts ev in c: in place of the same machine's, else added in machine order.
func putEvidence(c *Cell, ev Evidence) {
	for i := range c.Evidence {
		if c.Evidence[i].Key() == ev.Key() {
			c.Evidence[i] = ev
			return
		}
	}
	c.Evidence = append(c.Evidence, ev)
	sortEvidence(c.Evidence)
}

// checkReplay checks that the cells are exactly what the history replays to (replay): the same
// cells, each in the state, with the incumbent, and holding every field of every evidence record
// (in order) that its history gives it, and the threshold the history set; and that a cell whose
// state was last set by a gate verdict at today's threshold has the state the policy gives its
// evidence. (Register, revert, keep and merge set a state the evidence alone does not give: a new
// incumbent, an undone flip, a recorded measurement, a merge that does not flip.)
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
		h, ok := rp.cells[k]
		switch {
		case !ok || rp.action[k] == "":
			return fmt.Errorf("cell %s has no history: the file was edited", k)
		case h.State != c.State:
			return fmt.Errorf("cell %s is %s, but its history leaves it %s: the file was edited", k, c.State, h.State)
		case h.Incumbent != c.Incumbent:
			return fmt.Errorf("cell %s has incumbent %q, but its history gives it %q: the file was edited", k, c.Incumbent, h.Incumbent)
		}
		if d := evidenceDiff(c.Evidence, h.Evidence); d != "" {
			return fmt.Errorf("cell %s: its evidence is not what its history recorded (%s): the file was edited", k, d)
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
	for k := range rp.cells {
		if _, ok := r.cells[k]; !ok {
			return fmt.Errorf("the history has cell %s, which the file lacks: the file was edited", k)
		}
	}
	return nil
}

// evidenceDiff says how the evidence records got differ from want ("" when every field of every
// record is equal, in the same order).
func evidenceDiff(got, want []Evidence) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d records, the history %d", len(got), len(want))
	}
	for i := range got {
		if evidenceEqual(got[i], want[i]) {
			continue
		}
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		var gm, wm map[string]any
		json.Unmarshal(g, &gm)
		json.Unmarshal(w, &wm)
		var fields []string
		for k := range gm {
			if fmt.Sprint(gm[k]) != fmt.Sprint(wm[k]) {
				fields = append(fields, k)
			}
		}
		for k := range wm {
			if _, ok := gm[k]; !ok {
				fields = append(fields, k)
			}
		}
		sort.Strings(fields)
		return fmt.Sprintf("record %d, from %s: %s differ", i+1, got[i].Device, strings.Join(fields, ", "))
	}
	return ""
}

// Verify checks the registry as Load does (the history's chain and signatures, the cells
// against the replay of the history and their evidence) and, with a trust file t (nil: none),
// CheckTrust; it describes the result: "N history entries, chained, anchored at HEAD; M cells
// are the replay of the history; ..." and what CheckTrust says.
func (r *Registry) Verify(t *Trust) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := checkChain(r.history); err != nil {
		return "", err
	}
	if err := r.checkReplay(); err != nil {
		return "", err
	}
	signed := 0
	for _, e := range r.history {
		if e.Sig != nil {
			signed++
		}
	}
	msg := fmt.Sprintf("%d history entries, chained, anchored at %s; %d cells are the replay of the history (every evidence field) and agree with their evidence", len(r.history), headOf(r.history), len(r.cells))
	if t == nil {
		return msg + fmt.Sprintf("; %d entries signed (no trust file: signatures not required)", signed), nil
	}
	tm, err := r.checkTrust(t)
	if err != nil {
		return "", err
	}
	return msg + "; " + tm, nil
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

// Load reads the registry file at path; the file must exist. With a trust file in
// ONESOURCE_TRUST the registry must also pass CheckTrust (LoadTrusted). The registry is bound to
// path, and Save later refuses to overwrite the file if it changed on disk in between.
func Load(path string) (*Registry, error) {
	t, err := TrustFromEnv()
	if err != nil {
		return nil, fmt.Errorf("registry: %s: %w", path, err)
	}
	return LoadTrusted(path, t)
}

// LoadTrusted is Load with the trust file t instead of ONESOURCE_TRUST's (nil: no trust check).
func LoadTrusted(path string, t *Trust) (*Registry, error) {
	b, bind, err := atomicfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r, err := Parse(path, b)
	if err != nil {
		return nil, err
	}
	if t != nil {
		if _, err := r.checkTrust(t); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
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

// Migrate converts the format-1 registry file at path, which has no head hash, to the current
// format: every other check of Load runs, and the file is saved (atomically, as Save does). It
// says what it could not check: whether entries were dropped from the end of the history (name
// the last entry, so that its owner can confirm it). A file of the current format is left alone.
func Migrate(path string) (string, error) {
	b, bind, err := atomicfile.Read(path)
	if err != nil {
		return "", fmt.Errorf("registry: %w", err)
	}
	r, err := parse(path, b, true)
	if err != nil {
		return "", err
	}
	var hdr struct{ Version int }
	json.Unmarshal(b, &hdr)
	if hdr.Version != 1 {
		return fmt.Sprintf("%s is format %d: nothing to migrate", path, hdr.Version), nil
	}
	r.file = bind
	if err := r.Save(""); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("migrated %s from format 1 to %d: %d history entries, chained; the cells are their replay", path, FormatVersion, len(r.history))
	if n := len(r.history); n > 0 {
		last := r.history[n-1]
		msg += fmt.Sprintf("; NOT checked: whether entries were dropped after the last one, seq %d (%s %s at %s): confirm it is the last you wrote", last.Seq, last.Action, last.Key, last.Time.Format(time.RFC3339))
	}
	return msg, nil
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
				d, kp := drop, keep
				r.appendEntry(Entry{Key: k, Action: "conflict", Reason: cf.Reason, Evidence: &d, Kept: &kp})
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
			if c := r.cells[k]; rp.cells[k].State != c.State {
				r.appendEntry(Entry{Key: k, Action: "merge", From: rp.cells[k].State, To: c.State, Reason: "the state after the merge"})
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
