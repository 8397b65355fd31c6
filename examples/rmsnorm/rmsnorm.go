// Package rmsnorm is RMS normalization with one workgroup per row and the canonical workgroup
// reduction (DESIGN.md contract 4):
//
//	sumsq = canonical sum over the row of x*x (x*x rounded, then added)
//	scale = 1 / sqrt(sumsq/n + eps)
//	y     = x * scale
//
// Lane l of the T-lane workgroup accumulates x[l]^2, x[l+T]^2, ... in ascending order starting
// from 0; the lanes' partial sums combine by xor-butterfly (strides 1, 2, ..., T/2), which the
// lowering maps to subgroup shuffles and shared memory. Reference computes the same in plain Go.
package rmsnorm

import "github.com/onesource-go/onesource/dsl"

// RMSNorm builds the kernel with wg invocations per workgroup (a power of two). Dispatch one
// workgroup per row; parameters: n (row length), eps.
func RMSNorm(wg int) *dsl.Kernel {
	k := dsl.New("rms_norm", wg)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eps := k.Param("eps", dsl.F32)
	row := k.WorkgroupID(dsl.X).Mul(n).Named("row")
	lane := k.LocalIndex().Named("lane")
	acc := k.Var("sumsq", float32(0))
	k.For("j", lane, n, wg, func(j dsl.Value) {
		v := x.Load(row.Add(j))
		acc.Set(acc.Get().Add(v.Mul(v)))
	})
	sum := k.ReduceSum(acc.Get()).Named("sum")
	mean := sum.Div(n.F32()).Named("mean")
	scale := k.F32(1).Div(mean.Add(eps).Sqrt()).Named("scale")
	k.For("j", lane, n, wg, func(j dsl.Value) {
		y.Store(row.Add(j), x.Load(row.Add(j)).Mul(scale))
	})
	return k
}

// Kernels returns this package's kernels at their default schedules.
func Kernels() []*dsl.Kernel { return []*dsl.Kernel{RMSNorm(64)} }

// CanonicalSum adds per-lane partial sums as the xor-butterfly with strides 1, 2, ..., T/2 does:
// a pairwise tree over lanes in index order. len(partial) is a power of two.
func CanonicalSum(partial []float32) float32 {
	v := append([]float32(nil), partial...)
	for len(v) > 1 {
		next := make([]float32, len(v)/2)
		for i := range next {
			next[i] = v[2*i] + v[2*i+1]
		}
		v = next
	}
	return v[0]
}

// Reference normalizes each row of x (rows of n values) with lanes T, as the kernel does.
func Reference(x []float32, n, T int, eps float32) []float32 {
	y := make([]float32, len(x))
	for r := 0; r*n < len(x); r++ {
		row := x[r*n : (r+1)*n]
		partial := make([]float32, T)
		for l := 0; l < T; l++ {
			acc := float32(0)
			for j := l; j < n; j += T {
				sq := row[j] * row[j]
				acc = acc + sq
			}
			partial[l] = acc
		}
		sum := CanonicalSum(partial)
		mean := sum / float32(n)
		s := mean + eps
		scale := 1 / float32(sqrt32(s))
		for j := range row {
			y[r*n+j] = row[j] * scale
		}
	}
	return y
}
