package dsl_test

import (
	"fmt"
	"math"
	"strings"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// GELU in its exact form, 0.5*x*(1 + erf(x/sqrt(2))), with the library's Erf: the kernel gives
// the bits of oracle.Erf's op sequence on every device, so its results can be checked against
// the same formula evaluated with package oracle on the CPU.
func ExampleValue_Erf() {
	k := dsl.New("gelu_erf", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() {
		v := x.Load(i)
		e := v.Mul(float32(1 / math.Sqrt2)).Erf()
		y.Store(i, v.Mul(0.5).Mul(k.F32(1).Add(e)))
	})
	if _, err := k.Build(); err != nil {
		fmt.Println(err)
		return
	}
	// What the kernel computes for x = 1, written with the oracle twins in the same order.
	gelu := func(v float32) float32 {
		e := oracle.Erf(v * float32(1/math.Sqrt2))
		return (v * 0.5) * (1 + e)
	}
	fmt.Printf("gelu(1) = %.7g, gelu(2) = %.7g\n", gelu(1), gelu(2))
	// Output: gelu(1) = 0.8413447, gelu(2) = 1.9545
}

// Log, Exp, Pow and the rest are methods of an f32 Value and take Go numbers as operands: a
// numerically stable softplus, log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), and a power.
func ExampleValue_Log() {
	k := dsl.New("softplus_pow", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	z := k.Buffer("z", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	v := x.Load(i)
	y.Store(i, v.Max(0).Add(k.F32(1).Add(v.Abs().Neg().Exp()).Log()))
	z.Store(i, v.Abs().Pow(1.5).Copysign(v)) // sign-preserving |x|^1.5
	_, err := k.Build()
	fmt.Println(err)
	// Output: <nil>
}

// Fma rounds once: here a*a - (1+2^-11) is 2^-24 exactly, while Mul then Add rounds the product
// first and gives 0. The lowering folds both constant expressions with the targets' semantics;
// a target without an exact fused multiply-add (Vulkan) runs an exact integer emulation of the
// same single rounding.
func ExampleValue_Fma() {
	k := dsl.New("fma", 1)
	out := k.Buffer("out", dsl.F32, dsl.Write)
	a := k.F32(1 + 0x1p-12)
	c := float32(-(1 + 0x1p-11))
	out.Store(0, a.Fma(a, c))
	out.Store(1, a.Mul(a).Add(c))
	low, err := lower.Run(k.MustBuild(), lower.Caps{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ir.Walk(low.Body, func(in *ir.Inst) bool {
		if in.Op == ir.OpStore {
			fmt.Println(ir.FormatConst(in.Args[1].Type, in.Args[1].Aux))
		}
		return true
	})
	// Output:
	// 5.9604645e-08
	// 0.0
}

// Native is the opt-in fast path: the device's own function (GLSL.std.450 Exp on Vulkan,
// __expf on CUDA and HIP, fast::exp on MSL). Its bits differ between devices, so a cell that
// uses it declares a ULP bound per output and is reported "inexact, max ULP N", never bit-exact.
func ExampleValue_Native() {
	k := dsl.New("fast_softmax_numerator", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	m := k.Param("max", dsl.F32)
	i := k.GlobalID(dsl.X)
	y.Store(i, x.Load(i).Sub(m).Native(dsl.NativeExp))
	built := k.MustBuild()
	for _, line := range strings.Split(built.String(), "\n") {
		if strings.Contains(line, "native") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output: %4 = native.exp %3 : f32
}
