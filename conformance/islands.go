package conformance

import (
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// islandBodies names, for each intrinsic island of the built kernel k (in order of first
// appearance, each once), the body the lowered kernel low ran it with: "ISLAND: BODY", BODY being
// native(island), the target's name for its own body, where the lowering kept the island, and
// "portable" where it inlined the portable body. nil when k has no island. The report carries
// it per run (Result.Islands), so which body gave a cell's bytes is never a guess.
func islandBodies(k, low *ir.Kernel, native func(ir.Island) string) []string {
	if k == nil || low == nil || !k.HasIslands() {
		return nil
	}
	kept := ir.IslandSet(0)
	for _, i := range lower.NativeIslands(low) {
		kept |= ir.Islands(i)
	}
	var seen ir.IslandSet
	var out []string
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op != ir.OpIsland {
			return true
		}
		i := ir.DecodeIsland(in.Aux).Island
		if seen.Has(i) {
			return true
		}
		seen |= ir.Islands(i)
		body := "portable"
		if kept.Has(i) && native != nil {
			body = native(i)
		}
		out = append(out, i.String()+": "+body)
		return true
	})
	return out
}

// noteIslands records the island bodies of a run in o (Islands, and a note for the report).
func (o *Outcome) noteIslands(k, low *ir.Kernel, native func(ir.Island) string) {
	o.Islands = islandBodies(k, low, native)
	for _, b := range o.Islands {
		o.Notes = append(o.Notes, "island "+b)
	}
}
