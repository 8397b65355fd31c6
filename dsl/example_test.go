package dsl_test

import (
	"fmt"
	"strings"

	"github.com/onesource-go/onesource/dsl"
)

// A kernel is an ordinary Go function; its parameters are the schedule.
func saxpy(wg int) *dsl.Kernel {
	k := dsl.New("saxpy", wg)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.ReadWrite)
	a := k.Param("a", dsl.F32)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() {
		y.Store(i, a.Mul(x.Load(i)).Add(y.Load(i)))
	})
	return k
}

func Example() {
	k, err := saxpy(128).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(k.Name, k.WorkgroupSize, len(k.Buffers), "buffers,", len(k.Params), "parameters")
	// Output: saxpy [128 1 1] 2 buffers, 2 parameters
}

// Mistakes are errors naming the line that made them.
func Example_typeError() {
	k := dsl.New("bad", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	i := k.GlobalID(dsl.X)
	x.Load(i).Add(i) // f32 + u32
	_, err := k.Build()
	msg := err.Error()
	fmt.Println(msg[strings.LastIndex(msg, "/")+1:])
	// Output: example_test.go:39: kernel bad: Add: mismatched types f32 and u32
}

// ReduceSum combines one value per invocation in the canonical order, so the result has the same
// bits on every device whatever its subgroup size.
func ExampleKernel_ReduceSum() {
	k := dsl.New("sum", 256)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	out := k.Buffer("out", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	acc := k.Var("acc", float32(0))
	// Each lane adds its strided elements in ascending order...
	k.For("j", k.LocalIndex(), n, k.Lanes(), func(j dsl.Value) {
		acc.Set(acc.Get().Add(x.Load(j)))
	})
	// ...then the lanes combine by xor-butterfly.
	total := k.ReduceSum(acc.Get())
	k.If(k.LocalIndex().Eq(0), func() { out.Store(0, total) })
	_, err := k.Build()
	fmt.Println(err)
	// Output: <nil>
}

// Build verifies the kernel and returns its typed IR. The IR's text form is stable: a*x and the
// add are two separately rounded instructions (never contracted to an FMA).
func ExampleKernel_Build() {
	k, err := saxpy(64).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(k)
	// Output:
	// kernel saxpy workgroup(64, 1, 1)
	//   buffer 0 x: f32 read
	//   buffer 1 y: f32 read_write
	//   param 0 a: f32
	//   param 1 n: u32
	// {
	//   %0 = param 0 : f32  // a
	//   %1 = param 1 : u32  // n
	//   %2 = builtin global_id.x : u32
	//   %3 = lt %2, %1 : bool
	//   if %3 {
	//     %4 = load buf 0 %2 : f32
	//     %5 = mul %0, %4 : f32
	//     %6 = load buf 1 %2 : f32
	//     %7 = add %5, %6 : f32
	//     store buf 1 %2, %7
	//   }
	// }
}
