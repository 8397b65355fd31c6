package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
	"github.com/onesource-go/onesource/tuning"
)

// Backend is the backend the engine serves ("vulkan").
const Backend = "vulkan"

// Options configure Open.
type Options struct {
	// DeviceIndex selects the Vulkan device (vulkan.Devices).
	DeviceIndex int
	// Registry decides who serves each cell; nil serves every cell by its twin.
	Registry *registry.Registry
	// Manifest names the hand-written incumbents; nil means none.
	Manifest *incumbent.Manifest
	// Tuning holds the tuned schedules; nil runs every twin at its default schedule.
	Tuning *tuning.Cache
	// Timed measures every dispatch on the device (Call.Time); it serializes the dispatches.
	Timed bool
	// MaxBinding is the most bytes one buffer holds (0: the device's MaxStorageBufferRange,
	// what one binding can address); larger matrices are split by rows. Tests lower it.
	MaxBinding int
}

// Engine is an open device serving op calls. Its methods are safe for concurrent use; calls are
// queued in the order they are made.
type Engine struct {
	dev  *vulkan.Device
	caps int // subgroup size the lowering assumes (0: none)
	opts Options
	reg  atomic.Pointer[registry.Registry]
	// device and driver name this machine as registry evidence does.
	device, driver string

	mu      sync.Mutex
	stream  *vulkan.Stream
	pending []int // per queued dispatch, in order: its index in trace (-1: not traced)
	twins   map[twinKey]*twin
	hands   map[string]*hand // by incumbent name and shape
	tables  map[oracle.Type][]*vulkan.Buffer
	dummy   *vulkan.Buffer
	trace   []Call
	tracing bool
	label   string
	closed  bool
}

// Call is one served op call, as the trace records it.
type Call struct {
	Cell    string         // "matvec/q4_0/vulkan"
	Impl    registry.Impl  // twin or hand
	State   registry.State // the cell's registry state ("" without a registry entry)
	Why     string         // why this implementation serves
	Kernel  string         // the twin's schedule ("lanes=64,blocked") or the incumbent's name
	Tuned   bool           // the twin's schedule came from the tuning cache
	Bytes   int            // the op's minimal traffic (bytes read and written)
	Groups  [3]uint32
	Time    time.Duration // device time, with Options.Timed, once flushed
	Label   string        // the caller's label (SetLabel), for profiles
	Flushed bool          // the call ran (its Time is known with Options.Timed)
}

// Open opens the Vulkan device and returns an engine on it.
func Open(opts Options) (*Engine, error) {
	if err := vulkan.Available(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	dev, err := vulkan.Open(vulkan.Options{DeviceIndex: opts.DeviceIndex})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	st, err := dev.NewStream(opts.Timed)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{
		dev: dev, opts: opts, stream: st, caps: dev.Caps().SubgroupSize,
		twins: map[twinKey]*twin{}, hands: map[string]*hand{}, tables: map[oracle.Type][]*vulkan.Buffer{},
		tracing: true,
	}
	e.device, e.driver = dev.Info().Evidence()
	e.reg.Store(opts.Registry)
	return e, nil
}

// Close releases the device and everything on it; tensors become unusable.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.dev.Close()
}

// maxBinding is the most bytes one tensor buffer holds, a multiple of 256.
func (e *Engine) maxBinding() int {
	limit := int(e.dev.Info().MaxStorageBufferRange)
	if e.opts.MaxBinding > 0 {
		limit = min(limit, e.opts.MaxBinding)
	}
	return max(256, limit&^255)
}

// Device describes the device the engine runs on.
func (e *Engine) Device() vulkan.DeviceInfo { return e.dev.Info() }

// Stats returns the device's counters (submissions, dispatches, barriers, host reads and
// writes).
func (e *Engine) Stats() vulkan.Stats { return e.dev.Stats() }

// Registry returns the registry calls are resolved against now.
func (e *Engine) Registry() *registry.Registry { return e.reg.Load() }

// SetRegistry replaces the registry: the next call resolves its cell against r. Safe while other
// goroutines make calls.
func (e *Engine) SetRegistry(r *registry.Registry) { e.reg.Store(r) }

// ReloadRegistry reads the current registry's file again (after `onesource gate` flipped a
// cell) and swaps it in. On error the current registry stays.
func (e *Engine) ReloadRegistry() error {
	cur := e.reg.Load()
	if cur == nil || cur.Path() == "" {
		return errors.New("engine: ReloadRegistry: the registry was not read from a file")
	}
	r, err := registry.Load(cur.Path())
	if err != nil {
		return fmt.Errorf("engine: ReloadRegistry: %w", err)
	}
	e.reg.Store(r)
	return nil
}

// SetTracing turns the trace on (the default) or off.
func (e *Engine) SetTracing(on bool) {
	e.mu.Lock()
	e.tracing = on
	e.mu.Unlock()
}

// Trace returns the calls recorded since the last ResetTrace.
func (e *Engine) Trace() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.trace...)
}

// ResetTrace empties the trace.
func (e *Engine) ResetTrace() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.trace = nil
	for i := range e.pending {
		e.pending[i] = -1 // still queued, but no longer in the trace
	}
}

// Flush runs the queued calls: one submission, waited for.
func (e *Engine) Flush() error { return e.FlushContext(context.Background()) }

// FlushContext is Flush with a context that can abandon the wait: it returns ctx's error when
// ctx is done first; the work goes on, the results of the queued calls are not valid, and the
// engine's next submission waits for it.
func (e *Engine) FlushContext(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.flushCtx(ctx)
}

func (e *Engine) flushLocked() error { return e.flushCtx(context.Background()) }

func (e *Engine) flushCtx(ctx context.Context) error {
	if e.closed {
		return errors.New("engine: closed")
	}
	pending := e.pending
	e.pending = nil
	if e.stream.Len() == 0 {
		return nil
	}
	if err := e.stream.SubmitContext(ctx); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	times := e.stream.Times()
	for i, ti := range pending {
		if ti >= 0 && ti < len(e.trace) {
			e.trace[ti].Flushed = true
			if i < len(times) {
				e.trace[ti].Time = times[i]
			}
		}
	}
	return nil
}

// SetLabel labels the calls made from now on (Call.Label), for a profile: "layer 3 ffn".
func (e *Engine) SetLabel(label string) {
	e.mu.Lock()
	e.label = label
	e.mu.Unlock()
}

// CopyBandwidth measures the device's copy bandwidth in GB/s, the roofline a profile compares
// ops with: bytes read plus written by vkCmdCopyBuffer of 16 MiB (as onesource bench measures
// it), the median of five runs of ten copies.
func (e *Engine) CopyBandwidth() (float64, error) {
	size := min(16<<20, int(e.dev.Info().MaxStorageBufferRange)) &^ 3
	src, err := e.dev.NewBuffer(size)
	if err != nil {
		return 0, fmt.Errorf("engine: CopyBandwidth: %w", err)
	}
	defer src.Release()
	dst, err := e.dev.NewBuffer(size)
	if err != nil {
		return 0, fmt.Errorf("engine: CopyBandwidth: %w", err)
	}
	defer dst.Release()
	var ns []float64
	for i := 0; i < 5; i++ {
		r, err := e.dev.BenchCopy(src, dst, size, 2, 10)
		if err != nil {
			return 0, fmt.Errorf("engine: CopyBandwidth: %w", err)
		}
		ns = append(ns, float64(r.PerDispatch.Nanoseconds()))
	}
	slices.Sort(ns)
	return 2 * float64(size) / ns[len(ns)/2], nil
}

// Timed reports whether the engine measures each dispatch (Options.Timed).
func (e *Engine) Timed() bool { return e.opts.Timed }
