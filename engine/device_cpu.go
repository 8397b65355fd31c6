package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/ir"
)

// cpuDevice serves the engine on the CPU executor (package backends/cpu): buffers are byte
// slices, a view is a sub-slice, and flush runs the queued programs one after another, each
// spread over the machine's cores. It needs no driver.
type cpuDevice struct {
	timed bool

	mu     sync.Mutex // guards everything below and every buffer's data
	st     Stats
	ops    []cpuDispatch
	closed bool
}

type cpuProgram struct {
	p      *cpu.Program
	names  []string // buffer bindings of the lowered kernel
	pnames []string // its parameters
}

func (p *cpuProgram) bindings() []string { return p.names }
func (p *cpuProgram) params() []string   { return p.pnames }

type cpuBuffer struct {
	d        *cpuDevice
	data     []byte
	released bool
}

type cpuDispatch struct {
	p      *cpuProgram
	views  []view
	params []uint32
	groups [3]uint32
}

// cpuDeviceName names the executor as evidence does (cpu.Identity, which prebuilt uses too).
func cpuDeviceName() string { d, _ := cpu.Identity(); return d }

func openCPU(opts Options) (device, error) { return &cpuDevice{timed: opts.Timed}, nil }

func (d *cpuDevice) backend() string            { return CPU }
func (d *cpuDevice) evidence() (string, string) { return cpu.Identity() }
func (d *cpuDevice) subgroupSize() int          { return cpu.SubgroupSize }
func (d *cpuDevice) maxBinding() int            { return math.MaxInt32 }
func (d *cpuDevice) incumbents() bool           { return false }

// info describes the executor in the fields that apply to it.
func (d *cpuDevice) info() vulkan.DeviceInfo {
	return vulkan.DeviceInfo{
		Name: cpuDeviceName(), Type: "CPU", DriverName: "onesource backends/cpu", DriverInfo: runtime.Version(),
		SubgroupSize: cpu.SubgroupSize, MinSubgroupSize: cpu.SubgroupSize, MaxSubgroupSize: cpu.SubgroupSize,
		MaxStorageBufferRange: math.MaxInt32, MinStorageBufferOffsetAlignment: 1, Timestamps: true, TimestampPeriod: 1,
	}
}

func (d *cpuDevice) usable() error {
	if d.closed {
		return errors.New("cpu: the device was closed")
	}
	return nil
}

func (d *cpuDevice) newBuffer(size int) (buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return nil, err
	}
	if size <= 0 || size > d.maxBinding() {
		return nil, fmt.Errorf("cpu: NewBuffer: size %d: must be in [1, %d]", size, d.maxBinding())
	}
	return &cpuBuffer{d: d, data: make([]byte, size)}, nil
}

func (b *cpuBuffer) Size() int { return len(b.data) }

// bytesLocked returns [offset, offset+n) of the buffer. b.d.mu is held.
func (b *cpuBuffer) bytesLocked(op string, offset, n int) ([]byte, error) {
	if err := b.d.usable(); err != nil {
		return nil, err
	}
	if b.released {
		return nil, fmt.Errorf("cpu: Buffer.%s: buffer released", op)
	}
	if offset < 0 || n < 0 || offset > len(b.data) || n > len(b.data)-offset {
		return nil, fmt.Errorf("cpu: Buffer.%s: range [%d, %d+%d) outside the buffer's %d bytes", op, offset, offset, n, len(b.data))
	}
	return b.data[offset : offset+n], nil
}

func (b *cpuBuffer) Write(offset int, data []byte) error {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	dst, err := b.bytesLocked("Write", offset, len(data))
	if err != nil {
		return err
	}
	b.d.st.HostWrites++
	copy(dst, data)
	return nil
}

func (b *cpuBuffer) Read(offset int, dst []byte) error {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	src, err := b.bytesLocked("Read", offset, len(dst))
	if err != nil {
		return err
	}
	b.d.st.HostReads++
	copy(dst, src)
	return nil
}

// Release drops the buffer's bytes (a dispatch running now keeps what it holds).
func (b *cpuBuffer) Release() {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if !b.released {
		b.released, b.data = true, nil
	}
}

func (d *cpuDevice) compile(k *ir.Kernel) (program, error) {
	p, err := cpu.Compile(k)
	if err != nil {
		return nil, fmt.Errorf("compiling the twin for the cpu executor: %w", err)
	}
	cp := &cpuProgram{p: p}
	for _, b := range p.Kernel().Buffers {
		cp.names = append(cp.names, b.Name)
	}
	for _, q := range p.Kernel().Params {
		cp.pnames = append(cp.pnames, q.Name)
	}
	return cp, nil
}

func (d *cpuDevice) incumbent(ent *incumbent.Entry, _ map[string]float64) (*incumbent.Launch, program, error) {
	return nil, nil, fmt.Errorf("incumbent %s is Vulkan SPIR-V: the cpu executor runs only the DSL's kernels", ent.Name)
}

func (d *cpuDevice) dispatch(p program, views []view, push []byte, groups [3]uint32) error {
	cp, ok := p.(*cpuProgram)
	if !ok {
		return fmt.Errorf("engine: a %T dispatched on the cpu executor", p)
	}
	name := cp.p.Kernel().Name
	if len(views) != len(cp.names) {
		return fmt.Errorf("cpu: kernel %q has %d buffer bindings, got %d buffers", name, len(cp.names), len(views))
	}
	if len(push) != 4*len(cp.pnames) {
		return fmt.Errorf("cpu: kernel %q takes %d parameters, got %d bytes", name, len(cp.pnames), len(push))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	x := cpuDispatch{p: cp, views: slices.Clone(views), params: make([]uint32, len(cp.pnames)), groups: groups}
	for i, v := range views {
		if _, err := v.bytesLocked(); err != nil {
			return fmt.Errorf("cpu: kernel %q: buffer %d (%s): %w", name, i, cp.names[i], err)
		}
	}
	for i := range x.params {
		x.params[i] = binary.LittleEndian.Uint32(push[4*i:])
	}
	d.ops = append(d.ops, x)
	return nil
}

// bytesLocked is the view's sub-slice of its buffer. The device's mu is held.
func (v view) bytesLocked() ([]byte, error) {
	b, ok := v.buf.(*cpuBuffer)
	if !ok || b == nil {
		return nil, fmt.Errorf("a %T bound on the cpu executor", v.buf)
	}
	size := v.size
	if size == 0 && v.off <= len(b.data) {
		size = len(b.data) - v.off
	}
	return b.bytesLocked("bind", v.off, size)
}

func (d *cpuDevice) queued() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ops)
}

// flush runs the queued dispatches in order, each over its views' current bytes. The queue is
// empty afterwards, whether or not it succeeded.
func (d *cpuDevice) flush(ctx context.Context) ([]time.Duration, error) {
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
	// Resolve every binding first: a buffer released since its dispatch was queued fails the
	// submission as on Vulkan, before anything runs.
	bufs := make([][][]byte, len(ops))
	for i, x := range ops {
		bufs[i] = make([][]byte, len(x.views))
		for j, v := range x.views {
			b, err := v.bytesLocked()
			if err != nil {
				d.mu.Unlock()
				return nil, fmt.Errorf("cpu: dispatch %d (%s): buffer %d (%s): %w", i, x.p.p.Kernel().Name, j, x.p.names[j], err)
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

func (d *cpuDevice) stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

// copyBandwidth is bytes read plus written by a copy of 16 MiB in memory, the median of five
// runs of ten copies.
func (d *cpuDevice) copyBandwidth() (float64, error) {
	const size = 16 << 20
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	var ns []float64
	for i := 0; i < 5; i++ {
		start := time.Now()
		for j := 0; j < 10; j++ {
			copy(dst, src)
		}
		ns = append(ns, float64(time.Since(start).Nanoseconds())/10)
	}
	slices.Sort(ns)
	return 2 * float64(size) / max(ns[len(ns)/2], 1), nil
}

func (d *cpuDevice) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed, d.ops = true, nil
	return nil
}
