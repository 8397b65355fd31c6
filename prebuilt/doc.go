// Package prebuilt holds kernels built ahead of time by `onesource gen` and dispatches them with
// no kernel compiler in the program: the run-time half of `go generate`.
//
// `onesource gen` (run as a //go:generate step) builds a package's DSL kernels, writes one file per
// kernel and backend next to the package (onesource/<kernel>.spv, .cu, .hip, .metal) and a Go file
// that embeds them and declares a *Set describing each kernel's interface (buffers, parameters,
// workgroup size) and each file's SHA-256. The generated file calls Register at init, so a
// program finds the kernels by name with Lookup, or through the package's exported Set variable.
//
// The contract:
//
//   - A Set whose embedded files are missing or differ from the hashes the generator recorded
//     (a hand-edited .spv, a stale checkout) is unusable: Set.Err says which file, and every
//     dispatch of it fails with that error. Nothing panics.
//   - A Runtime places each kernel on the first backend, in Options.Backends order, that has a
//     generated file, a usable device, and a registry cell that lets the DSL twin serve. The cell
//     of a prebuilt kernel is (kernel name, AnyType, backend). A cell in state dsl or fallback
//     whose bit-exact evidence names this file's hash is verified; a cell with no evidence, or
//     with evidence for another version of the file, is unverified and serves only when no
//     verified backend is available (Placement.Verified says which, Options.RequireVerified
//     refuses it); a failing cell never serves; a cell a hand-written kernel serves (hand,
//     declined) is left to the program's own incumbent. Placement.Considered says why each
//     backend was taken or passed over.
//   - Record turns a program's own check of a placed kernel against its oracle into registry
//     evidence (bit-exact, no incumbent: the gate's coverage rule), so the next run finds the
//     cell verified.
//   - Vulkan runs the embedded SPIR-V as is (no compiler anywhere). CUDA and HIP compile the
//     embedded source once per process with the driver's run-time compiler (NVRTC, hiprtc), which
//     ship with the drivers; with Options.Emulated they run on the emulated devices instead (the
//     same text by host emulation, level H, for machines with a C++ compiler and no GPU). Metal
//     files are embedded for programs that run them on Apple systems (this package has no Metal
//     runtime). The cpu backend runs the embedded kernel file (the kernel lowered for the CPU
//     executor, package backends/cpu) on this machine's cores: it needs no driver and no
//     compiler, so it is the last default backend and a program placed with the default order
//     runs on a machine with no GPU driver at all.
//   - Data stays on the device between runs on every backend: Placed.NewBuffer allocates a
//     DeviceBuffer on the placed kernel's device, written and read by the program, and RunOn
//     dispatches over such buffers with no copy between runs. Run is the one-off form: it copies
//     the caller's slices to fresh device buffers and the written ones back (what a cpu run
//     costs too: two memory copies).
package prebuilt
