package native

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// Memory: buffer and shared-array loads, stores and atomics through the prelude's bounds-checked
// helpers (a lane's access runs only where the mask m is set), and the invocations' variables.

func (e *emitter) addSite(in *ir.Inst) int {
	s := site{pos: in.Pos, op: in.Op.String()}
	if in.Mem == ir.MemShared {
		s.array, s.shared = e.k.Shared[in.Ref].Name, true
	} else {
		s.array = e.k.Buffers[in.Ref].Name
	}
	e.sites = append(e.sites, s)
	return len(e.sites) - 1
}

// wordAs turns a 32-bit word (scalar or vector) into a value of kind k.
func wordAs(k, w string, uni bool) string {
	switch {
	case k == "f32" && uni:
		return fmt.Sprintf("os_f32(%s)", w)
	case k == "f32":
		return fmt.Sprintf("(os_f32v)%s", w)
	case k == "i32":
		return fmt.Sprintf("(%s)%s", ktype("i32", uni), w)
	}
	return w
}

// asWord is a 32-bit value of kind k as its word.
func asWord(k, x string, uni bool) string {
	switch {
	case k == "f32" && uni:
		return fmt.Sprintf("os_bits32(%s)", x)
	case uni:
		return fmt.Sprintf("(uint32_t)%s", x)
	}
	return fmt.Sprintf("(os_u32v)%s", x)
}

func (e *emitter) mem(in *ir.Inst, m string) {
	if in.Mem == ir.MemVar {
		e.varAccess(in, m)
		return
	}
	el := e.elem(in)
	st := e.addSite(in)
	buf := fmt.Sprintf("b%d", in.Ref)
	shared := in.Mem == ir.MemShared
	if shared {
		buf = fmt.Sprintf("s%d", in.Ref)
	}
	idx := e.get(in.Args[0])
	sgn := 0
	if idx.t.Scalar == ir.I32 {
		sgn = 1
	}
	stride, width, sext := el.Stride(), el.Scalar.Bits(), 0
	if el.Scalar.IsSigned() && width < 32 {
		sext = 1
	}
	comps := max(1, int(el.Lanes))
	vk := kindOf(el.Scalar.Widened())
	atomicWord := !shared && e.atomic[in.Ref] && in.Op != ir.OpAtomic
	ix := asWord(kindOf(idx.t.Scalar), idx.comps[0], idx.uni)
	ixv := func() string { return asWord(kindOf(idx.t.Scalar), e.opnd(idx, 0, false), false) }
	switch in.Op {
	case ir.OpLoad:
		uni := e.uni[in]
		if uni && !idx.uni {
			e.errAt(in.Pos, "internal: a uniform load at a varying index")
			return
		}
		key := loadKey{in.Mem, in.Ref, in.Args[0]}
		if !atomicWord {
			if v := e.cachedLoad(key); v != nil && v.uni == uni && e.uses[in] > 0 {
				e.vals[in] = v
				if e.NC > 1 && e.cross[in] {
					e.define(in, uni, v.comps) // kept in the frame under its own name
				}
				return
			}
		}
		exprs := make([]string, comps)
		for c := range exprs {
			var w string
			switch {
			case !uni && !atomicWord && comps == 1 && width == 32 && e.stride(in.Args[0]) == 1:
				w = fmt.Sprintf("os_ld_c(X, %du, %s, %s, %d, %s)", st, buf, ixv(), sgn, m)
			case atomicWord && uni:
				w = fmt.Sprintf("os_lda_u(X, %du, %s, %s, %d, %s)", st, buf, ix, sgn, m)
			case atomicWord:
				w = fmt.Sprintf("os_lda_v(X, %du, %s, %s, %d, %s)", st, buf, ixv(), sgn, m)
			case uni:
				w = fmt.Sprintf("os_ld_u(X, %du, %s, %s, %d, %s, %du, %du, %d, %d)", st, buf, ix, sgn, m, stride, c, width, sext)
			default:
				w = fmt.Sprintf("os_ld_v(X, %du, %s, %s, %d, %s, %du, %du, %d, %d)", st, buf, ixv(), sgn, m, stride, c, width, sext)
			}
			exprs[c] = wordAs(vk, w, uni)
		}
		e.define(in, uni, exprs)
		if v := e.vals[in]; v != nil && !atomicWord && len(e.loads) > 0 {
			e.loads[len(e.loads)-1][key] = v
		}
	case ir.OpStore:
		e.forgetLoads()
		val := e.get(in.Args[1])
		k := kindOf(val.t.Scalar)
		for c := 0; c < comps; c++ {
			switch {
			case !atomicWord && comps == 1 && width == 32 && !idx.uni && e.stride(in.Args[0]) == 1:
				e.line("os_st_c(X, %du, %s, %s, %d, %s, %s);", st, buf, ixv(), sgn, m, asWord(k, e.opnd(val, c, false), false))
			case atomicWord:
				e.line("os_sta_v(X, %du, %s, %s, %d, %s, %s);", st, buf, ixv(), sgn, m, asWord(k, e.opnd(val, c, false), false))
			case idx.uni && val.uni:
				e.line("os_st_u(X, %du, %s, %s, %d, %s, %du, %du, %d, %s);", st, buf, ix, sgn, m, stride, c, width, asWord(k, val.comps[c], true))
			default:
				e.line("os_st_v(X, %du, %s, %s, %d, %s, %du, %du, %d, %s);", st, buf, ixv(), sgn, m, stride, c, width, asWord(k, e.opnd(val, c, false), false))
			}
		}
	case ir.OpAtomic:
		e.forgetLoads()
		val := e.get(in.Args[len(in.Args)-1])
		cmp := val
		if ir.AtomicOp(in.Aux) == ir.AtomicCmpXchg {
			cmp = e.get(in.Args[1])
		}
		kind := 0
		switch el.Scalar {
		case ir.I32:
			kind = 1
		case ir.F32:
			kind = 2
		}
		k := kindOf(val.t.Scalar)
		sh := 0
		if shared {
			sh = 1
		}
		x := fmt.Sprintf("os_atomic_v(X, %du, %s, %s, %d, %s, %d, %d, %d, %s, %s)", st, buf, ixv(), sgn, m, in.Aux, kind, sh,
			asWord(k, e.opnd(val, 0, false), false), asWord(kindOf(cmp.t.Scalar), e.opnd(cmp, 0, false), false))
		if e.uses[in] == 0 {
			e.line("(void)%s;", x)
			return
		}
		if e.uni[in] { // a workgroup of one invocation: every value is uniform
			e.define(in, true, []string{wordAs(vk, x+"[0]", true)})
			return
		}
		e.define(in, false, []string{wordAs(vk, x, false)})
	}
}

// varAccess is a load or store of an invocation's variable: the variable's C name (a uniform one
// is a scalar every invocation shares); a store to a varying variable keeps the value of the lanes
// not running it.
func (e *emitter) varAccess(in *ir.Inst, m string) {
	v := e.k.Vars[in.Ref]
	uni := e.varUni[in.Ref]
	n := max(1, int(v.Type.Lanes))
	if in.Op == ir.OpLoad {
		exprs := make([]string, n)
		for c := range exprs {
			exprs[c] = varName(in.Ref, c)
		}
		e.define(in, uni, exprs)
		return
	}
	val := e.get(in.Args[0])
	k := kindOf(v.Type.Scalar)
	for c := 0; c < n; c++ {
		name := varName(in.Ref, c)
		if uni {
			if !val.uni {
				e.errAt(in.Pos, "internal: a varying value stored to uniform variable %s", v.Name)
				return
			}
			e.line("%s = %s;", name, val.comps[min(c, len(val.comps)-1)])
			continue
		}
		e.line("%s = %s(%s, %s, %s);", name, selName(k), m, e.opnd(val, c, false), name)
	}
}
