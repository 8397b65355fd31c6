package vulkan

import (
	"context"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"unsafe"
)

// DeviceInfo describes a Vulkan physical device: what Devices lists and what an open Device
// reports through Info.
type DeviceInfo struct {
	Index         int     // position among the instance's physical devices (Options.DeviceIndex)
	Name          string  // VkPhysicalDeviceProperties.deviceName
	Type          string  // "discrete GPU", "integrated GPU", "virtual GPU", "CPU" or "other"
	VendorID      uint32  // PCI vendor id (or a Khronos vendor id)
	DeviceID      uint32  // vendor-specific device id
	DriverName    string  // VkPhysicalDeviceVulkan12Properties.driverName ("" before Vulkan 1.2)
	DriverInfo    string  // VkPhysicalDeviceVulkan12Properties.driverInfo
	DriverVersion uint32  // vendor-encoded driver version
	APIVersion    Version // the Vulkan version the device supports
	// Env is the environment the device runs modules for: that of the version it is used at
	// (the lowest of APIVersion, the loader's and Options.APIVersion). Device.Compile emits for
	// it; a module for a newer one is refused.
	Env Env

	SubgroupSize        uint32 // the default subgroup size
	MinSubgroupSize     uint32 // smallest subgroup size a pipeline can require (0: not reported)
	MaxSubgroupSize     uint32 // largest subgroup size a pipeline can require (0: not reported)
	SubgroupSizeControl bool   // compute pipelines can require a subgroup size with full subgroups

	MaxComputeSharedMemory  uint32    // maxComputeSharedMemorySize, bytes
	MaxWorkgroupSize        [3]uint32 // maxComputeWorkGroupSize
	MaxWorkgroupInvocations uint32    // maxComputeWorkGroupInvocations
	MaxWorkgroupCount       [3]uint32 // maxComputeWorkGroupCount
	MaxPushConstantsSize    uint32    // bytes
	MaxStorageBufferRange   uint32    // bytes one storage-buffer binding can address
	MaxStorageBuffers       uint32    // maxPerStageDescriptorStorageBuffers
	// MinStorageBufferOffsetAlignment is the alignment of a View's offset, bytes.
	MinStorageBufferOffsetAlignment uint64

	Timestamps      bool    // the compute queue can write timestamps
	TimestampPeriod float64 // nanoseconds per timestamp tick

	// CoopMatrixI8 are the cooperative-matrix shapes the device lists for int8 products into
	// int32 at subgroup scope (VK_KHR_cooperative_matrix); CapsFor runs the mma island on one
	// of them (IslandShape) where the device also has Features.CooperativeMatrix and Int8.
	CoopMatrixI8 []CoopShape

	Features        Features // the features the device supports
	EnabledFeatures Features // the features enabled on an open Device (zero in Devices)

	// RobustBufferAccess: the device supports VkPhysicalDeviceFeatures.robustBufferAccess
	// (out-of-bounds buffer accesses are discarded or read within the buffer, never fault).
	RobustBufferAccess bool
	// RobustBufferAccessEnabled: an open Device has it enabled (Options.RobustBufferAccess).
	RobustBufferAccessEnabled bool
}

// Options choose the device Open creates and what it enables.
type Options struct {
	// DeviceIndex selects the physical device: an index into Devices().
	DeviceIndex int
	// Features to enable; nil enables every feature the device supports. A requested feature
	// the device lacks makes Open fail with an error naming it.
	Features *Features
	// RobustBufferAccess enables VkPhysicalDeviceFeatures.robustBufferAccess where the device
	// supports it (and is ignored where it does not: DeviceInfo.RobustBufferAccessEnabled says).
	// Checked runs (package conformance) ask for it; nothing else does, so production devices
	// are opened without it whatever Features says.
	RobustBufferAccess bool
	// APIVersion caps the Vulkan version the device is used at (0: the highest the loader and
	// the device offer, up to 1.3). At 1.1 or 1.2 the runtime behaves as on an older driver:
	// it reads and enables the features through the extensions that carried them before they
	// were core (VK_KHR_8bit_storage, VK_KHR_shader_float16_int8,
	// VK_KHR_shader_integer_dot_product, VK_EXT_subgroup_size_control) and runs modules
	// emitted for that version's Env. Below 1.1 is an error.
	APIVersion Version
	// InstanceExtensions are instance extensions to enable besides the runtime's own, for
	// example what a window library needs for a presentation surface
	// (glfw.GetRequiredInstanceExtensions); one the loader lacks makes Open fail naming it.
	InstanceExtensions []string
	// DeviceExtensions are device extensions to enable besides the runtime's own (for
	// presentation, VK_KHR_swapchain); one the device lacks makes Open fail naming it.
	DeviceExtensions []string
	// PipelineCacheDir is where the device's pipeline cache is kept between runs (loaded at
	// Open, saved at Close; see SavePipelineCache); "" is internal/cachedir's "vulkan"
	// directory ($ONESOURCE_CACHE, else the user cache directory). NoPipelineCache keeps none.
	PipelineCacheDir string
	NoPipelineCache  bool
	// Warn receives the device's warnings (a pipeline cache file ignored or not saved); nil
	// logs them with the standard logger.
	Warn func(msg string)
}

// vkInst is a created VkInstance with its functions.
type vkInst struct {
	lib     *vkLibrary
	handle  vkInstance
	fn      vkInstanceFuncs
	version Version // the apiVersion the instance was created with
}

// createInstance creates an instance of the highest version up to 1.3 (and up to max, when
// not 0) the loader offers, enabling VK_KHR_portability_enumeration where the loader has it
// (MoltenVK).
func createInstance(lib *vkLibrary, max Version, extra []string) (*vkInst, error) {
	version := lib.instanceVersion()
	if version < version11 {
		return nil, unavailable("the Vulkan loader %q offers instance version %v; 1.1 or later is needed", lib.path, version)
	}
	if version > version13 {
		version = version13
	}
	if max != 0 && version > max {
		version = max
	}
	version &^= 0xFFF // patch 0
	appName := cstr("onesource")
	app := &vkApplicationInfo{
		SType:            vkStructureTypeApplicationInfo,
		PApplicationName: appName,
		PEngineName:      appName,
		ApiVersion:       uint32(version),
	}
	ci := &vkInstanceCreateInfo{
		SType:            vkStructureTypeInstanceCreateInfo,
		PApplicationInfo: unsafe.Pointer(app),
	}
	var names []unsafe.Pointer
	have := lib.instanceExtensions()
	if have["VK_KHR_portability_enumeration"] {
		names = append(names, cstr("VK_KHR_portability_enumeration"))
		ci.Flags |= vkInstanceCreateEnumeratePortabilityBitKhr
	}
	for _, x := range extra {
		if !have[x] {
			return nil, unavailable("the Vulkan loader %q lacks the instance extension %s", lib.path, x)
		}
		names = append(names, cstr(x))
	}
	if len(names) > 0 {
		ci.EnabledExtensionCount = uint32(len(names))
		ci.PpEnabledExtensionNames = unsafe.Pointer(&names[0])
	}
	in := &vkInst{lib: lib, version: version}
	if err := check("vkCreateInstance", lib.global.createInstance(unsafe.Pointer(ci), nil, unsafe.Pointer(&in.handle))); err != nil {
		return nil, unavailable("%v", err)
	}
	err := loadTable("the instance", in.fn.entries(), func(name string) uintptr { return lib.getInstanceProc(in.handle, name) })
	if err != nil {
		if in.fn.vkDestroyInstance != 0 {
			in.fn.destroyInstance(in.handle, nil)
		}
		return nil, unavailable("%v", err)
	}
	return in, nil
}

func (in *vkInst) destroy() {
	if in != nil && in.handle != 0 {
		in.fn.destroyInstance(in.handle, nil)
		in.handle = 0
	}
}

// instanceExtensions lists the loader's instance extensions (empty when it cannot say).
func (l *vkLibrary) instanceExtensions() map[string]bool {
	out := map[string]bool{}
	if l.global.vkEnumerateInstanceExtensionProperties == 0 {
		return out
	}
	var n uint32
	if l.global.enumerateInstanceExtensionProperties(nil, unsafe.Pointer(&n), nil) != vkSuccess || n == 0 {
		return out
	}
	props := make([]vkExtensionProperties, n)
	if r := l.global.enumerateInstanceExtensionProperties(nil, unsafe.Pointer(&n), unsafe.Pointer(&props[0])); r != vkSuccess && r != vkIncomplete {
		return out
	}
	for _, p := range props[:n] {
		out[gostr(p.ExtensionName[:])] = true
	}
	return out
}

// physicalDevices enumerates the instance's physical devices.
func (in *vkInst) physicalDevices() ([]vkPhysicalDevice, error) {
	for {
		var n uint32
		if err := check("vkEnumeratePhysicalDevices", in.fn.enumeratePhysicalDevices(in.handle, unsafe.Pointer(&n), nil)); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		pds := make([]vkPhysicalDevice, n)
		r := in.fn.enumeratePhysicalDevices(in.handle, unsafe.Pointer(&n), unsafe.Pointer(&pds[0]))
		if r == vkIncomplete {
			continue // a device appeared between the calls
		}
		if err := check("vkEnumeratePhysicalDevices", r); err != nil {
			return nil, err
		}
		return pds[:n], nil
	}
}

// physDevice is everything the runtime reads about a physical device.
type physDevice struct {
	handle      vkPhysicalDevice
	version     Version // min(instance version, device version): what may be used
	props       vkPhysicalDeviceProperties
	chain       *featureChain // supported features
	sg          subgroupProps
	mem         vkPhysicalDeviceMemoryProperties
	queueFamily int    // the compute queue family used, -1 if none
	tsBits      uint32 // timestampValidBits of that family
	extensions  map[string]bool
	info        DeviceInfo
}

var deviceTypes = map[vkPhysicalDeviceType]string{
	vkPhysicalDeviceTypeOther:         "other",
	vkPhysicalDeviceTypeIntegratedGpu: "integrated GPU",
	vkPhysicalDeviceTypeDiscreteGpu:   "discrete GPU",
	vkPhysicalDeviceTypeVirtualGpu:    "virtual GPU",
	vkPhysicalDeviceTypeCpu:           "CPU",
}

// query reads a physical device's properties, features, memory and queues.
func (in *vkInst) query(index int, h vkPhysicalDevice) (*physDevice, error) {
	pd := &physDevice{handle: h, queueFamily: -1}
	in.fn.getPhysicalDeviceProperties(h, unsafe.Pointer(&pd.props))
	pd.version = Version(pd.props.ApiVersion)
	if in.version < pd.version {
		pd.version = in.version
	}

	pd.extensions = map[string]bool{}
	var ne uint32
	if in.fn.enumerateDeviceExtensionProperties(h, nil, unsafe.Pointer(&ne), nil) == vkSuccess && ne > 0 {
		exts := make([]vkExtensionProperties, ne)
		if r := in.fn.enumerateDeviceExtensionProperties(h, nil, unsafe.Pointer(&ne), unsafe.Pointer(&exts[0])); r == vkSuccess || r == vkIncomplete {
			for _, e := range exts[:ne] {
				pd.extensions[gostr(e.ExtensionName[:])] = true
			}
		}
	}

	// Properties: Vulkan 1.1/1.2/1.3 structs as far as the version allows, below that the
	// structs of the extensions that carried them.
	p2 := &struct {
		p2   vkPhysicalDeviceProperties2
		sgp  vkPhysicalDeviceSubgroupProperties
		v11  vkPhysicalDeviceVulkan11Properties
		v12  vkPhysicalDeviceVulkan12Properties
		v13  vkPhysicalDeviceVulkan13Properties
		drv  vkPhysicalDeviceDriverProperties              // below 1.2
		sgsc vkPhysicalDeviceSubgroupSizeControlProperties // below 1.3
	}{}
	p2.p2.SType = vkStructureTypePhysicalDeviceProperties2
	p2.sgp.SType = vkStructureTypePhysicalDeviceSubgroupProperties
	p2.v11.SType = vkStructureTypePhysicalDeviceVulkan11Properties
	p2.v12.SType = vkStructureTypePhysicalDeviceVulkan12Properties
	p2.v13.SType = vkStructureTypePhysicalDeviceVulkan13Properties
	p2.drv.SType = vkStructureTypePhysicalDeviceDriverProperties
	p2.sgsc.SType = vkStructureTypePhysicalDeviceSubgroupSizeControlProperties
	tail := &p2.p2.PNext
	add := func(s unsafe.Pointer, next *unsafe.Pointer) {
		*tail = s
		tail = next
	}
	add(unsafe.Pointer(&p2.sgp), &p2.sgp.PNext)
	if pd.version >= version12 {
		add(unsafe.Pointer(&p2.v11), &p2.v11.PNext)
		add(unsafe.Pointer(&p2.v12), &p2.v12.PNext)
	} else if pd.extensions[extDriverProperties] {
		add(unsafe.Pointer(&p2.drv), &p2.drv.PNext)
	}
	if pd.version >= version13 {
		add(unsafe.Pointer(&p2.v13), &p2.v13.PNext)
	} else if pd.extensions[extSubgroupSizeControl] {
		add(unsafe.Pointer(&p2.sgsc), &p2.sgsc.PNext)
	}
	in.fn.getPhysicalDeviceProperties2(h, unsafe.Pointer(&p2.p2))
	pd.props = p2.p2.Properties
	pd.sg = subgroupProps{
		size:       p2.sgp.SubgroupSize,
		stages:     p2.sgp.SupportedStages,
		operations: p2.sgp.SupportedOperations,
	}
	switch {
	case pd.version >= version13:
		pd.sg.min = p2.v13.MinSubgroupSize
		pd.sg.max = p2.v13.MaxSubgroupSize
		pd.sg.reqStages = p2.v13.RequiredSubgroupSizeStages
		pd.sg.maxSubgroup = p2.v13.MaxComputeWorkgroupSubgroups
	case pd.extensions[extSubgroupSizeControl]:
		pd.sg.min = p2.sgsc.MinSubgroupSize
		pd.sg.max = p2.sgsc.MaxSubgroupSize
		pd.sg.reqStages = p2.sgsc.RequiredSubgroupSizeStages
		pd.sg.maxSubgroup = p2.sgsc.MaxComputeWorkgroupSubgroups
	}

	pd.chain = newFeatureChain(pd.version, pd.extensions)
	in.fn.getPhysicalDeviceFeatures2(h, unsafe.Pointer(&pd.chain.f2))
	pd.chain.fromExtensions()
	in.fn.getPhysicalDeviceMemoryProperties(h, unsafe.Pointer(&pd.mem))

	var nq uint32
	in.fn.getPhysicalDeviceQueueFamilyProperties(h, unsafe.Pointer(&nq), nil)
	if nq > 0 {
		qs := make([]vkQueueFamilyProperties, nq)
		in.fn.getPhysicalDeviceQueueFamilyProperties(h, unsafe.Pointer(&nq), unsafe.Pointer(&qs[0]))
		for i, q := range qs[:nq] {
			if q.QueueFlags&vkQueueComputeBit == 0 || q.QueueCount == 0 {
				continue
			}
			if pd.queueFamily < 0 || (pd.tsBits == 0 && q.TimestampValidBits > 0) {
				pd.queueFamily = i
				pd.tsBits = q.TimestampValidBits
			}
		}
	}

	l := &pd.props.Limits
	pd.info = DeviceInfo{
		Index:         index,
		Name:          gostr(pd.props.DeviceName[:]),
		Type:          deviceTypes[pd.props.DeviceType],
		VendorID:      pd.props.VendorID,
		DeviceID:      pd.props.DeviceID,
		DriverVersion: pd.props.DriverVersion,
		APIVersion:    Version(pd.props.ApiVersion),
		Env:           EnvFor(pd.version),

		SubgroupSize:        pd.sg.size,
		MinSubgroupSize:     pd.sg.min,
		MaxSubgroupSize:     pd.sg.max,
		SubgroupSizeControl: pd.subgroupControl(),

		MaxComputeSharedMemory:  l.MaxComputeSharedMemorySize,
		MaxWorkgroupSize:        l.MaxComputeWorkGroupSize,
		MaxWorkgroupInvocations: l.MaxComputeWorkGroupInvocations,
		MaxWorkgroupCount:       l.MaxComputeWorkGroupCount,
		MaxPushConstantsSize:    l.MaxPushConstantsSize,
		MaxStorageBufferRange:   l.MaxStorageBufferRange,
		MaxStorageBuffers:       l.MaxPerStageDescriptorStorageBuffers,

		MinStorageBufferOffsetAlignment: uint64(l.MinStorageBufferOffsetAlignment),

		Timestamps:      pd.queueFamily >= 0 && pd.tsBits > 0 && l.TimestampPeriod > 0,
		TimestampPeriod: float64(l.TimestampPeriod),

		Features:           supportedFeatures(pd.chain, pd.sg),
		RobustBufferAccess: pd.chain.f2.Features.RobustBufferAccess != 0,
		CoopMatrixI8:       in.coopShapes(h, pd.extensions),
	}
	if pd.info.Type == "" {
		pd.info.Type = "other"
	}
	if pd.version >= version12 {
		pd.info.DriverName = gostr(p2.v12.DriverName[:])
		pd.info.DriverInfo = gostr(p2.v12.DriverInfo[:])
	} else if pd.extensions[extDriverProperties] {
		pd.info.DriverName = gostr(p2.drv.DriverName[:])
		pd.info.DriverInfo = gostr(p2.drv.DriverInfo[:])
	}
	return pd, nil
}

// subgroupControl reports whether compute pipelines can require a subgroup size with full
// subgroups (the Vulkan 1.3 features subgroupSizeControl and computeFullSubgroups, from
// VK_EXT_subgroup_size_control below 1.3, and compute among requiredSubgroupSizeStages).
func (pd *physDevice) subgroupControl() bool {
	return (pd.version >= version13 || pd.extensions[extSubgroupSizeControl]) &&
		pd.chain.v13.SubgroupSizeControl != 0 &&
		pd.chain.v13.ComputeFullSubgroups != 0 &&
		pd.sg.reqStages&vkShaderStageComputeBit != 0
}

// usable says why Open cannot use the device, or nil.
func (pd *physDevice) usable() error {
	if pd.version < version11 {
		return fmt.Errorf("vulkan: device %d (%s) offers Vulkan %v (instance %v); the runtime needs 1.1",
			pd.info.Index, pd.info.Name, pd.info.APIVersion, pd.version)
	}
	if pd.queueFamily < 0 {
		return fmt.Errorf("vulkan: device %d (%s) has no compute queue", pd.info.Index, pd.info.Name)
	}
	return nil
}

// withInstance runs f with a temporary instance and its queried devices.
func withInstance(f func(in *vkInst, pds []*physDevice) error) error {
	lib, err := loadLibrary()
	if err != nil {
		return err
	}
	in, err := createInstance(lib, 0, nil)
	if err != nil {
		return err
	}
	defer in.destroy()
	hs, err := in.physicalDevices()
	if err != nil {
		return unavailable("%v", err)
	}
	pds := make([]*physDevice, len(hs))
	for i, h := range hs {
		if pds[i], err = in.query(i, h); err != nil {
			return err
		}
	}
	return f(in, pds)
}

var availability struct {
	sync.Mutex
	m map[string]error // by library path
}

// Available reports whether the Vulkan runtime can be used: the loader library loads, an
// instance can be created and it has a device Open can use (Vulkan 1.1 or later with a compute
// queue).
// The error, when not nil, wraps ErrUnavailable and says why ("unavailable: vulkan: ...").
// The answer is remembered per library path (see LibraryEnv).
func Available() error {
	path, _ := libraryPath()
	availability.Lock()
	defer availability.Unlock()
	if err, ok := availability.m[path]; ok {
		return err
	}
	err := withInstance(func(in *vkInst, pds []*physDevice) error {
		if len(pds) == 0 {
			return unavailable("the instance has no physical devices")
		}
		var reasons []string
		for _, pd := range pds {
			err := pd.usable()
			if err == nil {
				return nil
			}
			reasons = append(reasons, err.Error())
		}
		return unavailable("no usable device: %v", reasons)
	})
	if availability.m == nil {
		availability.m = map[string]error{}
	}
	availability.m[path] = err
	return err
}

// Devices lists the physical devices with what they support.
func Devices() ([]DeviceInfo, error) {
	var out []DeviceInfo
	err := withInstance(func(in *vkInst, pds []*physDevice) error {
		for _, pd := range pds {
			out = append(out, pd.info)
		}
		return nil
	})
	return out, err
}

// Device is an open Vulkan device with one compute queue. Its methods are safe for concurrent
// use; work is submitted one call at a time.
type Device struct {
	mu     sync.Mutex
	inst   *vkInst
	pd     *physDevice
	handle vkDevice
	fn     vkDeviceFuncs
	queue  vkQueue
	info   DeviceInfo

	subgroupControl bool     // subgroupSizeControl and computeFullSubgroups are enabled
	extensions      []string // the device extensions enabled

	cache     vkPipelineCache
	cachePath string // the pipeline cache file ("" for none)
	savedAt   int    // stats.PipelinesCreated when the cache was loaded or last saved
	warnf     func(string)
	cmdPool   vkCommandPool
	cmd       vkCommandBuffer
	fence     vkFence
	queryPool vkQueryPool // queryCount timestamps; 0 without timestamps
	stats     Stats

	pipelines map[[32]byte]*Pipeline
	buffers   map[*Buffer]struct{}
	nextID    uint64
	closed    bool
	broken    error // set when the device can no longer be trusted (lost, or a wait timed out)
	inflight  bool  // submitted work not yet waited for (a wait was abandoned)
}

// Open creates a device on the physical device opts.DeviceIndex with one compute queue and the
// requested features enabled (see Options).
func Open(opts Options) (*Device, error) {
	lib, err := loadLibrary()
	if err != nil {
		return nil, err
	}
	if opts.APIVersion != 0 && opts.APIVersion < version11 {
		return nil, fmt.Errorf("vulkan: Options.APIVersion %v: the runtime needs Vulkan 1.1 or later", opts.APIVersion)
	}
	in, err := createInstance(lib, opts.APIVersion, opts.InstanceExtensions)
	if err != nil {
		return nil, err
	}
	d := &Device{inst: in, pipelines: map[[32]byte]*Pipeline{}, buffers: map[*Buffer]struct{}{}}
	if err := d.open(opts); err != nil {
		d.destroy()
		return nil, err
	}
	return d, nil
}

func (d *Device) open(opts Options) error {
	in := d.inst
	hs, err := in.physicalDevices()
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		return unavailable("the instance has no physical devices")
	}
	if opts.DeviceIndex < 0 || opts.DeviceIndex >= len(hs) {
		return fmt.Errorf("vulkan: device index %d out of range: %d device(s)", opts.DeviceIndex, len(hs))
	}
	pd, err := in.query(opts.DeviceIndex, hs[opts.DeviceIndex])
	if err != nil {
		return err
	}
	if err := pd.usable(); err != nil {
		return err
	}
	d.pd = pd
	want := pd.info.Features
	if opts.Features != nil {
		want = *opts.Features
		if m := missingFeatures(want, pd.info.Features); len(m) > 0 {
			return fmt.Errorf("vulkan: device %d (%s) does not support %s", pd.info.Index, pd.info.Name, describeMissing(m))
		}
	}
	d.subgroupControl = pd.subgroupControl()
	chain, exts := enableChain(want, d.subgroupControl, pd.version)
	robust := opts.RobustBufferAccess && pd.info.RobustBufferAccess
	if robust {
		chain.f2.Features.RobustBufferAccess = vkTrue
	}

	priority := []float32{1}
	qci := &vkDeviceQueueCreateInfo{
		SType:            vkStructureTypeDeviceQueueCreateInfo,
		QueueFamilyIndex: uint32(pd.queueFamily),
		QueueCount:       1,
		PQueuePriorities: unsafe.Pointer(&priority[0]),
	}
	dci := &vkDeviceCreateInfo{
		SType:                vkStructureTypeDeviceCreateInfo,
		PNext:                unsafe.Pointer(&chain.f2),
		QueueCreateInfoCount: 1,
		PQueueCreateInfos:    unsafe.Pointer(qci),
	}
	if pd.extensions["VK_KHR_portability_subset"] {
		exts = append(exts, "VK_KHR_portability_subset")
	}
	exts = append(exts, opts.DeviceExtensions...)
	if len(exts) > 0 {
		names := make([]unsafe.Pointer, len(exts))
		for i, x := range exts {
			if !pd.extensions[x] {
				return fmt.Errorf("vulkan: device %d (%s) at Vulkan %v lacks the extension %s", pd.info.Index, pd.info.Name, pd.version, x)
			}
			names[i] = cstr(x)
		}
		dci.EnabledExtensionCount = uint32(len(names))
		dci.PpEnabledExtensionNames = unsafe.Pointer(&names[0])
	}
	d.extensions = exts
	if err := check("vkCreateDevice", in.fn.createDevice(pd.handle, unsafe.Pointer(dci), nil, unsafe.Pointer(&d.handle))); err != nil {
		return err
	}
	err = loadTable("the device", d.fn.entries(), func(name string) uintptr {
		return in.fn.getDeviceProcAddr(d.handle, cstr(name))
	})
	if err != nil {
		return err
	}
	d.fn.getDeviceQueue(d.handle, uint32(pd.queueFamily), 0, unsafe.Pointer(&d.queue))

	d.info = pd.info
	for _, f := range features {
		if *f.field(&want) {
			*f.field(&d.info.EnabledFeatures) = true
		}
	}
	d.info.SubgroupSizeControl = d.subgroupControl
	d.info.RobustBufferAccessEnabled = robust

	d.warnf = opts.Warn
	d.cachePath = cacheFile(opts, pd, robust)
	if err := d.createPipelineCache(); err != nil {
		return err
	}
	cpci := &vkCommandPoolCreateInfo{
		SType:            vkStructureTypeCommandPoolCreateInfo,
		Flags:            vkCommandPoolCreateResetCommandBufferBit,
		QueueFamilyIndex: uint32(pd.queueFamily),
	}
	if err := check("vkCreateCommandPool", d.fn.createCommandPool(d.handle, unsafe.Pointer(cpci), nil, unsafe.Pointer(&d.cmdPool))); err != nil {
		return err
	}
	cbai := &vkCommandBufferAllocateInfo{
		SType:              vkStructureTypeCommandBufferAllocateInfo,
		CommandPool:        d.cmdPool,
		Level:              vkCommandBufferLevelPrimary,
		CommandBufferCount: 1,
	}
	if err := check("vkAllocateCommandBuffers", d.fn.allocateCommandBuffers(d.handle, unsafe.Pointer(cbai), unsafe.Pointer(&d.cmd))); err != nil {
		return err
	}
	fci := &vkFenceCreateInfo{SType: vkStructureTypeFenceCreateInfo}
	if err := check("vkCreateFence", d.fn.createFence(d.handle, unsafe.Pointer(fci), nil, unsafe.Pointer(&d.fence))); err != nil {
		return err
	}
	if d.info.Timestamps {
		qpci := &vkQueryPoolCreateInfo{
			SType:      vkStructureTypeQueryPoolCreateInfo,
			QueryType:  vkQueryTypeTimestamp,
			QueryCount: queryCount,
		}
		if err := check("vkCreateQueryPool", d.fn.createQueryPool(d.handle, unsafe.Pointer(qpci), nil, unsafe.Pointer(&d.queryPool))); err != nil {
			return err
		}
	}
	return nil
}

// Info describes the device, with the features enabled on it in EnabledFeatures.
func (d *Device) Info() DeviceInfo {
	return d.info
}

// Env is the environment the device runs modules for (DeviceInfo.Env): Device.Compile emits for
// it, and Pipeline refuses a module written for a newer one.
func (d *Device) Env() Env { return d.info.Env }

// Extensions lists the device extensions the device was created with.
func (d *Device) Extensions() []string { return append([]string(nil), d.extensions...) }

// Close waits for the device to be idle, saves its pipeline cache (see SavePipelineCache; a
// failure is a warning) and destroys everything created on it: pipelines, buffers (which are
// released), the device and its instance. Closing twice is a no-op.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	var err error
	if d.handle != 0 {
		err = check("vkDeviceWaitIdle", d.fn.deviceWaitIdle(d.handle))
		if serr := d.saveCacheLocked(); serr != nil {
			d.warn("pipeline cache %s not saved: %v", d.cachePath, serr)
		}
	}
	d.destroy()
	return err
}

// destroy destroys whatever exists, in reverse order of creation.
func (d *Device) destroy() {
	d.closed = true
	if d.handle != 0 {
		for _, p := range d.pipelines {
			p.destroy()
		}
		d.pipelines = nil
		for b := range d.buffers {
			b.destroy()
		}
		d.buffers = nil
		if d.queryPool != 0 {
			d.fn.destroyQueryPool(d.handle, d.queryPool, nil)
		}
		if d.fence != 0 {
			d.fn.destroyFence(d.handle, d.fence, nil)
		}
		if d.cmdPool != 0 {
			d.fn.destroyCommandPool(d.handle, d.cmdPool, nil) // frees d.cmd
		}
		if d.cache != 0 {
			d.fn.destroyPipelineCache(d.handle, d.cache, nil)
		}
		if d.fn.vkDestroyDevice != 0 {
			d.fn.destroyDevice(d.handle, nil)
		}
		d.handle = 0
	}
	d.inst.destroy()
}

// usableLocked says why the device cannot take work, or nil. d.mu must be held. Work left in
// flight by an abandoned wait is waited for under ctx, the caller's context: a call with a
// deadline returns at its deadline even then.
func (d *Device) usableLocked(ctx context.Context) error {
	if d.closed {
		return fmt.Errorf("vulkan: device is closed")
	}
	if d.broken != nil {
		return fmt.Errorf("vulkan: device unusable after an earlier failure: %w", d.broken)
	}
	if d.inflight {
		// A wait was abandoned: the command buffer and the descriptor sets are in use until the
		// work is done.
		if err := d.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// isPow2 reports whether x is a power of two.
func isPow2(x uint32) bool { return x != 0 && bits.OnesCount32(x) == 1 }

// Evidence names the device and its driver as the registry's evidence and the tuning cache key
// it: "NAME (TYPE)" and "DRIVER INFO, Vulkan X.Y" (the driver version when the device reports
// no driver name).
func (i DeviceInfo) Evidence() (device, driver string) {
	device = fmt.Sprintf("%s (%s)", i.Name, i.Type)
	driver = strings.TrimSpace(i.DriverName + " " + i.DriverInfo)
	if driver == "" {
		driver = fmt.Sprintf("driver version %#x", i.DriverVersion)
	}
	driver += fmt.Sprintf(", Vulkan %v", i.APIVersion)
	return device, driver
}
