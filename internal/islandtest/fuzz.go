package islandtest

import (
	"github.com/onesource-go/onesource/ir"
)

// FuzzKernel builds, from fuzz bytes (read in this order: workgroup, array count, each array's
// element, length and jitter, each operand's type, kind and value, truncation, raw-immediates
// flag, the immediates, the body's kind and store target, the control), a kernel around one OpIsland whose every part the bytes
// choose: the shared arrays (element type and length), the island's immediates (raw Aux bits or a
// well-formed IslandCall), its operands (constants, a parameter, the subgroup id or the lane id,
// of type u32 or i32), whether it sits under lane-dependent control, and its portable body (empty,
// a store, a barrier, a return or a break). It is for the fuzz tests of the verifier, the
// lowering and the emitters: whatever the bytes, Verify must answer without panicking, and a
// kernel it accepts must lower and emit.
func FuzzKernel(data []byte) *ir.Kernel {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	k := &ir.Kernel{Name: "fuzz_island", WorkgroupSize: [3]uint32{uint32(32 << (next() % 2)), 1, 1}, Body: &ir.Block{}}
	k.Params = []*ir.Param{{Name: "p", Type: ir.TU32}}
	elems := []ir.Type{ir.TU32, ir.TI32, ir.TF32, ir.TU32}
	for i, n := 0, 1+int(next()%4); i < n; i++ {
		elem, size, jitter := elems[next()%4], next()%4, int(next()%2)
		lens := []int{ir.MMATileWords, ir.MMATileD, 2 * ir.MMATileD, 3*ir.MMATileWords + jitter}
		k.Shared = append(k.Shared, &ir.Shared{Name: string(rune('a' + i)), Elem: elem, Len: lens[size]})
	}
	b := k.Body
	add := func(in *ir.Inst) *ir.Inst { b.Append(in); return in }
	operand := func() *ir.Inst {
		t := ir.TU32
		if next()%8 == 0 {
			t = ir.TI32
		}
		kind, value := next()%4, uint64(next()%4)
		switch kind {
		case 0:
			return add(&ir.Inst{Op: ir.OpConst, Type: t, Aux: value})
		case 1:
			if t != ir.TU32 {
				return add(&ir.Inst{Op: ir.OpConst, Type: t})
			}
			return add(&ir.Inst{Op: ir.OpParam, Type: ir.TU32})
		case 2:
			return add(&ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.SubgroupID)})
		}
		return add(&ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.SubgroupLane)})
	}
	args := []*ir.Inst{operand(), operand(), operand()}
	if next()%6 == 0 {
		args = args[:next()%3]
	}
	var aux uint64
	if next()%5 == 0 {
		for i := 0; i < 8; i++ {
			aux = aux<<8 | uint64(next())
		}
	} else {
		n := len(k.Shared)
		aux = ir.IslandCall{Island: ir.IslandMMAI8, A: int(next()) % n, B: int(next()) % n, D: int(next()) % n, Accumulate: next()%2 == 0}.Aux()
	}
	body := &ir.Block{}
	switch next() % 6 {
	case 1:
		body.Append(&ir.Inst{Op: ir.OpBarrier})
	case 2:
		body.Append(&ir.Inst{Op: ir.OpReturn})
	case 3:
		body.Append(&ir.Inst{Op: ir.OpBreak})
	case 4:
		v := &ir.Inst{Op: ir.OpConst, Type: ir.TI32, Aux: 7}
		body.Append(v, &ir.Inst{Op: ir.OpStore, Mem: ir.MemShared, Ref: int(next()) % len(k.Shared), Args: []*ir.Inst{args0(args), v}})
	}
	island := &ir.Inst{Op: ir.OpIsland, Aux: aux, Args: args, Blocks: []*ir.Block{body}}
	if next()%4 == 0 {
		lane := add(&ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.SubgroupLane)})
		zero := add(&ir.Inst{Op: ir.OpConst, Type: ir.TU32})
		cond := add(&ir.Inst{Op: ir.OpEq, Type: ir.TBool, Args: []*ir.Inst{lane, zero}})
		add(&ir.Inst{Op: ir.OpIf, Args: []*ir.Inst{cond}, Blocks: []*ir.Block{{Insts: []*ir.Inst{island}}, {}}})
	} else {
		add(island)
	}
	return k
}

// args0 is the first operand, or a fresh constant when there is none.
func args0(args []*ir.Inst) *ir.Inst {
	if len(args) > 0 {
		return args[0]
	}
	return &ir.Inst{Op: ir.OpConst, Type: ir.TU32}
}
