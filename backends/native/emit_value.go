package native

import (
	"fmt"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// Values: kinds, names, literals and the element-wise operations, as C scalars (uniform values)
// or lane vectors.

// kindOf is the emitter's kind of a value scalar ("" for the kinds package lower legalizes away):
// b (bool: an int 0 or 1, a mask of -1/0 lanes as a vector), i32, u32, h (f16 bits in the low
// half of a 32-bit lane), f32, f64.
func kindOf(s ir.Scalar) string {
	switch s {
	case ir.Bool:
		return "b"
	case ir.I32:
		return "i32"
	case ir.U32:
		return "u32"
	case ir.F16:
		return "h"
	case ir.F32:
		return "f32"
	case ir.F64:
		return "f64"
	}
	return ""
}

// ctype is the C type of a value of scalar s: a scalar when uniform, else a lane vector.
func ctype(s ir.Scalar, uni bool) string {
	return ktype(kindOf(s), uni)
}

func ktype(k string, uni bool) string {
	if uni {
		switch k {
		case "b":
			return "int"
		case "i32":
			return "int32_t"
		case "f32":
			return "float"
		case "f64":
			return "double"
		}
		return "uint32_t"
	}
	switch k {
	case "b":
		return "os_m"
	case "i32":
		return "os_i32v"
	case "f32":
		return "os_f32v"
	case "f64":
		return "os_f64v"
	}
	return "os_u32v"
}

// zero is the zero value of scalar s (all bits clear).
func zero(s ir.Scalar, uni bool) string {
	return splat(kindOf(s), "0", uni)
}

// splat is the scalar x of kind k as a value: itself when uni, else every lane of a vector.
func splat(k, x string, uni bool) string {
	if uni {
		return x
	}
	switch k {
	case "b":
		return "os_mask(" + x + ")"
	case "i32":
		return "os_splat_i32(" + x + ")"
	case "f32":
		return "os_splat_f32(" + x + ")"
	case "f64":
		return "os_splat_f64(" + x + ")"
	}
	return "os_splat_u32(" + x + ")"
}

// literal is a constant of scalar kind s with the bit pattern bits.
func literal(s ir.Scalar, bits uint64) string {
	switch s {
	case ir.Bool:
		if bits != 0 {
			return "1"
		}
		return "0"
	case ir.I32:
		return fmt.Sprintf("(int32_t)%du", uint32(bits))
	case ir.F16:
		return fmt.Sprintf("0x%04xu", uint32(bits)&0xffff)
	case ir.F32:
		return fmt.Sprintf("os_f32(0x%08xu)", uint32(bits))
	case ir.F64:
		return fmt.Sprintf("os_f64(0x%016xull)", bits)
	}
	return fmt.Sprintf("%du", uint32(bits))
}

// isStatic reports whether in's value is known before any region runs: a constant (written in
// place), a parameter, a buffer length, a uniform builtin.
func (e *emitter) isStatic(in *ir.Inst) bool {
	switch in.Op {
	case ir.OpConst, ir.OpParam, ir.OpLen:
		return true
	case ir.OpBuiltin:
		return e.uni[in]
	}
	return false
}

func (e *emitter) static(in *ir.Inst) *cval {
	v := &cval{uni: true, t: in.Type, comps: make([]string, max(1, int(in.Type.Lanes)))}
	var x string
	switch in.Op {
	case ir.OpConst:
		x = literal(in.Type.Scalar, in.Aux)
	case ir.OpParam:
		x = fmt.Sprintf("p%d", in.Ref)
	case ir.OpLen:
		x = fmt.Sprintf("((uint32_t)b%d.n)", in.Ref)
	case ir.OpBuiltin:
		d := in.Ref
		switch ir.Builtin(in.Aux) {
		case ir.WorkgroupID, ir.GlobalID:
			x = fmt.Sprintf("wg%d", d)
		case ir.NumWorkgroups:
			x = fmt.Sprintf("((uint32_t)X->a[%d])", 2+d)
		case ir.SubgroupSize:
			x = fmt.Sprintf("%du", VL)
		default: // local ids of a dimension of size 1, the subgroup id of one subgroup, one invocation
			x = "0u"
		}
	}
	for i := range v.comps {
		v.comps[i] = x
	}
	return v
}

// get returns how operand a reads here: its name in its own region, its frame copy elsewhere.
func (e *emitter) get(a *ir.Inst) *cval {
	if e.isStatic(a) {
		if v, ok := e.vals[a]; ok {
			return v
		}
		v := e.static(a)
		e.vals[a] = v
		return v
	}
	v, ok := e.vals[a]
	if !ok {
		e.errAt(a.Pos, "internal: %s value used before it is emitted", a.Op)
		return &cval{uni: true, t: a.Type, comps: make([]string, max(1, int(a.Type.Lanes)))}
	}
	if e.NC > 1 && e.cross[a] && e.region[a] != e.curRegion {
		f := &cval{uni: v.uni, t: v.t, comps: make([]string, len(v.comps))}
		for i := range v.comps {
			if v.uni {
				f.comps[i] = fmt.Sprintf("F->%s", crossName(e.num[a], i))
			} else {
				f.comps[i] = fmt.Sprintf("F->%s[c]", crossName(e.num[a], i))
			}
		}
		return f
	}
	return v
}

func crossName(n, i int) string { return fmt.Sprintf("y%d_%d", n, i) }

// opnd is component i of v as an operand of a value that is uniform (uni: v must be too) or not
// (a uniform v is splat).
func (e *emitter) opnd(v *cval, i int, uni bool) string {
	if i >= len(v.comps) {
		i = 0 // a scalar operand of a vector op
	}
	if uni {
		if !v.uni {
			e.errAt(ir.Pos{}, "internal: a varying operand of a uniform value")
		}
		return v.comps[i]
	}
	return splat(kindOf(v.t.Scalar), v.comps[i], !v.uni)
}

// define declares in's value, one const per component; a value read in another region is also
// kept in the frame.
func (e *emitter) define(in *ir.Inst, uni bool, exprs []string) {
	if e.uses[in] == 0 {
		return
	}
	n := e.num[in]
	v := &cval{uni: uni, t: in.Type, comps: make([]string, len(exprs))}
	t := ctype(in.Type.Scalar, uni)
	for i, x := range exprs {
		name := fmt.Sprintf("v%d", n)
		if len(exprs) > 1 {
			name = fmt.Sprintf("v%d_%d", n, i)
		}
		comment := ""
		if in.Name != "" && i == 0 {
			comment = " /* " + sanitizeComment(in.Name) + " */"
		}
		e.line("const %s %s = %s;%s (void)%s;", t, name, x, comment, name) // a use the text may drop (a shuffle of a uniform value) leaves no warning
		v.comps[i] = name
		if e.NC > 1 && e.cross[in] {
			cn := crossName(n, i)
			if uni {
				e.frame = append(e.frame, fmt.Sprintf("%s %s", t, cn))
				e.line("F->%s = %s;", cn, name)
			} else {
				e.frame = append(e.frame, fmt.Sprintf("%s %s[%d]", t, cn, e.NC))
				e.line("F->%s[c] = %s;", cn, name)
			}
		}
	}
	e.vals[in] = v
}

func sanitizeComment(s string) string {
	return strings.NewReplacer("*/", "* /", "\n", " ").Replace(s)
}

// inst emits one instruction under mask m.
func (e *emitter) inst(in *ir.Inst, m string) {
	switch in.Op {
	case ir.OpIf, ir.OpLoop, ir.OpBreak, ir.OpContinue, ir.OpReturn, ir.OpBarrier:
		e.control(in, m)
		return
	case ir.OpLoad, ir.OpStore, ir.OpAtomic:
		e.mem(in, m)
		return
	}
	if in.Type == ir.TVoid || e.isStatic(in) {
		return
	}
	uni := e.uni[in]
	exprs := e.value(in, uni, m)
	if e.err == nil {
		e.define(in, uni, exprs)
	}
}

// value returns the expressions of in's components.
func (e *emitter) value(in *ir.Inst, uni bool, m string) []string {
	n := max(1, int(in.Type.Lanes))
	out := make([]string, n)
	switch {
	case in.Op == ir.OpBuiltin:
		out[0] = e.builtin(in)
	case in.Op.IsUnary():
		a := e.get(in.Args[0])
		for i := range out {
			out[i] = e.unary(in, kindOf(a.t.Scalar), e.opnd(a, i, uni), uni)
		}
	case in.Op.IsBinary() || in.Op.IsCompare():
		a, b := e.get(in.Args[0]), e.get(in.Args[1])
		for i := range out {
			x, y := e.opnd(a, i, uni), e.opnd(b, i, uni)
			if x == y && (in.Op.IsCompare() || in.Op == ir.OpMin || in.Op == ir.OpMax || in.Op == ir.OpSub || in.Op == ir.OpXor) {
				// One value on both sides: the same operation on a copy, so that the compilers do not
				// warn about comparing a value with itself (the IR means it: x != x finds a NaN).
				y = fmt.Sprintf("v%d_same%d", e.num[in], i)
				e.line("const %s %s = %s;", ctype(a.t.Scalar, uni), y, x)
			}
			out[i] = e.binary(in, kindOf(a.t.Scalar), x, y, uni)
		}
	case in.Op == ir.OpSelect:
		c, a, b := e.get(in.Args[0]), e.get(in.Args[1]), e.get(in.Args[2])
		k := kindOf(in.Type.Scalar)
		for i := range out {
			ci := i
			if c.t.Lanes <= 1 {
				ci = 0
			}
			switch {
			case uni:
				out[i] = fmt.Sprintf("(%s ? %s : %s)", c.comps[ci], a.comps[i], b.comps[i])
			case c.uni:
				out[i] = fmt.Sprintf("(%s ? %s : %s)", c.comps[ci], e.opnd(a, i, false), e.opnd(b, i, false))
			default:
				out[i] = fmt.Sprintf("%s(%s, %s, %s)", selName(k), c.comps[ci], e.opnd(a, i, false), e.opnd(b, i, false))
			}
		}
	case in.Op == ir.OpConvert:
		a := e.get(in.Args[0])
		for i := range out {
			out[i] = e.convert(in, kindOf(a.t.Scalar), kindOf(in.Type.Scalar), e.opnd(a, i, uni), uni)
		}
	case in.Op == ir.OpBitcast:
		return e.bitcast(in, uni)
	case in.Op == ir.OpCompose:
		for i := range out {
			out[i] = e.opnd(e.get(in.Args[i]), 0, uni)
		}
	case in.Op == ir.OpExtract:
		out[0] = e.opnd(e.get(in.Args[0]), int(in.Aux), uni)
	case in.Op == ir.OpDotI8x4:
		a, b := e.get(in.Args[0]), e.get(in.Args[1])
		if uni {
			out[0] = fmt.Sprintf("os_dot8(%s, %s)", a.comps[0], b.comps[0])
		} else {
			out[0] = fmt.Sprintf("os_dot8_v(%s, %s)", e.opnd(a, 0, false), e.opnd(b, 0, false))
		}
	case in.Op == ir.OpFma:
		a, b, c := e.get(in.Args[0]), e.get(in.Args[1]), e.get(in.Args[2])
		if uni {
			out[0] = fmt.Sprintf("__builtin_fmaf(%s, %s, %s)", a.comps[0], b.comps[0], c.comps[0])
		} else {
			out[0] = fmt.Sprintf("os_fma_f32v(%s, %s, %s)", e.opnd(a, 0, false), e.opnd(b, 0, false), e.opnd(c, 0, false))
		}
	case in.Op == ir.OpNative:
		x := e.get(in.Args[0])
		y := x
		if len(in.Args) > 1 {
			y = e.get(in.Args[1])
		}
		if uni {
			out[0] = fmt.Sprintf("os_native(%d, %s, %s)", in.Aux, x.comps[0], y.comps[0])
		} else {
			out[0] = fmt.Sprintf("os_native_v(%d, %s, %s)", in.Aux, e.opnd(x, 0, false), e.opnd(y, 0, false))
		}
	case in.Op == ir.OpShuffleXor || in.Op == ir.OpShuffle:
		return e.shuffle(in, uni, m)
	default:
		e.errAt(in.Pos, "operation %s is not supported by the native backend", in.Op)
	}
	return out
}

func selName(k string) string {
	switch k {
	case "b", "i32":
		return "os_sel_i32"
	case "f32":
		return "os_sel_f32"
	case "f64":
		return "os_sel_f64"
	}
	return "os_sel_u32"
}

// builtin is a varying builtin of the running chunk c.
func (e *emitter) builtin(in *ir.Inst) string {
	ws := e.k.WorkgroupSize
	lidx := fmt.Sprintf("(os_iota() + c * %du)", VL)
	local := func(d int) string {
		switch d {
		case 0:
			if ws[1] == 1 && ws[2] == 1 {
				return lidx
			}
			return fmt.Sprintf("(%s %% %du)", lidx, ws[0])
		case 1:
			return fmt.Sprintf("(%s / %du %% %du)", lidx, ws[0], ws[1])
		}
		return fmt.Sprintf("(%s / %du)", lidx, ws[0]*ws[1])
	}
	d := in.Ref
	switch ir.Builtin(in.Aux) {
	case ir.LocalIndex:
		return lidx
	case ir.LocalID:
		return local(d)
	case ir.GlobalID:
		return fmt.Sprintf("(wg%d * %du + %s)", d, ws[d], local(d))
	case ir.SubgroupLane:
		return "os_iota()"
	case ir.SubgroupID:
		return "os_splat_u32(c)"
	}
	e.errAt(in.Pos, "builtin %s is not supported by the native backend", ir.Builtin(in.Aux))
	return "os_splat_u32(0)"
}

func (e *emitter) unary(in *ir.Inst, k, a string, uni bool) string {
	bad := func() string {
		e.errAt(in.Pos, "%s on %s is not supported by the native backend", in.Op, in.Args[0].Type)
		return "0"
	}
	if uni {
		switch in.Op {
		case ir.OpNeg:
			switch k {
			case "f32":
				return fmt.Sprintf("os_f32(os_bits32(%s) ^ 0x80000000u)", a)
			case "f64":
				return fmt.Sprintf("os_f64(os_bits64(%s) ^ 0x8000000000000000ull)", a)
			case "i32":
				return fmt.Sprintf("(int32_t)(0u - (uint32_t)%s)", a)
			case "u32":
				return fmt.Sprintf("(0u - %s)", a)
			}
		case ir.OpNot:
			switch k {
			case "b":
				return fmt.Sprintf("(!%s)", a)
			case "i32", "u32":
				return fmt.Sprintf("(~%s)", a)
			}
		case ir.OpAbs:
			switch k {
			case "f32":
				return fmt.Sprintf("os_f32(os_bits32(%s) & 0x7fffffffu)", a)
			case "f64":
				return fmt.Sprintf("os_f64(os_bits64(%s) & 0x7fffffffffffffffull)", a)
			case "i32":
				return fmt.Sprintf("(%[1]s < 0 ? (int32_t)(0u - (uint32_t)%[1]s) : %[1]s)", a)
			case "u32":
				return a
			}
		case ir.OpSqrt:
			switch k {
			case "f32":
				return fmt.Sprintf("__builtin_sqrtf(%s)", a)
			case "f64":
				return fmt.Sprintf("__builtin_sqrt(%s)", a)
			}
		case ir.OpFloor:
			switch k {
			case "f32":
				return fmt.Sprintf("__builtin_floorf(%s)", a)
			case "f64":
				return fmt.Sprintf("__builtin_floor(%s)", a)
			}
		}
		return bad()
	}
	switch in.Op {
	case ir.OpNeg:
		switch k {
		case "f32":
			return fmt.Sprintf("(os_f32v)((os_u32v)%s ^ 0x80000000u)", a)
		case "f64":
			return fmt.Sprintf("(os_f64v)((os_u64v)%s ^ 0x8000000000000000ull)", a)
		case "i32":
			return fmt.Sprintf("(os_i32v)(-(os_u32v)%s)", a)
		case "u32":
			return fmt.Sprintf("(-%s)", a)
		}
	case ir.OpNot:
		switch k {
		case "b", "i32", "u32":
			return fmt.Sprintf("(~%s)", a)
		}
	case ir.OpAbs:
		switch k {
		case "f32":
			return fmt.Sprintf("(os_f32v)((os_u32v)%s & 0x7fffffffu)", a)
		case "f64":
			return fmt.Sprintf("(os_f64v)((os_u64v)%s & 0x7fffffffffffffffull)", a)
		case "i32":
			return fmt.Sprintf("os_sel_i32((os_m)(%[1]s < 0), (os_i32v)(-(os_u32v)%[1]s), %[1]s)", a)
		case "u32":
			return a
		}
	case ir.OpSqrt:
		switch k {
		case "f32":
			return fmt.Sprintf("os_sqrt_f32v(%s)", a)
		case "f64":
			return fmt.Sprintf("os_sqrt_f64v(%s)", a)
		}
	case ir.OpFloor:
		switch k {
		case "f32":
			return fmt.Sprintf("os_floor_f32v(%s)", a)
		case "f64":
			return fmt.Sprintf("os_floor_f64v(%s)", a)
		}
	}
	return bad()
}

var cOps = map[ir.Op]string{
	ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpDiv: "/", ir.OpAnd: "&", ir.OpOr: "|", ir.OpXor: "^",
	ir.OpEq: "==", ir.OpNe: "!=", ir.OpLt: "<", ir.OpLe: "<=", ir.OpGt: ">", ir.OpGe: ">=",
}

func (e *emitter) binary(in *ir.Inst, k, a, b string, uni bool) string {
	bad := func() string {
		e.errAt(in.Pos, "%s on %s is not supported by the native backend", in.Op, in.Args[0].Type)
		return "0"
	}
	op := in.Op
	c := cOps[op]
	if k == "h" {
		return bad() // f16 values only move: package lower computes with them in f32 (Caps.Float16 off)
	}
	if uni {
		switch {
		case k == "b":
			switch op {
			case ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpEq, ir.OpNe:
				return fmt.Sprintf("(%s %s %s)", a, c, b)
			}
			return bad()
		case op.IsCompare():
			return fmt.Sprintf("(%s %s %s)", a, c, b)
		}
		switch op {
		case ir.OpAdd, ir.OpSub, ir.OpMul:
			if k == "i32" {
				return fmt.Sprintf("(int32_t)((uint32_t)%s %s (uint32_t)%s)", a, c, b)
			}
			return fmt.Sprintf("(%s %s %s)", a, c, b)
		case ir.OpDiv, ir.OpRem:
			switch k {
			case "f32", "f64":
				if op == ir.OpDiv {
					return fmt.Sprintf("(%s / %s)", a, b)
				}
				return bad()
			}
			return fmt.Sprintf("os_%s_%s(%s, %s)", map[ir.Op]string{ir.OpDiv: "div", ir.OpRem: "rem"}[op], k, a, b)
		case ir.OpMin:
			return fmt.Sprintf("(%[2]s < %[1]s ? %[2]s : %[1]s)", a, b)
		case ir.OpMax:
			return fmt.Sprintf("(%[1]s > %[2]s ? %[1]s : %[2]s)", a, b)
		case ir.OpAnd, ir.OpOr, ir.OpXor:
			if k == "i32" || k == "u32" {
				return fmt.Sprintf("(%s %s %s)", a, c, b)
			}
		case ir.OpShl:
			switch k {
			case "u32":
				return fmt.Sprintf("(%s << (%s & 31u))", a, b)
			case "i32":
				return fmt.Sprintf("(int32_t)((uint32_t)%s << ((uint32_t)%s & 31u))", a, b)
			}
		case ir.OpShr:
			switch k {
			case "u32":
				return fmt.Sprintf("(%s >> (%s & 31u))", a, b)
			case "i32":
				return fmt.Sprintf("(%s >> (%s & 31))", a, b)
			}
		}
		return bad()
	}
	switch {
	case k == "b":
		switch op {
		case ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpNe:
			return fmt.Sprintf("(%s %s %s)", a, map[ir.Op]string{ir.OpAnd: "&", ir.OpOr: "|", ir.OpXor: "^", ir.OpNe: "^"}[op], b)
		case ir.OpEq:
			return fmt.Sprintf("(~(%s ^ %s))", a, b)
		}
		return bad()
	case op.IsCompare():
		if k == "f64" {
			return fmt.Sprintf("os_narrow_mask(%s %s %s)", a, c, b)
		}
		return fmt.Sprintf("(os_m)(%s %s %s)", a, c, b)
	}
	switch op {
	case ir.OpAdd, ir.OpSub, ir.OpMul:
		if k == "i32" {
			return fmt.Sprintf("(os_i32v)((os_u32v)%s %s (os_u32v)%s)", a, c, b)
		}
		return fmt.Sprintf("(%s %s %s)", a, c, b)
	case ir.OpDiv, ir.OpRem:
		switch k {
		case "f32", "f64":
			if op == ir.OpDiv {
				return fmt.Sprintf("(%s / %s)", a, b)
			}
			return bad()
		}
		return fmt.Sprintf("os_%s_%sv(%s, %s)", map[ir.Op]string{ir.OpDiv: "div", ir.OpRem: "rem"}[op], k, a, b)
	case ir.OpMin:
		return fmt.Sprintf("%[3]s(%[4]s(%[2]s < %[1]s), %[2]s, %[1]s)", a, b, selName(k), maskOf(k))
	case ir.OpMax:
		return fmt.Sprintf("%[3]s(%[4]s(%[1]s > %[2]s), %[1]s, %[2]s)", a, b, selName(k), maskOf(k))
	case ir.OpAnd, ir.OpOr, ir.OpXor:
		if k == "i32" || k == "u32" {
			return fmt.Sprintf("(%s %s %s)", a, c, b)
		}
	case ir.OpShl:
		switch k {
		case "u32":
			return fmt.Sprintf("(%s << (%s & 31u))", a, b)
		case "i32":
			return fmt.Sprintf("(os_i32v)((os_u32v)%s << ((os_u32v)%s & 31u))", a, b)
		}
	case ir.OpShr:
		switch k {
		case "u32":
			return fmt.Sprintf("(%s >> (%s & 31u))", a, b)
		case "i32":
			return fmt.Sprintf("(%s >> (%s & 31))", a, b)
		}
	}
	return bad()
}

// maskOf is the cast that makes a comparison of kind k a lane mask.
func maskOf(k string) string {
	if k == "f64" {
		return "os_narrow_mask"
	}
	return "(os_m)"
}

// convert is a value conversion from kind fk to tk (the numeric contract's rules).
func (e *emitter) convert(in *ir.Inst, fk, tk, a string, uni bool) string {
	if fk == tk {
		return a
	}
	int32k := func(k string) bool { return k == "i32" || k == "u32" }
	if int32k(fk) && int32k(tk) {
		return fmt.Sprintf("(%s)%s", ktype(tk, uni), a)
	}
	if uni {
		switch {
		case int32k(fk) && tk == "f32":
			return fmt.Sprintf("(float)%s", a)
		case int32k(fk) && tk == "f64":
			return fmt.Sprintf("(double)%s", a)
		case fk == "f32" && tk == "f64":
			return fmt.Sprintf("(double)%s", a)
		case fk == "f64" && tk == "f32":
			return fmt.Sprintf("(float)%s", a)
		case fk == "f32" && tk == "i32":
			return fmt.Sprintf("os_f2i(%s)", a)
		case fk == "f32" && tk == "u32":
			return fmt.Sprintf("os_f2u(%s)", a)
		case fk == "f64" && tk == "i32":
			return fmt.Sprintf("os_d2i(%s)", a)
		case fk == "f64" && tk == "u32":
			return fmt.Sprintf("os_d2u(%s)", a)
		case fk == "h" && tk == "f32":
			return fmt.Sprintf("os_h2f(%s)", a)
		case fk == "f32" && tk == "h":
			return fmt.Sprintf("os_f2h(%s)", a)
		case fk == "h" && tk == "f64":
			return fmt.Sprintf("(double)os_h2f(%s)", a)
		case fk == "f64" && tk == "h":
			return fmt.Sprintf("os_d2h(%s)", a)
		case int32k(fk) && tk == "h":
			return fmt.Sprintf("os_f2h((float)%s)", a)
		case fk == "h" && tk == "i32":
			return fmt.Sprintf("os_f2i(os_h2f(%s))", a)
		case fk == "h" && tk == "u32":
			return fmt.Sprintf("os_f2u(os_h2f(%s))", a)
		}
	} else {
		switch {
		case int32k(fk) && tk == "f32":
			return fmt.Sprintf("__builtin_convertvector(%s, os_f32v)", a)
		case int32k(fk) && tk == "f64":
			return fmt.Sprintf("__builtin_convertvector(%s, os_f64v)", a)
		case fk == "f32" && tk == "f64":
			return fmt.Sprintf("__builtin_convertvector(%s, os_f64v)", a)
		case fk == "f64" && tk == "f32":
			return fmt.Sprintf("__builtin_convertvector(%s, os_f32v)", a)
		case fk == "f32" && tk == "i32":
			return fmt.Sprintf("os_f2i_v(%s)", a)
		case fk == "f32" && tk == "u32":
			return fmt.Sprintf("os_f2u_v(%s)", a)
		case fk == "f64" && tk == "i32":
			return fmt.Sprintf("os_d2i_v(%s)", a)
		case fk == "f64" && tk == "u32":
			return fmt.Sprintf("os_d2u_v(%s)", a)
		case fk == "h" && tk == "f32":
			return fmt.Sprintf("os_h2f_v(%s)", a)
		case fk == "f32" && tk == "h":
			return fmt.Sprintf("os_f2h_v(%s)", a)
		case fk == "h" && tk == "f64":
			return fmt.Sprintf("__builtin_convertvector(os_h2f_v(%s), os_f64v)", a)
		case fk == "f64" && tk == "h":
			return fmt.Sprintf("os_d2h_v(%s)", a)
		case int32k(fk) && tk == "h":
			return fmt.Sprintf("os_f2h_v(__builtin_convertvector(%s, os_f32v))", a)
		case fk == "h" && tk == "i32":
			return fmt.Sprintf("os_f2i_v(os_h2f_v(%s))", a)
		case fk == "h" && tk == "u32":
			return fmt.Sprintf("os_f2u_v(os_h2f_v(%s))", a)
		}
	}
	e.errAt(in.Pos, "convert %s to %s is not supported by the native backend", in.Args[0].Type, in.Type)
	return "0"
}

// bitcast reinterprets a value's bits: the source's components laid end to end, lowest first,
// cut into the result's.
func (e *emitter) bitcast(in *ir.Inst, uni bool) []string {
	a := e.get(in.Args[0])
	from, to := a.t, in.Type
	fk, tk := kindOf(from.Scalar), kindOf(to.Scalar)
	fb, tb := from.Scalar.Bits(), to.Scalar.Bits()
	fn, tn := max(1, int(from.Lanes)), max(1, int(to.Lanes))
	if fk == "b" || tk == "b" || fb*fn != tb*tn {
		e.errAt(in.Pos, "bitcast %s to %s is not supported by the native backend", from, to)
		return make([]string, tn)
	}
	// bits: component i of the source as an unsigned word of its width (u32 for 16 and 32 bits,
	// u64 for 64).
	bits := func(i int) string {
		x := e.opnd(a, i, uni)
		switch {
		case fk == "f64" && uni:
			return fmt.Sprintf("os_bits64(%s)", x)
		case fk == "f64":
			return fmt.Sprintf("((os_u64v)%s)", x)
		case fk == "f32" && uni:
			return fmt.Sprintf("os_bits32(%s)", x)
		case uni:
			return fmt.Sprintf("((uint32_t)%s)", x)
		}
		return fmt.Sprintf("((os_u32v)%s)", x)
	}
	// as turns a word of the target's width into a value of kind tk.
	as := func(w string) string {
		switch {
		case tk == "f64" && uni:
			return fmt.Sprintf("os_f64(%s)", w)
		case tk == "f64":
			return fmt.Sprintf("((os_f64v)%s)", w)
		case tk == "f32" && uni:
			return fmt.Sprintf("os_f32(%s)", w)
		case tk == "i32":
			return fmt.Sprintf("((%s)%s)", ktype("i32", uni), w)
		case tk == "f32":
			return fmt.Sprintf("((os_f32v)%s)", w)
		}
		return w
	}
	widen := func(x string) string { // a u32 word to u64
		if uni {
			return "(uint64_t)" + x
		}
		return fmt.Sprintf("__builtin_convertvector(%s, os_u64v)", x)
	}
	narrow := func(x string) string { // a u64 word to u32 (truncating)
		if uni {
			return "(uint32_t)(" + x + ")"
		}
		return fmt.Sprintf("__builtin_convertvector(%s, os_u32v)", x)
	}
	out := make([]string, tn)
	for j := range out {
		switch {
		case fb == tb:
			out[j] = as(bits(j))
		case fb < tb:
			r := tb / fb
			var parts []string
			for k := 0; k < r; k++ {
				src := bits(j*r + k)
				if fb == 16 {
					src = "(" + src + " & 0xffffu)"
				}
				if tb == 64 {
					src = widen(src)
				}
				if k > 0 {
					src = fmt.Sprintf("(%s << %d)", src, k*fb)
				}
				parts = append(parts, src)
			}
			out[j] = as("(" + strings.Join(parts, " | ") + ")")
		default:
			r := fb / tb
			src := bits(j / r)
			sh := (j % r) * tb
			w := src
			if sh > 0 {
				w = fmt.Sprintf("(%s >> %d)", src, sh)
			}
			if fb == 64 {
				w = narrow(w)
			}
			if tb == 16 {
				w = "(" + w + " & 0xffffu)"
			}
			out[j] = as(w)
		}
	}
	return out
}

// shuffle is OpShuffleXor (partner lane = lane ^ mask) and OpShuffle (partner lane given): a lane
// reads its partner's value where the partner is a lane of the subgroup (the vector) that runs
// the instruction, else its own.
func (e *emitter) shuffle(in *ir.Inst, uni bool, m string) []string {
	v, sel := e.get(in.Args[0]), e.get(in.Args[1])
	n := max(1, int(in.Type.Lanes))
	out := make([]string, n)
	k := kindOf(in.Type.Scalar)
	if uni || v.uni {
		for i := range out {
			out[i] = e.opnd(v, i, uni)
		}
		return out
	}
	xor := in.Op == ir.OpShuffleXor
	if c := in.Args[1]; c.Op == ir.OpConst {
		x := uint32(c.Aux)
		perm := make([]string, VL)
		for l := range perm {
			p := x
			if xor {
				p = uint32(l) ^ x
			}
			if p >= VL {
				p = uint32(l)
			}
			perm[l] = fmt.Sprint(p)
		}
		ps := strings.Join(perm, ", ")
		pm := fmt.Sprintf("OS_SHUF32(%s, %s)", m, ps)
		for i := range out {
			x := v.comps[i]
			if k == "f64" {
				out[i] = fmt.Sprintf("os_sel_f64(%s, OS_SHUF64(%s, %s), %s)", pm, x, ps, x)
			} else {
				out[i] = fmt.Sprintf("%s(%s, OS_SHUF32(%s, %s), %s)", selName(k), pm, x, ps, x)
			}
		}
		return out
	}
	p := e.opnd(sel, 0, false)
	if xor {
		p = fmt.Sprintf("(os_iota() ^ %s)", p)
	}
	for i := range out {
		x := v.comps[i]
		if k == "f64" {
			out[i] = fmt.Sprintf("os_shuffle_f64(%s, %s, %s)", x, m, p)
		} else {
			out[i] = fmt.Sprintf("((%s)os_shuffle_u32((os_u32v)%s, %s, %s))", ktype(k, false), x, m, p)
		}
	}
	return out
}
