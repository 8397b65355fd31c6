package nagacheck

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/backends/webgpu"
	"github.com/onesource-go/onesource/internal/devrun"
)

// VulkanModule makes the module a Vulkan device runs from naga's SPIR-V r of the WGSL module
// m: the entry point, workgroup size and shared memory m declares (no subgroup size is
// required of the pipeline, as WebGPU cannot require one: the device's subgroups must be at
// least m.SubgroupSize lanes), one storage
// buffer per WGSL binding (the parameter struct included: no push constants), and the device
// features naga's capabilities need. A capability no Vulkan feature of package vulkan enables
// (StorageInputOutput16) is an error.
func VulkanModule(m *webgpu.Module, r *Result, sharedBytes int) (*vulkan.Module, error) {
	vm := &vulkan.Module{
		Name:          m.Name,
		Words:         r.Words,
		WorkgroupSize: m.WorkgroupSize,
		SharedBytes:   uint32(sharedBytes),
	}
	if r.LocalSize != m.WorkgroupSize {
		return nil, fmt.Errorf("naga %s: entry point %s has LocalSize %v, the WGSL says @workgroup_size%v", Version, m.Name, r.LocalSize, m.WorkgroupSize)
	}
	for _, b := range m.Bindings {
		size := b.ElemBytes
		if b.Words || b.Params {
			size = 4
		}
		vm.Bindings = append(vm.Bindings, vulkan.Binding{Name: b.Name, ElemSize: size, ReadOnly: b.ReadOnly})
	}
	f := &vm.Features
	for _, c := range r.Capabilities {
		switch c {
		case CapabilityFloat16:
			f.Float16 = true
		case CapabilityFloat64:
			f.Float64 = true
		case CapabilityInt16:
			f.Int16 = true
		case CapabilityInt8:
			f.Int8 = true
		case CapabilityStorageBuffer16BitAccess, CapabilityUniformAndStorageBuffer16BitAccess:
			f.StorageBuffer16 = true
		case CapabilityStorageBuffer8BitAccess:
			f.StorageBuffer8 = true
		case CapabilityGroupNonUniform:
			f.SubgroupBasic = true
		case CapabilityGroupNonUniformShuffle:
			f.SubgroupShuffle = true
		case CapabilityDotProduct, CapabilityDotProductInput4x8BitPacked:
			f.IntegerDotProduct = true
		case CapabilityStorageInputOutput16:
			return nil, fmt.Errorf("naga %s: the module declares StorageInputOutput16, which no device feature here enables", Version)
		}
	}
	return vm, nil
}

// Run runs naga's SPIR-V of m once on dev: buffers are the kernel's bindings (each padded with
// zeros to a multiple of 4 bytes, as WebGPU binds them), params its parameters (written into the
// parameter struct's buffer), groups the dispatch. It returns a copy of each buffer listed in
// outputs, at its original length.
func Run(dev *vulkan.Device, p *vulkan.Pipeline, m *webgpu.Module, buffers [][]byte, outputs []int, params []uint32, groups [3]uint32) ([][]byte, error) {
	host := make([][]byte, 0, len(buffers)+1)
	for _, b := range buffers {
		n := (len(b) + 3) &^ 3
		host = append(host, append(slices.Clip(slices.Clone(b)), make([]byte, n-len(b))...))
	}
	hasParams := len(m.Bindings) > 0 && m.Bindings[len(m.Bindings)-1].Params
	if hasParams {
		pb := make([]byte, max(m.ParamsBytes, 4*len(params)))
		for i, v := range params {
			binary.LittleEndian.PutUint32(pb[4*i:], v)
		}
		host = append(host, pb)
	}
	if len(host) != len(m.Bindings) {
		return nil, fmt.Errorf("webgpu module %s has %d bindings, the run has %d buffers (and parameters: %v)", m.Name, len(m.Bindings), len(buffers), hasParams)
	}
	for _, o := range outputs {
		if o < 0 || o >= len(buffers) {
			return nil, fmt.Errorf("output binding %d out of range", o)
		}
	}
	if err := devrun.Once(dev.NewBuffer, host, outputs, func(bufs []*vulkan.Buffer) error {
		return dev.Run(p, bufs, nil, groups)
	}); err != nil {
		return nil, err
	}
	outs := make([][]byte, len(outputs))
	for i, o := range outputs {
		outs[i] = host[o][:len(buffers[o])]
	}
	return outs, nil
}
