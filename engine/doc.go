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
//   - Errors, not panics, for every bad input: a wrong type or shape names the op, the operand
//     and what was expected.
//
// Only Vulkan is served today (lavapipe on a CPU-only machine); CUDA and HIP devices are not
// yet behind this interface.
package engine
