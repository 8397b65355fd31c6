package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/ir"
)

// islandsSection writes doctor's "islands:" section: for every device found (Vulkan, CUDA, HIP)
// the body each intrinsic island runs with there, chosen by the device's capabilities (Vulkan's
// cooperative-matrix properties, the CUDA compute capability, the gfx target), a count of the
// native ones, and the spirv-val that validates cooperative-matrix SPIR-V. Metal, WebGPU, the
// cpu executor and every device not listed run the portable bodies.
func islandsSection(w io.Writer) {
	fmt.Fprintln(w, "\nislands (the body per device; the portable body wherever none is native):")
	native := 0
	line := func(backend string, index int, name, body string) {
		for i := ir.Island(0); i < ir.IslandCount; i++ {
			fmt.Fprintf(w, "  %s [%d] %s: %s %s\n", backend, index, name, i, body)
		}
		if body != "portable" {
			native++
		}
	}
	if devs, err := vulkan.Devices(); err == nil {
		for _, d := range devs {
			line("vulkan", d.Index, d.Name, vulkan.IslandBody(d))
		}
	}
	if devs, err := cuda.Devices(); err == nil {
		for _, d := range devs {
			line("cuda", d.Index, d.Name+" ("+d.Arch+")", cuda.IslandBody(ir.IslandMMAI8, d.Arch))
		}
	}
	if devs, err := hip.Devices(); err == nil {
		for _, d := range devs {
			line("hip", d.Index, d.Name+" ("+d.Arch+")", hip.IslandBody(ir.IslandMMAI8, d.Processor()))
		}
	}
	fmt.Fprintf(w, "  native here: %d device(s)\n", native)
	fmt.Fprintf(w, "  host emulation (level H, not native): cuda sm_80 %s; hip gfx940 %s, gfx1100 %s\n",
		cuda.IslandBody(ir.IslandMMAI8, "sm_80"), hip.IslandBody(ir.IslandMMAI8, "gfx940"), hip.IslandBody(ir.IslandMMAI8, "gfx1100"))
	p := os.Getenv(vulkan.CoopValidatorEnv)
	if p == "" {
		p = vulkan.DefaultCoopValidator
	}
	v := "unavailable: not found (scripts/install-spirv-val.sh)"
	if out, err := exec.Command(p, "--version").Output(); err == nil {
		if l, ok := versionLine(string(out)); ok {
			v = l
		}
	}
	fmt.Fprintf(w, "  cooperative-matrix spirv-val: %s (%s)\n", p, v)
}
