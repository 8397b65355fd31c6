package cuda_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

func islandKernel(t *testing.T, acc bool) *ir.Kernel {
	t.Helper()
	k, err := islandtest.Kernel(acc).Build()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestIslandCaps checks the device decides: sm_80 and newer lower the mma island to its native
// body, older architectures and the generic target to the portable one.
func TestIslandCaps(t *testing.T) {
	k := islandKernel(t, false)
	for _, c := range []struct {
		arch   string
		native bool
	}{{"sm_61", false}, {"sm_75", false}, {"sm_80", true}, {"sm_86", true}, {"sm_90", true}, {"sm_90a", true}} {
		src, low, err := cuda.EmitLoweredFor(k, c.arch)
		if err != nil {
			t.Fatal(err)
		}
		got := len(lower.NativeIslands(low)) > 0
		if got != c.native || strings.Contains(src, "mma.sync") != c.native {
			t.Errorf("%s: native island %v (mma.sync in the text %v), want %v", c.arch, got, strings.Contains(src, "mma.sync"), c.native)
		}
		if want := map[bool]string{true: "mma.sync.m16n8k32.s8 x2", false: "portable"}[c.native]; cuda.IslandBody(ir.IslandMMAI8, c.arch) != want {
			t.Errorf("%s: IslandBody %q, want %q", c.arch, cuda.IslandBody(ir.IslandMMAI8, c.arch), want)
		}
	}
	if _, err := cuda.CapsFor("gfx90a"); err == nil {
		t.Error("CapsFor(gfx90a) accepted a non-CUDA architecture")
	}
}

// TestIslandHostExecutionH runs the native body (sm_80 text: two mma.sync per tile, through the
// host emulation of the PTX instruction with its documented fragment layout) and the portable
// body (generic text) against the oracle on every input pattern, in three lane orders.
func TestIslandHostExecutionH(t *testing.T) {
	for _, arch := range []string{"sm_80", "sm_61"} {
		n := islandtest.RunHost(t, host.CUDA, 32, islandtest.Kernel, func(k *ir.Kernel) (string, error) { return cuda.EmitFor(k, arch) })
		t.Logf("%s (%s body): %d host runs (H) bit-exact against oracle.TileMMAI8", arch, cuda.IslandBody(ir.IslandMMAI8, arch), n)
	}
}

// TestIslandHostNeedsFullWarp shows the emulated instruction refuses a run whose warps are not
// 32 lanes: mma.sync needs the whole warp.
func TestIslandHostNeedsFullWarp(t *testing.T) {
	opts := host.Options{SubgroupSize: 16}
	if err := host.Available(opts); err != nil {
		t.Skipf("host execution (H) %v", err)
	}
	src, err := cuda.EmitFor(islandKernel(t, false), "sm_80")
	if err != nil {
		t.Fatal(err)
	}
	c := islandtest.Cases()[0]
	_, err = host.Run(src, host.CUDA, "mma_i8", c.Bufs(), nil, [3]uint32{c.Groups, 1, 1}, [3]uint32{islandtest.WG, 1, 1}, opts)
	var ee *host.ExecError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "needs a full subgroup of 32 lanes") {
		t.Fatalf("run with 16-lane warps: %v, want the emulation to refuse it", err)
	}
}

// referenceLL calls LLVM's own intrinsic for the instruction; LLVM's NVPTX backend knows which
// architectures have it and how PTX spells it.
const referenceLL = `target triple = "nvptx64-nvidia-cuda"
declare {i32, i32, i32, i32} @llvm.nvvm.mma.m16n8k32.row.col.s8(i32, i32, i32, i32, i32, i32, i32, i32, i32, i32)
define void @k(ptr %p) {
  %a = load i32, ptr %p
  %r = call {i32, i32, i32, i32} @llvm.nvvm.mma.m16n8k32.row.col.s8(i32 %a, i32 %a, i32 %a, i32 %a, i32 %a, i32 %a, i32 %a, i32 %a, i32 %a, i32 %a)
  %x = extractvalue {i32, i32, i32, i32} %r, 0
  store i32 %x, ptr %p
  ret void
}
`

// mmaLine matches an mma instruction and its operand groups in PTX.
var mmaLine = regexp.MustCompile(`(mma\.sync\.aligned\.[a-z0-9.]+)\s+\{([^}]*)\},\s*\{([^}]*)\},\s*\{([^}]*)\},\s*\{([^}]*)\}`)

func mmaShape(t *testing.T, ptx string) (string, [4]int) {
	t.Helper()
	m := mmaLine.FindStringSubmatch(ptx)
	if m == nil {
		t.Fatalf("no mma instruction in the PTX:\n%s", ptx)
	}
	var n [4]int
	for i := range n {
		n[i] = len(strings.Split(m[i+2], ","))
	}
	return m[1], n
}

// TestIslandPTX compiles the native body with clang-16 to PTX for sm_80 and sm_90 and checks its
// inline mma.sync against what LLVM's NVPTX backend writes for its own m16n8k32 s8 intrinsic on
// the same architecture: the same instruction, with operand groups of 4 (D), 4 (A), 2 (B) and 4
// (C) registers. LLVM refuses the intrinsic below sm_80, which is why IslandSM is 80.
func TestIslandPTX(t *testing.T) {
	for _, arch := range cuda.Archs {
		src, err := cuda.EmitFor(islandKernel(t, true), arch)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cuda.CompileClang(src, arch)
		if errors.Is(err, cfamily.ErrNoTool) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, gotOps := mmaShape(t, string(r.Output))
		ref, err := cfamily.Run("clang: LLVM IR -> PTX, "+arch, "clang-16", []string{"--target=nvptx64-nvidia-cuda", "-march=" + arch, "-S", "-x", "ir", "-o", "{out}", "{src}"}, "ref.ll", referenceLL, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, wantOps := mmaShape(t, string(ref.Output))
		if got != want || gotOps != wantOps || gotOps != [4]int{4, 4, 2, 4} {
			t.Errorf("%s: the island emits %s %v, LLVM's intrinsic %s %v", arch, got, gotOps, want, wantOps)
		}
		if n := strings.Count(string(r.Output), want); n < 2 {
			t.Errorf("%s: %d mma.sync in the PTX, want at least 2 (one per 8 columns of the tile)", arch, n)
		}
	}
	if _, err := cfamily.Run("clang: LLVM IR -> PTX, sm_75", "clang-16", []string{"--target=nvptx64-nvidia-cuda", "-march=sm_75", "-S", "-x", "ir", "-o", "{out}", "{src}"}, "ref.ll", referenceLL, nil); err == nil {
		t.Error("LLVM accepted the m16n8k32 s8 intrinsic for sm_75; IslandSM may be too high")
	}
}

// FuzzIslandPrint prints kernels around one island built from fuzz bytes (islandtest.FuzzKernel)
// for sm_80 and the generic target: a verified kernel always prints, never panics, and its text
// holds the mma.sync body exactly when the island is native.
func FuzzIslandPrint(f *testing.F) {
	for _, s := range [][]byte{
		{0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 2, 0, 0, 1},
		{1, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 1, 0, 1, 2, 0, 0, 1},
		{0, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 2, 4, 2, 1},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k := islandtest.FuzzKernel(data)
		if ir.Verify(k) != nil {
			return
		}
		for _, arch := range []string{"sm_80", "sm_61"} {
			src, low, err := cuda.EmitLoweredFor(k, arch)
			if err != nil {
				t.Fatalf("%s: a verified kernel does not print: %v", arch, err)
			}
			if native := len(lower.NativeIslands(low)) > 0; native != strings.Contains(src, "os_mma_i8_sm80(") {
				t.Fatalf("%s: native %v, text:\n%s", arch, native, src)
			}
		}
	})
}
