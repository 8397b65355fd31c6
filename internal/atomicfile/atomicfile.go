// Package atomicfile writes every file the project writes, by two contracts: the JSON state files
// (the registry, the tuning cache) are saved atomically and never over a change someone else
// made (Binding.Save); every other output of a command (a report, a plan, logits, a dump) follows
// the output rule (CreateOutput, WriteOutput; see output.go): an output is never one of the
// command's inputs, a regular file is replaced through a temporary file and a rename, and a
// special file (a FIFO, /dev/null) is written in place, never renamed over and never read. Both
// write the temporary file and rename it by the same code.
//
// The state-file contract: a Binding remembers which file a value was read from and a hash of the
// bytes it read. Save writes a temporary file in the same directory, fsyncs it, renames it over the
// path and fsyncs the directory, so a reader sees the old file or the new one, never a part; the
// file keeps its permission bits, and a symbolic link is followed (its target is replaced). Read
// and Save refuse a path that is not a regular file without opening it. Save refuses (an error
// wrapping the caller's ErrChanged) to overwrite a file whose content changed, or that was removed
// or created, since it was read or last saved, and refuses to overwrite an existing file the
// binding was not read from. The check runs before and again after the temporary file is written.
// On Unix systems the whole read-check-write runs under an exclusive advisory lock (flock) on the
// file's directory, so two processes saving the same file at once are serialized: the second sees
// the first's change and is refused, instead of both succeeding and one losing its change. Where
// the file system has no flock (some network file systems) and on other systems, the checks alone
// leave a short window in which that can still happen.
package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Binding is the file a value is bound to and the hash of its content when read or written
// ("" when the file did not exist).
type Binding struct {
	Path, Hash string
}

// Hash is the content hash a Binding keeps.
func Hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Read reads path and binds to it. A path that is not a regular file (a FIFO, a device) is
// refused without opening it: reading a FIFO would block, and Save would not write it.
func Read(path string) ([]byte, Binding, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, Binding{}, fmt.Errorf("%s is not a regular file (%v)", path, st.Mode().Type())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Binding{}, err
	}
	return b, Binding{Path: path, Hash: Hash(b)}, nil
}

// NotExist reports whether err says the file does not exist (Read's error for a file Open may
// create).
func NotExist(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// WriteHook writes data to f; tests replace it to fail or stall midway.
var WriteHook = func(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// Save writes data to path ("" means the bound file) as the package doc says; what names the
// kind of file in errors ("registry", "tuning") and changed is the caller's ErrChanged. After a
// successful Save the binding is to path.
func (b *Binding) Save(path string, data []byte, what string, changed error) error {
	if path == "" {
		path = b.Path
	}
	if path == "" {
		return fmt.Errorf("%s: save: no path", what)
	}
	dir := filepath.Dir(path)
	unlock, _, err := lockDir(dir)
	if err != nil {
		return fmt.Errorf("%s: save: locking %s: %v", what, dir, err)
	}
	defer unlock()
	same := b.Path != "" && sameFile(b.Path, path)
	check := func() error {
		if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
			// Never read (a FIFO would block) nor renamed over (a device would be replaced).
			return fmt.Errorf("%s: save: %s is not a regular file (%v): a %s is saved only to a regular file", what, path, st.Mode().Type(), what)
		}
		cur, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if same && b.Hash != "" {
				return fmt.Errorf("%w: %s was removed", changed, path)
			}
			return nil
		case err != nil:
			return fmt.Errorf("%s: save: %v", what, err)
		case !same:
			return fmt.Errorf("%s: save: %s exists and this %s was not loaded from it: not overwriting it", what, path, what)
		case b.Hash == "":
			return fmt.Errorf("%w: %s was created by someone else: load it and merge", changed, path)
		case Hash(cur) != b.Hash:
			return fmt.Errorf("%w: %s: reload and reapply", changed, path)
		}
		return nil
	}
	if err := check(); err != nil {
		return err
	}
	// The temporary file and the rename follow a link to the file it names (the link stays), and
	// the file keeps its permission bits.
	target, perm, existed := path, fs.FileMode(0o644), false
	if st, err := os.Stat(path); err == nil {
		perm, existed = st.Mode().Perm(), true
		if t, err := filepath.EvalSymlinks(path); err == nil {
			target = t
		}
	}
	tmp, err := createTemp(target, perm)
	if err != nil {
		return fmt.Errorf("%s: save: %v", what, err)
	}
	if existed {
		if err := tmp.Chmod(perm); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return fmt.Errorf("%s: save: %v", what, err)
		}
	}
	if err := WriteHook(tmp, data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: save %s: %v", what, path, err)
	}
	// Check again before the rename: someone may have written the file while the temporary one
	// was written.
	if err := commitTemp(tmp, target, check); err != nil {
		return err
	}
	b.Path, b.Hash = path, Hash(data)
	return nil
}

func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}
