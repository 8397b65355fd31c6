package ir

import "errors"

// The uniformity analysis as it was before it was made linear (it walks every loop body twice
// per nesting level, so it takes time exponential in the loop depth): the reference the
// differential test compares the linear analysis with.

// refVerify is Verify with the reference uniformity analysis.
func refVerify(k *Kernel) error {
	v := &verifier{k: k, defined: map[*Inst]bool{}}
	v.kernelRef()
	return errors.Join(v.errs...)
}

// kernelRef is verifier.kernel for the body checks only: the differential test's kernels have
// valid resources.
func (v *verifier) kernelRef() {
	v.block(v.k.Body)
	if len(v.errs) == 0 {
		v.refUniformity()
	}
}

type refUniformity struct {
	v       *verifier
	nu      map[*Inst]bool // value differs between invocations
	varNU   []bool
	changed bool
	report  bool
}

func (v *verifier) refUniformity() {
	u := &refUniformity{v: v, nu: map[*Inst]bool{}, varNU: make([]bool, len(v.k.Vars))}
	for i := 0; i < 100; i++ {
		u.changed = false
		u.block(v.k.Body, nil)
		if !u.changed {
			break
		}
	}
	u.report = true
	u.block(v.k.Body, nil)
}

// block walks b with control uniformity given by cause (nil: uniform; else the instruction whose
// non-uniform value decides whether b runs). It returns the causes of early exits taken under
// non-uniform control: loopExit for break/continue, retExit for return.
func (u *refUniformity) block(b *Block, cause *Inst) (loopExit, retExit *Inst) {
	for _, in := range b.Insts {
		switch in.Op {
		case OpBuiltin:
			switch Builtin(in.Aux) {
			case WorkgroupID, NumWorkgroups, SubgroupSize:
			default:
				u.set(in)
			}
		case OpAtomic, OpShuffleXor:
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
			if cause != nil && u.report {
				u.v.errf(in.Pos, "%s is not reached by every invocation of the workgroup: control depends on the invocation (%s at %s)", in.Op, cause.Op, cause.Pos)
			}
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
			body := cause
			saved := u.report
			u.report = false
			l, _ := u.block(in.Blocks[0], body)
			u.report = saved
			if l != nil && body == nil {
				// Some invocations leave or skip ahead: every iteration after the first is divergent.
				body = l
			}
			_, r := u.block(in.Blocks[0], body)
			u.block(in.Blocks[1], first(body, r))
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

func (u *refUniformity) set(in *Inst) {
	if !u.nu[in] {
		u.nu[in] = true
		u.changed = true
	}
}
