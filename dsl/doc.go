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
// Packages that hold kernels for `onesource gen` export a function
//
//	func Kernels() []*dsl.Kernel
//
// returning each kernel at its default schedule.
package dsl
