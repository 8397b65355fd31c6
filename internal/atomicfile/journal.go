package atomicfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The transaction contract: Transaction.Run replaces one file and removes others as one step that
// survives a crash or kill -9 at any point. Everything is written down first, in a journal in the
// transaction's directory (JournalName, written by the output rule: a temporary file renamed into
// place). Then a stage directory is made beside it, the replacement is written there (with the
// replaced file's mode) and fsynced, and each file to remove is moved (renamed) into the stage.
// The rename of the staged replacement over the replaced file is the commit point. Then the stage
// and the journal are removed. Every step is fsynced before the next.
//
// Recover finishes or undoes what a journal describes, by looking at the replaced file: holding
// the new content, the transaction committed, and Recover completes it (removes the stage, with
// the files moved into it, and the journal); holding the old content (or anything written before
// the commit), Recover rolls it back (moves every file back, removes the stage and the journal).
// A replaced file holding neither is someone else's edit: Recover changes nothing and says where
// the moved files are. Recover is idempotent, so a crash during recovery is recovered by the next
// Recover; it runs under the directory's lock (see lockDir), as Run does. Whoever reads the tree
// calls Recover first (incumbent.Load does), so an interrupted transaction never shows.

// JournalName is the transaction journal's file name in its directory, and stagePrefix begins the
// name of its stage directory (Recover removes no other).
const (
	JournalName = ".onesource-journal.json"
	stagePrefix = ".onesource-stage-"
)

// Transaction replaces Replace with Data and removes the files Remove, all or nothing (see the
// transaction contract). Replace must hold Old when Run starts. Every path is in Dir or below
// it (one file system: the files are moved by rename).
type Transaction struct {
	Dir       string
	Replace   string
	Old, Data []byte
	Remove    []string
	What      string // what is transacted, for errors ("drain")
}

// journal is the journal file's form.
type journal struct {
	Format  string `json:"format"` // "onesource-journal"
	What    string `json:"what"`
	Replace string `json:"replace"` // the file replaced (a link's target)
	OldHash string `json:"old_hash"`
	NewHash string `json:"new_hash"`
	Stage   string `json:"stage"`  // the stage directory
	Staged  string `json:"staged"` // the replacement in the stage
	Moves   []move `json:"moves"`
}

type move struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// StepHook, when set, is called at every step boundary of Run with the step's number (from 1)
// and a word for it; tests set it to kill the process there.
var StepHook func(step int, what string)

func step(n *int, what string) {
	*n++
	if StepHook != nil {
		StepHook(*n, what)
	}
}

// Run carries the transaction out (see the transaction contract). An earlier transaction left
// in Dir is recovered first. On an error before the commit, what was done is undone; the error
// says so.
func (t Transaction) Run() (err error) {
	what := t.What
	if what == "" {
		what = "transaction"
	}
	for _, p := range []*string{&t.Dir, &t.Replace} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
	for i, f := range t.Remove {
		if abs, err := filepath.Abs(f); err == nil {
			t.Remove[i] = abs
		}
	}
	unlock, _, err := lockDir(t.Dir)
	if err != nil {
		return fmt.Errorf("%s: locking %s: %v", what, t.Dir, err)
	}
	defer unlock()
	if _, err := recoverLocked(t.Dir); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	target := t.Replace
	st, err := os.Stat(target)
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %s is not a regular file", what, target)
	}
	if target, err = filepath.EvalSymlinks(target); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	cur, err := os.ReadFile(target)
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if !bytes.Equal(cur, t.Old) {
		return fmt.Errorf("%s: %s changed since it was read: start again", what, t.Replace)
	}
	if bytes.Equal(t.Old, t.Data) {
		return fmt.Errorf("%s: the replacement of %s is its old content: nothing would mark the commit", what, t.Replace)
	}
	for _, f := range t.Remove {
		if rel, err := filepath.Rel(t.Dir, f); err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("%s: %s is not inside %s", what, f, t.Dir)
		}
	}
	n := 0
	stage := filepath.Join(filepath.Clean(t.Dir), stagePrefix+Hash(append(append([]byte{}, t.Old...), t.Data...))[:16])
	j := journal{Format: "onesource-journal", What: what, Replace: target, OldHash: Hash(t.Old), NewHash: Hash(t.Data),
		Stage: stage, Staged: filepath.Join(stage, "replacement")}
	for i, f := range t.Remove {
		j.Moves = append(j.Moves, move{From: f, To: filepath.Join(stage, fmt.Sprintf("%d-%s", i, filepath.Base(f)))})
	}
	jb, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	jpath := filepath.Join(t.Dir, JournalName)
	if err := WriteOutput(jpath, append(jb, '\n')); err != nil {
		return fmt.Errorf("%s: writing the journal: %v; nothing was changed", what, err)
	}
	step(&n, "journal written")
	undo := func(cause error) error {
		if _, rerr := recoverLocked(t.Dir); rerr != nil {
			return fmt.Errorf("%s: %v; undoing it: %v", what, cause, rerr)
		}
		return fmt.Errorf("%s: %v; nothing was changed", what, cause)
	}
	if err := os.Mkdir(stage, 0o700); err != nil {
		return undo(err)
	}
	syncDir(t.Dir)
	step(&n, "stage made")
	f, err := os.OpenFile(j.Staged, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return undo(err)
	}
	if err := errors.Join(f.Chmod(st.Mode().Perm()), WriteHook(f, t.Data), f.Sync(), f.Close()); err != nil {
		return undo(fmt.Errorf("writing the new %s: %v", filepath.Base(t.Replace), err))
	}
	syncDir(stage)
	step(&n, "replacement staged")
	for _, m := range j.Moves {
		if err := RenameHook(m.From, m.To); err != nil {
			return undo(fmt.Errorf("moving %s aside: %v", m.From, err))
		}
		syncDir(stage)
		syncDir(filepath.Dir(m.From))
		step(&n, "moved "+filepath.Base(m.From))
	}
	if err := RenameHook(j.Staged, target); err != nil {
		return undo(fmt.Errorf("replacing %s: %v", t.Replace, err))
	}
	syncDir(filepath.Dir(target))
	step(&n, "committed")
	if err := finish(j, jpath, &n); err != nil {
		return fmt.Errorf("%s: done, but cleaning up: %v (the next command finishes it)", what, err)
	}
	return nil
}

// RenameHook does the renames of Run (moving a file aside, the commit); tests replace it to fail
// midway.
var RenameHook = os.Rename

// finish removes the committed transaction's stage (with the files moved there) and its journal;
// n counts Run's steps (nil in Recover).
func finish(j journal, jpath string, n *int) error {
	if err := os.RemoveAll(j.Stage); err != nil {
		return err
	}
	syncDir(filepath.Dir(j.Stage))
	if n != nil {
		step(n, "stage removed")
	}
	if err := os.Remove(jpath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	syncDir(filepath.Dir(jpath))
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Recover finishes or undoes a transaction interrupted in dir (see the transaction contract) and
// says what it did ("" when there was nothing to do).
func Recover(dir string) (string, error) {
	if _, err := os.Lstat(filepath.Join(dir, JournalName)); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	unlock, _, err := lockDir(dir)
	if err != nil {
		return "", fmt.Errorf("locking %s: %v", dir, err)
	}
	defer unlock()
	return recoverLocked(dir)
}

func recoverLocked(dir string) (string, error) {
	// The journal's paths are absolute (Run makes them so): compare them with an absolute dir.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	jpath := filepath.Join(dir, JournalName)
	// A journal killed while being written is a temporary file that never became the journal:
	// nothing was changed after it.
	if tmps, _ := filepath.Glob(filepath.Join(dir, "."+JournalName+".tmp-*")); len(tmps) > 0 {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	b, err := os.ReadFile(jpath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the journal %s: %v", jpath, err)
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil || j.Format != "onesource-journal" {
		return "", fmt.Errorf("%s is not a journal this onesource wrote (%v): remove it by hand after checking %s", jpath, err, dir)
	}
	inside := func(p string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && !strings.HasPrefix(rel, "..")
	}
	if filepath.Dir(j.Stage) != filepath.Clean(dir) || !strings.HasPrefix(filepath.Base(j.Stage), stagePrefix) {
		return "", fmt.Errorf("the journal %s names a stage %q that is not one of %s's %s* directories: refusing it", jpath, j.Stage, dir, stagePrefix)
	}
	for _, m := range j.Moves {
		// A journal moves files of its directory into its stage and back, nothing else.
		if !inside(m.From) || filepath.Dir(m.To) != filepath.Clean(j.Stage) {
			return "", fmt.Errorf("the journal %s moves %q to %q, outside %s or its stage: refusing it", jpath, m.From, m.To, dir)
		}
	}
	cur, err := os.ReadFile(j.Replace)
	if err != nil {
		return "", fmt.Errorf("the journal %s: %v", jpath, err)
	}
	switch Hash(cur) {
	case j.NewHash:
		if err := finish(j, jpath, nil); err != nil {
			return "", fmt.Errorf("completing the interrupted %s: %v", j.What, err)
		}
		return fmt.Sprintf("completed an interrupted %s (%s was already replaced; %d files removed)", j.What, j.Replace, len(j.Moves)), nil
	case j.OldHash:
		for i := len(j.Moves) - 1; i >= 0; i-- {
			m := j.Moves[i]
			if _, err := os.Lstat(m.To); err != nil {
				continue // not moved yet
			}
			if _, err := os.Lstat(m.From); err == nil {
				return "", fmt.Errorf("rolling back the interrupted %s: %s exists again and its old copy is in %s: resolve by hand, then remove %s", j.What, m.From, m.To, jpath)
			}
			if err := os.Rename(m.To, m.From); err != nil {
				return "", fmt.Errorf("rolling back the interrupted %s: putting back %s: %v (it is in %s)", j.What, m.From, err, m.To)
			}
			syncDir(filepath.Dir(m.From))
		}
		if err := os.RemoveAll(j.Stage); err != nil {
			return "", fmt.Errorf("rolling back the interrupted %s: %v", j.What, err)
		}
		syncDir(dir)
		if err := os.Remove(jpath); err != nil {
			return "", fmt.Errorf("rolling back the interrupted %s: %v", j.What, err)
		}
		syncDir(dir)
		return fmt.Sprintf("rolled back an interrupted %s (%d files put back, %s unchanged)", j.What, len(j.Moves), j.Replace), nil
	}
	return "", fmt.Errorf("an interrupted %s: %s is neither its old nor its new content (edited since?): nothing recovered; the moved files are in %s; remove %s once resolved", j.What, j.Replace, j.Stage, jpath)
}
