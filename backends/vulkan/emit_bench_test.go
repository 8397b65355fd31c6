package vulkan_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

// matvecKernel is a mid-sized kernel shaped like a quantized matrix-vector product: a strided
// loop of packed int8 dot products scaled by f16 factors, a subgroup butterfly by shuffles, a
// shared-memory combine across subgroups behind barriers, and the store.
func matvecKernel(t testing.TB) *ir.Kernel {
	b := irtest.New("matvec_q8", 64)
	w := b.Buffer("weights", u32, ir.ReadOnly)
	scales := b.Buffer("scales", f16, ir.ReadOnly)
	x := b.Buffer("x", u32, ir.ReadOnly)
	xs := b.Buffer("x_scales", f32, ir.ReadOnly)
	y := b.Buffer("y", f32, ir.WriteOnly)
	cols := b.Param("cols", u32)
	sh := b.Shared("partial", f32, 8)
	acc := b.Local("acc", f32)
	i := b.Local("i", u32)
	row := b.Name(b.Builtin(ir.WorkgroupID, 0), "row")
	li := b.Name(b.Builtin(ir.LocalIndex, 0), "tid")
	blocks := b.Name(b.Bin(ir.OpShr, b.P(cols), b.U32(5)), "blocks")
	b.SetV(acc, b.F32(0))
	b.SetV(i, li)
	b.Loop(func() {
		blk := b.GetV(i)
		b.If(b.Bin(ir.OpGe, blk, blocks), func() { b.Break() }, nil)
		base := b.Bin(ir.OpAdd, b.Bin(ir.OpMul, row, b.Bin(ir.OpMul, blocks, b.U32(8))), b.Bin(ir.OpMul, blk, b.U32(8)))
		var sum *ir.Inst
		for q := range 8 {
			wq := b.Ld(w, b.Bin(ir.OpAdd, base, b.U32(uint32(q))))
			xq := b.Ld(x, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, blk, b.U32(8)), b.U32(uint32(q))))
			d := b.Op(ir.OpDotI8x4, i32, wq, xq)
			if sum == nil {
				sum = d
			} else {
				sum = b.Bin(ir.OpAdd, sum, d)
			}
		}
		ws := b.Conv(f32, b.Ld(scales, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, row, blocks), blk)))
		v := b.Bin(ir.OpMul, b.Bin(ir.OpMul, b.Conv(f32, sum), ws), b.Ld(xs, blk))
		b.SetV(acc, b.Bin(ir.OpAdd, b.GetV(acc), v))
	}, func() {
		b.SetV(i, b.Bin(ir.OpAdd, b.GetV(i), b.U32(64)))
	})
	s := b.GetV(acc)
	for _, m := range []uint32{1, 2, 4} {
		s = b.Bin(ir.OpAdd, s, b.Op(ir.OpShuffleXor, f32, s, b.U32(m)))
	}
	lane := b.Builtin(ir.SubgroupLane, 0)
	sg := b.Builtin(ir.SubgroupID, 0)
	b.If(b.Bin(ir.OpEq, lane, b.U32(0)), func() { b.Store(ir.MemShared, sh, sg, s) }, nil)
	b.Barrier()
	b.If(b.Bin(ir.OpEq, li, b.U32(0)), func() {
		t := b.Load(ir.MemShared, sh, b.U32(0))
		for k := 1; k < 8; k++ {
			t = b.Bin(ir.OpAdd, t, b.Load(ir.MemShared, sh, b.U32(uint32(k))))
		}
		b.St(y, row, t)
	}, nil)
	return done(t, b)
}

// BenchmarkEmit reports the emission time of one mid-sized kernel (ns/op is per kernel).
func BenchmarkEmit(b *testing.B) {
	k := matvecKernel(b)
	insts := 0
	ir.Walk(k.Body, func(*ir.Inst) bool { insts++; return true })
	var words int
	b.ReportAllocs()
	for b.Loop() {
		mod, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: 8})
		if err != nil {
			b.Fatal(err)
		}
		words = len(mod.Words)
	}
	b.ReportMetric(float64(insts), "ir-insts/kernel")
	b.ReportMetric(float64(words), "words/kernel")
}

// TestMatvecKernelValidates keeps the benchmark's kernel honest.
func TestMatvecKernelValidates(t *testing.T) {
	needSPIRVTools(t)
	mod, err := vulkan.Emit(matvecKernel(t), vulkan.EmitOptions{SubgroupSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := spirvVal(t, mod.Words); err != nil {
		t.Fatal(err)
	}
}
