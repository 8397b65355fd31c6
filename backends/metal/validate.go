package metal

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/onesource-go/onesource/backends/cfamily"
)

// HostLabel is in every result and error of HostCheck.
const HostLabel = "host check (not Apple's compiler)"

//go:embed shim/metal_stdlib
var shimStdlib string

// Shim returns the text of the shim metal_stdlib HostCheck compiles against.
func Shim() string { return shimStdlib }

// HostArgs are the clang++ arguments of the host check ({src} is the MSL file; the shim is in
// the directory "shim"): C++ for OpenCL (address spaces, kernel-scope __local arrays), no
// OpenCL headers, syntax and types only, MSL's argument attributes accepted.
func HostArgs() []string {
	return []string{"-x", "clcpp", "-cl-std=clc++2021", "-cl-no-stdinc", "-fsyntax-only",
		"-Wall", "-Wno-unknown-attributes", "-Wno-unused-variable", "-I", "shim", "{src}"}
}

// HostCheck checks MSL source with clang++ against the shim metal_stdlib: syntax, types and
// address spaces. It is not Apple's compiler (see the package documentation); its Result's
// Label and its errors say so.
func HostCheck(src string) (*cfamily.Result, error) {
	tool, err := cfamily.LookPath("clang++-16", "clang++", "clang-16", "clang")
	if err != nil {
		return nil, fmt.Errorf("metal: %s: %w", HostLabel, err)
	}
	r, err := cfamily.Run("metal: "+HostLabel+": clang++ -x clcpp against shim/metal_stdlib", tool, HostArgs(), "kernel.metal", src, map[string]string{"shim/metal_stdlib": shimStdlib})
	if err != nil {
		return nil, err // Run's error starts with the label, which names the host check
	}
	return r, nil
}

// CompileXcrun compiles MSL source with Apple's compiler (xcrun -sdk macosx metal) with fast
// math and contraction off, to an AIR object; it needs macOS with Xcode (else an error wrapping
// cfamily.ErrNoTool).
func CompileXcrun(src string) (*cfamily.Result, error) {
	tool, err := cfamily.LookPath("xcrun")
	if err != nil {
		return nil, fmt.Errorf("metal: Apple's compiler: %w", err)
	}
	args := []string{"-sdk", "macosx", "metal", "-c", "-fno-fast-math", "-ffp-contract=off", "-Wall", "-o", "{out}", "{src}"}
	r, err := cfamily.Run("metal: Apple's compiler (xcrun metal)", tool, args, "kernel.metal", src, nil)
	if err != nil {
		if strings.Contains(err.Error(), "unable to find utility") {
			return nil, fmt.Errorf("metal: %w: xcrun cannot find the metal compiler: %v", cfamily.ErrNoTool, err)
		}
		return nil, err
	}
	return r, nil
}
