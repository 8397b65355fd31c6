package lower

import "github.com/onesource-go/onesource/ir"

// CSE hoists constants, parameters and builtins to the top of the kernel and then replaces every
// pure instruction that repeats an earlier one visible at its place (same operation, type,
// immediates and operands) by that earlier one. Memory loads are never merged: memory may change
// between them.
func CSE(k *ir.Kernel) {
	var hoisted []*ir.Inst
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		switch in.Op {
		case ir.OpConst, ir.OpParam, ir.OpBuiltin:
			hoisted = append(hoisted, in)
			return out
		}
		return append(out, in)
	})
	k.Body.Insts = append(hoisted, k.Body.Insts...)

	type key struct {
		op       ir.Op
		t        ir.Type
		aux      uint64
		ref      int
		mem      ir.Mem
		a0, a1   *ir.Inst
		a2, more *ir.Inst
		nargs    int
	}
	keyOf := func(in *ir.Inst) (key, bool) {
		if !cseable(in) || len(in.Args) > 4 {
			return key{}, false
		}
		kk := key{op: in.Op, t: in.Type, aux: in.Aux, ref: in.Ref, mem: in.Mem, nargs: len(in.Args)}
		slots := []**ir.Inst{&kk.a0, &kk.a1, &kk.a2, &kk.more}
		for i, a := range in.Args {
			*slots[i] = a
		}
		return kk, true
	}
	// The instructions visible at a place are those of the enclosing blocks before it: one map
	// holds them all, and each block removes its own on exit. A key is added only when no visible
	// instruction has it, so no entry ever hides another.
	replace := map[*ir.Inst]*ir.Inst{}
	visible := map[key]*ir.Inst{}
	var added []key // keys added by the open blocks, innermost last
	var block func(b *ir.Block)
	block = func(b *ir.Block) {
		mark := len(added)
		out := b.Insts[:0]
		for _, in := range b.Insts {
			for i, a := range in.Args {
				if r, ok := replace[a]; ok {
					in.Args[i] = r
				}
			}
			if kk, ok := keyOf(in); ok {
				if e := visible[kk]; e != nil {
					replace[in] = e
					if e.Name == "" {
						e.Name = in.Name
					}
					continue
				}
				visible[kk] = in
				added = append(added, kk)
			}
			for _, nb := range in.Blocks {
				block(nb)
			}
			out = append(out, in)
		}
		b.Insts = out
		for _, kk := range added[mark:] {
			delete(visible, kk)
		}
		added = added[:mark]
	}
	block(k.Body)
}

func cseable(in *ir.Inst) bool {
	switch in.Op {
	case ir.OpLoad, ir.OpStore, ir.OpAtomic, ir.OpShuffleXor, ir.OpShuffle, ir.OpSubgroupReduce, ir.OpReduce, ir.OpIf, ir.OpLoop,
		ir.OpBreak, ir.OpContinue, ir.OpReturn, ir.OpBarrier:
		return false
	}
	return in.Type != ir.TVoid
}
