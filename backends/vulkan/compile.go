package vulkan

import (
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// PortableCaps is the lowering target for SPIR-V meant for any Vulkan 1.3 device (what
// `onesource gen` writes): no subgroup size is assumed (reductions use shared memory only), the
// packed int8 dot is unpacked, and f16 arithmetic runs in f32. Such a module needs only the
// storage features its buffers' element types need.
var PortableCaps = lower.Caps{}

// CapsFor returns the lowering target for a device: its minimum subgroup size (the pipeline then
// requires that size), its packed dot product and its f16 arithmetic.
func CapsFor(info DeviceInfo) lower.Caps {
	c := lower.Caps{
		DotI8x4: info.Features.IntegerDotProduct,
		Float16: info.Features.Float16,
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
	}
	return c
}

// Caps returns the lowering target of an open device (CapsFor of its enabled features).
func (d *Device) Caps() lower.Caps {
	info := d.Info()
	info.Features = info.EnabledFeatures
	return CapsFor(info)
}

// Compile lowers k for caps and emits its SPIR-V module. k is not modified.
func Compile(k *ir.Kernel, caps lower.Caps) (*Module, error) {
	l, err := lower.Run(k, caps)
	if err != nil {
		return nil, err
	}
	sg := 0
	if caps.SubgroupSize > 1 {
		sg = caps.SubgroupSize
	}
	return Emit(l, EmitOptions{SubgroupSize: uint32(sg)})
}
