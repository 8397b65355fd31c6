package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
)

// gpuRuntimes writes doctor's "cuda:" and "hip:" sections: the libraries loaded (with the
// versioned symbols chosen at run time), then each device, or "unavailable: <reason>".
func gpuRuntimes(w io.Writer) {
	fmt.Fprintln(w, "\ncuda:")
	gpuCUDARuntime(w)
	fmt.Fprintln(w, "\nhip:")
	gpuHIPRuntime(w)
}

func gpuCUDARuntime(w io.Writer) {
	lib, err := cuda.Libraries()
	if err != nil {
		fmt.Fprintf(w, "  %v\n", err)
		return
	}
	fmt.Fprintf(w, "  driver: %s (CUDA %s)\n", lib.DriverPath, cuda.FormatVersion(lib.DriverVersion))
	if lib.NVRTCError != nil {
		fmt.Fprintf(w, "  nvrtc: %v\n", lib.NVRTCError)
	} else {
		archs := ""
		if n := len(lib.NVRTCArchs); n > 0 {
			archs = fmt.Sprintf(", sm_%d..sm_%d", lib.NVRTCArchs[0], lib.NVRTCArchs[n-1])
		}
		fmt.Fprintf(w, "  nvrtc: %s (%d.%d%s)\n", lib.NVRTCPath, lib.NVRTCVersion[0], lib.NVRTCVersion[1], archs)
	}
	devs, err := cuda.Devices()
	if err != nil {
		fmt.Fprintf(w, "  %v\n", err)
		return
	}
	defer func() {
		if err := cuda.Available(); err != nil && lib.NVRTCError == nil {
			fmt.Fprintf(w, "  %v\n", err)
		}
	}()
	for _, d := range devs {
		optin := ""
		if d.SharedMemoryPerBlockOptin > d.SharedMemoryPerBlock {
			optin = fmt.Sprintf(" (%d KiB opt-in)", d.SharedMemoryPerBlockOptin>>10)
		}
		fmt.Fprintf(w, "  [%d] %s (%s), %d SMs, %.1f GiB, warp %d, shared %d KiB/block%s, PCI %s\n",
			d.Index, d.Name, d.Arch, d.Multiprocessors, float64(d.TotalMemory)/(1<<30), d.WarpSize,
			d.SharedMemoryPerBlock>>10, optin, d.PCIBusID)
	}
}

func gpuHIPRuntime(w io.Writer) {
	lib, err := hip.Libraries()
	if err != nil {
		fmt.Fprintf(w, "  %v\n", err)
		return
	}
	fmt.Fprintf(w, "  runtime: %s (HIP %s), hipGetDeviceProperties -> %s\n", lib.Path, hip.FormatVersion(lib.RuntimeVersion),
		gpuOrNone(lib.Symbols["hipGetDeviceProperties"]))
	if lib.HIPRTCError != nil {
		fmt.Fprintf(w, "  hiprtc: %v\n", lib.HIPRTCError)
	} else {
		comgr := "targets unchecked (no libamd_comgr)"
		if lib.ComgrPath != "" {
			comgr = "targets checked by " + lib.ComgrPath
		}
		fmt.Fprintf(w, "  hiprtc: %s (%d.%d), %s\n", lib.HIPRTCPath, lib.HIPRTCVersion[0], lib.HIPRTCVersion[1], comgr)
	}
	devs, err := hip.Devices()
	if err != nil {
		fmt.Fprintf(w, "  %v\n", err)
		return
	}
	defer func() {
		if err := hip.Available(); err != nil && lib.HIPRTCError == nil {
			fmt.Fprintf(w, "  %v\n", err)
		}
	}()
	for _, d := range devs {
		fmt.Fprintf(w, "  [%d] %s (%s), %d CUs, %.1f GiB, wave %d, LDS %d KiB/block, PCI %s\n",
			d.Index, d.Name, gpuOrNone(d.Arch), d.Multiprocessors, float64(d.TotalMemory)/(1<<30), d.WarpSize,
			d.SharedMemoryPerBlock>>10, d.PCIBusID)
	}
}

func gpuOrNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return s
}
