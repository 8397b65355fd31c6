package dsl

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/ir"
)

// Pair is a value with a u32 index: the terms and the result of the canonical reductions that
// carry an index (Canon.ArgMax, Canon.ArgMin, Canon.ArgPairs, Canon.ReducePairs).
type Pair struct {
	Value Value // f32, i32 or u32
	Index Value // u32
}

// NoIndex is the index of the identity pair of ArgMax and ArgMin: what they return for no terms.
const NoIndex = math.MaxUint32

// ArgMax returns, in every invocation, the largest of the f32 terms term(i), i in [0, n), and the
// lowest i holding it: equal values (+0 and -0 are equal) go to the lower index, and a NaN beats
// every number (the first NaN wins). With no terms it is (-Inf, NoIndex). The rule is a strict
// total order, so the pair is the same at every width, layout, schedule and split over
// workgroups (ArgPairs over the partials of several workgroups), and it is oracle.ArgMax's.
// term is called with u32 indices; its code is emitted once. Every invocation must reach it.
func (c Canon) ArgMax(n Value, term func(i Value) Value) Pair {
	return c.arg(callerPos(), n, true, func(i Value) Pair { return Pair{term(i), i} })
}

// ArgMin is ArgMax with the smallest value winning (a NaN still beats every number); with no
// terms, (+Inf, NoIndex).
func (c Canon) ArgMin(n Value, term func(i Value) Value) Pair {
	return c.arg(callerPos(), n, false, func(i Value) Pair { return Pair{term(i), i} })
}

// ArgPairs is ArgMax (max true) or ArgMin over pairs that carry their own indices: the second
// pass of an argmax over several workgroups, whose terms are the first pass's partials.
func (c Canon) ArgPairs(n Value, max bool, term func(i Value) Pair) Pair {
	return c.arg(callerPos(), n, max, term)
}

// ReducePairs returns, in every invocation, the canonical reduction of the pairs term(i), i in
// [0, n), by combine, in the order of every canonical reduction (package oracle, rule 4): W
// virtual lanes each fold their terms i = v, v+W, ... in ascending order from identity, acc =
// combine(acc, term(i)); then the lanes combine by xor-butterfly, strides 1, 2, ..., W/2,
// combine(lower lane's pair, higher lane's pair). The result is oracle.ReduceOf over pairs with
// the same combine, the same at every schedule whatever combine is. The terms' values have
// identity's type. Across invocations the pairs pass through workgroup shared memory (two
// arrays as long as the workgroup). Every invocation must reach it.
func (c Canon) ReducePairs(n Value, identity Pair, term func(i Value) Pair, combine func(lo, hi Pair) Pair) Pair {
	return c.pairs(callerPos(), n, identity, term, combine)
}

// arg is ArgMax, ArgMin and ArgPairs.
func (c Canon) arg(p ir.Pos, n Value, max bool, term func(i Value) Pair) Pair {
	k := c.k
	if k == nil {
		return Pair{}
	}
	id := Pair{k.F32(float32(math.Inf(1))), k.U32(NoIndex)}
	if max {
		id.Value = k.F32(float32(math.Inf(-1)))
	}
	return c.pairs(p, n, id, term, func(lo, hi Pair) Pair { return argCombine(k, lo, hi, max) })
}

// argCombine is oracle.ArgMaxOp (max) or ArgMinOp on f32 pairs: hi wins when it is a NaN and
// lo is not; of two NaNs or equal values, when its index is lower; of two numbers, when it is
// larger (smaller).
func argCombine(k *Kernel, lo, hi Pair, max bool) Pair {
	better := hi.Value.Gt(lo.Value)
	if !max {
		better = hi.Value.Lt(lo.Value)
	}
	ln, hn := lo.Value.Ne(lo.Value), hi.Value.Ne(hi.Value)
	lower := hi.Index.Lt(lo.Index)
	take := hn.And(ln.Not()).
		Or(hn.Or(ln).Not().And(better)).
		Or(hi.Value.Eq(lo.Value).Or(hn.And(ln)).And(lower))
	return selectPair(k, take, hi, lo)
}

func selectPair(k *Kernel, cond Value, a, b Pair) Pair {
	return Pair{k.Select(cond, a.Value, b.Value), k.Select(cond, a.Index, b.Index)}
}

// pairVar is a Pair held in two variables.
type pairVar struct{ v, i Var }

func (k *Kernel) pairVar(name string, init Pair) pairVar {
	return pairVar{k.Var(name, init.Value), k.Var(name+"_index", init.Index)}
}

func (pv pairVar) get() Pair  { return Pair{pv.v.Get(), pv.i.Get()} }
func (pv pairVar) set(p Pair) { pv.v.Set(p.Value); pv.i.Set(p.Index) }

// pairs folds each slot of the invocation and combines the slots and the invocations in the
// canonical order; it follows Canon.terms, for pairs.
func (c Canon) pairs(p ir.Pos, n Value, identity Pair, term func(i Value) Pair, combine func(lo, hi Pair) Pair) Pair {
	k := c.k
	poison := func() Pair { return Pair{k.poison(F32, p), k.poison(U32, p)} }
	if k == nil {
		return Pair{}
	}
	if !c.ok {
		return poison()
	}
	if n.k != k || n.Type() != U32 {
		k.errorf(p, "Canon: the term count is %s, want u32", n.Type())
		return poison()
	}
	bad := func(x Pair, what string) bool {
		switch {
		case x.Value.k != k || x.Index.k != k || x.Value.in == nil || x.Index.in == nil:
			k.errorf(p, "Canon: %s is not a pair of this kernel's values", what)
		case x.Index.Type() != U32:
			k.errorf(p, "Canon: %s has a %s index, want u32", what, x.Index.Type())
		case x.Value.Type() != identity.Value.Type():
			k.errorf(p, "Canon: %s has a %s value, the identity %s", what, x.Value.Type(), identity.Value.Type())
		default:
			return false
		}
		return true
	}
	if t := identity.Value.Type(); identity.Value.in != nil && t != F32 && t != I32 && t != U32 {
		k.errorf(p, "Canon: the identity has a %s value, want f32, i32 or u32", t)
		return poison()
	}
	if bad(identity, "the identity") {
		return poison()
	}
	terms := func(i Value) (Pair, bool) {
		t := term(i)
		return t, !bad(t, "a term")
	}
	S := c.Slots()
	if S <= unrolledSlots {
		// One loop over the invocation's terms; each goes to its slot's accumulator.
		accs := make([]pairVar, S)
		for j := range accs {
			accs[j] = k.pairVar("acc", identity)
		}
		c.flat(n, func(j, i Value) {
			t, ok := terms(i)
			if !ok {
				return
			}
			cur := accs[0].get()
			for s := 1; s < S; s++ {
				cur = selectPair(k, j.Eq(uint32(s)), accs[s].get(), cur)
			}
			next := combine(cur, t)
			for s := range accs {
				if S == 1 {
					accs[s].set(next)
				} else {
					accs[s].set(selectPair(k, j.Eq(uint32(s)), next, accs[s].get()))
				}
			}
		})
		slots := make([]Pair, S)
		for j := range slots {
			slots[j] = accs[j].get()
		}
		if c.layout == Blocked {
			return c.crossPairs(tree(slots, combine), combine)
		}
		for j := range slots {
			slots[j] = c.crossPairs(slots[j], combine)
		}
		return tree(slots, combine)
	}
	// The slots in a loop, their pairwise tree in index order kept as a stack (see
	// Canon.terms): stack[l] holds the finished subtree of 2^l slots waiting for its right
	// neighbour; the last slot carries the whole tree.
	levels := 0
	for 1<<levels < S {
		levels++
	}
	stack := make([]pairVar, levels)
	for l := range stack {
		stack[l] = k.pairVar("subtree", identity)
	}
	total := k.pairVar("slots", identity)
	k.For("slot", uint32(0), uint32(S), uint32(1), func(j Value) {
		acc := k.pairVar("acc", identity)
		c.slot(j, n, func(i Value) {
			if t, ok := terms(i); ok {
				acc.set(combine(acc.get(), t))
			}
		})
		v := acc.get()
		if c.layout == Strided {
			v = c.crossPairs(v, combine) // strides below T first, slot by slot
		}
		carry := k.pairVar("carry", v)
		var push func(l int)
		push = func(l int) {
			if l == levels {
				total.set(carry.get())
				return
			}
			k.If(j.Shr(uint32(l)).And(1).Eq(0), func() {
				stack[l].set(carry.get())
			}).Else(func() {
				carry.set(combine(stack[l].get(), carry.get()))
				push(l + 1)
			})
		}
		push(0)
	})
	out := total.get()
	if c.layout == Blocked {
		out = c.crossPairs(out, combine) // strides from S up cross invocations
	}
	return out
}

// tree combines pairs in index order: the strides 1, 2, ... of the butterfly restricted to them.
func tree(vals []Pair, combine func(lo, hi Pair) Pair) Pair {
	for len(vals) > 1 {
		next := make([]Pair, len(vals)/2)
		for i := range next {
			next[i] = combine(vals[2*i], vals[2*i+1])
		}
		vals = next
	}
	return vals[0]
}

// crossPairs is the xor-butterfly over the workgroup's T invocations (by local index), strides
// 1, 2, ..., T/2, through two shared arrays of T elements: at each stride every invocation publishes its pair,
// waits, reads its partner's and waits, then takes combine(lower invocation's, higher's).
func (c Canon) crossPairs(x Pair, combine func(lo, hi Pair) Pair) Pair {
	k := c.k
	T := c.t
	if T == 1 {
		return x
	}
	// One pair of arrays per value type serves every such reduction of the kernel: each round
	// ends with a barrier after the reads, so the next use finds them free.
	arrays, ok := k.pairScratch[x.Value.Type()]
	if !ok {
		id := len(k.k.Shared)
		arrays = [2]Array{
			k.Shared(fmt.Sprintf("pairs%d_value", id), x.Value.Type(), T),
			k.Shared(fmt.Sprintf("pairs%d_index", id), U32, T),
		}
		if k.pairScratch == nil {
			k.pairScratch = map[Type][2]Array{}
		}
		k.pairScratch[x.Value.Type()] = arrays
	}
	values, indices := arrays[0], arrays[1]
	lane := k.LocalIndex()
	cur := k.pairVar("cross", x)
	for s := 1; s < T; s *= 2 {
		values.Store(lane, cur.v.Get())
		indices.Store(lane, cur.i.Get())
		k.Barrier()
		partner := lane.Xor(uint32(s))
		other := Pair{values.Load(partner), indices.Load(partner)}
		k.Barrier()
		mine := cur.get()
		low := lane.And(uint32(s)).Eq(0)
		cur.set(combine(selectPair(k, low, mine, other), selectPair(k, low, other, mine)))
	}
	return cur.get()
}
