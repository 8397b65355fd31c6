package lower

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// maxTreeWidth is the most per-subgroup partial values the final stage reads from shared memory
// and combines in registers; more groups first go through butterfly rounds in shared memory.
const maxTreeWidth = 32

// ExpandReductions replaces every OpReduce by the canonical xor-butterfly (numeric rule 4 in
// package oracle) over the workgroup's T invocations (by local index): strides below the subgroup
// size use shuffles; the rest use shared memory. At every stride the pair combines as op(lower
// lane's value, higher lane's value), so every lane ends with the same, schedule-defined result
// whatever the device's subgroup size. The final stage reads the remaining per-group partials
// from shared memory and combines them as a pairwise tree in index order, which equals the
// butterfly.
//
// A run of adjacent reductions of one op and type, none reading another's result (what a
// strided dsl.Canon emits, one per slot), is expanded together: each shared-memory stage stores
// every value of the run, then one barrier, then loads every partner, so the run costs the
// barriers of a single reduction.
func ExpandReductions(k *ir.Kernel, c Caps) error {
	T := k.Lanes()
	var err error
	scratch := map[ir.Type]int{}
	var expand func(b *ir.Block)
	expand = func(b *ir.Block) {
		out := make([]*ir.Inst, 0, len(b.Insts))
		for i := 0; i < len(b.Insts); {
			in := b.Insts[i]
			for _, nb := range in.Blocks {
				expand(nb)
			}
			if in.Op != ir.OpReduce {
				out = append(out, in)
				i++
				continue
			}
			if T&(T-1) != 0 {
				err = fmt.Errorf("%s: reduction over %d invocations, not a power of two", in.Pos, T)
				out = append(out, in)
				i++
				continue
			}
			run := []*ir.Inst{in}
			inRun := map[*ir.Inst]bool{in: true}
			for i+len(run) < len(b.Insts) {
				next := b.Insts[i+len(run)]
				if next.Op != ir.OpReduce || next.Type != in.Type || next.Aux != in.Aux || readsAny(next, inRun) {
					break
				}
				run = append(run, next)
				inRun[next] = true
			}
			g := &gen{out: out, pos: in.Pos}
			expandReduce(k, g, run, T, c, scratch)
			out = g.out
			i += len(run)
		}
		b.Insts = out
	}
	expand(k.Body)
	return err
}

// readsAny reports whether in uses the result of one of run.
func readsAny(in *ir.Inst, run map[*ir.Inst]bool) bool {
	for _, a := range in.Args {
		if run[a] {
			return true
		}
	}
	return false
}

// expandReduce expands the reductions of run (one op and type) together, appending to g.
func expandReduce(k *ir.Kernel, g *gen, run []*ir.Inst, T int, c Caps, scratch map[ir.Type]int) {
	t := run[0].Type
	op := ir.OpAdd
	if ir.ReduceOp(run[0].Aux) == ir.ReduceMax {
		op = ir.OpMax
	}
	sg := c.SubgroupSize
	if sg < 1 {
		sg = 1
	}
	if sg > T {
		sg = T
	}
	R := len(run)
	xs := make([]*ir.Inst, R)
	for m, r := range run {
		xs[m] = r.Args[0]
	}
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
		for m := range xs {
			y := g.op(ir.OpShuffleXor, t, xs[m], g.konst(ir.TU32, float64(s)))
			xs[m] = combine(xs[m], y, s)
		}
	}
	G := sg
	if G < T {
		// Shared-memory stages. One scratch array per element type, reused by every reduction
		// (the closing barrier of each makes that safe); value m of the run uses the part
		// [m*need, (m+1)*need).
		need := T / G
		if need > maxTreeWidth {
			need = T
		}
		sh := scratchArray(k, t, need*R, scratch)
		at := func(m int, idx *ir.Inst) *ir.Inst {
			if m == 0 {
				return idx
			}
			return g.op(ir.OpAdd, ir.TU32, idx, g.konst(ir.TU32, float64(m*need)))
		}
		for T/G > maxTreeWidth {
			for m := range xs {
				g.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{at(m, laneIdx()), xs[m]}})
			}
			g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
			partner := g.op(ir.OpXor, ir.TU32, laneIdx(), g.konst(ir.TU32, float64(G)))
			ys := make([]*ir.Inst, R)
			for m := range xs {
				ys[m] = g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{at(m, partner)}})
			}
			g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
			for m := range xs {
				xs[m] = combine(xs[m], ys[m], G)
			}
			G *= 2
		}
		W := T / G
		// Lanes that lead a group publish the group's values.
		leader := g.op(ir.OpEq, ir.TBool, g.op(ir.OpAnd, ir.TU32, laneIdx(), g.konst(ir.TU32, float64(G-1))), g.konst(ir.TU32, 0))
		store := &gen{pos: g.pos}
		slot := store.op(ir.OpShr, ir.TU32, laneIdx(), store.konst(ir.TU32, float64(log2(G))))
		for m := range xs {
			idx := slot
			if m > 0 {
				idx = store.op(ir.OpAdd, ir.TU32, slot, store.konst(ir.TU32, float64(m*need)))
			}
			store.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{idx, xs[m]}})
		}
		g.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{leader}, Blocks: []*ir.Block{{Insts: store.out}, {}}})
		g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
		vals := make([][]*ir.Inst, R)
		for m := range vals {
			vals[m] = make([]*ir.Inst, W)
			for j := range vals[m] {
				vals[m][j] = g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemShared, Ref: sh, Args: []*ir.Inst{g.konst(ir.TU32, float64(m*need+j))}})
			}
		}
		g.add(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid})
		for m := range vals {
			v := vals[m]
			for len(v) > 1 {
				next := make([]*ir.Inst, len(v)/2)
				for j := range next {
					next[j] = g.op(op, t, v[2*j], v[2*j+1])
				}
				v = next
			}
			xs[m] = v[0]
		}
	}
	// Each reduction becomes its last value so later uses of it see the result.
	for m, r := range run {
		x := xs[m]
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
