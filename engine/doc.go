// Package engine runs ops on tensors that live on the device, each call served by the kernel the
// registry chose for its cell: the DSL twin or the hand-written incumbent. It is the seam between
// hand-written kernels and the DSL library that lets a program (examples/llama runs a model on
// it) work at every intermediate state of the drain, one cell at a time.
//
// The contract:
//
//   - A Tensor is a typed, row-major byte range of a device buffer (its own, or a view of
//     another tensor's rows). Data moves between the host and the device only through Upload,
//     Write and Read (counted in Stats), never between two ops.
//   - An op call (RMSNorm, MatVec, GetRows, Softmax, Rope, Add, Mul, Swiglu, Scale,
//     AttnDecode; ArgMax, ArgMin, TopK and Sample, which pick from logits on the device)
//     checks its operands' types and shapes, resolves its cell (op, type, backend) in the
//     registry current at that call, and queues one dispatch (two for an ArgMax or TopK over
//     more values than a workgroup takes). Queued dispatches run in
//     order when the program reads a tensor, writes one, or calls Flush: one submission, with a
//     barrier only where a dispatch depends on an earlier one.
//   - Who serves a cell: the registry's choice for this machine (registry.SelectOn: the cell's
//     state over this device's and driver's evidence alone). dsl and fallback: the twin, at the schedule the
//     tuning cache holds for this device and this version of the twin, else its default. hand and
//     declined: the incumbent the manifest names for the cell, with its push constants, spec
//     constants and grid from the manifest's expressions of the call's shape variables (the
//     variables package conformance names: rows, n, eps, ...). failing: never served, an error
//     with the reason. A cell without evidence for this machine is served by the incumbent when
//     the registry names one, else by its twin (also with no registry), and the trace says so. A cell with neither a usable twin nor an incumbent is an error
//     naming the cell. Every call is recorded in the trace (Trace): cell, who served it, the
//     registry state and why, the schedule or incumbent, and with Options.Timed its device time.
//   - The registry can be replaced while calls run (SetRegistry, ReloadRegistry): the next call
//     resolves its cell against the new one; calls already queued keep their kernels.
//   - With a trust file (Options.Trust, else ONESOURCE_TRUST), Open and ReloadRegistry refuse a
//     registry in which a flip rests on evidence no trusted key signed (registry.CheckTrust).
//   - Errors, not panics, for every bad input: a wrong type or shape names the op, the operand
//     and what was expected.
//
// Four backends are served (Options.Backend): Vulkan, the default (lavapipe on a CPU-only
// machine); cpu, the Go executor of package backends/cpu, which needs no driver and no Vulkan
// library at all; and cuda and hip, on a GPU through the one driver of internal/gpudrv (the CUDA
// driver API with NVRTC, the HIP runtime with HIPRTC), or with Options.Emulated on the emulated
// device, where the same emitted text runs by host emulation on the CPU (package
// backends/cfamily/host, level H: slow and exact, never a GPU's result; its device and driver
// say so, so its registry evidence and tuning entries never stand for a GPU's). Behind a small
// internal device interface (buffers, kernels compiled for the device, a queue of dispatches
// over byte ranges of buffers run in order at flush, counters, the device's identity), the
// engine works the same on all four: tensors are device buffers and views of them; Flush
// submits the queued work once and waits once; Stats counts submissions, dispatches and host
// reads and writes alike. On cpu a buffer is a byte slice and the queued programs run one after
// another. On cuda and hip the queued dispatches are launches on one stream, each a buffer's
// address plus the view's offset per binding and the twin's parameters (then the element count
// of every buffer whose length the kernel reads) as 32-bit scalars; launches on one stream run
// in order, so no barrier is recorded (Stats.Barriers stays 0); a flush whose context is done
// before it submits abandons the queued launches, and once submitted the wait runs to its end.
// Matrices larger than 2^31-1 bytes are split by rows as on Vulkan.
//
// Cells are keyed on the backend ("matvec/q4_0/cpu", "add/f32/cuda"), with the device and
// driver of that backend for registry evidence and the tuning cache (the names package prebuilt
// gives them). The cpu backend runs only twins, at their default schedule or the tuning cache's
// for backend cpu: incumbents are Vulkan SPIR-V, so a cell the registry sends to its incumbent
// (hand, declined) is served there by its twin and the trace says why; a cell failing on the
// executor is still refused. cuda and hip run the manifest's CUDA and HIP incumbents (package
// incumbent, Entry.CFamily): the source compiled once per source and options, checked against
// the kernel's declared signature, launched with the manifest's block, grid, buffers and scalar
// arguments. Measured on this 2-core machine (emulated devices, the host-compile cache warm):
// TestOpsMatchOracle's 21 twins take 0.13 s on emulated cuda and 0.21 s on emulated hip (each
// launch a 3-5 ms process); cold, compiling them takes 6 s and 8 s (about 0.3 s a kernel with
// g++ -O2).
package engine
