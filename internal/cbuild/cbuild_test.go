package cbuild

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cc is a C compiler of this machine, or the test skips saying why.
func cc(t *testing.T) *Compiler {
	t.Helper()
	c, err := FindCompiler("cc", "gcc", "clang", "clang-16")
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	return c
}

func job(c *Compiler, root, src string, st *Stats) Job {
	return Job{
		Root: root, Key: Key("test", c.ID(), src), Output: "a.o", Compiler: c, Args: []string{"-c", "-o", "a.o", "a.c"}, Stats: st,
		Write: func(dir string) error { return os.WriteFile(filepath.Join(dir, "a.c"), []byte(src), 0o644) },
	}
}

// TestBuildCached: a build is made once; the second Build of the same key finds it and does not
// run the compiler; another source is another entry.
func TestBuildCached(t *testing.T) {
	c := cc(t)
	root := t.TempDir()
	var st Stats
	p1, err := Build(job(c, root, "int f(void) { return 1; }\n", &st))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Build(job(c, root, "int f(void) { return 1; }\n", &st))
	if err != nil {
		t.Fatal(err)
	}
	p3, err := Build(job(c, root, "int f(void) { return 2; }\n", &st))
	if err != nil {
		t.Fatal(err)
	}
	if built, cached := st.Counts(); built != 2 || cached != 1 || p1 != p2 || p1 == p3 {
		t.Errorf("built %d, cached %d; paths %s %s %s", built, cached, p1, p2, p3)
	}
	if fi, err := os.Stat(p1); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the output %s: %v", p1, err)
	}
}

// TestBuildFails: a compiler error is an *Error naming the kept build directory (Key.failed,
// holding the inputs) and the compiler's message; nothing is installed under the key.
func TestBuildFails(t *testing.T) {
	c := cc(t)
	root := t.TempDir()
	j := job(c, root, "int f(void) { return ; }} broken\n", nil)
	_, err := Build(j)
	var be *Error
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want an *Error", err)
	}
	if be.Dir != filepath.Join(root, j.Key+".failed") || !strings.Contains(be.Output, "a.c") {
		t.Errorf("dir %s, output %q", be.Dir, be.Output)
	}
	if _, err := os.Stat(filepath.Join(be.Dir, "a.c")); err != nil {
		t.Errorf("the failed build's source is not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, j.Key)); !os.IsNotExist(err) {
		t.Errorf("a failed build installed its entry: %v", err)
	}
}

// TestFindCompiler: a missing compiler is ErrNoCompiler naming the candidates.
func TestFindCompiler(t *testing.T) {
	_, err := FindCompiler(filepath.Join(t.TempDir(), "no-cc"))
	if !errors.Is(err, ErrNoCompiler) || !strings.Contains(err.Error(), "no-cc") {
		t.Errorf("got %v", err)
	}
	if k1, k2 := Key("a", "bc"), Key("ab", "c"); k1 == k2 || len(k1) != 32 {
		t.Errorf("keys %s %s", k1, k2)
	}
}
