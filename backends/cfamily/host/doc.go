// Package host executes emitted CUDA, HIP and MSL kernel text by EMULATION ON THE CPU: level H
// of docs/contracts.md ("executed by host emulation of the emitted source"). It is not a GPU run
// and a result from it is never reported as level X (executed on a real driver).
//
// The emitted text is compiled, unchanged but for one MSL rewrite (below), as plain C++17 by a
// host compiler (g++, or clang++) against small emulation headers embedded in this package:
// oshost_cuda.h for CUDA and HIP, oshost_msl.h (also reachable as <metal_stdlib>) for MSL, both
// on top of oshost_runtime.h. A generated harness main calls the kernel once per lane. What the
// emulation means:
//
//   - Lanes are user-mode fibers on one OS thread (a hand-written x86-64 context switch; other
//     hosts fall back to ucontext, which is correct but much slower). The lanes of a workgroup
//     run round-robin, each until its next barrier or subgroup exchange; workgroups run one
//     after another, so shared (threadgroup) memory is a static array shared by the lanes of the
//     running workgroup. The lane order within a round is selectable (Options.Order) so that a
//     missing barrier shows up as results that depend on the order. A lane that blocks switches
//     straight to the next runnable one, so a round costs one context switch per lane: a
//     256-lane block passing 8 barriers takes about 26 µs on a 2-core x86-64 machine
//     (BenchmarkBlock256x8Barriers; one OS thread per lane costs about 3 ms).
//   - A workgroup barrier releases when every lane has reached it. A barrier some lanes never
//     reach (they returned) and any other state where no lane can proceed is a deadlock, reported
//     as an error naming the lanes and what each waits at; the run never hangs (Options.Timeout
//     bounds a kernel that loops forever).
//   - Shuffles are lockstep: a shuffle is a subgroup-wide exchange point; every lane of the
//     subgroup provides its value before any lane reads. Reading a lane outside the subgroup, or
//     lanes of one subgroup meeting at different exchanges, is an error. The subgroup size
//     (warpSize, threads_per_simdgroup) is Options.SubgroupSize, 32 by default.
//   - Atomics are plain read-modify-writes (one OS thread runs every lane).
//   - Arithmetic is IEEE: the headers and flags (-ffp-contract=off, -fno-fast-math; x86-64 SSE
//     arithmetic is exactly IEEE binary32) give every + - * / and sqrt one round-to-nearest-even
//     rounding; _Float16/half converts and rounds to nearest even after every operation (g++ does
//     so natively; clang++ gets -Xclang -ffloat16-excess-precision=none). The emulation does not
//     model a device's looser accuracy, so level H checks the text's meaning, not a device.
//   - Integers wrap (-fwrapv). __dp4a, __builtin_amdgcn_sdot4/sudot4/udot4 are exact and wrap
//     (the AMD clamp operand saturates when true, as on the device).
//   - Buffers sit between inaccessible guard pages (16-byte granularity at the end), so an
//     out-of-bounds access stops the run with a message naming the buffer and offset; integer
//     division traps (division by zero, INT_MIN / -1) are reported too.
//   - MSL: the address spaces device/constant/thread/threadgroup are erased and [[...]]
//     attributes ignored; a declaration statement that starts a line with `threadgroup` (memory
//     at kernel scope) is rewritten to `static` before compiling, in place, so compiler messages
//     keep their line numbers. The kernel's [[buffer(i)]] arguments receive buffer i, or the
//     parameter block when i equals the number of buffers; builtin arguments are passed by their
//     attribute (thread_position_in_grid, thread_index_in_simdgroup, ...).
//
// Use Run for one launch, or Compile once and Program.Run many times. Driver is an emulated CUDA
// or HIP device behind the device interface the GPU runtimes share (internal/gpudrv): device
// memory in Go, launches run by this emulation; cuda.OpenEmulated and hip.OpenEmulated open it,
// and the engine serves on it (see device.go). Compiled programs are
// cached by content hash (Options.CacheDir, by default under os.UserCacheDir). Without a C++
// compiler every entry point returns an error wrapping ErrUnavailable, whose text starts with
// "unavailable:", and tests skip with it.
package host
