package dsl

import (
	"math"

	"github.com/onesource-go/onesource/ir"
)

// Collective names the operation of a subgroup reduction or scan.
type Collective uint8

// The collective operations. OpSum, OpMax and OpMin take f32, i32 or u32 values; OpAnd, OpOr and
// OpXor take i32 or u32 values.
const (
	OpSum Collective = iota
	OpMax
	OpMin
	OpAnd
	OpOr
	OpXor
)

var collectiveNames = [...]string{"OpSum", "OpMax", "OpMin", "OpAnd", "OpOr", "OpXor"}

// String names the Collective as messages show it.
func (c Collective) String() string {
	if int(c) < len(collectiveNames) {
		return collectiveNames[c]
	}
	return "Collective(?)"
}

// Subgroup is the subgroup seen as clusters of W consecutive lanes (W a power of two from 1 to
// 32): lanes 0..W-1 form the first cluster, W..2W-1 the next, and so on. Every collective of a
// Subgroup works within each cluster and in one canonical order fixed by W, the exact xor
// butterfly over shuffles, so its result bits do not depend on the device's subgroup size:
//
//   - Reduce combines the cluster's values as a pairwise tree in lane order: level 1 combines
//     lanes (0,1), (2,3), ...; level 2 combines those results pairwise; and so on. Every lane of
//     the cluster gets the total.
//   - InclusiveScan gives lane j the combination of lanes 0..j, built by the butterfly: at stride
//     s = 1, 2, 4, ... each lane whose bit s is set prepends the total of the s lanes below its
//     block of s (prefix = op(lowerTotal, prefix)), and each block's total becomes
//     op(lowerTotal, upperTotal). ExclusiveScan gives lane j the inclusive result of lane j-1 and
//     lane 0 the identity (0 for OpSum, -Inf or the smallest integer for OpMax, +Inf or the largest
//     integer for OpMin, all ones for OpAnd, 0 for OpOr and OpXor).
//   - Every combination is one IR operation (a rounded f32 add for OpSum, never contracted); OpMax
//     and OpMin of floats take their left operand from the lower lane (Value.Max's NaN rule).
//
// The device's subgroups must hold at least W lanes: lowering for a target whose subgroup size
// is known and smaller is an error naming the call's line (lavapipe has 8 lanes, NVIDIA 32, AMD
// 32 or 64, Apple 32). Every lane of the device's subgroup must reach a collective together
// (CUDA's shuffles synchronize the whole warp, whatever W is): call collectives in control flow
// that is uniform across the workgroup, or at least across the hardware subgroup, and select
// the values of lanes that have nothing to contribute instead of branching around the call.
//
// Subgroup's package oracle twins (SubgroupReduce, SubgroupInclusiveScan, ...) perform the same
// operations in the same order, so kernels using them are checked bit for bit.
type Subgroup struct {
	k *Kernel
	w int
}

// Subgroup returns the subgroup view with clusters of width lanes.
func (k *Kernel) Subgroup(width int) Subgroup {
	p := callerPos()
	if k == nil {
		misuse(p, "Subgroup(%d) on a nil *dsl.Kernel", width)
		return Subgroup{}
	}
	if width < 1 || width > 32 || width&(width-1) != 0 {
		k.errorf(p, "Subgroup(%d): the cluster width must be a power of two from 1 to 32", width)
		return Subgroup{k: k, w: 1}
	}
	return Subgroup{k: k, w: width}
}

// Width returns the cluster width W.
func (s Subgroup) Width() int { return s.w }

// Lane returns this invocation's lane within its cluster, 0..W-1 (u32).
func (s Subgroup) Lane() Value {
	if s.k == nil {
		return Value{}
	}
	return s.k.LaneID().And(uint32(s.w - 1))
}

// base returns the subgroup lane of this cluster's lane 0.
func (s Subgroup) base() Value {
	return s.k.LaneID().And(^uint32(s.w - 1))
}

func (s Subgroup) check(op string, c Collective, v Value) bool {
	p := callerPos()
	if s.k == nil {
		misuse(p, "%s on a zero dsl.Subgroup (use Kernel.Subgroup)", op)
		return false
	}
	if !v.ok(op) {
		return false
	}
	t := v.Type()
	if t.Lanes != 1 || !(t == F32 || t == I32 || t == U32) {
		s.k.errorf(p, "%s: takes an f32, i32 or u32 scalar, got %s", op, t)
		return false
	}
	if c > OpXor {
		s.k.errorf(p, "%s: unknown collective %d", op, c)
		return false
	}
	if c >= OpAnd && t == F32 {
		s.k.errorf(p, "%s: %s takes i32 or u32 values, got f32", op, c)
		return false
	}
	return true
}

// combine returns op(lo, hi) for the pair of lanes at stride st, where self is this lane's
// value and other its partner's: lo is the value of the lane whose bit st is clear.
func (s Subgroup) combine(c Collective, self, other Value, st int) Value {
	commutative := c != OpMax && c != OpMin || self.Type() != F32
	if commutative {
		return apply(c, self, other)
	}
	low := s.k.LaneID().And(uint32(st)).Eq(uint32(0))
	lo := s.k.Select(low, self, other)
	hi := s.k.Select(low, other, self)
	return apply(c, lo, hi)
}

func apply(c Collective, a, b Value) Value {
	switch c {
	case OpSum:
		return a.Add(b)
	case OpMax:
		return a.Max(b)
	case OpMin:
		return a.Min(b)
	case OpAnd:
		return a.And(b)
	case OpOr:
		return a.Or(b)
	}
	return a.Xor(b)
}

// identity returns the identity of c for type t (see the Subgroup doc).
func (s Subgroup) identity(c Collective, t Type) Value {
	k := s.k
	switch {
	case c == OpSum || c == OpOr || c == OpXor:
		return k.Const(t, 0)
	case c == OpAnd && t == I32:
		return k.I32(-1)
	case c == OpAnd:
		return k.U32(math.MaxUint32)
	case t == F32 && c == OpMax:
		return k.F32(float32(math.Inf(-1)))
	case t == F32:
		return k.F32(float32(math.Inf(1)))
	case t == I32 && c == OpMax:
		return k.I32(math.MinInt32)
	case t == I32:
		return k.I32(math.MaxInt32)
	case c == OpMax:
		return k.U32(0)
	}
	return k.U32(math.MaxUint32)
}

// Reduce returns the combination of v over the invocation's cluster, in the canonical tree order
// (see Subgroup). Every lane of the cluster gets the same bits.
func (s Subgroup) Reduce(c Collective, v Value) Value {
	if !s.check("Subgroup.Reduce", c, v) {
		return s.poison(v)
	}
	for st := 1; st < s.w; st *= 2 {
		v = s.combine(c, v, v.ShuffleXor(uint32(st)), st)
	}
	return v
}

// Sum is Reduce(OpSum, v).
func (s Subgroup) Sum(v Value) Value { return s.Reduce(OpSum, v) }

// Max is Reduce(OpMax, v).
func (s Subgroup) Max(v Value) Value { return s.Reduce(OpMax, v) }

// Min is Reduce(OpMin, v).
func (s Subgroup) Min(v Value) Value { return s.Reduce(OpMin, v) }

// InclusiveScan returns the combination of v over lanes 0..j of the cluster at lane j, in the
// butterfly order of the Subgroup doc.
func (s Subgroup) InclusiveScan(c Collective, v Value) Value {
	if !s.check("Subgroup.InclusiveScan", c, v) {
		return s.poison(v)
	}
	return s.inclusive(c, v)
}

func (s Subgroup) inclusive(c Collective, v Value) Value {
	k := s.k
	total, prefix := v, v
	for st := 1; st < s.w; st *= 2 {
		other := total.ShuffleXor(uint32(st))
		upper := k.LaneID().And(uint32(st)).Ne(uint32(0))
		prefix = k.Select(upper, apply(c, other, prefix), prefix)
		total = s.combine(c, total, other, st)
	}
	return prefix
}

// ExclusiveScan returns the inclusive scan of the lane below (lane 0: the identity of c).
func (s Subgroup) ExclusiveScan(c Collective, v Value) Value {
	if !s.check("Subgroup.ExclusiveScan", c, v) {
		return s.poison(v)
	}
	k := s.k
	incl := s.inclusive(c, v)
	if s.w == 1 {
		return s.identity(c, v.Type())
	}
	lane := k.LaneID()
	first := s.Lane().Eq(uint32(0))
	src := k.Select(first, lane, lane.Sub(uint32(1)))
	return k.Select(first, s.identity(c, v.Type()), incl.Shuffle(src))
}

// InclusiveSum is InclusiveScan(OpSum, v).
func (s Subgroup) InclusiveSum(v Value) Value { return s.InclusiveScan(OpSum, v) }

// ExclusiveSum is ExclusiveScan(OpSum, v).
func (s Subgroup) ExclusiveSum(v Value) Value { return s.ExclusiveScan(OpSum, v) }

// Ballot returns a u32 whose bit j is set when cond is true at lane j of the cluster.
func (s Subgroup) Ballot(cond Value) Value {
	p := callerPos()
	if s.k == nil {
		misuse(p, "Subgroup.Ballot on a zero dsl.Subgroup (use Kernel.Subgroup)")
		return Value{}
	}
	if !cond.ok("Subgroup.Ballot") {
		return Value{}
	}
	if cond.Type() != Bool {
		s.k.errorf(p, "Subgroup.Ballot: takes a bool, got %s", cond.Type())
		return s.k.poison(U32, p)
	}
	bit := s.k.Select(cond, s.k.U32(1).Shl(s.Lane()), uint32(0))
	return s.Reduce(OpOr, bit)
}

// Any reports whether cond is true at some lane of the cluster (the same at every lane).
func (s Subgroup) Any(cond Value) Value {
	b := s.Ballot(cond)
	if s.k == nil || b.in == nil {
		return b
	}
	return b.Ne(uint32(0))
}

// All reports whether cond is true at every lane of the cluster (the same at every lane).
func (s Subgroup) All(cond Value) Value {
	b := s.Ballot(cond)
	if s.k == nil || b.in == nil {
		return b
	}
	return b.Eq(uint32(uint64(1)<<s.w - 1))
}

// Broadcast returns v's value at lane src (u32, taken modulo W) of this invocation's cluster.
func (s Subgroup) Broadcast(v Value, src any) Value {
	p := callerPos()
	if s.k == nil {
		misuse(p, "Subgroup.Broadcast on a zero dsl.Subgroup (use Kernel.Subgroup)")
		return Value{}
	}
	l, ok := s.k.operand("Subgroup.Broadcast", U32, src, p)
	if !ok || !v.ok("Subgroup.Broadcast") {
		return s.poison(v)
	}
	return v.Shuffle(s.base().Or(l.And(uint32(s.w - 1))))
}

func (s Subgroup) poison(v Value) Value {
	if s.k == nil || v.in == nil {
		return Value{}
	}
	return s.k.poison(v.Type(), callerPos())
}

// NativeSum is the device's own sum over the cluster (subgroupAdd, a warp reduce): a declared
// inexact fast path. Where the target runs a reduction over exactly W lanes natively (a Vulkan
// device with subgroup arithmetic whose pipeline subgroup is W lanes), the device chooses the
// order of the f32 additions, so the bits may differ from Sum's; everywhere else it is lowered
// to Sum's canonical butterfly and gives Sum's bits. Integer sums are exact either way. Report
// f32 results that use it as inexact (kernels.Tolerance), never as bit-exact.
func (s Subgroup) NativeSum(v Value) Value { return s.native("Subgroup.NativeSum", ir.ReduceSum, v) }

// NativeMax is the device's own maximum over the cluster (see NativeSum). The maximum of
// non-NaN values does not depend on the order; with NaNs the device's rule applies.
func (s Subgroup) NativeMax(v Value) Value { return s.native("Subgroup.NativeMax", ir.ReduceMax, v) }

func (s Subgroup) native(name string, op ir.ReduceOp, v Value) Value {
	c := OpSum
	if op == ir.ReduceMax {
		c = OpMax
	}
	if !s.check(name, c, v) {
		return s.poison(v)
	}
	return s.k.emit(&ir.Inst{Op: ir.OpSubgroupReduce, Type: v.Type(), Args: []*ir.Inst{v.in}, Aux: uint64(op), Ref: s.w, Pos: callerPos()})
}
