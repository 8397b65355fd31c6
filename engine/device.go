package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/ir"
)

// device is what the engine needs of a backend: buffers, kernels compiled for it, and a queue
// of dispatches run in order at flush. Every method but stats is called with e.mu held;
// buffer methods may be called without it (Tensor.Release).
type device interface {
	// backend is the backend's name in cell keys ("vulkan", "cpu").
	backend() string
	// info describes the device (Engine.Device).
	info() vulkan.DeviceInfo
	// evidence names the device and its driver as the registry's evidence and the tuning cache
	// key them.
	evidence() (device, driver string)
	// subgroupSize is the subgroup size the lowering assumes (0: none), for default schedules.
	subgroupSize() int
	// maxBinding is the most bytes one binding can address.
	maxBinding() int
	// newBuffer allocates a zero-filled buffer of size bytes.
	newBuffer(size int) (buffer, error)
	// compile compiles a twin's kernel for the device.
	compile(k *ir.Kernel) (program, error)
	// incumbents reports whether the device runs hand-written incumbents (Vulkan SPIR-V).
	incumbents() bool
	// incumbent instantiates ent at the call's shape variables.
	incumbent(ent *incumbent.Entry, vars map[string]float64) (*incumbent.Launch, program, error)
	// dispatch queues p over groups workgroups with views bound in binding order and push as its
	// 32-bit parameters (little-endian, in declaration order).
	dispatch(p program, views []view, push []byte, groups [3]uint32) error
	// queued is the number of queued dispatches.
	queued() int
	// flush runs the queued dispatches in order and returns, timed, each one's device time.
	flush(ctx context.Context) ([]time.Duration, error)
	// stats returns the device's counters.
	stats() Stats
	// copyBandwidth measures the device's copy bandwidth in GB/s (Engine.CopyBandwidth).
	copyBandwidth() (float64, error)
	close() error
}

// buffer is a device buffer (*vulkan.Buffer is one).
type buffer interface {
	Size() int
	Write(offset int, data []byte) error
	Read(offset int, dst []byte) error
	Release()
}

// view is a byte range of a buffer bound to one binding of a dispatch; size 0 means to the end
// of the buffer.
type view struct {
	buf       buffer
	off, size int
}

// whole is a view of all of b.
func whole(b buffer) view { return view{buf: b} }

// program is a kernel compiled for a device.
type program interface {
	// bindings names the kernel's buffer bindings, in binding order.
	bindings() []string
	// params names a twin's 32-bit parameters, in the order dispatch takes them.
	params() []string
}

// Stats counts what the engine's device did since it was opened (vulkan.Stats): submissions
// (flushes that ran dispatches), dispatches, barriers between dispatches, host writes and reads.
// On the cpu backend dispatches run one after another, so there are no barriers.
type Stats = vulkan.Stats

// vulkanDevice serves the engine on a Vulkan device: one stream, submitted at flush.
type vulkanDevice struct {
	dev    *vulkan.Device
	stream *vulkan.Stream
}

type vulkanProgram struct {
	pipe  *vulkan.Pipeline
	names []string // the twin's parameters (none for an incumbent: its launch has its push block)
}

func (p vulkanProgram) params() []string { return p.names }

func (p vulkanProgram) bindings() []string {
	var names []string
	for _, b := range p.pipe.Module().Bindings {
		names = append(names, b.Name)
	}
	return names
}

func openVulkan(opts Options) (device, error) {
	if err := vulkan.Available(); err != nil {
		return nil, err
	}
	dev, err := vulkan.Open(vulkan.Options{DeviceIndex: opts.DeviceIndex})
	if err != nil {
		return nil, err
	}
	st, err := dev.NewStream(opts.Timed)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return &vulkanDevice{dev: dev, stream: st}, nil
}

func (v *vulkanDevice) backend() string                    { return Vulkan }
func (v *vulkanDevice) info() vulkan.DeviceInfo            { return v.dev.Info() }
func (v *vulkanDevice) evidence() (string, string)         { return v.dev.Info().Evidence() }
func (v *vulkanDevice) subgroupSize() int                  { return v.dev.Caps().SubgroupSize }
func (v *vulkanDevice) maxBinding() int                    { return int(v.dev.Info().MaxStorageBufferRange) }
func (v *vulkanDevice) incumbents() bool                   { return true }
func (v *vulkanDevice) queued() int                        { return v.stream.Len() }
func (v *vulkanDevice) stats() Stats                       { return v.dev.Stats() }
func (v *vulkanDevice) close() error                       { return v.dev.Close() }
func (v *vulkanDevice) newBuffer(size int) (buffer, error) { return v.dev.NewBuffer(size) }

func (v *vulkanDevice) compile(k *ir.Kernel) (program, error) {
	m, err := v.dev.Compile(k)
	if err != nil {
		return nil, fmt.Errorf("compiling the twin: %w", err)
	}
	p, err := v.dev.Pipeline(m)
	if err != nil {
		return nil, err
	}
	vp := vulkanProgram{pipe: p}
	for _, q := range k.Params {
		vp.names = append(vp.names, q.Name)
	}
	return vp, nil
}

func (v *vulkanDevice) incumbent(ent *incumbent.Entry, vars map[string]float64) (*incumbent.Launch, program, error) {
	l, err := ent.VulkanFor(v.dev.Info(), vars)
	if err != nil {
		return nil, nil, err
	}
	p, err := v.dev.Pipeline(l.Module)
	if err != nil {
		return nil, nil, fmt.Errorf("incumbent %s: %w", ent.Name, err)
	}
	return l, vulkanProgram{pipe: p}, nil
}

func (v *vulkanDevice) dispatch(p program, views []view, push []byte, groups [3]uint32) error {
	vp, ok := p.(vulkanProgram)
	if !ok {
		return fmt.Errorf("engine: a %T dispatched on Vulkan", p)
	}
	vv := make([]vulkan.View, len(views))
	for i, w := range views {
		b, ok := w.buf.(*vulkan.Buffer)
		if !ok {
			return fmt.Errorf("engine: binding %d: a %T bound on Vulkan", i, w.buf)
		}
		vv[i] = vulkan.View{Buffer: b, Offset: w.off, Size: w.size}
	}
	return v.stream.Dispatch(vp.pipe, vv, push, groups)
}

func (v *vulkanDevice) flush(ctx context.Context) ([]time.Duration, error) {
	if err := v.stream.SubmitContext(ctx); err != nil {
		return nil, err
	}
	return v.stream.Times(), nil
}

// copyBandwidth is bytes read plus written by vkCmdCopyBuffer of 16 MiB (as onesource bench
// measures it), the median of five runs of ten copies.
func (v *vulkanDevice) copyBandwidth() (float64, error) {
	size := min(16<<20, int(v.dev.Info().MaxStorageBufferRange)) &^ 3
	return medianCopyBandwidth(size, v.newBuffer, func(src, dst buffer) (time.Duration, error) {
		r, err := v.dev.BenchCopy(src.(*vulkan.Buffer), dst.(*vulkan.Buffer), size, 2, 10)
		return r.PerDispatch, err
	})
}

// medianCopyBandwidth is a device's copy roofline in GB/s: two buffers of size bytes from alloc,
// then the median of five timings of copy (the device time of one copy of src to dst, averaged
// over ten), as bytes read plus written per nanosecond.
func medianCopyBandwidth(size int, alloc func(int) (buffer, error), copy func(src, dst buffer) (time.Duration, error)) (float64, error) {
	src, err := alloc(size)
	if err != nil {
		return 0, err
	}
	defer src.Release()
	dst, err := alloc(size)
	if err != nil {
		return 0, err
	}
	defer dst.Release()
	var ns []float64
	for i := 0; i < 5; i++ {
		d, err := copy(src, dst)
		if err != nil {
			return 0, err
		}
		ns = append(ns, float64(max(d.Nanoseconds(), 1)))
	}
	slices.Sort(ns)
	return 2 * float64(size) / ns[len(ns)/2], nil
}
