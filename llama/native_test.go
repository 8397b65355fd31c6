package llama

import (
	"path/filepath"
	"testing"

	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/engine"
)

// TestSyntheticModelMatchesOracleNative is TestSyntheticModelMatchesOracle on native CPU code,
// with the Vulkan library made absent: every op as machine code built by the host's compiler,
// the oracle's logits byte for byte. Skips, saying why, without a C compiler.
func TestSyntheticModelMatchesOracleNative(t *testing.T) {
	if err := native.Available(); err != nil {
		t.Skipf("native CPU code unavailable: %v", err)
	}
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	testSynthetic(t, engine.Options{Backend: engine.Native})
}
