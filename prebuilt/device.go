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
	"cpu": func() (device, error) { return cpuDevice{}, nil },
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
	return func(host [][]byte, params []uint32, groups [3]uint32) error {
		push := make([]byte, 4*len(params))
		for i, p := range params {
			binary.LittleEndian.PutUint32(push[4*i:], p)
		}
		return devrun.Once(v.d.NewBuffer, host, written(k), func(bufs []*vulkan.Buffer) error {
			return v.d.Run(p, bufs, push, groups)
		})
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

// cfamilyDevice is a CUDA or HIP device: the two differ only in the driver calls, which
// openCUDA and openHIP bind.
type cfamilyDevice struct {
	name, driver string
	compile      func(src, entry string) (run func(host [][]byte, readBack []int, params []uint32, grid, block [3]uint32) error, err error)
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
	return newCFamily(info.Name, fmt.Sprintf("CUDA driver %d, %s", d.DriverVersion(), info.Arch),
		d.Compile, d.NewBuffer, d.Launch, d.Close), nil
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
	return newCFamily(info.Name, fmt.Sprintf("HIP runtime %d, %s", d.RuntimeVersion(), info.Arch),
		d.Compile, d.NewBuffer, d.Launch, d.Close), nil
}

// newCFamily binds a CUDA or HIP device's calls (K its kernel type, B its buffer type).
func newCFamily[K any, B devrun.Buffer](name, driver string,
	compile func(src, entry string, options ...string) (K, error),
	alloc func(size int) (B, error),
	launchFn func(k K, bufs []B, params []uint32, grid, block [3]uint32) error,
	closeFn func() error) *cfamilyDevice {
	return &cfamilyDevice{
		name: name, driver: driver,
		compile: func(src, entry string) (func([][]byte, []int, []uint32, [3]uint32, [3]uint32) error, error) {
			kern, err := compile(src, entry)
			if err != nil {
				return nil, err
			}
			return func(host [][]byte, readBack []int, params []uint32, grid, block [3]uint32) error {
				return devrun.Once(alloc, host, readBack, func(bufs []B) error {
					return launchFn(kern, bufs, params, grid, block)
				})
			}, nil
		},
		closeFn: func() { closeFn() },
	}
}

func (c *cfamilyDevice) describe() (string, string) { return c.name, c.driver }

func (c *cfamilyDevice) close() { c.closeFn() }

func (c *cfamilyDevice) load(k *Kernel, a *Artifact) (launch, error) {
	run, err := c.compile(string(a.Data()), k.Name)
	if err != nil {
		return nil, err
	}
	return func(host [][]byte, params []uint32, groups [3]uint32) error {
		args := append([]uint32(nil), params...)
		for _, i := range a.LenArgs {
			if i < 0 || i >= len(k.Buffers) {
				return fmt.Errorf("%s: length argument for binding %d, the kernel has %d buffers (regenerate)", a.File, i, len(k.Buffers))
			}
			args = append(args, uint32(len(host[i])/k.Buffers[i].ElemBytes))
		}
		return run(host, written(k), args, groups, k.Workgroup)
	}, nil
}

// cpuDevice is the CPU executor (package backends/cpu): always available, it runs the kernel
// file (the kernel lowered for cpu.Caps) on this machine's cores, in the caller's buffers.
type cpuDevice struct{}

func (cpuDevice) describe() (string, string) {
	return cpu.Identity()
}

func (cpuDevice) close() {}

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
	return func(host [][]byte, params []uint32, groups [3]uint32) error {
		return p.Run(host, params, groups)
	}, nil
}
