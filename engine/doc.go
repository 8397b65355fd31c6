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
//     AttnDecode) checks its operands' types and shapes, resolves its cell (op, type, backend)
//     in the registry current at that call, and queues one dispatch. Queued dispatches run in
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
// Two backends are served (Options.Backend): Vulkan, the default (lavapipe on a CPU-only
// machine), and cpu, the Go executor of package backends/cpu, which needs no driver and no
// Vulkan library at all. Behind a small internal device interface (buffers, kernels compiled for
// the device, a queue of dispatches over byte ranges of buffers run in order at flush, counters,
// the device's identity), the engine works the same on both: on cpu a buffer is a byte slice and
// a tensor's binding a sub-slice of it; Flush runs the queued programs one after another (no
// barriers are needed); Stats counts submissions, dispatches and host reads and writes as on
// Vulkan. Cells are keyed on backend "cpu" there ("matvec/q4_0/cpu"), with the executor as the
// machine's device and driver (the names package prebuilt gives it) for registry evidence and
// the tuning cache. The cpu backend runs only twins, at their default schedule or the tuning
// cache's for backend cpu: incumbents are Vulkan SPIR-V, so a cell the registry sends to its
// incumbent (hand, declined) is served there by its twin and the trace says why; a cell failing
// on the executor is still refused. CUDA and HIP devices are not yet behind this interface.
package engine
