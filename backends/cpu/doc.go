// Package cpu is onesource's CPU backend: an executor of the lowered IR in pure Go (no cgo, no
// driver, no C compiler), so any DSL kernel runs on any machine Go runs on, bit for bit as on
// every other backend.
//
// # How it runs a kernel
//
// Compile lowers a kernel for Caps (subgroups of SubgroupSize = 32 invocations, the packed
// 4 x i8 dot product, f16 arithmetic) and compiles it once into Go closures: one step per IR
// instruction, each running its instruction for every invocation of a workgroup at once over
// arrays of 32-bit words (64-bit for f64), one word per invocation and vector component. A value
// that is the same for every invocation (constants, parameters, workgroup ids, what is computed
// from them only, loads at such an index, variables only ever set to such values under uniform
// control) is computed once. Extracts and bit-preserving casts take no step; places in the frame
// are reused once a value is dead. Nothing interprets ir.Inst at run time.
//
// The invocations of a workgroup run in lockstep: every step runs for all invocations that are
// active before the next step starts, with a mask for divergent control flow (an if whose
// condition differs between invocations runs each branch for its invocations; a loop runs until
// no invocation remains in it; break, continue and return take invocations out until the
// construct they leave ends). So:
//
//   - OpBarrier is exact: when an invocation passes a barrier every other invocation of the
//     workgroup has finished everything before it (and every store is visible).
//   - OpShuffleXor and OpShuffle read the partner invocation's value of the same instruction,
//     within subgroups of SubgroupSize consecutive local indices. An invocation whose partner
//     lane is past the subgroup or the workgroup, or is not running the instruction (it took
//     the other branch, or returned), reads its own value.
//   - Atomics run invocation by invocation in local index order within a workgroup; atomics on
//     buffers are real atomic operations (sync/atomic), since other workgroups run concurrently.
//   - Shared arrays and variables start zeroed in every workgroup. Two invocations of one
//     workgroup storing to one element without a barrier (a race on a GPU) leave the value of
//     the higher local index: deterministic, but not a promise other backends keep. Workgroups
//     that store to one buffer element without atomics race as they would on a device (the
//     outcome is unspecified, and Go's race detector reports it); the plain loads and stores of
//     a buffer the kernel also updates atomically are atomic word accesses.
//   - A workgroup whose invocations wait on each other through memory without a barrier (a spin
//     lock taken by one invocation) never ends, as on a lockstep GPU; workgroups that wait on
//     other workgroups may wait for one that is not running.
//
// Lockstep is chosen over one goroutine per invocation meeting at a reusable barrier: such a
// meeting (needed at every barrier and every shuffle) costs about 8 µs for 32 invocations and 26
// µs for 128 on a 2-core machine (BenchmarkGoroutineBarrier), while a lockstep step costs under
// a nanosecond per invocation (BenchmarkLaneOps) and a whole 128-invocation workgroup of a
// quantized matvec row about 100 µs.
//
// Workgroups are spread over Workers goroutines (runtime.NumCPU() by default), each with its
// own frame, taking workgroups in dispatch order (x fastest, then y, then z). A kernel's results
// do not depend on the number of workers or on their timing, except through atomics that race
// between workgroups (as on every device).
//
// # The numeric contract
//
// The executor follows package oracle's contract and, where the IR leaves a result undefined,
// the C-family printer's os_* helpers (package backends/cfamily), so it gives the same bytes as
// the other backends:
//
//   - f32 + - * / and sqrt are IEEE binary32, round to nearest even, never contracted (each
//     step rounds); denormals are kept; min is b < a ? b : a, max a > b ? a : b; neg and abs
//     flip or clear the sign bit. f64 the same in binary64.
//   - f16 arithmetic is done in f32 and rounded to f16 (nearest even), which is the correctly
//     rounded f16 operation for + - * / and sqrt; f32 -> f16 rounds to nearest even (overflow
//     to infinity, a NaN to 0x7e00 with its sign), f64 -> f16 in one rounding; f16 -> f32 is
//     exact. Integers go to f16 through f32.
//   - Integers wrap (two's complement); shift counts are taken modulo 32; signed >> is
//     arithmetic. x/0 = -1 (0xffffffff unsigned), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0.
//   - float -> int truncates toward zero; NaN and out-of-range values give 0x80000000 (f32 ->
//     i32 in range [-2^31, 2^31), -> u32 in (-1, 2^32); f64 -> i32 in (-2^31-1, 2^31)). i32 <->
//     u32 keep the bits. Narrow buffer and shared elements widen on load (sign or zero
//     extension) and wrap on store.
//   - The packed 4 x i8 dot product does not saturate.
//   - OpFma rounds once (the exact a*b+c, nearest even). OpSubgroupReduce combines in the
//     canonical butterfly order that package lower expands it to (bit for bit the expansion).
//     OpNative is Go's math package in float64, rounded to f32: declared inexact, as every
//     device's own functions are.
//
// # Errors
//
// Every buffer and shared-array access is bounds checked: an index past the bound buffer's
// element count (len/stride, as OpLen reads it) or a negative i32 index stops the dispatch with
// an *OutOfBoundsError naming the kernel's Go source line, the array, the index and the
// invocation; of several, the first workgroup's in dispatch order. Nothing panics out of the
// package: a fault of the executor itself is returned as an internal error. An operation or
// type the executor does not implement (one added to the IR after it, OpReduce in a kernel not
// lowered for Caps, narrow or bf16 values lower should have legalized) is an *ir.Error at the
// instruction's line when the kernel is compiled.
package cpu
