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
// package oracle: float arithmetic is IEEE round-to-nearest-even and never contracted into FMA,
// integers wrap, and reductions follow the canonical order of the numeric contract (package
// oracle, rule 4): a Canon of width W gives the same bits at every workgroup size, in either
// layout, on every device.
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
