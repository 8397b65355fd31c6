package dsl

import "github.com/onesource-go/onesource/ir"

// Else attaches an else branch to the If that returned it.
type Else struct {
	k  *Kernel
	in *ir.Inst
}

// If runs then when cond (a bool) is true.
func (k *Kernel) If(cond Value, then func()) Else {
	if k == nil {
		return Else{}
	}
	p := callerPos()
	if cond.k != k || cond.Type() != Bool {
		k.errorf(p, "If: condition is %s, want bool", cond.Type())
		cond = k.poison(Bool, p)
	}
	in := &ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{cond.in}, Blocks: []*ir.Block{{}, {}}, Pos: p}
	k.emit(in)
	k.nested(in.Blocks[0], then)
	return Else{k: k, in: in}
}

// Else runs f when the If's condition is false. It must directly follow the If.
func (e Else) Else(f func()) {
	if e.k == nil {
		return
	}
	p := callerPos()
	if len(e.in.Blocks[1].Insts) > 0 {
		e.k.errorf(p, "Else: this If already has an else branch")
		return
	}
	if n := len(e.k.cur.Insts); n == 0 || e.k.cur.Insts[n-1] != e.in {
		e.k.errorf(p, "Else: must directly follow its If (at %s)", e.in.Pos)
		return
	}
	e.k.nested(e.in.Blocks[1], f)
}

// ElseIf runs f when the If's condition is false and cond is true; it returns the new If's Else.
func (e Else) ElseIf(cond Value, f func()) Else {
	var inner Else
	e.Else(func() { inner = e.k.If(cond, f) })
	return inner
}

// Loop runs body until it calls Break (or Return).
func (k *Kernel) Loop(body func()) {
	if k == nil {
		return
	}
	k.loop(callerPos(), body, nil)
}

func (k *Kernel) loop(p ir.Pos, body, continuing func()) {
	in := &ir.Inst{Op: ir.OpLoop, Type: ir.TVoid, Blocks: []*ir.Block{{}, {}}, Pos: p}
	k.emit(in)
	k.loops++
	k.nested(in.Blocks[0], body)
	k.loops--
	k.inCont++
	k.nested(in.Blocks[1], continuing)
	k.inCont--
}

// While runs body as long as cond() returns true; cond is evaluated before every iteration.
func (k *Kernel) While(cond func() Value, body func()) {
	if k == nil {
		return
	}
	p := callerPos()
	if cond == nil {
		k.errorf(p, "While: nil condition")
		return
	}
	k.loop(p, func() {
		c := cond()
		if c.k != k || c.Type() != Bool {
			k.errorf(p, "While: condition is %s, want bool", c.Type())
			return
		}
		k.If(c.Not(), func() { k.Break() })
		if body != nil {
			body()
		}
	}, nil)
}

// For runs body(i) for i = start; i < end; i += step, where start, end and step are i32 or u32
// values or Go integers (the type is start's; a Go integer start is u32 unless another operand is
// an i32 Value). Continue goes to the increment.
func (k *Kernel) For(name string, start, end, step any, body func(i Value)) {
	if k == nil {
		return
	}
	p := callerPos()
	t := U32
	for _, x := range []any{start, end, step} {
		if v, ok := x.(Value); ok && v.k == k {
			t = v.Type()
			break
		}
	}
	if t != U32 && t != I32 {
		k.errorf(p, "For: counter type %s, want i32 or u32", t)
		return
	}
	s, ok1 := k.operand("For", t, start, p)
	e, ok2 := k.operand("For", t, end, p)
	st, ok3 := k.operand("For", t, step, p)
	if !ok1 || !ok2 || !ok3 {
		return
	}
	if s.Type() != t || e.Type() != t || st.Type() != t {
		k.errorf(p, "For: start, end and step are %s, %s, %s; want one integer type", s.Type(), e.Type(), st.Type())
		return
	}
	i := k.Var(name, s)
	k.loop(p, func() {
		cur := i.Get()
		k.If(cur.Ge(e), func() { k.Break() })
		if body != nil {
			body(cur.Named(name))
		}
	}, func() {
		i.Set(i.Get().Add(st))
	})
}

// Break leaves the innermost loop.
func (k *Kernel) Break() {
	if k == nil {
		return
	}
	k.jump(ir.OpBreak)
}

// Continue goes to the next iteration of the innermost loop.
func (k *Kernel) Continue() {
	if k == nil {
		return
	}
	k.jump(ir.OpContinue)
}

func (k *Kernel) jump(op ir.Op) {
	p := callerPos()
	if k.loops == 0 || k.inCont > 0 {
		k.errorf(p, "%s outside a loop body", opName(op))
		return
	}
	k.emit(&ir.Inst{Op: op, Type: ir.TVoid, Pos: p})
}

// Return ends this invocation. Invocations that return no longer take part in barriers and
// reductions: a barrier after a Return under invocation-dependent control is an error.
func (k *Kernel) Return() {
	if k == nil {
		return
	}
	k.emit(&ir.Inst{Op: ir.OpReturn, Type: ir.TVoid, Pos: callerPos()})
}

// Barrier waits until every invocation of the workgroup reaches it and makes their shared and
// buffer writes visible to each other.
func (k *Kernel) Barrier() {
	if k == nil {
		return
	}
	k.emit(&ir.Inst{Op: ir.OpBarrier, Type: ir.TVoid, Pos: callerPos()})
}
