package hip

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/onesource-go/onesource/internal/gpudrv"
)

// DefaultHIPRTCOptions are the options every HIPRTC compile gets after the target:
// -ffp-contract=off keeps a*b+c two roundings (the numeric contract: no contraction), and -O3.
var DefaultHIPRTCOptions = []string{"-ffp-contract=off", "-O3"}

// CodeObject is device code made by HIPRTC: an AMDGPU code object (ELF) for one target, ready for
// Device.Load.
type CodeObject struct {
	Code    []byte   // the code object
	Target  string   // the target ID it was compiled for, e.g. "gfx90a"
	Options []string // every option HIPRTC was given
	Log     string   // HIPRTC's log (warnings); empty when it had nothing to say
}

// CompileError is a HIPRTC compile that failed; Log holds the compiler's diagnostics.
type CompileError struct {
	Name    string   // the source's name, e.g. "saxpy.hip"
	Target  string   // the target ID, e.g. "gfx90a"
	Options []string // every option HIPRTC was given
	Log     string   // HIPRTC's program log
	Err     error    // the *ResultError of hiprtcCompileProgram
}

// Error names the call, the target and the result, followed by the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("hip: hiprtc: compiling %s for %s: %v\n%s", e.Name, e.Target, e.Err, strings.TrimSpace(e.Log))
}

// Unwrap returns the *ResultError.
func (e *CompileError) Unwrap() error { return e.Err }

// CompileHIPRTC compiles HIP C++ source with HIPRTC for target (an AMDGPU target ID such as
// "gfx90a", "gfx1030" or "gfx90a:sramecc+:xnack-"), with --offload-arch=target,
// DefaultHIPRTCOptions and then options. name names the source in diagnostics. It needs HIPRTC
// only, no GPU. The target is checked first with the code-object manager where it can be loaded,
// because some HIPRTC releases abort the process on a target they do not support. A compile
// error is a *CompileError carrying the log.
func CompileHIPRTC(src, name, target string, options ...string) (CodeObject, error) {
	n, err := loadHIPRTC()
	if err != nil {
		return CodeObject{}, err
	}
	return n.compile(src, name, target, options)
}

func (n *hiprtcLib) compile(src, name, target string, options []string) (CodeObject, error) {
	if err := n.checkTarget(target); err != nil {
		return CodeObject{}, err
	}
	opts := append([]string{"--offload-arch=" + target}, DefaultHIPRTCOptions...)
	opts = append(opts, options...)
	co := CodeObject{Target: target, Options: opts}
	rtc := gpudrv.RTC{Create: n.hiprtcCreateProgram, Compile: n.hiprtcCompileProgram, Destroy: n.hiprtcDestroyProgram,
		LogSize: n.hiprtcGetProgramLogSize, Log: n.hiprtcGetProgramLog, Prefix: "hiprtc", Check: n.check}
	prog, err := rtc.Build(src, name, opts, n.hiprtcGetCodeSize, n.hiprtcGetCode, "hiprtcGetCodeSize", "hiprtcGetCode")
	co.Log = prog.Log
	switch {
	case err != nil:
		return co, fmt.Errorf("hip: hiprtc: %w", err)
	case prog.CompileErr != nil:
		return co, &CompileError{Name: name, Target: target, Options: opts, Log: prog.Log, Err: prog.CompileErr}
	}
	co.Code = prog.Code
	if !bytes.HasPrefix(co.Code, []byte("\x7fELF")) && !bytes.HasPrefix(co.Code, []byte("__CLANG_OFFLOAD_BUNDLE__")) {
		return co, fmt.Errorf("hip: hiprtc: the code for %s is neither an ELF code object nor an offload bundle", target)
	}
	return co, nil
}

// Kernel is a loaded module's kernel function, ready for Launch, Bench and Stream.Launch. It
// belongs to the Device that loaded it and is freed by Release or Close.
type Kernel struct {
	k    *gpudrv.Kernel
	code CodeObject
}

// shared returns the kernel gpudrv launches (nil for a nil Kernel, which the launch checks
// refuse).
func (k *Kernel) shared() *gpudrv.Kernel {
	if k == nil {
		return nil
	}
	return k.k
}

// Name returns the kernel's entry point.
func (k *Kernel) Name() string { return k.k.Name() }

// MaxThreadsPerBlock returns the most threads a block of this kernel may have on its device.
func (k *Kernel) MaxThreadsPerBlock() int { return k.k.MaxThreadsPerBlock() }

// Registers returns the registers each thread uses (0: not reported).
func (k *Kernel) Registers() int { return k.k.Registers() }

// SharedMemory returns the bytes of static shared memory a block uses (0: not reported).
func (k *Kernel) SharedMemory() int { return k.k.SharedMemory() }

// CodeObject returns what Compile built (zero for a kernel from Load).
func (k *Kernel) CodeObject() CodeObject { return k.code }

// Release unloads the kernel's module. Releasing twice, or after the device was closed, is a
// no-op.
func (k *Kernel) Release() { k.k.Release() }

// Compile compiles HIP C++ source with HIPRTC for this device's target (see CompileHIPRTC) and
// loads the kernel entry from it. The source must declare entry extern "C".
func (d *Device) Compile(src, entry string, options ...string) (*Kernel, error) {
	if d.info.Arch == "" {
		return nil, fmt.Errorf("hip: Compile: device %d (%s) did not report its target (gcnArchName)", d.info.Index, d.info.Name)
	}
	co, err := CompileHIPRTC(src, entry+".hip", d.info.Arch, options...)
	if err != nil {
		return nil, err
	}
	k, err := d.Load(co.Code, entry)
	if err != nil {
		return nil, err
	}
	k.code = co
	return k, nil
}

// Load loads a code object (what hipModuleLoadData takes: HIPRTC's, or hipcc's or clang's for
// this device's target) and returns its kernel entry.
func (d *Device) Load(code []byte, entry string) (*Kernel, error) {
	k, err := d.d.Load(code, entry)
	if err != nil {
		return nil, err
	}
	return &Kernel{k: k}, nil
}

// Launch runs k once over grid blocks of block threads with bufs (device pointers, in order) and
// params (32-bit scalars, in order) as its arguments, and waits for it to finish.
func (d *Device) Launch(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32) error {
	return d.d.Launch(k.shared(), bufs, params, grid, block)
}

// BenchResult is the outcome of a kernel-only benchmark, timed by HIP events.
type BenchResult = gpudrv.BenchResult

// Bench is the kernel-only benchmark: warmup launches and a wait, then n launches back to back on
// the device's stream between two events, one wait on the last event, and the events' elapsed
// time. Buffers are neither copied nor cleared between launches.
func (d *Device) Bench(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32, warmup, n int) (BenchResult, error) {
	return d.d.Bench(k.shared(), bufs, params, grid, block, warmup, n)
}

// Stream queues launches that run back to back on the device's one HIP stream and are waited
// for once, by Submit; launches on a stream run in order, so none needs a barrier. A timed
// stream measures each launch with HIP events (Times). A Stream belongs to one goroutine.
type Stream struct {
	s *gpudrv.Stream
}

// NewStream returns an empty stream; a timed one measures each launch.
func (d *Device) NewStream(timed bool) (*Stream, error) {
	s, err := d.d.NewStream(timed)
	if err != nil {
		return nil, err
	}
	return &Stream{s: s}, nil
}

// Launch queues a launch of k over grid blocks of block threads with views (views[i] is
// parameter i: its buffer's device address plus its offset) and params (32-bit scalars),
// checked as Device.Launch checks its arguments and each view against its buffer (an error names
// the buffer's position). Nothing runs until Submit.
func (s *Stream) Launch(k *Kernel, views []View, params []uint32, grid, block [3]uint32) error {
	return s.s.Launch(k.shared(), views, params, grid, block)
}

// Len is the number of queued launches.
func (s *Stream) Len() int { return s.s.Len() }

// Reset drops the queued launches.
func (s *Stream) Reset() { s.s.Reset() }

// Times returns the device time of each launch of the last Submit of a timed stream.
func (s *Stream) Times() []time.Duration { return s.s.Times() }

// Submit enqueues the queued launches on the device's stream, in order, and waits once; the
// stream is empty afterwards, whether or not it succeeded. A kernel or buffer released since its
// launch was queued is an error, before anything runs.
func (s *Stream) Submit() error { return s.s.Submit() }
