// Package atomicfile saves the project's JSON state files (the registry, the tuning cache) the
// same way: atomically, and never over a change someone else made.
//
// The contract: a Binding remembers which file a value was read from and a hash of the bytes it
// read. Save writes a temporary file in the same directory, fsyncs it, renames it over the path
// and fsyncs the directory, so a reader sees the old file or the new one, never a part. It
// refuses (an error wrapping the caller's ErrChanged) to overwrite a file whose content changed,
// or that was removed or created, since it was read or last saved, and refuses to overwrite an
// existing file the binding was not read from. The check runs before and again after the
// temporary file is written. On Unix systems the whole read-check-write runs under an exclusive
// advisory lock (flock) on the file's directory, so two processes saving the same file at once
// are serialized: the second sees the first's change and is refused, instead of both succeeding
// and one losing its change. Where the file system has no flock (some network file systems) and
// on other systems, the checks alone leave a short window in which that can still happen.
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

// Read reads path and binds to it.
func Read(path string) ([]byte, Binding, error) {
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
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: save: %v", what, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmpName)
		return fmt.Errorf("%s: save %s: %v", what, path, err)
	}
	if err := WriteHook(tmp, data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	// Check again: someone may have written the file while the temporary one was written.
	if err := check(); err != nil {
		os.Remove(tmpName)
		return err
	}
	if err := os.Rename(tmpName, path); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("%s: save: %v", what, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
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
