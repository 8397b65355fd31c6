package vulkan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"
)

// fenceTimeout bounds every wait for the device. A wait that runs out leaves the device
// unusable (the work may still be running).
const fenceTimeout = 10 * time.Minute

// BenchResult is the outcome of a kernel-only benchmark (Bench) or of a copy benchmark
// (BenchCopy, where a dispatch is one copy).
type BenchResult struct {
	PerDispatch time.Duration // Total / n
	Total       time.Duration // the n timed dispatches, barriers between them included
	Timestamps  bool          // measured by device timestamps (else by the wall clock around submit and wait)
}

// dispatch is a validated Run, Bench or Stream request.
type dispatch struct {
	p      *Pipeline
	views  []View
	set    vkDescriptorSet
	push   []byte // padded to p.pushSize
	groups [3]uint32
}

// check validates a request against the pipeline's module and the device and returns it with
// its views resolved (Size 0 made explicit); its descriptor set is made later (bind). d.mu is
// held.
func (d *Device) check(ctx context.Context, op string, p *Pipeline, views []View, push []byte, groups [3]uint32) (*dispatch, error) {
	if err := d.usableLocked(ctx); err != nil {
		return nil, err
	}
	if p == nil || p.dev != d {
		return nil, fmt.Errorf("vulkan: %s: pipeline is nil or from another device", op)
	}
	if p.pipeline == 0 {
		return nil, fmt.Errorf("vulkan: %s: pipeline %q was destroyed", op, p.module.Name)
	}
	m := &p.module
	if len(views) != len(m.Bindings) {
		return nil, fmt.Errorf("vulkan: %s: kernel %q has %d buffer bindings, got %d buffers", op, m.Name, len(m.Bindings), len(views))
	}
	x := &dispatch{p: p, groups: groups, views: make([]View, len(views))}
	for i, v := range views {
		b := v.Buffer
		what := fmt.Sprintf("vulkan: %s: kernel %q: buffer %d (%s)", op, m.Name, i, m.Bindings[i].Name)
		switch {
		case b == nil:
			return nil, fmt.Errorf("%s is nil", what)
		case b.dev != d:
			return nil, fmt.Errorf("%s belongs to another device", what)
		case b.released:
			return nil, fmt.Errorf("%s was released", what)
		}
		if v.Size == 0 {
			v.Size = b.size - v.Offset
		}
		if v.Offset < 0 || v.Size <= 0 || v.Offset > b.size || v.Size > b.size-v.Offset {
			return nil, fmt.Errorf("%s: view [%d, %d+%d) outside the buffer's %d bytes", what, v.Offset, v.Offset, v.Size, b.size)
		}
		if a := d.info.MinStorageBufferOffsetAlignment; a > 1 && uint64(v.Offset)%a != 0 {
			return nil, fmt.Errorf("%s: view offset %d is not a multiple of the device's minStorageBufferOffsetAlignment %d", what, v.Offset, a)
		}
		x.views[i] = v
	}
	if uint32(len(push)) != m.PushConstantSize {
		return nil, fmt.Errorf("vulkan: %s: kernel %q takes %d bytes of push constants, got %d", op, m.Name, m.PushConstantSize, len(push))
	}
	for i, g := range groups {
		if g > d.info.MaxWorkgroupCount[i] {
			return nil, fmt.Errorf("vulkan: %s: kernel %q: workgroup count %v exceeds the device's maxComputeWorkGroupCount %v", op, m.Name, groups, d.info.MaxWorkgroupCount)
		}
	}
	if p.pushSize > 0 {
		x.push = make([]byte, p.pushSize)
		copy(x.push, push)
	}
	return x, nil
}

// bind gives x its descriptor set. d.mu is held, and every pipeline of the submission x goes in
// was trimmed before the first bind of that submission.
func (d *Device) bind(op string, x *dispatch) error {
	if len(x.views) == 0 {
		return nil
	}
	set, err := x.p.descriptorSet(x.views)
	if err != nil {
		return fmt.Errorf("vulkan: %s: %w", op, err)
	}
	x.set = set
	return nil
}

// prepare is check, trim and bind for a submission of one dispatch. d.mu is held.
func (d *Device) prepare(ctx context.Context, op string, p *Pipeline, bufs []*Buffer, push []byte, groups [3]uint32) (*dispatch, error) {
	views := make([]View, len(bufs))
	for i, b := range bufs {
		views[i] = View{Buffer: b}
	}
	x, err := d.check(ctx, op, p, views, push, groups)
	if err != nil {
		return nil, err
	}
	if err := p.trim(); err != nil {
		return nil, fmt.Errorf("vulkan: %s: %w", op, err)
	}
	return x, d.bind(op, x)
}

// record records count dispatches of x into d.cmd, with a compute-to-compute barrier between
// consecutive ones and a compute-to-host barrier at the end; with timed set, timestamps 0 and
// 1 bracket the dispatches.
func (d *Device) record(x *dispatch, count int, timed bool) error {
	p := x.p
	between := &vkMemoryBarrier{
		SType:         vkStructureTypeMemoryBarrier,
		SrcAccessMask: vkAccessShaderWriteBit,
		DstAccessMask: vkAccessShaderReadBit | vkAccessShaderWriteBit,
	}
	return d.recordCmd(timed, vkPipelineStageComputeShaderBit, vkAccessShaderWriteBit, func(cmd vkCommandBuffer) {
		d.fn.cmdBindPipeline(cmd, vkPipelineBindPointCompute, p.pipeline)
		if x.set != 0 {
			d.fn.cmdBindDescriptorSets(cmd, vkPipelineBindPointCompute, p.layout, 0, 1, unsafe.Pointer(&x.set), 0, nil)
		}
		if len(x.push) > 0 {
			d.fn.cmdPushConstants(cmd, p.layout, vkShaderStageComputeBit, 0, uint32(len(x.push)), unsafe.Pointer(&x.push[0]))
		}
		for i := 0; i < count; i++ {
			if i > 0 {
				d.fn.cmdPipelineBarrier(cmd, vkPipelineStageComputeShaderBit, vkPipelineStageComputeShaderBit, 0, 1, unsafe.Pointer(between), 0, nil, 0, nil)
			}
			d.fn.cmdDispatch(cmd, x.groups[0], x.groups[1], x.groups[2])
		}
	})
}

// recordCmd begins d.cmd, records body (bracketed by timestamps 0 and 1 when timed), then a
// barrier making the writes of stage (of kind access) visible to the host, and ends d.cmd.
func (d *Device) recordCmd(timed bool, stage vkPipelineStageFlags, access vkAccessFlags, body func(cmd vkCommandBuffer)) error {
	cmd := d.cmd
	bi := &vkCommandBufferBeginInfo{
		SType: vkStructureTypeCommandBufferBeginInfo,
		Flags: vkCommandBufferUsageOneTimeSubmitBit,
	}
	if err := check("vkBeginCommandBuffer", d.fn.beginCommandBuffer(cmd, unsafe.Pointer(bi))); err != nil {
		return err
	}
	if timed {
		d.fn.cmdResetQueryPool(cmd, d.queryPool, 0, 2)
		d.fn.cmdWriteTimestamp(cmd, vkPipelineStageTopOfPipeBit, d.queryPool, 0)
	}
	body(cmd)
	if timed {
		d.fn.cmdWriteTimestamp(cmd, vkPipelineStageBottomOfPipeBit, d.queryPool, 1)
	}
	toHost := &vkMemoryBarrier{
		SType:         vkStructureTypeMemoryBarrier,
		SrcAccessMask: access,
		DstAccessMask: vkAccessHostReadBit,
	}
	d.fn.cmdPipelineBarrier(cmd, stage, vkPipelineStageHostBit, 0, 1, unsafe.Pointer(toHost), 0, nil, 0, nil)
	return check("vkEndCommandBuffer", d.fn.endCommandBuffer(cmd))
}

// submit submits d.cmd and waits for it (see wait); ctx may abandon the wait. A lost device or
// a wait that runs past fenceTimeout leaves the device unusable.
func (d *Device) submit(ctx context.Context) error {
	if err := check("vkResetFences", d.fn.resetFences(d.handle, 1, unsafe.Pointer(&d.fence))); err != nil {
		return err
	}
	si := &vkSubmitInfo{
		SType:              vkStructureTypeSubmitInfo,
		CommandBufferCount: 1,
		PCommandBuffers:    unsafe.Pointer(&d.cmd),
	}
	if err := d.fatal(check("vkQueueSubmit", d.fn.queueSubmit(d.queue, 1, unsafe.Pointer(si), d.fence))); err != nil {
		return err
	}
	d.stats.Submits++
	d.inflight = true
	return d.wait(ctx)
}

// waitSlice is how long one vkWaitForFences of wait lasts before ctx is looked at again.
const waitSlice = 20 * time.Millisecond

// wait waits for the submitted work (d.fence). When ctx is done first, it returns ctx's error
// and leaves the work in flight: the device's next use (usableLocked) waits for it. A wait that
// runs past fenceTimeout in all leaves the device unusable (the work may still be running).
func (d *Device) wait(ctx context.Context) error {
	limit := time.Now().Add(fenceTimeout)
	for {
		r := d.fn.waitForFences(d.handle, 1, unsafe.Pointer(&d.fence), vkTrue, uint64(waitSlice.Nanoseconds()))
		if r != vkTimeout {
			d.inflight = false
			return d.fatal(check("vkWaitForFences", r))
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("vulkan: stopped waiting for the device's work: %w (the work goes on; the device's next use waits for it)", err)
		}
		if time.Now().After(limit) {
			d.broken = &ResultError{Call: "vkWaitForFences", Result: int32(r)}
			return fmt.Errorf("vulkan: work did not finish within %v: %w", fenceTimeout, d.broken)
		}
	}
}

// fatal marks the device unusable when err is VK_ERROR_DEVICE_LOST, and returns err.
func (d *Device) fatal(err error) error {
	var re *ResultError
	if errors.As(err, &re) && vkResult(re.Result) == vkErrorDeviceLost {
		d.broken = err
	}
	return err
}

// Run dispatches p once over groups workgroups with bufs bound (bufs[i] at binding i) and push
// as the push constants, and waits for it to finish. len(bufs) must equal the module's number
// of bindings and len(push) its PushConstantSize.
func (d *Device) Run(p *Pipeline, bufs []*Buffer, push []byte, groups [3]uint32) error {
	return d.RunContext(context.Background(), p, bufs, push, groups)
}

// RunContext is Run, with a context that can abandon the wait: when ctx is done before the work
// finishes, RunContext returns ctx's error at once; the work goes on, and the device's next use
// waits for it. The outputs are not valid then.
func (d *Device) RunContext(ctx context.Context, p *Pipeline, bufs []*Buffer, push []byte, groups [3]uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, err := d.prepare(ctx, "Run", p, bufs, push, groups)
	if err != nil {
		return err
	}
	if err := d.record(x, 1, false); err != nil {
		return err
	}
	d.stats.Dispatches++
	return d.submit(ctx)
}

// Bench is the kernel-only benchmark: it runs warmup dispatches (one submit), then records n
// dispatches back to back in one command buffer with a compute-to-compute memory barrier
// between consecutive ones, submits once and waits once. The time is taken by device
// timestamps written before and after the n dispatches where the queue supports them, else by
// the wall clock around the submit and the wait.
func (d *Device) Bench(p *Pipeline, bufs []*Buffer, push []byte, groups [3]uint32, warmup, n int) (BenchResult, error) {
	return d.BenchContext(context.Background(), p, bufs, push, groups, warmup, n)
}

// BenchContext is Bench, with a context that can abandon its waits (see RunContext): a gate
// bounds a benchmark by a deadline.
func (d *Device) BenchContext(ctx context.Context, p *Pipeline, bufs []*Buffer, push []byte, groups [3]uint32, warmup, n int) (BenchResult, error) {
	if n < 1 || warmup < 0 {
		return BenchResult{}, fmt.Errorf("vulkan: Bench: need n >= 1 and warmup >= 0, got n=%d warmup=%d", n, warmup)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x, err := d.prepare(ctx, "Bench", p, bufs, push, groups)
	if err != nil {
		return BenchResult{}, err
	}
	return d.bench(ctx, warmup, n, func(count int, timed bool) error {
		d.stats.Dispatches += count
		return d.record(x, count, timed)
	})
}

// BenchCopy measures the device's copy engine, the roofline the kernels are compared with: it
// runs warmup copies (one submit), then records n vkCmdCopyBuffer of size bytes from the
// start of src to the start of dst back to back in one command buffer, submits once and waits
// once, timed like Bench. Each copy reads size bytes and writes size bytes, so the bandwidth
// is 2*size/PerDispatch. Consecutive copies are separated by a transfer-to-transfer memory
// barrier: they all write the same bytes of dst (a write-after-write hazard), and the barrier
// also makes each copy a separate, serialized unit of work, as Bench's dispatches are, rather
// than letting the driver overlap or merge them. src and dst must be distinct buffers of this
// device of at least size bytes; dst holds a copy of src's first size bytes afterwards.
func (d *Device) BenchCopy(src, dst *Buffer, size int, warmup, n int) (BenchResult, error) {
	if n < 1 || warmup < 0 {
		return BenchResult{}, fmt.Errorf("vulkan: BenchCopy: need n >= 1 and warmup >= 0, got n=%d warmup=%d", n, warmup)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked(context.Background()); err != nil {
		return BenchResult{}, err
	}
	for _, b := range []struct {
		name string
		b    *Buffer
	}{{"src", src}, {"dst", dst}} {
		switch {
		case b.b == nil:
			return BenchResult{}, fmt.Errorf("vulkan: BenchCopy: %s is nil", b.name)
		case b.b.dev != d:
			return BenchResult{}, fmt.Errorf("vulkan: BenchCopy: %s belongs to another device", b.name)
		case b.b.released:
			return BenchResult{}, fmt.Errorf("vulkan: BenchCopy: %s was released", b.name)
		case size > b.b.size:
			return BenchResult{}, fmt.Errorf("vulkan: BenchCopy: size %d exceeds %s's size %d", size, b.name, b.b.size)
		}
	}
	if src == dst {
		return BenchResult{}, fmt.Errorf("vulkan: BenchCopy: src and dst are the same buffer")
	}
	if size < 1 {
		return BenchResult{}, fmt.Errorf("vulkan: BenchCopy: size %d: must be positive", size)
	}
	region := &vkBufferCopy{Size: vkDeviceSize(size)}
	between := &vkMemoryBarrier{
		SType:         vkStructureTypeMemoryBarrier,
		SrcAccessMask: vkAccessTransferWriteBit,
		DstAccessMask: vkAccessTransferReadBit | vkAccessTransferWriteBit,
	}
	rec := func(count int, timed bool) error {
		return d.recordCmd(timed, vkPipelineStageTransferBit, vkAccessTransferWriteBit, func(cmd vkCommandBuffer) {
			for i := 0; i < count; i++ {
				if i > 0 {
					d.fn.cmdPipelineBarrier(cmd, vkPipelineStageTransferBit, vkPipelineStageTransferBit, 0, 1, unsafe.Pointer(between), 0, nil, 0, nil)
				}
				d.fn.cmdCopyBuffer(cmd, src.handle, dst.handle, 1, unsafe.Pointer(region))
			}
		})
	}
	return d.bench(context.Background(), warmup, n, rec)
}

// bench is the common part of Bench and BenchCopy. d.mu is held. rec(count, timed) records
// count units of work into d.cmd (timestamps 0 and 1 around them when timed): bench records
// and submits warmup units when warmup > 0, then n units, timed by device timestamps where the
// queue supports them, else by the wall clock around the submit and the wait.
func (d *Device) bench(ctx context.Context, warmup, n int, rec func(count int, timed bool) error) (BenchResult, error) {
	if warmup > 0 {
		if err := rec(warmup, false); err != nil {
			return BenchResult{}, err
		}
		if err := d.submit(ctx); err != nil {
			return BenchResult{}, err
		}
	}
	timed := d.queryPool != 0
	if err := rec(n, timed); err != nil {
		return BenchResult{}, err
	}
	start := time.Now()
	if err := d.submit(ctx); err != nil {
		return BenchResult{}, err
	}
	res := BenchResult{Total: time.Since(start)}
	if timed {
		var ts [2]uint64
		r := d.fn.getQueryPoolResults(d.handle, d.queryPool, 0, 2, uintptr(unsafe.Sizeof(ts)), unsafe.Pointer(&ts[0]), 8,
			vkQueryResult64Bit|vkQueryResultWaitBit)
		if err := d.fatal(check("vkGetQueryPoolResults", r)); err != nil {
			return BenchResult{}, err
		}
		ticks := ts[1] - ts[0]
		if b := d.pd.tsBits; b < 64 {
			ticks &= 1<<b - 1
		}
		res.Total = time.Duration(math.Round(float64(ticks) * d.info.TimestampPeriod))
		res.Timestamps = true
	}
	res.PerDispatch = res.Total / time.Duration(n)
	return res, nil
}
