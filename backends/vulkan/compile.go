package vulkan

import (
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// PortableCaps is the lowering target for SPIR-V meant for any device (what `onesource gen`
// writes, emitted for Env Vulkan1_1 to reach every Vulkan 1.1 driver): no
// subgroup size is assumed (reductions use shared memory only), the packed int8 dot is
// unpacked, and f16 arithmetic runs in f32. Such a module needs only the storage features its
// buffers' element types need.
var PortableCaps = lower.Caps{}

// CapsFor returns the lowering target for a device: its minimum subgroup size (the pipeline then
// requires that size), its packed dot product, its f16 arithmetic and its native f32 atomic add.
func CapsFor(info DeviceInfo) lower.Caps {
	c := lower.Caps{
		DotI8x4:        info.Features.IntegerDotProduct,
		Float16:        info.Features.Float16,
		AtomicFloatAdd: info.Features.AtomicFloat32Add,
	}
	sg := info.MinSubgroupSize
	if sg == 0 || !info.SubgroupSizeControl {
		sg = info.SubgroupSize
		if !info.SubgroupSizeControl && info.MinSubgroupSize != info.MaxSubgroupSize {
			sg = 0 // cannot pin a size: do not assume one
		}
	}
	if info.Features.SubgroupShuffle && sg > 1 && sg&(sg-1) == 0 {
		c.SubgroupSize = int(sg)
		c.SubgroupArithmetic = info.Features.SubgroupArithmetic
	}
	// The mma island's cooperative-matrix body needs the feature, int8 values, a listed shape
	// it can use and a pinned subgroup size (the products are subgroup-scoped).
	if _, ok := IslandShape(info.CoopMatrixI8); ok && info.Features.CooperativeMatrix && info.Features.Int8 && c.SubgroupSize > 1 {
		c.Islands, c.IslandLanes = ir.Islands(ir.IslandMMAI8), c.SubgroupSize
	}
	return c
}

// IslandBody names the body the mma island runs with on a device: its cooperative-matrix
// products, or "portable".
func IslandBody(info DeviceInfo) string {
	s, _ := IslandShape(info.CoopMatrixI8)
	if CapsFor(info).Islands.Has(ir.IslandMMAI8) {
		return islandNote(s)
	}
	return "portable"
}

// Caps returns the lowering target of an open device (CapsFor of its enabled features).
func (d *Device) Caps() lower.Caps {
	info := d.Info()
	info.Features = info.EnabledFeatures
	return CapsFor(info)
}

// Compile lowers k for caps and emits its SPIR-V module for Vulkan 1.3 (CompileWith chooses
// the environment; Device.Compile takes the device's). k is not modified.
func Compile(k *ir.Kernel, caps lower.Caps) (*Module, error) {
	return CompileWith(k, caps, EmitOptions{})
}

// CompileWith lowers k for caps and emits it with opts (the environment, debug information, the
// cooperative-matrix shape of a kernel whose mma island caps runs natively); opts.SubgroupSize is
// set from caps. k is not modified.
func CompileWith(k *ir.Kernel, caps lower.Caps, opts EmitOptions) (*Module, error) {
	l, err := lower.Run(k, caps)
	if err != nil {
		return nil, err
	}
	opts.SubgroupSize = 0
	if caps.SubgroupSize > 1 {
		opts.SubgroupSize = uint32(caps.SubgroupSize)
	}
	return Emit(l, opts)
}

// Compile lowers k for the device's capabilities (Caps) and emits it for the environment the
// device runs (Env).
func (d *Device) Compile(k *ir.Kernel) (*Module, error) {
	info := d.Info()
	shape, _ := IslandShape(info.CoopMatrixI8)
	return CompileWith(k, d.Caps(), EmitOptions{Env: d.Env(), CoopMatrix: shape})
}
