package oracle

import "fmt"

// The int8 tile product of the mma islands (dsl.Kernel.MMA): tiles of MMARows x MMADepth int8
// values A and B and an MMARows x MMACols int32 tile D, all row-major (row n of B holds
// B[n][0..MMADepth-1], K-contiguous like A).
const (
	MMARows  = 16
	MMACols  = 16
	MMADepth = 32
)

// TileMMAI8 returns the int8 tile product D' = A·Bᵀ (+ D when accumulate) of the mma islands:
//
//	D'[m][n] = (accumulate ? d[m][n] : 0) + sum over k of a[m][k]*b[n][k]
//
// with a and b of MMARows*MMADepth values and d of MMARows*MMACols, all row-major. The sum is
// exact in any order (every product and partial sum of 32 int8 products fits an int32); the
// addition of d wraps at 32 bits, as int32 addition does on every backend (numeric rule 6).
func TileMMAI8(a, b []int8, d []int32, accumulate bool) ([]int32, error) {
	if len(a) != MMARows*MMADepth || len(b) != MMACols*MMADepth || (accumulate && len(d) != MMARows*MMACols) {
		return nil, fmt.Errorf("oracle: mma_i8: tiles of %d, %d and %d values, want %d, %d and %d", len(a), len(b), len(d), MMARows*MMADepth, MMACols*MMADepth, MMARows*MMACols)
	}
	out := make([]int32, MMARows*MMACols)
	for m := 0; m < MMARows; m++ {
		for n := 0; n < MMACols; n++ {
			var s int32
			for k := 0; k < MMADepth; k++ {
				s += int32(a[m*MMADepth+k]) * int32(b[n*MMADepth+k])
			}
			if accumulate {
				s = int32(uint32(d[m*MMACols+n]) + uint32(s))
			}
			out[m*MMACols+n] = s
		}
	}
	return out, nil
}
