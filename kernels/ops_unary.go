package kernels

import (
	"fmt"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The element-wise ops on one f32 tensor: silu, gelu (ggml's tanh form) and scale. Each kernel
// is one element per invocation (eachElement: adjacent invocations take adjacent elements) over y[i] = f(x[i]) with
// the portable math of math.go; no reduction, so the bits do not depend on the schedule.

func init() {
	Register(Cell{Op: "silu", Type: oracle.F32, DefaultSubgroups: elementSubgroups, Build: SiluKernel, Cases: func(s Schedule) ([]Case, error) {
		return unaryCases(s, 106, 0, func(dst, x []float32, _ float32) error { return oracle.SiluF32(dst, x) })
	}})
	Register(Cell{Op: "gelu", Type: oracle.F32, DefaultSubgroups: elementSubgroups, Build: GeluKernel, Cases: func(s Schedule) ([]Case, error) {
		return unaryCases(s, 107, 0, func(dst, x []float32, _ float32) error { return oracle.GeluF32(dst, x) })
	}})
	Register(Cell{Op: "scale", Type: oracle.F32, DefaultSubgroups: elementSubgroups, Build: ScaleKernel, Cases: func(s Schedule) ([]Case, error) {
		return unaryCases(s, 108, 1, oracle.ScaleF32)
	}})
}

// unaryKernel builds y[i] = f(x[i]) for i < n. Bindings: 0 x (f32, n), 1 y (f32, n).
// Parameters: n (u32), then the extra ones f declares.
func unaryKernel(name string, s Schedule, params func(k *dsl.Kernel) []dsl.Value, f func(k *dsl.Kernel, x dsl.Value, p []dsl.Value) dsl.Value) *dsl.Kernel {
	k := dsl.New(name, s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	var ps []dsl.Value
	if params != nil {
		ps = params(k)
	}
	eachElement(k, n, s.Lanes, func(i dsl.Value) { y.Store(i, f(k, x.Load(i), ps)) })
	return k
}

// SiluKernel builds silu: y = x / (1 + Exp(-x)) (oracle.SiluF32). Bindings: 0 x, 1 y (f32, n).
// Parameters: n (u32). Dispatch ElemGroups(n, T).
func SiluKernel(s Schedule) *dsl.Kernel {
	return unaryKernel("silu", s, nil, func(k *dsl.Kernel, x dsl.Value, _ []dsl.Value) dsl.Value { return Silu(k, x) })
}

// GeluKernel builds gelu in ggml's tanh form (oracle.GeluF32). Bindings: 0 x, 1 y (f32, n).
// Parameters: n (u32). Dispatch ElemGroups(n, T).
func GeluKernel(s Schedule) *dsl.Kernel {
	return unaryKernel("gelu", s, nil, func(k *dsl.Kernel, x dsl.Value, _ []dsl.Value) dsl.Value { return Gelu(k, x) })
}

// ScaleKernel builds scale: y = x * s (oracle.ScaleF32). Bindings: 0 x, 1 y (f32, n). Parameters:
// n (u32), s (f32). Dispatch ElemGroups(n, T).
func ScaleKernel(s Schedule) *dsl.Kernel {
	return unaryKernel("scale", s,
		func(k *dsl.Kernel) []dsl.Value { return []dsl.Value{k.Param("s", dsl.F32)} },
		func(k *dsl.Kernel, x dsl.Value, p []dsl.Value) dsl.Value { return x.Mul(p[0]) })
}

// elemSize is the length of an element-wise case and the layout of its grid: rows > 0 dispatches
// it in that many rows of workgroups along y (ElemGroups does so only past 65535 workgroups, more
// than a case holds), so every case set covers the y part of eachElement's index too.
type elemSize struct{ n, rows int }

// grid is the case's dispatch at T lanes.
func (sz elemSize) grid(T int) [3]uint32 {
	if sz.rows == 0 {
		return ElemGroups(sz.n, T)
	}
	g := max(1, (sz.n+T-1)/T)
	x := (g + sz.rows - 1) / sz.rows
	return [3]uint32{uint32(x), uint32(sz.rows), 1}
}

// name names the case: its sizes, and the rows of its grid when it has them.
func (sz elemSize) name(sizes string) string {
	if sz.rows > 0 {
		return fmt.Sprintf("%s_y%d", sizes, sz.rows)
	}
	return sizes
}

// elemSizes are the lengths the element-wise cases use, the same at every schedule: 1, lengths
// that are and are not multiples of every lane count up to 256, and one laid out in three rows of
// workgroups.
func elemSizes() []elemSize {
	return []elemSize{{1, 0}, {5, 0}, {255, 0}, {256, 0}, {775, 0}, {1000, 0}, {2563, 3}}
}

// elemValues returns n inputs: the special values first (±0, ±Inf, NaN, the subnormal extremes,
// ±max, and the arguments where Exp overflows or underflows), then N(0,1) times powers of ten,
// then uniform values in [-20, 20] and over the whole float32 range.
func elemValues(rng *rand.Rand, n int) []float32 {
	special := []float32{0, negZero, posInf, negInfF, nanF, minSub, -minSub, maxSub, -maxSub,
		maxFinite, -maxFinite, 88.7, -88.7, 89.5, -89.5, 104, -104, 0.3125, -0.3125, 1, -1,
		9.01, -9.01, 1e-20, -1e-20, 0x1p-12, -0x1p-13}
	x := make([]float32, n)
	for i := range x {
		switch {
		case i < len(special):
			x[i] = special[i]
		case i%3 == 0:
			x[i] = float32(rng.NormFloat64() * 40 * rng.Float64())
		case i%3 == 1:
			x[i] = randRow(rng, 1, "wide")[0]
		default:
			x[i] = randRow(rng, 1, "normal")[0]
		}
	}
	return x
}

// unaryCases runs ref (the oracle op) over elemValues for every elemSizes length. With scalars
// > 0 the op takes a scalar parameter, drawn from a list of finite, tiny, huge and zero values.
func unaryCases(s Schedule, seed int64, scalars int, ref func(dst, x []float32, sc float32) error) ([]Case, error) {
	rng := rand.New(rand.NewSource(seed))
	scales := []float32{0.125, -3, 1e-30, 1e30, 0, negZero, posInf}
	var out []Case
	for ci, sz := range elemSizes() {
		x := elemValues(rng, sz.n)
		var sc float32
		params := []uint32{uint32(sz.n)}
		if scalars > 0 {
			sc = scales[ci%len(scales)]
			params = append(params, fbits(sc))
		}
		want := make([]float32, sz.n)
		if err := ref(want, x, sc); err != nil {
			return nil, err
		}
		groups := sz.grid(s.Lanes)
		out = append(out, Case{
			Name:    sz.name(fmt.Sprintf("n%d", sz.n)),
			Buffers: [][]byte{f32Bytes(x), make([]byte, 4*sz.n)},
			Params:  params,
			Groups:  groups,
			Outputs: []int{1},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}
