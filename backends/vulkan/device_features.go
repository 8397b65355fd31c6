package vulkan

import (
	"strings"
	"unsafe"
)

// featureDesc ties a Features field to the Vulkan feature (or property) behind it.
type featureDesc struct {
	name     string // the Features field
	vk       string // where Vulkan states it
	property bool   // a property the device has or has not: nothing to enable
	field    func(f *Features) *bool
	// enable sets the feature's VkBool32 in a chain (nil for properties).
	enable func(c *featureChain)
	// supported reads the feature from a queried chain and subgroup properties.
	supported func(c *featureChain, sg subgroupProps) bool
}

// subgroupProps is what the device says about subgroups.
type subgroupProps struct {
	size        uint32
	stages      uint32 // VkShaderStageFlags with subgroup operations
	operations  uint32 // VkSubgroupFeatureFlags
	min, max    uint32 // subgroup size control range (0 when not reported)
	reqStages   uint32 // stages that can require a subgroup size
	maxSubgroup uint32 // maxComputeWorkgroupSubgroups
}

func (s subgroupProps) has(op uint32) bool {
	return s.stages&vkShaderStageComputeBit != 0 && s.operations&op == op
}

// features lists every Features field, in declaration order.
var features = []featureDesc{
	{
		name: "Int8", vk: "VkPhysicalDeviceVulkan12Features.shaderInt8",
		field:     func(f *Features) *bool { return &f.Int8 },
		enable:    func(c *featureChain) { c.v12.ShaderInt8 = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.v12.ShaderInt8 != 0 },
	},
	{
		name: "Int16", vk: "VkPhysicalDeviceFeatures.shaderInt16",
		field:     func(f *Features) *bool { return &f.Int16 },
		enable:    func(c *featureChain) { c.f2.Features.ShaderInt16 = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.f2.Features.ShaderInt16 != 0 },
	},
	{
		name: "Float16", vk: "VkPhysicalDeviceVulkan12Features.shaderFloat16",
		field:     func(f *Features) *bool { return &f.Float16 },
		enable:    func(c *featureChain) { c.v12.ShaderFloat16 = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.v12.ShaderFloat16 != 0 },
	},
	{
		name: "Float64", vk: "VkPhysicalDeviceFeatures.shaderFloat64",
		field:     func(f *Features) *bool { return &f.Float64 },
		enable:    func(c *featureChain) { c.f2.Features.ShaderFloat64 = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.f2.Features.ShaderFloat64 != 0 },
	},
	{
		name: "StorageBuffer8", vk: "VkPhysicalDeviceVulkan12Features.storageBuffer8BitAccess",
		field:     func(f *Features) *bool { return &f.StorageBuffer8 },
		enable:    func(c *featureChain) { c.v12.StorageBuffer8BitAccess = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.v12.StorageBuffer8BitAccess != 0 },
	},
	{
		name: "StorageBuffer16", vk: "VkPhysicalDeviceVulkan11Features.storageBuffer16BitAccess",
		field:     func(f *Features) *bool { return &f.StorageBuffer16 },
		enable:    func(c *featureChain) { c.v11.StorageBuffer16BitAccess = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.v11.StorageBuffer16BitAccess != 0 },
	},
	{
		name: "IntegerDotProduct", vk: "VkPhysicalDeviceVulkan13Features.shaderIntegerDotProduct",
		field:     func(f *Features) *bool { return &f.IntegerDotProduct },
		enable:    func(c *featureChain) { c.v13.ShaderIntegerDotProduct = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.v13.ShaderIntegerDotProduct != 0 },
	},
	{
		name: "SubgroupShuffle", vk: "VkPhysicalDeviceVulkan11Properties.subgroupSupportedOperations SHUFFLE in compute", property: true,
		field:     func(f *Features) *bool { return &f.SubgroupShuffle },
		supported: func(_ *featureChain, sg subgroupProps) bool { return sg.has(vkSubgroupFeatureShuffleBit) },
	},
	{
		name: "SubgroupBasic", vk: "VkPhysicalDeviceVulkan11Properties.subgroupSupportedOperations BASIC in compute", property: true,
		field:     func(f *Features) *bool { return &f.SubgroupBasic },
		supported: func(_ *featureChain, sg subgroupProps) bool { return sg.has(vkSubgroupFeatureBasicBit) },
	},
}

// featureList names the features set in f, e.g. "Int8, IntegerDotProduct".
func featureList(f Features) string {
	var names []string
	for _, d := range features {
		if *d.field(&f) {
			names = append(names, d.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// featureChain is VkPhysicalDeviceFeatures2 with the Vulkan 1.1, 1.2 and 1.3 feature structs
// chained behind it: f2 -> v11 -> v12 -> v13. It both receives what a device supports
// (vkGetPhysicalDeviceFeatures2) and carries what a device enables (VkDeviceCreateInfo.pNext).
type featureChain struct {
	f2  vkPhysicalDeviceFeatures2
	v11 vkPhysicalDeviceVulkan11Features
	v12 vkPhysicalDeviceVulkan12Features
	v13 vkPhysicalDeviceVulkan13Features
}

// newFeatureChain returns an all-false chain with its sTypes set and linked, holding the structs
// up to apiVersion (the 1.1/1.2 feature structs need a 1.2 device, the 1.3 one a 1.3 device).
func newFeatureChain(apiVersion Version) *featureChain {
	c := &featureChain{}
	c.f2.SType = vkStructureTypePhysicalDeviceFeatures2
	c.v11.SType = vkStructureTypePhysicalDeviceVulkan11Features
	c.v12.SType = vkStructureTypePhysicalDeviceVulkan12Features
	c.v13.SType = vkStructureTypePhysicalDeviceVulkan13Features
	if apiVersion >= version12 {
		c.f2.PNext = unsafe.Pointer(&c.v11)
		c.v11.PNext = unsafe.Pointer(&c.v12)
		if apiVersion >= version13 {
			c.v12.PNext = unsafe.Pointer(&c.v13)
		}
	}
	return c
}

// enableChain builds the chain a Vulkan 1.3 device is created with: exactly the VkBool32s
// behind the non-property fields set in f, plus subgroupSizeControl and computeFullSubgroups
// (VkPhysicalDeviceVulkan13Features) when subgroupControl is set (pipelines that require a
// subgroup size need both). Nothing else is set.
func enableChain(f Features, subgroupControl bool) *featureChain {
	c := newFeatureChain(version13)
	for _, d := range features {
		if d.enable != nil && *d.field(&f) {
			d.enable(c)
		}
	}
	if subgroupControl {
		c.v13.SubgroupSizeControl = vkTrue
		c.v13.ComputeFullSubgroups = vkTrue
	}
	return c
}

// supportedFeatures reads the Features a device supports from a queried chain.
func supportedFeatures(c *featureChain, sg subgroupProps) Features {
	var f Features
	for _, d := range features {
		*d.field(&f) = d.supported(c, sg)
	}
	return f
}

// missingFeatures returns the features set in want and not in have.
func missingFeatures(want, have Features) []featureDesc {
	var out []featureDesc
	for _, d := range features {
		if *d.field(&want) && !*d.field(&have) {
			out = append(out, d)
		}
	}
	return out
}

// describeMissing names missing features with where Vulkan states them.
func describeMissing(m []featureDesc) string {
	var parts []string
	for _, d := range m {
		parts = append(parts, d.name+" ("+d.vk+")")
	}
	return strings.Join(parts, ", ")
}
