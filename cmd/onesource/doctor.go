package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/onesource-go/onesource/backends/vulkan"
)

func init() {
	register("doctor", "report CPU features, Vulkan devices and toolchains found", runDoctor)
}

// toolchains are the external tools the backends and their tests use, with the flag that prints
// a version.
var toolchains = []struct{ name, flag, use string }{
	{"spirv-val", "--version", "validates emitted SPIR-V (level V)"},
	{"spirv-dis", "--version", "disassembles SPIR-V for golden files"},
	{"glslc", "--version", "compiles hand-written GLSL incumbents"},
	{"clang-16", "--version", "CUDA to PTX, HIP to AMDGPU (level V)"},
	{"hipcc", "--version", "HIP compiler"},
	{"nvcc", "--version", "NVIDIA CUDA compiler"},
}

func runDoctor(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: onesource doctor")
		return 2
	}
	fmt.Fprintf(stdout, "go: %s %s/%s, %d CPUs\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	c := cpuid.CPU
	fmt.Fprintf(stdout, "cpu: %s (%d physical cores, %d threads)\n", c.BrandName, c.PhysicalCores, c.LogicalCores)
	var feats []string
	for _, f := range []cpuid.FeatureID{cpuid.SSE4, cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C, cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VNNI, cpuid.AVXVNNI} {
		if c.Supports(f) {
			feats = append(feats, f.String())
		}
	}
	fmt.Fprintf(stdout, "cpu features: %s\n", strings.Join(feats, " "))

	fmt.Fprintln(stdout, "\nvulkan:")
	if err := vulkan.Available(); err != nil {
		fmt.Fprintf(stdout, "  %s\n", unavailable(err))
	} else if devs, err := vulkan.Devices(); err != nil {
		fmt.Fprintf(stdout, "  %s\n", unavailable(err))
	} else {
		for _, d := range devs {
			fmt.Fprintf(stdout, "  [%d] %s (%s), driver %s %s, Vulkan %v\n", d.Index, d.Name, d.Type, d.DriverName, d.DriverInfo, d.APIVersion)
			fmt.Fprintf(stdout, "      subgroup %d (min %d, max %d), shared memory %d bytes, timestamps %v\n",
				d.SubgroupSize, d.MinSubgroupSize, d.MaxSubgroupSize, d.MaxComputeSharedMemory, d.Timestamps)
			fmt.Fprintf(stdout, "      features: %s\n", featureNames(d.Features))
			caps := vulkan.CapsFor(d)
			fmt.Fprintf(stdout, "      lowering target: subgroup %d, packed dot %v, f16 arithmetic %v\n", caps.SubgroupSize, caps.DotI8x4, caps.Float16)
		}
	}

	gpuRuntimes(stdout)
	islandsSection(stdout)

	fmt.Fprintln(stdout, "\ntoolchains:")
	for _, t := range toolchains {
		fmt.Fprintf(stdout, "  %-10s %s\n", t.name, toolVersion(t.name, t.flag))
	}
	return 0
}

// unavailable words a backend's error as "unavailable: <reason>" (once).
func unavailable(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "unavailable") {
		return msg
	}
	return "unavailable: " + msg
}

func featureNames(f vulkan.Features) string {
	var s []string
	add := func(ok bool, name string) {
		if ok {
			s = append(s, name)
		}
	}
	add(f.Int8, "int8")
	add(f.Int16, "int16")
	add(f.Float16, "float16")
	add(f.Float64, "float64")
	add(f.StorageBuffer8, "storage8")
	add(f.StorageBuffer16, "storage16")
	add(f.IntegerDotProduct, "int8-dot")
	add(f.SubgroupBasic, "subgroup-basic")
	add(f.SubgroupShuffle, "subgroup-shuffle")
	add(f.SubgroupArithmetic, "subgroup-arithmetic")
	add(f.AtomicFloat32Add, "atomic-float32-add")
	add(f.CooperativeMatrix, "cooperative-matrix")
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// toolVersion returns the version line a tool prints for its version flag (versionLine), or
// "unavailable: why".
func toolVersion(name, flag string) string {
	path, err := exec.LookPath(name)
	if err != nil {
		return "unavailable: not found on PATH"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, flag).CombinedOutput()
	if err != nil && len(out) == 0 {
		return fmt.Sprintf("unavailable: %s %s: %v", path, flag, err)
	}
	if line, ok := versionLine(string(out)); ok {
		return line + " (" + path + ")"
	}
	return fmt.Sprintf("version not read: %s %s printed no version line", path, flag)
}

// versionLine finds the line of a tool's version output that states a version: the first line
// that mentions "version" (or "release") and holds a digit, else the first line that starts with a word and
// holds a digit and is not part of an error report (a Python traceback, "error:", "warning:").
// Debian's hipcc prints a traceback of rocm_agent_enumerator before "HIP version: 5.2...".
func versionLine(out string) (string, bool) {
	var lines []string
	inTrace := false
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "Traceback (most recent call last)"):
			inTrace = true
			continue
		case inTrace && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.HasPrefix(t, "^")):
			continue
		case inTrace:
			inTrace = false // the exception's last line ("FileNotFoundError: ...")
			continue
		}
		lines = append(lines, t)
	}
	hasDigit := func(s string) bool { return strings.ContainsAny(s, "0123456789") }
	for _, l := range lines {
		if low := strings.ToLower(l); (strings.Contains(low, "version") || strings.Contains(low, "release")) && hasDigit(l) {
			return l, true
		}
	}
	for _, l := range lines {
		low := strings.ToLower(l)
		if hasDigit(l) && !strings.HasPrefix(low, "error") && !strings.HasPrefix(low, "warning") {
			return l, true
		}
	}
	return "", false
}
