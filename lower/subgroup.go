package lower

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// CheckShuffles refuses a kernel whose shuffles need wider subgroups than the target has: an
// OpShuffleXor with a constant mask m reads lane (lane ^ m), which exists only in subgroups of
// more than m lanes (dsl.Subgroup's collectives of width W use masks up to W/2). When the
// target's subgroup size is unknown (Caps.SubgroupSize 0 or 1) the kernel passes; MinSubgroup
// tells a runtime what to require of the device.
func CheckShuffles(k *ir.Kernel, c Caps) error {
	if c.SubgroupSize <= 1 {
		return nil
	}
	var err error
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if err != nil {
			return false
		}
		if in.Op == ir.OpShuffleXor && in.Args[1].Op == ir.OpConst {
			if m := uint32(in.Args[1].Aux); m >= uint32(c.SubgroupSize) {
				err = fmt.Errorf("%s: kernel %s needs subgroups of at least %d lanes (a shuffle across lane distance %d), this target has %d", in.Pos, k.Name, minLanes(m), m, c.SubgroupSize)
			}
		}
		return true
	})
	return err
}

// MinSubgroup returns the fewest lanes a subgroup must have for k's constant-mask shuffles to stay
// inside it (1 when k has none).
func MinSubgroup(k *ir.Kernel) int {
	n := 1
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op == ir.OpShuffleXor && len(in.Args) == 2 && in.Args[1].Op == ir.OpConst {
			n = max(n, minLanes(uint32(in.Args[1].Aux)))
		}
		return true
	})
	return n
}

// minLanes is the smallest power of two above m.
func minLanes(m uint32) int {
	n := 1
	for uint32(n) <= m && n < 1<<30 {
		n *= 2
	}
	return n
}
