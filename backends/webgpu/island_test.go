package webgpu_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/webgpu"
	"github.com/onesource-go/onesource/backends/webgpu/nagacheck"
	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/lower"
)

// TestIslandMMA runs the mma island's portable body through WGSL (with `enable subgroups;`: the
// island is a subgroup operation), naga's SPIR-V and the Vulkan device here, against the oracle
// on every input pattern. naga compiles each of the two kernels once.
func TestIslandMMA(t *testing.T) {
	d := device(t)
	ks, err := islandtest.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range ks {
		o := webgpu.OptionsFor(k)
		if o.SubgroupSize == 0 {
			t.Fatal("the island's kernel does not ask for subgroups")
		}
		low, err := lower.Run(k, o.Caps())
		if err != nil {
			t.Fatal(err)
		}
		m, err := webgpu.Emit(low, o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := nagacheck.SPIRV(m.Source, nagacheck.Options{})
		if err != nil {
			t.Fatalf("%v\n%s", err, m.Source)
		}
		vm, err := nagacheck.VulkanModule(m, r, low.SharedBytes())
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Pipeline(vm)
		if err != nil {
			t.Skipf("the device cannot run naga's module of %s: %v", low.Name, err)
		}
		for _, c := range islandtest.Cases() {
			if c.Accumulate != (i == 1) {
				continue
			}
			bufs := c.Bufs()
			outs, err := nagacheck.Run(d, p, m, bufs, []int{0, 1, 2}, nil, [3]uint32{c.Groups, 1, 1})
			if err != nil {
				t.Fatal(err)
			}
			if diff := islandtest.Diff(outs[2], c.Want); diff != "" {
				t.Errorf("%s: %s", c.Name, diff)
			}
		}
	}
}
