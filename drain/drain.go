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
//     one on; both are checked before anything changes. Files are first moved aside, then the
//     manifest is replaced atomically, then the moved files are deleted: a failing step puts back
//     what was moved, so nothing is half-deleted.
package drain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/onesource-go/onesource/incumbent"
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
	Manifest     string  `json:"manifest"` // its path
	Files        []File  `json:"files"`
	Entries      []Entry `json:"entries"`
	LinesBefore  int     `json:"lines_before"` // hand-written lines the manifest uses
	LinesRemoved int     `json:"lines_removed"`

	dir         string
	oldManifest []byte
	newManifest []byte
	reg         *registry.Registry
	old         *incumbent.Manifest
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

// NewManifest is the manifest's text after the plan.
func (p *Plan) NewManifest() []byte { return p.newManifest }

var includeRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]`)

// files returns the files entry e uses: its source and, for GLSL, what it includes (resolved
// against the including file's directory, then the entry's include directories), as cleaned
// absolute paths with their languages.
func files(m *incumbent.Manifest, e *incumbent.Entry) (map[string]ledger.Language, error) {
	out := map[string]ledger.Language{}
	src := e.Source
	var path string
	var lang ledger.Language
	switch {
	case src.GLSL != "":
		path, lang = src.GLSL, ledger.GLSL
	case src.CUDA != "":
		path, lang = src.CUDA, ledger.CUDA
	case src.HIP != "":
		path, lang = src.HIP, ledger.HIP
	case src.MSL != "":
		path, lang = src.MSL, ledger.Metal
	case src.SPIRV != "":
		path = src.SPIRV
	default:
		return nil, fmt.Errorf("drain: incumbent %s names no source", e.Name)
	}
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(m.Dir, p)
		}
		return filepath.Clean(p)
	}
	var dirs []string
	for _, d := range src.IncludeDirs {
		dirs = append(dirs, abs(d))
	}
	var walk func(p string) error
	walk = func(p string) error {
		if _, seen := out[p]; seen {
			return nil
		}
		out[p] = lang
		if lang != ledger.GLSL && lang != ledger.CUDA && lang != ledger.HIP && lang != ledger.Metal {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("drain: incumbent %s: %v", e.Name, err)
		}
		for _, mm := range includeRE.FindAllSubmatch(b, -1) {
			name := string(mm[1])
			for _, d := range append([]string{filepath.Dir(p)}, dirs...) {
				c := filepath.Join(d, name)
				if _, err := os.Stat(c); err == nil {
					if err := walk(filepath.Clean(c)); err != nil {
						return err
					}
					break
				}
			}
			// An include found nowhere (a system header) is not the manifest's file.
		}
		return nil
	}
	return out, walk(abs(path))
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
	p := &Plan{Manifest: m.Path, dir: m.Dir, oldManifest: old, reg: reg, old: m}
	type use struct {
		cells  []string
		states []string
		lang   ledger.Language
		keep   []string // why it stays: the cells that are not dsl
	}
	uses := map[string]*use{}
	remove := make([]bool, len(m.Incumbents))
	for i, e := range m.Incumbents {
		k := registry.Key{Op: e.Op, Type: e.Type, Backend: e.Backend}
		state := registry.Missing
		if c, ok := reg.Cell(k); ok {
			state = c.State
		}
		ep := Entry{Name: e.Name, Cell: e.Cell(), State: string(state)}
		switch {
		case state != registry.DSL:
			ep.Why = fmt.Sprintf("the cell is %s: the incumbent still serves it", state)
		case !twinExists(k):
			ep.Why = "the cell is dsl but no DSL twin exists for it here"
		default:
			ep.Remove, ep.Why = true, "the cell is dsl: its twin serves"
		}
		remove[i] = ep.Remove
		p.Entries = append(p.Entries, ep)
		fs, err := files(m, e)
		if err != nil {
			return nil, err
		}
		for f, lang := range fs {
			u := uses[f]
			if u == nil {
				u = &use{lang: lang}
				uses[f] = u
			}
			u.cells = append(u.cells, e.Cell())
			u.states = append(u.states, string(state))
			if !ep.Remove {
				u.keep = append(u.keep, fmt.Sprintf("%s (%s)", e.Cell(), state))
			}
		}
	}
	paths := make([]string, 0, len(uses))
	for f := range uses {
		paths = append(paths, f)
	}
	sort.Strings(paths)
	for _, f := range paths {
		u := uses[f]
		rel, err := filepath.Rel(m.Dir, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = f
		}
		fp := File{Path: filepath.ToSlash(rel), Cells: u.cells, States: u.states, Language: u.lang}
		if u.lang != "" {
			if b, err := os.ReadFile(f); err == nil {
				fp.Lines = ledger.CountLines(b, u.lang)
			}
		}
		p.LinesBefore += fp.Lines
		switch {
		case strings.HasPrefix(rel, ".."):
			fp.Why = "outside the manifest's directory: not the manifest's to delete"
		case len(u.keep) > 0:
			fp.Why = "still used by " + strings.Join(u.keep, ", ")
		default:
			fp.Delete = true
			fp.Why = "every cell it serves is dsl"
			if len(u.cells) > 1 {
				fp.Why = fmt.Sprintf("all %d cells it serves are dsl", len(u.cells))
			}
			p.LinesRemoved += fp.Lines
		}
		p.Files = append(p.Files, fp)
	}
	if p.newManifest, err = withoutEntries(old, remove); err != nil {
		return nil, err
	}
	return p, nil
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

// rename and remove are the file operations of Apply; tests replace them to fail midway.
var (
	rename    = os.Rename
	removeAll = os.RemoveAll
)

// Apply carries the plan out (see the package contract). The files and the manifest must not
// have changed since Make.
func (p *Plan) Apply() error {
	if _, err := p.check(); err != nil {
		return err
	}
	cur, err := os.ReadFile(p.Manifest)
	if err != nil {
		return fmt.Errorf("drain: %v", err)
	}
	if !bytes.Equal(cur, p.oldManifest) {
		return fmt.Errorf("drain: %s changed since the plan was made: plan again", p.Manifest)
	}
	stage, err := os.MkdirTemp(p.dir, ".drain-")
	if err != nil {
		return fmt.Errorf("drain: %v", err)
	}
	type moved struct{ from, to string }
	var done []moved
	undo := func(cause error) error {
		var errs []error
		for i := len(done) - 1; i >= 0; i-- {
			if err := rename(done[i].to, done[i].from); err != nil {
				errs = append(errs, fmt.Errorf("putting back %s: %v (it is in %s)", done[i].from, err, stage))
			}
		}
		if len(errs) == 0 {
			os.RemoveAll(stage)
		}
		return errors.Join(append([]error{cause}, errs...)...)
	}
	for i, rel := range p.Deletable() {
		from := filepath.Join(p.dir, filepath.FromSlash(rel))
		to := filepath.Join(stage, fmt.Sprintf("%d-%s", i, filepath.Base(from)))
		if err := rename(from, to); err != nil {
			return undo(fmt.Errorf("drain: moving %s aside: %v; nothing was deleted", rel, err))
		}
		done = append(done, moved{from, to})
	}
	tmp, err := os.CreateTemp(p.dir, ".manifest-*.json")
	if err != nil {
		return undo(fmt.Errorf("drain: %v; nothing was deleted", err))
	}
	w := bufio.NewWriter(tmp)
	w.Write(p.newManifest)
	if err := errors.Join(w.Flush(), tmp.Sync(), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return undo(fmt.Errorf("drain: writing the manifest: %v; nothing was deleted", err))
	}
	if err := rename(tmp.Name(), p.Manifest); err != nil {
		os.Remove(tmp.Name())
		return undo(fmt.Errorf("drain: replacing the manifest: %v; nothing was deleted", err))
	}
	if err := removeAll(stage); err != nil {
		return fmt.Errorf("drain: the drain is done, but the moved files are left in %s: %v", stage, err)
	}
	return nil
}
