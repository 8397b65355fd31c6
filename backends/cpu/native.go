package cpu

import (
	"math"

	"github.com/onesource-go/onesource/ir"
)

// native compiles OpNative: the executor's own functions are Go's math package in float64,
// rounded to float32 (declared inexact, as every device's own functions are).
func (c *compiler) native(in *ir.Inst) step {
	d, a := c.part(in), c.part(in.Args[0])
	b := a
	if len(in.Args) > 1 {
		b = c.part(in.Args[1])
	}
	ma, mb := a.m(), b.m()
	fn := nativeGo[ir.NativeFunc(in.Aux)]
	return func(f *frame) {
		dd := d.span(f, 0)
		aa, bb := a.span(f, 0), b.span(f, 0)
		for i := range dd {
			x, y := float64(math.Float32frombits(aa[i&ma])), float64(math.Float32frombits(bb[i&mb]))
			dd[i] = math.Float32bits(float32(fn(x, y)))
		}
	}
}

// nativeGo is the Go function of each native function.
var nativeGo = [ir.NativeCount]func(x, y float64) float64{
	ir.NativeExp:   func(x, _ float64) float64 { return math.Exp(x) },
	ir.NativeExp2:  func(x, _ float64) float64 { return math.Exp2(x) },
	ir.NativeLog:   func(x, _ float64) float64 { return math.Log(x) },
	ir.NativeLog2:  func(x, _ float64) float64 { return math.Log2(x) },
	ir.NativeSin:   func(x, _ float64) float64 { return math.Sin(x) },
	ir.NativeCos:   func(x, _ float64) float64 { return math.Cos(x) },
	ir.NativeTanh:  func(x, _ float64) float64 { return math.Tanh(x) },
	ir.NativePow:   math.Pow,
	ir.NativeRsqrt: func(x, _ float64) float64 { return 1 / math.Sqrt(x) },
}
