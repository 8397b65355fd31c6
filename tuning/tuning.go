// Package tuning is the tuning cache: for each DSL kernel cell on each machine, the schedule a
// tuner found fastest, with every candidate it tried and why the others lost.
//
// The contract:
//
//   - An Entry is keyed by Key: the cell ("op/type"), the backend, the device, the driver and the
//     hash of the twin kernel's source. A result is only ever answered for the exact key it was
//     measured under: Lookup misses when the kernel changed (another TwinHash), and Stale lists
//     the results of older kernels so callers can say "tuned for an older version of the kernel".
//   - Put accepts only well-formed results: every key field set, a chosen Schedule that is one of
//     the bit-exact candidates, a positive time and an RFC 3339 date. A cache never holds an
//     entry that Load would reject.
//   - Schedules are opaque strings (for example "lanes=32,blocked"): this package depends on no
//     other package of the module, and callers parse schedules themselves.
//   - Merge unites caches written on several machines by key. Results of different machines never
//     conflict; for one key the newer result wins and a Conflict reports a different schedule.
//   - The file is indented JSON with a format name and version header and entries in a stable
//     order, so the same cache always gives the same bytes and diffs line by line. Load rejects
//     corrupt (with FILE:LINE:COL), foreign, newer-format and malformed files; Save is atomic and
//     never overwrites a file that changed on disk since it was read.
//   - A Cache is safe for concurrent use.
package tuning

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

// Key identifies one tuned cell on one machine and one version of the kernel.
type Key struct {
	Cell     string `json:"cell"`      // "op/type", e.g. "matvec/q4_0"
	Backend  string `json:"backend"`   // "vulkan", "cuda", ...
	Device   string `json:"device"`    // device name and type, as the caller describes it
	Driver   string `json:"driver"`    // driver name/version
	TwinHash string `json:"twin_hash"` // hash of the twin kernel's source (its IR at a reference schedule); a changed kernel has another hash
}

// String returns a readable form of k for messages: cell, backend, device, driver and twin hash.
func (k Key) String() string {
	return fmt.Sprintf("%s on %s %q driver %q twin %s", k.Cell, k.Backend, k.Device, k.Driver, k.TwinHash)
}

// SameMachine reports whether k and o name the same cell on the same backend, device and driver,
// whatever their twin hashes.
func (k Key) SameMachine(o Key) bool {
	return k.Cell == o.Cell && k.Backend == o.Backend && k.Device == o.Device && k.Driver == o.Driver
}

func (k Key) check() error {
	fields := []struct{ name, v string }{
		{"cell", k.Cell}, {"backend", k.Backend}, {"device", k.Device}, {"driver", k.Driver}, {"twin_hash", k.TwinHash},
	}
	for _, f := range fields {
		if f.v == "" {
			return fmt.Errorf("key has no %s", f.name)
		}
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("key %s %q is not valid UTF-8", f.name, f.v)
		}
	}
	return nil
}

func keyLess(a, b Key) bool {
	switch {
	case a.Cell != b.Cell:
		return a.Cell < b.Cell
	case a.Backend != b.Backend:
		return a.Backend < b.Backend
	case a.Device != b.Device:
		return a.Device < b.Device
	case a.Driver != b.Driver:
		return a.Driver < b.Driver
	}
	return a.TwinHash < b.TwinHash
}

// Candidate is one schedule the tuner tried.
type Candidate struct {
	Schedule string  `json:"schedule"`
	Exact    bool    `json:"exact"`             // bit-exact against the oracle on the conformance inputs
	Seconds  float64 `json:"seconds,omitempty"` // median time per dispatch; 0 when not timed
	GBps     float64 `json:"gbps,omitempty"`
	Reason   string  `json:"reason,omitempty"` // why it was rejected or not timed
}

// Entry is the tuner's result for one key.
type Entry struct {
	Key
	Shape      string      `json:"shape"`    // the workload it was timed on, e.g. "rows=1024,n=4096"
	Schedule   string      `json:"schedule"` // the fastest bit-exact candidate
	Seconds    float64     `json:"seconds"`
	Date       string      `json:"date"` // RFC 3339, UTC
	Tool       string      `json:"tool,omitempty"`
	Candidates []Candidate `json:"candidates"`
}

// String returns a readable one-line form of e: its key, schedule, time and date. (Without it the
// embedded Key's String would describe an Entry by its key alone.)
func (e Entry) String() string {
	return fmt.Sprintf("%s: %q %gs at %s (%s)", e.Key, e.Schedule, e.Seconds, e.Shape, e.Date)
}

// Date formats t as an Entry's Date: RFC 3339 in UTC, to the second.
func Date(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Time returns the parsed Date of e.
func (e Entry) Time() (time.Time, error) { return time.Parse(time.RFC3339, e.Date) }

func (e Entry) clone() Entry {
	e.Candidates = append([]Candidate{}, e.Candidates...)
	return e
}

// Validate reports why e cannot be stored (nil if it can): every key field must be set, Schedule
// must be one of the bit-exact candidates, Seconds must be positive, Date must be RFC 3339,
// candidates must have distinct non-empty schedules and finite non-negative numbers, and all
// strings must be valid UTF-8 (so that the file round-trips).
func (e Entry) Validate() error {
	if err := e.Key.check(); err != nil {
		return err
	}
	for _, s := range []struct{ name, v string }{{"shape", e.Shape}, {"schedule", e.Schedule}, {"date", e.Date}, {"tool", e.Tool}} {
		if !utf8.ValidString(s.v) {
			return fmt.Errorf("%s %q is not valid UTF-8", s.name, s.v)
		}
	}
	if e.Schedule == "" {
		return errors.New("no schedule")
	}
	if !(e.Seconds > 0) || math.IsInf(e.Seconds, 0) {
		return fmt.Errorf("seconds %g must be a positive finite number", e.Seconds)
	}
	if _, err := time.Parse(time.RFC3339, e.Date); err != nil {
		return fmt.Errorf("date %q is not RFC 3339 (e.g. 2025-01-02T03:04:05Z)", e.Date)
	}
	seen := map[string]bool{}
	chosen := false
	for i, c := range e.Candidates {
		switch {
		case c.Schedule == "":
			return fmt.Errorf("candidate %d has no schedule", i)
		case !utf8.ValidString(c.Schedule) || !utf8.ValidString(c.Reason):
			return fmt.Errorf("candidate %d (%q) is not valid UTF-8", i, c.Schedule)
		case seen[c.Schedule]:
			return fmt.Errorf("candidate %d: schedule %q listed twice", i, c.Schedule)
		case math.IsNaN(c.Seconds) || math.IsInf(c.Seconds, 0) || c.Seconds < 0:
			return fmt.Errorf("candidate %d (%s): seconds %g must be a finite number >= 0", i, c.Schedule, c.Seconds)
		case math.IsNaN(c.GBps) || math.IsInf(c.GBps, 0) || c.GBps < 0:
			return fmt.Errorf("candidate %d (%s): gbps %g must be a finite number >= 0", i, c.Schedule, c.GBps)
		}
		seen[c.Schedule] = true
		if c.Schedule == e.Schedule {
			if !c.Exact {
				return fmt.Errorf("schedule %q is a candidate that is not bit-exact", e.Schedule)
			}
			chosen = true
		}
	}
	if !chosen {
		return fmt.Errorf("schedule %q is not one of the candidates", e.Schedule)
	}
	return nil
}

// Cache is a set of entries, at most one per Key. It is safe for concurrent use. The zero Cache is
// an empty cache bound to no file, like New's.
type Cache struct {
	mu      sync.Mutex
	entries map[Key]Entry
	file    atomicfile.Binding // the file it was read from or last saved to, and its content's hash
}

// New returns an empty cache bound to no file.
func New() *Cache { return &Cache{entries: map[Key]Entry{}} }

// Put adds e, or replaces the entry of e.Key. It refuses an entry that fails Validate.
func (c *Cache) Put(e Entry) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("tuning: put %s: %v", e.Key, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil { // the zero Cache is usable
		c.entries = map[Key]Entry{}
	}
	c.entries[e.Key] = e.clone()
	return nil
}

// Delete removes the entry of k and reports whether there was one.
func (c *Cache) Delete(k Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[k]
	delete(c.entries, k)
	return ok
}

// Lookup returns the entry of exactly k. An entry tuned for another TwinHash is not returned: a
// changed kernel must be retuned (see Stale).
func (c *Cache) Lookup(k Key) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return Entry{}, false
	}
	return e.clone(), true
}

// Stale returns the entries for the same cell, backend, device and driver as k but another
// TwinHash: results for other versions of the kernel. They are sorted newest first (by Date, then
// by TwinHash).
func (c *Cache) Stale(k Key) []Entry {
	c.mu.Lock()
	var out []Entry
	for ek, e := range c.entries {
		if ek.SameMachine(k) && ek.TwinHash != k.TwinHash {
			out = append(out, e.clone())
		}
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		ti, _ := out[i].Time()
		tj, _ := out[j].Time()
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return out[i].TwinHash < out[j].TwinHash
	})
	return out
}

// Len returns the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Entries returns a copy of all entries, sorted by (cell, backend, device, driver, twin_hash).
func (c *Cache) Entries() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sorted()
}

func (c *Cache) sorted() []Entry {
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e.clone())
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i].Key, out[j].Key) })
	return out
}

// Conflict reports one key for which Merge found two results that chose different schedules.
type Conflict struct {
	Key     Key
	Kept    string // the schedule kept (of the newer result)
	Dropped string // the schedule dropped
	Reason  string
}

// String returns a one-line description of the conflict.
func (cf Conflict) String() string { return cf.Key.String() + ": " + cf.Reason }

// Merge adds the entries of o to c (typically caches written on different machines): entries
// whose key only one side holds are kept as they are, so entries of different machines never
// conflict. When both hold an entry for one key, the newer (by Date) wins; on equal dates the
// faster wins, then the one whose JSON sorts first, so the outcome does not depend on which cache
// is merged into which. The losing entry is dropped whole (its timings were taken in another run
// and may not be comparable, so its candidates are not mixed into the winner's); when the two
// chose different schedules a Conflict, sorted by key, says which was kept. o is not changed.
func (c *Cache) Merge(o *Cache) []Conflict {
	if o == nil || o == c {
		return nil
	}
	others := o.Entries()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[Key]Entry{}
	}
	var conflicts []Conflict
	for _, oe := range others {
		ce, ok := c.entries[oe.Key]
		if !ok {
			c.entries[oe.Key] = oe
			continue
		}
		keep, drop := ce, oe
		if newer(oe, ce) {
			keep, drop = oe, ce
		}
		c.entries[oe.Key] = keep
		if keep.Schedule != drop.Schedule {
			conflicts = append(conflicts, Conflict{
				Key: oe.Key, Kept: keep.Schedule, Dropped: drop.Schedule,
				Reason: fmt.Sprintf("two results: kept %q (%gs, %s), dropped %q (%gs, %s)",
					keep.Schedule, keep.Seconds, keep.Date, drop.Schedule, drop.Seconds, drop.Date),
			})
		}
	}
	return conflicts
}

// newer reports whether a beats b in Merge: the later date, then the shorter time, then the JSON
// that sorts first. Both are valid entries, so their dates parse.
func newer(a, b Entry) bool {
	ta, _ := a.Time()
	tb, _ := b.Time()
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	if a.Seconds != b.Seconds {
		return a.Seconds < b.Seconds
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Compare(ja, jb) < 0
}

// Choose is how a program picks the schedule a cell runs at: the cached schedule for exactly k
// when there is one and fits accepts it, else def. why says which, and why a cached entry was
// not used (tuned for another version of the twin, or a schedule that does not fit). A nil cache
// gives def.
func (c *Cache) Choose(k Key, def string, fits func(schedule string) bool) (schedule string, tuned bool, why string) {
	if c == nil {
		return def, false, "default (no tuning cache)"
	}
	e, ok := c.Lookup(k)
	if !ok {
		if len(c.Stale(k)) > 0 {
			return def, false, "default (the cache was tuned for another version of this twin: run onesource tune again)"
		}
		return def, false, "default (not tuned on this device)"
	}
	if fits != nil && !fits(e.Schedule) {
		return def, false, fmt.Sprintf("default (the cache's schedule %q does not fit this cell)", e.Schedule)
	}
	return e.Schedule, true, fmt.Sprintf("tuned %s (%.3g ms per dispatch at %s)", e.Date, e.Seconds*1e3, e.Shape)
}
