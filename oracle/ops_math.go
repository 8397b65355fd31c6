package oracle

import "fmt"

// MathOp is one function of the math library as the math conformance cells use it: its name and
// its meaning on the cell's inputs x, y and z (a unary function reads x, a binary one x and y, a
// ternary one x, y and z).
type MathOp struct {
	Name string
	F    func(x, y, z float32) float32
}

// MathOps are the exact functions of the math library (dsl's Value methods), in the order of the
// output segments of the "math" cell.
var MathOps = []MathOp{
	{"exp", func(x, _, _ float32) float32 { return Exp(x) }},
	{"exp2", func(x, _, _ float32) float32 { return Exp2(x) }},
	{"log", func(x, _, _ float32) float32 { return Log(x) }},
	{"log2", func(x, _, _ float32) float32 { return Log2(x) }},
	{"tanh", func(x, _, _ float32) float32 { return Tanh(x) }},
	{"sin", func(x, _, _ float32) float32 { return Sin(x) }},
	{"cos", func(x, _, _ float32) float32 { return Cos(x) }},
	{"pow", func(x, y, _ float32) float32 { return Pow(x, y) }},
	{"erf", func(x, _, _ float32) float32 { return Erf(x) }},
	{"sqrt", func(x, _, _ float32) float32 { return Sqrt(x) }},
	{"rsqrt", func(x, _, _ float32) float32 { return Rsqrt(x) }},
	{"floor", func(x, _, _ float32) float32 { return Floor(x) }},
	{"ceil", func(x, _, _ float32) float32 { return Ceil(x) }},
	{"round", func(x, _, _ float32) float32 { return Round(x) }},
	{"trunc", func(x, _, _ float32) float32 { return Trunc(x) }},
	{"abs", func(x, _, _ float32) float32 { return Abs(x) }},
	{"copysign", func(x, y, _ float32) float32 { return Copysign(x, y) }},
	{"min", func(x, y, _ float32) float32 { return Min(x, y) }},
	{"max", func(x, y, _ float32) float32 { return Max(x, y) }},
	{"min_num", func(x, y, _ float32) float32 { return MinNum(x, y) }},
	{"max_num", func(x, y, _ float32) float32 { return MaxNum(x, y) }},
	{"clamp", func(x, y, z float32) float32 { return Clamp(x, y, z) }},
	{"fma", func(x, y, z float32) float32 { return Fma(x, y, z) }},
}

// MathF32 is the "math" cell: dst holds len(MathOps) segments of len(x) values, segment j being
// MathOps[j] applied element by element to x, y and z (all of one length).
func MathF32(dst, x, y, z []float32) error {
	n := len(x)
	if len(y) != n || len(z) != n || len(dst) != n*len(MathOps) {
		return fmt.Errorf("oracle: MathF32: inputs of %d, %d, %d values and %d outputs, want %d each and %d", len(x), len(y), len(z), len(dst), n, n*len(MathOps))
	}
	for j, op := range MathOps {
		for i := range x {
			dst[j*n+i] = op.F(x[i], y[i], z[i])
		}
	}
	return nil
}

// NativeOps are the functions of the "math_native" cell, in the order of its outputs, each with
// the oracle function the device's own (inexact) one is measured against: the cell's outputs
// are judged in ULPs from these, never as bit-exact.
var NativeOps = []MathOp{
	{"exp", func(x, _, _ float32) float32 { return Exp(x) }},
	{"exp2", func(x, _, _ float32) float32 { return Exp2(x) }},
	{"log", func(x, _, _ float32) float32 { return Log(x) }},
	{"log2", func(x, _, _ float32) float32 { return Log2(x) }},
	{"sin", func(x, _, _ float32) float32 { return Sin(x) }},
	{"cos", func(x, _, _ float32) float32 { return Cos(x) }},
	{"tanh", func(x, _, _ float32) float32 { return Tanh(x) }},
	{"pow", func(x, y, _ float32) float32 { return Pow(x, y) }},
	{"rsqrt", func(x, _, _ float32) float32 { return Rsqrt(x) }},
}
