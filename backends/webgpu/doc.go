// Package webgpu emits WGSL, the WebGPU Shading Language, from onesource kernels: the same
// lowered IR the SPIR-V and C-family backends print, as one WGSL module per kernel with one
// @compute entry point. Compile lowers and emits; Emit takes a kernel package lower already
// lowered. Package backends/webgpu/nagacheck checks the output with a second, independent
// compiler (github.com/gogpu/naga) and runs it on a Vulkan device.
//
// # Lowering target
//
// Core WGSL has no 8- or 16-bit storage, f16 only with `enable f16;`, subgroups only with
// `enable subgroups;`, no packed int8 dot product without the packed_4x8_integer_dot_product
// language extension, no float atomics and no f64. Caps is that target: no subgroups
// (reductions in workgroup memory), the int8 dot unpacked, f16 arithmetic done in f32, f32
// atomic adds as compare-exchange loops. Options turns extensions on (F16, SubgroupSize,
// PackedDot), and OptionsFor picks what a kernel needs: core WGSL unless the kernel uses
// subgroups itself. What no option can express is an error naming the Go line of the
// instruction or resource (an *ir.Error): f64 values, narrow shared arrays, a subgroup
// operation without Options.SubgroupSize, a packed dot without Options.PackedDot, a device
// subgroup reduction (WebGPU cannot fix the subgroup size), an unemulated fma.
//
// Narrow buffer elements go through u32 words: an i8, u8, i16, u16 (or, without F16, f16 or
// bf16) buffer is an array<u32>; a load shifts and masks (sign-extending i8 and i16), a store is
// two atomics on the word (atomicAnd clearing the element's bits, atomicOr setting them), so
// invocations storing neighbouring elements of one word do not race, and such a buffer is an
// array<atomic<u32>>. Its element count (OpLen) is counted in whole words, since a WebGPU binding
// is a multiple of 4 bytes: bind the bytes padded with zeros. Without F16, an f16 value lives
// in an f32 variable (every f16 is exactly an f32), an f16 element is read by os_f16_to_f32 and
// written by os_f32_to_f16, and every rounding to f16 is os_round_f16: integer code that rounds
// to nearest even exactly (WGSL's own f32-to-f16 conversions, pack2x16float included, may round
// either way and leave overflow indeterminate).
//
// # The numeric contract in WGSL
//
// The text keeps the contract of package oracle, op for op as the SPIR-V emitter and the
// C-family printer (backends/cfamily) do:
//
//   - float + - * / and sqrt are WGSL's operators and sqrt, one operation per IR instruction;
//     a*b+c is a multiply and an add. WGSL promises correct rounding for + - * only; / and sqrt
//     are as accurate as the implementation's (on Vulkan, OpFDiv and Sqrt: the same caveat as
//     onesource's own SPIR-V). WGSL has no NoContraction and no other way to forbid
//     contraction or reassociation: a WebGPU implementation whose compiler fuses or
//     reassociates breaks the contract, and this package cannot prevent it. Mesa's drivers do
//     rewrite undecorated float operations and conversions (lavapipe turns (x+C)-C into x,
//     which the portable exp's rounding step relies on not happening, and u32(f32(x)) into x):
//     package nagacheck decorates naga's SPIR-V NoContraction before running it, and says so.
//   - float min is select(a, b, b < a), max select(b, a, a > b) (b < a ? b : a, a > b ? a : b),
//     never WGSL's min/max, whose NaN result is indeterminate; integer min/max are WGSL's.
//     Float != is written !(a == b), true for NaN (naga writes WGSL's != as an ordered compare).
//   - integers wrap: WGSL's i32 and u32 + - * and negation wrap at run time; shift counts are
//     masked to 31 (WGSL takes them modulo 32 too, but a constant count of 32 or more is a
//     shader-creation error); i32 >> is arithmetic. An instruction whose operands are all
//     constants has its first operand declared as a let, so WGSL never evaluates it as a
//     const-expression (where overflow, division by zero and wide shifts are errors).
//   - integer division and remainder go through os_div_i32, os_rem_i32, os_div_u32 and
//     os_rem_u32: x/0 = -1 or 0xffffffff, x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0 (WGSL's
//     own give x/0 = x).
//   - float -> int conversion truncates toward zero; NaN and out-of-range values give
//     0x80000000 (os_f32_to_i32, os_f32_to_u32); i32 <-> u32 keep the bits; f32 -> f16 rounds to
//     nearest even (os_round_f16, also with F16); f16 -> f32 is exact. A bitcast between
//     halves and 32-bit lanes goes through os_f32_to_f16 and os_f16_to_f32 (exact for every
//     value; a NaN keeps being a NaN), also with F16.
//   - NaN and infinity constants, which WGSL has no literal for, are os_f32_bits(0x7f800000u):
//     a function call, never a const-expression. Float literals are shortest round-trip
//     decimals with an f (or h) suffix, which WGSL rounds to the nearest value: the same bits.
//   - the IR's barrier orders shared and buffer memory: it is storageBarrier() (when the kernel
//     writes a buffer) and workgroupBarrier().
//   - atomics are WGSL's (relaxed); a compare-exchange is atomicCompareExchangeWeak retried
//     while it failed spuriously, so its result is the strong exchange's.
//
// # The emitted module
//
// Every module starts with the header comment
//
//	// Code generated by onesource from DSL kernel <name> (<file base>:<line>). DO NOT EDIT.
//
// then lines naming the lowering target, the contract's caveat and every binding, the enable
// directives, the parameter struct, the bindings, the workgroup arrays, the os_* helpers the
// kernel uses, and the entry point. Bindings are all @group(0): the kernel's buffers at
// @binding(i), in order, as var<storage, read> (read-only buffers) or var<storage, read_write>
// (WGSL has no write-only storage), then, when the kernel has parameters, a struct
// <kernel>_params of the parameters (4 bytes each, in order: the bytes of a Vulkan push-constant
// block) bound as var<storage, read> params at @binding(len(buffers)). Arrays that any atomic
// touches are array<atomic<T>>, and every access to them is atomicLoad, atomicStore or an
// atomic read-modify-write. The entry point takes the builtins it uses as gid, lid, wgid, nwg
// (vec3<u32>), lidx, sg_size and sg_lane; the subgroup id is lidx / sg_size (subgroups are
// consecutive local indices, as the lowering assumes on every target).
//
// Inside the entry point, variables come first (`var name: T;`), then every IR value with a
// result is one `let name: T = expr;` whose name is the IR value's name made a valid, unique
// WGSL identifier, else v<N> with N the value's number in the IR text form (%N); constants and
// parameters are written in place. A loop prints as `loop { body continuing { ... } }` when its
// continuing block leaves nothing (no break, continue or return), else as
//
//	var loopN_first = true;
//	loop {
//		if (!loopN_first) {
//			<continuing block>
//		}
//		loopN_first = false;
//		<body>
//	}
//
// so a continue in the body, which starts the next iteration, runs the continuing block first.
// Code after a break, continue or return is omitted. The same kernel always gives the same
// bytes; Emit never panics.
package webgpu
