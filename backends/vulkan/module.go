package vulkan

// Features are the optional device capabilities a SPIR-V module relies on. The emitter sets the
// ones a kernel uses; a Device enables them at creation and refuses a pipeline whose module needs
// one that is not enabled.
type Features struct {
	Int8              bool // VkPhysicalDeviceVulkan12Features.shaderInt8
	Int16             bool // VkPhysicalDeviceFeatures.shaderInt16
	Float16           bool // VkPhysicalDeviceVulkan12Features.shaderFloat16
	Float64           bool // VkPhysicalDeviceFeatures.shaderFloat64
	StorageBuffer8    bool // VkPhysicalDeviceVulkan12Features.storageBuffer8BitAccess
	StorageBuffer16   bool // VkPhysicalDeviceVulkan11Features.storageBuffer16BitAccess
	IntegerDotProduct bool // VkPhysicalDeviceVulkan13Features.shaderIntegerDotProduct
	SubgroupShuffle   bool // VkPhysicalDeviceVulkan11Properties.subgroupSupportedOperations has SHUFFLE (a property)
	SubgroupBasic     bool // subgroupSupportedOperations has BASIC (a property)
	// SubgroupArithmetic: subgroupSupportedOperations has ARITHMETIC (a property): native
	// subgroup reductions (dsl.Subgroup's Native* calls).
	SubgroupArithmetic bool
	// AtomicFloat32Add: VkPhysicalDeviceShaderAtomicFloatFeaturesEXT.shaderBufferFloat32AtomicAdd
	// and shaderSharedFloat32AtomicAdd (VK_EXT_shader_atomic_float, core in no Vulkan version):
	// native f32 atomic adds on buffers and shared arrays (OpAtomicFAddEXT).
	AtomicFloat32Add bool
	// CooperativeMatrix: VkPhysicalDeviceCooperativeMatrixFeaturesKHR.cooperativeMatrix
	// (VK_KHR_cooperative_matrix, core in no Vulkan version): the mma island's native body.
	CooperativeMatrix bool
}

// Binding describes one storage buffer of a module: descriptor set 0, binding = its index in
// Module.Bindings.
type Binding struct {
	Name     string
	ElemSize int  // bytes per element (1, 2 or 4)
	ReadOnly bool // declared NonWritable
}

// Module is a compiled kernel: SPIR-V words plus everything a device needs to run it.
type Module struct {
	Name             string    // kernel name; also the SPIR-V entry point name
	Env              Env       // the environment the words were written for (never EnvDefault)
	Words            []uint32  // the SPIR-V binary
	Bindings         []Binding // storage buffers, descriptor set 0, binding i
	PushConstantSize uint32    // bytes of the push-constant block (the kernel's scalar parameters), 0 if none
	WorkgroupSize    [3]uint32 // LocalSize of the entry point
	SubgroupSize     uint32    // the subgroup size the lowering assumed (0: none assumed); the pipeline must run with it
	SharedBytes      uint32    // workgroup memory the module declares
	Features         Features  // what the module needs enabled
}
