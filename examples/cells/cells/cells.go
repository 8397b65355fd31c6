// Package cells is a user's own cells: two ops this module owns, each with its DSL twin, its
// meaning in plain Go (oracle.go), its conformance cases and its benchmark workload, declared
// the way onesource's commands find them:
//
//	func Cells() []kernels.Cell
//
// so that every command of the method runs on them from the command line, as on the library's
// cells (onesource builds a helper program with this package in it):
//
//	go tool onesource conform ./cells
//	go tool onesource cells -vars layer_norm_gelu/f32 ./cells
//	go tool onesource gate -manifest incumbents/manifest.json -registry registry.json ./cells
//	go tool onesource drain -manifest incumbents/manifest.json -registry registry.json incumbents ./cells
//	go tool onesource report -manifest incumbents/manifest.json -registry registry.json ./cells
//
// The ops:
//
//   - layer_norm_gelu/f32: y = gelu((x - mean) / sqrt(var + eps)) per row of n values, mean and
//     var canonical sums of width 256 (oracle.CanonicalSum), GELU in ggml's tanh form
//     (kernels.Gelu, oracle.Gelu). Its hand-written incumbent (incumbents/layer_norm_gelu.comp)
//     is the naive one: one invocation per row, variance as E[x^2] - E[x]^2, which cancels on
//     rows whose mean is large against their spread (the benchmark's center is 300): wrong
//     against the oracle (a normwise error of 0.12, past the gate's 0.01), so the gate flips
//     the cell on correctness, though the naive kernel is the faster one on lavapipe (0.61
//     against the twin's 0.42 GB/s: its 64 rows run in one workgroup's SIMD lanes).
//   - cumsum/f32: the inclusive prefix sum of each row of n values, in order. The twin is the
//     plain first version, a workgroup of one invocation per row; the hand-written kernel
//     (incumbents/cumsum.comp) runs 64 rows in a workgroup, the same additions in the same
//     order: bit-exact both, the incumbent faster on a SIMD device (1.60 against 0.66 GB/s on
//     lavapipe), so the gate declines the twin and the incumbent keeps the cell (a twin with
//     s.Lanes rows per workgroup would be the incumbent's equal).
package cells

import (
	"fmt"
	"math"
	"math/rand"
	"strings"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/wire"
)

// Width is the canonical width of layer_norm_gelu's two sums (docs/contracts.md: a reduction's
// bits depend on its width only, never on the schedule).
const Width = 256

// Cells returns this package's cells.
func Cells() []kernels.Cell {
	return []kernels.Cell{
		{
			Op: "layer_norm_gelu", Type: oracle.F32, Width: Width, Build: LayerNormGelu,
			Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
				return cases(s, layerNormGeluCase, []shape{
					{"one", 1, 1, 0, 0}, {"3x7", 3, 7, 0, 1}, {"2x256", 2, 256, 1, 2}, {"4x1000 centered 300", 4, 1000, 300, 3},
					{"2x4097 specials", 2, 4097, 0, 4}, {"zero row", 1, 64, -1, 5},
				})
			},
			Workload: &kernels.Workload{Vars: []kernels.ShapeVar{
				{Name: "rows", Kind: kernels.Size, Default: 64, Doc: "rows normalized, one workgroup each"},
				{Name: "n", Kind: kernels.Size, Default: 4096, Doc: "values per row"},
				{Name: "eps", Kind: kernels.Real, Default: 1e-5, Doc: "added to the variance"},
				{Name: "center", Kind: kernels.Real, Default: 300, Doc: "the mean of the inputs (a residual stream's offset; the spread is 1)"},
			}, Case: func(sh map[string]float64, s kernels.Schedule) (kernels.Case, error) {
				return layerNormGeluCase(shapeOf("bench", sh), float32(sh["eps"]), s)
			}},
		},
		{
			Op: "cumsum", Type: oracle.F32, Build: Cumsum,
			Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
				return cases(s, func(sh shape, _ float32, s kernels.Schedule) (kernels.Case, error) { return cumsumCase(sh, s) }, []shape{
					{"one", 1, 1, 0, 0}, {"3x7", 3, 7, 0, 1}, {"5x300", 5, 300, 2, 2}, {"2x4097 specials", 2, 4097, 0, 4},
				})
			},
			Workload: &kernels.Workload{Vars: []kernels.ShapeVar{
				{Name: "rows", Kind: kernels.Size, Default: 1024, Doc: "rows summed, each by one invocation"},
				{Name: "n", Kind: kernels.Size, Default: 1024, Doc: "values per row"},
			}, Case: func(sh map[string]float64, s kernels.Schedule) (kernels.Case, error) {
				return cumsumCase(shapeOf("bench", sh), s)
			}},
		},
	}
}

// LayerNormGelu builds layer_norm_gelu with s.Lanes invocations per workgroup, one workgroup per
// row. Bindings: 0 x (f32, rows*n), 1 y (f32, rows*n). Parameters: n (u32), eps (f32). Dispatch
// (rows, 1, 1). y = LayerNormGeluRef(x, n, eps).
func LayerNormGelu(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("layer_norm_gelu", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eps := k.Param("eps", dsl.F32)
	row := k.WorkgroupID(dsl.X).Mul(n)
	c := k.Canon(Width, s.Layout)
	mean := c.Sum(n, func(i dsl.Value) dsl.Value { return x.Load(row.Add(i)) }).Div(n.F32())
	variance := c.Sum(n, func(i dsl.Value) dsl.Value {
		d := x.Load(row.Add(i)).Sub(mean)
		return d.Mul(d)
	}).Div(n.F32())
	rstd := variance.Add(eps).Rsqrt()
	c.Each(n, func(i dsl.Value) {
		y.Store(row.Add(i), kernels.Gelu(k, x.Load(row.Add(i)).Sub(mean).Mul(rstd)))
	})
	return k
}

// Cumsum builds cumsum: a workgroup of one invocation per row (the schedule is ignored: this is
// the plain first version). Bindings: 0 x (f32, rows*n), 1 y (f32, rows*n). Parameter: n (u32).
// Dispatch (rows, 1, 1). y = CumsumRef(x, n).
func Cumsum(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("cumsum", 1)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	row := k.WorkgroupID(dsl.X).Mul(n)
	acc := k.Var("acc", k.F32(float32(math.Copysign(0, -1))))
	k.For("i", 0, n, 1, func(i dsl.Value) {
		acc.Set(acc.Get().Add(x.Load(row.Add(i))))
		y.Store(row.Add(i), acc.Get())
	})
	return k
}

// shape is one input of an op: rows of n values drawn around center (a negative center: all
// zeros) from seed; a name ending in "specials" puts NaN, infinities, subnormals and -0 among
// them.
type shape struct {
	name    string
	rows, n int
	center  float64
	seed    int64
}

// shapeOf reads a workload's shape variables (every Var, seed and specials).
func shapeOf(name string, sh map[string]float64) shape {
	if sh["specials"] != 0 {
		name += " specials"
	}
	return shape{name: name, rows: int(sh["rows"]), n: int(sh["n"]), center: sh["center"], seed: int64(sh["seed"])}
}

// inputs draws the shape's values.
func (sh shape) inputs() []float32 {
	x := make([]float32, sh.rows*sh.n)
	if sh.center < 0 {
		return x
	}
	rng := rand.New(rand.NewSource(sh.seed*7919 + 1))
	for i := range x {
		x[i] = float32(sh.center + rng.NormFloat64())
	}
	if strings.HasSuffix(sh.name, "specials") {
		specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(1), -math.Float32frombits(0x7fffff), float32(math.Copysign(0, -1))}
		for _, v := range specials {
			x[rng.Intn(len(x))] = v
		}
	}
	return x
}

func cases(s kernels.Schedule, one func(shape, float32, kernels.Schedule) (kernels.Case, error), shapes []shape) ([]kernels.Case, error) {
	var out []kernels.Case
	for _, sh := range shapes {
		c, err := one(sh, 1e-5, s)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func layerNormGeluCase(sh shape, eps float32, s kernels.Schedule) (kernels.Case, error) {
	if sh.rows < 1 || sh.n < 1 {
		return kernels.Case{}, fmt.Errorf("layer_norm_gelu: %d rows of %d values: want at least one of each", sh.rows, sh.n)
	}
	x := sh.inputs()
	return kernels.Case{
		Name:    sh.name,
		Buffers: [][]byte{wire.F32(x), make([]byte, 4*len(x))},
		Params:  []uint32{uint32(sh.n), math.Float32bits(eps)},
		Groups:  [3]uint32{uint32(sh.rows), 1, 1},
		Outputs: []int{1},
		Want:    [][]byte{wire.F32(LayerNormGeluRef(x, sh.n, eps))},
		Elem:    []string{"f32"},
	}, nil
}

func cumsumCase(sh shape, s kernels.Schedule) (kernels.Case, error) {
	if sh.rows < 1 || sh.n < 1 {
		return kernels.Case{}, fmt.Errorf("cumsum: %d rows of %d values: want at least one of each", sh.rows, sh.n)
	}
	x := sh.inputs()
	return kernels.Case{
		Name:    sh.name,
		Buffers: [][]byte{wire.F32(x), make([]byte, 4*len(x))},
		Params:  []uint32{uint32(sh.n)},
		Groups:  [3]uint32{uint32(sh.rows), 1, 1},
		Outputs: []int{1},
		Want:    [][]byte{wire.F32(CumsumRef(x, sh.n))},
		Elem:    []string{"f32"},
	}, nil
}
