package vulkan

import (
	"structs"
	"unsafe"
)

// VK_KHR_cooperative_matrix, which the Vulkan registry this package's bindings are generated
// from (1.3.239) predates: its feature struct, its properties struct and the query, written
// from the extension's specification.
const (
	extCooperativeMatrix = "VK_KHR_cooperative_matrix" // core in no Vulkan version

	vkStructureTypePhysicalDeviceCooperativeMatrixFeaturesKHR vkStructureType = 1000506000
	vkStructureTypeCooperativeMatrixPropertiesKHR             vkStructureType = 1000506001

	vkComponentTypeSint8KHR  = 3
	vkComponentTypeSint32KHR = 5
	vkScopeSubgroupKHR       = 3
)

type vkPhysicalDeviceCooperativeMatrixFeaturesKHR struct {
	_                                   structs.HostLayout
	SType                               vkStructureType `c:"sType"`
	PNext                               unsafe.Pointer  `c:"pNext"`
	CooperativeMatrix                   vkBool32        `c:"cooperativeMatrix"`
	CooperativeMatrixRobustBufferAccess vkBool32        `c:"cooperativeMatrixRobustBufferAccess"`
}

type vkCooperativeMatrixPropertiesKHR struct {
	_                      structs.HostLayout
	SType                  vkStructureType `c:"sType"`
	PNext                  unsafe.Pointer  `c:"pNext"`
	MSize                  uint32          `c:"MSize"`
	NSize                  uint32          `c:"NSize"`
	KSize                  uint32          `c:"KSize"`
	AType                  uint32          `c:"AType"`
	BType                  uint32          `c:"BType"`
	CType                  uint32          `c:"CType"`
	ResultType             uint32          `c:"ResultType"`
	SaturatingAccumulation vkBool32        `c:"saturatingAccumulation"`
	Scope                  uint32          `c:"scope"`
}

// coopShapes returns the shapes device h lists for int8 A and B with int32 C and result at
// subgroup scope, without saturating accumulation (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR);
// none when the device lacks the extension or the loader the function.
func (in *vkInst) coopShapes(h vkPhysicalDevice, exts map[string]bool) []CoopShape {
	if !exts[extCooperativeMatrix] {
		return nil
	}
	fn := in.lib.getInstanceProc(in.handle, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
	if fn == 0 {
		return nil
	}
	var n uint32
	if vkResult(int32(vkCall(fn, uintptr(h), uintptr(unsafe.Pointer(&n)), 0))) != vkSuccess || n == 0 || n > 1024 {
		return nil
	}
	props := make([]vkCooperativeMatrixPropertiesKHR, n)
	for i := range props {
		props[i].SType = vkStructureTypeCooperativeMatrixPropertiesKHR
	}
	if r := vkResult(int32(vkCall(fn, uintptr(h), uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&props[0]))))); r != vkSuccess && r != vkIncomplete {
		return nil
	}
	return coopI8Shapes(props[:min(int(n), len(props))])
}

// coopI8Shapes keeps the listed shapes the mma island can use: int8 A and B, int32 C and
// result, subgroup scope, no saturation.
func coopI8Shapes(props []vkCooperativeMatrixPropertiesKHR) []CoopShape {
	var out []CoopShape
	for _, p := range props {
		if p.AType == vkComponentTypeSint8KHR && p.BType == vkComponentTypeSint8KHR && p.CType == vkComponentTypeSint32KHR &&
			p.ResultType == vkComponentTypeSint32KHR && p.Scope == vkScopeSubgroupKHR && p.SaturatingAccumulation == 0 {
			out = append(out, CoopShape{p.MSize, p.NSize, p.KSize})
		}
	}
	return out
}
