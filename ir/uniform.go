package ir

// Uniformity: a barrier (or a workgroup reduction, which contains barriers) must be reached by
// every invocation of the workgroup or by none. The analysis below finds the cases that can be
// seen statically: a barrier under a condition that depends on the invocation (its ids, a lane's
// shuffle, an atomic's result, a variable assigned such a value), or after a return or a loop
// exit taken by some invocations only. Loads of memory at a uniform index count as uniform.
//
// The analysis walks the kernel in passes until the facts it collects (which values and
// variables differ between invocations) stop growing, then once more to report. A walk carries
// the control cause: nil while control is uniform, else the instruction whose non-uniform value
// decides whether the code runs. Where the cause is nil, a loop whose body leaves it (break,
// continue) under non-uniform control is divergent from its second iteration on, so its whole
// body and continuing block count as under that exit. Finding that exit takes a walk of the
// body with a nil cause; the walk of the body under the exit is deferred to the end of the pass
// (what the uniform walk reported inside the body is dropped), so every pass takes time linear
// in the size of the kernel however deep its loops nest.
//
// Islands (island.go) need less: every invocation of a subgroup, not of the workgroup, must
// reach one together with the same tile indices. A second analysis at subgroup scope runs when
// the kernel has islands: the same walk, with the subgroup's index among the values that do not
// differ (between the invocations of one subgroup), reporting an island under control that
// depends on the invocation or with a tile index that does.

type uniformity struct {
	v       *verifier
	sub     bool           // subgroup scope: SubgroupID is uniform; islands are checked, barriers are not
	nu      map[*Inst]bool // value differs between invocations
	varNU   []bool
	changed bool
	report  bool
	items   []uniItem          // what the current walk reports, in order (see uniItem)
	exits   map[*Block]uniExit // exits of a block walked under non-uniform control
}

// uniItem is a report of a pass, in program order: a barrier, reduction or island reached under
// non-uniform control (at), an island whose operand arg (>= 0) is not uniform (cause), or a loop
// (at) whose blocks are to be walked again under cause.
type uniItem struct {
	at, cause *Inst
	arg       int
}

type uniExit struct{ loop, ret *Inst }

func (v *verifier) uniformity() {
	u := &uniformity{v: v, nu: make(map[*Inst]bool, v.size), varNU: make([]bool, len(v.k.Vars)), exits: map[*Block]uniExit{}}
	// Every pass but the last sets at least one more fact, and facts are only ever added, so
	// this ends; a pass that adds no variable adds nothing after it, so it takes at most
	// len(Vars)+2 passes.
	for {
		u.changed = false
		u.pass()
		if !u.changed {
			break
		}
	}
	u.report = true
	u.pass()
	if !u.sub && v.k.HasIslands() {
		s := &uniformity{v: v, sub: true, nu: make(map[*Inst]bool, v.size), varNU: make([]bool, len(v.k.Vars)), exits: map[*Block]uniExit{}}
		for {
			s.changed = false
			s.pass()
			if !s.changed {
				break
			}
		}
		s.report = true
		s.pass()
	}
}

// pass walks the kernel once, then what it deferred, reporting when u.report is set.
func (u *uniformity) pass() {
	u.items = u.items[:0]
	u.block(u.v.k.Body, nil)
	u.flush(u.items)
}

// flush reports items in order, walking the deferred loops under their causes.
func (u *uniformity) flush(items []uniItem) {
	for _, it := range items {
		if it.at.Op != OpLoop {
			switch {
			case !u.report:
			case it.at.Op == OpIsland && it.arg >= 0:
				u.v.errf(it.at.Pos, "island %s: tile index %d differs between the invocations of a subgroup (%s at %s); every invocation of the subgroup must name the same tiles", DecodeIsland(it.at.Aux).Island, it.arg, it.cause.Op, it.cause.Pos)
			case it.at.Op == OpIsland:
				u.v.errf(it.at.Pos, "island %s is not reached by every invocation of the subgroup together: control depends on the invocation (%s at %s)", DecodeIsland(it.at.Aux).Island, it.cause.Op, it.cause.Pos)
			default:
				u.v.errf(it.at.Pos, "%s is not reached by every invocation of the workgroup: control depends on the invocation (%s at %s)", it.at.Op, it.cause.Op, it.cause.Pos)
			}
			continue
		}
		u.items = nil
		u.block(it.at.Blocks[0], it.cause)
		u.block(it.at.Blocks[1], it.cause)
		// Under a non-nil cause no loop is deferred: these are reports only.
		u.flush(u.items)
	}
}

// block walks b with control uniformity given by cause (nil: uniform; else the instruction whose
// non-uniform value decides whether b runs). It returns the causes of early exits taken under
// non-uniform control: loopExit for break/continue, retExit for return.
func (u *uniformity) block(b *Block, cause *Inst) (loopExit, retExit *Inst) {
	for _, in := range b.Insts {
		switch in.Op {
		case OpBuiltin:
			switch Builtin(in.Aux) {
			case WorkgroupID, NumWorkgroups, SubgroupSize:
			case SubgroupID:
				if !u.sub {
					u.set(in)
				}
			default:
				u.set(in)
			}
		case OpAtomic, OpShuffleXor, OpShuffle, OpSubgroupReduce:
			u.set(in)
		case OpLoad:
			if in.Mem == MemVar {
				if u.varNU[in.Ref] {
					u.set(in)
				}
			} else if u.nu[in.Args[0]] {
				u.set(in)
			}
		case OpStore:
			if in.Mem == MemVar && (cause != nil || u.nu[in.Args[0]]) && !u.varNU[in.Ref] {
				u.varNU[in.Ref] = true
				u.changed = true
			}
		case OpReduce, OpBarrier:
			if cause != nil && !u.sub {
				u.items = append(u.items, uniItem{in, cause, -1})
			}
		case OpIsland:
			if u.sub {
				if cause != nil {
					u.items = append(u.items, uniItem{in, cause, -1})
				} else {
					for i, a := range in.Args {
						if u.nu[a] {
							u.items = append(u.items, uniItem{in, a, i})
							break
						}
					}
				}
			}
			// The portable body computes per invocation: what it stores to variables differs.
			u.block(in.Blocks[0], in)
		case OpBreak, OpContinue:
			if cause != nil {
				return in, retExit
			}
			return loopExit, retExit
		case OpReturn:
			if cause != nil {
				return loopExit, in
			}
			return loopExit, retExit
		case OpIf:
			c := cause
			if c == nil && u.nu[in.Args[0]] {
				c = in
			}
			l1, r1 := u.block(in.Blocks[0], c)
			l2, r2 := u.block(in.Blocks[1], c)
			if l := first(l1, l2); l != nil && loopExit == nil {
				loopExit = l
			}
			if r := first(r1, r2); r != nil && retExit == nil {
				retExit = r
			}
			if cause == nil {
				cause = first(retExit, loopExit)
			}
		case OpLoop:
			var r *Inst
			if cause != nil {
				_, r = u.block(in.Blocks[0], cause)
				u.block(in.Blocks[1], cause)
			} else {
				mark := len(u.items)
				var l *Inst
				l, r = u.block(in.Blocks[0], nil)
				if l == nil {
					u.block(in.Blocks[1], r)
				} else {
					// Some invocations leave or skip ahead: every iteration after the first is
					// divergent. Walk the body and the continuing block under l at the end of the
					// pass, in place of what the uniform walk found there.
					u.items = append(u.items[:mark], uniItem{in, l, -1})
					_, r = u.divergentExits(in.Blocks[0])
				}
			}
			if r != nil && retExit == nil {
				retExit = r
			}
			if cause == nil {
				cause = retExit
			}
		default:
			for _, a := range in.Args {
				if u.nu[a] {
					u.set(in)
					break
				}
			}
		}
	}
	return loopExit, retExit
}

// divergentExits returns what block returns for b walked under a non-nil cause: the first
// break or continue and the first return that leave b, which depend on its structure only.
func (u *uniformity) divergentExits(b *Block) (loopExit, retExit *Inst) {
	if e, ok := u.exits[b]; ok {
		return e.loop, e.ret
	}
	loopExit, retExit = u.divergentWalk(b)
	u.exits[b] = uniExit{loopExit, retExit}
	return loopExit, retExit
}

func (u *uniformity) divergentWalk(b *Block) (loopExit, retExit *Inst) {
	for _, in := range b.Insts {
		switch in.Op {
		case OpBreak, OpContinue:
			return in, retExit
		case OpReturn:
			return loopExit, in
		case OpIf:
			l1, r1 := u.divergentExits(in.Blocks[0])
			l2, r2 := u.divergentExits(in.Blocks[1])
			if l := first(l1, l2); l != nil && loopExit == nil {
				loopExit = l
			}
			if r := first(r1, r2); r != nil && retExit == nil {
				retExit = r
			}
		case OpLoop:
			if _, r := u.divergentExits(in.Blocks[0]); r != nil && retExit == nil {
				retExit = r
			}
		}
	}
	return loopExit, retExit
}

func (u *uniformity) set(in *Inst) {
	if !u.nu[in] {
		u.nu[in] = true
		u.changed = true
	}
}

func first(a, b *Inst) *Inst {
	if a != nil {
		return a
	}
	return b
}
