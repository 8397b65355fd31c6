package dsl_test

import (
	"fmt"
	"strings"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/lower"
)

// bf16 tensors are read and written as bf16; arithmetic on bf16 values is the f32 operation
// rounded to bf16 (nearest even), which is the correctly rounded bf16 operation. Package lower
// turns the bf16 buffer into u16 storage and every bf16 value into an f32, so every backend runs
// it without knowing bf16.
func ExampleValue_BF16() {
	k := dsl.New("bf16_axpy", 64)
	x := k.Buffer("x", dsl.BF16, dsl.Read)
	y := k.Buffer("y", dsl.BF16, dsl.ReadWrite)
	a := k.Param("a", dsl.F32)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() {
		y.Store(i, a.BF16().Mul(x.Load(i)).Add(y.Load(i))) // two bf16 roundings, no FMA
	})
	built, err := k.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	lowered, err := lower.Run(built, lower.Caps{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("y holds", built.Buffers[1].Elem, "elements, stored as", lowered.Buffers[1].Elem)
	// Output: y holds bf16 elements, stored as u16
}

// Narrow integer values wrap at their width, as Go's int8 and uint8 do, and store into narrow
// buffers as themselves. A load from a narrow buffer gives the 32-bit value; I8 (U8, ...) makes
// it a narrow value again.
func ExampleValue_I8() {
	k := dsl.New("saturating_free_add", 64)
	a := k.Buffer("a", dsl.I8, dsl.Read)
	b := k.Buffer("b", dsl.I8, dsl.Read)
	c := k.Buffer("c", dsl.I8, dsl.Write)
	i := k.GlobalID(dsl.X)
	sum := a.Load(i).I8().Add(b.Load(i).I8()) // 100 + 100 = -56, as int8(100) + int8(100) in Go
	c.Store(i, sum)
	fmt.Println(a.Load(i).Type(), "->", sum.Type())
	if _, err := k.Build(); err != nil {
		fmt.Println(err)
	}
	// Output: i32 -> i8
}

// A buffer of Vec(F32, 4) is read 16 bytes at a time; Dot, LaneSum, LaneMax and LaneMin combine
// the lanes in one fixed order on every backend ((l0 op l1) op (l2 op l3)), so the bits do not
// depend on the device.
func ExampleValue_Dot() {
	k := dsl.New("dot4", 64)
	x := k.Buffer("x", dsl.Vec(dsl.F32, 4), dsl.Read) // n/4 vec4s: the bytes of n f32s
	w := k.Buffer("w", dsl.Vec(dsl.F32, 4), dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	y.Store(i, x.Load(i).Dot(w.Load(i))) // (x0*w0 + x1*w1) + (x2*w2 + x3*w3)
	built, err := k.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range strings.Split(built.String(), "\n") {
		if strings.Contains(l, "extract") || strings.Contains(l, "add") || strings.Contains(l, "mul") {
			fmt.Println(strings.TrimSpace(l))
		}
	}
	// Output:
	// %3 = mul %1, %2 : vec4<f32>
	// %4 = extract lane 0 %3 : f32
	// %5 = extract lane 1 %3 : f32
	// %6 = extract lane 2 %3 : f32
	// %7 = extract lane 3 %3 : f32
	// %8 = add %4, %5 : f32
	// %9 = add %6, %7 : f32
	// %10 = add %8, %9 : f32
}
