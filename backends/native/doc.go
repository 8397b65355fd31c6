// Package native is onesource's native CPU backend: a kernel's lowered IR emitted as C in
// lockstep form, built by the host's C compiler (clang or gcc) into a shared object for this
// machine's CPU, loaded without cgo (internal/dynlib, through purego) and run on its cores. It
// gives the bytes every other backend gives (the numeric contract of package oracle), at the
// speed of compiled vector code.
//
// # How it runs a kernel
//
// Compile lowers a kernel for Caps (subgroups of VL = 16 invocations, the packed 4 x i8 dot
// product, an exact fma, f32 atomic adds), emits C (EmitLowered) and builds it, or finds it built:
// shared objects are cached by a hash of the source, the compiler and its version, the flags and
// the CPU (internal/cbuild, under internal/cachedir's "native" directory), so a second start
// compiles nothing. A shared object is loaded once per process and never unloaded.
//
// The emitted code is the Go executor's lockstep model (package backends/cpu), compiled instead
// of interpreted:
//
//   - The invocations of a workgroup are laid on vectors of VL lanes of 32 bits (GCC and clang
//     vector extensions; the compiler maps them onto the CPU's registers: one AVX-512 register,
//     two AVX2 ones, four NEON ones). A value every invocation shares (constants, parameters,
//     workgroup ids, what is computed from them only, loads at such an index, variables only
//     ever set to such values under uniform control: cpu.Uniform, the executor's analysis) is
//     one C scalar, computed once.
//   - Divergent control flow runs under lane masks: an if whose condition differs between lanes
//     runs each branch that some lane takes, for its lanes; a loop runs until no lane remains in
//     it; break, continue and return take lanes out until the construct they leave ends. An if or
//     loop whose condition is uniform is plain C control flow.
//   - A subgroup is one vector, so a shuffle is a lane permutation within it (a constant one
//     where the lane mask is a constant); a lane whose partner does not exist or does not run the
//     shuffle reads its own value, as on the executor.
//   - A workgroup of more than VL invocations is several vectors (chunks). Its body is cut at
//     the barriers into regions, each run chunk after chunk; what a region leaves for a later
//     one (values, variables, the lanes still alive) waits in the worker's frame. The ifs and
//     loops that hold a barrier run at the workgroup level: the verifier rejects a barrier under
//     divergent control, so their conditions are uniform. So a barrier is exact: every
//     invocation has finished everything before it when any passes it.
//   - Shared arrays and variables start zeroed in every workgroup. Atomics run lane by lane in
//     local index order; on buffers they are real atomic operations (other workgroups run at the
//     same time on other threads), as are the plain loads and stores of a buffer the kernel
//     also updates atomically. Two lanes of one workgroup storing one element without a barrier
//     leave the value of the higher local index.
//   - Workgroups are spread over Workers threads (runtime.NumCPU() by default), each taking the
//     next workgroup in dispatch order (x fastest, then y, then z) from a shared counter.
//
// # The numeric contract
//
// The C is built with -ffp-contract=off and without fast math, so every f32 + - * / is one IEEE
// operation rounded to nearest even and none is fused into an FMA; sqrt and floor are the C
// library's correctly rounded builtins; denormals are kept (os_run clears the x86 FTZ and DAZ
// bits for the dispatch and restores them). The rules the IR leaves to the backends are the
// cfamily printer's os_* helpers, the same as the executor's: integers wrap, shift counts modulo
// 32, x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN; float -> int truncates, NaN and out-of-range
// values give 0x80000000; f32 -> f16 rounds to nearest even (bit for bit the executor's f2h); the
// packed dot product does not saturate; OpFma is C's fmaf (one rounding); OpNative is the C
// library's function in double, rounded to f32 (declared inexact, as every device's own
// functions are).
//
// # Why lockstep C, built by the host's compiler
//
// The way to machine code was chosen by measuring the candidates of issue 29 on the kernel that
// matters most, matvec q4_0 at 4096 rows of 14336 on 2 threads, each written out as the candidate
// would run it, timed in one run on this 2-core machine while other work ran (so the figures are
// ratios and orders of magnitude, not speeds): the lockstep model as C vector code, 16 lanes a
// vector, built by clang: 17-18 ms; the same with 4 lanes a vector (the most WebAssembly SIMD128
// gives, an upper bound for wazero's compiler): 37-40 ms; the C-family printer's per-invocation
// text compiled as scalar C, invocations in a loop (what printing CUDA-like text for the CPU
// gives: barriers and shuffles need the loop split, and nothing vectorizes across invocations):
// 57-62 ms; the same per-invocation code as Go source (the best Go source written by onesource
// gen could do: Go does not vectorize): 130-220 ms; the Go executor: 370-900 ms. So C, and in the
// lockstep form: a dialect of the C-family printer cannot express it (that printer writes one
// invocation's code, and a lockstep target needs masks where the text has branches), so this
// package has its own emitter, and shares with the rest what is shared: the executor's
// uniformity analysis, its model and its rules for what the IR leaves undefined, and the host
// compiler and its cache (internal/cbuild, which host execution builds through too). clang is
// tried before gcc: at 16 lanes a vector its code was 1.7x gcc's (13 against 22 ms in that run);
// later, with the emitted code leaner, the two were equal on the float path.
//
// # Speed
//
// What the emitted code does to be fast, each measured on matvec at 4096x14336 by the dispatch's
// CPU time per thread (the wall clock on this shared machine was 2-3x it): a uniform value is one
// scalar; a mask is a bit set (os_bits) and loops over the lanes of a mask visit the set ones
// (27% on the float path); a loop exit at the top of a body is mask arithmetic, with a jump to the
// body's end when no lane is left; loads of the same element with no write between are merged
// (the integer path q4_0 from 7.2 to 5.4 ms for both threads: the rows of a workgroup each loaded
// the same activation words); an access whose index the emitter expects to be consecutive across
// the lanes checks that at run time and is then one vector load or store; the matvec cells run
// strided with 4 rows a workgroup by default here (package kernels: 1.4-2x against the blocked
// one-row default). What remains is the gathers: a lane's words of a quantized block lie 18 to
// 210 bytes from its neighbours', so each word of 16 lanes is a gather (about 5 cycles each from
// L1, 3x that from memory); with them replaced by plain arithmetic the integer path q4_0 took 40%
// of its time, the float path 40% (its activations are gathered too). Loading each lane's run of
// words at once and transposing it (16x16 words in 64 shuffles) was tried: 15-35% off q6_K's integer
// path in a hand-written form, nothing on q4_0 (the shuffles compete with the arithmetic for one
// port), and slower than the gathers once each load kept its own out-of-bounds check, so it is
// not done. -O3 and -fno-trapping-math changed nothing measurable. Figures against ggml and the
// decode step: conformance.BenchmarkNativeVsGGML, llama.BenchmarkDecodeStep.
//
// # Errors
//
// Every buffer and shared-array access is bounds checked, lane by lane: an index past the bound
// buffer's element count (len/stride) or a negative i32 index is not accessed (a load gives 0, a
// store is not made) and stops the dispatch with an *OutOfBoundsError naming the kernel's Go
// source line, the array, the index and the invocation; of several, the first workgroup's in
// dispatch order. A canceled context stops the dispatch at the next loop iteration or workgroup.
// Nothing panics out of the package. A machine without a C compiler (or a platform where Go
// cannot load a shared object without cgo) gets errors wrapping ErrUnavailable that say why;
// the engine then serves on the Go executor, saying so.
package native
