package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/oracle"
)

// ggufRun calls runMain with the gguf subcommand.
func ggufRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runMain(append([]string{"gguf"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// writeAllTypes writes a GGUF file with one tensor of every oracle type (2 rows of two blocks;
// bytes from the oracle's quantizer where it has one, random block bytes otherwise).
func writeAllTypes(t *testing.T, path string) []gguf.WriteTensor {
	t.Helper()
	var ts []gguf.WriteTensor
	seed := uint64(1)
	for _, typ := range oracle.Types() {
		ti, _ := typ.Info()
		n := 2 * ti.BlockSize
		size, _ := oracle.RowSize(typ, n)
		data := make([]byte, 2*size)
		src := make([]float32, 2*n)
		for i := range src {
			seed = seed*6364136223846793005 + 1442695040888963407
			src[i] = float32(int32(seed>>32)) / (1 << 31)
		}
		if err := oracle.Quantize(typ, src, data); err != nil {
			for i := range data {
				seed = seed*6364136223846793005 + 1442695040888963407
				data[i] = byte(seed >> 56)
			}
		}
		ts = append(ts, gguf.WriteTensor{Name: "t." + typ.String(), Type: typ, Dims: []uint64{uint64(n), 2}, Data: data})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	md := []gguf.KV{{Key: "general.architecture", Value: gguf.Value{V: "test"}}}
	if err := gguf.Write(f, md, ts); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestGGUFLsAndDump(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "all.gguf")
	ts := writeAllTypes(t, path)

	code, stdout, stderr := ggufRun("ls", path)
	if code != 0 {
		t.Fatalf("ls exited %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "GGUF v3, architecture test, "+fmt.Sprint(len(ts))+" tensors") {
		t.Errorf("ls header:\n%s", stdout)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := strings.Split(stdout, "\n")
	for _, w := range ts {
		tn, _ := f.Tensor(w.Name)
		want := []string{w.Name, w.Type.String(), fmt.Sprintf("%dx2", w.Dims[0]), fmt.Sprint(tn.NumElements()), fmt.Sprint(tn.Size), fmt.Sprint(uint64(f.DataOffset) + tn.Offset)}
		found := false
		for _, l := range lines {
			if fields := strings.Fields(l); len(fields) == 6 && fields[0] == w.Name {
				got := fields
				if strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("ls row %q, want %v", l, want)
				}
				found = true
			}
		}
		if !found {
			t.Errorf("ls does not list %s:\n%s", w.Name, stdout)
		}
	}
	t.Logf("onesource gguf ls:\n%s", stdout)

	for i, w := range ts {
		out := filepath.Join(dir, fmt.Sprintf("out%d.f32", i))
		args := []string{"dump", path, w.Name, "-o", out}
		if i%2 == 1 {
			args = []string{"dump", "-o=" + out, path, w.Name}
		}
		code, stdout, stderr := ggufRun(args...)
		if code != 0 {
			t.Fatalf("dump %s exited %d: %s", w.Name, code, stderr)
		}
		if !strings.Contains(stdout, w.Name) {
			t.Errorf("dump summary %q", stdout)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, 2*w.Dims[0])
		if err := oracle.Dequantize(w.Type, w.Data, want); err != nil {
			t.Fatal(err)
		}
		if len(got) != 4*len(want) {
			t.Fatalf("%s: %d bytes, want %d", w.Name, len(got), 4*len(want))
		}
		for j, v := range want {
			if binary.LittleEndian.Uint32(got[4*j:]) != math.Float32bits(v) {
				t.Fatalf("%s: value %d differs from oracle.Dequantize", w.Name, j)
			}
		}
	}
}

func TestGGUFErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ok.gguf")
	writeAllTypes(t, path)
	bad := filepath.Join(dir, "bad.gguf")
	raw, _ := os.ReadFile(path)
	os.WriteFile(bad, raw[:len(raw)/2], 0o644)
	notGGUF := filepath.Join(dir, "text.gguf")
	os.WriteFile(notGGUF, []byte("hello world, not a model"), 0o644)

	cases := []struct {
		name string
		args []string
		code int
		msg  string // substring of stderr
	}{
		{"no subcommand", nil, 2, "usage"},
		{"unknown subcommand", []string{"cat", path}, 2, "unknown subcommand"},
		{"ls without file", []string{"ls"}, 2, "exactly one FILE"},
		{"ls missing file", []string{"ls", filepath.Join(dir, "nope.gguf")}, 1, "no such file"},
		{"ls truncated file", []string{"ls", bad}, 1, "past the end of the file"},
		{"ls not gguf", []string{"ls", notGGUF}, 1, "not a GGUF file"},
		{"dump without -o", []string{"dump", path, "t.f32"}, 2, "missing -o"},
		{"dump without tensor", []string{"dump", path, "-o", "x"}, 2, "want FILE and TENSOR"},
		{"dump dangling -o", []string{"dump", path, "t.f32", "-o"}, 2, "-o needs"},
		{"dump unknown flag", []string{"dump", "-x", path, "t.f32", "-o", "x"}, 2, "unknown flag"},
		{"dump unknown tensor", []string{"dump", path, "nope", "-o", filepath.Join(dir, "n.f32")}, 1, `no tensor "nope"`},
		{"dump bad output", []string{"dump", path, "t.f32", "-o", filepath.Join(dir, "missing", "x.f32")}, 1, "no such file"},
		{"dump truncated file", []string{"dump", bad, "t.f32", "-o", filepath.Join(dir, "b.f32")}, 1, "at byte"},
	}
	for _, c := range cases {
		code, _, stderr := ggufRun(c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %q", c.name, code, stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "n.f32")); err == nil {
		t.Error("a failed dump left its output file")
	}
}

// TestGGUFDumpOntoInput: an output that is the input (by name, through a symbolic link, or a
// hard link) is refused and the input is left intact; an existing output survives a dump that
// fails.
func TestGGUFDumpOntoInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	writeAllTypes(t, path)
	orig, _ := os.ReadFile(path)
	sym := filepath.Join(dir, "sym.gguf")
	if err := os.Symlink(path, sym); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.gguf")
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{path, sym, hard, filepath.Join(dir, ".", "m.gguf")} {
		code, _, errs := ggufRun("dump", path, "t.f32", "-o", out)
		if code != 1 || !strings.Contains(errs, "refusing to overwrite it") {
			t.Errorf("-o %s: exit %d, %s", out, code, errs)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, orig) {
			t.Fatalf("-o %s changed the input", out)
		}
	}
	// An existing output is replaced only by a complete dump.
	out := filepath.Join(dir, "keep.f32")
	os.WriteFile(out, []byte("previous"), 0o644)
	if code, _, _ := ggufRun("dump", path, "nope", "-o", out); code != 1 {
		t.Fatalf("unknown tensor: exit %d", code)
	}
	if b, _ := os.ReadFile(out); string(b) != "previous" {
		t.Errorf("a failed dump changed the existing output to %q", b)
	}
	if code, _, errs := ggufRun("dump", path, "t.f32", "-o", out); code != 0 {
		t.Fatalf("dump: %d %s", code, errs)
	}
	if st, _ := os.Stat(out); st.Size() != 4*2*2 {
		t.Errorf("output of %d bytes", st.Size())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
