package conformance

import (
	"reflect"
	"testing"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// TestIslandBodies checks the report names the body each island ran with: the target's own
// where the lowering kept the island, the portable one where it inlined it, nothing for a kernel
// without islands.
func TestIslandBodies(t *testing.T) {
	k, err := islandtest.Kernel(true).Build()
	if err != nil {
		t.Fatal(err)
	}
	native := func(i ir.Island) string { return cuda.IslandBody(i, "sm_80") }
	for _, c := range []struct {
		arch string
		want []string
	}{{"sm_80", []string{"mma_i8_16x16x32: mma.sync.m16n8k32.s8 x2"}}, {"sm_75", []string{"mma_i8_16x16x32: portable"}}} {
		caps, err := cuda.CapsFor(c.arch)
		if err != nil {
			t.Fatal(err)
		}
		low, err := lower.Run(k, caps)
		if err != nil {
			t.Fatal(err)
		}
		var o Outcome
		o.noteIslands(k, low, native)
		if !reflect.DeepEqual(o.Islands, c.want) || len(o.Notes) != 1 || o.Notes[0] != "island "+c.want[0] {
			t.Errorf("%s: islands %q, notes %q; want %q", c.arch, o.Islands, o.Notes, c.want)
		}
	}
	plain := *k
	plain.Body = &ir.Block{}
	if got := islandBodies(&plain, &plain, native); got != nil {
		t.Errorf("a kernel without islands: %q", got)
	}
}
