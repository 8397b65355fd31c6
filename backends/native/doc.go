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
