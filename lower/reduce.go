package lower

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// maxTreeWidth is the most per-subgroup partial values the final stage reads from shared memory
// and combines in registers; more groups first go through butterfly rounds in shared memory.
const maxTreeWidth = 32

// ExpandReductions replaces every OpReduce by the canonical xor-butterfly of DESIGN.md contract 4
// over the workgroup's T invocations (by local index): strides below the subgroup size use
// shuffles; the rest use shared memory. At every stride the pair combines as op(lower lane's
// value, higher lane's value), so every lane ends with the same, schedule-defined result whatever
// the device's subgroup size. The final stage reads the remaining per-group partials from shared
// memory and combines them as a pairwise tree in index order, which equals the butterfly.
func ExpandReductions(k *ir.Kernel, c Caps) error {
	T := k.Lanes()
	var err error
	scratch := map[ir.Type]int{}
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if in.Op != ir.OpReduce {
			return append(out, in)
		}
		if T&(T-1) != 0 {
			err = fmt.Errorf("%s: reduction over %d invocations, not a power of two", in.Pos, T)
			return append(out, in)
		}
		g := &gen{out: out, pos: in.Pos}
		expandReduce(k, g, in, T, c, scratch)
		return g.out
	})
	return err
}

func expandReduce(k *ir.Kernel, g *gen, r *ir.Inst, T int, c Caps, scratch map[ir.Type]int) {
	t := r.Type
	op := ir.OpAdd
	if ir.ReduceOp(r.Aux) == ir.ReduceMax {
		op = ir.OpMax
	}
	sg := c.SubgroupSize
	if sg < 1 {
		sg = 1
	}
	if sg > T {
		sg = T
	}
	x := r.Args[0]
	var lane *ir.Inst
	laneIdx := func() *ir.Inst {
		if lane == nil {
			lane = g.add(&ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.LocalIndex), Name: "lane"})
		}
		return lane
	}
	// combine returns op(lo, hi) where lo is the value of the lane whose bit s is clear.
	combine := func(self, other *ir.Inst, s int) *ir.Inst {
		if op == ir.OpAdd {
			return g.op(ir.OpAdd, t, self, other) // IEEE addition is commutative
		}
		bit := g.op(ir.OpAnd, ir.TU32, laneIdx(), g.konst(ir.TU32, float64(s)))
		low := g.op(ir.OpEq, ir.TBool, bit, g.konst(ir.TU32, 0))
		lo := g.op(ir.OpSelect, t, low, self, other)
		hi := g.op(ir.OpSelect, t, low, other, self)
		return g.op(op, t, lo, hi)
	}
	for s := 1; s < sg; s *= 2 {
		y := g.op(ir.OpShuffleXor, t, x, g.konst(ir.TU32, float64(s)))
		x = combine(x, y, s)
	}
	G := sg
	if G < T {
		// Shared-memory stages. One scratch array per element type, reused by every reduction:
		// the closing barrier of each makes that safe.
		need := T / G
		if need > maxTreeWidth {
			need = T
		}
		sh := scratchArray(k, t, need, scratch)
		for T/G > maxTreeWidth {
			g.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{laneIdx(), x}})
			g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
			partner := g.op(ir.OpXor, ir.TU32, laneIdx(), g.konst(ir.TU32, float64(G)))
			y := g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{partner}})
			g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
			x = combine(x, y, G)
			G *= 2
		}
		W := T / G
		// Lanes that lead a group publish the group's value.
		leader := g.op(ir.OpEq, ir.TBool, g.op(ir.OpAnd, ir.TU32, laneIdx(), g.konst(ir.TU32, float64(G-1))), g.konst(ir.TU32, 0))
		store := &gen{pos: g.pos}
		slot := store.op(ir.OpShr, ir.TU32, laneIdx(), store.konst(ir.TU32, float64(log2(G))))
		store.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{slot, x}})
		g.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{leader}, Blocks: []*ir.Block{{Insts: store.out}, {}}})
		g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
		vals := make([]*ir.Inst, W)
		for j := range vals {
			vals[j] = g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{g.konst(ir.TU32, float64(j))}})
		}
		g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
		for len(vals) > 1 {
			next := make([]*ir.Inst, len(vals)/2)
			for j := range next {
				next[j] = g.op(op, t, vals[2*j], vals[2*j+1])
			}
			vals = next
		}
		x = vals[0]
	}
	// r becomes the last value so later uses of the reduction see the result.
	name := r.Name
	if n := len(g.out); x != r.Args[0] && g.out[n-1] == x {
		*r = *x
		g.out[n-1] = r
	} else {
		tr := g.konst(ir.TBool, 1)
		*r = ir.Inst{Op: ir.OpSelect, Type: t, Args: []*ir.Inst{tr, x, x}, Pos: r.Pos}
		g.out = append(g.out, r)
	}
	r.Name = name
}

func scratchArray(k *ir.Kernel, t ir.Type, n int, scratch map[ir.Type]int) int {
	if i, ok := scratch[t]; ok {
		if k.Shared[i].Len < n {
			k.Shared[i].Len = n
		}
		return i
	}
	k.Shared = append(k.Shared, &ir.Shared{Name: "reduce_" + t.String(), Elem: t, Len: n})
	scratch[t] = len(k.Shared) - 1
	return scratch[t]
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}
