package rmsnorm

import "math"

// sqrt32 is the correctly rounded float32 square root (the float64 root rounds to the same value:
// 53 >= 2*24+2 bits make the double rounding innocuous).
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }
