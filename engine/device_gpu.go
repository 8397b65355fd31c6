package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/gpudrv"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// gpuDevice serves the engine on a CUDA or HIP device, a GPU's or the emulated one (host
// execution of the emitted text, level H): the one driver of internal/gpudrv either way. Twins
// are emitted as CUDA or HIP text and compiled for the device (NVRTC, HIPRTC, or the host
// compiler); incumbents are the manifest's .cu and .hip sources, compiled the same way. Queued
// dispatches are launches on one stream, submitted at flush and waited for once: launches on one
// stream run in order, so none needs a barrier (Stats.Barriers stays 0).
type gpuDevice struct {
	name    string // "cuda" or "hip"
	dev     *gpudrv.Device
	stream  *gpudrv.Stream
	desc    vulkan.DeviceInfo
	caps    int        // the subgroup size the dialect's lowering assumes
	lcaps   lower.Caps // what the dialect's lowering assumes (checked mode instruments for it)
	emit    func(k *ir.Kernel) (string, *ir.Kernel, error)
	kernels map[string]*gpudrv.Kernel // incumbents' compiled sources, by hash
	closeFn func() error
}

// gpuProgram is a kernel compiled for the device: a twin's (its lowered kernel's buffers,
// parameters and the buffers whose element counts follow the parameters) or an incumbent's.
type gpuProgram struct {
	k      *gpudrv.Kernel
	names  []string // buffer bindings, in order
	pnames []string // a twin's 32-bit parameters, in order
	lens   []int    // bindings whose element count is passed after the parameters (OpLen)
	elems  []int    // element size of each binding, for lens
	block  [3]uint32
}

func (p *gpuProgram) bindings() []string { return p.names }
func (p *gpuProgram) params() []string   { return p.pnames }

// gpuMaxBinding is the most bytes one engine buffer holds on CUDA and HIP: the kernels index
// buffers with 32-bit element indices, and 2^31-1 bytes keeps every byte offset in an int32.
const gpuMaxBinding = math.MaxInt32

// openGPU opens the CUDA or HIP device of opts: device opts.DeviceIndex of the GPU runtime, or
// with opts.Emulated the emulated device.
func openGPU(opts Options) (device, error) {
	g := &gpuDevice{name: opts.Backend, kernels: map[string]*gpudrv.Kernel{}}
	var info gpudrv.Properties
	var arch, kind string
	switch opts.Backend {
	case CUDA:
		d, err := gpudrv.OpenDevice(opts.Emulated, opts.DeviceIndex, cuda.OpenEmulated, cuda.Available, cuda.Open)
		if err != nil {
			return nil, err
		}
		g.dev, info, arch, kind, g.caps = d.Device, d.Info().Properties, d.Info().Arch, "CUDA", cuda.Caps.SubgroupSize
		// The device's architecture decides the islands' bodies (mma.sync from sm_80); the
		// emulated device emulates sm_80's. Text without islands is the same for every one.
		target := d.Info().Arch
		if d.Emulated() {
			target = "sm_80"
		}
		caps, err := cuda.CapsFor(target)
		if err != nil {
			target = "sm_61"
			if caps, err = cuda.CapsFor(target); err != nil {
				caps = cuda.Caps
			}
		}
		g.lcaps = caps // checked mode lowers for what the text is emitted for
		g.emit = func(k *ir.Kernel) (string, *ir.Kernel, error) { return cuda.EmitLoweredFor(k, target) }
	case HIP:
		d, err := gpudrv.OpenDevice(opts.Emulated, opts.DeviceIndex, hip.OpenEmulated, hip.Available, hip.Open)
		if err != nil {
			return nil, err
		}
		// The emulated device emits for gfx90a (CDNA2, wave64), the target conformance
		// validates with hipcc; a GPU for its own processor, else for every AMD GPU.
		target := hip.Generic
		if d.Emulated() {
			target = "gfx90a"
		} else if _, err := hip.DialectFor(d.Info().Processor()); err == nil {
			target = d.Info().Processor()
		}
		caps, err := hip.CapsFor(target)
		if err != nil {
			d.Close()
			return nil, err
		}
		g.dev, info, arch, kind, g.caps, g.lcaps = d.Device, d.Info().Properties, d.Info().Arch, "HIP", caps.SubgroupSize, caps
		g.emit = func(k *ir.Kernel) (string, *ir.Kernel, error) { return hip.EmitLowered(k, target) }
	}
	st, err := g.dev.NewStream(opts.Timed)
	if err != nil {
		g.dev.Close()
		return nil, err
	}
	g.stream, g.closeFn = st, g.dev.Close
	typ := "GPU"
	if g.dev.Emulated() {
		typ = "CPU (host emulation, level H)"
	}
	_, drv := g.dev.Identity()
	g.desc = vulkan.DeviceInfo{
		Index: info.Index, Name: info.Name, Type: typ, DriverName: kind, DriverInfo: drv + " (" + arch + ")",
		SubgroupSize: uint32(info.WarpSize), MinSubgroupSize: uint32(info.WarpSize), MaxSubgroupSize: uint32(info.WarpSize),
		MaxComputeSharedMemory: uint32(info.SharedMemoryPerBlock), MaxWorkgroupSize: info.MaxBlock,
		MaxWorkgroupInvocations: uint32(info.MaxThreadsPerBlock), MaxWorkgroupCount: info.MaxGrid,
		MaxStorageBufferRange: gpuMaxBinding, MinStorageBufferOffsetAlignment: gpudrv.ViewAlignment,
		Timestamps: true, TimestampPeriod: 1,
	}
	return g, nil
}

func (g *gpuDevice) backend() string                    { return g.name }
func (g *gpuDevice) info() vulkan.DeviceInfo            { return g.desc }
func (g *gpuDevice) evidence() (string, string)         { return g.dev.Identity() }
func (g *gpuDevice) subgroupSize() int                  { return g.caps }
func (g *gpuDevice) maxBinding() int                    { return gpuMaxBinding }
func (g *gpuDevice) incumbents() bool                   { return true }
func (g *gpuDevice) queued() int                        { return g.stream.Len() }
func (g *gpuDevice) close() error                       { return g.closeFn() }
func (g *gpuDevice) newBuffer(size int) (buffer, error) { return g.dev.NewBuffer(size) }

// stats are the shared device's counters in the engine's terms: a submission per flush that ran
// launches, a dispatch per launch, no barriers.
func (g *gpuDevice) stats() Stats {
	s := g.dev.Stats()
	return Stats{Submits: s.Submits, Dispatches: s.Launches, HostWrites: s.HostWrites, HostReads: s.HostReads}
}

// compile emits the twin as the device's text and compiles it.
func (g *gpuDevice) compile(k *ir.Kernel) (program, error) {
	src, low, err := g.emit(k)
	if err != nil {
		return nil, fmt.Errorf("emitting the twin as %s: %w", g.name, err)
	}
	kern, err := g.dev.Compile(src, low.Name)
	if err != nil {
		return nil, fmt.Errorf("compiling the twin: %w", err)
	}
	p := &gpuProgram{k: kern, lens: low.LenRefs(), block: low.WorkgroupSize}
	for _, b := range low.Buffers {
		p.names = append(p.names, b.Name)
		p.elems = append(p.elems, b.Elem.Stride())
	}
	for _, q := range low.Params {
		p.pnames = append(p.pnames, q.Name)
	}
	return p, nil
}

// incumbent instantiates a .cu or .hip incumbent at the call's shape and compiles its source
// (once per source and options).
func (g *gpuDevice) incumbent(ent *incumbent.Entry, vars map[string]float64) (*incumbent.Launch, program, error) {
	l, err := ent.CFamily(vars)
	if err != nil {
		return nil, nil, err
	}
	src := l.Kernel
	h := sha256.Sum256([]byte(src.Entry + "\x00" + strings.Join(src.Options, "\x00") + "\x00" + src.Text))
	key := hex.EncodeToString(h[:])
	k, ok := g.kernels[key]
	if !ok {
		if k, err = g.dev.Compile(src.Text, src.Entry, src.Options...); err != nil {
			return nil, nil, fmt.Errorf("incumbent %s: %w", ent.Name, err)
		}
		g.kernels[key] = k
	}
	return l, &gpuProgram{k: k, names: slices.Clone(l.Operands), block: src.Block}, nil
}

// dispatch queues a launch of p: views are its pointer arguments (each a buffer's address plus
// the view's offset), push its 32-bit scalars, then the element counts of p.lens.
func (g *gpuDevice) dispatch(p program, views []view, push []byte, groups [3]uint32) error {
	gp, ok := p.(*gpuProgram)
	if !ok {
		return fmt.Errorf("engine: a %T dispatched on %s", p, g.name)
	}
	if len(push)%4 != 0 {
		return fmt.Errorf("%s: %d bytes of parameters, not whole 32-bit words", g.name, len(push))
	}
	vv := make([]gpudrv.View, len(views))
	for i, w := range views {
		b, ok := w.buf.(*gpudrv.Buffer)
		if !ok {
			return fmt.Errorf("engine: binding %d: a %T bound on %s", i, w.buf, g.name)
		}
		vv[i] = gpudrv.View{Buffer: b, Offset: w.off, Size: w.size}
	}
	params := make([]uint32, 0, len(push)/4+len(gp.lens))
	for i := 0; i+4 <= len(push); i += 4 {
		params = append(params, binary.LittleEndian.Uint32(push[i:]))
	}
	for _, i := range gp.lens {
		if i >= len(vv) {
			return fmt.Errorf("%s: kernel %s reads the length of binding %d of %d", g.name, gp.k.Name(), i, len(vv))
		}
		size := vv[i].Size
		if size == 0 {
			size = vv[i].Buffer.Size() - vv[i].Offset
		}
		params = append(params, uint32(size/gp.elems[i]))
	}
	return g.stream.Launch(gp.k, vv, params, groups, gp.block)
}

// flush submits the queued launches and waits once. A context already done abandons them
// (nothing was submitted); once submitted, the wait runs to its end.
func (g *gpuDevice) flush(ctx context.Context) ([]time.Duration, error) {
	if err := ctx.Err(); err != nil {
		g.stream.Reset()
		return nil, err
	}
	if err := g.stream.Submit(); err != nil {
		return nil, err
	}
	return g.stream.Times(), nil
}

// copyBandwidth is bytes read plus written by a device-to-device copy kernel over 16 MiB (4 MiB
// on the emulated device), the median of five timed runs of ten launches.
func (g *gpuDevice) copyBandwidth() (float64, error) {
	size := 16 << 20
	if g.dev.Emulated() {
		size = 4 << 20
	}
	text := `extern "C" __global__ void os_copy(unsigned* dst, const unsigned* src, unsigned n) {
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[i];
}`
	k, err := g.dev.Compile(text, "os_copy")
	if err != nil {
		return 0, err
	}
	defer k.Release()
	return medianCopyBandwidth(size, g.newBuffer, func(src, dst buffer) (time.Duration, error) {
		r, err := g.dev.Bench(k, []*gpudrv.Buffer{dst.(*gpudrv.Buffer), src.(*gpudrv.Buffer)}, []uint32{uint32(size / 4)}, [3]uint32{1024, 1, 1}, [3]uint32{256, 1, 1}, 1, 10)
		return r.PerDispatch, err
	})
}
