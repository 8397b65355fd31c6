package cfamily

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// Types.

// scalarName is the dialect's name of one lane of kind s.
func (p *printer) scalarName(s ir.Scalar) (string, bool) {
	if p.cuda {
		switch s {
		case ir.Bool:
			return "bool", true
		case ir.I8:
			return "signed char", true
		case ir.U8:
			return "unsigned char", true
		case ir.I16:
			return "short", true
		case ir.U16:
			return "unsigned short", true
		case ir.I32:
			return "int", true
		case ir.U32:
			return "unsigned int", true
		case ir.F16:
			return p.d.F16, true
		case ir.F32:
			return "float", true
		case ir.F64:
			return "double", true
		}
		return "", false
	}
	switch s {
	case ir.Bool:
		return "bool", true
	case ir.I8:
		return "char", true
	case ir.U8:
		return "uchar", true
	case ir.I16:
		return "short", true
	case ir.U16:
		return "ushort", true
	case ir.I32:
		return "int", true
	case ir.U32:
		return "uint", true
	case ir.F16:
		return p.d.F16, true
	case ir.F32:
		return "float", true
	}
	return "", false // MSL has no f64
}

// vecBase is the stem of a vector type name (float, int, uint, bool, half, double).
func vecBase(s ir.Scalar) string {
	switch s {
	case ir.Bool:
		return "bool"
	case ir.I32:
		return "int"
	case ir.U32:
		return "uint"
	case ir.F16:
		return "half"
	case ir.F32:
		return "float"
	case ir.F64:
		return "double"
	}
	return ""
}

// typeName returns the dialect's name of t, recording an error at pos when it has none.
func (p *printer) typeName(t ir.Type, pos ir.Pos) string {
	p.noteType(t, pos)
	if t.Lanes <= 1 {
		n, _ := p.scalarName(t.Scalar)
		if n == "" {
			return "void"
		}
		return n
	}
	base := vecBase(t.Scalar)
	if base == "" {
		return "void"
	}
	if p.cuda {
		name := fmt.Sprintf("os_%s%d", base, t.Lanes)
		p.vecs[name] = t
		return name
	}
	return fmt.Sprintf("%s%d", base, t.Lanes)
}

// noteType checks that the dialect can name t and records f16/f64 use.
func (p *printer) noteType(t ir.Type, pos ir.Pos) {
	if t.Lanes < 1 || t.Lanes > 4 {
		p.errAt(pos, "type %s has no C-family spelling", t)
		return
	}
	if _, ok := p.scalarName(t.Scalar); !ok {
		if t.Scalar == ir.F64 {
			p.errAt(pos, "type %s: f64 is not available in this language", t)
		} else {
			p.errAt(pos, "type %s has no spelling in this language", t)
		}
		return
	}
	if t.Lanes > 1 && vecBase(t.Scalar) == "" {
		p.errAt(pos, "vector type %s has no spelling in this language", t)
	}
	switch t.Scalar {
	case ir.F16:
		p.uses.F16 = true
	case ir.F64:
		p.uses.F64 = true
	}
}

// cast converts expression x (already a primary or parenthesized expression) to type t.
func (p *printer) cast(t ir.Type, x string) string {
	n := p.typeName(t, ir.Pos{})
	if p.cuda {
		return "(" + n + ")" + x
	}
	return n + "(" + strip(x) + ")"
}

func (p *printer) f32(x string) string { return p.cast(ir.TF32, x) }

// call records the function name at the start of format and formats it.
func (p *printer) call(format string, args ...any) string {
	if i := strings.IndexByte(format, '('); i > 0 {
		name := format[:i]
		if isIdent(name) {
			p.uses.Names[name] = true
		}
	}
	return fmt.Sprintf(format, args...)
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return s != ""
}

// helper records the use of an os_* helper and returns its call.
func (p *printer) helper(name string, args ...string) string {
	p.uses.Names[name] = true
	for i := range args {
		args[i] = strip(args[i])
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

func infix(a, op, b string) string { return "(" + a + " " + op + " " + b + ")" }

// Literals.

// literal returns the text of one lane of a constant of scalar kind s with bit pattern bits.
func (p *printer) literal(s ir.Scalar, bits uint64, pos ir.Pos) string {
	switch s {
	case ir.Bool:
		if bits != 0 {
			return "true"
		}
		return "false"
	case ir.I32:
		v := int32(uint32(bits))
		switch {
		case v == math.MinInt32:
			return "(-2147483647 - 1)"
		case v < 0:
			return fmt.Sprintf("(%d)", v)
		}
		return strconv.Itoa(int(v))
	case ir.U32:
		return fmt.Sprintf("%du", uint32(bits))
	case ir.F32:
		f := math.Float32frombits(uint32(bits))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || (f != 0 && math.Abs(float64(f)) < 0x1p-126) {
			return p.bitsAs(ir.TF32, fmt.Sprintf("0x%08xu", uint32(bits)))
		}
		return floatText(strconv.FormatFloat(float64(f), 'g', -1, 32), "f")
	case ir.F64:
		f := math.Float64frombits(bits)
		if math.IsNaN(f) || math.IsInf(f, 0) || (f != 0 && math.Abs(f) < 0x1p-1022) {
			return p.bitsAs(ir.TF64, fmt.Sprintf("0x%016xull", bits))
		}
		return floatText(strconv.FormatFloat(f, 'g', -1, 64), "")
	case ir.F16:
		h := ir.ConstFloat(ir.TF16, bits&0xffff)
		if math.IsNaN(h) || math.IsInf(h, 0) {
			// The f32 with the same sign, an all-ones exponent and the payload shifted up
			// converts to exactly this f16 (no function may return a storage-only half).
			f := uint64(bits&0x8000)<<16 | 0x7f800000 | uint64(bits&0x3ff)<<13
			return p.cast(ir.TF16, p.literal(ir.F32, f, pos))
		}
		// Every f16 value is exactly an f32 value: the conversion is exact.
		return p.cast(ir.TF16, floatText(strconv.FormatFloat(h, 'g', -1, 32), "f"))
	}
	p.errAt(pos, "constant of kind %s", s)
	return "0"
}

// floatText makes a decimal float literal: a '.' or exponent, the suffix, parentheses when
// negative.
func floatText(s, suffix string) string {
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	s += suffix
	if strings.HasPrefix(s, "-") {
		return "(" + s + ")"
	}
	return s
}

// bitsAs reinterprets the integer expression x as float type t (NaN, infinities, subnormals).
func (p *printer) bitsAs(t ir.Type, x string) string {
	if !p.cuda {
		return fmt.Sprintf("as_type<%s>(%s)", p.typeName(t, ir.Pos{}), strip(x))
	}
	if t == ir.TF32 {
		return p.call("__uint_as_float(%s)", x)
	}
	p.uses.Names["os_bitcast"] = true
	return fmt.Sprintf("os_bitcast<%s>(%s)", p.typeName(t, ir.Pos{}), strip(x))
}

// Instructions.

func (p *printer) inst(in *ir.Inst) {
	k := p.k
	p.cur = in.Pos
	t := in.Type
	switch in.Op {
	case ir.OpConst:
		p.vals[in] = &value{t: t, lit: []string{p.literal(t.Scalar, in.Aux, in.Pos)}}
	case ir.OpParam:
		p.vals[in] = &value{t: t, lit: []string{p.paramExpr[in.Ref]}}
	case ir.OpLen:
		p.vals[in] = &value{t: t, lit: []string{p.lenExpr[in.Ref]}}
	case ir.OpBuiltin:
		p.decl(in, p.builtin(ir.Builtin(in.Aux), in.Ref))
	case ir.OpLoad:
		elem, ref := p.memRef(in)
		x := ref
		if w := elem.Scalar.Widened(); w != elem.Scalar {
			x = p.cast(ir.S(w), ref)
		}
		p.decl(in, x)
	case ir.OpStore:
		elem, ref := p.memRef(in)
		v := p.whole(in.Args[len(in.Args)-1])
		if w := elem.Scalar.Widened(); w != elem.Scalar {
			v = p.cast(elem, v)
		}
		p.line("%s = %s;", ref, strip(v))
	case ir.OpAtomic:
		p.atomic(in)
	case ir.OpNeg, ir.OpNot, ir.OpAbs, ir.OpSqrt, ir.OpFloor,
		ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpMin, ir.OpMax,
		ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr,
		ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe,
		ir.OpSelect, ir.OpConvert, ir.OpCompose:
		lanes := make([]string, t.Lanes)
		for i := range lanes {
			lanes[i] = p.laneOp(in, i)
		}
		if t.Lanes == 1 {
			p.decl(in, lanes[0])
		} else {
			p.decl(in, p.compose(t, lanes, in.Pos))
		}
	case ir.OpExtract:
		p.decl(in, p.lane(in.Args[0], int(in.Aux)))
	case ir.OpBitcast:
		p.decl(in, p.bitcast(in))
	case ir.OpDotI8x4:
		a, b := p.lane(in.Args[0], 0), p.lane(in.Args[1], 0)
		p.decl(in, p.call(p.d.Dot, a, b))
	case ir.OpShuffleXor:
		v, m := p.lane(in.Args[0], 0), p.lane(in.Args[1], 0)
		switch {
		case in.Args[1].Op == ir.OpConst:
			m = fmt.Sprint(uint32(in.Args[1].Aux))
		case p.cuda:
			m = "(int)" + m
		default:
			m = "ushort(" + m + ")"
		}
		p.decl(in, p.call(p.d.ShuffleXor, v, m, p.warpMask()))
	case ir.OpShuffle:
		v, l := p.lane(in.Args[0], 0), p.lane(in.Args[1], 0)
		switch {
		case in.Args[1].Op == ir.OpConst:
			l = fmt.Sprint(uint32(in.Args[1].Aux))
		case p.cuda:
			l = "(int)" + l
		default:
			l = "ushort(" + l + ")"
		}
		p.decl(in, p.call(p.d.Shuffle, v, l, p.warpMask()))
	case ir.OpIf, ir.OpLoop, ir.OpBreak, ir.OpContinue, ir.OpReturn, ir.OpBarrier:
		p.control(in)
	case ir.OpIsland:
		p.island(in)
	case ir.OpReduce:
		p.errAt(in.Pos, "reduce.%s must be expanded by package lower before printing (kernel at %s)", ir.ReduceOp(in.Aux), k.Pos)
	case ir.OpFma:
		if p.d.F32.Fma == "" {
			p.errAt(in.Pos, "fma: %s has no exact fused multiply-add (lower with Caps.ExactFma false)", p.d.Name)
			return
		}
		p.decl(in, p.call(p.d.F32.Fma, p.lane(in.Args[0], 0), p.lane(in.Args[1], 0), p.lane(in.Args[2], 0)))
	case ir.OpNative:
		f := ir.NativeFunc(in.Aux)
		if f >= ir.NativeCount || p.d.Native[f] == "" {
			p.errAt(in.Pos, "native %s: %s has no spelling for it", f, p.d.Name)
			return
		}
		args := make([]any, len(in.Args))
		for i, a := range in.Args {
			args[i] = strip(p.lane(a, 0))
		}
		p.decl(in, p.call(p.d.Native[f], args...))
	default:
		p.errAt(in.Pos, "cannot print %s", in.Op)
	}
}

// island prints an OpIsland the lowering kept: the dialect's native body (Dialect.Islands).
func (p *printer) island(in *ir.Inst) {
	c := ir.DecodeIsland(in.Aux)
	if c.Island >= ir.IslandCount || p.d.Islands[c.Island] == "" {
		p.errAt(in.Pos, "island %s: %s (%s) has no native body for it (lower without it in Caps.Islands)", c.Island, p.d.Name, p.d.Target)
		return
	}
	acc := "false"
	if c.Accumulate {
		acc = "true"
	}
	tile := func(i int) string { return strip(p.lane(in.Args[i], 0)) }
	p.line("%s;", p.call(p.d.Islands[c.Island], p.sharedNames[c.A], tile(0), p.sharedNames[c.B], tile(1),
		p.sharedNames[c.D], tile(2), acc, strip(p.builtin(ir.SubgroupLane, 0))))
}

// memRef returns the element type and the lvalue an OpLoad, OpStore or OpAtomic addresses.
func (p *printer) memRef(in *ir.Inst) (ir.Type, string) {
	switch in.Mem {
	case ir.MemBuffer:
		return p.k.Buffers[in.Ref].Elem, fmt.Sprintf("%s[%s]", p.bufNames[in.Ref], strip(p.lane(in.Args[0], 0)))
	case ir.MemShared:
		return p.k.Shared[in.Ref].Elem, fmt.Sprintf("%s[%s]", p.sharedNames[in.Ref], strip(p.lane(in.Args[0], 0)))
	}
	return p.k.Vars[in.Ref].Type, p.varNames[in.Ref]
}

// localIndex is the flattened local invocation index (FamilyCUDA).
func (p *printer) localIndex() string {
	wg := p.k.WorkgroupSize
	s := "threadIdx.x"
	if wg[1] > 1 || wg[2] > 1 {
		s += " + threadIdx.y * blockDim.x"
	}
	if wg[2] > 1 {
		s += " + threadIdx.z * blockDim.x * blockDim.y"
	}
	if strings.Contains(s, " ") {
		return "(" + s + ")"
	}
	return s
}

// builtin returns the expression of a builtin (a u32).
func (p *printer) builtin(b ir.Builtin, dim int) string {
	xyz := "xyz"[dim : dim+1]
	if !p.cuda {
		switch b {
		case ir.GlobalID:
			return "gid." + xyz
		case ir.LocalID:
			return "lid." + xyz
		case ir.WorkgroupID:
			return "wgid." + xyz
		case ir.NumWorkgroups:
			return "nwg." + xyz
		case ir.LocalIndex:
			return "lidx"
		case ir.SubgroupSize:
			return "sgsize"
		case ir.SubgroupLane:
			return "lane"
		}
		return "sgid"
	}
	switch b {
	case ir.GlobalID:
		return fmt.Sprintf("(blockIdx.%s * blockDim.%s + threadIdx.%s)", xyz, xyz, xyz)
	case ir.LocalID:
		return "threadIdx." + xyz
	case ir.WorkgroupID:
		return "blockIdx." + xyz
	case ir.NumWorkgroups:
		return "gridDim." + xyz
	case ir.LocalIndex:
		return p.localIndex()
	case ir.SubgroupSize:
		return "(unsigned int)warpSize"
	case ir.SubgroupLane:
		return fmt.Sprintf("(%s & ((unsigned int)warpSize - 1u))", p.localIndex())
	}
	return fmt.Sprintf("(%s / (unsigned int)warpSize)", p.localIndex())
}

// warpMask is the member mask of a CUDA warp-synchronous shuffle: every lane of the warp that
// runs the kernel (a last, partial warp of a workgroup that is not a multiple of 32 has fewer).
func (p *printer) warpMask() string {
	n := p.k.Lanes()
	switch {
	case n%32 == 0:
		return "0xffffffffu"
	case n < 32:
		return fmt.Sprintf("0x%08xu", uint32(1)<<uint(n)-1)
	}
	return fmt.Sprintf("(%s / 32u == %du ? 0x%08xu : 0xffffffffu)", p.localIndex(), n/32, uint32(1)<<uint(n%32)-1)
}

func (p *printer) atomic(in *ir.Inst) {
	elem, ref := p.memRef(in)
	val := p.lane(in.Args[len(in.Args)-1], 0)
	op := ir.AtomicOp(in.Aux)
	var expr string
	if p.cuda {
		fn := [...]string{"atomicAdd", "atomicMin", "atomicMax", "atomicExch", "atomicCAS", "atomicAnd", "atomicOr", "atomicXor"}[op]
		if op == ir.AtomicCmpXchg {
			expr = p.call(fn+"(&%s, %s, %s)", ref, p.lane(in.Args[1], 0), val)
		} else {
			expr = p.call(fn+"(&%s, %s)", ref, val)
		}
	} else {
		space := "device"
		if in.Mem == ir.MemShared {
			space = "threadgroup"
		}
		if elem.Scalar == ir.F32 {
			p.errAt(in.Pos, "atomic %s on f32 elements: MSL takes no native float atomics here (lower with Caps.AtomicFloatAdd false expands them into compare-exchange loops)", op)
			return
		}
		at := "atomic_uint"
		if elem.Scalar == ir.I32 {
			at = "atomic_int"
		}
		ptr := fmt.Sprintf("(%s %s*)&%s", space, at, ref)
		if op == ir.AtomicCmpXchg {
			name := p.valueName(in)
			tn := p.typeName(in.Type, in.Pos)
			cmp := strip(p.lane(in.Args[1], 0))
			p.line("%s %s = %s;", tn, name, cmp)
			p.line("while (!atomic_compare_exchange_weak_explicit(%s, &%s, %s, memory_order_relaxed, memory_order_relaxed) && %s == %s) {", ptr, name, strip(val), name, cmp)
			p.line("}")
			p.vals[in] = &value{t: in.Type, name: name}
			return
		}
		fn := [...]string{"atomic_fetch_add_explicit", "atomic_fetch_min_explicit", "atomic_fetch_max_explicit", "atomic_exchange_explicit", "", "atomic_fetch_and_explicit", "atomic_fetch_or_explicit", "atomic_fetch_xor_explicit"}[op]
		expr = fmt.Sprintf("%s(%s, %s, memory_order_relaxed)", fn, ptr, strip(val))
	}
	if p.useCnt[in] == 0 {
		p.line("%s;", expr)
		p.vals[in] = &value{t: in.Type, lit: []string{"0"}}
		return
	}
	p.decl(in, expr)
}

// laneOp returns lane i of an element-wise instruction's result.
func (p *printer) laneOp(in *ir.Inst, i int) string {
	arg := func(j int) string { return p.lane(in.Args[j], i) }
	t := in.Type.Elem()
	switch in.Op {
	case ir.OpCompose:
		return p.lane(in.Args[i], 0)
	case ir.OpSelect:
		c := p.lane(in.Args[0], i)
		if in.Args[0].Type.Lanes == 1 {
			c = p.lane(in.Args[0], 0)
		}
		return "(" + c + " ? " + arg(1) + " : " + arg(2) + ")"
	case ir.OpConvert:
		return p.convert(in.Args[0].Type.Scalar, t.Scalar, arg(0), in.Pos)
	}
	s := in.Args[0].Type.Scalar
	if in.Op.IsCompare() {
		a, b := arg(0), arg(1)
		if s == ir.F16 {
			a, b = p.f32(a), p.f32(b)
		}
		op := map[ir.Op]string{ir.OpEq: "==", ir.OpNe: "!=", ir.OpLt: "<", ir.OpLe: "<=", ir.OpGt: ">", ir.OpGe: ">="}[in.Op]
		return infix(a, op, b)
	}
	if in.Op.IsUnary() {
		return p.unary(in.Op, t, arg(0), in.Pos)
	}
	cnt := ""
	if c := in.Args[1]; (in.Op == ir.OpShl || in.Op == ir.OpShr) && c.Op == ir.OpConst {
		n := c.Aux & 31
		if t.Scalar == ir.U32 {
			cnt = fmt.Sprintf("%du", n)
		} else {
			cnt = fmt.Sprint(n)
		}
	}
	return p.binary(in.Op, t, arg(0), arg(1), in.Pos, cnt)
}

func (p *printer) unary(op ir.Op, t ir.Type, a string, pos ir.Pos) string {
	s := t.Scalar
	switch {
	case s == ir.F16:
		if op == ir.OpNeg {
			return p.cast(t, "(-"+p.f32(a)+")")
		}
		return p.cast(t, p.unary(op, ir.TF32, p.f32(a), pos))
	case s.IsFloat():
		ops := p.d.F32
		if s == ir.F64 {
			ops = p.d.F64
		}
		switch op {
		case ir.OpNeg:
			return "(-" + a + ")"
		case ir.OpAbs:
			return p.call(ops.Abs, a)
		case ir.OpSqrt:
			return p.call(ops.Sqrt, a)
		case ir.OpFloor:
			return p.call(ops.Floor, a)
		}
	case s == ir.Bool:
		if op == ir.OpNot {
			return "(!" + a + ")"
		}
	case s == ir.I32:
		switch op {
		case ir.OpNeg:
			return p.cast(t, infix("0u", "-", p.cast(ir.TU32, a)))
		case ir.OpNot:
			return "(~" + a + ")"
		case ir.OpAbs:
			return "(" + a + " < 0 ? " + p.cast(t, infix("0u", "-", p.cast(ir.TU32, a))) + " : " + a + ")"
		}
	case s == ir.U32:
		switch op {
		case ir.OpNeg:
			return infix("0u", "-", a)
		case ir.OpNot:
			return "(~" + a + ")"
		case ir.OpAbs:
			return a
		}
	}
	p.errAt(pos, "%s on %s", op, t)
	return a
}

// binary returns a binary op on lanes a and b of type t. cnt, when not "", is the shift count
// already reduced modulo the width (a constant count).
func (p *printer) binary(op ir.Op, t ir.Type, a, b string, pos ir.Pos, cnt string) string {
	s := t.Scalar
	switch op {
	case ir.OpMin:
		if s == ir.F16 {
			return "(" + infix(p.f32(b), "<", p.f32(a)) + " ? " + b + " : " + a + ")"
		}
		return "(" + b + " < " + a + " ? " + b + " : " + a + ")"
	case ir.OpMax:
		if s == ir.F16 {
			return "(" + infix(p.f32(a), ">", p.f32(b)) + " ? " + a + " : " + b + ")"
		}
		return "(" + a + " > " + b + " ? " + a + " : " + b + ")"
	}
	switch {
	case s == ir.F16 && op == ir.OpDiv && p.d.F16Div != "":
		return p.call(p.d.F16Div, a, b)
	case s == ir.F16:
		return p.cast(t, p.binary(op, ir.TF32, p.f32(a), p.f32(b), pos, ""))
	case s.IsFloat():
		ops := p.d.F32
		if s == ir.F64 {
			ops = p.d.F64
		}
		spell := map[ir.Op]struct{ f, c string }{
			ir.OpAdd: {ops.Add, "+"}, ir.OpSub: {ops.Sub, "-"}, ir.OpMul: {ops.Mul, "*"}, ir.OpDiv: {ops.Div, "/"},
		}[op]
		if spell.c == "" {
			break
		}
		if spell.f != "" {
			return p.call(spell.f, a, b)
		}
		return infix(a, spell.c, b)
	case s == ir.Bool:
		switch op {
		case ir.OpAnd:
			return infix(a, "&&", b)
		case ir.OpOr:
			return infix(a, "||", b)
		case ir.OpXor:
			return infix(a, "!=", b)
		}
	case s == ir.I32 || s == ir.U32:
		signed := s == ir.I32
		wrap := func(c string) string {
			if !signed {
				return infix(a, c, b)
			}
			return p.cast(t, infix(p.cast(ir.TU32, a), c, p.cast(ir.TU32, b)))
		}
		switch op {
		case ir.OpAdd:
			return wrap("+")
		case ir.OpSub:
			return wrap("-")
		case ir.OpMul:
			return wrap("*")
		case ir.OpDiv:
			return p.helper("os_div_"+s.String(), a, b)
		case ir.OpRem:
			return p.helper("os_rem_"+s.String(), a, b)
		case ir.OpAnd:
			return infix(a, "&", b)
		case ir.OpOr:
			return infix(a, "|", b)
		case ir.OpXor:
			return infix(a, "^", b)
		case ir.OpShl:
			if signed && cnt != "" {
				return p.cast(t, infix(p.cast(ir.TU32, a), "<<", cnt))
			}
			if cnt != "" {
				return infix(a, "<<", cnt)
			}
			if signed {
				return p.cast(t, infix(p.cast(ir.TU32, a), "<<", infix(b, "&", "31")))
			}
			return infix(a, "<<", infix(b, "&", "31u"))
		case ir.OpShr:
			if cnt != "" {
				return infix(a, ">>", cnt)
			}
			if signed {
				return infix(a, ">>", infix(b, "&", "31"))
			}
			return infix(a, ">>", infix(b, "&", "31u"))
		}
	}
	p.errAt(pos, "%s on %s", op, t)
	return a
}

// convert converts one lane from kind from to kind to (see the package doc for the rules).
func (p *printer) convert(from, to ir.Scalar, a string, pos ir.Pos) string {
	T := ir.S(to)
	switch {
	case from == to:
		return a
	case from.IsFloat() && to.IsFloat():
		return p.cast(T, a)
	case from.IsFloat() && (to == ir.I32 || to == ir.U32):
		if from == ir.F16 {
			from, a = ir.F32, p.f32(a)
		}
		return p.helper(fmt.Sprintf("os_%s_to_%s", from, to), a)
	case (from == ir.I32 || from == ir.U32) && to.IsFloat():
		if to == ir.F16 {
			// Via f32: exact below 2^24, and everything larger overflows f16 anyway.
			return p.cast(T, p.f32(a))
		}
		return p.cast(T, a)
	case (from == ir.I32 || from == ir.U32) && (to == ir.I32 || to == ir.U32):
		return p.cast(T, a)
	}
	p.errAt(pos, "convert %s to %s", from, to)
	return a
}

// bitcast returns the expression of an OpBitcast.
func (p *printer) bitcast(in *ir.Inst) string {
	from, to := in.Args[0].Type, in.Type
	a := p.whole(in.Args[0])
	if from == to {
		return a
	}
	if from.Lanes == to.Lanes && (from.Lanes == 1 || !p.cuda) && (from.Scalar == ir.I32 || from.Scalar == ir.U32) && (to.Scalar == ir.I32 || to.Scalar == ir.U32) {
		return p.cast(to, a) // the value conversion wraps: the same bits
	}
	if !p.cuda {
		return fmt.Sprintf("as_type<%s>(%s)", p.typeName(to, in.Pos), strip(a))
	}
	if from.Lanes == 1 && to.Lanes == 1 {
		switch [2]ir.Scalar{from.Scalar, to.Scalar} {
		case [2]ir.Scalar{ir.F32, ir.U32}:
			return p.call("__float_as_uint(%s)", a)
		case [2]ir.Scalar{ir.F32, ir.I32}:
			return p.call("__float_as_int(%s)", a)
		case [2]ir.Scalar{ir.U32, ir.F32}:
			return p.call("__uint_as_float(%s)", a)
		case [2]ir.Scalar{ir.I32, ir.F32}:
			return p.call("__int_as_float(%s)", a)
		}
	}
	p.uses.Names["os_bitcast"] = true
	return fmt.Sprintf("os_bitcast<%s>(%s)", p.typeName(to, in.Pos), strip(a))
}
