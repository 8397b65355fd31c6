package vulkan

import (
	"context"
	"fmt"
	"math"
	"time"
	"unsafe"
)

// queryCount is the size of a device's timestamp pool: a timestamp before the first dispatch of
// a timed Stream and one after each of at most queryCount-1 dispatches (Bench uses the first
// two).
const queryCount = 4097

// View is a byte range of a Buffer, bound to one binding of a dispatch: the kernel sees the
// range as the whole buffer. Size 0 means to the end of the buffer. The offset must be a multiple
// of the device's MinStorageBufferOffsetAlignment.
type View struct {
	Buffer       *Buffer
	Offset, Size int
}

// Whole is a view of all of b.
func (b *Buffer) Whole() View { return View{Buffer: b} }

// Range is a view of size bytes of b from offset (checked when it is dispatched).
func (b *Buffer) Range(offset, size int) View { return View{Buffer: b, Offset: offset, Size: size} }

// Stats counts what a device did since it was opened: what a program can check to see that its
// work stays on the device.
type Stats struct {
	Submits    int // queue submissions (each waited for)
	Dispatches int // compute dispatches recorded (a Bench's timed and warm-up ones included)
	Barriers   int // memory barriers a Stream recorded between its dispatches
	HostWrites int // Buffer.Write calls
	HostReads  int // Buffer.Read calls
	// PipelinesCreated counts the pipelines the driver was asked to create (Device.Pipeline
	// returns the ones it already has without asking). PipelineCacheHits counts those the
	// driver reported found in the pipeline cache (creation feedback, Vulkan 1.3; 0 where the
	// driver does not report it); Feedback says whether it reports it for every pipeline.
	PipelinesCreated  int
	PipelineCacheHits int
	Feedback          bool
	// PipelineCacheLoaded and PipelineCacheSaved are the bytes of pipeline cache data loaded
	// at Open and written by the last save (see Options.PipelineCacheDir).
	PipelineCacheLoaded int
	PipelineCacheSaved  int
}

// Stats returns the device's counters.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Stream records dispatches that are submitted together: Dispatch checks a request and queues
// it; Submit records every queued dispatch into one command buffer, in order, submits it once
// and waits once. Between two dispatches it puts a memory barrier where the later one reads or
// writes bytes an earlier one (since the last barrier) writes, or writes bytes it reads; a
// binding the kernel declares read-only (Binding.ReadOnly) counts as read, every other one as
// read and written. A timed stream puts a barrier between every two dispatches and a timestamp
// after each, so Times says how long each took on the device.
//
// A Stream belongs to one goroutine; the device serializes its submissions with every other
// call.
type Stream struct {
	d     *Device
	timed bool
	ops   []*dispatch
	times []time.Duration
}

// NewStream returns an empty stream; timed streams measure each dispatch (the device must
// support timestamps: DeviceInfo.Timestamps).
func (d *Device) NewStream(timed bool) (*Stream, error) {
	if timed && !d.info.Timestamps {
		return nil, fmt.Errorf("vulkan: NewStream: device %d (%s) has no timestamps on its compute queue", d.info.Index, d.info.Name)
	}
	return &Stream{d: d, timed: timed}, nil
}

// Dispatch queues a dispatch of p over groups workgroups with views bound (views[i] at binding
// i) and push as the push constants, checked as Device.Run checks its arguments.
func (s *Stream) Dispatch(p *Pipeline, views []View, push []byte, groups [3]uint32) error {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.timed && len(s.ops) >= queryCount-1 {
		return fmt.Errorf("vulkan: Stream.Dispatch: a timed stream holds at most %d dispatches", queryCount-1)
	}
	x, err := d.check(context.Background(), "Stream.Dispatch", p, views, push, groups)
	if err != nil {
		return err
	}
	s.ops = append(s.ops, x)
	return nil
}

// Len is the number of queued dispatches.
func (s *Stream) Len() int { return len(s.ops) }

// Reset drops the queued dispatches.
func (s *Stream) Reset() { s.ops = s.ops[:0] }

// Times returns the device time of each dispatch of the last Submit of a timed stream.
func (s *Stream) Times() []time.Duration { return s.times }

// Submit records the queued dispatches into one command buffer, submits it and waits for it;
// the stream is empty afterwards, whether or not it succeeded. Submitting an empty stream does
// nothing.
func (s *Stream) Submit() error { return s.SubmitContext(context.Background()) }

// SubmitContext is Submit, with a context that can abandon the wait (see Device.RunContext).
func (s *Stream) SubmitContext(ctx context.Context) error {
	ops := s.ops
	s.ops = nil
	s.times = nil
	if len(ops) == 0 {
		return nil
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked(ctx); err != nil {
		return err
	}
	trimmed := map[*Pipeline]bool{}
	for i, x := range ops {
		if x.p.pipeline == 0 {
			return fmt.Errorf("vulkan: Stream.Submit: dispatch %d: pipeline %q was destroyed", i, x.p.module.Name)
		}
		for j, v := range x.views {
			if v.Buffer.released {
				return fmt.Errorf("vulkan: Stream.Submit: dispatch %d (%s): buffer %d (%s) was released", i, x.p.module.Name, j, x.p.module.Bindings[j].Name)
			}
		}
		if !trimmed[x.p] {
			trimmed[x.p] = true
			if err := x.p.trim(); err != nil {
				return fmt.Errorf("vulkan: Stream.Submit: %w", err)
			}
		}
	}
	for _, x := range ops {
		if err := d.bind("Stream.Submit", x); err != nil {
			return err
		}
	}
	between := &vkMemoryBarrier{
		SType:         vkStructureTypeMemoryBarrier,
		SrcAccessMask: vkAccessShaderWriteBit,
		DstAccessMask: vkAccessShaderReadBit | vkAccessShaderWriteBit,
	}
	var h hazards
	barriers := 0
	err := d.recordCmd(false, vkPipelineStageComputeShaderBit, vkAccessShaderWriteBit, func(cmd vkCommandBuffer) {
		if s.timed {
			d.fn.cmdResetQueryPool(cmd, d.queryPool, 0, uint32(len(ops)+1))
			d.fn.cmdWriteTimestamp(cmd, vkPipelineStageTopOfPipeBit, d.queryPool, 0)
		}
		var bound *Pipeline
		for i, x := range ops {
			if i > 0 && (s.timed || h.conflicts(x)) {
				d.fn.cmdPipelineBarrier(cmd, vkPipelineStageComputeShaderBit, vkPipelineStageComputeShaderBit, 0, 1, unsafe.Pointer(between), 0, nil, 0, nil)
				barriers++
				h = hazards{}
			}
			h.add(x)
			p := x.p
			if p != bound {
				d.fn.cmdBindPipeline(cmd, vkPipelineBindPointCompute, p.pipeline)
				bound = p
			}
			if x.set != 0 {
				d.fn.cmdBindDescriptorSets(cmd, vkPipelineBindPointCompute, p.layout, 0, 1, unsafe.Pointer(&x.set), 0, nil)
			}
			if len(x.push) > 0 {
				d.fn.cmdPushConstants(cmd, p.layout, vkShaderStageComputeBit, 0, uint32(len(x.push)), unsafe.Pointer(&x.push[0]))
			}
			d.fn.cmdDispatch(cmd, x.groups[0], x.groups[1], x.groups[2])
			if s.timed {
				d.fn.cmdWriteTimestamp(cmd, vkPipelineStageBottomOfPipeBit, d.queryPool, uint32(i+1))
			}
		}
	})
	if err != nil {
		return err
	}
	d.stats.Dispatches += len(ops)
	d.stats.Barriers += barriers
	if err := d.submit(ctx); err != nil {
		return err
	}
	if s.timed {
		ts := make([]uint64, len(ops)+1)
		r := d.fn.getQueryPoolResults(d.handle, d.queryPool, 0, uint32(len(ts)), uintptr(8*len(ts)), unsafe.Pointer(&ts[0]), 8,
			vkQueryResult64Bit|vkQueryResultWaitBit)
		if err := d.fatal(check("vkGetQueryPoolResults", r)); err != nil {
			return err
		}
		s.times = make([]time.Duration, len(ops))
		for i := range ops {
			ticks := ts[i+1] - ts[i]
			if b := d.pd.tsBits; b < 64 {
				ticks &= 1<<b - 1
			}
			s.times[i] = time.Duration(math.Round(float64(ticks) * d.info.TimestampPeriod))
		}
	}
	return nil
}

// span is a byte range of one buffer.
type span struct {
	id       uint64
	from, to int
}

func (a span) overlaps(b span) bool { return a.id == b.id && a.from < b.to && b.from < a.to }

// hazards are the ranges read and written since the last barrier.
type hazards struct{ reads, writes []span }

func viewSpans(x *dispatch) (reads, writes []span) {
	for i, v := range x.views {
		sp := span{v.Buffer.id, v.Offset, v.Offset + v.Size}
		reads = append(reads, sp)
		if !x.p.module.Bindings[i].ReadOnly {
			writes = append(writes, sp)
		}
	}
	return reads, writes
}

// conflicts reports whether x must wait for the dispatches since the last barrier: it reads or
// writes what they write (read after write, write after write), or writes what they read.
func (h *hazards) conflicts(x *dispatch) bool {
	reads, writes := viewSpans(x)
	for _, r := range reads {
		for _, w := range h.writes {
			if r.overlaps(w) {
				return true
			}
		}
	}
	for _, w := range writes {
		for _, r := range h.reads {
			if w.overlaps(r) {
				return true
			}
		}
	}
	return false
}

func (h *hazards) add(x *dispatch) {
	reads, writes := viewSpans(x)
	h.reads = append(h.reads, reads...)
	h.writes = append(h.writes, writes...)
}
