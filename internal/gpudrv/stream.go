package gpudrv

import (
	"fmt"
	"time"
)

// MaxTimedLaunches is the most launches a timed Stream holds: it records an event before the
// first launch and one after each.
const MaxTimedLaunches = 4096

// Stream queues launches that are submitted together: Launch checks a launch and queues it;
// Submit enqueues every queued launch on the device's one driver stream, back to back and in
// order, and waits once. Launches on one stream run one after another, so a later launch sees
// everything an earlier one wrote and no barrier is needed. A timed stream records an event
// before the first launch and one after each, so Times says how long each took on the device.
//
// A Stream belongs to one goroutine; the device serializes its submissions with every other
// call.
type Stream struct {
	d     *Device
	timed bool
	ops   []*launchOp
	times []time.Duration
}

// NewStream returns an empty stream of the device; a timed one measures each launch with the
// driver's events.
func (d *Device) NewStream(timed bool) (*Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked("NewStream"); err != nil {
		return nil, err
	}
	return &Stream{d: d, timed: timed}, nil
}

// Launch queues a launch of k over grid blocks of block threads with views (views[i] is
// parameter i: the buffer's address plus the view's offset) and params (32-bit scalars, after
// the pointers), checked as Device.Launch checks its arguments, and each view against its
// buffer. Nothing runs until Submit.
func (s *Stream) Launch(k *Kernel, views []View, params []uint32, grid, block [3]uint32) error {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked("Stream.Launch"); err != nil {
		return err
	}
	if s.timed && len(s.ops) >= MaxTimedLaunches {
		return d.errorf("Stream.Launch: a timed stream holds at most %d launches", MaxTimedLaunches)
	}
	x, err := d.check("Stream.Launch", k, views, params, grid, block)
	if err != nil {
		return err
	}
	s.ops = append(s.ops, x)
	return nil
}

// Len is the number of queued launches.
func (s *Stream) Len() int { return len(s.ops) }

// Reset drops the queued launches.
func (s *Stream) Reset() { s.ops = s.ops[:0] }

// Times returns the device time of each launch of the last Submit of a timed stream (nil for an
// untimed stream or after a failed Submit).
func (s *Stream) Times() []time.Duration { return s.times }

// Submit enqueues the queued launches on the device's stream and waits for them, once; the
// stream is empty afterwards, whether or not it succeeded. A launch whose kernel or buffer was
// released after it was queued fails the Submit before anything is enqueued. Submitting an
// empty stream does nothing.
func (s *Stream) Submit() error {
	ops := s.ops
	s.ops = nil
	s.times = nil
	if len(ops) == 0 {
		return nil
	}
	d := s.d
	leave, err := d.enter("Stream.Submit")
	if err != nil {
		return err
	}
	defer leave()
	be := d.cfg.Backend
	for i, x := range ops {
		if x.k.released {
			return fmt.Errorf("%s: Stream.Submit: launch %d: kernel %q was released", be, i, x.k.name)
		}
		for j, v := range x.views {
			if v.Buffer.released {
				return fmt.Errorf("%s: Stream.Submit: launch %d (kernel %q): buffer %d was released", be, i, x.k.name, j)
			}
		}
	}
	var events []uintptr
	if s.timed {
		if events, err = d.timingEvents(len(ops) + 1); err != nil {
			return d.wrap("Stream.Submit", err)
		}
		if err := d.drv.EventRecord(events[0], d.stream); err != nil {
			return d.wrap("Stream.Submit", err)
		}
	}
	d.stats.Submits++
	for i, x := range ops {
		a := x.pack()
		err := d.enqueue(x, a)
		a.unpin()
		if err != nil {
			return d.wrap(fmt.Sprintf("Stream.Submit: launch %d (kernel %q)", i, x.k.name), err)
		}
		if s.timed {
			if err := d.drv.EventRecord(events[i+1], d.stream); err != nil {
				return d.wrap("Stream.Submit", err)
			}
		}
	}
	if err := d.sync(); err != nil {
		return d.wrap(fmt.Sprintf("Stream.Submit of %d launches", len(ops)), err)
	}
	if s.timed {
		times := make([]time.Duration, len(ops))
		for i := range ops {
			ms, err := d.drv.EventElapsed(events[i], events[i+1])
			if err != nil {
				return d.wrap("Stream.Submit", err)
			}
			times[i] = milliseconds(ms)
		}
		s.times = times
	}
	return nil
}

// timingEvents returns n events for a timed stream, making the ones missing; they are kept for
// later streams and destroyed at Close. d.mu is held and the device is current.
func (d *Device) timingEvents(n int) ([]uintptr, error) {
	for len(d.timing) < n {
		e, err := d.drv.EventCreate()
		if err != nil {
			return nil, err
		}
		d.timing = append(d.timing, e)
	}
	return d.timing[:n], nil
}
