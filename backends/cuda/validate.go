package cuda

import (
	"fmt"
	"strings"

	"github.com/onesource-go/onesource/backends/cfamily"
)

// Archs are the GPU architectures the tests compile the emitted CUDA for.
var Archs = []string{"sm_80", "sm_90"}

// ptxVersion is the PTX ISA clang targets per architecture: 7.5 brings the *_sync builtins
// clang needs without a CUDA installation; sm_90 needs 7.8.
func ptxVersion(arch string) string {
	if arch >= "sm_90" {
		return "+ptx78"
	}
	return "+ptx75"
}

// ClangArgs are clang's arguments for compiling CUDA source to PTX for arch without a CUDA
// installation ({src} and {out} stand for the files).
func ClangArgs(arch string) []string {
	return []string{"-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
		"--cuda-gpu-arch=" + arch, "-Xclang", "-target-feature", "-Xclang", ptxVersion(arch),
		"-O2", "-ffp-contract=off", "-Wall", "-S", "-o", "{out}", "{src}"}
}

// CompileClang compiles CUDA source to PTX with clang-16 (or clang) for arch, without the CUDA
// headers and libdevice. The result's Output is the PTX text.
func CompileClang(src, arch string) (*cfamily.Result, error) {
	tool, err := cfamily.LookPath("clang-16", "clang")
	if err != nil {
		return nil, fmt.Errorf("cuda: clang: %w", err)
	}
	return check(cfamily.Run("clang: CUDA -> PTX, "+arch, tool, ClangArgs(arch), "kernel.cu", src, nil))
}

// CompileNVCC compiles CUDA source to PTX with nvcc for arch (-fmad=false, no flush-to-zero).
func CompileNVCC(src, arch string) (*cfamily.Result, error) {
	tool, err := cfamily.LookPath("nvcc", "/usr/local/cuda/bin/nvcc")
	if err != nil {
		return nil, fmt.Errorf("cuda: nvcc: %w", err)
	}
	args := []string{"--ptx", "-arch=" + arch, "-fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-o", "{out}", "{src}"}
	return check(cfamily.Run("nvcc: CUDA -> PTX, "+arch, tool, args, "kernel.cu", src, nil))
}

// check makes sure a compile produced PTX with at least one entry point.
func check(r *cfamily.Result, err error) (*cfamily.Result, error) {
	if err != nil {
		return nil, err
	}
	if !strings.Contains(string(r.Output), ".entry") {
		return nil, fmt.Errorf("%s: no PTX entry point in the output\n%s", r.Label, r.Log)
	}
	return r, nil
}
