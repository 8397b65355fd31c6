package webgpu_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/webgpu"
	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/internal/testmode"
	"github.com/onesource-go/onesource/lower"
)

// TestIslandMMA runs the mma island's portable body through WGSL (with `enable subgroups;`: the
// island is a subgroup operation), naga's SPIR-V and the Vulkan device here, against the oracle.
// Each launch goes through naga (about 2 s), so it samples the input patterns (random, all
// equal, the extremes, with and without accumulation; testmode.Sample); ONESOURCE_FULL=1 runs
// every one.
func TestIslandMMA(t *testing.T) {
	d := device(t)
	ks, err := islandtest.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range testmode.Sample(islandtest.Cases(), 0, 5, 9, 10) {
		k := ks[0]
		if c.Accumulate {
			k = ks[1]
		}
		o := webgpu.OptionsFor(k)
		if o.SubgroupSize == 0 {
			t.Fatal("the island's kernel does not ask for subgroups")
		}
		low, err := lower.Run(k, o.Caps())
		if err != nil {
			t.Fatal(err)
		}
		out := runNaga(t, d, low, o, c.Bufs(), nil, [3]uint32{c.Groups, 1, 1})
		if diff := islandtest.Diff(out[2], c.Want); diff != "" {
			t.Errorf("%s: %s", c.Name, diff)
		}
	}
}
