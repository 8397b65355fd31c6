// Package metal emits the Metal Shading Language (MSL) from onesource kernels and checks it:
// with Apple's compiler (xcrun metal) where present, else with a host syntax-and-type check.
//
// Emit lowers a kernel with Caps (32-lane SIMD groups, no packed int8 dot: unpack +
// multiply-add, f16 arithmetic) and prints it through the shared C-family printer (package
// backends/cfamily) with Dialect: one `kernel void` function whose arguments are the buffers
// ([[buffer(0)]] ...), a `constant <kernel>_params& params [[buffer(<number of buffers>)]]`
// struct of the parameters when there are any, and the fixed builtin list gid, lid, wgid, nwg,
// lidx, sgsize, lane, sgid (see package cfamily for the full form).
//
// Numeric contract: plain operators; the library must be built with fast math off and
// contraction off (MTLCompileOptions.mathMode = .safe, or fastMathEnabled = NO; xcrun metal
// -fno-fast-math -ffp-contract=off), under which MSL's + - * / and sqrt are correctly rounded.
// f16 arithmetic is done in f32 and rounded back.
//
// HostCheck is NOT Apple's compiler: it compiles the text with clang++ in C++-for-OpenCL mode
// against a shim metal_stdlib (shim/metal_stdlib) that maps device, constant and threadgroup to
// distinct clang address spaces, so syntax errors, type errors and address-space mix-ups are
// caught; every result and error it gives says "host check (not Apple's compiler)".
package metal

import (
	"fmt"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Caps is what Metal offers the lowering: 32-lane SIMD-group shuffles and f16 arithmetic; no
// packed int8 dot (it is unpacked into multiply-adds).
var Caps = lower.Caps{SubgroupSize: 32, DotI8x4: false, Float16: true, ExactFma: true}

// Dialect is the MSL table of the C-family printer.
var Dialect = &cfamily.Dialect{
	Name:   "metal",
	Target: "Apple GPUs, MSL 2.1 and newer",
	Family: cfamily.FamilyMetal,
	Caps:   Caps,
	Notes: []string{
		"Numeric contract: build with fast math off and contraction off (MTLCompileOptions.mathMode = .safe",
		"or fastMathEnabled = NO; xcrun metal -fno-fast-math -ffp-contract=off): + - * / sqrt are then correctly rounded.",
		"Dispatch threadgroups of the workgroup size below; buffers at [[buffer(i)]] in order, the parameter struct after them.",
	},
	Prelude:    prelude,
	F16:        "half",
	HelperQual: "static inline",
	F32:        cfamily.FloatOps{Sqrt: "sqrt(%[1]s)", Floor: "floor(%[1]s)", Abs: "fabs(%[1]s)", Fma: "fma(%[1]s, %[2]s, %[3]s)"},
	Native: [ir.NativeCount]string{
		ir.NativeExp: "fast::exp(%[1]s)", ir.NativeExp2: "fast::exp2(%[1]s)", ir.NativeLog: "fast::log(%[1]s)",
		ir.NativeLog2: "fast::log2(%[1]s)", ir.NativeSin: "fast::sin(%[1]s)", ir.NativeCos: "fast::cos(%[1]s)",
		ir.NativeTanh: "fast::tanh(%[1]s)", ir.NativePow: "fast::pow(%[1]s, %[2]s)", ir.NativeRsqrt: "fast::rsqrt(%[1]s)",
	},
	Barrier:    "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device)",
	ShuffleXor: "simd_shuffle_xor(%[1]s, %[2]s)",
	Shuffle:    "simd_shuffle(%[1]s, %[2]s)",
	Reserved: []string{"gid", "lid", "wgid", "nwg", "lidx", "sgsize", "lane", "sgid", "params",
		"atomic_int", "atomic_uint", "memory_order", "memory_order_relaxed", "mem_flags",
		"atomic_fetch_add_explicit", "atomic_fetch_min_explicit", "atomic_fetch_max_explicit",
		"atomic_exchange_explicit", "atomic_compare_exchange_weak_explicit",
		"atomic_fetch_and_explicit", "atomic_fetch_or_explicit", "atomic_fetch_xor_explicit", "simd_shuffle",
		"threadgroup_barrier", "simd_shuffle_xor", "as_type", "vec", "fma", "fast"},
}

// Emit lowers k for Metal (Caps) and prints it as MSL.
func Emit(k *ir.Kernel) (string, error) {
	if k == nil {
		return "", fmt.Errorf("metal: Emit: nil kernel")
	}
	low, err := lower.Run(k, Caps)
	if err != nil {
		return "", err
	}
	return cfamily.Print(low, Dialect)
}

func prelude(u *cfamily.Uses) string {
	return "#include <metal_stdlib>\nusing namespace metal;\n"
}
