// Package oracle is the independent plain-Go reference of onesource: it defines, bit for bit, what
// every GGUF block format and every op means. Every backend is judged against it: a DSL twin is
// "bit-exact" only when its output bytes equal the oracle's (any NaN equals any NaN).
//
// It imports none of dsl, ir or backends, so it stays an independent judge.
//
// # What is here
//
//   - Block formats (quant*.go): Dequantize for every type of Types(), Quantize (ggml's reference
//     quantizers, incl. the activation formats q8_0, q8_1, q8_K), QuantizeChunk, and the scalar
//     conversions F16ToF32, F32ToF16, BF16ToF32, F32ToBF16.
//   - Canonical reductions (reduce.go): SumF32, MaxF32, SumSqF32, DotF32, parameterized by the
//     schedule's lane count T.
//   - Portable math (math.go): Exp, Log, Tanh, Sin, Cos, Sqrt, Rsqrt, Silu, Gelu, Swiglu, each a
//     fixed sequence of basic float32 operations written out in its doc comment.
//   - Ops (ops.go, ops_matvec.go): AddF32, MulF32, ScaleF32, SiluF32, GeluF32, SwigluF32,
//     RMSNormF32, AddRMSNormF32, SoftmaxF32, RopeF32 (+ RopeFreqs), GetRows, QuantizeQ8_1, MatVec
//     (float path), MatVecQ8 and DotQ8 (quantized-activation integer path).
//
// # The numeric rules
//
// These are the rules of DESIGN.md's numeric contract, stated so that a backend author can follow
// them without reading the code. The oracle's Go code obeys them; every op's doc comment gives its
// exact op sequence in their terms.
//
// 1. No contraction. a*b+c is always two roundings: the product is rounded to float32, then the
// sum. No op of the oracle uses a fused multiply-add. A backend must forbid contraction (SPIR-V
// NoContraction on every float operation, never spirv-opt or glslc -O; CUDA/HIP -fmad=false or
// __fmul_rn/__fadd_rn; MSL fast math and contraction off). An explicit FMA is a per-backend fast
// path that conformance reports as inexact where it differs.
//
// 2. Basic operations. float32 + - * / and sqrt are IEEE 754 binary32, round to nearest, ties to
// even, correctly rounded. Where a device's instruction is not correctly rounded (Vulkan permits
// 2.5 ULP for OpFDiv, and approximate sqrt), the lowering must emit a correctly rounded sequence or
// the cell is reported inexact. Rsqrt(x) is defined as 1/Sqrt(x): two correctly rounded operations,
// never a native reciprocal square root.
//
// 3. Transcendentals. Exp, Log, Tanh, Sin and Cos are defined by their op sequences in math.go:
// range reduction with fixed constants (Cody-Waite for Exp and Sin/Cos, with the round-to-integer
// done by adding and subtracting 1.5*2^23), then a fixed polynomial in Horner form, every step
// rounded. They use, besides + - * / and comparisons, only these integer/bit steps: reading the
// low bits of a float32 (the quadrant of Sin/Cos), building 2^k from its exponent bits (Exp), and
// reading or replacing the exponent field (Log). A kernel that performs the same steps gets the
// same bits on every device. Native fast versions (exp2, __expf, ...) are an explicit opt-in with
// a declared ULP bound. Measured accuracy: Exp < 1 ULP, Log < 1 ULP, Tanh < 1.5 ULP, Sin and Cos
// <= 2.5 ULP for |x| <= 12800 (absolute error <= 1e-7), Rsqrt <= 1.5 ULP.
//
// 4. Reductions have one order, set by the schedule's lane count T (a power of two), not by the
// device's subgroup size. Lane l accumulates elements l, l+T, l+2T, ... in ascending order, its
// accumulator starting at its first element (a lane with no element starts at the identity: +0
// for sums, -Inf for max). The lanes then combine by xor-butterfly with strides 1, 2, 4, ..., T/2,
// lowest first; at each stride both lanes of a pair take op(value of the lower lane, value of the
// higher lane). Strides below the subgroup size may use shuffles, larger ones shared memory: the
// result is the same. For add this equals a pairwise tree over the lanes in index order. Max is
// MaxOp: a > b ? a : b (so a NaN on the right wins, one on the left loses, max(-0, +0) = +0,
// max(+0, -0) = -0). Sums of products round each product first (rule 1). Built-in subgroup
// reductions (subgroupAdd, simd_sum, warp reduce intrinsics) have unspecified association and are
// only a declared-inexact fast path.
//
// 5. Conversions.
//   - float32 -> f16 and float32 -> bf16: round to nearest, ties to even, into and within the
//     subnormal range; overflow gives ±Inf (f16: |x| >= 65520); the sign of zero is kept; a NaN
//     stays a NaN (F32ToF16, F32ToBF16 document the exact NaN bits).
//   - f16 -> float32 and bf16 -> float32 are exact (F16ToF32, BF16ToF32).
//   - int32 -> float32 (Int32ToFloat): round to nearest, ties to even; exact for |i| <= 2^24. The
//     integer matvec converts its exact int32 block sums this way.
//   - float32 -> int32 (FloatToInt32): truncation toward zero. NaN, ±Inf and values outside
//     [-2^31, 2^31) give math.MinInt32 (x86's "integer indefinite", so what ggml's C casts give on
//     the machines its reference data comes from); a narrower result (int8, uint8) keeps the low
//     bits of that int32. GPU languages leave the out-of-range case undefined, so a backend that
//     can meet it (a quantizer fed NaN) must select the value explicitly. Rounding to an integer,
//     where an op needs it, is spelled out in the op (roundf = half away from zero in the
//     quantizers, or the 1.5*2^23 trick = half to even in the math library).
//
// 6. Integers wrap (two's complement). Packed int8 dot products are non-saturating (OpSDot +
// OpIAdd, never OpSDotAccSat; __dp4a; sdot4 without clamp). The oracle's integer sums never
// overflow int32 for any valid block, so wrapping is a rule for the lowering, not a visible effect.
//
// NaN. Results are compared as bytes except that any NaN equals any NaN: payloads and the sign of
// a NaN are not part of the contract for ops (the scalar format conversions above do define their
// NaN bits). Ops produce a NaN exactly where their op sequence does under IEEE rules, e.g. a
// softmax row that is entirely -Inf (-Inf - -Inf), Silu(-Inf) (-Inf/+Inf), Gelu(-Inf), Inf-Inf in
// a sum, Sin/Cos of ±Inf, Log of a negative number; a NaN input propagates through arithmetic. MaxOp
// does not propagate a NaN on its left (rule 4); softmax therefore follows MaxF32's order.
//
// Denormals (subnormals) are preserved, never flushed: inputs are used as they are and results
// in the subnormal range are rounded to the nearest subnormal, as IEEE requires. A backend must
// disable flush-to-zero (SPIR-V DenormPreserve for 32-bit floats where the device supports it, CUDA
// -ftz=false, no MSL fast math); a device that flushes is reported inexact on the ops where it
// matters. The tests exercise subnormal inputs and results (sums, scaling, Exp of large negative
// arguments, rms_norm of subnormal rows).
//
// # Op definitions in brief
//
// rms_norm: ss = SumSqF32(row, T); mean = ss / float32(n); scale = 1 / Sqrt(mean + eps);
// y = x * scale (then * w for the fused weight). add_rms_norm stores sum = a + b first.
//
// softmax: v = x*scale (+ mask); m = MaxF32(v, T); e = Exp(v - m); s = SumF32(e, T); r = 1/s;
// y = e * r (multiply by the reciprocal, as ggml does).
//
// rope: freq[i] = Exp(float32(i) * c) with c = (-2*Log(base)) / float32(nDims), the angle
// theta = float32(pos) * freq[i], then y0 = x0*Cos(theta) - x1*Sin(theta),
// y1 = x0*Sin(theta) + x1*Cos(theta) on adjacent pairs (normal) or (i, i+nDims/2) (neox).
//
// matvec: the float path dequantizes each row and takes DotF32 with x; the integer path quantizes
// x to q8_1 or q8_K, computes one float32 partial per weight block from exact integer sums (the
// formula per type is in ops_matvec.go) and sums the partials with SumF32.
package oracle
