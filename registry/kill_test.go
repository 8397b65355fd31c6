package registry

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

const writerEnv = "ONESOURCE_REGISTRY_TEST_WRITER"

// TestHelperWriter is the child of TestSIGKILLMidSave: with writerEnv set to a path it loops
// load, register one more cell, save, writing slowly and announcing each phase on stdout.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(writerEnv)
	if path == "" {
		t.Skip("helper process for TestSIGKILLMidSave")
	}
	atomicfile.WriteHook = func(f *os.File, data []byte) error {
		fmt.Println("WRITING")
		for len(data) > 0 {
			n := min(len(data), 32)
			if _, err := f.Write(data[:n]); err != nil {
				return err
			}
			data = data[n:]
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	for i := 0; ; i++ {
		r, err := Load(path)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		r.Register(Key{"op" + strconv.Itoa(i), "f32", "vulkan"}, "sha256:hand", "writer")
		if err := r.Save(""); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Println("SAVED", len(r.Cells()))
	}
}

func TestSIGKILLMidSave(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cells.json")
	r, _ := Open(path)
	must(t, r.Register(k1, "sha256:hand", "seed"))
	must(t, r.Save(""))

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.v")
	cmd.Env = append(os.Environ(), writerEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	saved, writing := 0, 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "SAVED "):
			saved, _ = strconv.Atoi(strings.TrimPrefix(line, "SAVED "))
		case line == "WRITING":
			writing++
		case strings.HasPrefix(line, "ERROR"):
			t.Fatalf("writer: %s", line)
		}
		if writing >= 4 && line == "WRITING" {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if saved < 2 {
		t.Fatalf("writer completed %d saves before the kill", saved)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatalf("file after SIGKILL mid-save: %v", err)
	}
	n := len(got.Cells())
	// The kill landed while the next version was being written: the file is the last saved one
	// (one more only if the rename raced the signal).
	if n != saved && n != saved+1 {
		t.Fatalf("file has %d cells; last completed save had %d", n, saved)
	}
	t.Logf("killed mid-write after %d saves; file intact with %d cells", writing-1, n)
	// The killed writer's temp file is left behind, but never mistaken for the registry.
	ents, _ := os.ReadDir(dir)
	partial := 0
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			partial++
			if _, err := Load(filepath.Join(dir, e.Name())); err == nil && n == saved {
				t.Errorf("temp file %s is complete: the kill did not land mid-write", e.Name())
			}
		}
	}
	if partial == 0 && n == saved {
		t.Errorf("no partial temp file: the kill did not land mid-write")
	}
}

const racerEnv = "ONESOURCE_REGISTRY_TEST_RACER"

// TestHelperRacer is the child of TestConcurrentSaves: with racerEnv set to "PATH NAME N" it
// registers N cells named NAME-i in the registry at PATH, one load-register-save at a time,
// reloading and retrying when the file changed under it.
func TestHelperRacer(t *testing.T) {
	spec := os.Getenv(racerEnv)
	if spec == "" {
		t.Skip("helper process for TestConcurrentSaves")
	}
	f := strings.Fields(spec)
	n, _ := strconv.Atoi(f[2])
	for i := 0; i < n; i++ {
		for {
			r, err := Load(f[0])
			if err != nil {
				fmt.Println("ERROR", err)
				os.Exit(1)
			}
			r.Register(Key{f[1] + "-" + strconv.Itoa(i), "f32", "vulkan"}, "sha256:hand", "racer")
			err = r.Save("")
			if err == nil {
				break
			}
			if !errors.Is(err, ErrChanged) {
				fmt.Println("ERROR", err)
				os.Exit(1)
			}
		}
	}
	fmt.Println("DONE")
}

// TestConcurrentSaves: three processes register cells in one registry file at once, each
// retrying when its save is refused because the file changed. No save that returned nil loses
// another's cell: every cell is in the file at the end.
func TestConcurrentSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.json")
	r, _ := Open(path)
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	const procs, each = 3, 40
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRacer$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s w%d %d", racerEnv, path, p, each))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil || !strings.Contains(outs[i].String(), "DONE") {
			t.Fatalf("writer %d: %v\n%s", i, err, outs[i].String())
		}
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Cells()); n != procs*each {
		t.Fatalf("%d cells in the file, want %d: saves that succeeded lost others' cells", n, procs*each)
	}
}
