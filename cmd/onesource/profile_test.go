package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/llama"
)

// TestProfileSynthetic profiles the synthetic llama model: the table names the step, the cells
// with who served them, and the roles.
func TestProfileSynthetic(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	var b bytes.Buffer
	if err := llama.SmallSynthetic.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if rc := runMain([]string{"profile", "-steps", "2", path}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d\n%s", rc, errb.String())
	}
	for _, want := range []string{"decode step on", "ms/step", "share %", "GB/s", "roofline %", "served by", "registry",
		"matvec/q6_K/vulkan", "twin lanes=", "attn_decode/f32/vulkan", "ffn_down", "token_embd"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the profile:\n%s", want, out.String())
		}
	}
	for _, bad := range [][]string{{"profile"}, {"profile", filepath.Join(t.TempDir(), "none.gguf")}, {"profile", "-steps", "0", path}} {
		if rc := runMain(bad, &out, &errb); rc == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}
