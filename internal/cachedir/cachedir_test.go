package cachedir

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRoot(t *testing.T) {
	t.Setenv(Env, "/some/where")
	if Root() != "/some/where" || Dir("vulkan") != filepath.Join("/some/where", "vulkan") {
		t.Errorf("Root %q Dir %q under %s=/some/where", Root(), Dir("vulkan"), Env)
	}
	t.Setenv(Env, Off)
	if Root() != "" || Dir("vulkan") != "" {
		t.Errorf("%s=off: Root %q Dir %q, want both empty", Env, Root(), Dir("vulkan"))
	}
	t.Setenv(Env, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if want := filepath.Join("/xdg", "onesource"); Root() != want {
		t.Errorf("Root = %q, want %q (os.UserCacheDir)", Root(), want)
	}
}

// TestWriteRead: what Write stores Read returns; a truncated, edited or foreign file is
// ErrCorrupt, a missing one os.ErrNotExist, and no temporary file is left behind.
func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "entry")
	data := []byte("pipeline cache bytes")
	if err := Write(path, data); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Read = %q, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want the entry alone", len(entries))
	}
	raw, _ := os.ReadFile(path)
	for name, b := range map[string][]byte{
		"truncated": raw[:len(raw)-1],
		"edited":    append(append([]byte(nil), raw[:len(raw)-1]...), raw[len(raw)-1]^1),
		"foreign":   data,
		"empty":     nil,
	} {
		if _, err := Unseal(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s entry: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Read(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing entry: %v", err)
	}
}

func TestKeyAndTool(t *testing.T) {
	if Key([]byte("ab"), []byte("c")) == Key([]byte("a"), []byte("bc")) {
		t.Error("Key: two splits of the same bytes collide")
	}
	dir := t.TempDir()
	tool := filepath.Join(dir, "cc")
	os.WriteFile(tool, []byte("v1"), 0o755)
	a := Tool(tool)
	os.WriteFile(tool, []byte("v2 longer"), 0o755)
	if b := Tool(tool); a == "" || a == b {
		t.Errorf("Tool does not change with the executable: %q then %q", a, b)
	}
	if Tool(filepath.Join(dir, "none")) != "" {
		t.Error("Tool of a missing file is not empty")
	}
	t.Setenv(Env, dir)
	if e := Entry("tools", "abcdef"); e != filepath.Join(dir, "tools", "ab", "abcdef") {
		t.Errorf("Entry = %q", e)
	}
	t.Setenv(Env, Off)
	if Entry("tools", "abcdef") != "" {
		t.Error("Entry with the caches off is not empty")
	}
}
