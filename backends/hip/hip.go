// Package hip emits HIP C++ for AMD GPUs from onesource kernels and validates it with the real
// compilers.
//
// Emit lowers a kernel for one gfx target (the capabilities come from a per-architecture table:
// the packed int8 dot product is __builtin_amdgcn_sdot4 without clamp where the chip has it,
// __builtin_amdgcn_sudot4 with both operands signed on RDNA3, and unpack + multiply-add
// elsewhere) and prints it through the shared C-family printer (package backends/cfamily). The
// text is one `extern "C" __global__` function per kernel, launched with blockDim equal to the
// kernel's workgroup size, the buffers then the parameters as arguments.
//
// Numeric contract: the file starts with `#pragma clang fp contract(off)` and uses plain
// operators; build with -ffp-contract=off and HIP's default -fhip-fp32-correctly-rounded-divide-sqrt
// (so / and sqrtf are correctly rounded), without -ffast-math or flush-to-zero. f16 arithmetic
// is done in f32 and rounded back; f16 division goes through os_div_f16, an f32 division hidden
// from LLVM by an empty asm so it is not narrowed to AMDGPU's f16 division sequence.
//
// Shuffles assume only that xor masks below 32 stay inside aligned groups of 32 lanes, which
// holds for wave32 and wave64 alike, so Caps.SubgroupSize is 32 on every target.
//
// CompileClang and CompileHIPCC compile the text to an AMDGPU code object (or, where the linker
// or the ROCm device library for the target is missing, to AMDGPU assembly, and say so); a
// missing compiler gives an error wrapping cfamily.ErrNoTool.
//
// The runtime (runtime*.go) runs the text on an AMD GPU through libamdhip64 and HIPRTC, loaded at
// run time without cgo (LibraryEnv, HIPRTCLibraryEnv): Available, Devices and Open; a Device
// compiles (Compile, CompileHIPRTC) or loads (Load) a Kernel, allocates Buffers, and launches
// synchronously (Launch), in a timed loop (Bench), or as a Stream of launches on Views (a
// buffer's address plus an offset) enqueued back to back on one HIP stream and waited for once;
// Stats counts submissions, waits, launches and host copies. The Device is the one driver of
// internal/gpudrv, shared with package cuda; this package supplies the HIP spellings of its
// calls, the hipError_t names, the attribute numbers, gcnArchName, DeviceInfo and HIPRTC's target
// checks. OpenEmulated opens the same Device over host emulation of the text (package
// backends/cfamily/host, level H), for machines without a GPU. An error that says the runtime
// cannot be used here wraps ErrUnavailable.
package hip

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Generic is the architecture name for text that runs on every AMD GPU (no packed dot).
const Generic = ""

// The packed int8 dot spellings: clamp false is the non-saturating product.
const (
	dotSdot4  = "__builtin_amdgcn_sdot4((int)%[1]s, (int)%[2]s, 0, false)"
	dotSudot4 = "__builtin_amdgcn_sudot4(true, (int)%[1]s, true, (int)%[2]s, 0, false)"
)

// DotTable maps a gfx target to its packed int8 dot spelling. Targets not listed use unpack +
// multiply-add (lowered with Caps.DotI8x4 false). Every entry was checked by compiling with clang.
var DotTable = map[string]string{
	"gfx906": dotSdot4, "gfx908": dotSdot4, "gfx90a": dotSdot4, "gfx940": dotSdot4,
	"gfx1011": dotSdot4, "gfx1012": dotSdot4,
	"gfx1030": dotSdot4, "gfx1031": dotSdot4, "gfx1032": dotSdot4, "gfx1033": dotSdot4,
	"gfx1034": dotSdot4, "gfx1035": dotSdot4, "gfx1036": dotSdot4,
	"gfx1100": dotSudot4, "gfx1101": dotSudot4, "gfx1102": dotSudot4, "gfx1103": dotSudot4,
}

var archRE = regexp.MustCompile(`^gfx[0-9a-f]+$`)

// baseArch strips target features ("gfx90a:xnack-" -> "gfx90a") and checks the name.
func baseArch(arch string) (string, error) {
	base, _, _ := strings.Cut(arch, ":")
	if arch != Generic && !archRE.MatchString(base) {
		return "", fmt.Errorf("hip: %q is not a gfx target name (like gfx90a or gfx1030), nor hip.Generic", arch)
	}
	return base, nil
}

// CapsFor returns the lowering capabilities of an architecture: subgroup size 32, f16
// arithmetic, the packed dot where DotTable has it and the native mma island where IslandTable
// has it.
func CapsFor(arch string) (lower.Caps, error) {
	base, err := baseArch(arch)
	if err != nil {
		return lower.Caps{}, err
	}
	_, dot := DotTable[base]
	return islandCaps(lower.Caps{SubgroupSize: 32, DotI8x4: dot, Float16: true, ExactFma: true, AtomicFloatAdd: true}, base), nil
}

// DialectFor returns the HIP table of the C-family printer for an architecture (Generic: no
// packed dot).
func DialectFor(arch string) (*cfamily.Dialect, error) {
	caps, err := CapsFor(arch)
	if err != nil {
		return nil, err
	}
	base, _ := baseArch(arch)
	target := "any AMD GPU (generic)"
	if arch != Generic {
		target = arch
	}
	var islands [ir.IslandCount]string
	if b, ok := IslandTable[base]; ok {
		islands[ir.IslandMMAI8] = b.call
	}
	return &cfamily.Dialect{
		Islands: islands,
		Name:    "hip",
		Target:  target,
		Family:  cfamily.FamilyCUDA,
		Caps:    caps,
		Notes: []string{
			"Numeric contract: `#pragma clang fp contract(off)` below; build with -ffp-contract=off (required), without -ffast-math,",
			"-fgpu-flush-denormals-to-zero or -fno-hip-fp32-correctly-rounded-divide-sqrt, so / and sqrtf are correctly rounded.",
			"Launch with blockDim = the workgroup size below; arguments are the buffers (device pointers), then the parameters.",
		},
		Prelude:    prelude,
		F16:        "_Float16",
		HelperQual: "static __device__ __forceinline__",
		F32:        cfamily.FloatOps{Sqrt: "sqrtf(%[1]s)", Floor: "floorf(%[1]s)", Abs: "fabsf(%[1]s)", Fma: "fmaf(%[1]s, %[2]s, %[3]s)"},
		F64:        cfamily.FloatOps{Sqrt: "sqrt(%[1]s)", Floor: "floor(%[1]s)", Abs: "fabs(%[1]s)"},
		F16Div:     "os_div_f16(%[1]s, %[2]s)",
		Barrier:    "__syncthreads()",
		ShuffleXor: "__shfl_xor(%[1]s, %[2]s)",
		Shuffle:    "__shfl(%[1]s, %[2]s)",
		Dot:        DotTable[base],
		Native:     hipNative,
		Reserved: []string{"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
			"atomicAdd", "atomicMin", "atomicMax", "atomicExch", "atomicCAS",
			"fmaf", "__expf", "exp2f", "__logf", "__log2f", "__sinf", "__cosf", "tanhf", "__powf", "rsqrtf"},
	}, nil
}

// hipNative spells OpNative: HIP's fast intrinsics (__expf, __logf, __sinf, __powf, ...) where
// there is one, else the device library function (exp2f, tanhf, rsqrtf).
var hipNative = [ir.NativeCount]string{
	ir.NativeExp: "__expf(%[1]s)", ir.NativeExp2: "exp2f(%[1]s)", ir.NativeLog: "__logf(%[1]s)",
	ir.NativeLog2: "__log2f(%[1]s)", ir.NativeSin: "__sinf(%[1]s)", ir.NativeCos: "__cosf(%[1]s)",
	ir.NativeTanh: "tanhf(%[1]s)", ir.NativePow: "__powf(%[1]s, %[2]s)", ir.NativeRsqrt: "rsqrtf(%[1]s)",
}

// Emit lowers k for the gfx target arch (Generic for any AMD GPU) and prints it.
func Emit(k *ir.Kernel, arch string) (string, error) {
	src, _, err := EmitLowered(k, arch)
	return src, err
}

// EmitLowered is Emit that also returns the lowered kernel the text prints: its buffers are the
// text's pointer arguments, its parameters the scalars after them, then one element count per
// buffer of LenRefs.
func EmitLowered(k *ir.Kernel, arch string) (string, *ir.Kernel, error) {
	if k == nil {
		return "", nil, fmt.Errorf("hip: Emit: nil kernel")
	}
	d, err := DialectFor(arch)
	if err != nil {
		return "", nil, err
	}
	low, err := lower.Run(k, d.Caps)
	if err != nil {
		return "", nil, err
	}
	src, err := cfamily.Print(low, d)
	return src, low, err
}

// divF16 divides in f32 and rounds to f16 (bit for bit the correctly rounded f16 quotient).
// The empty asm hides the f32 quotient from LLVM, which would otherwise narrow the division to
// an f16 one whose AMDGPU lowering is not correctly rounded in every LLVM version.
const divF16 = `static __device__ __forceinline__ _Float16 os_div_f16(_Float16 a, _Float16 b) {
	float q = (float)a / (float)b;
#if defined(__HIP_DEVICE_COMPILE__)
	__asm__("" : "+v"(q));
#endif
	return (_Float16)q;
}
`

// prelude includes the HIP runtime header when compiling as HIP (hipRTC has it built in; other
// compilers, such as a host emulation, bring their own), turns contraction off and defines the
// f16 division helper when the kernel divides f16 values.
func prelude(u *cfamily.Uses) string {
	s := "#if defined(__HIP__) && !defined(__HIPCC_RTC__)\n#include <hip/hip_runtime.h>\n#endif\n#pragma clang fp contract(off)\n"
	if u.Has("os_div_f16") {
		s += divF16
	}
	if u.Has("os_mma_i8_mfma") {
		s += mmaMFMA
	}
	if u.Has("os_mma_i8_wmma32") {
		s += mmaWMMA
	}
	return s
}
