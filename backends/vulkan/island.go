package vulkan

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// CoopShape is one cooperative-matrix shape a device lists (VK_KHR_cooperative_matrix) for
// int8 A and B and int32 C and result at subgroup scope: A is M x K, B is K x N, C M x N.
type CoopShape struct{ M, N, K uint32 }

// IslandShape returns the shape the mma island's Vulkan body uses among those a device lists:
// one with M = 16 whose N divides 16 and K divides 32 (so the 16x16x32 tile is whole products),
// the one with the fewest products; ok is false when none fits (the portable body runs).
func IslandShape(listed []CoopShape) (s CoopShape, ok bool) {
	best := 0
	for _, c := range listed {
		if c.M != ir.MMARows || c.N == 0 || c.K == 0 || ir.MMACols%c.N != 0 || ir.MMADepth%c.K != 0 || c.K%4 != 0 {
			continue
		}
		if n := (ir.MMACols / int(c.N)) * (ir.MMADepth / int(c.K)); !ok || n < best {
			s, best, ok = c, n, true
		}
	}
	return s, ok
}

// SPIR-V of SPV_KHR_cooperative_matrix.
const (
	spvCapCooperativeMatrixKHR      spvCap = 6022
	spvOpTypeCooperativeMatrixKHR   spvOp  = 4456
	spvOpCooperativeMatrixLoadKHR   spvOp  = 4457
	spvOpCooperativeMatrixStoreKHR  spvOp  = 4458
	spvOpCooperativeMatrixMulAddKHR spvOp  = 4459

	spvCoopRowMajor    = 0
	spvCoopColumnMajor = 1
	spvCoopUseA        = 0
	spvCoopUseB        = 1
	spvCoopUseAcc      = 2
	// MatrixASigned | MatrixBSigned | MatrixCSigned | MatrixResultSigned
	spvCoopAllSigned = 0xf
)

// coopType returns the cooperative-matrix type of use with rows x cols components of comp at
// subgroup scope, declaring it once.
func (e *spvEmitter) coopType(comp, rows, cols, use uint32) uint32 {
	key := [4]uint32{comp, rows, cols, use}
	if id, ok := e.coopTypes[key]; ok {
		return id
	}
	m := e.m
	id := m.id()
	m.globals.inst(spvOpTypeCooperativeMatrixKHR, id, comp, m.constU32(spvScopeSubgroup), m.constU32(rows), m.constU32(cols), m.constU32(use))
	if e.coopTypes == nil {
		e.coopTypes = map[[4]uint32]uint32{}
	}
	e.coopTypes[key] = id
	return id
}

// island emits the native body of an OpIsland: the mma island as cooperative-matrix products
// of the shape EmitOptions.CoopMatrix names. A tile of 16x16x32 is (16/N) x (32/K) products:
// for each block of N columns of D, the accumulator is loaded from D (row-major, stride 16) or
// is zero, multiplied with A's 16 x K block (row-major: A's rows are K-contiguous, stride 8
// words) and B's K x N block (column-major: B's rows are the columns of Bᵀ, stride 8 words) for
// each block of K, and stored back. The int8 components are read from the u32 words of the
// shared arrays (a cooperative-matrix load reinterprets the array's elements; its stride is in
// them), signed, with signed accumulation: exact, as every body of the island is.
func (e *spvEmitter) island(in *ir.Inst, args []uint32) {
	c := ir.DecodeIsland(in.Aux)
	s := e.opts.CoopMatrix
	if c.Island != ir.IslandMMAI8 || s.M != ir.MMARows || s.N == 0 || s.K == 0 || ir.MMACols%s.N != 0 || ir.MMADepth%s.K != 0 || s.K%4 != 0 {
		e.fail(e.errAt(in.Pos, "island %s: no cooperative-matrix shape to run it with (EmitOptions.CoopMatrix %dx%dx%d; lower without it in Caps.Islands)", c.Island, s.M, s.N, s.K))
		return
	}
	m := e.m
	m.capability(spvCapCooperativeMatrixKHR)
	m.capability(spvCapInt8)
	i8, i32, u32 := m.tInt(8, true), e.typeOf(ir.TI32), e.typeOf(ir.TU32)
	tA := e.coopType(i8, s.M, s.K, spvCoopUseA)
	tB := e.coopType(i8, s.K, s.N, spvCoopUseB)
	tC := e.coopType(i32, s.M, s.N, spvCoopUseAcc)
	base := func(tile uint32, size uint32) uint32 {
		return e.op(spvOpIMul, u32, tile, m.constU32(size))
	}
	aBase, bBase, dBase := base(args[0], ir.MMATileWords), base(args[1], ir.MMATileWords), base(args[2], ir.MMATileD)
	ptr := func(arr int, elem ir.Type, at, off uint32) uint32 {
		i := e.op(spvOpIAdd, u32, at, m.constU32(off))
		return e.op(spvOpAccessChain, m.tPtr(spvSCWorkgroup, e.typeOf(elem)), e.shVars[arr], i)
	}
	var zero uint32
	for nb := uint32(0); nb < ir.MMACols; nb += s.N {
		var acc uint32
		if c.Accumulate {
			acc = e.op(spvOpCooperativeMatrixLoadKHR, tC, ptr(c.D, ir.TI32, dBase, nb), m.constU32(spvCoopRowMajor), m.constU32(ir.MMACols))
		} else {
			if zero == 0 {
				zero = m.id()
				m.globals.inst(spvOpConstantComposite, tC, zero, m.constI32(0))
			}
			acc = zero
		}
		for kb := uint32(0); kb < ir.MMADepth; kb += s.K {
			a := e.op(spvOpCooperativeMatrixLoadKHR, tA, ptr(c.A, ir.TU32, aBase, kb/4), m.constU32(spvCoopRowMajor), m.constU32(ir.MMAWordsRow))
			b := e.op(spvOpCooperativeMatrixLoadKHR, tB, ptr(c.B, ir.TU32, bBase, nb*ir.MMAWordsRow+kb/4), m.constU32(spvCoopColumnMajor), m.constU32(ir.MMAWordsRow))
			acc = e.op(spvOpCooperativeMatrixMulAddKHR, tC, a, b, acc, spvCoopAllSigned)
		}
		e.code.inst(spvOpCooperativeMatrixStoreKHR, ptr(c.D, ir.TI32, dBase, nb), acc, m.constU32(spvCoopRowMajor), m.constU32(ir.MMACols))
	}
}

// islandNote is what IslandBody reports for a shape.
func islandNote(s CoopShape) string {
	n := (ir.MMACols / int(s.N)) * (ir.MMADepth / int(s.K))
	return fmt.Sprintf("cooperative matrix %dx%dx%d x%d", s.M, s.N, s.K, n)
}
