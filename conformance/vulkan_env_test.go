package conformance_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/kernels"
)

// envSample are the cells TestVulkanEnvs runs: plain f32 arithmetic, canonical reductions over
// subgroup shuffles (a required subgroup size: VK_EXT_subgroup_size_control below 1.3), 16-bit
// storage (f16 rows), 8-bit storage with f16 scales (q4_K) and the packed int8 dot product
// (matvec_q8: VK_KHR_shader_integer_dot_product below 1.3, VK_KHR_8bit_storage below 1.2).
var envSample = []string{"add/f32", "rms_norm/f32", "softmax/f32", "get_rows/f16", "matvec/q4_K", "matvec_q8/q8_0"}

// TestVulkanEnvs runs a sample of cells on the Vulkan device used at Vulkan 1.1 and 1.2, with
// modules emitted for that environment (SPIR-V 1.3 and 1.5), as subtests named
// env/op/type: each must be validated for its environment, run, and be bit-exact.
func TestVulkanEnvs(t *testing.T) {
	_, valErr := exec.LookPath("spirv-val")
	byName := map[string]kernels.Cell{}
	for _, c := range kernels.Cells() {
		byName[c.Op+"/"+c.Type.String()] = c
	}
	for _, tc := range []struct {
		env   vulkan.Env
		spirv string // the SPIR-V version the environment's modules carry
	}{
		{vulkan.Vulkan1_1, "1.3"},
		{vulkan.Vulkan1_2, "1.5"},
	} {
		t.Run(tc.env.String(), func(t *testing.T) {
			tg := &conformance.Vulkan{Env: tc.env, Robust: true}
			if err := vulkan.Available(); err != nil {
				t.Skipf("vulkan: %v", err)
			}
			if err := tg.Open(); err != nil {
				t.Fatalf("open at %v: %v", tc.env, err)
			}
			defer tg.Close()
			t.Logf("%v: lowering caps %+v, extensions %v", tc.env, tg.Device().Caps(), tg.Device().Extensions())
			if got := tg.Device().Info().Env; got != tc.env {
				t.Fatalf("the target's device runs %v, want %v", got, tc.env)
			}
			for _, name := range envSample {
				c, ok := byName[name]
				if !ok {
					t.Errorf("no cell %s", name)
					continue
				}
				t.Run(name, func(t *testing.T) {
					r := conformance.Judge(tg, c, c.DefaultScheduleFor(tg.Name(), conformance.TargetSubgroup(tg)))
					if !r.BitExact {
						t.Fatalf("%s on %v at %s [%s]: not bit-exact (max %g ULP): %s", name, tc.env, r.Schedule, r.Levels, r.MaxULP, r.Reason)
					}
					t.Logf("%s at %s [%s]: %s", name, r.Schedule, r.Levels, r.Reason)
					if want := "SPIR-V " + tc.spirv + " for " + tc.env.String(); !strings.Contains(r.Reason, want) {
						t.Errorf("the result does not say %q: %s", want, r.Reason)
					}
					if valErr == nil && !strings.Contains(r.Levels, "V") {
						t.Errorf("levels %q: spirv-val did not pass the module", r.Levels)
					}
				})
			}
		})
	}
}
