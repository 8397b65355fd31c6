package conformance_test

import (
	"errors"
	"os"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/kernels"
)

// TestKernelsAllTargets compiles every kernel cell's emitted text for every target the
// toolchains here support: CUDA to PTX for sm_80 and sm_90 (clang-16), HIP to AMDGPU code
// objects for gfx90a and gfx1030 (hipcc), and the MSL host check. The conformance suite already
// validates each cell for sm_80 and gfx90a; this adds the other targets. It takes several
// minutes on two cores, so it runs when ONESOURCE_FULL=1 (scripts/main.sh sets it).
func TestKernelsAllTargets(t *testing.T) {
	if os.Getenv("ONESOURCE_FULL") != "1" {
		t.Skip("set ONESOURCE_FULL=1 to compile every kernel for every target (the main job does)")
	}
	for _, c := range kernels.Cells() {
		k, err := c.Build(c.DefaultSchedule("cuda")).Build()
		if err != nil {
			t.Fatalf("%s: %v", c.Name(), err)
		}
		src, err := cuda.Emit(k)
		if err != nil {
			t.Fatalf("%s: cuda: %v", c.Name(), err)
		}
		for _, arch := range []string{"sm_80", "sm_90"} {
			if _, err := cuda.CompileClang(src, arch); err != nil {
				skipOrFail(t, c.Name()+" cuda "+arch, err)
			}
		}
		for _, arch := range []string{"gfx90a", "gfx1030"} {
			hs, err := hip.Emit(k, arch)
			if err != nil {
				t.Fatalf("%s: hip %s: %v", c.Name(), arch, err)
			}
			if _, err := hip.CompileHIPCC(hs, arch); err != nil {
				skipOrFail(t, c.Name()+" hip "+arch, err)
			}
		}
		ms, err := metal.Emit(k)
		if err != nil {
			t.Fatalf("%s: metal: %v", c.Name(), err)
		}
		if _, err := metal.HostCheck(ms); err != nil {
			skipOrFail(t, c.Name()+" metal "+metal.HostLabel, err)
		}
	}
}

func skipOrFail(t *testing.T, what string, err error) {
	t.Helper()
	if errors.Is(err, cfamily.ErrNoTool) {
		t.Logf("%s: not checked: %v", what, err)
		return
	}
	t.Errorf("%s: %v", what, err)
}
