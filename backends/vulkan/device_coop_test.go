package vulkan

import "testing"

// TestCoopI8Shapes checks the filter of listed cooperative-matrix properties: only int8 x int8
// into int32 at subgroup scope, without saturation.
func TestCoopI8Shapes(t *testing.T) {
	p := func(m, n, k, a, b, c, r uint32, sat vkBool32, scope uint32) vkCooperativeMatrixPropertiesKHR {
		return vkCooperativeMatrixPropertiesKHR{MSize: m, NSize: n, KSize: k, AType: a, BType: b, CType: c, ResultType: r, SaturatingAccumulation: sat, Scope: scope}
	}
	const s8, s32, f16, u8 = vkComponentTypeSint8KHR, vkComponentTypeSint32KHR, 0, 7
	got := coopI8Shapes([]vkCooperativeMatrixPropertiesKHR{
		p(16, 16, 32, s8, s8, s32, s32, 0, vkScopeSubgroupKHR),
		p(16, 16, 16, f16, f16, 1, 1, 0, vkScopeSubgroupKHR),  // float
		p(16, 8, 32, u8, s8, s32, s32, 0, vkScopeSubgroupKHR), // unsigned A
		p(16, 8, 32, s8, s8, s32, s32, 1, vkScopeSubgroupKHR), // saturating
		p(16, 16, 32, s8, s8, s32, s32, 0, 2),                 // workgroup scope
		p(16, 8, 16, s8, s8, s32, s32, 0, vkScopeSubgroupKHR),
	})
	want := []CoopShape{{16, 16, 32}, {16, 8, 16}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("coopI8Shapes = %v, want %v", got, want)
	}
}
