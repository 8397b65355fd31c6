package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// The output rule: every file a command writes that is not a bound state file (a report, a plan,
// logits, a dump, a JSON record) goes through CreateOutput or WriteOutput, which keep one rule:
//
//   - An output may not be any input of the command: not the same path, not a link to an input,
//     not the same file under another name (a hard link, compared by device and inode). The
//     check runs before anything is written (CheckOutput lets a command run it before its work)
//     and names the input.
//   - An output that is a regular file, or does not exist yet, is written to a temporary file in
//     its directory, fsynced, and renamed over it; the directory is fsynced. A reader sees the old
//     file or the new one, and a failure (or a kill) leaves the old one as it was. An existing file
//     keeps its permission bits; a new one is created 0644 less the umask. A symbolic link is
//     followed: its target is replaced, the link stays.
//   - An existing output that is not a regular file (a FIFO, a terminal, /dev/null, a socket) is
//     opened for writing and written directly: never renamed over (that would replace the device
//     or the pipe with a regular file), never read. A directory is refused.

// ErrIsInput is returned (wrapped) when an output is one of the command's inputs.
var ErrIsInput = errors.New("the output is an input of the command")

// CheckOutput returns an error wrapping ErrIsInput when out is one of inputs (by path, through a
// link, or by device and inode), and an error when out names a directory or a link to nothing.
// Empty inputs are ignored. Nothing is opened or written.
func CheckOutput(out string, inputs ...string) error {
	if out == "" {
		return errors.New("output: no file name")
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if how := sameFileHow(out, in); how != "" {
			return fmt.Errorf("%w: %s is %s %s: refusing to overwrite it", ErrIsInput, out, how, in)
		}
	}
	lst, err := os.Lstat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output %s: %v", out, err)
	}
	st, err := os.Stat(out)
	if err != nil {
		if lst.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("output %s: a link to %v: refusing to create its target through it", out, err)
		}
		return fmt.Errorf("output %s: %v", out, err)
	}
	if st.IsDir() {
		return fmt.Errorf("output %s is a directory: name a file", out)
	}
	return nil
}

// sameFileHow says how out is in ("the input", "a link to the input", "the same file as the
// input") or "" when it is not.
func sameFileHow(out, in string) string {
	if filepath.Clean(out) == filepath.Clean(in) || sameFile(out, in) {
		return "the input"
	}
	ro, err1 := filepath.EvalSymlinks(out)
	ri, err2 := filepath.EvalSymlinks(in)
	if err1 == nil && err2 == nil && sameFile(ro, ri) {
		return "a link to the input"
	}
	so, err1 := os.Stat(out)
	si, err2 := os.Stat(in)
	if err1 == nil && err2 == nil && os.SameFile(so, si) {
		return "the same file (a hard link) as the input"
	}
	return ""
}

// Output is an output file being written (see the output rule): Write, then Commit to put it in
// place, or Abort to leave the old file as it was.
type Output struct {
	path   string   // the file it becomes (a link's target)
	f      *os.File // the temporary file, or the special file itself
	direct bool     // f is the special file: written in place
	done   bool
}

// CreateOutput checks out against inputs (CheckOutput) and opens it for writing by the output
// rule. The caller writes, then calls Commit (or Abort).
func CreateOutput(out string, inputs ...string) (*Output, error) {
	if err := CheckOutput(out, inputs...); err != nil {
		return nil, err
	}
	target := out
	perm := fs.FileMode(0o644)
	keep := false
	if st, err := os.Stat(out); err == nil {
		if !st.Mode().IsRegular() {
			// A FIFO, a device, a socket: written in place. O_WRONLY only: never read, never
			// truncated or replaced.
			f, err := os.OpenFile(out, os.O_WRONLY, 0)
			if err != nil {
				return nil, fmt.Errorf("output %s: %v", out, err)
			}
			return &Output{path: out, f: f, direct: true}, nil
		}
		if target, err = filepath.EvalSymlinks(out); err != nil {
			return nil, fmt.Errorf("output %s: %v", out, err)
		}
		perm, keep = st.Mode().Perm(), true
	}
	f, err := createTemp(target, perm)
	if err != nil {
		return nil, fmt.Errorf("output %s: %v", out, err)
	}
	if keep {
		// The umask narrowed the temporary file's mode: give it the old file's exactly.
		if err := f.Chmod(perm); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("output %s: %v", out, err)
		}
	}
	return &Output{path: target, f: f}, nil
}

var tempSeq atomic.Uint64

// createTemp creates a new temporary file next to path with permission perm (less the umask),
// named "."+base+".tmp-N".
func createTemp(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	for range 1000 {
		n := strconv.FormatUint(uint64(time.Now().UnixNano())^tempSeq.Add(1)<<40, 36)
		f, err := os.OpenFile(filepath.Join(dir, "."+base+".tmp-"+n), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no unused temporary name next to %s", path)
}

// Write writes p to the output.
func (o *Output) Write(p []byte) (int, error) {
	if o.done {
		return 0, errors.New("output: write after Commit or Abort")
	}
	if o.direct {
		return o.f.Write(p)
	}
	if err := WriteHook(o.f, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Commit finishes the output: a special file is closed; a temporary file is fsynced, closed and
// renamed over the output, and the directory fsynced.
func (o *Output) Commit() error {
	if o.done {
		return errors.New("output: Commit after Commit or Abort")
	}
	o.done = true
	if o.direct {
		if err := o.f.Close(); err != nil {
			return fmt.Errorf("output %s: %v", o.path, err)
		}
		return nil
	}
	return commitTemp(o.f, o.path, nil)
}

// Abort gives up: the temporary file is removed and the old output stays as it was (a special
// file keeps what was written to it).
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	if !o.direct {
		os.Remove(o.f.Name())
	}
}

// WriteOutput writes data to out by the output rule (CreateOutput, Write, Commit).
func WriteOutput(out string, data []byte, inputs ...string) error {
	o, err := CreateOutput(out, inputs...)
	if err != nil {
		return err
	}
	if _, err := o.Write(data); err != nil {
		o.Abort()
		return fmt.Errorf("output %s: %v", out, err)
	}
	return o.Commit()
}

// commitTemp fsyncs and closes the temporary file f, runs check (when not nil: the last look
// before the rename, which aborts when it fails), renames f over path and fsyncs the directory.
// On failure the temporary file is removed and path is as it was.
func commitTemp(f *os.File, path string, check func() error) error {
	tmp := f.Name()
	fail := func(err error) error {
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fail(fmt.Errorf("output %s: %v", path, err))
	}
	if err := f.Close(); err != nil {
		return fail(fmt.Errorf("output %s: %v", path, err))
	}
	if check != nil {
		if err := check(); err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("output %s: %v", path, err))
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
