package kernels

import (
	"fmt"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The subgroup_native cell exercises the declared-inexact fast path dsl.Subgroup.NativeSum and
// NativeMax: the device's own subgroup reduction where it has one over the cluster's width (8
// lanes, lavapipe's subgroup), the canonical butterfly elsewhere. The f32 sums are judged within
// a tolerance (positive inputs: any order of 8 additions is within a few ULP of the canonical
// one); the f32 maximum of non-NaN values and the integer sum are exact in any order and are
// still declared inexact outputs (bound 0) because their meaning is the device's.

func init() {
	Register(Cell{Op: "subgroup_native", Type: oracle.F32, Build: SubgroupNativeKernel, Cases: subgroupNativeCases,
		Feature: "dsl.Subgroup native (inexact) reductions"})
}

// SubgroupNativeKernel builds the cell: invocation i takes x[i] and k[i] (0 past n) and stores
// NativeSum(x), NativeMax(x) and NativeSum(k) over clusters of 8 for i < n. Bindings: 0 x (f32,
// n), 1 k (i32, n), 2 y (f32, 2n), 3 z (i32, n). Parameters: n (u32). Dispatch (ceil(n/T), 1, 1).
func SubgroupNativeKernel(s Schedule) *dsl.Kernel {
	k := dsl.New("subgroup_native", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	ki := k.Buffer("k", dsl.I32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	z := k.Buffer("z", dsl.I32, dsl.Write)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	in := i.Lt(n)
	safe := k.Select(in, i, uint32(0))
	v := k.Select(in, x.Load(safe), float32(0))
	w := k.Select(in, ki.Load(safe), int32(0))
	sg := k.Subgroup(8)
	sum, mx, isum := sg.NativeSum(v), sg.NativeMax(v), sg.NativeSum(w)
	k.If(in, func() {
		y.Store(i, sum)
		y.Store(n.Add(i), mx)
		z.Store(i, isum)
	})
	return k
}

func subgroupNativeCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(118))
	var out []Case
	for _, n := range []int{8, 1000} {
		x := make([]float32, n)
		kv := make([]int32, n)
		for j := range x {
			x[j] = 1 + rng.Float32()*float32(j%7+1)
			kv[j] = int32(rng.Uint32())
		}
		m := (n + 7) / 8 * 8
		xp := make([]float32, m)
		kp := make([]int32, m)
		copy(xp, x)
		copy(kp, kv)
		sum := oracle.SubgroupReduce(xp, 8, func(a, b float32) float32 { return a + b })
		mx := oracle.SubgroupReduce(xp, 8, oracle.MaxOp)
		isum := oracle.SubgroupReduce(kp, 8, func(a, b int32) int32 { return a + b })
		out = append(out, Case{
			Name:    fmt.Sprintf("n%d", n),
			Buffers: [][]byte{f32Bytes(x), i32Bytes(kv), make([]byte, 8*n), make([]byte, 4*n)},
			Params:  []uint32{uint32(n)},
			Groups:  [3]uint32{uint32((n + s.Lanes - 1) / s.Lanes), 1, 1},
			Outputs: []int{2, 3},
			Want:    [][]byte{f32Bytes(append(sum[:n:n], mx[:n]...)), i32Bytes(isum[:n])},
			Elem:    []string{"f32", "i32"},
			Tol:     []*Tolerance{{Name: "native sum and max", MaxULP: 4}, nil},
		})
	}
	return out, nil
}
