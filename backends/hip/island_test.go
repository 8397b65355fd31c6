package hip_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

func islandKernel(t *testing.T, acc bool) *ir.Kernel {
	t.Helper()
	k, err := islandtest.Kernel(acc).Build()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestIslandHostExecutionH runs the mma island's bodies for AMD through host execution (level H):
// MFMA on gfx940 (wave64), WMMA on gfx1100 (wave32), each instruction emulated from its
// documented register layout, and the portable body (gfx90a: no matrix island) at both wave
// sizes, against the oracle on every input pattern, in three lane orders.
func TestIslandHostExecutionH(t *testing.T) {
	for _, c := range []struct {
		arch string
		wave int
	}{{"gfx940", 64}, {"gfx1100", 32}, {"gfx90a", 64}, {"gfx90a", 32}} {
		n := islandtest.RunHost(t, host.HIP, c.wave, islandtest.Kernel, func(k *ir.Kernel) (string, error) { return hip.Emit(k, c.arch) })
		t.Logf("%s wave%d (%s body): %d host runs (H) bit-exact against oracle.TileMMAI8", c.arch, c.wave, hip.IslandBody(ir.IslandMMAI8, c.arch), n)
	}
}

// TestIslandPartialWave runs a 32-invocation workgroup on 64-lane waves: gfx940's MFMA body
// needs a whole wave64, so the lowering keeps the portable body, which covers the tile with the
// 32 lanes the wave holds.
func TestIslandPartialWave(t *testing.T) {
	k, err := islandtest.SmallKernel(false).Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, low, err := hip.EmitLowered(k, "gfx940"); err != nil || len(lower.NativeIslands(low)) != 0 {
		t.Fatalf("gfx940, 32 lanes: native islands %v (%v), want the portable body", lower.NativeIslands(low), err)
	}
	n := islandtest.RunHost(t, host.HIP, 64, islandtest.SmallKernel, func(k *ir.Kernel) (string, error) { return hip.Emit(k, "gfx940") })
	t.Logf("32 lanes on wave64: %d host runs (H) bit-exact against oracle.TileMMAI8", n)
}

// TestIslandCaps checks which targets lower the island natively.
func TestIslandCaps(t *testing.T) {
	k := islandKernel(t, false)
	for _, c := range []struct {
		arch, marker string
	}{{"gfx940", "os_mma_i8_mfma("}, {"gfx940:xnack-", "os_mma_i8_mfma("}, {"gfx1100", "os_mma_i8_wmma32("}, {"gfx1103", "os_mma_i8_wmma32("},
		{"gfx90a", ""}, {"gfx1030", ""}, {hip.Generic, ""}} {
		src, low, err := hip.EmitLowered(k, c.arch)
		if err != nil {
			t.Fatal(err)
		}
		native := len(lower.NativeIslands(low)) > 0
		if native != (c.marker != "") || (c.marker != "" && !strings.Contains(src, c.marker)) {
			t.Errorf("%s: native island %v, want body %q", c.arch, native, c.marker)
		}
	}
}

// TestIslandCompile compiles every IslandTable target's text with clang (its builtins are
// checked against the target's features: a target without the instruction is an error) and
// finds the instruction in the AMDGPU assembly; hipcc (ROCm's own clang) builds the gfx940 code
// object.
func TestIslandCompile(t *testing.T) {
	var archs []string
	for a := range hip.IslandTable {
		archs = append(archs, a)
	}
	sort.Strings(archs)
	for _, arch := range archs {
		src, err := hip.Emit(islandKernel(t, true), arch)
		if err != nil {
			t.Fatal(err)
		}
		r, err := hip.AssembleClang(src, arch)
		if errors.Is(err, cfamily.ErrNoTool) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		want := "v_wmma_i32_16x16x16_iu8"
		if strings.HasPrefix(arch, "gfx94") {
			want = "v_mfma_i32_16x16x32_i8"
		}
		if !strings.Contains(string(r.Output), want) {
			t.Errorf("%s: no %s in the assembly", arch, want)
		}
	}
	src, err := hip.Emit(islandKernel(t, true), "gfx940")
	if err != nil {
		t.Fatal(err)
	}
	r, err := hip.CompileHIPCC(src, "gfx940")
	if errors.Is(err, cfamily.ErrNoTool) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", r.Label, len(r.Output))
}
