package vulkan_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/cachedir"
)

// TestValidateBites checks that Validate really rejects a broken module (so every caller's V
// level means something) and tells a missing validator apart.
func TestValidateBites(t *testing.T) {
	err := vulkan.Validate([]uint32{0x07230203, 0x00010600, 0, 1, 0, 12345})
	if errors.Is(err, vulkan.ErrNoValidator) {
		t.Skip("spirv-val not installed")
	}
	if err == nil {
		t.Fatal("spirv-val accepted a module with a header and one bogus word")
	}
}

// TestWordsInvertsBytes: Words(Bytes(w)) == w, and Words refuses what is not a little-endian
// SPIR-V module.
func TestWordsInvertsBytes(t *testing.T) {
	w := []uint32{0x07230203, 0x00010600, 7, 1, 0, 0xdeadbeef}
	got, err := vulkan.Words(vulkan.Bytes(w))
	if err != nil || len(got) != len(w) {
		t.Fatalf("Words(Bytes(w)) = %x, %v", got, err)
	}
	for i := range w {
		if got[i] != w[i] {
			t.Fatalf("word %d = %#x, want %#x", i, got[i], w[i])
		}
	}
	b := vulkan.Bytes(w)
	for name, bad := range map[string][]byte{
		"ragged":     b[:len(b)-1],
		"short":      b[:16],
		"big-endian": {0x07, 0x23, 0x02, 0x03, 0, 1, 6, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0},
	} {
		if _, err := vulkan.Words(bad); err == nil {
			t.Errorf("%s: Words accepted %d bytes", name, len(bad))
		}
	}
}

// fakeValidator puts a spirv-val on PATH that counts its runs in a file and exits with code.
func fakeValidator(t *testing.T, code int) (count func() int) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "runs")
	script := fmt.Sprintf("#!/bin/sh\necho run >> %s\nexit %d\n", log, code)
	if err := os.WriteFile(filepath.Join(dir, "spirv-val"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "run")
	}
}

// TestValidateRemembersAccepted: a module the validator accepted is not validated again (the
// cache is keyed by the validator and the words); a rejected one always is; with the caches off
// nothing is remembered.
func TestValidateRemembersAccepted(t *testing.T) {
	t.Setenv(cachedir.Env, t.TempDir())
	runs := fakeValidator(t, 0)
	mod := []uint32{0x07230203, 0x00010600, 0, 1, 0}
	for i := 0; i < 3; i++ {
		if err := vulkan.Validate(mod); err != nil {
			t.Fatal(err)
		}
	}
	other := append(append([]uint32(nil), mod...), 7)
	if err := vulkan.Validate(other); err != nil {
		t.Fatal(err)
	}
	if n := runs(); n != 2 {
		t.Errorf("the validator ran %d times for two modules validated four times, want 2", n)
	}
	t.Setenv(cachedir.Env, cachedir.Off)
	vulkan.Validate(mod)
	if n := runs(); n != 3 {
		t.Errorf("caches off: the validator ran %d times in all, want 3", n)
	}

	t.Setenv(cachedir.Env, t.TempDir())
	rejects := fakeValidator(t, 1)
	for i := 0; i < 2; i++ {
		if err := vulkan.Validate(mod); err == nil {
			t.Fatal("a rejecting validator's verdict came back as accepted")
		}
	}
	if n := rejects(); n != 2 {
		t.Errorf("a rejected module was validated %d times in two calls, want 2", n)
	}
}
