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
