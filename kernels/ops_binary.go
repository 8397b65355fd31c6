package kernels

import (
	"fmt"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The element-wise ops on two f32 tensors: add and mul (ggml_add, ggml_mul: b is a tensor of the
// same length or a shorter one repeated over a, e.g. one row broadcast over the rows) and swiglu
// (ggml_swiglu_split: Silu(x) * g). One element per invocation each (eachElement), adjacent invocations on adjacent
// elements.

func init() {
	Register(Cell{Op: "add", Type: oracle.F32, DefaultSubgroups: elementSubgroups, Build: AddKernel, Cases: func(s Schedule) ([]Case, error) {
		return binaryCases(s, 109, oracle.AddF32)
	}})
	Register(Cell{Op: "mul", Type: oracle.F32, DefaultSubgroups: elementSubgroups, Build: MulKernel, Cases: func(s Schedule) ([]Case, error) {
		return binaryCases(s, 110, oracle.MulF32)
	}})
	Register(Cell{Op: "swiglu", Type: oracle.F32, DefaultSubgroups: elementSubgroups, Build: SwigluKernel, Cases: swigluCases})
}

// broadcastKernel builds y[i] = f(a[i], b[i % nb]) for i < n. Bindings: 0 a (f32, n), 1 b (f32,
// nb), 2 y (f32, n). Parameters: n (u32), nb (u32, divides n; nb == n reads b element-wise).
// Dispatch BroadcastGroups(n, nb, T): a row of nb values along x (and z), the rows of a along y.
//
// The broadcast is in the grid, not in a remainder: b's position is the invocation's x, so
// nothing divides. With i % nb under a uniform branch for the broadcast case, add/f32 ran at
// 0.59-0.76x a plain hand-written shader on lavapipe even when the branch was never taken
// (llvmpipe runs both sides of a branch with masks, and an integer division is 8 scalar ones),
// without the branch 1.03-1.14x (A/B in one run, 64 x 4096, 256 lanes, other work running).
// A b shorter than the workgroup (nb < T) leaves T - nb invocations of each workgroup idle.
func broadcastKernel(name string, s Schedule, f func(a, b dsl.Value) dsl.Value) *dsl.Kernel {
	k := dsl.New(name, s.Lanes)
	a := k.Buffer("a", dsl.F32, dsl.Read)
	b := k.Buffer("b", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	nb := k.Param("nb", dsl.U32)
	j := k.WorkgroupID(dsl.Z).Mul(k.NumWorkgroups(dsl.X)).Add(k.WorkgroupID(dsl.X)).Mul(uint32(s.Lanes)).Add(k.LocalIndex()).Named("j")
	i := k.WorkgroupID(dsl.Y).Mul(nb).Add(j).Named("i")
	k.If(j.Lt(nb).And(i.Lt(n)), func() { y.Store(i, f(a.Load(i), b.Load(j))) })
	return k
}

// BroadcastGroups is the grid of add and mul over n values of a and nb of b (nb divides n): one
// workgroup per T values of a row of nb along x (up to 65535, then in slabs along z), the n/nb
// rows along y (a device takes at most 65535: more rows are more dispatches).
func BroadcastGroups(n, nb, T int) [3]uint32 {
	nb = max(1, nb)
	rows := max(1, n/nb)
	g := max(1, (nb+T-1)/T)
	x := min(g, maxGroupsX)
	return [3]uint32{uint32(x), uint32(rows), uint32((g + x - 1) / x)}
}

// AddKernel builds add: y[i] = a[i] + b[i % nb] (oracle.AddF32). Bindings: 0 a (f32, n), 1 b (f32,
// nb), 2 y (f32, n). Parameters: n (u32), nb (u32, divides n). Dispatch
// BroadcastGroups(n, nb, T).
func AddKernel(s Schedule) *dsl.Kernel {
	return broadcastKernel("add", s, func(a, b dsl.Value) dsl.Value { return a.Add(b) })
}

// MulKernel builds mul: y[i] = a[i] * b[i % nb] (oracle.MulF32). Bindings and parameters as AddKernel.
func MulKernel(s Schedule) *dsl.Kernel {
	return broadcastKernel("mul", s, func(a, b dsl.Value) dsl.Value { return a.Mul(b) })
}

// SwigluKernel builds swiglu: y[i] = Silu(x[i]) * g[i] (oracle.SwigluF32). Bindings: 0 x, 1 g, 2 y
// (f32, n). Parameters: n (u32). Dispatch ElemGroups(n, T).
func SwigluKernel(s Schedule) *dsl.Kernel {
	k := dsl.New("swiglu", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	g := k.Buffer("g", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eachElement(k, n, s.Lanes, func(i dsl.Value) { y.Store(i, Swiglu(k, x.Load(i), g.Load(i))) })
	return k
}

// binaryCases runs ref over elemValues for every elemSizes length, with b the same length, one
// "row" repeated (a divisor of n) or a single value, in turn. b mixes special values too, so
// Inf + -Inf, Inf * 0 and the signs of zero sums and products occur.
func binaryCases(s Schedule, seed int64, ref func(dst, a, b []float32) error) ([]Case, error) {
	rng := rand.New(rand.NewSource(seed))
	var out []Case
	for ci, sz := range elemSizes() {
		a := elemValues(rng, sz.n)
		nb := sz.n
		switch ci % 3 {
		case 1:
			nb = 1
		case 2:
			for d := min(sz.n, 64); d >= 1; d-- { // the largest divisor of n up to 64: a row
				if sz.n%d == 0 {
					nb = d
					break
				}
			}
		}
		b := elemValues(rng, nb+3)[3:] // shifted: b's specials meet a's other values
		if nb > 4 {
			b[nb-1], b[nb-2], b[nb-3] = negInfF, negZero, 0
		}
		want := make([]float32, sz.n)
		if err := ref(want, a, b); err != nil {
			return nil, err
		}
		out = append(out, Case{
			Name:    fmt.Sprintf("n%d_nb%d", sz.n, nb),
			Buffers: [][]byte{f32Bytes(a), f32Bytes(b), make([]byte, 4*sz.n)},
			Params:  []uint32{uint32(sz.n), uint32(nb)},
			Groups:  BroadcastGroups(sz.n, nb, s.Lanes),
			Outputs: []int{2},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}

func swigluCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(111))
	var out []Case
	for _, sz := range elemSizes() {
		x := elemValues(rng, sz.n)
		g := elemValues(rng, sz.n+5)[5:]
		want := make([]float32, sz.n)
		if err := oracle.SwigluF32(want, x, g); err != nil {
			return nil, err
		}
		groups := sz.grid(s.Lanes)
		out = append(out, Case{
			Name:    sz.name(fmt.Sprintf("n%d", sz.n)),
			Buffers: [][]byte{f32Bytes(x), f32Bytes(g), make([]byte, 4*sz.n)},
			Params:  []uint32{uint32(sz.n)},
			Groups:  groups,
			Outputs: []int{2},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}
