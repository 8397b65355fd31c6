// Package saxpy is the smallest onesource kernel: y = a*x + y, one invocation per element.
//
// It shows the shape of every kernel: an ordinary Go function whose parameters are the schedule
// (here the workgroup size) builds the kernel with package dsl; Kernels lists the package's
// kernels at their default schedules for `onesource gen`; Reference computes the same result in
// plain Go, rounding exactly as the kernel does (a*x rounded, then + y rounded: no FMA).
package saxpy

import "github.com/onesource-go/onesource/dsl"

// Saxpy builds y[i] = a*x[i] + y[i] for i < n, with wg invocations per workgroup.
func Saxpy(wg int) *dsl.Kernel {
	k := dsl.New("saxpy", wg)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.ReadWrite)
	a := k.Param("a", dsl.F32)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X).Named("i")
	k.If(i.Lt(n), func() {
		ax := a.Mul(x.Load(i)).Named("ax")
		y.Store(i, ax.Add(y.Load(i)))
	})
	return k
}

// Kernels returns this package's kernels at their default schedules.
func Kernels() []*dsl.Kernel { return []*dsl.Kernel{Saxpy(64)} }

// Reference returns a*x + y element-wise with the kernel's rounding.
func Reference(a float32, x, y []float32) []float32 {
	out := make([]float32, len(y))
	for i := range y {
		ax := a * x[i]
		out[i] = ax + y[i]
	}
	return out
}
