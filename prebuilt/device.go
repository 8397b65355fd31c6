package prebuilt

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/vulkan"
)

// device is one open backend device of a Runtime.
type device interface {
	// describe returns the device and driver strings registry evidence is keyed by.
	describe() (device, driver string)
	// load prepares a kernel's artifact to run.
	load(k *Kernel, a *Artifact) (launch, error)
	close()
}

// launch runs a loaded kernel once: bufs are copied in, the writable ones copied back.
type launch func(bufs [][]byte, params []uint32, groups [3]uint32) error

// opener opens the first device of a backend, or says why it cannot.
type opener func() (device, error)

var openers = map[string]opener{
	"vulkan": openVulkan,
	"cuda":   openCUDA,
	"hip":    openHIP,
	"metal": func() (device, error) {
		return nil, fmt.Errorf("unavailable: metal: package prebuilt has no Metal runtime (the .metal files are embedded for programs that run them on Apple systems)")
	},
}

// FeatureNames returns the names of the Vulkan features set in f, in a fixed order: what a
// generated file records in VulkanModule.Features.
func FeatureNames(f vulkan.Features) []string {
	var names []string
	for _, d := range featureTable {
		if *d.field(&f) {
			names = append(names, d.name)
		}
	}
	return names
}

var featureTable = []struct {
	name  string
	field func(*vulkan.Features) *bool
}{
	{"int8", func(f *vulkan.Features) *bool { return &f.Int8 }},
	{"int16", func(f *vulkan.Features) *bool { return &f.Int16 }},
	{"float16", func(f *vulkan.Features) *bool { return &f.Float16 }},
	{"float64", func(f *vulkan.Features) *bool { return &f.Float64 }},
	{"storage_buffer_8bit", func(f *vulkan.Features) *bool { return &f.StorageBuffer8 }},
	{"storage_buffer_16bit", func(f *vulkan.Features) *bool { return &f.StorageBuffer16 }},
	{"integer_dot_product", func(f *vulkan.Features) *bool { return &f.IntegerDotProduct }},
	{"subgroup_shuffle", func(f *vulkan.Features) *bool { return &f.SubgroupShuffle }},
	{"subgroup_basic", func(f *vulkan.Features) *bool { return &f.SubgroupBasic }},
}

func featuresOf(names []string) (vulkan.Features, error) {
	var f vulkan.Features
next:
	for _, n := range names {
		for _, d := range featureTable {
			if d.name == n {
				*d.field(&f) = true
				continue next
			}
		}
		var known []string
		for _, d := range featureTable {
			known = append(known, d.name)
		}
		sort.Strings(known)
		return f, fmt.Errorf("unknown Vulkan feature %q (known: %v): regenerate with this version of onesource", n, known)
	}
	return f, nil
}

type vulkanDevice struct{ d *vulkan.Device }

func openVulkan() (device, error) {
	if err := vulkan.Available(); err != nil {
		return nil, err
	}
	d, err := vulkan.Open(vulkan.Options{})
	if err != nil {
		return nil, err
	}
	return &vulkanDevice{d}, nil
}

func (v *vulkanDevice) describe() (string, string) {
	info := v.d.Info()
	return info.Name, fmt.Sprintf("%s %s", info.DriverName, info.DriverInfo)
}

func (v *vulkanDevice) close() { v.d.Close() }

func (v *vulkanDevice) load(k *Kernel, a *Artifact) (launch, error) {
	if a.Vulkan == nil {
		return nil, fmt.Errorf("%s: no Vulkan module description (regenerate)", a.File)
	}
	data := a.Data()
	if len(data)%4 != 0 || len(data) < 20 {
		return nil, fmt.Errorf("%s: %d bytes is not a SPIR-V module", a.File, len(data))
	}
	words := make([]uint32, len(data)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(data[4*i:])
	}
	feats, err := featuresOf(a.Vulkan.Features)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.File, err)
	}
	m := &vulkan.Module{
		Name:             k.Name,
		Words:            words,
		PushConstantSize: a.Vulkan.PushConstantSize,
		WorkgroupSize:    k.Workgroup,
		SubgroupSize:     a.Vulkan.SubgroupSize,
		SharedBytes:      a.Vulkan.SharedBytes,
		Features:         feats,
	}
	for _, b := range k.Buffers {
		m.Bindings = append(m.Bindings, vulkan.Binding{Name: b.Name, ElemSize: b.ElemBytes, ReadOnly: b.Access == Read})
	}
	p, err := v.d.Pipeline(m)
	if err != nil {
		return nil, err
	}
	return func(host [][]byte, params []uint32, groups [3]uint32) error {
		bufs := make([]*vulkan.Buffer, len(host))
		defer func() {
			for _, b := range bufs {
				if b != nil {
					b.Release()
				}
			}
		}()
		for i, data := range host {
			b, err := v.d.NewBuffer(len(data))
			if err != nil {
				return err
			}
			bufs[i] = b
			if err := b.Write(0, data); err != nil {
				return err
			}
		}
		push := make([]byte, 4*len(params))
		for i, p := range params {
			binary.LittleEndian.PutUint32(push[4*i:], p)
		}
		if err := v.d.Run(p, bufs, push, groups); err != nil {
			return err
		}
		for i, b := range k.Buffers {
			if b.Access.Writes() {
				if err := bufs[i].Read(0, host[i]); err != nil {
					return err
				}
			}
		}
		return nil
	}, nil
}

// gpuBuffer is what the CUDA and HIP runtimes' buffers have in common.
type gpuBuffer interface {
	Write(offset int, data []byte) error
	Read(offset int, dst []byte) error
	Release()
}

// cfamilyDevice is a CUDA or HIP device: the two differ only in the driver calls.
type cfamilyDevice struct {
	name, driver string
	alloc        func(size int) (gpuBuffer, error)
	compile      func(src, entry string) (any, error)
	launch       func(kern any, bufs []gpuBuffer, params []uint32, grid, block [3]uint32) error
	closeFn      func()
}

func openCUDA() (device, error) {
	if err := cuda.Available(); err != nil {
		return nil, err
	}
	d, err := cuda.Open(0)
	if err != nil {
		return nil, err
	}
	info := d.Info()
	return &cfamilyDevice{
		name: info.Name, driver: fmt.Sprintf("CUDA driver %d, %s", d.DriverVersion(), info.Arch),
		alloc:   func(n int) (gpuBuffer, error) { return d.NewBuffer(n) },
		compile: func(src, entry string) (any, error) { return d.Compile(src, entry) },
		launch: func(kern any, bufs []gpuBuffer, params []uint32, grid, block [3]uint32) error {
			bs := make([]*cuda.Buffer, len(bufs))
			for i, b := range bufs {
				bs[i] = b.(*cuda.Buffer)
			}
			return d.Launch(kern.(*cuda.Kernel), bs, params, grid, block)
		},
		closeFn: func() { d.Close() },
	}, nil
}

func openHIP() (device, error) {
	if err := hip.Available(); err != nil {
		return nil, err
	}
	d, err := hip.Open(0)
	if err != nil {
		return nil, err
	}
	info := d.Info()
	return &cfamilyDevice{
		name: info.Name, driver: fmt.Sprintf("HIP runtime %d, %s", d.RuntimeVersion(), info.Arch),
		alloc:   func(n int) (gpuBuffer, error) { return d.NewBuffer(n) },
		compile: func(src, entry string) (any, error) { return d.Compile(src, entry) },
		launch: func(kern any, bufs []gpuBuffer, params []uint32, grid, block [3]uint32) error {
			bs := make([]*hip.Buffer, len(bufs))
			for i, b := range bufs {
				bs[i] = b.(*hip.Buffer)
			}
			return d.Launch(kern.(*hip.Kernel), bs, params, grid, block)
		},
		closeFn: func() { d.Close() },
	}, nil
}

func (c *cfamilyDevice) describe() (string, string) { return c.name, c.driver }

func (c *cfamilyDevice) close() { c.closeFn() }

func (c *cfamilyDevice) load(k *Kernel, a *Artifact) (launch, error) {
	kern, err := c.compile(string(a.Data()), k.Name)
	if err != nil {
		return nil, err
	}
	return func(host [][]byte, params []uint32, groups [3]uint32) error {
		bufs := make([]gpuBuffer, len(host))
		defer func() {
			for _, b := range bufs {
				if b != nil {
					b.Release()
				}
			}
		}()
		for i, data := range host {
			b, err := c.alloc(len(data))
			if err != nil {
				return err
			}
			bufs[i] = b
			if err := b.Write(0, data); err != nil {
				return err
			}
		}
		args := append([]uint32(nil), params...)
		for _, i := range a.LenArgs {
			if i < 0 || i >= len(k.Buffers) {
				return fmt.Errorf("%s: length argument for binding %d, the kernel has %d buffers (regenerate)", a.File, i, len(k.Buffers))
			}
			args = append(args, uint32(len(host[i])/k.Buffers[i].ElemBytes))
		}
		if err := c.launch(kern, bufs, args, groups, k.Workgroup); err != nil {
			return err
		}
		for i, b := range k.Buffers {
			if b.Access.Writes() {
				if err := bufs[i].Read(0, host[i]); err != nil {
					return err
				}
			}
		}
		return nil
	}, nil
}
