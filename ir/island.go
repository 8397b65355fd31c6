package ir

import "fmt"

// Intrinsic islands. An island is a small block of per-target code inside an otherwise portable
// kernel: an instruction no portable language names (a tensor-core matrix multiply-accumulate),
// whose meaning is still one portable body written in the DSL. In the IR an island is one
// OpIsland: its immediates (IslandCall, in Aux) name the island and the shared arrays it works
// on, its operands are u32 tile indices, and its one block is the portable body. Package lower
// keeps the OpIsland for a target that runs the island natively (Caps.Islands; the backend
// prints its own body) and inlines the portable body everywhere else, so a kernel with an
// island is still one source that every backend runs, with the bits of the portable body.
//
// The interface is memory, not registers: each vendor's instruction holds its operands in its
// own lane layout (PTX mma fragments, AMD MFMA and WMMA registers, Vulkan's opaque cooperative
// matrices), so the island reads and writes whole tiles of workgroup shared arrays and each
// native body does its own fragment loads. Every invocation of a subgroup must reach the island
// together, with the same tile indices (Verify checks both statically); its stores, like any
// shared-memory store, are seen by other invocations after a Barrier, and its loads see what was
// stored before one.

// Island names an intrinsic island (the low byte of an OpIsland's Aux).
type Island uint8

// The islands.
const (
	// IslandMMAI8 is the int8 tile product: D = A·Bᵀ, or D += A·Bᵀ when accumulating, for a
	// 16x32 int8 tile A, a 16x32 int8 tile B (K-contiguous rows: B[n][k]) and a 16x16 int32 tile
	// D: D[m][n] = (acc ? D[m][n] : 0) + sum over k < 32 of A[m][k]*B[n][k], wrapping int32
	// arithmetic (exact: one answer on every device, whatever the order of the sum). A and B
	// are shared arrays of u32 holding 4 int8 each (byte j of word w is element 4w+j, as
	// OpDotI8x4 packs them); a tile is MMATileWords consecutive words, row r's values in words
	// 8r..8r+7. D is a shared array of i32; a tile is MMATileD consecutive elements, row-major
	// (D[m][n] at 16m+n). The operands are the tile numbers in A, B and D.
	IslandMMAI8 Island = iota
	// IslandCount is the number of islands.
	IslandCount
)

// The shape of IslandMMAI8.
const (
	MMARows      = 16                    // M: rows of A and D
	MMACols      = 16                    // N: rows of B, columns of D (M = N: A and B tiles have one size)
	MMADepth     = 32                    // K: int8 values per row of A and B
	MMAWordsRow  = MMADepth / 4          // u32 words per row of A or B
	MMATileWords = MMARows * MMAWordsRow // u32 words of one A or B tile
	MMATileD     = MMARows * MMACols     // i32 elements of one D tile
)

var islandNames = [...]string{IslandMMAI8: "mma_i8_16x16x32"}

// String returns the island's name as the IR text form and reports print it.
func (i Island) String() string {
	if int(i) < len(islandNames) {
		return islandNames[i]
	}
	return fmt.Sprintf("island(%d)", uint8(i))
}

// IslandSet is a set of islands: bit i holds Island i.
type IslandSet uint32

// Islands returns the set holding is.
func Islands(is ...Island) IslandSet {
	var s IslandSet
	for _, i := range is {
		s |= 1 << i
	}
	return s
}

// Has reports whether s holds i.
func (s IslandSet) Has(i Island) bool { return i < IslandCount && s&(1<<i) != 0 }

// IslandCall is what an OpIsland's Aux holds: the island, the shared arrays it reads and writes
// (indices into Kernel.Shared) and whether it accumulates into D.
type IslandCall struct {
	Island     Island
	A, B, D    int // shared arrays: the two int8 operand tiles and the int32 result tile
	Accumulate bool
}

// maxIslandShared is the largest shared-array index an IslandCall encodes.
const maxIslandShared = 1<<16 - 1

// Aux encodes c as an OpIsland's Aux: the island in bits 0-7, A, B and D in bits 8-23, 24-39
// and 40-55, Accumulate in bit 56.
func (c IslandCall) Aux() uint64 {
	x := uint64(c.Island) | uint64(c.A&maxIslandShared)<<8 | uint64(c.B&maxIslandShared)<<24 | uint64(c.D&maxIslandShared)<<40
	if c.Accumulate {
		x |= 1 << 56
	}
	return x
}

// DecodeIsland returns the IslandCall an OpIsland's Aux encodes.
func DecodeIsland(aux uint64) IslandCall {
	return IslandCall{
		Island:     Island(aux),
		A:          int(aux >> 8 & maxIslandShared),
		B:          int(aux >> 24 & maxIslandShared),
		D:          int(aux >> 40 & maxIslandShared),
		Accumulate: aux>>56&1 != 0,
	}
}

// checkIsland is the verifier's type check of an OpIsland (its scope is checked by the
// uniformity analysis).
func (v *verifier) checkIsland(in *Inst) string {
	c := DecodeIsland(in.Aux)
	if c.Island >= IslandCount || in.Aux>>57 != 0 {
		return fmt.Sprintf("unknown island %d", in.Aux&0xff)
	}
	if in.Type != TVoid {
		return "an island has no result"
	}
	if m := v.argTypes(in, 3); m != "" {
		return m
	}
	for i, a := range in.Args {
		if a.Type != TU32 {
			return fmt.Sprintf("%s: tile index %d is %s, want u32", c.Island, i, a.Type)
		}
	}
	k := v.k
	arrays := [3]struct {
		what string
		ref  int
		elem Type
		tile int
	}{{"A", c.A, TU32, MMATileWords}, {"B", c.B, TU32, MMATileWords}, {"D", c.D, TI32, MMATileD}}
	for i, a := range arrays {
		if a.ref < 0 || a.ref >= len(k.Shared) {
			return fmt.Sprintf("%s: shared array %d for %s does not exist", c.Island, a.ref, a.what)
		}
		s := k.Shared[a.ref]
		if s.Elem != a.elem {
			return fmt.Sprintf("%s: %s is shared %s of %s, want %s", c.Island, a.what, s.Name, s.Elem, a.elem)
		}
		if s.Len < a.tile || s.Len%a.tile != 0 {
			return fmt.Sprintf("%s: shared %s holds %d elements, not a whole number of %d-element %s tiles", c.Island, s.Name, s.Len, a.tile, a.what)
		}
		if t := in.Args[i]; t.Op == OpConst && uint64(uint32(t.Aux)) >= uint64(s.Len/a.tile) {
			return fmt.Sprintf("%s: %s tile %d is past the %d tiles of shared %s", c.Island, a.what, uint32(t.Aux), s.Len/a.tile, s.Name)
		}
	}
	return "" // D holds i32 and A, B u32: the result never aliases an operand
}

// islandBody checks the portable body of an island: it runs inside the island only, so it may
// not leave it (return, or break and continue of a loop outside it) nor synchronize the
// workgroup (barrier, workgroup reduction), and islands do not nest.
func (v *verifier) islandBody(in *Inst) {
	loops, inCont := v.loops, v.inCont
	v.loops, v.inCont = 0, 0
	v.block(in.Blocks[0])
	v.loops, v.inCont = loops, inCont
	Walk(in.Blocks[0], func(x *Inst) bool {
		switch x.Op {
		case OpReturn, OpBarrier, OpReduce, OpIsland:
			v.errf(x.Pos, "%s inside the portable body of island %s (at %s)", x.Op, DecodeIsland(in.Aux).Island, in.Pos)
		}
		return true
	})
}

// HasIslands reports whether k holds an OpIsland.
func (k *Kernel) HasIslands() bool {
	found := false
	Walk(k.Body, func(in *Inst) bool {
		found = found || in.Op == OpIsland
		return !found
	})
	return found
}
