package kernels

import (
	"fmt"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The normalization ops on f32 rows: rms_norm and add_rmsnorm (the fused residual add +
// rms_norm + weight). Both run one workgroup per row: the workgroup sums the squares in the
// canonical order of width oracle.RowWidth (oracle.SumSqF32), then scales the row, each
// invocation the values its slots own. See oracle.RMSNormF32 and
// oracle.AddRMSNormF32 for the op sequence.

func init() {
	Register(Cell{Op: "rms_norm", Type: oracle.F32, Build: RMSNorm, Cases: rmsNormCases, Width: oracle.RowWidth})
	Register(Cell{Op: "add_rmsnorm", Type: oracle.F32, Build: AddRMSNorm, Cases: addRMSNormCases, Width: oracle.RowWidth})
}

// rmsScale emits the canonical 1/sqrt(sumsq/n + eps) of the row whose squares term(i) gives
// (oracle rmsScale: SumSqF32, one division by float32(n), add eps, sqrt, reciprocal). Every
// invocation of the workgroup must reach it.
func rmsScale(k *dsl.Kernel, c dsl.Canon, n, eps dsl.Value, value func(i dsl.Value) dsl.Value) dsl.Value {
	ss := c.Sum(n, func(i dsl.Value) dsl.Value {
		v := value(i)
		return v.Mul(v)
	}).Named("sumsq")
	mean := ss.Div(n.F32()).Named("mean")
	return Rsqrt(k, mean.Add(eps)).Named("scale")
}

// RMSNorm builds rms_norm (ggml_rms_norm, optionally fused with the weight multiply) with
// s.Lanes invocations per workgroup, one workgroup per row.
//
// Bindings: 0 x (f32, rows*n), 1 w (f32, n; bind one value when unweighted), 2 y (f32, rows*n).
// Parameters: n (u32, row length), eps (f32), weighted (u32: 0 y = x*scale, else
// y = (x*scale)*w). Dispatch (rows, 1, 1). y = oracle.RMSNormF32(x, w, n, eps).
func RMSNorm(s Schedule) *dsl.Kernel {
	k := dsl.New("rms_norm", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eps := k.Param("eps", dsl.F32)
	weighted := k.Param("weighted", dsl.U32).Ne(0)
	row := k.WorkgroupID(dsl.X).Mul(n).Named("row")
	c := rowCanon(k, s)
	scale := rmsScale(k, c, n, eps, func(i dsl.Value) dsl.Value { return x.Load(row.Add(i)) })
	c.Each(n, func(j dsl.Value) {
		v := x.Load(row.Add(j)).Mul(scale)
		k.If(weighted, func() { y.Store(row.Add(j), v.Mul(w.Load(j))) }).Else(func() { y.Store(row.Add(j), v) })
	})
	return k
}

// AddRMSNorm builds add_rmsnorm, the fused residual add + rms_norm + weight, with s.Lanes
// invocations per workgroup, one workgroup per row. It stores sum = a + b (the new residual
// stream) and y = rms_norm(sum) (times w when weighted), reading a and b once.
//
// Bindings: 0 a, 1 b (f32, rows*n), 2 w (f32, n; one value when unweighted), 3 sum (f32,
// rows*n), 4 y (f32, rows*n). Parameters: n (u32), eps (f32), weighted (u32). Dispatch
// (rows, 1, 1). sum, y = oracle.AddRMSNormF32(a, b, w, n, eps).
func AddRMSNorm(s Schedule) *dsl.Kernel {
	k := dsl.New("add_rmsnorm", s.Lanes)
	a := k.Buffer("a", dsl.F32, dsl.Read)
	b := k.Buffer("b", dsl.F32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	sum := k.Buffer("sum", dsl.F32, dsl.ReadWrite)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eps := k.Param("eps", dsl.F32)
	weighted := k.Param("weighted", dsl.U32).Ne(0)
	row := k.WorkgroupID(dsl.X).Mul(n).Named("row")
	c := rowCanon(k, s)
	// The first pass adds, stores the sum and squares it; the invocation reads its own stores
	// back in the second pass (Each: same invocation, same addresses, no barrier needed).
	scale := rmsScale(k, c, n, eps, func(i dsl.Value) dsl.Value {
		v := a.Load(row.Add(i)).Add(b.Load(row.Add(i)))
		sum.Store(row.Add(i), v)
		return v
	})
	c.Each(n, func(j dsl.Value) {
		v := sum.Load(row.Add(j)).Mul(scale)
		k.If(weighted, func() { y.Store(row.Add(j), v.Mul(w.Load(j))) }).Else(func() { y.Store(row.Add(j), v) })
	})
	return k
}

// normShape is one shape of the normalization cases: rows of n values, each row of the kind
// kinds[row % len(kinds)] (see randRow), with specials written over them.
type normShape struct {
	name     string
	rows, n  int
	kinds    []string
	specials map[int]float32 // flat index -> value
	eps      float32
	weighted bool
}

// normShapes are the shapes every normalization op is judged on, the same at every schedule:
// n = 1, n below, at, above and not a multiple of the canonical width W (so of every lane count),
// zero rows, subnormal rows, rows whose squares overflow or underflow, rows holding ±Inf or NaN,
// eps = 0.
func normShapes() []normShape {
	const T = oracle.RowWidth
	return []normShape{
		{name: "n1", rows: 3, n: 1, kinds: []string{"normal", "zeros", "tiny"}, eps: 1e-6},
		{name: "small", rows: 2, n: 5, kinds: []string{"normal"}, eps: 1e-5, weighted: true},
		{name: "below", rows: 2, n: max(1, T-1), kinds: []string{"normal", "wide"}, eps: 1e-6},
		{name: "exact", rows: 2, n: T, kinds: []string{"normal", "tiny"}, eps: 1e-6, weighted: true},
		{name: "ragged", rows: 4, n: 3*T + 7, kinds: []string{"normal", "wide", "zeros", "tiny"}, eps: 1e-6, weighted: true},
		{name: "long", rows: 1, n: 1000, kinds: []string{"normal"}, eps: 1e-6},
		{name: "order", rows: 8, n: 8*T + 5, kinds: []string{"unit"}, eps: 1e-6, weighted: true}, // bits depend on the order
		{name: "specials", rows: 5, n: T + 3, kinds: []string{"normal"}, eps: 1e-6, weighted: true,
			specials: map[int]float32{
				0: 1e30, 1: -3e25, // squares overflow to +Inf: the row scales to zero
				T + 3 + 2:   posInf,                          // an infinite row: Inf*0 = NaN, finite*0 = 0
				2*(T+3) + 0: nanF,                            // NaN propagates through the sum
				3*(T+3) + 5: maxFinite, 3*(T+3) + 6: negZero, // mixed
				4*(T+3) + 1: minSub, 4*(T+3) + 2: maxSub, 4*(T+3) + 3: negInfF,
			}},
		{name: "eps0", rows: 2, n: 7, kinds: []string{"zeros", "normal"}, eps: 0}, // 0/0 rows: 1/sqrt(0) = Inf, 0*Inf = NaN
	}
}

// input returns the input of shape sh drawn from rng.
func (sh normShape) input(rng *rand.Rand) []float32 {
	x := make([]float32, 0, sh.rows*sh.n)
	for r := 0; r < sh.rows; r++ {
		x = append(x, randRow(rng, sh.n, sh.kinds[r%len(sh.kinds)])...)
	}
	for i, v := range sh.specials {
		if i < len(x) {
			x[i] = v
		}
	}
	return x
}

// weights returns n weights (a few zero, negative or large), or one zero value when unweighted
// (the binding still needs a buffer), and the slice the oracle takes (nil when unweighted).
func (sh normShape) weights(rng *rand.Rand) (bind, ref []float32) {
	if !sh.weighted {
		return []float32{0}, nil
	}
	w := make([]float32, sh.n)
	for i := range w {
		w[i] = float32(1 + 0.25*rng.NormFloat64())
	}
	w[0] = -2
	if sh.n > 3 {
		w[3] = 0
		w[2] = 1e30
	}
	return w, w
}

func rmsNormCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(101))
	var out []Case
	for _, sh := range normShapes() {
		x := sh.input(rng)
		w, wref := sh.weights(rng)
		want := make([]float32, len(x))
		if err := oracle.RMSNormF32(want, x, wref, sh.n, sh.eps); err != nil {
			return nil, fmt.Errorf("rms_norm %s: %w", sh.name, err)
		}
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%dx%d", sh.name, sh.rows, sh.n),
			Buffers: [][]byte{f32Bytes(x), f32Bytes(w), make([]byte, 4*len(x))},
			Params:  []uint32{uint32(sh.n), fbits(sh.eps), b2u(sh.weighted)},
			Groups:  [3]uint32{uint32(sh.rows), 1, 1},
			Outputs: []int{2},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}

func addRMSNormCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(102))
	var out []Case
	for ci, sh := range normShapes() {
		a := sh.input(rng)
		b := randRow(rng, len(a), "normal")
		switch ci % 3 {
		case 1: // cancellation: a + (-a) = +0, and -0 + -0 = -0
			for i := range b {
				b[i] = -a[i]
				if i%4 == 0 {
					a[i], b[i] = negZero, negZero
				}
			}
		case 2: // b carries the specials
			a, b = b, a
		}
		w, wref := sh.weights(rng)
		sum := make([]float32, len(a))
		want := make([]float32, len(a))
		if err := oracle.AddRMSNormF32(sum, want, a, b, wref, sh.n, sh.eps); err != nil {
			return nil, fmt.Errorf("add_rmsnorm %s: %w", sh.name, err)
		}
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%dx%d", sh.name, sh.rows, sh.n),
			Buffers: [][]byte{f32Bytes(a), f32Bytes(b), f32Bytes(w), make([]byte, 4*len(a)), make([]byte, 4*len(a))},
			Params:  []uint32{uint32(sh.n), fbits(sh.eps), b2u(sh.weighted)},
			Groups:  [3]uint32{uint32(sh.rows), 1, 1},
			Outputs: []int{3, 4},
			Want:    [][]byte{f32Bytes(sum), f32Bytes(want)},
			Elem:    []string{"f32", "f32"},
		})
	}
	return out, nil
}
