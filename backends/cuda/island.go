package cuda

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// IslandSM is the oldest compute capability whose text runs the mma island natively (sm_80,
// Ampere: mma.sync.aligned.m16n8k32 with s8 operands); older ones run its portable body.
const IslandSM = 80

var smRE = regexp.MustCompile(`^sm_([0-9]+)[a-z]?$`)

// smOf returns the compute capability of "sm_XY" (XY).
func smOf(arch string) (int, error) {
	m := smRE.FindStringSubmatch(arch)
	if m == nil {
		return 0, fmt.Errorf("cuda: %q is not an architecture name like sm_80 or sm_90", arch)
	}
	return strconv.Atoi(m[1])
}

// CapsFor returns the lowering target of an architecture ("sm_80", "sm_90a", ...): Caps, and from
// sm_80 on the mma island's native body (a warp of 32 lanes).
func CapsFor(arch string) (lower.Caps, error) {
	sm, err := smOf(arch)
	if err != nil {
		return lower.Caps{}, err
	}
	c := Caps
	if sm >= IslandSM {
		c.Islands, c.IslandLanes = ir.Islands(ir.IslandMMAI8), 32
	}
	return c, nil
}

// DialectFor returns the CUDA table of the C-family printer for an architecture: Dialect with
// CapsFor's capabilities. Its Target line stays Dialect's: text without islands is the same for
// every architecture, and text with a native island says so in its header ("native islands:"),
// its helper naming the architecture it needs.
func DialectFor(arch string) (*cfamily.Dialect, error) {
	c, err := CapsFor(arch)
	if err != nil {
		return nil, err
	}
	d := *Dialect
	d.Caps = c
	return &d, nil
}

// EmitFor lowers k for an architecture (CapsFor) and prints it; EmitLoweredFor also returns the
// lowered kernel the text prints.
func EmitFor(k *ir.Kernel, arch string) (string, error) {
	src, _, err := EmitLoweredFor(k, arch)
	return src, err
}

// EmitLoweredFor is EmitFor that also returns the lowered kernel (see EmitLowered).
func EmitLoweredFor(k *ir.Kernel, arch string) (string, *ir.Kernel, error) {
	if k == nil {
		return "", nil, fmt.Errorf("cuda: Emit: nil kernel")
	}
	d, err := DialectFor(arch)
	if err != nil {
		return "", nil, err
	}
	low, err := lower.Run(k, d.Caps)
	if err != nil {
		return "", nil, err
	}
	src, err := cfamily.Print(low, d)
	return src, low, err
}

// IslandBody names the body an island runs with on arch: the native instruction, or "portable".
func IslandBody(i ir.Island, arch string) string {
	if c, err := CapsFor(arch); err == nil && c.Islands.Has(i) {
		return islandBodies[i]
	}
	return "portable"
}

var islandBodies = [ir.IslandCount]string{ir.IslandMMAI8: "mma.sync.m16n8k32.s8 x2"}

// The mma island's native body on sm_80 and newer: a 16x16x32 tile is two
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32, for columns 0-7 and 8-15 of D. Each lane loads
// its fragments from the shared tiles in the PTX ISA's layout for m16n8k32 (g = lane >> 2, t =
// lane & 3): A registers a0..a3 are words t and 4+t of rows g and g+8 (a0 = row g, k 4t..4t+3;
// a1 = row g+8; a2 = row g, k 16+4t..; a3 = row g+8, k 16+4t..); B registers b0, b1 are words t
// and 4+t of B's row n = 8h+g (D's column n); C/D elements c0..c3 are D[g][8h+2t], D[g][8h+2t+1],
// D[g+8][8h+2t], D[g+8][8h+2t+1].
const mmaHelper = `#if !defined(ONESOURCE_HOST)
// PTX mma.sync m16n8k32 with s8 multiplicands and s32 accumulators (sm_80 and newer); a host
// emulation defines this name itself.
static __device__ __forceinline__ void os_ptx_mma_m16n8k32_s8(int* d, unsigned int a0, unsigned int a1, unsigned int a2, unsigned int a3,
		unsigned int b0, unsigned int b1, int c0, int c1, int c2, int c3) {
	asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
		: "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
		: "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
#endif
// The island mma_i8_16x16x32 (D = A*B^T, + D when acc) on a warp: two mma.sync m16n8k32.
static __device__ __forceinline__ void os_mma_i8_sm80(const unsigned int* a, unsigned int at, const unsigned int* b, unsigned int bt,
		int* d, unsigned int dt, bool acc, unsigned int lane) {
	const unsigned int g = lane >> 2, t = lane & 3u;
	const unsigned int* A = a + at * 128u;
	const unsigned int* B = b + bt * 128u;
	int* D = d + dt * 256u;
	const unsigned int a0 = A[g * 8u + t], a1 = A[(g + 8u) * 8u + t], a2 = A[g * 8u + 4u + t], a3 = A[(g + 8u) * 8u + 4u + t];
	for (unsigned int h = 0u; h < 2u; h++) {
		const unsigned int n = h * 8u + g;
		int* lo = D + g * 16u + h * 8u + 2u * t;
		int* hi = lo + 128u;
		int r[4];
		os_ptx_mma_m16n8k32_s8(r, a0, a1, a2, a3, B[n * 8u + t], B[n * 8u + 4u + t],
			acc ? lo[0] : 0, acc ? lo[1] : 0, acc ? hi[0] : 0, acc ? hi[1] : 0);
		lo[0] = r[0];
		lo[1] = r[1];
		hi[0] = r[2];
		hi[1] = r[3];
	}
}
`
