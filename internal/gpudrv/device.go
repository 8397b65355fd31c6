package gpudrv

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Stats counts what a device did since it was opened: what a program can check to see that its
// work stays on the device and that a Stream synchronizes once.
type Stats struct {
	Submits    int // batches of launches enqueued and waited for: one per Launch, Bench and non-empty Stream.Submit
	Syncs      int // host waits on the device's stream or an event (a Bench makes two)
	Launches   int // kernel launches enqueued (a Bench's warm-up and timed ones included)
	HostWrites int // Buffer.Write calls that copied
	HostReads  int // Buffer.Read calls that copied
}

// Device is an open device: one driver stream that every launch goes to, two events for Bench,
// and the buffers and kernels made on it. Its methods are safe for concurrent use; work is
// submitted one call at a time.
type Device struct {
	mu      sync.Mutex
	drv     Driver
	cfg     Config
	stream  uintptr
	events  [2]uintptr // Bench's start and end
	timing  []uintptr  // a timed Stream's events, made on first use and kept
	pending bool       // launches were enqueued and not waited for (after a failed submission)
	stats   Stats

	buffers map[*Buffer]struct{}
	kernels map[*Kernel]struct{}
	closed  bool
	broken  error // a sticky error left the device's context unusable
}

// Open makes a Device of drv: it makes the device current on a locked OS thread, creates the
// stream and the two events. On failure it frees what it made, calls drv.Release and returns the
// driver's error, naming the device: "cuda: Open: device 0 (NVIDIA H200): ...".
func Open(drv Driver, cfg Config) (*Device, error) {
	d := &Device{drv: drv, cfg: cfg, buffers: map[*Buffer]struct{}{}, kernels: map[*Kernel]struct{}{}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.open(); err != nil {
		d.destroy()
		return nil, fmt.Errorf("%s: Open: device %d (%s): %w", cfg.Backend, cfg.Index, cfg.Name, err)
	}
	return d, nil
}

func (d *Device) open() error {
	if err := d.drv.Current(); err != nil {
		return err
	}
	s, err := d.drv.StreamCreate()
	if err != nil {
		return err
	}
	d.stream = s
	for i := range d.events {
		if d.events[i], err = d.drv.EventCreate(); err != nil {
			return err
		}
	}
	return nil
}

// destroy frees whatever exists and releases the driver; the device must be current on the
// locked thread (or never made). Errors are ignored: it runs on failure and at Close, when
// nothing better can be done.
func (d *Device) destroy() {
	drv := d.drv
	for b := range d.buffers {
		if b.ptr != 0 {
			drv.Free(b.ptr)
			b.ptr = 0
		}
		b.released = true
	}
	clear(d.buffers)
	for k := range d.kernels {
		if k.module != 0 {
			drv.UnloadModule(k.module)
			k.module, k.fn = 0, 0
		}
		k.released = true
	}
	clear(d.kernels)
	for i, e := range d.events {
		if e != 0 {
			drv.EventDestroy(e)
			d.events[i] = 0
		}
	}
	for _, e := range d.timing {
		drv.EventDestroy(e)
	}
	d.timing = nil
	if d.stream != 0 {
		drv.StreamDestroy(d.stream)
		d.stream = 0
	}
	drv.Release()
}

// Identity names the device and its driver as registry evidence and the tuning cache key them
// (package engine and package prebuilt both use it): Config.Name and Config.Driver.
func (d *Device) Identity() (device, driver string) { return d.cfg.Name, d.cfg.Driver }

// Emulated reports whether the device is an emulated one (level H, not X).
func (d *Device) Emulated() bool { return d.cfg.Emulated }

// Backend is the backend the device belongs to ("cuda", "hip").
func (d *Device) Backend() string { return d.cfg.Backend }

// Stats returns the device's counters.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// errorf formats an error of this device's backend: "cuda: <op>: ...".
func (d *Device) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", d.cfg.Backend, fmt.Sprintf(format, args...))
}

// wrap prefixes a driver error with the backend and op, recording it when it is sticky.
func (d *Device) wrap(op string, err error) error {
	return fmt.Errorf("%s: %s: %w", d.cfg.Backend, op, d.fail(err))
}

// usableLocked fails on a closed or broken device. d.mu is held.
func (d *Device) usableLocked(op string) error {
	switch {
	case d.closed:
		return d.errorf("%s: device closed", op)
	case d.broken != nil:
		return fmt.Errorf("%s: %s: device %d is unusable after an earlier error: %w", d.cfg.Backend, op, d.cfg.Index, d.broken)
	}
	return nil
}

// enter locks the device and the calling goroutine to its OS thread and makes the device current
// there; leave undoes both. It fails on a closed or broken device.
func (d *Device) enter(op string) (leave func(), err error) {
	d.mu.Lock()
	runtime.LockOSThread()
	leave = func() {
		runtime.UnlockOSThread()
		d.mu.Unlock()
	}
	if err := d.usableLocked(op); err != nil {
		leave()
		return nil, err
	}
	if err := d.drv.Current(); err != nil {
		leave()
		return nil, fmt.Errorf("%s: %s: %w", d.cfg.Backend, op, err)
	}
	return leave, nil
}

// fail records a sticky error (after which the context is unusable) and returns err.
func (d *Device) fail(err error) error {
	var re *ResultError
	if errors.As(err, &re) && d.cfg.Sticky[re.Code] {
		d.broken = err
	}
	return err
}

// sync waits for the device's stream. d.mu is held and the device is current.
func (d *Device) sync() error {
	d.stats.Syncs++
	if err := d.drv.StreamSync(d.stream); err != nil {
		return err
	}
	d.pending = false
	return nil
}

// Close waits for the device's work to finish and frees everything made on it: buffers,
// kernels, the stream and the events, and releases the driver (Driver.Release). Closing twice
// is a no-op; the error is the wait's.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var err error
	if e := d.drv.Current(); e != nil {
		err = e
	} else if d.broken == nil && d.stream != 0 {
		err = d.drv.StreamSync(d.stream)
	}
	d.destroy()
	if err != nil {
		return fmt.Errorf("%s: Close: %w", d.cfg.Backend, err)
	}
	return nil
}

// releaseLocked runs free with the device current, after the launches still pending (after a
// failed submission) finished; d.mu is held and the device is open. Errors are ignored: a
// release cannot fail.
func (d *Device) releaseLocked(free func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.drv.Current() != nil {
		return
	}
	if d.pending && d.broken == nil {
		d.sync()
	}
	free()
}
