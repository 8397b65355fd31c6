package hip

import (
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// islandBody is the native body of the mma island on one family of gfx targets: the helper the
// text calls, the wave it needs and the instruction it runs.
type islandBody struct {
	call        string // Dialect.Islands format
	lanes       int    // the wave the instruction takes
	instruction string // as IslandBody names it
}

var (
	mfmaBody = islandBody{"os_mma_i8_mfma(%[1]s, %[2]s, %[3]s, %[4]s, %[5]s, %[6]s, %[7]s, %[8]s)", 64, "v_mfma_i32_16x16x32_i8 (wave64)"}
	wmmaBody = islandBody{"os_mma_i8_wmma32(%[1]s, %[2]s, %[3]s, %[4]s, %[5]s, %[6]s, %[7]s, %[8]s)", 32, "v_wmma_i32_16x16x16_iu8 x2 (wave32)"}
)

// IslandTable maps a gfx target to its native mma island body: MFMA on CDNA3 (gfx940, the one
// CDNA3 name clang-16 knows; gfx941 and gfx942 are refused by it: one v_mfma_i32_16x16x32_i8 per
// tile, on a wave64), WMMA on RDNA3 (gfx1100-gfx1103: two v_wmma_i32_16x16x16_iu8 per tile, on a
// wave32, the HIP default there; a kernel built with -mwavefrontsize64 would need the wave64
// layout, which is not written). Every other target runs the portable body. Every entry is
// compiled with clang by TestIslandCompile.
var IslandTable = map[string]islandBody{
	"gfx940":  mfmaBody,
	"gfx1100": wmmaBody, "gfx1101": wmmaBody, "gfx1102": wmmaBody, "gfx1103": wmmaBody,
}

// islandCaps adds arch's native islands to c.
func islandCaps(c lower.Caps, base string) lower.Caps {
	if b, ok := IslandTable[base]; ok {
		c.Islands, c.IslandLanes = ir.Islands(ir.IslandMMAI8), b.lanes
	}
	return c
}

// IslandBody names the body an island runs with on arch: the native instruction, or "portable".
func IslandBody(i ir.Island, arch string) string {
	base, err := baseArch(arch)
	if b, ok := IslandTable[base]; err == nil && ok && i == ir.IslandMMAI8 {
		return b.instruction
	}
	return "portable"
}

// mmaMFMA is the mma island's native body on CDNA3, from the register layout of AMD's matrix
// instruction calculator for v_mfma_i32_16x16x32_i8 (one block, wave64): lane l holds values
// 8(l >> 4) .. 8(l >> 4) + 7 of row l & 15 of A, and of row l & 15 of B (column l & 15 of Bᵀ),
// as one 64-bit operand each (two consecutive words of the tile), and D[4(l >> 4) + r][l & 15]
// as element r of its result.
const mmaMFMA = `// The island mma_i8_16x16x32 (D = A*B^T, + D when acc) on a wave64: one v_mfma_i32_16x16x32_i8.
typedef int os_v4i __attribute__((vector_size(16)));
static __device__ __forceinline__ void os_mma_i8_mfma(const unsigned int* a, unsigned int at, const unsigned int* b, unsigned int bt,
		int* d, unsigned int dt, bool acc, unsigned int lane) {
	const unsigned int i = lane & 15u, q = lane >> 4;
	const unsigned int* A = a + at * 128u + i * 8u + 2u * q;
	const unsigned int* B = b + bt * 128u + i * 8u + 2u * q;
	int* D = d + dt * 256u + q * 64u + i;
	const long av = (long)((unsigned long)A[0] | (unsigned long)A[1] << 32);
	const long bv = (long)((unsigned long)B[0] | (unsigned long)B[1] << 32);
	os_v4i c = {acc ? D[0] : 0, acc ? D[16] : 0, acc ? D[32] : 0, acc ? D[48] : 0};
	c = __builtin_amdgcn_mfma_i32_16x16x32_i8(av, bv, c, 0, 0, 0);
	D[0] = c[0];
	D[16] = c[1];
	D[32] = c[2];
	D[48] = c[3];
}
`

// mmaWMMA is the mma island's native body on RDNA3, from AMD's documentation of WMMA on RDNA 3
// (wave32): lane l holds row l & 15 of A and of B (16 values, four words; lanes 16-31 repeat lanes
// 0-15, as the instruction requires) and D[2r + (l >> 4)][l & 15] as element r of its result;
// the tile's 32 values of k are two instructions, k 0-15 then 16-31.
const mmaWMMA = `// The island mma_i8_16x16x32 (D = A*B^T, + D when acc) on a wave32: two v_wmma_i32_16x16x16_iu8.
typedef int os_v4i __attribute__((vector_size(16)));
typedef int os_v8i __attribute__((vector_size(32)));
static __device__ __forceinline__ void os_mma_i8_wmma32(const unsigned int* a, unsigned int at, const unsigned int* b, unsigned int bt,
		int* d, unsigned int dt, bool acc, unsigned int lane) {
	const unsigned int i = lane & 15u, h = lane >> 4;
	const unsigned int* A = a + at * 128u + i * 8u;
	const unsigned int* B = b + bt * 128u + i * 8u;
	int* D = d + dt * 256u + h * 16u + i;
	os_v8i c;
	for (unsigned int r = 0u; r < 8u; r++) c[r] = acc ? D[32u * r] : 0;
	for (unsigned int kh = 0u; kh < 2u; kh++) {
		const os_v4i av = {(int)A[4u * kh], (int)A[4u * kh + 1u], (int)A[4u * kh + 2u], (int)A[4u * kh + 3u]};
		const os_v4i bv = {(int)B[4u * kh], (int)B[4u * kh + 1u], (int)B[4u * kh + 2u], (int)B[4u * kh + 3u]};
		c = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, av, true, bv, c, false);
	}
	for (unsigned int r = 0u; r < 8u; r++) D[32u * r] = c[r];
}
`
