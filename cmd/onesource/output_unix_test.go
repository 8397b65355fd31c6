//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onesource-go/onesource/registry"
)

// TestGGUFDumpSpecialOutput: -o a FIFO writes the values into the pipe and leaves the FIFO a FIFO
// (a dump used to rename a regular file over it); -o a directory fails before saying anything
// was written (the success line came first, then the rename failed).
func TestGGUFDumpSpecialOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	writeAllTypes(t, path)
	fifo := filepath.Join(dir, "values.f32")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The test's end of the pipe, opened first (O_RDWR: on Linux that does not wait for a
	// writer), so the dump finds a reader whenever it opens the FIFO.
	r, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Skipf("opening the FIFO: %v", err)
	}
	defer r.Close()
	code, out, errs := 0, "", ""
	done := make(chan bool, 1)
	go func() {
		code, out, errs = ggufRun("dump", path, "t.f32", "-o", fifo)
		done <- true
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("dump -o FIFO hangs")
	}
	if code != 0 {
		t.Fatalf("dump -o FIFO: exit %d: %s", code, errs)
	}
	got := make(chan int, 1)
	go func() {
		b := make([]byte, 4*2*2)
		n, _ := io.ReadFull(r, b)
		got <- n
	}()
	select {
	case n := <-got:
		if n != 4*2*2 {
			t.Errorf("the FIFO's reader got %d bytes, want %d", n, 4*2*2)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("nothing came through the FIFO (%s)", out)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is now %v (%v)", st.Mode(), err)
	}
	code, out, errs = ggufRun("dump", path, "t.f32", "-o", dir)
	if code != 1 || out != "" || !strings.Contains(errs, "is a directory") {
		t.Errorf("dump -o DIR: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, \"is a directory\"", code, out, errs)
	}
}

// TestMergeToFIFO: merge -o FIFO writes the inputs' merge into the pipe and returns (it used to
// open the output for reading, to merge into it, and hung there); the FIFO stays a FIFO.
func TestMergeToFIFO(t *testing.T) {
	dir := t.TempDir()
	a := gatedOn(t, dir, "gpuA", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), map[string]float64{"rms_norm": 1.3})
	fifo := filepath.Join(dir, "merged.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDWR, 0) // see TestGGUFDumpSpecialOutput
	if err != nil {
		t.Skipf("opening the FIFO: %v", err)
	}
	defer r.Close()
	var stdout, stderr bytes.Buffer
	rc := -1
	done := make(chan bool, 1)
	go func() {
		rc = runMain([]string{"merge", "-o", fifo, a}, &stdout, &stderr)
		done <- true
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("merge -o FIFO hangs")
	}
	if rc != 0 {
		t.Fatalf("merge -o FIFO: exit %d\n%s", rc, stderr.String())
	}
	got := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 1<<16)
		for !bytes.HasSuffix(b.Bytes(), []byte("}\n")) {
			n, err := r.Read(buf)
			if err != nil {
				break
			}
			b.Write(buf[:n])
		}
		got <- b.Bytes()
	}()
	select {
	case b := <-got:
		m, err := registry.Parse("the FIFO", b)
		if err != nil {
			t.Fatalf("what came through the FIFO does not parse: %v", err)
		}
		if c, ok := m.Cell(registry.Key{Op: "rms_norm", Type: "f32", Backend: "vulkan"}); !ok || c.State != registry.DSL {
			t.Errorf("merged rms_norm: %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Error("nothing came through the FIFO")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is now %v (%v)", st.Mode(), err)
	}
}
