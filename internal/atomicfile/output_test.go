//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputIsNotAnInput: an output that is an input by path (also spelled otherwise), through a
// symbolic link or as a hard link is refused before anything is written, and the input keeps
// its bytes; an unrelated output is written.
func TestOutputIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "model.gguf")
	const model = "the model's bytes"
	if err := os.WriteFile(in, []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.gguf")
	hard := filepath.Join(dir, "hard.gguf")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for _, tc := range []struct {
		name, out string
		inputs    []string
		refused   string // "" when it is written
	}{
		{"same path", in, []string{in}, "is the input"},
		{"same path spelled otherwise", sub + "/../model.gguf", []string{in}, "is the input"},
		{"a symbolic link to the input", link, []string{in}, "a link to the input"},
		{"the input through a link", in, []string{link}, "a link to the input"},
		{"a hard link", hard, []string{in}, "hard link"},
		{"among other inputs", in, []string{"", filepath.Join(dir, "other.json"), in}, "is the input"},
		{"another file", filepath.Join(dir, "logits.f32"), []string{in, link}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteOutput(tc.out, []byte("logits"), tc.inputs...)
			if tc.refused == "" {
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(tc.out); string(b) != "logits" {
					t.Errorf("output holds %q", b)
				}
			} else if !errors.Is(err, ErrIsInput) || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("err = %v, want ErrIsInput saying %q", err, tc.refused)
			}
			if b, _ := os.ReadFile(in); string(b) != model {
				t.Errorf("the input now holds %q", b)
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the link is gone: %v", err)
			}
		})
	}
}

// TestOutputRegular: a new output is created 0644 less the umask, an existing one keeps its mode,
// a link's target is replaced and the link stays, and a failed write leaves the old file and no
// temporary file.
func TestOutputRegular(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	mode := func(p string) fs.FileMode {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	fresh := filepath.Join(dir, "new.html")
	if err := WriteOutput(fresh, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if m := mode(fresh); m != 0o644 {
		t.Errorf("a new output has mode %v, want 0644", m)
	}
	kept := filepath.Join(dir, "kept.json")
	os.WriteFile(kept, []byte("old"), 0o600)
	os.Chmod(kept, 0o640)
	if err := WriteOutput(kept, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if m := mode(kept); m != 0o640 {
		t.Errorf("a replaced output has mode %v, want its old 0640", m)
	}
	link := filepath.Join(dir, "link.json")
	os.Symlink("kept.json", link)
	if err := WriteOutput(link, []byte("through the link")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(kept); string(b) != "through the link" {
		t.Errorf("the link's target holds %q", b)
	}
	defer func(h func(*os.File, []byte) error) { WriteHook = h }(WriteHook)
	WriteHook = func(*os.File, []byte) error { return errors.New("disk full") }
	if err := WriteOutput(kept, []byte("lost")); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("a failed write: %v", err)
	}
	if b, _ := os.ReadFile(kept); string(b) != "through the link" {
		t.Errorf("a failed write changed the file: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if err := WriteOutput(dir, []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory as the output: %v", err)
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere", "x"), dangling)
	if err := WriteOutput(dangling, []byte("x")); err == nil {
		t.Error("a dangling link was written through")
	}
}

// TestOutputSpecial: a FIFO and /dev/null are written in place: the FIFO's reader gets the bytes
// and both are still what they were (a rename would have replaced them with regular files).
func TestOutputSpecial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The test's end of the pipe, opened first (O_RDWR: on Linux that does not wait for a
	// writer), so WriteOutput finds a reader whenever it opens the FIFO.
	r, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Skipf("opening the FIFO: %v", err)
	}
	defer r.Close()
	done := make(chan error, 1)
	go func() { done <- WriteOutput(fifo, []byte("through the pipe")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("writing the FIFO hangs")
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, len("through the pipe"))
		n, _ := io.ReadFull(r, b)
		got <- string(b[:n])
	}()
	select {
	case s := <-got:
		if s != "through the pipe" {
			t.Errorf("the reader got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("nothing came through the FIFO")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
	if err := WriteOutput(os.DevNull, []byte("nothing")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("%s is no longer a character device: %v", os.DevNull, err)
	}
}

// TestStateFileNotRegular: Read and Save refuse a FIFO at once (reading it would block until a
// writer came), and Save keeps a file's mode and a link.
func TestStateFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "cells.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 2)
	go func() {
		_, _, err := Read(fifo)
		done <- err
		b := Binding{}
		done <- b.Save(fifo, []byte("{}"), "registry", errors.New("changed"))
	}()
	for i := 0; i < 2; i++ {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("step %d: %v", i, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("step %d hangs on the FIFO", i)
		}
	}
	path := filepath.Join(dir, "real.json")
	os.WriteFile(path, []byte("{}"), 0o600)
	os.Chmod(path, 0o664)
	link := filepath.Join(dir, "link.json")
	os.Symlink("real.json", link)
	_, b, err := Read(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Save("", []byte(`{"a":1}`), "registry", errors.New("changed")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o664 {
		t.Errorf("Save changed the mode to %v", st.Mode().Perm())
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Error("Save replaced the link")
	}
	if got, _ := os.ReadFile(path); string(got) != `{"a":1}` {
		t.Errorf("the target holds %q", got)
	}
}
