package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/ir"
)

// Native serves every cell as native CPU code (package backends/native): the twins built by the
// host's C compiler into machine code for this CPU, run on its cores. On a machine without a C
// compiler, Open with Backend Native serves on the Go executor (CPU) instead and Fallback says
// why.
const Native = "native"

// nativeDevice serves the engine on native CPU code. Its buffers, views and counters are the cpu
// executor's (byte slices in memory, cpuDevice); only the programs and the queue of dispatches
// are its own.
type nativeDevice struct {
	*cpuDevice
	ops []nativeDispatch // guarded by cpuDevice.mu
}

type nativeProgram struct {
	p      *native.Program
	names  []string
	pnames []string
}

func (p *nativeProgram) bindings() []string { return p.names }
func (p *nativeProgram) params() []string   { return p.pnames }

type nativeDispatch struct {
	p      *nativeProgram
	views  []view
	params []uint32
	groups [3]uint32
}

// openNative opens native CPU code, or, where the backend is unavailable, the Go executor with
// the reason.
func openNative(opts Options) (dev device, fallback string, err error) {
	if err := native.Available(); err != nil {
		dev, err2 := openCPU(opts)
		return dev, fmt.Sprintf("native CPU code unavailable (%v): serving on the Go executor", err), err2
	}
	return &nativeDevice{cpuDevice: &cpuDevice{timed: opts.Timed}}, "", nil
}

func (d *nativeDevice) backend() string            { return Native }
func (d *nativeDevice) evidence() (string, string) { return native.Identity() }
func (d *nativeDevice) subgroupSize() int          { return native.VL }

func (d *nativeDevice) info() vulkan.DeviceInfo {
	name, driver := native.Identity()
	return vulkan.DeviceInfo{
		Name: name, Type: "CPU", DriverName: "onesource backends/native", DriverInfo: driver,
		SubgroupSize: native.VL, MinSubgroupSize: native.VL, MaxSubgroupSize: native.VL,
		MaxStorageBufferRange: math.MaxInt32, MinStorageBufferOffsetAlignment: 1, Timestamps: true, TimestampPeriod: 1,
	}
}

func (d *nativeDevice) compile(k *ir.Kernel) (program, error) {
	p, err := native.Compile(k)
	if err != nil {
		return nil, fmt.Errorf("compiling the twin to native CPU code: %w", err)
	}
	np := &nativeProgram{p: p}
	for _, b := range p.Kernel().Buffers {
		np.names = append(np.names, b.Name)
	}
	for _, q := range p.Kernel().Params {
		np.pnames = append(np.pnames, q.Name)
	}
	return np, nil
}

func (d *nativeDevice) incumbent(ent *incumbent.Entry, _ map[string]float64) (*incumbent.Launch, program, error) {
	return nil, nil, fmt.Errorf("incumbent %s is Vulkan SPIR-V: native CPU code runs only the DSL's kernels", ent.Name)
}

func (d *nativeDevice) dispatch(p program, views []view, push []byte, groups [3]uint32) error {
	np, ok := p.(*nativeProgram)
	if !ok {
		return fmt.Errorf("engine: a %T dispatched on native CPU code", p)
	}
	name := np.p.Kernel().Name
	if len(views) != len(np.names) {
		return fmt.Errorf("native: kernel %q has %d buffer bindings, got %d buffers", name, len(np.names), len(views))
	}
	if len(push) != 4*len(np.pnames) {
		return fmt.Errorf("native: kernel %q takes %d parameters, got %d bytes", name, len(np.pnames), len(push))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	x := nativeDispatch{p: np, views: slices.Clone(views), params: make([]uint32, len(np.pnames)), groups: groups}
	for i, v := range views {
		if _, err := v.bytesLocked(); err != nil {
			return fmt.Errorf("native: kernel %q: buffer %d (%s): %w", name, i, np.names[i], err)
		}
	}
	for i := range x.params {
		x.params[i] = binary.LittleEndian.Uint32(push[4*i:])
	}
	d.ops = append(d.ops, x)
	return nil
}

func (d *nativeDevice) queued() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ops)
}

// flush runs the queued dispatches in order, each over its views' current bytes and spread over
// the machine's cores. The queue is empty afterwards, whether or not it succeeded.
func (d *nativeDevice) flush(ctx context.Context) ([]time.Duration, error) {
	d.mu.Lock()
	ops := d.ops
	d.ops = nil
	if err := d.usable(); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	if len(ops) == 0 {
		d.mu.Unlock()
		return nil, nil
	}
	bufs := make([][][]byte, len(ops))
	for i, x := range ops {
		bufs[i] = make([][]byte, len(x.views))
		for j, v := range x.views {
			b, err := v.bytesLocked()
			if err != nil {
				d.mu.Unlock()
				return nil, fmt.Errorf("native: dispatch %d (%s): buffer %d (%s): %w", i, x.p.p.Kernel().Name, j, x.p.names[j], err)
			}
			bufs[i][j] = b
		}
	}
	d.st.Submits++
	d.st.Dispatches += len(ops)
	d.mu.Unlock()

	var times []time.Duration
	if d.timed {
		times = make([]time.Duration, len(ops))
	}
	for i, x := range ops {
		start := time.Now()
		if err := x.p.p.RunContext(ctx, bufs[i], x.params, x.groups); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("dispatch %d: %w", i, err)
		}
		if times != nil {
			times[i] = time.Since(start)
		}
	}
	return times, nil
}

func (d *nativeDevice) close() error {
	d.mu.Lock()
	d.ops = nil
	d.mu.Unlock()
	return d.cpuDevice.close()
}

// Fallback says why the engine serves on another backend than Options.Backend asked for (native
// CPU code on a machine without a C compiler serves on the Go executor), "" when it serves on
// the one asked for.
func (e *Engine) Fallback() string { return e.fallback }

// DefaultBackend is the backend a program serves on when its user names none: Vulkan where the
// machine has a Vulkan GPU, else native CPU code where the C toolchain is there, else the Go
// executor; why says what decided it.
func DefaultBackend() (backend, why string) {
	var vkWhy string
	if err := vulkan.Available(); err != nil {
		vkWhy = "no Vulkan driver"
	} else if ds, err := vulkan.Devices(); err != nil {
		vkWhy = "no Vulkan device (" + err.Error() + ")"
	} else {
		for _, d := range ds {
			if d.Type != "CPU" {
				return Vulkan, fmt.Sprintf("a Vulkan GPU: %s (%s)", d.Name, d.Type)
			}
		}
		vkWhy = "no Vulkan GPU (only a CPU implementation)"
	}
	if err := native.Available(); err != nil {
		return CPU, vkWhy + ", and native CPU code is unavailable (" + err.Error() + "): the Go executor"
	}
	c, _ := native.Compiler()
	return Native, fmt.Sprintf("%s: native CPU code for %s, built by %s", vkWhy, runtime.GOARCH, c)
}
