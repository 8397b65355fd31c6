package lower

import "github.com/onesource-go/onesource/ir"

// SelectIslands chooses each intrinsic island's body (package ir, island.go): an OpIsland the
// target runs natively (its Island is in Caps.Islands, and the kernel's workgroup is a whole
// number of Caps.IslandLanes-lane subgroups, the subgroup the native bodies take) stays for the
// backend to print its own body, its portable block emptied; every other island is replaced by
// its portable body, in place. The portable body defines the island's meaning and every native
// body computes the same bytes, so the choice changes speed only.
func SelectIslands(k *ir.Kernel, c Caps) error {
	native := func(in *ir.Inst) bool {
		lanes := k.Lanes()
		return c.Islands.Has(ir.DecodeIsland(in.Aux).Island) && c.IslandLanes > 0 && lanes%c.IslandLanes == 0
	}
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if in.Op != ir.OpIsland {
			return append(out, in)
		}
		if native(in) {
			in.Blocks = []*ir.Block{{}}
			return append(out, in)
		}
		return append(out, in.Blocks[0].Insts...)
	})
	return nil
}

// NativeIslands returns the islands a lowered kernel runs natively (those SelectIslands kept),
// in order of first appearance, each once.
func NativeIslands(k *ir.Kernel) []ir.Island {
	var seen ir.IslandSet
	var out []ir.Island
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op == ir.OpIsland {
			if i := ir.DecodeIsland(in.Aux).Island; !seen.Has(i) {
				seen |= ir.Islands(i)
				out = append(out, i)
			}
		}
		return true
	})
	return out
}
