package lower_test

import (
	"testing"

	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// islandSeeds are fuzz inputs of islandtest.FuzzKernel: a well-formed island (shared u32, u32
// and i32 arrays, constant tiles), the same on a subgroup-id tile, under lane control, with a
// barrier in its body, with raw immediates, and the zero input.
var islandSeeds = [][]byte{
	// wg 32; 3 arrays: u32 128, u32 128, i32 256; tiles const 0, 0, 0; no truncation; an
	// IslandCall A 0, B 1, D 2, accumulating; empty body; no control.
	{0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 2, 0, 0, 1},
	// the same on a 64-lane workgroup with subgroup-id tiles
	{1, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 1, 0, 1, 2, 0, 0, 1},
	// the first under lane control
	{0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 2, 0, 0, 0},
	// the first with a barrier in its portable body
	{0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 2, 0, 1, 1},
	// raw immediates
	{0, 1, 3, 2, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 9, 9, 9, 9, 9, 9, 9, 9, 0, 1},
	{},
}

// FuzzIsland builds kernels around one island from fuzz bytes: Verify must answer without
// panicking, and a kernel it accepts must lower for a target with the island native and for
// one without, keeping the island exactly where the target runs it natively.
func FuzzIsland(f *testing.F) {
	for _, s := range islandSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k := islandtest.FuzzKernel(data)
		if ir.Verify(k) != nil {
			return
		}
		for _, c := range []lower.Caps{{}, {SubgroupSize: 32, DotI8x4: true}, {SubgroupSize: 32, Islands: ir.Islands(ir.IslandMMAI8), IslandLanes: 32},
			{SubgroupSize: 32, Islands: ir.Islands(ir.IslandMMAI8), IslandLanes: 64}} {
			low, err := lower.Run(k, c)
			if err != nil {
				t.Fatalf("a verified kernel does not lower for %+v: %v\n%s", c, err, k)
			}
			native := len(lower.NativeIslands(low)) > 0
			want := c.Islands.Has(ir.IslandMMAI8) && k.Lanes()%c.IslandLanes == 0
			if native != want {
				t.Fatalf("caps %+v, %d lanes: native island %v, want %v", c, k.Lanes(), native, want)
			}
		}
	})
}

// TestIslandSeedsVerify checks the seeds reach both sides of the verifier: the first is a valid
// island, the lane-controlled one is refused.
func TestIslandSeedsVerify(t *testing.T) {
	if err := ir.Verify(islandtest.FuzzKernel(islandSeeds[0])); err != nil {
		t.Fatalf("seed 0 does not verify: %v", err)
	}
	if err := ir.Verify(islandtest.FuzzKernel(islandSeeds[2])); err == nil {
		t.Fatal("seed 2 (the island under lane control) verifies")
	}
	if err := ir.Verify(islandtest.FuzzKernel(islandSeeds[3])); err == nil {
		t.Fatal("seed 3 (a barrier in the portable body) verifies")
	}
}
