package vulkan

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"
)

// spirvMagic is the first word of every SPIR-V module.
const spirvMagic = 0x07230203

// descriptorSetsPerPool is how many descriptor sets one pool of a pipeline holds; a pipeline adds
// pools as it needs them, and at the start of a submission that needs none of them it frees all
// but the first once it holds more than maxDescriptorPools (see Pipeline.trim).
const (
	descriptorSetsPerPool = 64
	maxDescriptorPools    = 4
)

// Pipeline is a compute pipeline for a Module on a Device, with its descriptor-set and pipeline
// layouts. Pipelines are cached per device (equal modules share one) and destroyed by Close.
type Pipeline struct {
	dev       *Device
	module    Module // a copy; Words are not retained
	key       [32]byte
	pushSize  uint32 // PushConstantSize rounded up to a multiple of 4
	setLayout vkDescriptorSetLayout
	layout    vkPipelineLayout
	pipeline  vkPipeline
	pools     []vkDescriptorPool         // the last one has room for free more sets
	free      int                        // sets left in the last pool
	sets      map[string]vkDescriptorSet // by the bound views (buffer ids, offsets, sizes)
}

// Module returns the module the pipeline was made from, without its SPIR-V words.
func (p *Pipeline) Module() Module { return p.module }

// moduleKey hashes everything of a module that makes a different pipeline.
func moduleKey(m *Module) [32]byte {
	h := sha256.New()
	w := func(v ...uint32) {
		var b [4]byte
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], x)
			h.Write(b[:])
		}
	}
	w(uint32(len(m.Name)))
	h.Write([]byte(m.Name))
	w(uint32(len(m.Words)))
	w(m.Words...)
	w(uint32(len(m.Bindings)))
	for _, b := range m.Bindings {
		ro := uint32(0)
		if b.ReadOnly {
			ro = 1
		}
		w(uint32(b.ElemSize), ro)
	}
	w(m.PushConstantSize, m.WorkgroupSize[0], m.WorkgroupSize[1], m.WorkgroupSize[2], m.SubgroupSize, m.SharedBytes)
	for _, f := range features {
		if *f.field(&m.Features) {
			w(1)
		} else {
			w(0)
		}
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// checkModule says why the device cannot run m, or nil.
func (d *Device) checkModule(m *Module) error {
	name := m.Name
	fail := func(format string, args ...any) error {
		return fmt.Errorf("vulkan: pipeline %q: %s", name, fmt.Sprintf(format, args...))
	}
	if m.Name == "" {
		return fail("module has no entry point name")
	}
	if len(m.Words) < 5 || m.Words[0] != spirvMagic {
		return fail("module words are not SPIR-V (%d words, no magic number)", len(m.Words))
	}
	if v, env := m.Words[1], d.info.Env; v > env.spirvWord() {
		return fail("module is SPIR-V %s; device %d (%s) is used at Vulkan %d.%d (%s), which takes SPIR-V up to %s: emit it for vulkan.%s (EmitOptions.Env, CompileWith) or with Device.Compile",
			spvVersionString(v), d.info.Index, d.info.Name, env.API().Major(), env.API().Minor(), env, env.SPIRV(), envConstName(env))
	}
	if eps, err := spirvComputeEntryPoints(m.Words); err != nil {
		return fail("%v", err)
	} else if !slices.Contains(eps, m.Name) {
		return fail("module has no GLCompute entry point %q (it has %q)", m.Name, eps)
	}
	if miss := missingFeatures(m.Features, d.info.EnabledFeatures); len(miss) > 0 {
		return fail("module needs %s, not enabled on device %d (%s)", describeMissing(miss), d.info.Index, d.info.Name)
	}
	l := d.info
	if m.SharedBytes > l.MaxComputeSharedMemory {
		return fail("module declares %d bytes of shared memory; the device allows %d (maxComputeSharedMemorySize)", m.SharedBytes, l.MaxComputeSharedMemory)
	}
	inv := uint64(1)
	for i, s := range m.WorkgroupSize {
		if s == 0 {
			return fail("workgroup size %v has a zero dimension", m.WorkgroupSize)
		}
		if s > l.MaxWorkgroupSize[i] {
			return fail("workgroup size %v exceeds the device's maxComputeWorkGroupSize %v", m.WorkgroupSize, l.MaxWorkgroupSize)
		}
		inv *= uint64(s)
	}
	if inv > uint64(l.MaxWorkgroupInvocations) {
		return fail("workgroup size %v has %d invocations; the device allows %d (maxComputeWorkGroupInvocations)", m.WorkgroupSize, inv, l.MaxWorkgroupInvocations)
	}
	if uint32(len(m.Bindings)) > l.MaxStorageBuffers {
		return fail("module has %d storage buffers; the device allows %d per stage", len(m.Bindings), l.MaxStorageBuffers)
	}
	if m.PushConstantSize > l.MaxPushConstantsSize {
		return fail("module has %d bytes of push constants; the device allows %d (maxPushConstantsSize)", m.PushConstantSize, l.MaxPushConstantsSize)
	}
	if s := m.SubgroupSize; s != 0 {
		if !d.subgroupControl {
			return fail("module requires subgroup size %d but the device cannot require a subgroup size in compute shaders (subgroupSizeControl, computeFullSubgroups, requiredSubgroupSizeStages)", s)
		}
		if !isPow2(s) || s < l.MinSubgroupSize || s > l.MaxSubgroupSize {
			return fail("module requires subgroup size %d; the device offers %d..%d (powers of two)", s, l.MinSubgroupSize, l.MaxSubgroupSize)
		}
		if m.WorkgroupSize[0]%s != 0 {
			return fail("module requires full subgroups of %d but its workgroup width %d is not a multiple of it", s, m.WorkgroupSize[0])
		}
		if lim := uint64(s) * uint64(d.pd.sg.maxSubgroup); inv > lim {
			return fail("workgroup of %d invocations needs more than the device's %d subgroups of %d (maxComputeWorkgroupSubgroups)", inv, d.pd.sg.maxSubgroup, s)
		}
	}
	return nil
}

// Pipeline returns the compute pipeline for m, creating it on first use: it checks what m needs
// against the device (features, shared memory, workgroup and push-constant limits, subgroup
// size), then creates the shader module, a descriptor-set layout with one storage buffer per
// m.Bindings entry (binding = index), a pipeline layout with one push-constant range when
// m.PushConstantSize is not zero, and the pipeline with entry point m.Name. When
// m.SubgroupSize is not zero the pipeline runs with exactly that subgroup size and full
// subgroups.
func (d *Device) Pipeline(m *Module) (*Pipeline, error) {
	if m == nil {
		return nil, fmt.Errorf("vulkan: Pipeline: nil module")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked(context.Background()); err != nil {
		return nil, err
	}
	key := moduleKey(m)
	if p, ok := d.pipelines[key]; ok {
		return p, nil
	}
	if err := d.checkModule(m); err != nil {
		return nil, err
	}
	p := &Pipeline{dev: d, module: *m, key: key, pushSize: (m.PushConstantSize + 3) &^ 3}
	p.module.Words = nil
	p.module.Bindings = append([]Binding(nil), m.Bindings...)
	if err := p.create(m); err != nil {
		p.destroy()
		return nil, fmt.Errorf("vulkan: pipeline %q: %w", m.Name, err)
	}
	d.pipelines[key] = p
	return p, nil
}

func (p *Pipeline) create(m *Module) error {
	d := p.dev
	n := len(m.Bindings)
	if n > 0 {
		bindings := make([]vkDescriptorSetLayoutBinding, n)
		for i := range bindings {
			bindings[i] = vkDescriptorSetLayoutBinding{
				Binding:         uint32(i),
				DescriptorType:  vkDescriptorTypeStorageBuffer,
				DescriptorCount: 1,
				StageFlags:      vkShaderStageComputeBit,
			}
		}
		dslci := &vkDescriptorSetLayoutCreateInfo{
			SType:        vkStructureTypeDescriptorSetLayoutCreateInfo,
			BindingCount: uint32(n),
			PBindings:    unsafe.Pointer(&bindings[0]),
		}
		if err := check("vkCreateDescriptorSetLayout", d.fn.createDescriptorSetLayout(d.handle, unsafe.Pointer(dslci), nil, unsafe.Pointer(&p.setLayout))); err != nil {
			return err
		}
		if err := p.addPool(); err != nil {
			return err
		}
		p.sets = map[string]vkDescriptorSet{}
	}
	plci := &vkPipelineLayoutCreateInfo{SType: vkStructureTypePipelineLayoutCreateInfo}
	if n > 0 {
		plci.SetLayoutCount = 1
		plci.PSetLayouts = unsafe.Pointer(&p.setLayout)
	}
	if p.pushSize > 0 {
		plci.PushConstantRangeCount = 1
		plci.PPushConstantRanges = unsafe.Pointer(&vkPushConstantRange{StageFlags: vkShaderStageComputeBit, Size: p.pushSize})
	}
	if err := check("vkCreatePipelineLayout", d.fn.createPipelineLayout(d.handle, unsafe.Pointer(plci), nil, unsafe.Pointer(&p.layout))); err != nil {
		return err
	}

	smci := &vkShaderModuleCreateInfo{
		SType:    vkStructureTypeShaderModuleCreateInfo,
		CodeSize: uintptr(len(m.Words) * 4),
		PCode:    unsafe.Pointer(&m.Words[0]),
	}
	var shader vkShaderModule
	if err := check("vkCreateShaderModule", d.fn.createShaderModule(d.handle, unsafe.Pointer(smci), nil, unsafe.Pointer(&shader))); err != nil {
		return err
	}
	defer d.fn.destroyShaderModule(d.handle, shader, nil)

	stage := vkPipelineShaderStageCreateInfo{
		SType:  vkStructureTypePipelineShaderStageCreateInfo,
		Stage:  vkShaderStageComputeBit,
		Module: shader,
		PName:  cstr(m.Name),
	}
	if m.SubgroupSize != 0 {
		stage.PNext = unsafe.Pointer(&vkPipelineShaderStageRequiredSubgroupSizeCreateInfo{
			SType:                vkStructureTypePipelineShaderStageRequiredSubgroupSizeCreateInfo,
			RequiredSubgroupSize: m.SubgroupSize,
		})
		stage.Flags = vkPipelineShaderStageCreateRequireFullSubgroupsBit
	}
	cpci := &vkComputePipelineCreateInfo{
		SType:  vkStructureTypeComputePipelineCreateInfo,
		Stage:  stage,
		Layout: p.layout,
	}
	// Creation feedback (core in 1.3) says whether the pipeline came from the cache.
	var fb vkPipelineCreationFeedback
	if d.pd.version >= version13 {
		cpci.PNext = unsafe.Pointer(&vkPipelineCreationFeedbackCreateInfo{
			SType:                     vkStructureTypePipelineCreationFeedbackCreateInfo,
			PPipelineCreationFeedback: unsafe.Pointer(&fb),
		})
	}
	if err := check("vkCreateComputePipelines", d.fn.createComputePipelines(d.handle, d.cache, 1, unsafe.Pointer(cpci), nil, unsafe.Pointer(&p.pipeline))); err != nil {
		return err
	}
	if d.stats.PipelinesCreated == 0 {
		d.stats.Feedback = true
	}
	d.stats.PipelinesCreated++
	if fb.Flags&vkPipelineCreationFeedbackValidBit == 0 {
		d.stats.Feedback = false
	} else if fb.Flags&vkPipelineCreationFeedbackApplicationPipelineCacheHitBit != 0 {
		d.stats.PipelineCacheHits++
	}
	return nil
}

// destroy destroys what exists. d.mu is held.
func (p *Pipeline) destroy() {
	d := p.dev
	if p.pipeline != 0 {
		d.fn.destroyPipeline(d.handle, p.pipeline, nil)
		p.pipeline = 0
	}
	if p.layout != 0 {
		d.fn.destroyPipelineLayout(d.handle, p.layout, nil)
		p.layout = 0
	}
	for _, pool := range p.pools {
		d.fn.destroyDescriptorPool(d.handle, pool, nil) // frees its sets
	}
	p.pools = nil
	if p.setLayout != 0 {
		d.fn.destroyDescriptorSetLayout(d.handle, p.setLayout, nil)
		p.setLayout = 0
	}
	p.sets = nil
}

// addPool creates a descriptor pool of descriptorSetsPerPool sets and makes it the current one.
func (p *Pipeline) addPool() error {
	d := p.dev
	n := len(p.module.Bindings)
	size := &vkDescriptorPoolSize{Type: vkDescriptorTypeStorageBuffer, DescriptorCount: uint32(n * descriptorSetsPerPool)}
	dpci := &vkDescriptorPoolCreateInfo{
		SType:         vkStructureTypeDescriptorPoolCreateInfo,
		MaxSets:       descriptorSetsPerPool,
		PoolSizeCount: 1,
		PPoolSizes:    unsafe.Pointer(size),
	}
	var pool vkDescriptorPool
	if err := check("vkCreateDescriptorPool", d.fn.createDescriptorPool(d.handle, unsafe.Pointer(dpci), nil, unsafe.Pointer(&pool))); err != nil {
		return err
	}
	p.pools = append(p.pools, pool)
	p.free = descriptorSetsPerPool
	return nil
}

// trim bounds the sets a pipeline keeps: with more than maxDescriptorPools pools it frees every
// set (the first pool is reset, the others destroyed). d.mu is held and no work is in flight:
// it is called at the start of a submission, before that submission's sets are made, so every
// set a command buffer refers to stays valid until its work is done.
func (p *Pipeline) trim() error {
	d := p.dev
	if len(p.pools) <= maxDescriptorPools {
		return nil
	}
	for _, pool := range p.pools[1:] {
		d.fn.destroyDescriptorPool(d.handle, pool, nil)
	}
	p.pools = p.pools[:1]
	clear(p.sets)
	p.free = descriptorSetsPerPool
	return check("vkResetDescriptorPool", d.fn.resetDescriptorPool(d.handle, p.pools[0], 0))
}

// descriptorSet returns a descriptor set with views bound, reusing one made for the same views.
// d.mu is held.
func (p *Pipeline) descriptorSet(views []View) (vkDescriptorSet, error) {
	d := p.dev
	kb := make([]byte, 0, 24*len(views))
	for _, v := range views {
		kb = binary.LittleEndian.AppendUint64(kb, v.Buffer.id)
		kb = binary.LittleEndian.AppendUint64(kb, uint64(v.Offset))
		kb = binary.LittleEndian.AppendUint64(kb, uint64(v.Size))
	}
	key := string(kb)
	if s, ok := p.sets[key]; ok {
		return s, nil
	}
	if p.free == 0 {
		if err := p.addPool(); err != nil {
			return 0, err
		}
	}
	var set vkDescriptorSet
	dsai := &vkDescriptorSetAllocateInfo{
		SType:              vkStructureTypeDescriptorSetAllocateInfo,
		DescriptorPool:     p.pools[len(p.pools)-1],
		DescriptorSetCount: 1,
		PSetLayouts:        unsafe.Pointer(&p.setLayout),
	}
	if err := check("vkAllocateDescriptorSets", d.fn.allocateDescriptorSets(d.handle, unsafe.Pointer(dsai), unsafe.Pointer(&set))); err != nil {
		return 0, err
	}
	p.free--
	infos := make([]vkDescriptorBufferInfo, len(views))
	writes := make([]vkWriteDescriptorSet, len(views))
	for i, v := range views {
		infos[i] = vkDescriptorBufferInfo{Buffer: v.Buffer.handle, Offset: vkDeviceSize(v.Offset), Range: vkDeviceSize(v.Size)}
		writes[i] = vkWriteDescriptorSet{
			SType:           vkStructureTypeWriteDescriptorSet,
			DstSet:          set,
			DstBinding:      uint32(i),
			DescriptorCount: 1,
			DescriptorType:  vkDescriptorTypeStorageBuffer,
			PBufferInfo:     unsafe.Pointer(&infos[i]),
		}
	}
	d.fn.updateDescriptorSets(d.handle, uint32(len(writes)), unsafe.Pointer(&writes[0]), 0, nil)
	p.sets[key] = set
	return set, nil
}

// spirvComputeEntryPoints lists the names of a module's GLCompute entry points (OpEntryPoint).
func spirvComputeEntryPoints(words []uint32) ([]string, error) {
	const (
		opEntryPoint = 15
		glCompute    = 5
	)
	var names []string
	for i := 5; i < len(words); {
		n := int(words[i] >> 16)
		if n == 0 || i+n > len(words) {
			return nil, fmt.Errorf("malformed SPIR-V: instruction at word %d has length %d", i, n)
		}
		if words[i]&0xFFFF == opEntryPoint && n >= 4 && words[i+1] == glCompute {
			var b []byte
		name:
			for _, w := range words[i+3 : i+n] {
				for k := 0; k < 4; k++ {
					c := byte(w >> (8 * k))
					if c == 0 {
						break name
					}
					b = append(b, c)
				}
			}
			names = append(names, string(b))
		}
		i += n
	}
	return names, nil
}
