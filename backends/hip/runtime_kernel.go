package hip

import (
	"bytes"
	"fmt"

	"github.com/onesource-go/onesource/internal/gpudrv"
)

// DefaultHIPRTCOptions are the options every HIPRTC compile gets after the target:
// -ffp-contract=off keeps a*b+c two roundings (the numeric contract: no contraction), and -O3.
var DefaultHIPRTCOptions = []string{"-ffp-contract=off", "-O3"}

// CodeObject is device code made by HIPRTC: an AMDGPU code object (ELF, Format "code object")
// for one target ID, ready for Device.Load, with every option HIPRTC was given and its log.
type CodeObject = gpudrv.Image

// CompileError is a HIPRTC compile that failed; Log holds the compiler's diagnostics and Err the
// *ResultError of hiprtcCompileProgram.
type CompileError = gpudrv.CompileError

// CompileHIPRTC compiles HIP C++ source with HIPRTC for target (an AMDGPU target ID such as
// "gfx90a", "gfx1030" or "gfx90a:sramecc+:xnack-"), with --offload-arch=target,
// DefaultHIPRTCOptions and then options. name names the source in diagnostics. It needs HIPRTC
// only, no GPU. The target is checked first with the code-object manager where it can be loaded,
// because some HIPRTC releases abort the process on a target they do not support. A compile
// error is a *CompileError carrying the log.
func CompileHIPRTC(src, name, target string, options ...string) (CodeObject, error) {
	n, err := hiprtc.Load()
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
	co, err := n.Compile(src, name, opts, gpudrv.CallProgramCodeSize, gpudrv.CallProgramCode, CodeObject{Format: "code object", Target: target})
	if err != nil {
		return co, err
	}
	if !bytes.HasPrefix(co.Code, []byte("\x7fELF")) && !bytes.HasPrefix(co.Code, []byte("__CLANG_OFFLOAD_BUNDLE__")) {
		return co, fmt.Errorf("hip: hiprtc: the code for %s is neither an ELF code object nor an offload bundle", target)
	}
	return co, nil
}

// Kernel is a loaded module's kernel function, ready for Launch, Bench and Stream.Launch; its
// Image is the code object HIPRTC built. It belongs to the Device that loaded it and is freed by
// Release or Close.
type Kernel = gpudrv.Kernel

// Stream queues launches that run back to back on the device's one HIP stream and are waited
// for once, by Submit; launches on a stream run in order, so none needs a barrier. A timed
// stream measures each launch with HIP events (Times). A Stream belongs to one goroutine.
type Stream = gpudrv.Stream

// BenchResult is the outcome of a kernel-only benchmark, timed by HIP events.
type BenchResult = gpudrv.BenchResult
