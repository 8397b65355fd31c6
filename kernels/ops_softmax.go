package kernels

import (
	"fmt"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

func init() {
	Register(Cell{Op: "softmax", Type: oracle.F32, Build: Softmax, Cases: softmaxCases, Width: oracle.RowWidth})
}

// Softmax builds the row softmax with scale and optional additive mask (ggml_soft_max_ext,
// max_bias 0) with s.Lanes invocations per workgroup, one workgroup per row. Per row, in
// oracle.SoftmaxF32's op sequence (canonical max and sum of width oracle.RowWidth):
//
//	v[i] = x[i]*scale (+ mask)   m = canonical max of v   e[i] = Exp(v[i] - m)
//	s = canonical sum of e       y[i] = e[i] * (1/s)
//
// Three passes over the row: the max, then e (stored in y) and its sum, then the scaling of y in
// place (each invocation rereads only what it wrote: Canon.Each).
//
// Bindings: 0 x (f32, rows*n), 1 mask (f32, maskRows*n; one value when maskRows is 0), 2 y (f32,
// rows*n). Parameters: n (u32, row length), scale (f32), maskRows (u32: 0 no mask, else row r
// adds mask row r % maskRows: 1 broadcasts one row, rows gives one mask row per row). Dispatch
// (rows, 1, 1).
func Softmax(s Schedule) *dsl.Kernel {
	k := dsl.New("softmax", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	mask := k.Buffer("mask", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.ReadWrite)
	n := k.Param("n", dsl.U32)
	scale := k.Param("scale", dsl.F32)
	maskRows := k.Param("mask_rows", dsl.U32)
	wg := k.WorkgroupID(dsl.X)
	row := wg.Mul(n).Named("row")
	c := rowCanon(k, s)
	masked := maskRows.Ne(0)
	// The mask row of this row; the divisor is never 0 (unmasked kernels never read the mask).
	mrow := wg.Rem(k.Select(masked, maskRows, k.U32(1))).Mul(n).Named("mask_row")
	value := func(i dsl.Value) dsl.Value {
		v := k.Var("v", x.Load(row.Add(i)).Mul(scale))
		k.If(masked, func() { v.Set(v.Get().Add(mask.Load(mrow.Add(i)))) })
		return v.Get()
	}
	m := c.Max(n, value).Named("max")
	sum := c.Sum(n, func(i dsl.Value) dsl.Value {
		e := Exp(k, value(i).Sub(m))
		y.Store(row.Add(i), e)
		return e
	})
	r := k.F32(1).Div(sum).Named("inv_sum")
	c.Each(n, func(j dsl.Value) {
		y.Store(row.Add(j), y.Load(row.Add(j)).Mul(r))
	})
	return k
}

// softmaxShape is one softmax case: rows of n, the scale and the mask (none, one row, or one row
// per row), with edits applied to x after it is drawn.
type softmaxShape struct {
	name    string
	rows, n int
	scale   float32
	mask    int    // 0 none, 1 one broadcast row, 2 causal (one row per row)
	kind    string // randRow kind of x; "" is "normal"
	edit    func(x []float32, n int)
}

// softmaxShapes are the softmax cases, the same at every schedule (T is the canonical width).
func softmaxShapes() []softmaxShape {
	const T = oracle.RowWidth
	return []softmaxShape{
		{name: "n1", rows: 3, n: 1, scale: 1, edit: func(x []float32, n int) { x[2] = negInfF }},
		{name: "small", rows: 2, n: 5, scale: 0.125, mask: 1},
		{name: "below", rows: 3, n: max(1, T-1), scale: 1, mask: 2},
		{name: "exact", rows: 2, n: T, scale: 0.5},
		{name: "ragged", rows: 4, n: 3*T + 7, scale: 0.088388346, mask: 2},
		{name: "long", rows: 1, n: 1000, scale: 1, mask: 1},
		{name: "order", rows: 4, n: 8*T + 5, scale: 1, kind: "unit"}, // sums whose bits depend on the order
		{name: "specials", rows: 7, n: T + 5, scale: 1, edit: func(x []float32, n int) {
			for i := 0; i < n; i++ {
				x[i] = negInfF // row 0: entirely -Inf: NaN everywhere
			}
			x[n+1], x[n+4] = negInfF, negInfF // row 1: some -Inf: exactly 0 there
			x[2*n+3] = posInf                 // row 2: +Inf: Inf-Inf = NaN
			x[3*n+2] = nanF                   // row 3: NaN
			x[4*n], x[4*n+1] = 1e30, -1e30    // row 4: huge: everything else underflows to 0
			x[5*n], x[5*n+n/2] = 95, 95       // row 5: a tie at the max; the rest subnormal or 0
			for i := 6 * n; i < 7*n; i++ {    // row 6: zeros of both signs: uniform
				x[i] = 0
				if i%2 == 1 {
					x[i] = negZero
				}
			}
		}},
		{name: "scale_overflow", rows: 2, n: 9, scale: 1e30, mask: 1},
		{name: "subnormal", rows: 2, n: 2*T + 1, scale: 1, edit: func(x []float32, n int) {
			for i := range x { // differences of -87..-104 from the max: subnormal exponentials
				x[i] = -87 - float32(i%18)
			}
			x[0], x[n] = 0, 0
		}},
	}
}

func softmaxCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(103))
	var out []Case
	for _, sh := range softmaxShapes() {
		x := make([]float32, 0, sh.rows*sh.n)
		kind := sh.kind
		if kind == "" {
			kind = "normal"
		}
		x = append(x, randRow(rng, sh.rows*sh.n, kind)...)
		if sh.edit != nil {
			sh.edit(x, sh.n)
		}
		var mask []float32
		maskRows := 0
		switch sh.mask {
		case 1: // one row: small biases and a few masked positions
			maskRows = 1
			mask = make([]float32, sh.n)
			for i := range mask {
				mask[i] = float32(rng.NormFloat64())
				if i%7 == 3 {
					mask[i] = negInfF
				}
			}
		case 2: // causal, one mask row per row
			maskRows = sh.rows
			mask = make([]float32, sh.rows*sh.n)
			for r := 0; r < sh.rows; r++ {
				for i := 0; i < sh.n; i++ {
					if i > r*sh.n/sh.rows {
						mask[r*sh.n+i] = negInfF
					}
				}
			}
		}
		want := make([]float32, len(x))
		if err := oracle.SoftmaxF32(want, x, mask, sh.n, sh.scale); err != nil {
			return nil, fmt.Errorf("softmax %s: %w", sh.name, err)
		}
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%dx%d", sh.name, sh.rows, sh.n),
			Buffers: [][]byte{f32Bytes(x), f32Bytes(mask), make([]byte, 4*len(x))},
			Params:  []uint32{uint32(sh.n), fbits(sh.scale), uint32(maskRows)},
			Groups:  [3]uint32{uint32(sh.rows), 1, 1},
			Outputs: []int{2},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}
