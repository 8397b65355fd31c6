package vulkan

import (
	"fmt"
	"strings"
	"unsafe"
)

// featureDesc ties a Features field to the Vulkan feature (or property) behind it.
type featureDesc struct {
	name     string // the Features field
	vk       string // where Vulkan states it
	property bool   // a property the device has or has not: nothing to enable
	// ext is the device extension that carries the feature on a device used below core, the
	// Vulkan version that made it core ("" and 0: core in every version the runtime takes;
	// versionNever: an extension in every version).
	ext   string
	core  Version
	field func(f *Features) *bool
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
		ext: extFloat16Int8, core: version12,
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
		ext: extFloat16Int8, core: version12,
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
		ext: ext8BitStorage, core: version12,
		field:     func(f *Features) *bool { return &f.StorageBuffer8 },
		enable:    func(c *featureChain) { c.v12.StorageBuffer8BitAccess = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.v12.StorageBuffer8BitAccess != 0 },
	},
	{
		name: "StorageBuffer16", vk: "VkPhysicalDeviceVulkan11Features.storageBuffer16BitAccess",
		ext: ext16BitStorage, core: version11,
		field:     func(f *Features) *bool { return &f.StorageBuffer16 },
		enable:    func(c *featureChain) { c.v11.StorageBuffer16BitAccess = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.v11.StorageBuffer16BitAccess != 0 },
	},
	{
		name: "IntegerDotProduct", vk: "VkPhysicalDeviceVulkan13Features.shaderIntegerDotProduct",
		ext: extIntegerDotProduct, core: version13,
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
	{
		name: "SubgroupArithmetic", vk: "VkPhysicalDeviceVulkan11Properties.subgroupSupportedOperations ARITHMETIC in compute", property: true,
		field:     func(f *Features) *bool { return &f.SubgroupArithmetic },
		supported: func(_ *featureChain, sg subgroupProps) bool { return sg.has(vkSubgroupFeatureArithmeticBit) },
	},
	{
		name: "AtomicFloat32Add", vk: "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT.shaderBufferFloat32AtomicAdd and shaderSharedFloat32AtomicAdd",
		ext: extAtomicFloat, core: versionNever,
		field: func(f *Features) *bool { return &f.AtomicFloat32Add },
		enable: func(c *featureChain) {
			c.afl.ShaderBufferFloat32AtomicAdd = vkTrue
			c.afl.ShaderSharedFloat32AtomicAdd = vkTrue
		},
		supported: func(c *featureChain, _ subgroupProps) bool {
			return c.afl.ShaderBufferFloat32AtomicAdd != 0 && c.afl.ShaderSharedFloat32AtomicAdd != 0
		},
	},
	{
		name: "CooperativeMatrix", vk: "VkPhysicalDeviceCooperativeMatrixFeaturesKHR.cooperativeMatrix",
		ext: extCooperativeMatrix, core: versionNever,
		field:     func(f *Features) *bool { return &f.CooperativeMatrix },
		enable:    func(c *featureChain) { c.cm.CooperativeMatrix = vkTrue },
		supported: func(c *featureChain, _ subgroupProps) bool { return c.cm.CooperativeMatrix != 0 },
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

// The device extensions that carry features (and subgroup size control) on a device used below
// the Vulkan version that made them core, or in every version (extAtomicFloat).
const (
	ext16BitStorage        = "VK_KHR_16bit_storage"              // core in 1.1
	ext8BitStorage         = "VK_KHR_8bit_storage"               // core in 1.2
	extFloat16Int8         = "VK_KHR_shader_float16_int8"        // core in 1.2
	extDriverProperties    = "VK_KHR_driver_properties"          // core in 1.2
	extIntegerDotProduct   = "VK_KHR_shader_integer_dot_product" // core in 1.3
	extSubgroupSizeControl = "VK_EXT_subgroup_size_control"      // core in 1.3
	extAtomicFloat         = "VK_EXT_shader_atomic_float"        // never core
)

// versionNever is featureDesc.core for a feature no Vulkan version made core: it is above every
// version a device is used at.
const versionNever = ^Version(0)

// featureChain is VkPhysicalDeviceFeatures2 with the feature structs of the version a device is
// used at chained behind it. It both receives what a device supports
// (vkGetPhysicalDeviceFeatures2) and carries what a device enables (VkDeviceCreateInfo.pNext).
//
// The runtime reads and sets features in their Vulkan 1.1, 1.2 and 1.3 structs (v11, v12, v13:
// the canonical fields). On a device used at 1.3 the chain is f2 -> v11 -> v12 -> v13. Below
// 1.2 (or 1.3) those structs may not be used; the same features come in the structs of the
// extensions that carried them (s16, s8, f16i8, dot, sgsc), chained instead where the device
// has the extension, and copied to (fromExtensions) and from (toExtensions) the canonical
// fields. The float atomics struct (afl) of VK_EXT_shader_atomic_float, core in no version, is
// chained at every version where the device has the extension and read and set in place.
type featureChain struct {
	f2  vkPhysicalDeviceFeatures2
	v11 vkPhysicalDeviceVulkan11Features
	v12 vkPhysicalDeviceVulkan12Features
	v13 vkPhysicalDeviceVulkan13Features

	s16   vkPhysicalDevice16BitStorageFeatures            // Vulkan 1.1 core, below 1.2
	s8    vkPhysicalDevice8BitStorageFeatures             // VK_KHR_8bit_storage, below 1.2
	f16i8 vkPhysicalDeviceShaderFloat16Int8Features       // VK_KHR_shader_float16_int8, below 1.2
	dot   vkPhysicalDeviceShaderIntegerDotProductFeatures // VK_KHR_shader_integer_dot_product, below 1.3
	sgsc  vkPhysicalDeviceSubgroupSizeControlFeatures     // VK_EXT_subgroup_size_control, below 1.3
	afl   vkPhysicalDeviceShaderAtomicFloatFeaturesEXT    // VK_EXT_shader_atomic_float, every version
	cm    vkPhysicalDeviceCooperativeMatrixFeaturesKHR    // VK_KHR_cooperative_matrix, every version

	version Version // the version the device is used at
}

// newFeatureChain returns an all-false chain for a device used at version, with its sTypes set
// and linked (link) for the device extensions in exts.
func newFeatureChain(version Version, exts map[string]bool) *featureChain {
	c := &featureChain{version: version}
	c.f2.SType = vkStructureTypePhysicalDeviceFeatures2
	c.v11.SType = vkStructureTypePhysicalDeviceVulkan11Features
	c.v12.SType = vkStructureTypePhysicalDeviceVulkan12Features
	c.v13.SType = vkStructureTypePhysicalDeviceVulkan13Features
	c.s16.SType = vkStructureTypePhysicalDevice16bitStorageFeatures
	c.s8.SType = vkStructureTypePhysicalDevice8bitStorageFeatures
	c.f16i8.SType = vkStructureTypePhysicalDeviceShaderFloat16Int8Features
	c.dot.SType = vkStructureTypePhysicalDeviceShaderIntegerDotProductFeatures
	c.sgsc.SType = vkStructureTypePhysicalDeviceSubgroupSizeControlFeatures
	c.afl.SType = vkStructureTypePhysicalDeviceShaderAtomicFloatFeaturesExt
	c.cm.SType = vkStructureTypePhysicalDeviceCooperativeMatrixFeaturesKHR
	c.link(exts)
	return c
}

// link chains the structs the version allows: the Vulkan 1.1/1.2 structs from 1.2 (else the
// 16-bit storage struct and those of the 8-bit storage and float16/int8 extensions in exts),
// the 1.3 struct from 1.3 (else those of the integer dot product and subgroup size control
// extensions in exts), and at every version the float atomics struct where exts has
// VK_EXT_shader_atomic_float.
func (c *featureChain) link(exts map[string]bool) {
	for _, p := range []*unsafe.Pointer{&c.f2.PNext, &c.v11.PNext, &c.v12.PNext, &c.v13.PNext, &c.s16.PNext, &c.s8.PNext, &c.f16i8.PNext, &c.dot.PNext, &c.sgsc.PNext, &c.afl.PNext, &c.cm.PNext} {
		*p = nil
	}
	tail := &c.f2.PNext
	add := func(s unsafe.Pointer, next *unsafe.Pointer) {
		*tail = s
		tail = next
	}
	if c.version >= version12 {
		add(unsafe.Pointer(&c.v11), &c.v11.PNext)
		add(unsafe.Pointer(&c.v12), &c.v12.PNext)
	} else {
		add(unsafe.Pointer(&c.s16), &c.s16.PNext)
		if exts[ext8BitStorage] {
			add(unsafe.Pointer(&c.s8), &c.s8.PNext)
		}
		if exts[extFloat16Int8] {
			add(unsafe.Pointer(&c.f16i8), &c.f16i8.PNext)
		}
	}
	if c.version >= version13 {
		add(unsafe.Pointer(&c.v13), &c.v13.PNext)
	} else {
		if exts[extIntegerDotProduct] {
			add(unsafe.Pointer(&c.dot), &c.dot.PNext)
		}
		if exts[extSubgroupSizeControl] {
			add(unsafe.Pointer(&c.sgsc), &c.sgsc.PNext)
		}
	}
	if exts[extAtomicFloat] {
		add(unsafe.Pointer(&c.afl), &c.afl.PNext)
	}
	if exts[extCooperativeMatrix] {
		add(unsafe.Pointer(&c.cm), &c.cm.PNext)
	}
}

// fromExtensions copies the features a device below 1.2 or 1.3 reported in the extension
// structs into the canonical fields (a struct not chained reads as all false).
func (c *featureChain) fromExtensions() {
	if c.version < version12 {
		c.v11.StorageBuffer16BitAccess = c.s16.StorageBuffer16BitAccess
		c.v12.StorageBuffer8BitAccess = c.s8.StorageBuffer8BitAccess
		c.v12.ShaderFloat16 = c.f16i8.ShaderFloat16
		c.v12.ShaderInt8 = c.f16i8.ShaderInt8
	}
	if c.version < version13 {
		c.v13.ShaderIntegerDotProduct = c.dot.ShaderIntegerDotProduct
		c.v13.SubgroupSizeControl = c.sgsc.SubgroupSizeControl
		c.v13.ComputeFullSubgroups = c.sgsc.ComputeFullSubgroups
	}
}

// toExtensions moves the canonical fields a device below 1.2 or 1.3 cannot take into the
// extension structs, links the chain for the extensions that carry a set feature and returns
// those extensions (the ones the device must be created with), in a fixed order.
func (c *featureChain) toExtensions() []string {
	var exts []string
	if c.version < version12 {
		c.s16.StorageBuffer16BitAccess = c.v11.StorageBuffer16BitAccess
		c.s8.StorageBuffer8BitAccess = c.v12.StorageBuffer8BitAccess
		c.f16i8.ShaderFloat16 = c.v12.ShaderFloat16
		c.f16i8.ShaderInt8 = c.v12.ShaderInt8
		c.v11 = vkPhysicalDeviceVulkan11Features{SType: c.v11.SType}
		c.v12 = vkPhysicalDeviceVulkan12Features{SType: c.v12.SType}
		if c.s8.StorageBuffer8BitAccess != 0 {
			exts = append(exts, ext8BitStorage)
		}
		if c.f16i8.ShaderFloat16 != 0 || c.f16i8.ShaderInt8 != 0 {
			exts = append(exts, extFloat16Int8)
		}
	}
	if c.version < version13 {
		c.dot.ShaderIntegerDotProduct = c.v13.ShaderIntegerDotProduct
		c.sgsc.SubgroupSizeControl = c.v13.SubgroupSizeControl
		c.sgsc.ComputeFullSubgroups = c.v13.ComputeFullSubgroups
		c.v13 = vkPhysicalDeviceVulkan13Features{SType: c.v13.SType}
		if c.dot.ShaderIntegerDotProduct != 0 {
			exts = append(exts, extIntegerDotProduct)
		}
		if c.sgsc.SubgroupSizeControl != 0 || c.sgsc.ComputeFullSubgroups != 0 {
			exts = append(exts, extSubgroupSizeControl)
		}
	}
	if c.afl.ShaderBufferFloat32AtomicAdd != 0 || c.afl.ShaderSharedFloat32AtomicAdd != 0 {
		exts = append(exts, extAtomicFloat)
	}
	if c.cm.CooperativeMatrix != 0 {
		exts = append(exts, extCooperativeMatrix)
	}
	set := map[string]bool{}
	for _, x := range exts {
		set[x] = true
	}
	c.link(set)
	return exts
}

// enableChain builds the chain a device used at version is created with, and the device
// extensions it needs: exactly the VkBool32s behind the non-property fields set in f, plus
// subgroupSizeControl and computeFullSubgroups when subgroupControl is set (pipelines that
// require a subgroup size need both), in the Vulkan 1.1-1.3 structs or, below 1.2 and 1.3, in
// the structs of the extensions that carry them (the float atomics in their extension's struct
// at every version). Nothing else is set.
func enableChain(f Features, subgroupControl bool, version Version) (*featureChain, []string) {
	c := newFeatureChain(version, nil)
	for _, d := range features {
		if d.enable != nil && *d.field(&f) {
			d.enable(c)
		}
	}
	if subgroupControl {
		c.v13.SubgroupSizeControl = vkTrue
		c.v13.ComputeFullSubgroups = vkTrue
	}
	exts := c.toExtensions()
	return c, exts
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

// describeMissing names missing features with where Vulkan states them (and the extension that
// carries them before they were core).
func describeMissing(m []featureDesc) string {
	var parts []string
	for _, d := range m {
		where := d.vk
		switch {
		case d.ext != "" && d.core == versionNever:
			where += "; " + d.ext
		case d.ext != "" && d.core > version11:
			where += fmt.Sprintf("; %s before Vulkan %d.%d", d.ext, d.core.Major(), d.core.Minor())
		}
		parts = append(parts, d.name+" ("+where+")")
	}
	return strings.Join(parts, ", ")
}
