package vulkan_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/ir"
)

// matvecKernel is a mid-sized kernel shaped like a quantized matrix-vector product: a strided
// loop of packed int8 dot products scaled by f16 factors, a subgroup butterfly by shuffles, a
// shared-memory combine across subgroups behind barriers, and the store.
func matvecKernel(t testing.TB) *ir.Kernel {
	b := newKB("matvec_q8", 64)
	w := b.buffer("weights", u32, ir.ReadOnly)
	scales := b.buffer("scales", f16, ir.ReadOnly)
	x := b.buffer("x", u32, ir.ReadOnly)
	xs := b.buffer("x_scales", f32, ir.ReadOnly)
	y := b.buffer("y", f32, ir.WriteOnly)
	cols := b.param("cols", u32)
	sh := b.shared("partial", f32, 8)
	acc := b.local("acc", f32)
	i := b.local("i", u32)
	row := b.name(b.builtin(ir.WorkgroupID, 0), "row")
	li := b.name(b.builtin(ir.LocalIndex, 0), "tid")
	blocks := b.name(b.bin(ir.OpShr, b.p(cols), b.u32(5)), "blocks")
	b.setv(acc, b.f32(0))
	b.setv(i, li)
	b.loop(func() {
		blk := b.getv(i)
		b.ifElse(b.bin(ir.OpGe, blk, blocks), func() { b.brk() }, nil)
		base := b.bin(ir.OpAdd, b.bin(ir.OpMul, row, b.bin(ir.OpMul, blocks, b.u32(8))), b.bin(ir.OpMul, blk, b.u32(8)))
		var sum *ir.Inst
		for q := range 8 {
			wq := b.ld(w, b.bin(ir.OpAdd, base, b.u32(uint32(q))))
			xq := b.ld(x, b.bin(ir.OpAdd, b.bin(ir.OpMul, blk, b.u32(8)), b.u32(uint32(q))))
			d := b.op(ir.OpDotI8x4, i32, wq, xq)
			if sum == nil {
				sum = d
			} else {
				sum = b.bin(ir.OpAdd, sum, d)
			}
		}
		ws := b.conv(f32, b.ld(scales, b.bin(ir.OpAdd, b.bin(ir.OpMul, row, blocks), blk)))
		v := b.bin(ir.OpMul, b.bin(ir.OpMul, b.conv(f32, sum), ws), b.ld(xs, blk))
		b.setv(acc, b.bin(ir.OpAdd, b.getv(acc), v))
	}, func() {
		b.setv(i, b.bin(ir.OpAdd, b.getv(i), b.u32(64)))
	})
	s := b.getv(acc)
	for _, m := range []uint32{1, 2, 4} {
		s = b.bin(ir.OpAdd, s, b.op(ir.OpShuffleXor, f32, s, b.u32(m)))
	}
	lane := b.builtin(ir.SubgroupLane, 0)
	sg := b.builtin(ir.SubgroupID, 0)
	b.ifElse(b.bin(ir.OpEq, lane, b.u32(0)), func() { b.store(ir.MemShared, sh, sg, s) }, nil)
	b.barrier()
	b.ifElse(b.bin(ir.OpEq, li, b.u32(0)), func() {
		t := b.load(ir.MemShared, sh, b.u32(0))
		for k := 1; k < 8; k++ {
			t = b.bin(ir.OpAdd, t, b.load(ir.MemShared, sh, b.u32(uint32(k))))
		}
		b.st(y, row, t)
	}, nil)
	return b.done(t)
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
