package lower

import "github.com/onesource-go/onesource/ir"

// LegalizeAtomics rewrites f32 atomic adds for targets without a native one (Caps.AtomicFloatAdd
// false, as SPIR-V without SPV_EXT_shader_atomic_float_add and MSL): every buffer or shared array
// an f32 atomic touches is retyped to u32 (the same bytes), its loads and stores get bit casts,
// and each atomic add becomes a compare-exchange loop:
//
//	old := atomic_or(a[i], 0)                   // an atomic read of the bits
//	loop { new := bits(float(old) + v); got := cmpxchg(a[i], old, new); if got == old { break }; old = got }
//	result = float(old)
//
// Each successful exchange adds v to the value it replaced with one rounding, as a native f32
// atomic add does; which invocation's add lands first is the device's choice either way (so the
// final sum is order-independent only when every partial sum is exact, as with small integers).
func LegalizeAtomics(k *ir.Kernel, c Caps) error {
	if c.AtomicFloatAdd {
		return nil
	}
	bufs := map[int]bool{}
	shared := map[int]bool{}
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op != ir.OpAtomic || in.Type != ir.TF32 {
			return true
		}
		switch in.Mem {
		case ir.MemBuffer:
			bufs[in.Ref] = true
		case ir.MemShared:
			shared[in.Ref] = true
		}
		return true
	})
	if len(bufs) == 0 && len(shared) == 0 {
		return nil
	}
	for i := range bufs {
		if k.Buffers[i].Elem == ir.TF32 {
			k.Buffers[i].Elem = ir.TU32
		}
	}
	for i := range shared {
		if k.Shared[i].Elem == ir.TF32 {
			k.Shared[i].Elem = ir.TU32
		}
	}
	retyped := func(in *ir.Inst) bool {
		return (in.Mem == ir.MemBuffer && bufs[in.Ref]) || (in.Mem == ir.MemShared && shared[in.Ref])
	}
	var oldVar = -1
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if (in.Op != ir.OpLoad && in.Op != ir.OpStore && in.Op != ir.OpAtomic) || !retyped(in) {
			return append(out, in)
		}
		g := &gen{out: out, pos: in.Pos}
		switch in.Op {
		case ir.OpLoad:
			l := g.add(&ir.Inst{Op: ir.OpLoad, Type: ir.TU32, Mem: in.Mem, Ref: in.Ref, Args: in.Args})
			*in = ir.Inst{Op: ir.OpBitcast, Type: ir.TF32, Args: []*ir.Inst{l}, Name: in.Name, Pos: in.Pos}
			return append(g.out, in)
		case ir.OpStore:
			v := g.op(ir.OpBitcast, ir.TU32, in.Args[1])
			in.Args = []*ir.Inst{in.Args[0], v}
			return append(g.out, in)
		}
		// An f32 atomic add (the verifier allows no other f32 atomic).
		if oldVar < 0 {
			oldVar = len(k.Vars)
			k.Vars = append(k.Vars, &ir.Var{Name: "cas_old", Type: ir.TU32, Pos: in.Pos})
		}
		idx, val := in.Args[0], in.Args[1]
		atomic := func(g *gen, op ir.AtomicOp, args ...*ir.Inst) *ir.Inst {
			return g.add(&ir.Inst{Op: ir.OpAtomic, Type: ir.TU32, Mem: in.Mem, Ref: in.Ref, Aux: uint64(op), Args: append([]*ir.Inst{idx}, args...)})
		}
		first := atomic(g, ir.AtomicOr, g.konst(ir.TU32, 0))
		g.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: oldVar, Args: []*ir.Inst{first}})
		body := &gen{pos: in.Pos}
		old := body.add(&ir.Inst{Op: ir.OpLoad, Type: ir.TU32, Mem: ir.MemVar, Ref: oldVar})
		sum := body.op(ir.OpAdd, ir.TF32, body.op(ir.OpBitcast, ir.TF32, old), val)
		got := atomic(body, ir.AtomicCmpXchg, old, body.op(ir.OpBitcast, ir.TU32, sum))
		same := body.op(ir.OpEq, ir.TBool, got, old)
		body.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{same}, Blocks: []*ir.Block{
			{Insts: []*ir.Inst{{Op: ir.OpBreak, Type: ir.TVoid, Pos: in.Pos}}}, {}}})
		body.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: oldVar, Args: []*ir.Inst{got}})
		g.add(&ir.Inst{Op: ir.OpLoop, Type: ir.TVoid, Blocks: []*ir.Block{{Insts: body.out}, {}}})
		last := g.add(&ir.Inst{Op: ir.OpLoad, Type: ir.TU32, Mem: ir.MemVar, Ref: oldVar})
		*in = ir.Inst{Op: ir.OpBitcast, Type: ir.TF32, Args: []*ir.Inst{last}, Name: in.Name, Pos: in.Pos}
		return append(g.out, in)
	})
	return nil
}
