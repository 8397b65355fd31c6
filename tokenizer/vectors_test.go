package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// vocabDirs are the folders whose vocabularies TestVectors runs: the package's own copy of
// llama.cpp's test vectors, and the shared folder it was copied from when this checkout sits
// next to it (so a vocabulary added there is tested too; CI has only the copy).
func vocabDirs() []string {
	dirs := []string{"testdata"}
	if st, err := os.Stat(filepath.Join("..", "..", "shared", "testdata", "vocab")); err == nil && st.IsDir() {
		dirs = append(dirs, filepath.Join("..", "..", "shared", "testdata", "vocab"))
	}
	return dirs
}

// vectorCase is one test string with the ids llama.cpp's tokenizer gave it.
type vectorCase struct {
	text string
	ids  []int32
}

// readVectors reads NAME.gguf.inp and NAME.gguf.out (format: testdata/README.md).
func readVectors(t testing.TB, gguf string) []vectorCase {
	t.Helper()
	inp, err := os.ReadFile(gguf + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(gguf + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(string(inp), sep)
	if texts[len(texts)-1] != "" {
		t.Fatalf("%s.inp does not end with the separator", gguf)
	}
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d test strings, %d lines of ids", gguf, len(texts), len(lines))
	}
	cases := make([]vectorCase, len(texts))
	for i, line := range lines {
		cases[i].text = texts[i]
		cases[i].ids = []int32{}
		for _, f := range strings.Fields(line) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", gguf, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, int32(id))
		}
	}
	return cases
}

// TestVectors checks every vocabulary against llama.cpp's own tokenizer test vectors: every
// string gives exactly llama.cpp's ids (no BOS, no special-token parsing), and decoding those
// ids gives the string back.
func TestVectors(t *testing.T) {
	var files []string
	for _, dir := range vocabDirs() {
		m, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 2 {
		t.Fatalf("found %d vocabulary files, want the two in testdata", len(files))
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			tok, err := Open(file)
			if err != nil {
				t.Fatal(err)
			}
			cases := readVectors(t, file)
			pass := 0
			for i, c := range cases {
				got, err := tok.Encode(c.text, EncodeOptions{})
				if err != nil {
					t.Errorf("case %d %q: %v", i, c.text, err)
					continue
				}
				ok := true
				if !slices.Equal(got, c.ids) {
					t.Errorf("case %d %q:\n got  %v\n want %v", i, c.text, got, c.ids)
					ok = false
				}
				back, err := tok.Decode(c.ids, DecodeOptions{})
				if err != nil || back != c.text {
					t.Errorf("case %d: Decode(%v) = %q, %v; want %q", i, c.ids, back, err, c.text)
					ok = false
				}
				if ok {
					pass++
				}
			}
			t.Logf("%s (%s/%s): %d of %d cases give llama.cpp's ids and decode back", filepath.Base(file), tok.Model(), tok.Pre(), pass, len(cases))
		})
	}
}
