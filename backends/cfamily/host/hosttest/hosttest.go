// Package hosttest runs every example kernel (examples/saxpy, examples/rmsnorm, examples/q8dot)
// through host execution (level H) of a C-family backend's emitted text, for the tests of
// backends/cuda, backends/hip and backends/metal. It is EMULATION ON THE CPU (package host), not
// a GPU run: a pass here is level H, never X.
//
// The cases are the ones the lavapipe tests in examples/*/ run (same schedules, sizes, seeds
// and inputs), and every output must be byte-identical to the example's plain-Go reference,
// which the lavapipe tests hold the Vulkan device to as well. Each kernel is lowered for the
// backend's own target, for a subgroup of 8 lanes, and portably (no shuffles, no packed dot),
// and each build runs at every emulated subgroup size the lowering allows (no smaller than the
// subgroup it was lowered for) and in ascending, descending and shuffled lane order (with
// go test -short: the backend's own lowering at one subgroup size, ascending).
package hosttest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/q8dot"
	"github.com/onesource-go/onesource/examples/rmsnorm"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// Backend says how a backend's text is made and run.
type Backend struct {
	// Lang is the dialect of the text.
	Lang host.Lang
	// Emit lowers k for caps and returns the backend's text of it.
	Emit func(k *ir.Kernel, caps lower.Caps) (string, error)
	// Caps is the backend's own lowering target.
	Caps lower.Caps
	// SubgroupSizes are the emulated subgroup sizes (nil means 8, 32 and 64).
	SubgroupSizes []int
	// SkipPortable leaves out the portable lowering (no shuffles, no packed dot): for a second
	// target of a backend whose portable text another run already covers.
	SkipPortable bool
	// Options are the host options every run starts from (SubgroupSize and Order are set per
	// run).
	Options host.Options
}

// Case is one launch of an example kernel and its expected output.
type Case struct {
	Name   string
	Kernel *dsl.Kernel
	Bufs   [][]byte
	Params []uint32
	Groups [3]uint32
	Out    int    // the buffer compared
	Want   []byte // its expected bytes (f32 values; any NaN equals any NaN)
}

// Skip skips t when host execution cannot run here, with the reason.
func Skip(t testing.TB, opts host.Options) {
	t.Helper()
	if err := host.Available(opts); err != nil {
		t.Skipf("host execution (H) %v", err)
	}
}

func f32s(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func u32s(x []uint32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func u16s(x []uint16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

// SaxpyCases are examples/saxpy's lavapipe launches, and its no-contraction inputs.
func SaxpyCases() []Case {
	var cs []Case
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 63, 64, 1000, 4097} {
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			y[i] = float32(rng.NormFloat64() * 100)
		}
		a := float32(1.0009765625)
		cs = append(cs, Case{
			Name: fmt.Sprintf("saxpy n=%d", n), Kernel: saxpy.Saxpy(64),
			Bufs: [][]byte{f32s(x), f32s(y)}, Params: []uint32{math.Float32bits(a), uint32(n)},
			Groups: [3]uint32{uint32((n + 63) / 64), 1, 1}, Out: 1, Want: f32s(saxpy.Reference(a, x, y)),
		})
	}
	// Inputs where a fused a*x+y differs from two roundings.
	rng = rand.New(rand.NewSource(2))
	var x, y []float32
	a := float32(1) + float32(math.Ldexp(1, -12))
	for len(x) < 256 {
		xi := float32(1) + float32(rng.Intn(1<<20))*float32(math.Ldexp(1, -20))
		yi := -(a * xi)
		if float32(math.FMA(float64(a), float64(xi), float64(yi))) != a*xi+yi {
			x, y = append(x, xi), append(y, yi)
		}
	}
	n := len(x)
	cs = append(cs, Case{
		Name: "saxpy no-contraction", Kernel: saxpy.Saxpy(64),
		Bufs: [][]byte{f32s(x), f32s(y)}, Params: []uint32{math.Float32bits(a), uint32(n)},
		Groups: [3]uint32{uint32((n + 63) / 64), 1, 1}, Out: 1, Want: f32s(saxpy.Reference(a, x, y)),
	})
	return cs
}

// RMSNormCases are examples/rmsnorm's lavapipe launches.
func RMSNormCases() []Case {
	var cs []Case
	const eps = 1e-6
	for i, wg := range []int{32, 64, 256} {
		layout := []dsl.Layout{dsl.Blocked, dsl.Strided}[i%2]
		for _, n := range []int{1, 100, 1000, 4096} {
			rows := 3
			rng := rand.New(rand.NewSource(int64(wg * n)))
			x := make([]float32, rows*n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3)))
			}
			cs = append(cs, Case{
				Name: fmt.Sprintf("rms_norm wg=%d %s n=%d", wg, layout, n), Kernel: rmsnorm.RMSNorm(wg, layout),
				Bufs: [][]byte{f32s(x), make([]byte, 4*len(x))}, Params: []uint32{uint32(n), math.Float32bits(eps)},
				Groups: [3]uint32{uint32(rows), 1, 1}, Out: 1, Want: f32s(rmsnorm.Reference(x, n, rmsnorm.Width, eps)),
			})
		}
	}
	return cs
}

// Q8DotCases are examples/q8dot's lavapipe launches (quants over the whole int8 range, -128
// included).
func Q8DotCases() []Case {
	var cs []Case
	rng := rand.New(rand.NewSource(3))
	for _, c := range []struct{ rows, nb, wg int }{{1, 1, 64}, {7, 37, 64}, {4, 300, 32}, {3, 128, 128}} {
		wq := make([]uint32, c.rows*c.nb*q8dot.WordsPerBlock)
		xq := make([]uint32, c.nb*q8dot.WordsPerBlock)
		for i := range wq {
			wq[i] = rng.Uint32()
		}
		for i := range xq {
			xq[i] = rng.Uint32()
		}
		wq[0] = 0x80808080
		xq[0] = 0x80808080
		wd := make([]uint16, c.rows*c.nb)
		xd := make([]uint16, c.nb)
		for i := range wd {
			wd[i] = oracle.F32ToF16(float32(rng.Float64() * 0.01))
		}
		for i := range xd {
			xd[i] = oracle.F32ToF16(float32(rng.Float64() * 0.05))
		}
		cs = append(cs, Case{
			Name: fmt.Sprintf("q8_dot rows=%d nb=%d wg=%d", c.rows, c.nb, c.wg), Kernel: q8dot.Dot(c.wg),
			Bufs:   [][]byte{u32s(wq), u16s(wd), u32s(xq), u16s(xd), make([]byte, 4*c.rows)},
			Params: []uint32{uint32(c.nb)}, Groups: [3]uint32{uint32(c.rows), 1, 1}, Out: 4,
			Want: f32s(q8dot.Reference(wq, wd, xq, xd, c.rows, c.nb)),
		})
	}
	return cs
}

// Cases returns every example case.
func Cases() []Case {
	return append(append(SaxpyCases(), RMSNormCases()...), Q8DotCases()...)
}

// target is one lowering of a kernel.
type target struct {
	name string
	caps lower.Caps
}

func (b Backend) targets() []target {
	ts := []target{{"device", b.Caps}}
	if b.Caps.SubgroupSize > 8 {
		c := b.Caps
		c.SubgroupSize = 8
		ts = append(ts, target{"sg8", c})
	}
	if b.SkipPortable {
		return ts
	}
	return append(ts, target{"portable", lower.Caps{}})
}

// diffF32 returns the index of the first f32 that differs (any NaN equals any NaN), or -1.
func diffF32(got, want []byte) int {
	if len(got) != len(want) {
		return 0
	}
	if bytes.Equal(got, want) {
		return -1
	}
	for i := 0; i+4 <= len(got); i += 4 {
		g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
		gf, wf := math.Float32frombits(g), math.Float32frombits(w)
		if g != w && !(gf != gf && wf != wf) {
			return i / 4
		}
	}
	return -1
}

// Run runs the cases on backend b, as subtests of t named after the case, the lowering and the
// emulated subgroup size. It returns the number of runs compared.
func Run(t *testing.T, b Backend, cases []Case) int {
	t.Helper()
	Skip(t, b.Options)
	sizes := b.SubgroupSizes
	if sizes == nil {
		sizes = []int{8, 32, 64}
	}
	orders := []host.Order{host.Ascending, host.Descending, host.Shuffled}
	targets := b.targets()
	if testing.Short() {
		// -short: the backend's own lowering, one subgroup size, ascending order.
		targets = targets[:1]
		sizes = []int{max(32, b.Caps.SubgroupSize)}
		orders = orders[:1]
	}
	runs := 0
	for _, c := range cases {
		ik, err := c.Kernel.Build()
		if err != nil {
			t.Fatalf("host execution (H) %s: %s: %v", b.Lang, c.Name, err)
		}
		wg := ik.WorkgroupSize
		for _, tg := range targets {
			src, err := b.Emit(ik, tg.caps)
			if err != nil {
				t.Fatalf("host execution (H) %s: %s (%s): emit: %v", b.Lang, c.Name, tg.name, err)
			}
			p, err := host.Compile(src, b.Lang, ik.Name, len(c.Bufs), len(c.Params), b.Options)
			if err != nil {
				t.Fatalf("host execution (H) %s: %s (%s): %v", b.Lang, c.Name, tg.name, err)
			}
			for _, sg := range sizes {
				if sg < tg.caps.SubgroupSize {
					continue // lowered for a larger subgroup than this one
				}
				for _, order := range orders {
					opts := b.Options
					opts.SubgroupSize = sg
					opts.Order = order
					opts.Seed = uint32(runs + 1)
					r, err := p.Run(c.Bufs, c.Params, c.Groups, wg, opts)
					if err != nil {
						var ee *host.ExecError
						if errors.As(err, &ee) {
							t.Fatalf("host execution (H) %s: %s (%s, subgroup %d, order %d): %v", b.Lang, c.Name, tg.name, sg, order, err)
						}
						t.Fatalf("host execution (H) %s: %s (%s): %v", b.Lang, c.Name, tg.name, err)
					}
					got := r.Buffers[c.Out]
					if i := diffF32(got, c.Want); i >= 0 {
						g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
						w := math.Float32frombits(binary.LittleEndian.Uint32(c.Want[4*i:]))
						t.Fatalf("host execution (H) %s: %s (%s, subgroup %d, order %d): element %d = %g (%08x), want %g (%08x); text in %s",
							b.Lang, c.Name, tg.name, sg, order, i, g, math.Float32bits(g), w, math.Float32bits(w), p.Dir)
					}
					runs++
				}
			}
		}
	}
	return runs
}
