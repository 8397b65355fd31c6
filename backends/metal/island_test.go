package metal_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/internal/islandtest"
)

// TestIslandHostExecutionH runs the mma island's portable body (Metal has no int8 matrix
// instruction) as emitted MSL through host execution (level H) at SIMD-group widths 32 and 8,
// against the oracle on every input pattern, in three lane orders.
func TestIslandHostExecutionH(t *testing.T) {
	for _, w := range []int{32, 8} {
		n := islandtest.RunHost(t, host.MSL, w, islandtest.Kernel, metal.Emit)
		t.Logf("simdgroup %d: %d host runs (H) bit-exact against oracle.TileMMAI8", w, n)
	}
}
