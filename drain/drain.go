// Package drain is the "delete" of "verify, then delete": it works out which hand-written kernel
// files an incumbent manifest no longer needs once the registry has flipped their cells to the
// DSL twins, and removes them without ever leaving a cell without a server.
//
// The contract:
//
//   - An entry of the manifest can go when its cell is dsl in the registry (bit-exact and at least
//     as fast as the incumbent on every machine with evidence) and the cell has a twin. A file can
//     go when every entry that uses it (as its source, or through a GLSL #include) can go: a
//     shared header, or a file that also serves a hand, declined or failing cell, stays.
//   - Make only plans: nothing is changed. The plan says, per file, the cells it serves, their
//     states, its ledger lines and why it can or cannot go; Patch writes it as a unified diff
//     (the manifest's entries and the files removed).
//   - Apply carries the plan out only when, afterwards, the manifest still loads and every cell of
//     the registry still has a server (its twin or a remaining incumbent) for every backend it had
//     one on; both are checked before anything changes. It is one journaled transaction
//     (atomicfile.Transaction): a journal, then the files moved into a stage, then the new
//     manifest renamed over the old one (the commit: it keeps the old file's mode), then the stage
//     removed. A failing step undoes what was done; a kill -9 at any step is rolled back (before
//     the commit) or completed (after it) by the next command that loads the manifest
//     (incumbent.Load) or by Recover (`onesource drain -recover`), so nothing is half-deleted and
//     nothing of the transaction stays behind.
package drain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/ledger"
	"github.com/onesource-go/onesource/registry"
)

// File is the plan for one file an incumbent uses.
type File struct {
	Path     string          `json:"path"` // relative to the manifest's directory, slash-separated
	Cells    []string        `json:"cells"`
	States   []string        `json:"states"` // the registry state of each cell
	Language ledger.Language `json:"language,omitempty"`
	Lines    int             `json:"lines"` // the ledger's count (non-blank, non-comment lines)
	Delete   bool            `json:"delete"`
	Why      string          `json:"why"`
}

// Entry is the plan for one manifest entry.
type Entry struct {
	Name   string `json:"name"`
	Cell   string `json:"cell"`
	State  string `json:"state"`
	Remove bool   `json:"remove"`
	Why    string `json:"why"`
}

// Plan is what Make worked out.
type Plan struct {
	Manifest     string  `json:"manifest"` // its path, as it was loaded (relative paths stay relative)
	Files        []File  `json:"files"`
	Entries      []Entry `json:"entries"`
	LinesBefore  int     `json:"lines_before"` // hand-written lines the manifest uses
	LinesRemoved int     `json:"lines_removed"`

	dir         string // the manifest's directory, absolute (incumbent.Load makes it so)
	manifest    string // the manifest's path, absolute
	oldManifest []byte
	newManifest []byte
	reg         *registry.Registry
	old         *incumbent.Manifest
	u           *usage
}

// Deletable returns the paths of the files the plan deletes.
func (p *Plan) Deletable() []string {
	var out []string
	for _, f := range p.Files {
		if f.Delete {
			out = append(out, f.Path)
		}
	}
	return out
}

// DeletablePaths returns the files the plan deletes as paths on this machine (Deletable's joined
// to the manifest's directory, which incumbent.Load makes absolute).
func (p *Plan) DeletablePaths() []string {
	var out []string
	for _, rel := range p.Deletable() {
		out = append(out, filepath.Join(p.dir, filepath.FromSlash(rel)))
	}
	return out
}

// NewManifest is the manifest's text after the plan.
func (p *Plan) NewManifest() []byte { return p.newManifest }

// files returns the files entry e uses (incumbent's SourceFiles of its source) with their
// languages.
func files(m *incumbent.Manifest, e *incumbent.Entry) (map[string]ledger.Language, error) {
	fs, err := m.SourceFiles(e.Source)
	if err != nil {
		return nil, fmt.Errorf("drain: incumbent %s: %v", e.Name, err)
	}
	langs := map[string]ledger.Language{"glsl": ledger.GLSL, "cuda": ledger.CUDA, "hip": ledger.HIP, "msl": ledger.Metal}
	out := make(map[string]ledger.Language, len(fs))
	for f, kind := range fs {
		out[f] = langs[kind]
	}
	return out, nil
}

// served reports whether cell k has a server given its registry state and whether an incumbent
// is named for it: the twin where the registry lets it serve and the twin exists, the incumbent
// where one is named.
func served(c registry.Cell, hasIncumbent bool) bool {
	switch c.State {
	case registry.DSL, registry.Fallback:
		return twinExists(c.Key) || hasIncumbent
	}
	return hasIncumbent
}

func twinExists(k registry.Key) bool {
	for _, c := range kernels.Cells() {
		if c.Op == k.Op && c.Type.String() == k.Type {
			return true
		}
	}
	return false
}

// usage is what the manifest's entries use: per entry its cell and files, per file its language
// and ledger lines.
type usage struct {
	dir     string
	keys    []registry.Key
	files   [][]string // per entry, absolute paths
	langs   map[string]ledger.Language
	lines   map[string]int
	ordered []string // every file, sorted
}

func usesOf(m *incumbent.Manifest) (*usage, error) {
	u := &usage{dir: m.Dir, langs: map[string]ledger.Language{}, lines: map[string]int{}}
	for _, e := range m.Incumbents {
		u.keys = append(u.keys, registry.Key{Op: e.Op, Type: e.Type, Backend: e.Backend})
		fs, err := files(m, e)
		if err != nil {
			return nil, err
		}
		var list []string
		for f, lang := range fs {
			list = append(list, f)
			if _, seen := u.langs[f]; !seen {
				u.langs[f] = lang
				if lang != "" {
					if b, err := os.ReadFile(f); err == nil {
						u.lines[f] = ledger.CountLines(b, lang)
					}
				}
				u.ordered = append(u.ordered, f)
			}
		}
		sort.Strings(list)
		u.files = append(u.files, list)
	}
	sort.Strings(u.ordered)
	return u, nil
}

// removable reports, per entry, whether it can go when the cells are in the states stateOf
// gives: its cell is dsl and has a twin.
func (u *usage) removable(stateOf func(registry.Key) registry.State) []bool {
	out := make([]bool, len(u.keys))
	for i, k := range u.keys {
		out[i] = stateOf(k) == registry.DSL && twinExists(k)
	}
	return out
}

// freed returns the files every user of which can go, and their lines.
func (u *usage) freed(remove []bool) (map[string]bool, int) {
	keep := map[string]bool{}
	for i, fs := range u.files {
		if !remove[i] {
			for _, f := range fs {
				keep[f] = true
			}
		}
	}
	out, lines := map[string]bool{}, 0
	for _, f := range u.ordered {
		if !keep[f] && u.inside(f) {
			out[f] = true
			lines += u.lines[f]
		}
	}
	return out, lines
}

func (u *usage) rel(f string) string {
	rel, err := filepath.Rel(u.dir, f)
	if err != nil {
		return f
	}
	return rel
}

func (u *usage) inside(f string) bool { return !strings.HasPrefix(u.rel(f), "..") }

// Make plans the drain of manifest m against registry reg. Nothing is changed.
func Make(m *incumbent.Manifest, reg *registry.Registry) (*Plan, error) {
	if m == nil || m.Path == "" {
		return nil, errors.New("drain: the manifest must be loaded from a file")
	}
	if reg == nil {
		return nil, errors.New("drain: no registry")
	}
	old, err := os.ReadFile(m.Path)
	if err != nil {
		return nil, fmt.Errorf("drain: %v", err)
	}
	u, err := usesOf(m)
	if err != nil {
		return nil, err
	}
	// The manifest's own path may be relative (to the working directory) while its directory is
	// absolute: every path the plan works with is made absolute once, here.
	abs, err := filepath.Abs(m.Path)
	if err != nil {
		return nil, fmt.Errorf("drain: %v", err)
	}
	p := &Plan{Manifest: m.Path, dir: m.Dir, manifest: abs, oldManifest: old, reg: reg, old: m, u: u}
	stateOf := func(k registry.Key) registry.State {
		if c, ok := reg.Cell(k); ok {
			return c.State
		}
		return registry.Missing
	}
	remove := u.removable(stateOf)
	freed, _ := u.freed(remove)
	type use struct {
		cells, states, keep []string
	}
	uses := map[string]*use{}
	for i, e := range m.Incumbents {
		k, state := u.keys[i], stateOf(u.keys[i])
		ep := Entry{Name: e.Name, Cell: e.Cell(), State: string(state), Remove: remove[i]}
		switch {
		case state != registry.DSL:
			ep.Why = fmt.Sprintf("the cell is %s: the incumbent still serves it", state)
		case !twinExists(k):
			ep.Why = NoTwin
		default:
			ep.Why = "the cell is dsl: its twin serves"
		}
		p.Entries = append(p.Entries, ep)
		for _, f := range u.files[i] {
			us := uses[f]
			if us == nil {
				us = &use{}
				uses[f] = us
			}
			us.cells = append(us.cells, e.Cell())
			us.states = append(us.states, string(state))
			if !remove[i] {
				us.keep = append(us.keep, fmt.Sprintf("%s (%s)", e.Cell(), state))
			}
		}
	}
	for _, f := range u.ordered {
		us := uses[f]
		fp := File{Path: filepath.ToSlash(u.rel(f)), Cells: us.cells, States: us.states, Language: u.langs[f], Lines: u.lines[f], Delete: freed[f]}
		p.LinesBefore += fp.Lines
		switch {
		case !u.inside(f):
			fp.Why = "outside the manifest's directory: not the manifest's to delete"
		case len(us.keep) > 0:
			fp.Why = "still used by " + strings.Join(us.keep, ", ")
		case len(us.cells) > 1:
			fp.Why = fmt.Sprintf("all %d cells it serves are dsl", len(us.cells))
		default:
			fp.Why = "every cell it serves is dsl"
		}
		if fp.Delete {
			p.LinesRemoved += fp.Lines
		}
		p.Files = append(p.Files, fp)
	}
	if p.newManifest, err = withoutEntries(old, remove); err != nil {
		return nil, err
	}
	return p, nil
}

// Point is one step of the burn-down: the hand-written lines of the manifest's files that would
// remain after the registry history's entry Seq (a flip, or a revert) if the drain ran then.
type Point struct {
	Seq       int       `json:"seq"`
	Time      time.Time `json:"time"`
	Cell      string    `json:"cell"`   // the cell that changed ("" for the start)
	Change    string    `json:"change"` // "hand -> dsl", ...
	Remaining int       `json:"remaining"`
}

// NoTwin is the reason a plan keeps the entry of a dsl cell whose twin this program does not
// have (kernels.Lookup finds none: the package that registers it is not linked in).
const NoTwin = "the cell is dsl, but this program has no DSL twin for it (no package it links registers the cell): the incumbent stays"

// BurnDown replays reg's history over manifest m's files: the start (no cell flipped), then a
// point after every change into or out of dsl, each with the lines that would remain after a
// drain at that moment. The last point's lines are what a plan made now leaves (Plan.BurnDown).
func BurnDown(m *incumbent.Manifest, reg *registry.Registry) ([]Point, error) {
	u, err := usesOf(m)
	if err != nil {
		return nil, err
	}
	return burnDown(u, reg), nil
}

// BurnDown is the burn-down of the plan's manifest and registry (see the function BurnDown),
// over the same files and line counts as the plan: its last point leaves LinesBefore -
// LinesRemoved lines.
func (p *Plan) BurnDown() []Point { return burnDown(p.u, p.reg) }

func burnDown(u *usage, reg *registry.Registry) []Point {
	total := 0
	for _, f := range u.ordered {
		total += u.lines[f]
	}
	states := map[registry.Key]registry.State{}
	stateOf := func(k registry.Key) registry.State { return states[k] }
	pts := []Point{{Remaining: total}}
	for _, h := range reg.History() {
		if h.Key.Op == "" || h.To == "" || h.To == h.From {
			continue
		}
		states[h.Key] = h.To
		if h.To != registry.DSL && h.From != registry.DSL {
			continue
		}
		_, freed := u.freed(u.removable(stateOf))
		pts = append(pts, Point{Seq: h.Seq, Time: h.Time, Cell: h.Key.String(), Change: fmt.Sprintf("%s -> %s", h.From, h.To), Remaining: total - freed})
	}
	if len(pts) > 0 && len(reg.History()) > 0 {
		pts[0].Time = reg.History()[0].Time
	}
	return pts
}

// withoutEntries returns the manifest text with the entries marked in remove left out of its
// "incumbents" array, every other byte as it was.
func withoutEntries(text []byte, remove []bool) ([]byte, error) {
	var doc struct {
		Incumbents []json.RawMessage `json:"incumbents"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		return nil, fmt.Errorf("drain: manifest: %v", err)
	}
	if len(doc.Incumbents) != len(remove) {
		return nil, fmt.Errorf("drain: manifest has %d entries, the plan %d", len(doc.Incumbents), len(remove))
	}
	// Locate the array: the first '[' after the "incumbents" key at the top level.
	dec := json.NewDecoder(bytes.NewReader(text))
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("drain: manifest: %v", err)
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 && t == "incumbents" {
				if _, err := dec.Token(); err != nil { // '['
					return nil, fmt.Errorf("drain: manifest: %v", err)
				}
				start := dec.InputOffset()
				var raws []json.RawMessage
				for dec.More() {
					var r json.RawMessage
					if err := dec.Decode(&r); err != nil {
						return nil, fmt.Errorf("drain: manifest: %v", err)
					}
					raws = append(raws, r)
				}
				if _, err := dec.Token(); err != nil { // ']'
					return nil, fmt.Errorf("drain: manifest: %v", err)
				}
				end := dec.InputOffset() - 1
				inner := string(text[start:end])
				indent := "\n    "
				if i := strings.Index(inner, "{"); i > 0 {
					lead := inner[:i]
					if j := strings.LastIndex(lead, "\n"); j >= 0 {
						indent = lead[j:]
					}
				}
				closing := "\n  "
				if j := strings.LastIndex(inner, "\n"); j >= 0 && strings.TrimSpace(inner[j:]) == "" {
					closing = inner[j:]
				}
				var kept []string
				for i, r := range raws {
					if !remove[i] {
						kept = append(kept, string(r))
					}
				}
				body := ""
				if len(kept) > 0 {
					body = indent + strings.Join(kept, ","+indent) + closing
				}
				out := append([]byte{}, text[:start]...)
				out = append(out, body...)
				return append(out, text[end:]...), nil
			}
		}
	}
}

// check verifies the state after the plan: the new manifest loads, and every registry cell that
// had a server still has one.
func (p *Plan) check() (*incumbent.Manifest, error) {
	nm, err := incumbent.Parse(p.newManifest, p.Manifest, p.dir)
	if err != nil {
		return nil, fmt.Errorf("drain: the manifest after the drain does not load: %w", err)
	}
	for _, c := range p.reg.Cells() {
		before := served(c, p.old.Entry(c.Op, c.Type, c.Backend) != nil)
		after := served(c, nm.Entry(c.Op, c.Type, c.Backend) != nil)
		if before && !after {
			return nil, fmt.Errorf("drain: %s would have no server after the drain", c.Key)
		}
	}
	return nm, nil
}

// Check reports whether Apply would succeed now, without changing anything.
func (p *Plan) Check() error {
	_, err := p.check()
	return err
}

// Apply carries the plan out (see the package contract) as one transaction of package
// atomicfile: the journal, then the files moved into a stage, then the new manifest renamed over
// the old one (the commit), then the stage removed. A kill at any point is rolled back (before the
// commit) or completed (after it) by the next command that reads the manifest (incumbent.Load) or
// by Recover. The files and the manifest must not have changed since Make.
func (p *Plan) Apply() error {
	if _, err := p.check(); err != nil {
		return err
	}
	remove := p.DeletablePaths()
	if len(remove) == 0 && bytes.Equal(p.oldManifest, p.newManifest) {
		return nil
	}
	t := atomicfile.Transaction{Dir: p.dir, Replace: p.manifest, Old: p.oldManifest, Data: p.newManifest, Remove: remove, What: "drain"}
	if err := t.Run(); err != nil {
		if strings.Contains(err.Error(), "changed since it was read") {
			return fmt.Errorf("drain: %s changed since the plan was made: plan again", p.Manifest)
		}
		return err
	}
	return nil
}

// Recover finishes or rolls back a drain interrupted in dir (a kill during Apply) and says what it
// did ("" when there was nothing to do). incumbent.Load calls it too.
func Recover(dir string) (string, error) { return atomicfile.Recover(dir) }
