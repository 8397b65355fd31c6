package cuda

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onesource-go/onesource/internal/gpudrv"
)

// DefaultNVRTCOptions are the options every NVRTC compile gets after the target architecture:
// --fmad=false keeps a*b+c two roundings (the numeric contract: no contraction).
var DefaultNVRTCOptions = []string{"--fmad=false"}

// Image is device code made by NVRTC: PTX text or a cubin, ready for Device.Load.
type Image struct {
	Code    []byte   // the PTX (NUL-terminated text) or cubin (ELF)
	Format  string   // "cubin" or "ptx"
	Target  string   // what it was compiled for: "sm_90" (cubin) or "compute_90" (PTX)
	Options []string // every option NVRTC was given
	Log     string   // NVRTC's log (warnings); empty when it had nothing to say
}

// CompileError is an NVRTC compile that failed; Log holds NVRTC's diagnostics.
type CompileError struct {
	Name    string   // the source's name, e.g. "saxpy.cu"
	Target  string   // the architecture option's value, e.g. "sm_90"
	Options []string // every option NVRTC was given
	Log     string   // NVRTC's program log
	Err     error    // the *ResultError of nvrtcCompileProgram
}

// Error names the call, the target and the result, followed by the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: nvrtc: compiling %s for %s: %v\n%s", e.Name, e.Target, e.Err, strings.TrimSpace(e.Log))
}

// Unwrap returns the *ResultError.
func (e *CompileError) Unwrap() error { return e.Err }

// nvrtcTarget chooses what NVRTC builds for a device of compute capability sm (90 for 9.0):
// a cubin for sm_XY when NVRTC lists that architecture and can emit cubins, else PTX for the
// newest virtual architecture NVRTC lists that is not newer than the device (the driver compiles
// PTX for the device at load). archs nil means NVRTC cannot list them: PTX for compute_XY.
func nvrtcTarget(archs []int, sm int, cubin bool) (target, format string, err error) {
	if archs == nil {
		return fmt.Sprintf("compute_%d", sm), "ptx", nil
	}
	if cubin && slices.Contains(archs, sm) {
		return fmt.Sprintf("sm_%d", sm), "cubin", nil
	}
	best := -1
	for _, a := range archs {
		if a <= sm && a > best {
			best = a
		}
	}
	if best < 0 {
		return "", "", fmt.Errorf("NVRTC compiles for sm_%d and newer only; the device is sm_%d", slices.Min(archs), sm)
	}
	return fmt.Sprintf("compute_%d", best), "ptx", nil
}

// CompileNVRTC compiles CUDA C++ source with NVRTC for compute capability sm (e.g. 90 for 9.0),
// with DefaultNVRTCOptions and then options. name names the source in diagnostics. It needs
// NVRTC only, no driver or device. A compile error is a *CompileError carrying NVRTC's log.
func CompileNVRTC(src, name string, sm int, options ...string) (Image, error) {
	n, err := loadNVRTC()
	if err != nil {
		return Image{}, err
	}
	return n.compile(src, name, sm, options)
}

func (n *nvrtcLib) compile(src, name string, sm int, options []string) (Image, error) {
	target, format, err := nvrtcTarget(n.archs, sm, n.nvrtcGetCUBIN != 0 && n.nvrtcGetCUBINSize != 0)
	if err != nil {
		return Image{}, fmt.Errorf("cuda: nvrtc %d.%d (%s): %w", n.major, n.minor, n.path, err)
	}
	opts := append([]string{"--gpu-architecture=" + target}, DefaultNVRTCOptions...)
	opts = append(opts, options...)
	img := Image{Format: format, Target: target, Options: opts}
	rtc := gpudrv.RTC{Create: n.nvrtcCreateProgram, Compile: n.nvrtcCompileProgram, Destroy: n.nvrtcDestroyProgram,
		LogSize: n.nvrtcGetProgramLogSize, Log: n.nvrtcGetProgramLog, Prefix: "nvrtc", Check: n.check}
	sizeFn, getFn, sizeCall, getCall := n.nvrtcGetPTXSize, n.nvrtcGetPTX, "nvrtcGetPTXSize", "nvrtcGetPTX"
	if format == "cubin" {
		sizeFn, getFn, sizeCall, getCall = n.nvrtcGetCUBINSize, n.nvrtcGetCUBIN, "nvrtcGetCUBINSize", "nvrtcGetCUBIN"
	}
	prog, err := rtc.Build(src, name, opts, sizeFn, getFn, sizeCall, getCall)
	img.Log = prog.Log
	switch {
	case err != nil:
		return img, fmt.Errorf("cuda: nvrtc: %w", err)
	case prog.CompileErr != nil:
		return img, &CompileError{Name: name, Target: target, Options: opts, Log: prog.Log, Err: prog.CompileErr}
	}
	img.Code = prog.Code
	return img, nil
}

// Kernel is a loaded module's kernel function, ready for Launch, Bench and Stream.Launch. It
// belongs to the Device that loaded it and is freed by Release or Close.
type Kernel struct {
	k     *gpudrv.Kernel
	image Image
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

// Registers returns the registers each thread uses (CU_FUNC_ATTRIBUTE_NUM_REGS).
func (k *Kernel) Registers() int { return k.k.Registers() }

// SharedMemory returns the bytes of static shared memory a block uses.
func (k *Kernel) SharedMemory() int { return k.k.SharedMemory() }

// ParamSizes returns the byte size of each kernel parameter as the driver reports it
// (cuFuncGetParamInfo, CUDA 12.4+), or nil when the driver cannot say.
func (k *Kernel) ParamSizes() []int { return k.k.ParamSizes() }

// Image returns what Compile built (zero for a kernel from Load).
func (k *Kernel) Image() Image { return k.image }

// Release unloads the kernel's module. Releasing twice, or after the device was closed, is a
// no-op.
func (k *Kernel) Release() { k.k.Release() }

// Compile compiles CUDA C++ source with NVRTC for this device (see CompileNVRTC: the device's
// architecture, --fmad=false, then options) and loads the kernel entry from it. The source must
// declare entry extern "C" (or entry must be its mangled name).
func (d *Device) Compile(src, entry string, options ...string) (*Kernel, error) {
	img, err := CompileNVRTC(src, entry+".cu", d.info.ComputeMajor*10+d.info.ComputeMinor, options...)
	if err != nil {
		return nil, err
	}
	k, err := d.Load(img.Code, entry)
	if err != nil {
		return nil, err
	}
	k.image = img
	return k, nil
}

// Load loads a module from image (PTX text, a cubin or a fatbin: what cuModuleLoadData takes,
// e.g. clang's or nvcc's PTX) and returns its kernel entry.
func (d *Device) Load(image []byte, entry string) (*Kernel, error) {
	k, err := d.d.Load(image, entry)
	if err != nil {
		return nil, err
	}
	return &Kernel{k: k}, nil
}

// Launch runs k once over grid blocks of block threads with bufs (device pointers, in order) and
// params (32-bit scalars, in order) as its arguments, and waits for it to finish. Where the
// driver reports parameter sizes (CUDA 12.4+), the counts and sizes are checked first.
func (d *Device) Launch(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32) error {
	return d.d.Launch(k.shared(), bufs, params, grid, block)
}

// BenchResult is the outcome of a kernel-only benchmark, timed by CUDA events.
type BenchResult = gpudrv.BenchResult

// Bench is the kernel-only benchmark: warmup launches and a wait, then n launches back to back on
// the device's stream between two events, one wait on the last event, and the events' elapsed
// time. Buffers are neither copied nor cleared between launches.
func (d *Device) Bench(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32, warmup, n int) (BenchResult, error) {
	return d.d.Bench(k.shared(), bufs, params, grid, block, warmup, n)
}

// Stream queues launches that run back to back on the device's one CUDA stream and are waited
// for once, by Submit; launches on a stream run in order, so none needs a barrier. A timed
// stream measures each launch with CUDA events (Times). A Stream belongs to one goroutine.
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
