// Package islandtest holds the test launches of the intrinsic islands (dsl.Kernel.MMA) that the
// backends' tests share: a kernel that stages tiles from buffers into shared arrays, runs the
// island once per tile and writes the result tiles back, the inputs that exercise it (random
// values, the full int8 range, all values equal, alternating signs, the extremes -128 and 127,
// and a wrapping accumulator) and each launch's expected output, computed by package oracle
// (oracle.TileMMAI8), never by the code under test.
package islandtest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/oracle"
)

// WG is the workgroup of the test kernel: 64 invocations, so it holds whole subgroups of 8 (lavapipe),
// 32 (a CUDA warp, an AMD wave32) and 64 (an AMD wave64) lanes.
const WG = 64

// TilesPerGroup is the number of tiles one workgroup computes; its subgroups share them out
// (subgroup s takes tiles s, s + S, ... for S subgroups), so every device computes every tile
// whatever its subgroup size.
const TilesPerGroup = 3

// Kernel builds the test kernel of the MMA island: buffers a and b (u32, packed int8 tiles) and d
// (i32 tiles, read as the accumulator when accumulate and written with the result), one
// workgroup per TilesPerGroup tiles.
func Kernel(accumulate bool) *dsl.Kernel {
	name := "mma_i8"
	if accumulate {
		name = "mma_i8_acc"
	}
	return kernel(name, accumulate, 1, WG)
}

// SmallKernel is Kernel on a workgroup of 32 invocations: on a device with 64-lane subgroups
// it is one partial subgroup, which the portable body must still cover.
func SmallKernel(accumulate bool) *dsl.Kernel {
	name := "mma_i8_small"
	if accumulate {
		name = "mma_i8_small_acc"
	}
	return kernel(name, accumulate, 1, 32)
}

// BenchKernel is Kernel accumulating, with each tile's product taken repeat times (D += A·Bᵀ,
// repeat times): the benchmarks' kernel, heavier on the island than on the loads around it.
func BenchKernel(repeat int) *dsl.Kernel {
	return kernel(fmt.Sprintf("mma_i8_x%d", repeat), true, repeat, WG)
}

func kernel(name string, accumulate bool, repeat, wg int) *dsl.Kernel {
	k := dsl.New(name, wg)
	a := k.Buffer("a", dsl.U32, dsl.Read)
	b := k.Buffer("b", dsl.U32, dsl.Read)
	d := k.Buffer("d", dsl.I32, dsl.ReadWrite)
	sa := k.Shared("sa", dsl.U32, TilesPerGroup*dsl.MMATileWords)
	sb := k.Shared("sb", dsl.U32, TilesPerGroup*dsl.MMATileWords)
	sd := k.Shared("sd", dsl.I32, TilesPerGroup*dsl.MMATileD)
	group := k.WorkgroupID(dsl.X)
	words := uint32(TilesPerGroup * dsl.MMATileWords)
	elems := uint32(TilesPerGroup * dsl.MMATileD)
	k.For("i", k.LocalIndex(), words, uint32(wg), func(i dsl.Value) {
		sa.Store(i, a.Load(group.Mul(words).Add(i)))
		sb.Store(i, b.Load(group.Mul(words).Add(i)))
	})
	if accumulate {
		k.For("j", k.LocalIndex(), elems, uint32(wg), func(j dsl.Value) {
			sd.Store(j, d.Load(group.Mul(elems).Add(j)))
		})
	}
	k.Barrier()
	// The subgroups the workgroup holds (a last, partial one counted).
	subgroups := k.U32(uint32(wg)).Add(k.SubgroupSize().Sub(uint32(1))).Div(k.SubgroupSize())
	k.For("t", k.SubgroupID(), uint32(TilesPerGroup), subgroups, func(t dsl.Value) {
		if repeat == 1 {
			k.MMA(sa, t, sb, t, sd, t, accumulate)
			return
		}
		k.For("r", uint32(0), uint32(repeat), uint32(1), func(dsl.Value) { k.MMA(sa, t, sb, t, sd, t, accumulate) })
	})
	k.Barrier()
	k.For("o", k.LocalIndex(), elems, uint32(wg), func(o dsl.Value) {
		d.Store(group.Mul(elems).Add(o), sd.Load(o))
	})
	return k
}

// Case is one launch of the test kernel: its inputs, grid and expected d.
type Case struct {
	Name       string
	Accumulate bool
	Groups     uint32
	A, B       []byte // packed int8 tiles (u32 words, little-endian)
	D          []byte // the accumulator tiles (i32), zero when not accumulating
	Want       []byte // d after the launch
}

// Bufs returns fresh copies of the case's buffers in binding order (a, b, d).
func (c Case) Bufs() [][]byte {
	return [][]byte{append([]byte(nil), c.A...), append([]byte(nil), c.B...), append([]byte(nil), c.D...)}
}

// pattern fills n int8 values.
type pattern struct {
	name string
	fill func(r *rand.Rand, v []int8)
}

var patterns = []pattern{
	{"random", func(r *rand.Rand, v []int8) {
		for i := range v {
			v[i] = int8(r.Intn(256) - 128)
		}
	}},
	{"full-range", func(r *rand.Rand, v []int8) { // every int8 value, in a shuffled order
		p := r.Perm(len(v))
		for i := range v {
			v[i] = int8(p[i]%256 - 128)
		}
	}},
	{"all-equal", func(r *rand.Rand, v []int8) {
		x := int8(r.Intn(256) - 128)
		for i := range v {
			v[i] = x
		}
	}},
	{"alternating", func(r *rand.Rand, v []int8) {
		for i := range v {
			v[i] = int8(r.Intn(128))
			if i%2 == 1 {
				v[i] = -v[i] - 1
			}
		}
	}},
	{"extremes", func(r *rand.Rand, v []int8) { // -128 and 127 only: the largest products
		for i := range v {
			v[i] = 127
			if r.Intn(2) == 0 {
				v[i] = -128
			}
		}
	}},
	{"min", func(_ *rand.Rand, v []int8) { // -128 everywhere: every sum is 32 * 16384
		for i := range v {
			v[i] = -128
		}
	}},
}

// Cases returns the test launches: every input pattern for A and B (B's pattern is A's, drawn
// anew), with and without accumulation; the accumulating cases start d from values near the
// int32 limits, so the addition wraps.
func Cases() []Case {
	var cs []Case
	for i, p := range patterns {
		for _, acc := range []bool{false, true} {
			r := rand.New(rand.NewSource(int64(32 + i)))
			groups := uint32(2)
			tiles := int(groups) * TilesPerGroup
			var A, B []int8
			var D []int32
			for t := 0; t < tiles; t++ {
				a := make([]int8, oracle.MMARows*oracle.MMADepth)
				b := make([]int8, oracle.MMACols*oracle.MMADepth)
				p.fill(r, a)
				p.fill(r, b)
				A, B = append(A, a...), append(B, b...)
				d := make([]int32, oracle.MMARows*oracle.MMACols)
				if acc {
					for j := range d {
						switch r.Intn(3) {
						case 0:
							d[j] = math.MaxInt32 - int32(r.Intn(1<<20))
						case 1:
							d[j] = math.MinInt32 + int32(r.Intn(1<<20))
						default:
							d[j] = int32(r.Uint32())
						}
					}
				}
				D = append(D, d...)
			}
			var want []int32
			for t := 0; t < tiles; t++ {
				ta, tb := A[t*512:(t+1)*512], B[t*512:(t+1)*512]
				w, err := oracle.TileMMAI8(ta, tb, D[t*256:(t+1)*256], acc)
				if err != nil {
					panic(err) // the shapes above are the oracle's
				}
				want = append(want, w...)
			}
			name := p.name
			if acc {
				name += "/acc"
			}
			cs = append(cs, Case{Name: name, Accumulate: acc, Groups: groups, A: i8s(A), B: i8s(B), D: i32s(D), Want: i32s(want)})
		}
	}
	return cs
}

func i8s(v []int8) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func i32s(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// Diff returns "" when got equals want, else where the first i32 differs.
func Diff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
	}
	for i := 0; i+4 <= len(got); i += 4 {
		g, w := int32(binary.LittleEndian.Uint32(got[i:])), int32(binary.LittleEndian.Uint32(want[i:]))
		if g != w {
			e := i / 4
			t, r := e/ir.MMATileD, e%ir.MMATileD
			return fmt.Sprintf("tile %d D[%d][%d] = %d, want %d", t, r/ir.MMACols, r%ir.MMACols, g, w)
		}
	}
	return ""
}

// Build builds both test kernels (without and with accumulation), in that order.
func Build() ([2]*ir.Kernel, error) {
	var ks [2]*ir.Kernel
	for i, acc := range []bool{false, true} {
		k, err := Kernel(acc).Build()
		if err != nil {
			return ks, err
		}
		ks[i] = k
	}
	return ks, nil
}
