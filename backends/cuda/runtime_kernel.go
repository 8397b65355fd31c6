package cuda

import (
	"fmt"
	"slices"

	"github.com/onesource-go/onesource/internal/gpudrv"
)

// DefaultNVRTCOptions are the options every NVRTC compile gets after the target architecture:
// --fmad=false keeps a*b+c two roundings (the numeric contract: no contraction).
var DefaultNVRTCOptions = []string{"--fmad=false"}

// Image is device code made by NVRTC: PTX text or a cubin (Format "ptx" or "cubin"), ready for
// Device.Load, with its target ("sm_90" for a cubin, "compute_90" for PTX), every option NVRTC
// was given and its log.
type Image = gpudrv.Image

// CompileError is an NVRTC compile that failed; Log holds NVRTC's diagnostics and Err the
// *ResultError of nvrtcCompileProgram.
type CompileError = gpudrv.CompileError

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
	n, err := nvrtc.Load()
	if err != nil {
		return Image{}, err
	}
	return n.compile(src, name, sm, options)
}

func (n *nvrtcLib) compile(src, name string, sm int, options []string) (Image, error) {
	target, format, err := nvrtcTarget(n.archs, sm, n.Has(nvrtcGetCUBIN) && n.Has(nvrtcGetCUBINSize))
	if err != nil {
		return Image{}, fmt.Errorf("cuda: nvrtc %d.%d (%s): %w", n.major, n.minor, n.Path, err)
	}
	opts := append([]string{"--gpu-architecture=" + target}, DefaultNVRTCOptions...)
	opts = append(opts, options...)
	size, get := gpudrv.CallProgramCodeSize, gpudrv.CallProgramCode
	if format == "cubin" {
		size, get = nvrtcGetCUBINSize, nvrtcGetCUBIN // the same program, read as a cubin
	}
	return n.Compile(src, name, opts, size, get, Image{Format: format, Target: target})
}

// Kernel is a loaded module's kernel function, ready for Launch, Bench and Stream.Launch; its
// Image is what NVRTC built. It belongs to the Device that loaded it and is freed by Release or
// Close.
type Kernel = gpudrv.Kernel

// Stream queues launches that run back to back on the device's one CUDA stream and are waited
// for once, by Submit; launches on a stream run in order, so none needs a barrier. A timed
// stream measures each launch with CUDA events (Times). A Stream belongs to one goroutine.
type Stream = gpudrv.Stream

// BenchResult is the outcome of a kernel-only benchmark, timed by CUDA events.
type BenchResult = gpudrv.BenchResult
