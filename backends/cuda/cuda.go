// Package cuda emits CUDA C++ from onesource kernels and validates it with the real compilers.
//
// Emit lowers a kernel with Caps (32-lane warps, __dp4a, f16 arithmetic) and prints it through
// the shared C-family printer (package backends/cfamily) with Dialect. The text is one
// `extern "C" __global__` function per kernel, launched with blockDim equal to the kernel's
// workgroup size and the buffers (device pointers) then the parameters (float, int, unsigned
// int) as arguments, in order; the package documentation of cfamily gives the full form.
//
// Numeric contract: f32 + - * / and sqrt are written __fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn
// and __fsqrt_rn, which no compiler may contract into FMA; f16 arithmetic is done in f32 and
// rounded back. The same text compiles with NVRTC, nvcc, and clang with or without the CUDA
// headers: for clang without them (-nocudainc) the prelude declares the few intrinsics the
// kernel uses, the rounded operations as inline PTX. Build without flush-to-zero (nvcc's default;
// clang: no -fcuda-flush-denormals-to-zero).
//
// CompileClang and CompileNVCC run clang (-x cuda --cuda-device-only -nocudainc -nocudalib)
// and nvcc to PTX for an architecture (Archs: sm_80 and sm_90); a missing compiler gives an error
// wrapping cfamily.ErrNoTool.
//
// The runtime (runtime*.go) runs the text on an NVIDIA GPU through the driver API and NVRTC,
// loaded at run time without cgo (LibraryEnv, NVRTCLibraryEnv): Available, Devices and Open; a
// Device compiles (Compile, CompileNVRTC) or loads (Load) a Kernel, allocates Buffers, and
// launches synchronously (Launch), in a timed loop (Bench), or as a Stream of launches on Views
// (a buffer's address plus an offset) enqueued back to back on one CUDA stream and waited for
// once; Stats counts submissions, waits, launches and host copies. The Device is the one driver
// of internal/gpudrv, shared with package hip; this package supplies the CUDA spellings of its
// calls, the CUresult names, the attribute numbers, cuInit's and the primary context's handling,
// DeviceInfo and NVRTC's targets. OpenEmulated opens the same Device over host emulation of the
// text (package backends/cfamily/host, level H), for machines without a GPU. An error that says
// the runtime cannot be used here wraps ErrUnavailable.
package cuda

import (
	"fmt"
	"strings"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Caps is what the CUDA target offers the lowering: shuffles within 32-lane warps, the packed
// int8 dot product (__dp4a, sm_61 and newer) and f16 arithmetic.
var Caps = lower.Caps{SubgroupSize: 32, DotI8x4: true, Float16: true, ExactFma: true, AtomicFloatAdd: true}

// Dialect is the CUDA table of the C-family printer.
var Dialect = &cfamily.Dialect{
	Name:   "cuda",
	Target: "CUDA sm_61 and newer (tested: sm_80, sm_90)",
	Family: cfamily.FamilyCUDA,
	Caps:   Caps,
	Notes: []string{
		"Numeric contract: f32 + - * / sqrt are __fadd_rn/__fsub_rn/__fmul_rn/__fdiv_rn/__fsqrt_rn (never contracted into FMA);",
		"build without flush-to-zero (nvcc/NVRTC: -ftz=false, the default; -fmad=false is harmless), clang: -ffp-contract=off.",
		"Launch with blockDim = the workgroup size below; arguments are the buffers (device pointers), then the parameters.",
	},
	Prelude:    prelude,
	F16:        "__half",
	HelperQual: "static __device__ __forceinline__",
	F32: cfamily.FloatOps{
		Add: "__fadd_rn(%[1]s, %[2]s)", Sub: "__fsub_rn(%[1]s, %[2]s)", Mul: "__fmul_rn(%[1]s, %[2]s)", Div: "__fdiv_rn(%[1]s, %[2]s)",
		Sqrt: "__fsqrt_rn(%[1]s)", Floor: "floorf(%[1]s)", Abs: "fabsf(%[1]s)",
		Fma: "__fmaf_rn(%[1]s, %[2]s, %[3]s)",
	},
	F64: cfamily.FloatOps{
		Add: "__dadd_rn(%[1]s, %[2]s)", Sub: "__dsub_rn(%[1]s, %[2]s)", Mul: "__dmul_rn(%[1]s, %[2]s)", Div: "__ddiv_rn(%[1]s, %[2]s)",
		Sqrt: "__dsqrt_rn(%[1]s)", Floor: "floor(%[1]s)", Abs: "fabs(%[1]s)",
	},
	Barrier:    "__syncthreads()",
	ShuffleXor: "__shfl_xor_sync(%[3]s, %[1]s, %[2]s)",
	Shuffle:    "__shfl_sync(%[3]s, %[1]s, %[2]s)",
	Dot:        "__dp4a((int)%[1]s, (int)%[2]s, 0)",
	Native:     cudaNative,
	Islands:    [ir.IslandCount]string{ir.IslandMMAI8: "os_mma_i8_sm80(%[1]s, %[2]s, %[3]s, %[4]s, %[5]s, %[6]s, %[7]s, %[8]s)"},
	Reserved: []string{"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
		"atomicAdd", "atomicMin", "atomicMax", "atomicExch", "atomicCAS",
		"__fmaf_rn", "__expf", "exp2f", "__logf", "__log2f", "__sinf", "__cosf", "tanhf", "__powf", "rsqrtf"},
}

// cudaNative spells OpNative: CUDA's fast intrinsics (__expf, __logf, __sinf, __powf, ...)
// where there is one, else the library function (exp2f, tanhf, rsqrtf). HIP uses the same names.
var cudaNative = [ir.NativeCount]string{
	ir.NativeExp: "__expf(%[1]s)", ir.NativeExp2: "exp2f(%[1]s)", ir.NativeLog: "__logf(%[1]s)",
	ir.NativeLog2: "__log2f(%[1]s)", ir.NativeSin: "__sinf(%[1]s)", ir.NativeCos: "__cosf(%[1]s)",
	ir.NativeTanh: "tanhf(%[1]s)", ir.NativePow: "__powf(%[1]s, %[2]s)", ir.NativeRsqrt: "rsqrtf(%[1]s)",
}

// Emit lowers k for CUDA (Caps) and prints it. Errors name the Go source position of the
// offending instruction or resource.
func Emit(k *ir.Kernel) (string, error) {
	src, _, err := EmitLowered(k)
	return src, err
}

// EmitLowered is Emit that also returns the lowered kernel the text prints: its buffers are the
// text's pointer arguments, its parameters the scalars after them, then one element count per
// buffer of LenRefs.
func EmitLowered(k *ir.Kernel) (string, *ir.Kernel, error) {
	if k == nil {
		return "", nil, fmt.Errorf("cuda: Emit: nil kernel")
	}
	low, err := lower.Run(k, Caps)
	if err != nil {
		return "", nil, err
	}
	src, err := cfamily.Print(low, Dialect)
	return src, low, err
}

// bareDecls are the declarations clang without the CUDA headers needs, per name the printer
// may use, in printing order.
var bareDecls = []struct{ name, text string }{
	{"__fadd_rn", `static __device__ __forceinline__ float __fadd_rn(float a, float b) { float r; asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }`},
	{"__fsub_rn", `static __device__ __forceinline__ float __fsub_rn(float a, float b) { float r; asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }`},
	{"__fmul_rn", `static __device__ __forceinline__ float __fmul_rn(float a, float b) { float r; asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }`},
	{"__fdiv_rn", `static __device__ __forceinline__ float __fdiv_rn(float a, float b) { float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }`},
	{"__fsqrt_rn", `static __device__ __forceinline__ float __fsqrt_rn(float a) { float r; asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }`},
	{"__dadd_rn", `static __device__ __forceinline__ double __dadd_rn(double a, double b) { double r; asm("add.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); return r; }`},
	{"__dsub_rn", `static __device__ __forceinline__ double __dsub_rn(double a, double b) { double r; asm("sub.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); return r; }`},
	{"__dmul_rn", `static __device__ __forceinline__ double __dmul_rn(double a, double b) { double r; asm("mul.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); return r; }`},
	{"__ddiv_rn", `static __device__ __forceinline__ double __ddiv_rn(double a, double b) { double r; asm("div.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); return r; }`},
	{"__dsqrt_rn", `static __device__ __forceinline__ double __dsqrt_rn(double a) { double r; asm("sqrt.rn.f64 %0, %1;" : "=d"(r) : "d"(a)); return r; }`},
	{"__fmaf_rn", `static __device__ __forceinline__ float __fmaf_rn(float a, float b, float c) { float r; asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c)); return r; }`},
	{"__expf", `static __device__ __forceinline__ float __expf(float x) { float r; asm("{ .reg .f32 t; mul.rn.f32 t, %1, 0f3FB8AA3B; ex2.approx.f32 %0, t; }" : "=f"(r) : "f"(x)); return r; }`},
	{"exp2f", `static __device__ __forceinline__ float exp2f(float x) { float r; asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }`},
	{"__log2f", `static __device__ __forceinline__ float __log2f(float x) { float r; asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }`},
	{"__logf", `static __device__ __forceinline__ float __logf(float x) { float r; asm("{ .reg .f32 t; lg2.approx.f32 t, %1; mul.rn.f32 %0, t, 0f3F317218; }" : "=f"(r) : "f"(x)); return r; }`},
	{"__sinf", `static __device__ __forceinline__ float __sinf(float x) { float r; asm("sin.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }`},
	{"__cosf", `static __device__ __forceinline__ float __cosf(float x) { float r; asm("cos.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }`},
	{"__powf", `static __device__ __forceinline__ float __powf(float x, float y) { float r; asm("{ .reg .f32 t; lg2.approx.f32 t, %1; mul.rn.f32 t, t, %2; ex2.approx.f32 %0, t; }" : "=f"(r) : "f"(x), "f"(y)); return r; }`},
	{"tanhf", `static __device__ __forceinline__ float tanhf(float x) { float r; asm("{ .reg .f32 t; mul.rn.f32 t, %1, 0f4038AA3B; ex2.approx.f32 t, t; add.rn.f32 t, t, 0f3F800000; div.rn.f32 t, 0f40000000, t; sub.rn.f32 %0, 0f3F800000, t; }" : "=f"(r) : "f"(x)); return r; }`},
	{"rsqrtf", `static __device__ __forceinline__ float rsqrtf(float x) { float r; asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }`},
	{"fabsf", `static __device__ __forceinline__ float fabsf(float x) { return __builtin_fabsf(x); }`},
	{"floorf", `static __device__ __forceinline__ float floorf(float x) { return __builtin_floorf(x); }`},
	{"fabs", `static __device__ __forceinline__ double fabs(double x) { return __builtin_fabs(x); }`},
	{"floor", `static __device__ __forceinline__ double floor(double x) { return __builtin_floor(x); }`},
	{"__float_as_uint", `static __device__ __forceinline__ unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }`},
	{"__float_as_int", `static __device__ __forceinline__ int __float_as_int(float x) { return __builtin_bit_cast(int, x); }`},
	{"__uint_as_float", `static __device__ __forceinline__ float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }`},
	{"__int_as_float", `static __device__ __forceinline__ float __int_as_float(int x) { return __builtin_bit_cast(float, x); }`},
	{"__shfl_xor_sync", `static __device__ __forceinline__ int __shfl_xor_sync(unsigned int mask, int v, int m) { return __nvvm_shfl_sync_bfly_i32(mask, v, m, 0x1f); }
static __device__ __forceinline__ unsigned int __shfl_xor_sync(unsigned int mask, unsigned int v, int m) { return (unsigned int)__nvvm_shfl_sync_bfly_i32(mask, (int)v, m, 0x1f); }
static __device__ __forceinline__ float __shfl_xor_sync(unsigned int mask, float v, int m) { return __nvvm_shfl_sync_bfly_f32(mask, v, m, 0x1f); }`},
	{"__shfl_sync", `static __device__ __forceinline__ int __shfl_sync(unsigned int mask, int v, int l) { return __nvvm_shfl_sync_idx_i32(mask, v, l, 0x1f); }
static __device__ __forceinline__ unsigned int __shfl_sync(unsigned int mask, unsigned int v, int l) { return (unsigned int)__nvvm_shfl_sync_idx_i32(mask, (int)v, l, 0x1f); }
static __device__ __forceinline__ float __shfl_sync(unsigned int mask, float v, int l) { return __nvvm_shfl_sync_idx_f32(mask, v, l, 0x1f); }`},
	{"atomicAdd", `static __device__ __forceinline__ int atomicAdd(int* p, int v) { return __nvvm_atom_add_gen_i(p, v); }
static __device__ __forceinline__ unsigned int atomicAdd(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_add_gen_i((int*)p, (int)v); }
static __device__ __forceinline__ float atomicAdd(float* p, float v) { return __nvvm_atom_add_gen_f(p, v); }`},
	{"atomicMin", `static __device__ __forceinline__ int atomicMin(int* p, int v) { return __nvvm_atom_min_gen_i(p, v); }
static __device__ __forceinline__ unsigned int atomicMin(unsigned int* p, unsigned int v) { return __nvvm_atom_min_gen_ui(p, v); }`},
	{"atomicMax", `static __device__ __forceinline__ int atomicMax(int* p, int v) { return __nvvm_atom_max_gen_i(p, v); }
static __device__ __forceinline__ unsigned int atomicMax(unsigned int* p, unsigned int v) { return __nvvm_atom_max_gen_ui(p, v); }`},
	{"atomicExch", `static __device__ __forceinline__ int atomicExch(int* p, int v) { return __nvvm_atom_xchg_gen_i(p, v); }
static __device__ __forceinline__ unsigned int atomicExch(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_xchg_gen_i((int*)p, (int)v); }`},
	{"atomicCAS", `static __device__ __forceinline__ int atomicCAS(int* p, int c, int v) { return __nvvm_atom_cas_gen_i(p, c, v); }
static __device__ __forceinline__ unsigned int atomicCAS(unsigned int* p, unsigned int c, unsigned int v) { return (unsigned int)__nvvm_atom_cas_gen_i((int*)p, (int)c, (int)v); }`},
	{"atomicAnd", `static __device__ __forceinline__ int atomicAnd(int* p, int v) { return __nvvm_atom_and_gen_i(p, v); }
static __device__ __forceinline__ unsigned int atomicAnd(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_and_gen_i((int*)p, (int)v); }`},
	{"atomicOr", `static __device__ __forceinline__ int atomicOr(int* p, int v) { return __nvvm_atom_or_gen_i(p, v); }
static __device__ __forceinline__ unsigned int atomicOr(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_or_gen_i((int*)p, (int)v); }`},
	{"atomicXor", `static __device__ __forceinline__ int atomicXor(int* p, int v) { return __nvvm_atom_xor_gen_i(p, v); }
static __device__ __forceinline__ unsigned int atomicXor(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_xor_gen_i((int*)p, (int)v); }`},
	{"__dp4a", `static __device__ __forceinline__ int __dp4a(int a, int b, int c) { int d; asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); return d; }`},
}

// prelude adapts the text to the compiler: a CUDA toolkit front end (NVRTC, nvcc, clang with
// the CUDA headers) has every intrinsic; clang without the headers gets declarations of the ones
// the kernel uses. Other compilers (a host emulation) see nothing and bring their own.
func prelude(u *cfamily.Uses) string {
	var b strings.Builder
	b.WriteString("#if defined(__CUDACC_RTC__) || defined(__NVCC__) || defined(__CLANG_CUDA_RUNTIME_WRAPPER_H__)\n")
	b.WriteString("// A CUDA toolkit front end (NVRTC, nvcc, or clang with the CUDA headers) declares the intrinsics.\n")
	if u.F16 {
		b.WriteString("#include <cuda_fp16.h>\n")
	}
	b.WriteString("#elif defined(__clang__) && defined(__CUDA__)\n")
	b.WriteString("// clang without the CUDA headers (-nocudainc): the declarations this kernel needs. The rounded\n")
	b.WriteString("// float operations are inline PTX with an explicit .rn, which ptxas never contracts.\n")
	b.WriteString("#define __global__ __attribute__((global))\n")
	b.WriteString("#define __device__ __attribute__((device))\n")
	b.WriteString("#define __shared__ __attribute__((shared))\n")
	b.WriteString("#define __forceinline__ __inline__ __attribute__((always_inline))\n")
	b.WriteString("#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))\n")
	b.WriteString("#include <__clang_cuda_builtin_vars.h>\n")
	if u.F16 {
		b.WriteString("typedef __fp16 __half; // storage only: the kernel computes f16 in f32\n")
	}
	for _, d := range bareDecls {
		if u.Has(d.name) {
			b.WriteString(d.text)
			b.WriteByte('\n')
		}
	}
	b.WriteString("#endif\n")
	if u.Has("os_mma_i8_sm80") {
		b.WriteString(mmaHelper)
	}
	return b.String()
}
