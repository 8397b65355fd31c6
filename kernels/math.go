package kernels

import (
	"github.com/onesource-go/onesource/dsl"
)

// The portable math library lives in package dsl (dsl/math.go: Value.Exp, Log, Tanh, Sin, Cos,
// SinCos, Rsqrt and the rest, each the twin of the oracle function of the same name). The
// functions below keep the names the kernels of this package were written with: each is exactly
// the dsl method, so every kernel builds the same instructions (and gives the same bits) as
// before the library moved. Silu, Gelu and Swiglu are ggml's activations, built from it.
//
// All functions take and return f32 scalars.

const (
	geluSqrt2OverPi float32 = 0.79788456080286535587989211986876 // 0x3f4c422a
	geluCoefA       float32 = 0.044715
)

// Exp returns x.Exp() (oracle.Exp's op sequence).
func Exp(k *dsl.Kernel, x dsl.Value) dsl.Value { return x.Exp() }

// Log returns x.Log() (oracle.Log's op sequence).
func Log(k *dsl.Kernel, x dsl.Value) dsl.Value { return x.Log() }

// Tanh returns x.Tanh() (oracle.Tanh's op sequence).
func Tanh(k *dsl.Kernel, x dsl.Value) dsl.Value { return x.Tanh() }

// Sin returns x.Sin() (oracle.Sin's op sequence).
func Sin(k *dsl.Kernel, x dsl.Value) dsl.Value { return x.Sin() }

// Cos returns x.Cos() (oracle.Cos's op sequence).
func Cos(k *dsl.Kernel, x dsl.Value) dsl.Value { return x.Cos() }

// SinCos returns x.SinCos(): Sin(x) and Cos(x), sharing the range reduction and the polynomials
// (rope needs both of one angle).
func SinCos(k *dsl.Kernel, x dsl.Value) (sin, cos dsl.Value) { return x.SinCos() }

// Rsqrt returns x.Rsqrt(): 1/sqrt(x) as two correctly rounded operations (oracle.Rsqrt).
func Rsqrt(k *dsl.Kernel, x dsl.Value) dsl.Value { return x.Rsqrt() }

// Silu returns x / (1 + Exp(-x)) (oracle.Silu, ggml_silu_f32).
func Silu(k *dsl.Kernel, x dsl.Value) dsl.Value {
	return x.Div(k.F32(1).Add(x.Neg().Exp()))
}

// Gelu returns ggml's tanh-form GELU with oracle.Gelu's op order:
// u = (0.044715*x)*x; v = (sqrt(2/pi)*x)*(1 + u); (0.5*x)*(1 + Tanh(v)).
func Gelu(k *dsl.Kernel, x dsl.Value) dsl.Value {
	u := x.Mul(geluCoefA).Mul(x)
	v := x.Mul(geluSqrt2OverPi).Mul(k.F32(1).Add(u))
	t := v.Tanh()
	return x.Mul(0.5).Mul(k.F32(1).Add(t))
}

// absBits returns |x| by clearing the sign bit (a NaN stays a NaN).
func absBits(x dsl.Value) dsl.Value {
	return x.Bitcast(dsl.U32).And(uint32(0x7fffffff)).Bitcast(dsl.F32)
}

// Swiglu returns Silu(x) * g (oracle.Swiglu).
func Swiglu(k *dsl.Kernel, x, g dsl.Value) dsl.Value {
	return Silu(k, x).Mul(g)
}
