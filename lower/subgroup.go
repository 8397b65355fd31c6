package lower

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// CheckShuffles refuses a kernel whose shuffles need wider subgroups than the target has: an
// OpShuffleXor with a constant mask m reads lane (lane ^ m), which exists only in subgroups of
// more than m lanes (dsl.Subgroup's collectives of width W use masks up to W/2). When the
// target's subgroup size is unknown (Caps.SubgroupSize 0 or 1) the kernel passes; an
// OpSubgroupReduce over clusters of W lanes needs W lanes the same way. MinSubgroup
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
		if in.Op == ir.OpSubgroupReduce && in.Ref > c.SubgroupSize {
			err = fmt.Errorf("%s: kernel %s needs subgroups of at least %d lanes (a subgroup reduction over clusters of %d), this target has %d", in.Pos, k.Name, in.Ref, in.Ref, c.SubgroupSize)
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
		if in.Op == ir.OpSubgroupReduce {
			n = max(n, in.Ref)
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

// LegalizeSubgroupReduce expands every OpSubgroupReduce the target cannot run natively (see
// Caps.SubgroupArithmetic) into the canonical xor butterfly over its cluster: at strides 1, 2,
// ..., W/2 each lane combines its value with its partner's as op(lower lane's, higher lane's)
// (dsl.Subgroup's order), so such a target gives the exact, device-independent bits.
func LegalizeSubgroupReduce(k *ir.Kernel, c Caps) error {
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if in.Op != ir.OpSubgroupReduce || (c.SubgroupArithmetic && in.Ref == c.SubgroupSize) {
			return append(out, in)
		}
		g := &gen{out: out, pos: in.Pos}
		t := in.Type
		op := ir.OpAdd
		if ir.ReduceOp(in.Aux) == ir.ReduceMax {
			op = ir.OpMax
		}
		v := in.Args[0]
		var lane *ir.Inst
		for s := 1; s < in.Ref; s *= 2 {
			y := g.op(ir.OpShuffleXor, t, v, g.konst(ir.TU32, float64(s)))
			if op == ir.OpAdd || t.Scalar != ir.F32 {
				v = g.op(op, t, v, y)
				continue
			}
			if lane == nil {
				lane = g.add(&ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.SubgroupLane)})
			}
			low := g.op(ir.OpEq, ir.TBool, g.op(ir.OpAnd, ir.TU32, lane, g.konst(ir.TU32, float64(s))), g.konst(ir.TU32, 0))
			v = g.op(op, t, g.op(ir.OpSelect, t, low, v, y), g.op(ir.OpSelect, t, low, y, v))
		}
		name := in.Name
		if v == in.Args[0] { // W = 1
			v = g.op(ir.OpBitcast, t, v)
		}
		*in = *v
		in.Name = name
		g.out[len(g.out)-1] = in
		return g.out
	})
	return nil
}
