// Package gpu holds this program's GPU kernels, written with onesource's DSL and built ahead of
// time by `go generate` (the directive below): onesource gen writes onesource/<kernel>.spv, .cu,
// .hip and .metal and onesource_gen.go, which embeds them as the variable Generated.
//
// The convention onesource gen follows: every exported function with no parameters that returns
// a *dsl.Kernel is a kernel of the package (or, if the package declares it, everything
// `func Kernels() []*dsl.Kernel` returns). Code in this package must not use Generated itself
// (gen builds the package without the generated file); the program's main package does.
package gpu

import (
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
)

//go:generate go tool onesource gen -backends all -checked

// AxpyLanes is Axpy's workgroup size; RMSNormLanes is RMSNorm's. Any power of two up to 256
// gives RMSNorm the same bits: its reduction has the canonical width 256 whatever the workgroup.
const (
	AxpyLanes    = 64
	RMSNormLanes = 64
)

// Axpy is y[i] = a*x[i] + y[i] for i < n: one invocation per element, AxpyLanes per workgroup.
// The product and the sum are rounded separately (the DSL never contracts them into an FMA), so
// the result equals oracle.ScaleF32 followed by oracle.AddF32 on every backend.
func Axpy() *dsl.Kernel {
	k := dsl.New("axpy", AxpyLanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.ReadWrite)
	a := k.Param("a", dsl.F32)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X).Named("i")
	k.If(i.Lt(n), func() {
		y.Store(i, a.Mul(x.Load(i)).Add(y.Load(i)))
	})
	return k
}

// RMSNorm is onesource's rms_norm twin from its kernel library, specialized for RMSNormLanes
// lanes: one workgroup per row; buffers x, w, y; parameters n, eps, weighted; y is
// oracle.RMSNormF32's.
func RMSNorm() *dsl.Kernel {
	return kernels.RMSNorm(kernels.Schedule{Lanes: RMSNormLanes})
}
