package dsl

import "github.com/onesource-go/onesource/ir"

// MMA tiles (ir.IslandMMAI8). An A or B tile is MMATileWords u32 words of a shared array, 16 rows
// of 32 int8 values, 4 to a word (byte j of word w is value 4w+j, as DotI8x4 packs them), row r
// in words 8r..8r+7; a D tile is MMATileD i32 elements of a shared array, 16x16 row-major.
const (
	MMATileWords = ir.MMATileWords
	MMATileD     = ir.MMATileD
)

// MMA is the int8 tile product island: with accumulate false it stores D = A·Bᵀ into tile dTile
// of d, with accumulate true D += A·Bᵀ, where A is tile aTile of a and B tile bTile of b:
//
//	D[m][n] = (accumulate ? D[m][n] : 0) + sum over k < 32 of A[m][k] * B[n][k]
//
// for m, n < 16, in wrapping int32 arithmetic. Integer sums have one answer in any order, so
// this is exact and the same on every device. a and b are shared arrays of U32 (they may be
// one array), d a shared array of I32 (so never one of them); the tile indices are u32 values or
// Go integers.
//
// The island runs on the tensor cores where the target has them (CUDA mma.sync on sm_80 and
// newer, AMD MFMA on gfx940 and WMMA on gfx11, Vulkan cooperative matrices where the device lists
// the shape) and as its portable body everywhere else; the portable body (below) defines what
// it computes, so every backend gives the same bytes. The subgroup computes the tile together:
// every invocation of the subgroup must call MMA together, in control flow that does not depend
// on the invocation, with tile indices that are the same across the subgroup (computed from
// constants, parameters, workgroup and subgroup ids, or values loaded at such indices); Build
// reports a call that breaks either rule. Like any shared-memory access, MMA reads the A, B (and
// D) values stored before a Barrier, and its D tile is seen by other invocations after the next
// Barrier.
//
// The portable body: each invocation of the subgroup takes the D elements e = lane, lane + S,
// ... below 256 (lane its SubgroupLane, S the lanes its subgroup holds: SubgroupSize, or fewer
// in a last subgroup the workgroup does not fill) and computes each as the sum above, eight
// DotI8x4 of A's and B's words in order.
func (k *Kernel) MMA(a Array, aTile any, b Array, bTile any, d Array, dTile any, accumulate bool) {
	p := callerPos()
	if k == nil {
		misuse(p, "MMA on a nil *dsl.Kernel", aTile, bTile, dTile)
		return
	}
	arrays := [3]struct {
		arr  Array
		what string
		elem Type
	}{{a, "A", U32}, {b, "B", U32}, {d, "D", I32}}
	for _, x := range arrays {
		switch {
		case x.arr.k == nil:
			k.errorf(p, "MMA: %s", zeroArray("MMA's "+x.what))
			return
		case x.arr.k != k:
			k.errorf(p, "MMA: %s is shared array %s of another kernel", x.what, x.arr.name)
			return
		case x.arr.mem != ir.MemShared:
			k.errorf(p, "MMA: %s is buffer %s; the island works on shared arrays (Kernel.Shared)", x.what, x.arr.name)
			return
		case x.arr.elem != x.elem:
			k.errorf(p, "MMA: %s is shared array %s of %s, want %s", x.what, x.arr.name, x.arr.elem, x.elem)
			return
		}
	}
	var tiles [3]Value
	for i, t := range []any{aTile, bTile, dTile} {
		v, ok := k.operand("MMA", U32, t, p)
		if !ok {
			return
		}
		if v.Type() != U32 {
			k.errorf(p, "MMA: %s tile index is %s, want u32", arrays[i].what, v.Type())
			return
		}
		tiles[i] = v
	}
	call := ir.IslandCall{Island: ir.IslandMMAI8, A: a.ref, B: b.ref, D: d.ref, Accumulate: accumulate}
	in := &ir.Inst{Op: ir.OpIsland, Type: ir.TVoid, Aux: call.Aux(), Args: []*ir.Inst{tiles[0].in, tiles[1].in, tiles[2].in}, Blocks: []*ir.Block{{}}, Pos: p}
	k.nested(in.Blocks[0], func() { k.mmaPortable(a, b, d, tiles, accumulate) })
	k.emit(in)
}

// mmaPortable writes the portable body of MMA (see there) into the current block.
func (k *Kernel) mmaPortable(a, b, d Array, tiles [3]Value, accumulate bool) {
	aBase := tiles[0].Mul(uint32(MMATileWords))
	bBase := tiles[1].Mul(uint32(MMATileWords))
	dBase := tiles[2].Mul(uint32(MMATileD))
	// The lanes this subgroup holds: SubgroupSize, or fewer in a last subgroup the workgroup
	// does not fill (a 32-lane workgroup on a wave64).
	size := k.SubgroupSize()
	held := size.Min(k.U32(uint32(k.Lanes())).Sub(k.SubgroupID().Mul(size)))
	k.For("mma_e", k.LaneID(), uint32(MMATileD), held, func(e Value) {
		row := aBase.Add(e.Shr(uint32(4)).Mul(uint32(ir.MMAWordsRow)))
		col := bBase.Add(e.And(uint32(ir.MMACols - 1)).Mul(uint32(ir.MMAWordsRow)))
		at := dBase.Add(e)
		var sum Value
		if accumulate {
			sum = d.Load(at)
		}
		for w := 0; w < ir.MMAWordsRow; w++ {
			t := k.DotI8x4(a.Load(row.Add(uint32(w))), b.Load(col.Add(uint32(w))))
			if sum.in == nil {
				sum = t
			} else {
				sum = sum.Add(t)
			}
		}
		d.Store(at, sum)
	})
}
