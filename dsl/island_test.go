package dsl_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
)

// islandErrAt checks that err names island_test.go:line and contains substr.
func islandErrAt(t *testing.T, err error, wantLine int, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Build succeeded, want an error containing %q at line %d", substr, wantLine)
	}
	var e *ir.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *ir.Error", err)
	}
	if filepath.Base(e.Pos.File) != "island_test.go" || e.Pos.Line != wantLine {
		t.Errorf("error at %s, want island_test.go:%d (%v)", e.Pos, wantLine, err)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Errorf("error %q does not mention %q", err, substr)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("island_test.go:%d", wantLine)) {
		t.Errorf("error text %q does not name island_test.go:%d", err, wantLine)
	}
}

func mmaArrays(k *dsl.Kernel) (a, b, d dsl.Array) {
	return k.Shared("a", dsl.U32, 2*dsl.MMATileWords), k.Shared("b", dsl.U32, dsl.MMATileWords), k.Shared("d", dsl.I32, 2*dsl.MMATileD)
}

func TestMMAOK(t *testing.T) {
	k := dsl.New("mma_ok", 64)
	a, b, d := mmaArrays(k)
	// A tile chosen by the subgroup's index is the same across the subgroup.
	tile := k.SubgroupID().And(uint32(1))
	k.If(k.SubgroupID().Lt(uint32(2)), func() { k.MMA(a, tile, b, 0, d, tile, true) })
	k.MMA(a, 1, a, 0, d, 0, false) // A and B may be one array
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !ik.HasIslands() {
		t.Fatal("no island in the built kernel")
	}
	if s := ik.String(); !strings.Contains(s, "island.mma_i8_16x16x32 a=shared 0 b=shared 1 d=shared 2 acc") || !strings.Contains(s, "portable {") {
		t.Errorf("text form lacks the island:\n%s", s)
	}
}

func TestMMAUnderLaneControl(t *testing.T) {
	k := dsl.New("mma_lane_if", 64)
	a, b, d := mmaArrays(k)
	k.If(k.LaneID().Lt(uint32(16)), func() {
		k.MMA(a, 0, b, 0, d, 0, false)
	})
	bad := line() - 2
	_, err := k.Build()
	islandErrAt(t, err, bad, "not reached by every invocation of the subgroup")
}

func TestMMALaneTileIndex(t *testing.T) {
	k := dsl.New("mma_lane_tile", 64)
	a, b, d := mmaArrays(k)
	tile := k.LocalIndex().And(uint32(1))
	bad := line() + 1
	k.MMA(a, tile, b, 0, d, 0, false)
	_, err := k.Build()
	islandErrAt(t, err, bad, "tile index 0 differs between the invocations of a subgroup")
}

func TestMMAAfterLaneReturn(t *testing.T) {
	k := dsl.New("mma_after_return", 64)
	a, b, d := mmaArrays(k)
	k.If(k.LaneID().Eq(uint32(3)), func() { k.Return() })
	bad := line() + 1
	k.MMA(a, 0, b, 0, d, 0, false)
	_, err := k.Build()
	islandErrAt(t, err, bad, "not reached by every invocation of the subgroup")
}

func TestMMABadOperands(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(k *dsl.Kernel) int
		want  string
	}{
		{"buffer", func(k *dsl.Kernel) int {
			_, b, d := mmaArrays(k)
			x := k.Buffer("x", dsl.U32, dsl.Read)
			l := line() + 1
			k.MMA(x, 0, b, 0, d, 0, false)
			return l
		}, "A is buffer x; the island works on shared arrays"},
		{"elem", func(k *dsl.Kernel) int {
			a, b, _ := mmaArrays(k)
			f := k.Shared("f", dsl.F32, dsl.MMATileD)
			l := line() + 1
			k.MMA(a, 0, b, 0, f, 0, false)
			return l
		}, "D is shared array f of f32, want i32"},
		{"operand as result", func(k *dsl.Kernel) int {
			a, _, _ := mmaArrays(k)
			l := line() + 1
			k.MMA(a, 0, a, 0, a, 0, false)
			return l
		}, "D is shared array a of u32, want i32"},
		{"tile past end", func(k *dsl.Kernel) int {
			a, b, d := mmaArrays(k)
			l := line() + 1
			k.MMA(a, 0, b, 1, d, 0, false)
			return l
		}, "B tile 1 is past the 1 tiles of shared b"},
		{"ragged", func(k *dsl.Kernel) int {
			_, b, d := mmaArrays(k)
			r := k.Shared("r", dsl.U32, dsl.MMATileWords+4)
			l := line() + 1
			k.MMA(r, 0, b, 0, d, 0, false)
			return l
		}, "not a whole number of 128-element A tiles"},
		{"tile type", func(k *dsl.Kernel) int {
			a, b, d := mmaArrays(k)
			l := line() + 1
			k.MMA(a, k.I32(0), b, 0, d, 0, false)
			return l
		}, "tile index is i32, want u32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := dsl.New("mma_bad", 64)
			l := c.build(k)
			_, err := k.Build()
			islandErrAt(t, err, l, c.want)
		})
	}
}

// TestMMAPortableBodyStays checks the portable body is what Build returns: the island's
// block holds the loads of A and B and the store of D.
func TestMMAPortableBody(t *testing.T) {
	k := dsl.New("mma_body", 32)
	a, b, d := mmaArrays(k)
	k.MMA(a, 0, b, 0, d, 1, true)
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	var loads, stores, dots int
	ir.Walk(ik.Body, func(in *ir.Inst) bool {
		if in.Op != ir.OpIsland {
			return true
		}
		ir.Walk(in.Blocks[0], func(x *ir.Inst) bool {
			switch {
			case x.Op == ir.OpLoad && x.Mem == ir.MemShared:
				loads++
			case x.Op == ir.OpStore && x.Mem == ir.MemShared:
				stores++
			case x.Op == ir.OpDotI8x4:
				dots++
			}
			return true
		})
		return false
	})
	// Per element: 8 words of A, 8 of B and the accumulator; 8 packed dots; one store.
	if loads != 17 || dots != 8 || stores != 1 {
		t.Errorf("portable body: %d shared loads, %d dots, %d stores; want 17, 8, 1", loads, dots, stores)
	}
}
