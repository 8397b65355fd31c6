package vulkan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// islandCaps is a device with 32-lane subgroups that lists a cooperative-matrix shape.
var islandCaps = lower.Caps{SubgroupSize: 32, Islands: ir.Islands(ir.IslandMMAI8), IslandLanes: 32}

// TestIslandSPIRV emits the mma island's cooperative-matrix body for every shape it can use
// (16x16x32: one product per tile; 16x8x32: two, over the columns; 16x16x16: two, over k;
// 16x8x16: four) with and without accumulation, in every environment, and validates each module
// with a spirv-val that knows SPV_KHR_cooperative_matrix.
func TestIslandSPIRV(t *testing.T) {
	ks, err := islandtest.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []vulkan.CoopShape{{16, 16, 32}, {16, 8, 32}, {16, 16, 16}, {16, 8, 16}} {
		for _, k := range ks {
			for _, env := range []vulkan.Env{vulkan.Vulkan1_1, vulkan.Vulkan1_2, vulkan.Vulkan1_3} {
				m, err := vulkan.CompileWith(k, islandCaps, vulkan.EmitOptions{Env: env, CoopMatrix: s})
				if err != nil {
					t.Fatalf("%v %s %v: %v", s, k.Name, env, err)
				}
				if err := vulkan.Validate(m.Words); err != nil {
					if errors.Is(err, vulkan.ErrNoValidator) {
						t.Skipf("level V not reached: %v", err)
					}
					t.Errorf("%v %s %v: %v", s, k.Name, env, err)
				}
			}
		}
	}
}

// TestIslandShape checks which listed shapes the body can use.
func TestIslandShape(t *testing.T) {
	for _, c := range []struct {
		listed []vulkan.CoopShape
		want   vulkan.CoopShape
		ok     bool
	}{
		{nil, vulkan.CoopShape{}, false},
		{[]vulkan.CoopShape{{8, 8, 32}, {32, 8, 16}}, vulkan.CoopShape{}, false},
		{[]vulkan.CoopShape{{16, 8, 16}, {16, 16, 16}}, vulkan.CoopShape{16, 16, 16}, true},
		{[]vulkan.CoopShape{{16, 8, 32}, {16, 16, 32}, {16, 16, 16}}, vulkan.CoopShape{16, 16, 32}, true},
		{[]vulkan.CoopShape{{16, 16, 64}, {16, 32, 32}}, vulkan.CoopShape{}, false},
	} {
		got, ok := vulkan.IslandShape(c.listed)
		if got != c.want || ok != c.ok {
			t.Errorf("IslandShape(%v) = %v, %v; want %v, %v", c.listed, got, ok, c.want, c.ok)
		}
	}
}

// TestIslandCapsFor checks the device decides: the island runs natively only on a device with
// the cooperative-matrix feature, int8 values, a usable listed shape and a pinned subgroup size.
func TestIslandCapsFor(t *testing.T) {
	dev := vulkan.DeviceInfo{
		SubgroupSize: 32, MinSubgroupSize: 32, MaxSubgroupSize: 32, SubgroupSizeControl: true,
		CoopMatrixI8: []vulkan.CoopShape{{16, 8, 32}, {16, 16, 32}},
		Features:     vulkan.Features{SubgroupShuffle: true, SubgroupBasic: true, Int8: true, CooperativeMatrix: true},
	}
	if c := vulkan.CapsFor(dev); !c.Islands.Has(ir.IslandMMAI8) || c.IslandLanes != 32 {
		t.Errorf("a device listing 16x16x32: islands %b on %d lanes, want the mma island on 32", c.Islands, c.IslandLanes)
	}
	if b := vulkan.IslandBody(dev); b != "cooperative matrix 16x16x32 x1" {
		t.Errorf("IslandBody = %q", b)
	}
	for name, mod := range map[string]func(d *vulkan.DeviceInfo){
		"no feature":   func(d *vulkan.DeviceInfo) { d.Features.CooperativeMatrix = false },
		"no int8":      func(d *vulkan.DeviceInfo) { d.Features.Int8 = false },
		"no shape":     func(d *vulkan.DeviceInfo) { d.CoopMatrixI8 = []vulkan.CoopShape{{32, 32, 8}} },
		"no subgroups": func(d *vulkan.DeviceInfo) { d.Features.SubgroupShuffle = false },
	} {
		d := dev
		mod(&d)
		if c := vulkan.CapsFor(d); c.Islands != 0 || vulkan.IslandBody(d) != "portable" {
			t.Errorf("%s: islands %b, body %q; want the portable body", name, c.Islands, vulkan.IslandBody(d))
		}
	}
}

// TestIslandLavapipe runs the mma island on the Vulkan device here (level X; lavapipe lists no
// cooperative matrices, so its portable body) against the oracle on every input pattern.
func TestIslandLavapipe(t *testing.T) {
	d := vktest.Device(t)
	for _, c := range islandtest.Cases() {
		out := vktest.Run(t, d, islandtest.Kernel(c.Accumulate), c.Bufs(), nil, [3]uint32{c.Groups, 1, 1})
		if diff := islandtest.Diff(out[2], c.Want); diff != "" {
			t.Errorf("%s: %s", c.Name, diff)
		}
	}
	t.Logf("%s: %d launches bit-exact against oracle.TileMMAI8 (body: %s)", d.Info().Name, len(islandtest.Cases()), vulkan.IslandBody(d.Info()))
}

// FuzzIslandEmit emits kernels around one island built from fuzz bytes (islandtest.FuzzKernel)
// with the island native, at a cooperative-matrix shape the first byte picks (one the body
// cannot use among them): the emitter never panics, refuses the shape it cannot use, and every
// module it writes passes spirv-val.
func FuzzIslandEmit(f *testing.F) {
	for _, s := range [][]byte{
		{0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 2, 0, 0, 1},
		{1, 1, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 1, 0, 1, 2, 0, 0, 1},
		{4, 0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 2, 1, 0, 1},
		{2, 0, 1, 3, 2, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 9, 9, 9, 9, 9, 9, 9, 9, 0, 1},
	} {
		f.Add(s)
	}
	shapes := []vulkan.CoopShape{{16, 16, 32}, {16, 8, 32}, {16, 16, 16}, {16, 8, 16}, {8, 8, 8}}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		shape := shapes[int(data[0])%len(shapes)]
		k := islandtest.FuzzKernel(data[1:])
		if ir.Verify(k) != nil {
			return
		}
		caps := islandCaps
		caps.IslandLanes = int(k.WorkgroupSize[0])
		low, err := lower.Run(k, caps)
		if err != nil {
			t.Fatalf("a verified kernel does not lower: %v", err)
		}
		m, err := vulkan.Emit(low, vulkan.EmitOptions{SubgroupSize: 32, CoopMatrix: shape})
		_, usable := vulkan.IslandShape([]vulkan.CoopShape{shape})
		switch {
		case err != nil && strings.Contains(err.Error(), "internal emitter error"):
			t.Fatal(err)
		case err != nil && (usable || len(lower.NativeIslands(low)) == 0):
			t.Fatalf("shape %v: %v", shape, err)
		case err == nil && !usable && len(lower.NativeIslands(low)) > 0:
			t.Fatalf("shape %v emitted, the body cannot use it", shape)
		case err == nil:
			if verr := vulkan.Validate(m.Words); verr != nil && !errors.Is(verr, vulkan.ErrNoValidator) {
				t.Fatalf("shape %v: %v", shape, verr)
			}
		}
	})
}
