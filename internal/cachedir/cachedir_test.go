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
