package cells

import (
	"math"

	"github.com/onesource-go/onesource/oracle"
)

// The meaning of this package's ops in plain Go: what the twins must give bit for bit on every
// backend. Every float32 product is converted explicitly (float32(a*b)), which the Go spec
// makes a rounding: no fused multiply-add, as the numeric contract says.

// LayerNormGeluRef is layer_norm_gelu over rows of n values: per row, mean = the canonical sum of
// the row (width Width) / n; var = the canonical sum of float32((x-mean)*(x-mean)) / n; then
// y = oracle.Gelu(float32((x-mean) * oracle.Rsqrt(var+eps))).
func LayerNormGeluRef(x []float32, n int, eps float32) []float32 {
	y := make([]float32, len(x))
	for r := 0; r+n <= len(x); r += n {
		row := x[r : r+n]
		mean := oracle.SumF32(row, Width) / float32(n)
		variance := oracle.CanonicalSum(n, Width, func(i int) float32 {
			d := row[i] - mean
			return float32(d * d)
		}) / float32(n)
		rstd := oracle.Rsqrt(variance + eps)
		for i, v := range row {
			y[r+i] = oracle.Gelu(float32((v - mean) * rstd))
		}
	}
	return y
}

// CumsumRef is cumsum over rows of n values: y[i] = x[0] + x[1] + ... + x[i] within each row,
// added in order from -0 (so y[0] is x[0], a -0 included).
func CumsumRef(x []float32, n int) []float32 {
	y := make([]float32, len(x))
	for r := 0; r+n <= len(x); r += n {
		acc := float32(math.Copysign(0, -1))
		for i := r; i < r+n; i++ {
			acc += x[i]
			y[i] = acc
		}
	}
	return y
}
