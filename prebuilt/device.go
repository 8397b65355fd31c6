package prebuilt

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/devrun"
	"github.com/onesource-go/onesource/internal/gpudrv"
)

// device is one open backend device of a Runtime.
type device interface {
	// describe returns the device and driver strings registry evidence is keyed by.
	describe() (device, driver string)
	// newBuffer allocates a zero-filled buffer of size bytes on the device.
	newBuffer(size int) (buffer, error)
	// load prepares a kernel's artifact to run.
	load(k *Kernel, a *Artifact) (launch, error)
	close()
}

// buffer is a device buffer (*vulkan.Buffer, the CUDA and HIP *gpudrv.Buffer, *memBuffer).
type buffer interface {
	devrun.Buffer
	Size() int
}

// launch runs a loaded kernel once over buffers of its device, in binding order, and waits.
type launch func(bufs []buffer, params []uint32, groups [3]uint32) error

// opener opens the first device of a backend, or says why it cannot.
type opener func(opts Options) (device, error)

var openers = map[string]opener{
	"vulkan": openVulkan,
	"cuda":   openCUDA,
	"hip":    openHIP,
	"metal": func(Options) (device, error) {
		return nil, fmt.Errorf("unavailable: metal: package prebuilt has no Metal runtime (the .metal files are embedded for programs that run them on Apple systems)")
	},
	"cpu": func(Options) (device, error) { return cpuDevice{}, nil },
}

// memBuffer is a device buffer in Go memory: the cpu executor's.
type memBuffer struct {
	data     []byte
	released bool
}

func (b *memBuffer) Size() int { return len(b.data) }

func (b *memBuffer) check(op string, off, n int) error {
	switch {
	case b.released:
		return fmt.Errorf("cpu: Buffer.%s: buffer released", op)
	case off < 0 || n < 0 || off > len(b.data) || n > len(b.data)-off:
		return fmt.Errorf("cpu: Buffer.%s: range [%d, %d+%d) outside the buffer's %d bytes", op, off, off, n, len(b.data))
	}
	return nil
}

func (b *memBuffer) Write(off int, data []byte) error {
	if err := b.check("Write", off, len(data)); err != nil {
		return err
	}
	copy(b.data[off:], data)
	return nil
}

func (b *memBuffer) Read(off int, dst []byte) error {
	if err := b.check("Read", off, len(dst)); err != nil {
		return err
	}
	copy(dst, b.data[off:])
	return nil
}

func (b *memBuffer) Release() { b.released, b.data = true, nil }

// as converts a launch's buffers to the device's own type.
func as[B any](backend string, bufs []buffer) ([]B, error) {
	out := make([]B, len(bufs))
	for i, b := range bufs {
		v, ok := b.(B)
		if !ok {
			return nil, fmt.Errorf("%s: binding %d: a %T is not a buffer of this device", backend, i, b)
		}
		out[i] = v
	}
	return out, nil
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
	{"subgroup_arithmetic", func(f *vulkan.Features) *bool { return &f.SubgroupArithmetic }},
	{"atomic_float32_add", func(f *vulkan.Features) *bool { return &f.AtomicFloat32Add }},
	{"cooperative_matrix", func(f *vulkan.Features) *bool { return &f.CooperativeMatrix }},
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

func openVulkan(Options) (device, error) {
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

func (v *vulkanDevice) newBuffer(size int) (buffer, error) { return v.d.NewBuffer(size) }

func (v *vulkanDevice) load(k *Kernel, a *Artifact) (launch, error) {
	if a.Vulkan == nil {
		return nil, fmt.Errorf("%s: no Vulkan module description (regenerate)", a.File)
	}
	words, err := vulkan.Words(a.Data())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.File, err)
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
	return func(bufs []buffer, params []uint32, groups [3]uint32) error {
		vb, err := as[*vulkan.Buffer]("vulkan", bufs)
		if err != nil {
			return err
		}
		push := make([]byte, 4*len(params))
		for i, p := range params {
			binary.LittleEndian.PutUint32(push[4*i:], p)
		}
		return v.d.Run(p, vb, push, groups)
	}, nil
}

// written lists the bindings the kernel may store to: the ones copied back after a run.
func written(k *Kernel) []int {
	var out []int
	for i, b := range k.Buffers {
		if b.Access.Writes() {
			out = append(out, i)
		}
	}
	return out
}

// cfamilyDevice is a CUDA or HIP device (a GPU's, or the emulated one): the one driver of
// internal/gpudrv, which both backends' Devices embed.
type cfamilyDevice struct {
	d *gpudrv.Device
}

func openCUDA(opts Options) (device, error) {
	d, err := gpudrv.OpenDevice(opts.Emulated, 0, cuda.OpenEmulated, cuda.Available, cuda.Open)
	if err != nil {
		return nil, err
	}
	return cfamilyDevice{d.Device}, nil
}

func openHIP(opts Options) (device, error) {
	d, err := gpudrv.OpenDevice(opts.Emulated, 0, hip.OpenEmulated, hip.Available, hip.Open)
	if err != nil {
		return nil, err
	}
	return cfamilyDevice{d.Device}, nil
}

func (c cfamilyDevice) describe() (string, string)         { return c.d.Identity() }
func (c cfamilyDevice) close()                             { c.d.Close() }
func (c cfamilyDevice) newBuffer(size int) (buffer, error) { return c.d.NewBuffer(size) }

// load compiles the embedded source for the device (NVRTC, HIPRTC, or the emulation's host
// compiler); a launch passes the buffers, the parameters, then the element count of each buffer
// the file's LenArgs names.
func (c cfamilyDevice) load(k *Kernel, a *Artifact) (launch, error) {
	kern, err := c.d.Compile(string(a.Data()), k.Name)
	if err != nil {
		return nil, err
	}
	return func(bufs []buffer, params []uint32, groups [3]uint32) error {
		gb, err := as[*gpudrv.Buffer](c.d.Backend(), bufs)
		if err != nil {
			return err
		}
		args := append([]uint32(nil), params...)
		for _, i := range a.LenArgs {
			if i < 0 || i >= len(k.Buffers) {
				return fmt.Errorf("%s: length argument for binding %d, the kernel has %d buffers (regenerate)", a.File, i, len(k.Buffers))
			}
			args = append(args, uint32(gb[i].Size()/k.Buffers[i].ElemBytes))
		}
		return c.d.Launch(kern, gb, args, groups, k.Workgroup)
	}, nil
}

// cpuDevice is the CPU executor (package backends/cpu): always available, it runs the kernel
// file (the kernel lowered for cpu.Caps) on this machine's cores, over buffers in Go memory.
type cpuDevice struct{}

func (cpuDevice) describe() (string, string) {
	return cpu.Identity()
}

func (cpuDevice) close() {}

func (cpuDevice) newBuffer(size int) (buffer, error) {
	return &memBuffer{data: make([]byte, size)}, nil
}

func (cpuDevice) load(k *Kernel, a *Artifact) (launch, error) {
	p, err := cpu.Load(a.Data())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.File, err)
	}
	low := p.Kernel()
	if len(low.Buffers) != len(k.Buffers) || len(low.Params) != len(k.Params) || low.WorkgroupSize != k.Workgroup {
		return nil, fmt.Errorf("%s: the file's kernel (%d buffers, %d parameters, workgroup %v) is not the generated file's description (%d, %d, %v): regenerate",
			a.File, len(low.Buffers), len(low.Params), low.WorkgroupSize, len(k.Buffers), len(k.Params), k.Workgroup)
	}
	return func(bufs []buffer, params []uint32, groups [3]uint32) error {
		mb, err := as[*memBuffer]("cpu", bufs)
		if err != nil {
			return err
		}
		data := make([][]byte, len(mb))
		for i, b := range mb {
			if b.released {
				return fmt.Errorf("cpu: binding %d: buffer released", i)
			}
			data[i] = b.data
		}
		return p.Run(data, params, groups)
	}, nil
}
