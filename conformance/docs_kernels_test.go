package conformance_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// The kernels of this file were written the way a new user writes them: from package dsl's
// documentation alone (its doc comment, the Subgroup, Array.AtomicAdd and math method docs and
// the Examples), not from the kernels package. Each is judged like a cell, bit for bit against
// a plain-Go reference built from package oracle's definitions, on Vulkan (lavapipe here) and
// through host execution of the CUDA, HIP and MSL text.

// docLayerNorm: y = (x - mean) / sqrt(var + eps) * g + b over rows of n values, one workgroup
// per row, the mean and the variance as canonical sums of width 256.
func docLayerNorm(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("layer_norm", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	g := k.Buffer("g", dsl.F32, dsl.Read)
	b := k.Buffer("b", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eps := k.Param("eps", dsl.F32)
	row := k.WorkgroupID(dsl.X).Mul(n)
	c := k.Canon(256, s.Layout)
	mean := c.Sum(n, func(j dsl.Value) dsl.Value { return x.Load(row.Add(j)) }).Div(n.F32())
	variance := c.Sum(n, func(j dsl.Value) dsl.Value {
		d := x.Load(row.Add(j)).Sub(mean)
		return d.Mul(d)
	}).Div(n.F32())
	inv := variance.Add(eps).Rsqrt()
	c.Each(n, func(j dsl.Value) {
		v := x.Load(row.Add(j)).Sub(mean).Mul(inv)
		y.Store(row.Add(j), v.Mul(g.Load(j)).Add(b.Load(j)))
	})
	return k
}

func refLayerNorm(x, g, b []float32, n int, eps float32) []float32 {
	y := make([]float32, len(x))
	for r := 0; r < len(x)/n; r++ {
		row := x[r*n : (r+1)*n]
		mean := oracle.SumF32(row, 256) / float32(n)
		d2 := make([]float32, n)
		for j, v := range row {
			d := v - mean
			d2[j] = d * d
		}
		variance := oracle.SumF32(d2, 256) / float32(n)
		inv := oracle.Rsqrt(variance + eps)
		for j, v := range row {
			t := float32((v - mean) * inv)
			y[r*n+j] = float32(t*g[j]) + b[j]
		}
	}
	return y
}

// docGeluErf: the exact GELU, y = 0.5*x*(1 + erf(x/sqrt(2))), one element per invocation.
func docGeluErf(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("gelu_erf", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() {
		v := x.Load(i)
		e := v.Mul(float32(1 / math.Sqrt2)).Erf()
		y.Store(i, v.Mul(0.5).Mul(e.Add(1)))
	})
	return k
}

func refGeluErf(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		e := oracle.Erf(float32(v * float32(1/math.Sqrt2)))
		y[i] = float32(float32(v*0.5) * (e + 1))
	}
	return y
}

// docHistogram: hist[key[i] % bins] += w[i] with f32 atomic adds.
func docHistogram(s kernels.Schedule) *dsl.Kernel {
	k := dsl.New("weighted_histogram", s.Lanes)
	key := k.Buffer("key", dsl.U32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	hist := k.Buffer("hist", dsl.F32, dsl.ReadWrite)
	n := k.Param("n", dsl.U32)
	bins := k.Param("bins", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() {
		hist.AtomicAdd(key.Load(i).Rem(bins), w.Load(i))
	})
	return k
}

// docPrefixSum: an inclusive prefix sum of each workgroup's block of values (at most 64 lanes),
// with subgroup scans: every cluster of 8 lanes scans its values and publishes its total in
// shared memory; then every cluster scans the (at most 8) totals exclusively, and each lane adds
// its cluster's offset, broadcast from the lane of that index.
func docPrefixSum(s kernels.Schedule) *dsl.Kernel {
	const w = 8
	k := dsl.New("block_prefix_sum", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	clusters := uint32(s.Lanes / w)
	totals := k.Shared("totals", dsl.F32, s.Lanes/w)
	sg := k.Subgroup(w)
	i := k.GlobalID(dsl.X)
	cluster := k.LocalIndex().Div(uint32(w))
	incl := sg.InclusiveSum(x.Load(i))
	k.If(sg.Lane().Eq(uint32(w-1)), func() { totals.Store(cluster, incl) })
	k.Barrier()
	t := k.Select(sg.Lane().Lt(clusters), totals.Load(sg.Lane().Min(clusters-1)), float32(0))
	off := sg.ExclusiveSum(t)
	y.Store(i, sg.Broadcast(off, cluster).Add(incl))
	return k
}

func refPrefixSum(x []float32, lanes int) []float32 {
	const w = 8
	add := func(a, b float32) float32 { return a + b }
	y := make([]float32, len(x))
	for g := 0; g < len(x)/lanes; g++ {
		blk := x[g*lanes : (g+1)*lanes]
		incl := oracle.SubgroupInclusiveScan(blk, w, add)
		tot := make([]float32, w)
		for c := 0; c < lanes/w; c++ {
			tot[c] = incl[c*w+w-1]
		}
		off := oracle.SubgroupExclusiveScan(tot, w, add, 0)
		for j := range blk {
			y[g*lanes+j] = off[j/w] + incl[j]
		}
	}
	return y
}

func f32s(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

func u32bytes(x []uint32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return b
}

// docCells are the kernels above as cells (not registered: they are this test's own).
func docCells() []kernels.Cell {
	return []kernels.Cell{
		{Op: "doc_layer_norm", Type: oracle.F32, Build: docLayerNorm, Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
			rng := rand.New(rand.NewSource(1))
			var out []kernels.Case
			for _, sh := range []struct{ rows, n int }{{1, 1}, {3, 300}, {2, 1000}} {
				x, g, b := f32s(rng, sh.rows*sh.n, 3), f32s(rng, sh.n, 1), f32s(rng, sh.n, 0.1)
				const eps = 1e-5
				out = append(out, kernels.Case{
					Name:    fmt.Sprintf("%dx%d", sh.rows, sh.n),
					Buffers: [][]byte{f32bytes(x...), f32bytes(g...), f32bytes(b...), make([]byte, 4*len(x))},
					Params:  []uint32{uint32(sh.n), math.Float32bits(eps)},
					Groups:  [3]uint32{uint32(sh.rows), 1, 1},
					Outputs: []int{3}, Want: [][]byte{f32bytes(refLayerNorm(x, g, b, sh.n, eps)...)}, Elem: []string{"f32"},
				})
			}
			return out, nil
		}},
		{Op: "doc_gelu_erf", Type: oracle.F32, Build: docGeluErf, Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
			rng := rand.New(rand.NewSource(2))
			x := append([]float32{0, float32(math.Copysign(0, -1)), 1, -1, 4, -4, 10, -10, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, 0.875, -3.99}, f32s(rng, 3000, 2)...)
			return []kernels.Case{{
				Name:    "n3014",
				Buffers: [][]byte{f32bytes(x...), make([]byte, 4*len(x))},
				Params:  []uint32{uint32(len(x))},
				Groups:  [3]uint32{uint32((len(x) + s.Lanes - 1) / s.Lanes), 1, 1},
				Outputs: []int{1}, Want: [][]byte{f32bytes(refGeluErf(x)...)}, Elem: []string{"f32"},
			}}, nil
		}},
		{Op: "doc_histogram", Type: oracle.F32, Build: docHistogram, Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
			rng := rand.New(rand.NewSource(3))
			const n, bins = 4000, 10
			keys := make([]uint32, n)
			ws := make([]float32, n)
			hist := make([]float32, bins)
			for i := range keys {
				keys[i] = uint32(rng.Intn(1000))
				ws[i] = float32(rng.Intn(9)) // counts and small weights: every partial sum is exact
				hist[keys[i]%bins] += ws[i]
			}
			return []kernels.Case{{
				Name:    "n4000",
				Buffers: [][]byte{u32bytes(keys), f32bytes(ws...), make([]byte, 4*bins)},
				Params:  []uint32{n, bins},
				Groups:  [3]uint32{uint32((n + s.Lanes - 1) / s.Lanes), 1, 1},
				Outputs: []int{2}, Want: [][]byte{f32bytes(hist...)}, Elem: []string{"f32"},
			}}, nil
		}},
		{Op: "doc_prefix_sum", Type: oracle.F32, Build: docPrefixSum, Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
			rng := rand.New(rand.NewSource(4))
			x := f32s(rng, 4*s.Lanes, 10)
			return []kernels.Case{{
				Name:    "4groups",
				Buffers: [][]byte{f32bytes(x...), make([]byte, 4*len(x))},
				Groups:  [3]uint32{4, 1, 1},
				Outputs: []int{1}, Want: [][]byte{f32bytes(refPrefixSum(x, s.Lanes)...)}, Elem: []string{"f32"},
			}}, nil
		}},
	}
}

// TestDocKernels runs the kernels written from the dsl docs on Vulkan (lavapipe, at 8 and 64
// lanes) and by host execution of the CUDA and MSL text (at 64 lanes), bit-exact, and on the cpu
// executor and as native CPU code. HIP prints the same kernels through the same printer and its
// slow compiler would double the test's time; `onesource conform` runs every backend on the
// cells that exercise the same features (subgroup, histogram, math, types).
func TestDocKernels(t *testing.T) {
	for _, tg := range conformance.Targets() {
		switch tg.Name() {
		case "vulkan", "cuda", "metal", "cpu", "native":
		default:
			continue
		}
		t.Run(tg.Name(), func(t *testing.T) {
			if err := tg.Open(); err != nil {
				t.Skipf("%s: %v", tg.Name(), err)
			}
			defer tg.Close()
			for _, c := range docCells() {
				scheds := []kernels.Schedule{{Lanes: 8}, {Lanes: 64, Layout: dsl.Strided}}
				if tg.Name() != "vulkan" {
					scheds = scheds[1:]
				}
				for _, s := range scheds {
					t.Run(c.Op+"/"+s.String(), func(t *testing.T) {
						r := conformance.Judge(tg, c, s)
						if !r.BitExact {
							t.Errorf("%s on %s at %s [%s]: not bit-exact: %s", c.Op, tg.Name(), s, r.Levels, r.Reason)
						}
					})
				}
			}
		})
	}
}
