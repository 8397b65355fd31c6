package hip

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/onesource-go/onesource/backends/cfamily"
)

// Archs are the gfx targets the tests compile the emitted HIP for: CDNA2, RDNA2 and RDNA3.
var Archs = []string{"gfx90a", "gfx1030", "gfx1100"}

// contractFlags are the flags the numeric contract needs on every HIP compile.
var contractFlags = []string{"-O2", "-ffp-contract=off", "-fhip-fp32-correctly-rounded-divide-sqrt", "-Wall"}

// rocmPaths finds the ROCm installation clang should use: the root holding include/hip and the
// directory of the device library bitcode ("" when not found).
func rocmPaths() (root, bitcode string) {
	roots := []string{os.Getenv("ROCM_PATH"), "/opt/rocm", "/usr"}
	for _, r := range roots {
		if r == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(r, "include", "hip", "hip_runtime.h")); err == nil {
			root = r
			break
		}
	}
	for _, d := range []string{
		filepath.Join(root, "amdgcn", "bitcode"),
		filepath.Join(root, "lib", "amdgcn", "bitcode"),
		"/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
		"/usr/lib/amdgcn/bitcode",
	} {
		if _, err := os.Stat(filepath.Join(d, "ocml.bc")); err == nil && root != "" {
			return root, d
		}
	}
	return root, ""
}

// DeviceLibFor returns the ROCm device library directory when it supports arch ("" if not).
func DeviceLibFor(arch string) string {
	_, bc := rocmPaths()
	if bc == "" {
		return ""
	}
	base, err := baseArch(arch)
	if err != nil || base == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(bc, "oclc_isa_version_"+strings.TrimPrefix(base, "gfx")+".bc")); err != nil {
		return ""
	}
	return bc
}

// amdgpuLinker reports whether clang-16 can link AMDGPU code objects: it needs an lld of its
// own version (older ones lack the elf64_amdgpu emulation it asks for).
func amdgpuLinker(clang string) bool {
	out, err := exec.Command(clang, "-print-prog-name=lld").Output()
	if err != nil {
		return false
	}
	lld := strings.TrimSpace(string(out))
	if !filepath.IsAbs(lld) {
		p, err := exec.LookPath(lld)
		if err != nil {
			return false
		}
		lld = p
	}
	help, _ := exec.Command(lld, "-flavor", "gnu", "-V").CombinedOutput()
	return bytes.Contains(help, []byte("elf64_amdgpu"))
}

// CompileClang compiles HIP source for arch with clang-16 (or clang), device code only. With the
// ROCm device library for arch and a linker that knows AMDGPU it produces a code object;
// otherwise it stops at AMDGPU assembly (without the device library, with -nogpulib, so math
// calls stay external), and the Label says so.
func CompileClang(src, arch string) (*cfamily.Result, error) { return compileClang(src, arch, true) }

// AssembleClang is CompileClang stopping at AMDGPU assembly (the Output is its text), for
// tests that read the instructions.
func AssembleClang(src, arch string) (*cfamily.Result, error) { return compileClang(src, arch, false) }

func compileClang(src, arch string, object bool) (*cfamily.Result, error) {
	tool, err := cfamily.LookPath("clang-16", "clang")
	if err != nil {
		return nil, fmt.Errorf("hip: clang: %w", err)
	}
	root, _ := rocmPaths()
	if root == "" {
		return nil, fmt.Errorf("hip: %w: the HIP headers (hip/hip_runtime.h) were not found under $ROCM_PATH, /opt/rocm or /usr", cfamily.ErrNoTool)
	}
	args := []string{"-x", "hip", "--cuda-device-only", "--offload-arch=" + arch, "--rocm-path=" + root}
	args = append(args, contractFlags...)
	label := "clang: HIP -> AMDGPU "
	bc := DeviceLibFor(arch)
	if bc != "" {
		args = append(args, "--rocm-device-lib-path="+bc)
	} else {
		args = append(args, "-nogpulib")
	}
	if object && bc != "" && amdgpuLinker(tool) {
		args = append(args, "--no-gpu-bundle-output", "-c", "-o", "{out}", "{src}")
		label += "code object, " + arch
	} else {
		args = append(args, "-S", "-o", "{out}", "{src}")
		label += "assembly, " + arch
		if !object {
			// asked for assembly
		} else if bc == "" {
			label += " (no ROCm device library for " + arch + ": -nogpulib, math calls left external)"
		} else {
			label += " (no AMDGPU-capable lld for " + filepath.Base(tool) + ": not linked)"
		}
	}
	return checkAMDGPU(cfamily.Run(label, tool, args, "kernel.hip", src, nil))
}

// CompileHIPCC compiles HIP source for arch with hipcc to an AMDGPU code object. hipcc links the
// ROCm device library, so a target the installed library lacks gives an error wrapping
// cfamily.ErrNoTool.
func CompileHIPCC(src, arch string) (*cfamily.Result, error) {
	tool, err := cfamily.LookPath("hipcc", "/opt/rocm/bin/hipcc")
	if err != nil {
		return nil, fmt.Errorf("hip: hipcc: %w", err)
	}
	if DeviceLibFor(arch) == "" {
		return nil, fmt.Errorf("hip: hipcc: %w: no ROCm device library for %s", cfamily.ErrNoTool, arch)
	}
	args := []string{"-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", "--offload-arch=" + arch}
	args = append(args, contractFlags...)
	args = append(args, "-c", "-o", "{out}", "{src}")
	return checkAMDGPU(cfamily.Run("hipcc: HIP -> AMDGPU code object, "+arch, tool, args, "kernel.hip", src, nil))
}

// checkAMDGPU makes sure the output is an AMDGPU ELF code object or AMDGPU assembly with a
// kernel in it.
func checkAMDGPU(r *cfamily.Result, err error) (*cfamily.Result, error) {
	if err != nil {
		return nil, err
	}
	out := r.Output
	switch {
	case len(out) > 20 && bytes.HasPrefix(out, []byte("\x7fELF")):
		if out[18] != 0xe0 { // e_machine EM_AMDGPU (224), little endian
			return nil, fmt.Errorf("%s: output is an ELF file for machine %d, not AMDGPU", r.Label, out[18])
		}
	case bytes.Contains(out, []byte(".amdhsa_kernel")):
	default:
		return nil, fmt.Errorf("%s: output is neither an AMDGPU code object nor AMDGPU assembly with a kernel\n%s", r.Label, r.Log)
	}
	return r, nil
}
