// Package vulkan is onesource's Vulkan backend: a direct SPIR-V binary emitter for ir kernels
// (Emit, and Compile, which lowers first), and a device runtime that loads the Vulkan library at
// run time (Available, Open, Device.NewBuffer, Device.Pipeline, Device.Run, Device.Bench,
// Device.BenchCopy). A Module is the contract between the two: the SPIR-V words plus the
// bindings, push-constant size, workgroup and subgroup sizes, shared memory and device Features
// the words rely on.
//
// # The emitted module
//
// Emit writes a module for a target environment (Env: Vulkan 1.1, 1.2 or 1.3, SPIR-V 1.3, 1.5
// or 1.6; 1.3 by default, the device's through Device.Compile) (Logical addressing, GLSL450
// memory model) with one GLCompute entry point named after the kernel, LocalSize from its
// workgroup size, and an interface listing its Input variables (below SPIR-V 1.4) or every
// global variable it declares (from 1.4). Each capability that needs a SPIR-V extension in the
// environment gets its OpExtension (the table spvCapNeeds); below 1.4 a select of vectors on a
// scalar condition splats the condition. No optimizer runs over it: the words are what the IR
// says, so the numeric contract (package oracle) survives to the driver.
//
//   - Buffers: descriptor set 0, binding = index in Kernel.Buffers, each a Block struct
//     { elem data[]; } in the StorageBuffer storage class, member Offset 0, runtime array
//     ArrayStride = element size (std430: a 3-lane vector takes 16 bytes). Read-only buffers
//     are NonWritable, write-only ones NonReadable. i8/u8 elements need StorageBuffer8BitAccess,
//     i16/u16/f16 StorageBuffer16BitAccess; loads widen to 32 bits (OpSConvert/OpUConvert),
//     stores narrow (wrapping).
//   - Parameters: one push-constant Block, parameter i at offset 4*i.
//   - Shared arrays: Workgroup arrays of 32-bit scalars or vectors (narrow elements are an
//     error for now). Variables: Function-storage variables in the first block.
//   - Builtins: GlobalInvocationId, LocalInvocationId, WorkgroupId, NumWorkgroups (uvec3, one
//     component extracted), LocalInvocationIndex, SubgroupSize, SubgroupLocalInvocationId and
//     SubgroupId (GroupNonUniform).
//   - Atomics: on buffers at Device scope, on shared arrays at Workgroup scope, Relaxed
//     semantics; i32/u32 ones are the core OpAtomic* instructions. An f32 add (left by the
//     lowering when Caps.AtomicFloatAdd, which CapsFor sets from the device's AtomicFloat32Add)
//     is OpAtomicFAddEXT, with the AtomicFloat32AddEXT capability and
//     SPV_EXT_shader_atomic_float_add in every environment; without it package lower writes a
//     compare-exchange loop on the u32 bits.
//
// # The numeric contract in SPIR-V
//
// Every OpFAdd, OpFSub, OpFMul and OpFDiv is decorated NoContraction and no Fma is ever
// emitted, so a*b+c is two roundings. Float min and max are a compare and a select
// (b < a ? b : a, a > b ? a : b), never GLSL FMin/FMax, whose NaN result is undefined; integer
// min/max use SMin/UMin/SMax/UMax. Shift counts are masked to width-1 (the IR takes them modulo
// the width). Float == is ordered, != unordered (true for NaN); the other compares are ordered.
// The packed int8 dot product is OpSDot with PackedVectorFormat4x8Bit, and an add after it an
// OpIAdd: never the saturating OpSDotAccSat. An f32 -> f16 conversion whose value is only stored
// to a buffer is decorated FPRoundingMode RTE; other conversions and arithmetic round as the
// device does (Vulkan allows round-to-nearest-even or toward zero without float controls).
// Correct rounding of OpFDiv and Sqrt, and the results of out-of-range float -> int conversions,
// are the lowering's business (package lower) or the conformance report's, not the emitter's.
//
// # Control flow
//
// The IR's structured control flow maps onto SPIR-V's: an if is OpSelectionMerge +
// OpBranchConditional, a loop a header with OpLoopMerge, its body, and a continue block holding
// the IR's continuing block that branches back. Instructions after a break, continue or return
// are dead and not emitted; a merge block no path reaches holds OpUnreachable, and so does a
// loop's merge when the loop has no break. SPIR-V cannot leave a continue construct by
// returning, so a return inside a continuing block sets a Function-storage flag, the rest of
// that block runs only while the flag is clear, the back edge becomes a conditional branch to
// the merge, and the function returns after the merge.
//
// # Readability and stability
//
// The module names (OpName) the entry point, every buffer, parameter, shared array and
// variable, and every named IR value; an OpString/OpSource names the kernel's Go file and an
// OpModuleProcessed line the kernel and its position. With EmitOptions.Debug the OpStrings hold
// the paths of the Go files and an OpLine before the code of each IR instruction gives its Go
// file and line (validation layers, debuggers and RenderDoc then point at the DSL line); off by
// default, so the words do not depend on where the source tree lives. Types and constants are de-duplicated,
// vector constants are OpConstantComposite, and ids are allocated in program order, so the same
// IR always gives byte-identical words. spirv-dis renders the modules readably: see the golden
// files in testdata/ (go test ./backends/vulkan -run Golden -update rewrites them).
//
// Emit never panics: IR it cannot express (an OpReduce the lowering did not expand, a narrow
// shared array, malformed instructions) gives an *ir.Error naming the kernel and the position of
// the instruction or resource.
package vulkan
