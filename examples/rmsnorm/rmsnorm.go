// Package rmsnorm is RMS normalization with one workgroup per row and a canonical reduction of
// fixed width (the numeric contract, rule 4, in package oracle):
//
//	sumsq = canonical sum over the row of x*x (x*x rounded, then added), width W = 256
//	scale = 1 / sqrt(sumsq/n + eps)
//	y     = x * scale
//
// W = 256 virtual lanes: virtual lane v adds x[v]^2, x[v+W]^2, ... in ascending order from -0;
// the lanes combine by xor-butterfly (strides 1, 2, ..., W/2, a pairwise tree). The kernel lays
// the W virtual lanes on its workgroup (W/T per invocation, blocked or strided) and the lowering
// maps the strides that cross invocations to subgroup shuffles and shared memory; the bits are
// the same for every workgroup size and layout. Reference computes the same in plain Go.
package rmsnorm

import (
	"math"

	"github.com/onesource-go/onesource/dsl"
)

// Width is the canonical width of the sum of squares.
const Width = 256

// RMSNorm builds the kernel with wg invocations per workgroup (a power of two up to Width) and
// the virtual lanes in the given layout. Dispatch one workgroup per row; parameters: n (row
// length), eps.
func RMSNorm(wg int, layout dsl.Layout) *dsl.Kernel {
	k := dsl.New("rms_norm", wg)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eps := k.Param("eps", dsl.F32)
	row := k.WorkgroupID(dsl.X).Mul(n).Named("row")
	c := k.Canon(Width, layout)
	sum := c.Sum(n, func(j dsl.Value) dsl.Value {
		v := x.Load(row.Add(j))
		return v.Mul(v) // rounded, then added: never an FMA
	}).Named("sum")
	mean := sum.Div(n.F32()).Named("mean")
	scale := k.F32(1).Div(mean.Add(eps).Sqrt()).Named("scale")
	c.Each(n, func(j dsl.Value) {
		y.Store(row.Add(j), x.Load(row.Add(j)).Mul(scale))
	})
	return k
}

// Kernels returns this package's kernels at their default schedules.
func Kernels() []*dsl.Kernel { return []*dsl.Kernel{RMSNorm(64, dsl.Blocked)} }

// CanonicalSum adds the virtual lanes' partial sums as the xor-butterfly with strides 1, 2, ...,
// W/2 does: a pairwise tree over the lanes in index order. len(partial) is a power of two.
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

// Reference normalizes each row of x (rows of n values) as the kernel does, with a canonical sum
// of width w (the kernel's is Width).
func Reference(x []float32, n, w int, eps float32) []float32 {
	y := make([]float32, len(x))
	for r := 0; r*n < len(x); r++ {
		row := x[r*n : (r+1)*n]
		partial := make([]float32, w)
		for l := 0; l < w; l++ {
			acc := float32(math.Copysign(0, -1))
			for j := l; j < n; j += w {
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
