package dsl

import (
	"math"

	"github.com/onesource-go/onesource/ir"
)

// Layout says how the W virtual lanes of a canonical reduction sit on a workgroup of T
// invocations, S = W/T of them (its slots) in each. Every layout gives the same bits; they differ
// only in which memory an invocation reads.
type Layout int

const (
	// Blocked gives invocation l the virtual lanes l*S .. l*S+S-1: per round it reads S
	// consecutive terms (wide loads), and the reduction combines its own slots first, then crosses
	// invocations once.
	Blocked Layout = iota
	// Strided gives invocation l the virtual lanes l, l+T, ..., l+(S-1)*T: per round adjacent
	// invocations read adjacent terms (coalesced scalar loads), and the reduction crosses
	// invocations once per slot, then combines the slots.
	Strided
)

// String is "blocked" or "strided".
func (l Layout) String() string {
	if l == Strided {
		return "strided"
	}
	return "blocked"
}

// Canon is a canonical reduction of fixed width W laid out on the workgroup (Kernel.Canon). Its
// result is the oracle's canonical order for W (package oracle, numeric rule 4): virtual lane v
// folds the terms v, v+W, v+2W, ... in ascending order from the identity (-0 for sums, -Inf for
// max), then the W lanes combine by xor-butterfly, strides 1, 2, ..., W/2, the lower lane's value
// on the left. It depends on W and the terms only: neither the workgroup size, nor the layout,
// nor the device's subgroup size changes a bit.
type Canon struct {
	k      *Kernel
	w, t   int
	layout Layout
	ok     bool
}

// Canon lays a canonical reduction of width w (a power of two) over this kernel's workgroup of T
// invocations (T a power of two dividing w) in the given layout. A width the workgroup does not
// divide is an error naming the caller's line.
func (k *Kernel) Canon(w int, layout Layout) Canon {
	if k == nil {
		return Canon{}
	}
	p := callerPos()
	t := k.Lanes()
	c := Canon{k: k, w: w, t: t, layout: layout}
	switch {
	case w < 1 || w&(w-1) != 0:
		k.errorf(p, "Canon: width %d is not a power of two", w)
	case t&(t-1) != 0:
		k.errorf(p, "Canon: needs a power-of-two workgroup, this one has %d invocations", t)
	case t > w:
		k.errorf(p, "Canon: a workgroup of %d invocations is wider than the canonical width %d", t, w)
	case layout != Blocked && layout != Strided:
		k.errorf(p, "Canon: unknown layout %d", layout)
	default:
		c.ok = true
	}
	return c
}

// Width is W, the number of virtual lanes.
func (c Canon) Width() int { return c.w }

// Slots is S = W/T, the virtual lanes each invocation holds.
func (c Canon) Slots() int {
	if !c.ok {
		return 1
	}
	return c.w / c.t
}

// Layout is the layout the reduction was laid out in.
func (c Canon) Layout() Layout { return c.layout }

// Lane returns the virtual lane (u32) this invocation holds in slot j (0 <= j < Slots()).
func (c Canon) Lane(j int) Value {
	k := c.k
	if !c.ok || j < 0 || j >= c.Slots() {
		if c.ok {
			k.errorf(callerPos(), "Canon.Lane: slot %d of %d", j, c.Slots())
		}
		return k.poison(U32, callerPos())
	}
	l := k.LocalIndex()
	if c.layout == Blocked {
		return l.Mul(uint32(c.Slots())).Add(uint32(j))
	}
	return l.Add(uint32(j * c.t))
}

// ReduceSum combines one value per slot (len(slots) == Slots(), slot j holding virtual lane
// Lane(j)'s accumulator) into the canonical sum, returned in every invocation. Every invocation
// must reach it.
func (c Canon) ReduceSum(slots []Value) Value {
	return c.reduce(callerPos(), ir.ReduceSum, slots)
}

// ReduceMax is ReduceSum with max (floats: a > b ? a : b, the lower virtual lane's value as a).
func (c Canon) ReduceMax(slots []Value) Value {
	return c.reduce(callerPos(), ir.ReduceMax, slots)
}

func (c Canon) reduce(p ir.Pos, op ir.ReduceOp, slots []Value) Value {
	k := c.k
	if !c.ok {
		return k.poison(F32, p)
	}
	if len(slots) != c.Slots() {
		k.errorf(p, "Canon.Reduce%s: %d values for %d slots", opName2(op.String()), len(slots), c.Slots())
		return k.poison(F32, p)
	}
	for _, v := range slots {
		if v.k != k || v.in == nil || v.Type() != slots[0].Type() || v.Type().Lanes != 1 || !(v.Type() == F32 || isInt(v.Type())) {
			k.errorf(p, "Canon.Reduce%s: reduces f32, i32 or u32 scalars of one type, got %s", opName2(op.String()), v.Type())
			return k.poison(F32, p)
		}
	}
	return c.reduceN(p, op, [][]Value{slots})[0]
}

// combiner is op(lo, hi) of a reduction: IEEE add, or the canonical max.
func (c Canon) combiner(op ir.ReduceOp) func(lo, hi Value) Value {
	k := c.k
	return func(lo, hi Value) Value {
		if op == ir.ReduceSum {
			return lo.Add(hi)
		}
		return k.Select(lo.Gt(hi), lo, hi)
	}
}

// cross emits the butterfly across the workgroup's invocations (lowered by package lower).
func (c Canon) cross(p ir.Pos, op ir.ReduceOp, v Value) Value {
	return c.k.emit(&ir.Inst{Op: ir.OpReduce, Type: v.Type(), Args: []*ir.Inst{v.in}, Aux: uint64(op), Pos: p})
}

// reduceN combines m sets of slot values (slots[r][j]: result r, slot j) into m results. The
// reductions across invocations of all m are emitted next to each other, so the lowering
// expands them together (one set of barriers).
func (c Canon) reduceN(p ir.Pos, op ir.ReduceOp, slots [][]Value) []Value {
	combine := c.combiner(op)
	// tree combines values in index order: strides 1, 2, ... of the butterfly restricted to them.
	tree := func(vals []Value) Value {
		for len(vals) > 1 {
			next := make([]Value, len(vals)/2)
			for i := range next {
				next[i] = combine(vals[2*i], vals[2*i+1])
			}
			vals = next
		}
		return vals[0]
	}
	out := make([]Value, len(slots))
	if c.layout == Blocked {
		// Strides below S stay inside the invocation; from S up they cross invocations.
		for r := range slots {
			out[r] = tree(slots[r])
		}
		for r := range out {
			out[r] = c.cross(p, op, out[r])
		}
		return out
	}
	// Strides below T cross invocations, one butterfly per slot; from T up they combine slots.
	crossed := make([][]Value, len(slots))
	for r := range slots {
		crossed[r] = make([]Value, len(slots[r]))
		for j, v := range slots[r] {
			crossed[r][j] = c.cross(p, op, v)
		}
	}
	for r := range crossed {
		out[r] = tree(crossed[r])
	}
	return out
}

// unrolledSlots is the most slots a reduction keeps in as many accumulators, walking the
// invocation's terms in one loop; with more, the slots run in a loop of their own and their tree
// is kept in log2(S) registers. Either way the term's code is emitted once.
const unrolledSlots = 4

// Sum returns, in every invocation, the canonical sum of the f32 terms term(i) for i in [0, n):
// each invocation folds its slots' terms (virtual lane v takes i = v, v+W, ...) slot by slot,
// then the slots and the invocations combine in the butterfly's order. term is called with u32
// indices; at run time it runs exactly once per index, so it may also store (a fused op writing
// what it reads). Its code is emitted once. Every invocation must reach Sum.
func (c Canon) Sum(n Value, term func(i Value) Value) Value {
	p := callerPos()
	return c.terms(p, ir.ReduceSum, n, float32(math.Copysign(0, -1)), 1, func(i Value) []Value { return []Value{term(i)} })[0]
}

// SumN is m canonical sums over the same indices at once: term(i) returns the m terms of index
// i (one per sum), and SumN returns the m sums, each exactly what Sum of its terms gives. The
// indices are walked once, so work the terms share (the activations of a matvec over several
// rows) is done once, and the m reductions share their barriers.
func (c Canon) SumN(n Value, m int, term func(i Value) []Value) []Value {
	p := callerPos()
	if m < 1 {
		c.k.errorf(p, "Canon.SumN: %d sums", m)
		return []Value{c.k.poison(F32, p)}
	}
	return c.terms(p, ir.ReduceSum, n, float32(math.Copysign(0, -1)), m, term)
}

// Max is Sum with the canonical max (a > b ? a : b) and identity -Inf.
func (c Canon) Max(n Value, term func(i Value) Value) Value {
	p := callerPos()
	return c.terms(p, ir.ReduceMax, n, float32(math.Inf(-1)), 1, func(i Value) []Value { return []Value{term(i)} })[0]
}

// Each runs body(i) for every index i in [0, n) that this invocation's slots own (virtual lane
// v owns v, v+W, ...), in the order Sum folds them. A pass after a reduction that reads what the
// invocation itself wrote during it (softmax's exponentials, a fused op's stored sum) visits
// exactly those indices, so it needs no barrier.
func (c Canon) Each(n Value, body func(i Value)) {
	p := callerPos()
	k := c.k
	if !c.ok {
		return
	}
	if n.k != k || n.Type() != U32 {
		k.errorf(p, "Canon.Each: the index count is %s, want u32", n.Type())
		return
	}
	if c.Slots() <= unrolledSlots {
		c.flat(n, func(_, i Value) { body(i) })
		return
	}
	k.For("slot", uint32(0), uint32(c.Slots()), uint32(1), func(j Value) { c.slot(j, n, body) })
}

// flat runs f(j, i) for every index i < n of this invocation, in increasing order, with j (a u32
// value) the slot that owns i: one loop and one copy of f's code. In both layouts the indices
// of one invocation increase with the slot inside a round and from one round to the next, so the
// loop ends at the first index past n.
func (c Canon) flat(n Value, f func(j, i Value)) {
	k := c.k
	S := c.Slots()
	lane := k.LocalIndex()
	if S == 1 {
		k.For("i", lane, n, uint32(c.w), func(i Value) { f(k.U32(0), i) })
		return
	}
	first, step := lane, c.t // step: index distance between consecutive slots
	if c.layout == Blocked {
		first, step = lane.Mul(uint32(S)), 1
	}
	i := k.Var("i", first)
	j := k.Var("slot", uint32(0))
	k.While(func() Value { return i.Get().Lt(n) }, func() {
		f(j.Get(), i.Get())
		last := j.Get().Eq(uint32(S - 1))
		i.Set(i.Get().Add(k.Select(last, k.U32(uint32(c.w-(S-1)*step)), k.U32(uint32(step)))))
		j.Set(k.Select(last, k.U32(0), j.Get().Add(uint32(1))))
	})
}

// slot runs body(i) for the indices of this invocation's slot j (a u32 value): i, i+W, ... < n.
func (c Canon) slot(j, n Value, body func(i Value)) {
	k := c.k
	lane := k.LocalIndex()
	var first Value
	if c.layout == Blocked {
		first = lane.Mul(uint32(c.Slots())).Add(j)
	} else {
		first = lane.Add(j.Mul(uint32(c.t)))
	}
	k.For("i", first, n, uint32(c.w), body)
}

// terms is Sum, SumN and Max: fold each slot of each of the m reductions, combine.
func (c Canon) terms(p ir.Pos, op ir.ReduceOp, n Value, identity float32, m int, term func(i Value) []Value) []Value {
	k := c.k
	poison := func() []Value {
		out := make([]Value, m)
		for r := range out {
			out[r] = k.poison(F32, p)
		}
		return out
	}
	if !c.ok {
		return poison()
	}
	if n.k != k || n.Type() != U32 {
		k.errorf(p, "Canon: the term count is %s, want u32", n.Type())
		return poison()
	}
	combine := c.combiner(op)
	// terms returns the m terms of index i, checked.
	terms := func(i Value) ([]Value, bool) {
		ts := term(i)
		if len(ts) != m {
			k.errorf(p, "Canon: %d terms for %d sums", len(ts), m)
			return nil, false
		}
		for _, t := range ts {
			if t.k != k || t.Type() != F32 {
				k.errorf(p, "Canon: a term is %s, want f32", t.Type())
				return nil, false
			}
		}
		return ts, true
	}
	newAccs := func() []Var {
		accs := make([]Var, m)
		for r := range accs {
			accs[r] = k.Var("acc", identity)
		}
		return accs
	}
	S := c.Slots()
	if S <= unrolledSlots {
		// One loop over the invocation's terms; each goes to its slot's accumulator.
		accs := make([][]Var, S)
		for j := range accs {
			accs[j] = newAccs()
		}
		c.flat(n, func(j, i Value) {
			ts, ok := terms(i)
			if !ok {
				return
			}
			for r, t := range ts {
				cur := accs[0][r].Get()
				for s := 1; s < S; s++ {
					cur = k.Select(j.Eq(uint32(s)), accs[s][r].Get(), cur)
				}
				next := combine(cur, t)
				for s := range accs {
					if S == 1 {
						accs[s][r].Set(next)
					} else {
						accs[s][r].Set(k.Select(j.Eq(uint32(s)), next, accs[s][r].Get()))
					}
				}
			}
		})
		slots := make([][]Value, m)
		for r := range slots {
			slots[r] = make([]Value, S)
			for j := range slots[r] {
				slots[r][j] = accs[j][r].Get()
			}
		}
		return c.reduceN(p, op, slots)
	}
	// The slots in a loop. The pairwise tree over them in index order (strides below S for
	// blocked, from T up for strided) is kept as a stack per reduction: stack[l] holds the
	// finished subtree of 2^l slots waiting for its right neighbour; slot j's value merges up
	// while the bits of j are 1 and settles at the first 0 bit. The last slot (all bits 1)
	// carries the whole tree.
	levels := 0
	for 1<<levels < S {
		levels++
	}
	stacks := make([][]Var, m)
	totals := make([]Var, m)
	for r := range stacks {
		stacks[r] = make([]Var, levels)
		for l := range stacks[r] {
			stacks[r][l] = k.Var("subtree", identity)
		}
		totals[r] = k.Var("slots", identity)
	}
	k.For("slot", uint32(0), uint32(S), uint32(1), func(j Value) {
		accs := newAccs()
		c.slot(j, n, func(i Value) {
			ts, ok := terms(i)
			if !ok {
				return
			}
			for r, t := range ts {
				accs[r].Set(combine(accs[r].Get(), t))
			}
		})
		vs := make([]Value, m)
		for r := range vs {
			vs[r] = accs[r].Get()
		}
		if c.layout == Strided {
			for r := range vs {
				vs[r] = c.cross(p, op, vs[r]) // strides below T first, slot by slot
			}
		}
		for r := range vs {
			carry := k.Var("carry", vs[r])
			stack, total := stacks[r], totals[r]
			var push func(l int)
			push = func(l int) {
				if l == levels {
					total.Set(carry.Get())
					return
				}
				k.If(j.Shr(uint32(l)).And(1).Eq(0), func() {
					stack[l].Set(carry.Get())
				}).Else(func() {
					carry.Set(combine(stack[l].Get(), carry.Get()))
					push(l + 1)
				})
			}
			push(0)
		}
	})
	out := make([]Value, m)
	for r := range out {
		out[r] = totals[r].Get()
	}
	if c.layout == Blocked {
		for r := range out {
			out[r] = c.cross(p, op, out[r]) // strides from S up cross invocations
		}
	}
	return out
}
