// Package q8dot is a q8_0-style block dot product with the packed int8 dot instruction: each
// block holds 32 signed 8-bit quants (8 u32 words of 4 packed bytes) and one f16 scale; a row of
// weights dotted with an activation vector is
//
//	sum over blocks b of (float(dw[b]) * float(dx[b])) * float(sumi[b])
//	sumi[b] = sum over the 8 words w of dot_i8x4(wq[b][w], xq[b][w])     (integer, wraps)
//
// One workgroup per row; the block terms are summed canonically with width Width (virtual lane v
// takes blocks v, v+Width, ... in ascending order from -0, then a pairwise tree), laid on the
// workgroup's invocations so that any workgroup size gives the same bits. Quants and scales sit
// in separate buffers here (GGUF interleaves them; the kernels library reads that layout).
// Reference computes the same in Go.
package q8dot

import (
	"math"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// WordsPerBlock is the number of u32 words of packed quants in one 32-value block.
const WordsPerBlock = 8

// Width is the canonical width of the sum over blocks.
const Width = 128

// Dot builds the kernel with wg invocations per workgroup (a power of two up to Width). Buffers: wq
// (rows*nb*8 words), wd (rows*nb f16 scales), xq (nb*8 words), xd (nb f16), out (rows f32).
// Parameter nb is the blocks per row. Dispatch one workgroup per row.
func Dot(wg int) *dsl.Kernel {
	k := dsl.New("q8_dot", wg)
	wq := k.Buffer("wq", dsl.U32, dsl.Read)
	wd := k.Buffer("wd", dsl.F16, dsl.Read)
	xq := k.Buffer("xq", dsl.U32, dsl.Read)
	xd := k.Buffer("xd", dsl.F16, dsl.Read)
	out := k.Buffer("out", dsl.F32, dsl.Write)
	nb := k.Param("nb", dsl.U32)
	row := k.WorkgroupID(dsl.X).Named("row")
	total := k.Canon(Width, dsl.Blocked).Sum(nb, func(b dsl.Value) dsl.Value {
		wBase := row.Mul(nb).Add(b).Mul(WordsPerBlock).Named("w_base")
		xBase := b.Mul(WordsPerBlock).Named("x_base")
		var sumi dsl.Value
		for w := 0; w < WordsPerBlock; w++ { // unrolled by the Go loop: a schedule choice
			p := k.DotI8x4(wq.Load(wBase.Add(w)), xq.Load(xBase.Add(w)))
			if w == 0 {
				sumi = p
			} else {
				sumi = sumi.Add(p)
			}
		}
		d := wd.Load(row.Mul(nb).Add(b)).F32().Mul(xd.Load(b).F32()).Named("d")
		return d.Mul(sumi.F32())
	}).Named("total")
	k.If(k.LocalIndex().Eq(0), func() { out.Store(row, total) })
	return k
}

// Kernels returns this package's kernels at their default schedules.
func Kernels() []*dsl.Kernel { return []*dsl.Kernel{Dot(64)} }

// Reference computes the kernel's result in plain Go, in its order (canonical width Width).
func Reference(wq []uint32, wd []uint16, xq []uint32, xd []uint16, rows, nb int) []float32 {
	out := make([]float32, rows)
	for r := 0; r < rows; r++ {
		partial := make([]float32, Width)
		for l := range partial {
			acc := float32(math.Copysign(0, -1))
			for b := l; b < nb; b += Width {
				var sumi int32
				for w := 0; w < WordsPerBlock; w++ {
					sumi += dot4(wq[(r*nb+b)*WordsPerBlock+w], xq[b*WordsPerBlock+w])
				}
				d := oracle.F16ToF32(wd[r*nb+b]) * oracle.F16ToF32(xd[b])
				t := d * float32(sumi)
				acc = acc + t
			}
			partial[l] = acc
		}
		for len(partial) > 1 {
			next := make([]float32, len(partial)/2)
			for i := range next {
				next[i] = partial[2*i] + partial[2*i+1]
			}
			partial = next
		}
		out[r] = partial[0]
	}
	return out
}

func dot4(a, b uint32) int32 {
	var s int32
	for i := 0; i < 4; i++ {
		s += int32(int8(a>>(8*i))) * int32(int8(b>>(8*i)))
	}
	return s
}
