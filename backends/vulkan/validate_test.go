package vulkan_test

import (
	"errors"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
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
