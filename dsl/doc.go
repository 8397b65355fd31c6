// Package dsl is the builder API kernels are written with: plain Go code that builds typed IR.
//
// A kernel is an ordinary Go function that returns a *Kernel. Its Go parameters are the schedule
// (workgroup size, rows per workgroup, ...): calling it again with other values specializes it.
//
//	func Saxpy(wg int) *dsl.Kernel {
//		k := dsl.New("saxpy", wg)
//		x := k.Buffer("x", dsl.F32, dsl.Read)
//		y := k.Buffer("y", dsl.F32, dsl.ReadWrite)
//		a := k.Param("a", dsl.F32)
//		n := k.Param("n", dsl.U32)
//		i := k.GlobalID(dsl.X)
//		k.If(i.Lt(n), func() {
//			y.Store(i, a.Mul(x.Load(i)).Add(y.Load(i)))
//		})
//		return k
//	}
//
// Build verifies the kernel and returns its ir.Kernel; every mistake is reported as an error that
// names the Go file and line that made it. The numeric meaning of every operation is the one in
// package oracle: float arithmetic is IEEE round-to-nearest-even and never contracted into FMA
// (Value.Fma is the explicit, exact one), integers wrap, and reductions follow the canonical
// order of the numeric contract (package oracle, rule 4): a Canon of width W gives the same bits
// at every workgroup size, in either layout, on every device.
//
// # Math
//
// The math library is methods of Value on f32 scalars, in the style of Add and Sqrt: operands
// of type any take a Value or a Go number, and a receiver or operand that is not an f32 scalar is
// an error naming the line. Each method is the twin of the oracle function of the same name
// (package oracle, math.go) and performs its op sequence step for step (range reduction with
// fixed constants, a fixed polynomial, every + - * / rounded, bit steps on the float's fields,
// branches as selects), so it gives the same bits on every backend and device and never calls a
// vendor's math library. The error is against the correctly rounded result, in float32 ULPs,
// measured against float64 over dense samples and asserted by the oracle's tests
// (TestPortableMathULP, TestMathLibraryULP, TestPowRandom; the largest measured in brackets):
//
//	Sqrt, Floor, Ceil, Trunc, Abs   IEEE; Ceil is -Floor(-x), Trunc Floor(|x|) with x's sign   exact
//	Round                           to the nearest integer, ties to even                      exact
//	Copysign(y)                     |x| with y's sign bit                                     exact
//	Min(o), Max(o)                  o < x ? o : x and x > o ? x : o: NaN and signed zeros     exact
//	                                follow the operand order (numeric rule 4's MaxOp)
//	MinNum(o), MaxNum(o)            IEEE 754-2019 minimumNumber, maximumNumber: a NaN         exact
//	                                operand ignored, -0 below +0, symmetric
//	Clamp(lo, hi)                   x.Max(lo).Min(hi) (a NaN x gives lo)                      exact
//	Fma(b, c)                       x*b + c rounded once, IEEE special cases                  exact
//	Exp, Log                        Cephes polynomials after an exact reduction               < 1 ULP (0.97, 0.72)
//	Exp2                            2^round(x) times a degree-6 polynomial in the rest        1.5 ULP (1.03)
//	Log2                            a double-float logarithm rounded once                     0.51 ULP (0.50)
//	Pow(y)                          2^(y*log2|x|) in double-float; C99 Annex F special cases  1.5 ULP (1.17)
//	Tanh                            a polynomial below 0.625, else 1 - 2/(Exp(2|x|)+1)        2 ULP (1.27)
//	Sin, Cos, SinCos                reduction by pi/2 in four parts, polynomials              1.5 ULP for |x| <= 4,
//	                                                                                          2.5 ULP (absolute 1e-7)
//	                                                                                          for |x| <= 12800
//	Erf                             x + x*Q(x^2) below 0.875, 1 - exp(-x^2)*R(|x|) below 4    1.5 ULP (1.00)
//	Rsqrt                           1/Sqrt(x): two correctly rounded operations               1.5 ULP (1.48)
//
// Fma is the one fused operation, and it is exact on every backend: the device's fused
// multiply-add where it is promised to round once (CUDA __fmaf_rn, HIP fmaf, MSL fma), and an
// exact emulation in 32-bit integer operations elsewhere (Vulkan, whose Fma may round twice:
// lower.LegalizeFma). Mul followed by Add is always two roundings.
//
// Native(f, ...) is the opt-in fast path: the device's own exp, exp2, log, log2, sin, cos,
// tanh, pow or rsqrt (GLSL.std.450 on Vulkan, __expf and friends on CUDA and HIP, fast:: on
// MSL). Its bits differ between devices and from the methods above, so it is never called
// bit-exact: a conformance cell that uses it declares a ULP bound per output (kernels.Case.Tol)
// and is reported as "inexact, max ULP N" with the measured N.
//
// # Subgroups and atomics
//
// Kernel.Subgroup(W) views the subgroup as clusters of W lanes (W a power of two up to 32) and
// gives reductions (Sum, Max, Min, Reduce with OpAnd/OpOr/OpXor), inclusive and exclusive scans,
// Ballot, Any, All and Broadcast inside each cluster, all in one canonical xor-butterfly order
// fixed by W: the same bits on a device with 8-lane subgroups as on one with 64. The device's
// subgroups must hold at least W lanes, and every lane of the hardware subgroup must reach a
// collective together. Value.ShuffleXor and Value.Shuffle are the raw exchanges underneath.
//
// Array.AtomicAdd works on i32, u32 and f32 elements (f32: native where the target has float
// atomics, a compare-exchange loop otherwise, one IEEE addition either way); AtomicMin,
// AtomicMax, AtomicExchange, AtomicCompareExchange, AtomicAnd, AtomicOr and AtomicXor on i32 and
// u32 elements. Every atomic returns the old value.
//
// Packages that hold kernels for `onesource gen` export a function
//
//	func Kernels() []*dsl.Kernel
//
// returning each kernel at its default schedule.
package dsl
