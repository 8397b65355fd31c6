package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
	"github.com/onesource-go/onesource/tuning"
)

// The backends the engine serves (Options.Backend), by their names in cell keys.
const (
	// Vulkan serves every cell on a Vulkan device (lavapipe on a CPU-only machine): the twins
	// compiled to SPIR-V, and hand-written incumbents.
	Vulkan = "vulkan"
	// CPU serves every cell on the CPU executor (package backends/cpu), which needs no driver:
	// the twins only (incumbents are Vulkan SPIR-V).
	CPU = "cpu"
	// CUDA serves every cell on an NVIDIA GPU (the driver API and NVRTC), or with
	// Options.Emulated on the emulated CUDA device: the twins emitted as CUDA text, and
	// hand-written .cu incumbents.
	CUDA = "cuda"
	// HIP serves every cell on an AMD GPU (the HIP runtime and HIPRTC), or with
	// Options.Emulated on the emulated HIP device: the twins emitted as HIP text, and
	// hand-written .hip incumbents.
	HIP = "hip"
)

// Options configure Open.
type Options struct {
	// Backend is the backend to serve on: Vulkan ("" too), CPU, Native, CUDA or HIP.
	Backend string
	// DeviceIndex selects the device (vulkan.Devices, cuda.Devices, hip.Devices).
	DeviceIndex int
	// Emulated serves CUDA or HIP on the emulated device instead of a GPU: the same text run by
	// host emulation on the CPU (package backends/cfamily/host, level H: slow, exact, never a
	// GPU's result). It needs a C++ compiler, not a driver.
	Emulated bool
	// Registry decides who serves each cell; nil serves every cell by its twin.
	Registry *registry.Registry
	// Trust, when set, is the trust file the registry must pass (registry.CheckTrust: every flip
	// rests on evidence a trusted key signed); nil: the one ONESOURCE_TRUST names, if any. Open
	// and ReloadRegistry refuse a registry that does not pass it.
	Trust *registry.Trust
	// Manifest names the hand-written incumbents; nil means none.
	Manifest *incumbent.Manifest
	// Tuning holds the tuned schedules; nil runs every twin at its default schedule.
	Tuning *tuning.Cache
	// Timed measures every dispatch on the device (Call.Time); it serializes the dispatches. On
	// the cpu backend, where dispatches run one after another anyway, it is each one's wall time.
	Timed bool
	// MaxBinding is the most bytes one buffer holds (0: the device's MaxStorageBufferRange,
	// what one binding can address; 2^31-1 on cpu, cuda and hip); larger matrices are split by
	// rows. Tests lower it.
	MaxBinding int
	// Checked runs every twin bounds-checked (see checked.go): a flush whose dispatches indexed
	// a buffer out of bounds fails, naming the kernel's Go line. The environment variable
	// ONESOURCE_CHECKED=1 (lower.CheckedEnv) sets it for every engine. It costs a report slot per
	// dispatch and one read per flush, and slower twins (the README has the measured figures).
	Checked bool
}

// Engine is an open device serving op calls. Its methods are safe for concurrent use; calls are
// queued in the order they are made.
type Engine struct {
	dev     device
	backend string // the backend's name in cell keys
	caps    int    // subgroup size the lowering assumes (0: none)
	opts    Options
	reg     atomic.Pointer[registry.Registry]
	// device and driver name this machine as registry evidence does.
	device, driver string

	mu      sync.Mutex
	pending []int // per queued dispatch, in order: its index in trace (-1: not traced)
	twins   map[twinKey]*twin
	hands   map[string]*hand // by incumbent name and shape
	tables  map[oracle.Type][]buffer
	scratch map[string]*Tensor // by op: what two-pass ops keep between their passes
	dummy   buffer
	trace   []Call
	tracing bool
	label   string
	closed  bool
	arenas  []*reportArena  // checked mode: the report slots of this flush's dispatches
	reports []pendingReport // checked mode: the queued dispatches' reports
	// twinBuild, when set (tests), replaces the builder of a cell's twin where it returns one.
	twinBuild func(kernels.Cell) func(kernels.Schedule) *dsl.Kernel

	// fallback says why another backend than Options.Backend serves ("": none).
	fallback string
}

// Call is one served op call, as the trace records it.
type Call struct {
	Cell    string         // "matvec/q4_0/vulkan" ("matvec/q4_0/cpu" on the cpu backend)
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

// Open opens the device of opts.Backend and returns an engine on it. The cpu backend needs no
// Vulkan library; cuda and hip need their GPU runtime, or with Options.Emulated a C++ compiler.
func Open(opts Options) (*Engine, error) {
	var (
		dev device
		err error
	)
	// The registry is checked against the trust file before a device is opened.
	if opts.Trust == nil {
		if opts.Trust, err = registry.TrustFromEnv(); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	if opts.Trust != nil && opts.Registry != nil {
		if _, err := opts.Registry.CheckTrust(opts.Trust); err != nil {
			return nil, fmt.Errorf("engine: registry %s: %w", opts.Registry.Path(), err)
		}
	}
	opts.Checked = opts.Checked || lower.CheckedRequested()
	var fallback string // why another backend than opts.Backend serves
	switch opts.Backend {
	case "", Vulkan:
		dev, err = openVulkan(opts)
	case CPU:
		dev, err = openCPU(opts)
	case Native:
		dev, fallback, err = openNative(opts)
	case CUDA, HIP:
		dev, err = openGPU(opts)
	default:
		return nil, fmt.Errorf("engine: backend %q: want %q, %q, %q, %q or %q", opts.Backend, Vulkan, CPU, Native, CUDA, HIP)
	}
	if err == nil && opts.Emulated && dev.backend() != CUDA && dev.backend() != HIP {
		dev.close()
		return nil, fmt.Errorf("engine: Options.Emulated applies to %q and %q, not %q", CUDA, HIP, dev.backend())
	}
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if _, ok := dev.(boundsChecker); opts.Checked && !ok {
		dev.close()
		return nil, fmt.Errorf("engine: checked mode (Options.Checked or %s=1): the %s backend runs no bounds-checked twins", lower.CheckedEnv, dev.backend())
	}
	e := &Engine{
		dev: dev, backend: dev.backend(), opts: opts, caps: dev.subgroupSize(),
		twins: map[twinKey]*twin{}, hands: map[string]*hand{}, tables: map[oracle.Type][]buffer{},
		scratch: map[string]*Tensor{},
		tracing: true, fallback: fallback,
	}
	e.device, e.driver = dev.evidence()
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
	return e.dev.close()
}

// maxBinding is the most bytes one tensor buffer holds, a multiple of 256.
func (e *Engine) maxBinding() int {
	limit := e.dev.maxBinding()
	if e.opts.MaxBinding > 0 {
		limit = min(limit, e.opts.MaxBinding)
	}
	return max(256, limit&^255)
}

// Backend is the backend the engine serves on (Vulkan, CPU, CUDA or HIP), as cell keys name it.
func (e *Engine) Backend() string { return e.backend }

// Device describes the device the engine runs on. On the cpu backend only the fields that
// apply to the executor are set (Name, Type "CPU", the driver, the subgroup size).
func (e *Engine) Device() vulkan.DeviceInfo { return e.dev.info() }

// Evidence names the device and its driver as registry evidence and the tuning cache key them:
// vulkan.DeviceInfo.Evidence on Vulkan; on cpu the executor, the architecture and the Go
// version, as package prebuilt names its cpu device.
func (e *Engine) Evidence() (device, driver string) { return e.device, e.driver }

// Stats returns the device's counters (submissions, dispatches, barriers, host reads and
// writes).
func (e *Engine) Stats() Stats { return e.dev.stats() }

// Registry returns the registry calls are resolved against now.
func (e *Engine) Registry() *registry.Registry { return e.reg.Load() }

// SetRegistry replaces the registry: the next call resolves its cell against r. Safe while other
// goroutines make calls. It does not check r against the trust file: the caller vouches for r
// (CheckTrust it first).
func (e *Engine) SetRegistry(r *registry.Registry) { e.reg.Store(r) }

// ReloadRegistry reads the current registry's file again (after `onesource gate` flipped a
// cell) and swaps it in. On error the current registry stays.
func (e *Engine) ReloadRegistry() error {
	cur := e.reg.Load()
	if cur == nil || cur.Path() == "" {
		return errors.New("engine: ReloadRegistry: the registry was not read from a file")
	}
	r, err := registry.LoadTrusted(cur.Path(), e.opts.Trust)
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
	pending, reports := e.pending, e.reports
	e.pending, e.reports = nil, nil
	if e.dev.queued() == 0 {
		return nil
	}
	times, err := e.dev.flush(ctx)
	if err != nil {
		// The reports may still be written by work in flight: their arenas are not reused.
		e.arenas = nil
		return fmt.Errorf("engine: %w", err)
	}
	for i, ti := range pending {
		if ti >= 0 && ti < len(e.trace) {
			e.trace[ti].Flushed = true
			if i < len(times) {
				e.trace[ti].Time = times[i]
			}
		}
	}
	if len(reports) > 0 {
		return e.readReports(reports)
	}
	return nil
}

// Checked reports whether the engine runs its twins bounds-checked (Options.Checked, or
// ONESOURCE_CHECKED=1).
func (e *Engine) Checked() bool { return e.opts.Checked }

// SetLabel labels the calls made from now on (Call.Label), for a profile: "layer 3 ffn".
func (e *Engine) SetLabel(label string) {
	e.mu.Lock()
	e.label = label
	e.mu.Unlock()
}

// CopyBandwidth measures the device's copy bandwidth in GB/s, the roofline a profile compares
// ops with: bytes read plus written by vkCmdCopyBuffer of 16 MiB (as onesource bench measures
// it; on cpu, Go's copy of 16 MiB in memory), the median of five runs of ten copies.
func (e *Engine) CopyBandwidth() (float64, error) {
	bw, err := e.dev.copyBandwidth()
	if err != nil {
		return 0, fmt.Errorf("engine: CopyBandwidth: %w", err)
	}
	return bw, nil
}

// Timed reports whether the engine measures each dispatch (Options.Timed).
func (e *Engine) Timed() bool { return e.opts.Timed }
