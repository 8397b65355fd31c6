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
//   - Canonical reductions (reduce.go): Reduce, CanonicalSum, SumF32, MaxF32, SumSqF32, DotF32,
//     over a width W that belongs to the op (Width and the table below), never to a schedule.
//   - The float-path dot over quantized weights (dot_units.go): 32-value units, each format's
//     in-block order (UnitPartial).
//   - Portable math (math.go): Exp, Exp2, Log, Log2, Pow, Tanh, Sin, Cos, Erf, Sqrt, Rsqrt, Silu,
//     Gelu, Swiglu, each a fixed sequence of basic float32 operations written out in its doc
//     comment; the exact Floor, Ceil, Trunc, Round, Abs, Copysign, Min, Max, MinNum, MaxNum,
//     Clamp and Fma; MathOps and NativeOps (ops_math.go), the functions of the math cells.
//   - Ops (ops.go, ops_matvec.go): AddF32, MulF32, ScaleF32, SiluF32, GeluF32, SwigluF32,
//     RMSNormF32, AddRMSNormF32, SoftmaxF32, RopeF32 (+ RopeFreqs), GetRows, QuantizeQ8_1, MatVec
//     (float path), MatVecQ8 and DotQ8 (quantized-activation integer path).
//
// # The numeric contract
//
// This is onesource's numeric contract, the law every backend is judged by ("bit-exact"), stated
// so that a backend author can follow it without reading the code. The oracle's Go code obeys it;
// every op's doc comment gives its exact op sequence in its terms. The lowering (package lower)
// and the emitters, not the kernel author, make a kernel follow it.
//
// 1. No contraction. a*b+c is always two roundings: the product is rounded to float32, then the
// sum. No op of the oracle uses a fused multiply-add. A backend must forbid contraction (SPIR-V
// NoContraction on every float operation, never spirv-opt or glslc -O; CUDA/HIP -fmad=false or
// __fmul_rn/__fadd_rn; MSL fast math and contraction off). An explicit fused multiply-add is Fma:
// a*b+c exact, rounded once, on every backend (the device's fma where it is promised to round
// once, an exact integer emulation elsewhere).
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
// same bits on every device. Exp2, Log2, Pow and Erf follow the same rules (Log2 and Pow carry the
// logarithm as a pair of float32 values, with error-free transformations written out). Native
// fast versions (the device's exp, __expf, ...) are an explicit opt-in whose outputs are judged
// against a declared ULP bound and reported inexact, never bit-exact. Measured accuracy: Exp < 1
// ULP, Log < 1 ULP, Exp2 <= 1.5, Log2 <= 0.51, Pow <= 1.5, Erf <= 1.5, Tanh < 1.5 ULP, Sin and
// Cos <= 2.5 ULP for |x| <= 12800 (absolute error <= 1e-7), Rsqrt <= 1.5 ULP.
//
// 4. Reductions have one canonical order, which depends on neither the device's subgroup size
// nor the schedule (workgroup size, layout, anything a tuner may change). Each op declares a
// constant width W, a power of two (the table below). The terms of a reduction are its elements,
// or, for dots over quantized weights, one partial per 32-value unit or per activation block. W
// virtual lanes: virtual lane v folds its terms v, v+W, v+2W, ... in ascending order, starting
// from the identity (-0 for sums: -0 + x = x for every x; -Inf for max: MaxOp(-Inf, x) = x for
// every x), so a lane without terms holds the identity. The virtual lanes then combine by
// xor-butterfly with strides 1, 2, 4, ..., W/2, lowest first; at each stride both lanes of a pair
// take op(value of the lower lane, value of the higher lane). The result equals a pairwise tree
// over the W lanes in index order. Max is MaxOp: a > b ? a : b (so a NaN on the right wins, one
// on the left loses, max(-0, +0) = +0, max(+0, -0) = -0). Sums of products round each product
// first (rule 1).
//
// A schedule of T invocations (T a power of two dividing W) gives each invocation S = W/T
// virtual lanes, its slots, in one of two layouts: blocked (invocation l holds l*S .. l*S+S-1:
// it reads S consecutive terms per round, and its own slots combine first, strides below S,
// before one butterfly across invocations) or strided (invocation l holds l, l+T, ...: adjacent
// invocations read adjacent terms, one butterfly across invocations per slot, strides below T,
// then the slots combine, strides from T up). Strides across invocations use shuffles below the
// subgroup size and shared memory above it. Every schedule gives the same bits: tuning never
// changes a result. Built-in subgroup reductions (subgroupAdd, simd_sum, warp reduce intrinsics)
// have unspecified association and are only a declared-inexact fast path.
//
// The canonical widths:
//
//	op                                  terms                                       W
//	rms_norm, add_rmsnorm,              the row's squares                           RowWidth = 256
//	  rms_norm_rope (the norm)
//	softmax                             the row's values (max), exponentials (sum)  RowWidth = 256
//	attn_decode                         a head's scores (max), exponentials (sum);  RowWidth = 256
//	                                    its dots and weighted sums are serial
//	matvec, f32/f16/bf16 weights        w[i]*x[i], one per value                    FloatDotWidth = 256
//	matvec, quantized weights           one partial per 32-value unit               BlockDotWidth = 128
//	matvec_q8, q8_1 activations         one partial per 32-value activation block   Q8_1DotWidth = 128
//	matvec_q8, q8_K activations         one partial per 256-value super-block       Q8_KDotWidth = 64
//
// Why these: 256 lets a row op use up to 256 invocations on one row and keeps 16 terms per lane
// on a 4096-wide row; a quantized row of 4096 values has 128 units, so with W = 128 a
// workgroup of 32 to 128 invocations has every invocation busy, each taking whole units (wide
// loads, one scale per group) rather than single values.
//
// Inside a quantized block the format fixes one order, chosen for speed (dot_units.go and the
// table of units below): the float-path partial of a unit applies each group's scale once to a
// sum of code*activation products kept in four accumulators (what a float4 register holds, and
// four independent add chains for a CPU), and the integer path's partials are exact integer sums
// scaled once per block (ops_matvec.go).
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
// rms_norm: ss = SumSqF32(row, RowWidth); mean = ss / float32(n); scale = 1 / Sqrt(mean + eps);
// y = x * scale (then * w for the fused weight). add_rms_norm stores sum = a + b first.
//
// softmax: v = x*scale (+ mask); m = MaxF32(v, RowWidth); e = Exp(v - m); s = SumF32(e,
// RowWidth); r = 1/s; y = e * r (multiply by the reciprocal, as ggml does).
//
// attn_decode (AttnDecodeF32): per query head, s[t] = (serial dot of q and key t from -0) *
// scale; m, e and the sum as softmax; out[d] = (serial sum over t of e[t]*v[t][d] from -0) * r.
//
// rope: freq[i] = Exp(float32(i) * c) with c = (-2*Log(base)) / float32(nDims), the angle
// theta = float32(pos) * freq[i], then y0 = x0*Cos(theta) - x1*Sin(theta),
// y1 = x0*Sin(theta) + x1*Cos(theta) on adjacent pairs (normal) or (i, i+nDims/2) (neox).
//
// matvec: the float path takes DotF32(row, x, FloatDotWidth) for f32, f16 and bf16 weights, and
// for quantized weights the canonical sum over BlockDotWidth of the row's unit partials; the
// integer path quantizes x to q8_1 or q8_K, computes one float32 partial per activation block
// from exact integer sums (the formula per type is in ops_matvec.go) and sums the partials
// canonically over Q8_1DotWidth or Q8_KDotWidth. Dequantization (get_rows, Dequantize) is ggml's,
// value for value: only the reduction orders of the ops are onesource's own.
//
// # The float-path units of each format
//
// A unit is 32 consecutive values of a row (UnitSize); its codes c[j] are exact float32 values
// and its groups the maximal runs of values sharing a scale s (and a min m), with Dequantize's
// value j = float32(s*c[j]) (+ m). Its partial (UnitPartial) is, per group in order, the four
// accumulators a[r] = -0 + p[r] + p[r+4] + ... over the group's products p[j] = c[j]*x[j],
// P = (a[0]+a[1]) + (a[2]+a[3]), then acc = acc + s*P (and + m*M, M the same four-accumulator
// sum of the group's activations), acc starting at -0. Every step is rounded.
//
//	type                     units/block  groups per unit   c[j]                             s (, m)
//	q4_0, q5_0               1            1 of 32           nibble (| 5th bit) - 8 (16)      d
//	q4_1, q5_1               1            1 of 32, min      nibble (| 5th bit)               d, m
//	q8_0, q8_1               1            1 of 32           int8 code                        d
//	q1_0                     4            1 of 32           ±1 (bit set: +1)                 d
//	q2_0                     2            1 of 32           2-bit field - 1                  d
//	q2_K                     8            2 of 16, min      2-bit code                       d*sc, -(dmin*m)
//	q3_K                     8            2 of 16           2-bit code - 4 (hmask bit clear) d*(sc-32)
//	q4_K, q5_K               8            1 of 32, min      4-bit (5-bit) code               d*sc, -(dmin*m)
//	q6_K                     8            2 of 16           6-bit code - 32                  d*sc
//	q8_K                     8            1 of 32           int8 code                        d
//	iq2_xxs, iq3_xxs         8            1 of 32           ±grid value                      the sub-block's db
//	iq2_xs, iq2_s            8            2 of 16           ±grid value                      db per 16
//	iq3_s                    8            1 of 32           ±grid value                      db
//	iq1_s                    8            1 of 32           grid value ± delta               dl
//	iq1_m                    8            2 of 16           grid value ± delta               dl per 16
//	iq4_nl                   1            1 of 32           kvalues_iq4nl[nibble]            d
//	iq4_xs                   8            1 of 32           kvalues_iq4nl[nibble]            d*(ls-32)
//	tq1_0, tq2_0             8            1 of 32           trit - 1                         d
//	mxfp4                    1            1 of 32           kvalues_mxfp4[nibble]            E8M0 half scale
//	nvfp4                    2            2 of 16           kvalues_mxfp4[nibble]            UE4M3 half scale per 16
//
// Each format file holds its unit decoder beside its dequantizer; a test pins every decoder to
// Dequantize (and so to ggml's own values).
package oracle
