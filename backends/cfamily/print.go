package cfamily

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Print writes the source text of the lowered kernel k in dialect d (see the package
// documentation for the form and the numeric contract). k must verify and must have been lowered
// with d.Caps: an OpReduce left in it is an error naming its position, as is an OpDotI8x4 when
// the dialect has no packed dot. Print never panics; every error is an *ir.Error.
func Print(k *ir.Kernel, d *Dialect) (src string, err error) {
	if k == nil {
		return "", errors.New("cfamily: Print: nil kernel")
	}
	if d == nil {
		return "", &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: "cfamily: Print: nil dialect"}
	}
	defer func() {
		if r := recover(); r != nil {
			src, err = "", &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: fmt.Sprintf("%s: internal printer error: %v", d.Name, r)}
		}
	}()
	if err := ir.Verify(k); err != nil {
		return "", err
	}
	p := newPrinter(k, d)
	return p.run()
}

// value is how an IR value appears in the text.
type value struct {
	t    ir.Type
	name string   // the declared identifier; "" for values written in place
	lit  []string // in-place lanes (constants, parameters); one entry for scalars and splats
}

type printer struct {
	k     *ir.Kernel
	d     *Dialect
	cuda  bool // FamilyCUDA
	names *namer
	uses  Uses
	vecs  map[string]ir.Type // vector struct types used (FamilyCUDA)

	vals    map[*ir.Inst]*value
	numbers map[*ir.Inst]int // %N of the IR text form
	useCnt  map[*ir.Inst]int

	bufNames    []string
	bufParams   []string // how a buffer's elements are addressed: the identifier
	paramExpr   []string // how each parameter is read
	lenExpr     []string // per buffer: how its length is read ("" until used)
	lenNames    []string
	sharedNames []string
	varNames    []string
	paramsType  string // MSL: the parameter struct's name

	// The printing plan (fold.go).
	pre         map[*ir.Inst]int // preorder number of every instruction: its index in info
	info        []instInfo
	stack       []int // collect: the current index in each enclosing block
	loops       map[*ir.Inst]*loopPlan
	absorbed    map[*ir.Inst]bool // variable stores printed as a for statement's declaration
	forVars     map[int]bool      // variables declared by a for statement
	varStores   [][]int           // per variable: preorder numbers of its stores
	varAccess   [][]int           // per variable: preorder numbers of its loads and stores
	hasContinue map[*ir.Inst]bool // loops a continue targets

	cur   ir.Pos // the position of the instruction being printed
	body  strings.Builder
	ind   int
	loopN int
	err   error
}

func newPrinter(k *ir.Kernel, d *Dialect) *printer {
	reserved := append([]string{k.Name}, d.Reserved...)
	if d.F16 != "" {
		reserved = append(reserved, d.F16)
	}
	return &printer{
		k: k, d: d, cuda: d.Family == FamilyCUDA,
		names:   newNamer(reserved),
		uses:    Uses{Names: map[string]bool{}},
		vecs:    map[string]ir.Type{},
		vals:    map[*ir.Inst]*value{},
		numbers: map[*ir.Inst]int{},
		useCnt:  map[*ir.Inst]int{},
	}
}

// errAt records the first error, at position pos.
func (p *printer) errAt(pos ir.Pos, format string, args ...any) {
	if p.err == nil {
		if pos == (ir.Pos{}) {
			pos = p.cur
		}
		if pos == (ir.Pos{}) {
			pos = p.k.Pos
		}
		p.err = &ir.Error{Pos: pos, Kernel: p.k.Name, Msg: p.d.Name + ": " + fmt.Sprintf(format, args...)}
	}
}

// maxIndent is the deepest indentation the printer writes, in tabs: code nested deeper stays at
// this indentation, so the text of a deeply nested kernel grows linearly with its size.
const maxIndent = 64

var tabs = strings.Repeat("\t", maxIndent)

func (p *printer) line(format string, args ...any) {
	p.body.WriteString(tabs[:min(p.ind, maxIndent)])
	fmt.Fprintf(&p.body, format, args...)
	p.body.WriteByte('\n')
}

func (p *printer) run() (string, error) {
	k, d := p.k, p.d
	if d.Family != FamilyCUDA && d.Family != FamilyMetal {
		return "", &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: fmt.Sprintf("%s: unknown dialect family %d", d.Name, d.Family)}
	}
	if p.names.reserved[k.Name] && !p.isOwnReserved(k.Name) {
		return "", &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: fmt.Sprintf("%s: kernel name %q is a reserved word of the language", d.Name, k.Name)}
	}
	n := 0
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Type != ir.TVoid {
			p.numbers[in] = n
			n++
		}
		for _, a := range in.Args {
			p.useCnt[a]++
		}
		if in.Op == ir.OpReduce {
			p.errAt(in.Pos, "reduce.%s must be expanded by package lower before printing (lower.Run with the dialect's caps; kernel at %s)", ir.ReduceOp(in.Aux), k.Pos)
		}
		if in.Op == ir.OpDotI8x4 && d.Dot == "" {
			p.errAt(in.Pos, "dot_i8x4: this target has no packed int8 dot; lower the kernel with Caps.DotI8x4 = false")
		}
		return true
	})
	if p.err != nil {
		return "", p.err
	}
	p.declareResources()
	if p.err != nil {
		return "", p.err
	}
	p.plan()
	p.ind = 1
	p.kernelLocals()
	p.block(k.Body)
	if p.err != nil {
		return "", p.err
	}
	var sig strings.Builder
	p.signature(&sig) // before the vector structs: buffer element types may appear only here
	if p.err != nil {
		return "", p.err
	}
	var out strings.Builder
	p.header(&out)
	for n := range p.vecs {
		p.uses.Vectors = append(p.uses.Vectors, n)
	}
	sort.Strings(p.uses.Vectors)
	if d.Prelude != nil {
		if pre := d.Prelude(&p.uses); pre != "" {
			out.WriteString(pre)
			if !strings.HasSuffix(pre, "\n") {
				out.WriteByte('\n')
			}
			out.WriteByte('\n')
		}
	}
	if p.cuda {
		p.vectorStructs(&out)
	}
	p.helpers(&out)
	out.WriteString(sig.String())
	out.WriteString(p.body.String())
	out.WriteString("}\n")
	return out.String(), nil
}

// isOwnReserved reports whether name is reserved only because it is the kernel's own name.
func (p *printer) isOwnReserved(name string) bool {
	for _, r := range cxxKeywords {
		if r == name {
			return false
		}
	}
	for _, r := range p.d.Reserved {
		if r == name {
			return false
		}
	}
	return name != p.d.F16
}

func (p *printer) header(out *strings.Builder) {
	k, d := p.k, p.d
	fmt.Fprintf(out, "// Code generated by onesource from DSL kernel %s (%s:%d). DO NOT EDIT.\n", k.Name, filepath.Base(k.Pos.File), k.Pos.Line)
	var caps []string
	if d.Caps.SubgroupSize > 1 {
		caps = append(caps, fmt.Sprintf("subgroup size %d", d.Caps.SubgroupSize))
	} else {
		caps = append(caps, "no subgroup shuffles")
	}
	if d.Caps.DotI8x4 {
		caps = append(caps, "packed int8 dot")
	} else {
		caps = append(caps, "int8 dot unpacked")
	}
	if d.Caps.Float16 {
		caps = append(caps, "f16 arithmetic")
	} else {
		caps = append(caps, "f16 storage only")
	}
	if islands := lower.NativeIslands(k); len(islands) > 0 {
		var names []string
		for _, i := range islands {
			names = append(names, i.String())
		}
		caps = append(caps, "native islands: "+strings.Join(names, ", "))
	}
	fmt.Fprintf(out, "// Backend: %s. Lowering target: %s; %s.\n", d.Name, d.Target, strings.Join(caps, ", "))
	for _, n := range d.Notes {
		fmt.Fprintf(out, "// %s\n", n)
	}
	var args []string
	for i, b := range k.Buffers {
		args = append(args, fmt.Sprintf("%s (%s %s)", p.bufNames[i], b.Elem, b.Access))
	}
	for i, x := range k.Params {
		args = append(args, fmt.Sprintf("%s (%s)", strings.TrimPrefix(p.paramExpr[i], "params."), x.Type))
	}
	for i := range k.Buffers {
		if p.lenExpr[i] != "" {
			args = append(args, fmt.Sprintf("%s (u32 element count of %s)", p.lenNames[i], p.bufNames[i]))
		}
	}
	fmt.Fprintf(out, "// Workgroup %dx%dx%d; arguments in order: %s.\n\n", k.WorkgroupSize[0], k.WorkgroupSize[1], k.WorkgroupSize[2], strings.Join(args, ", "))
}

// declareResources names the buffers, parameters, shared arrays and variables.
func (p *printer) declareResources() {
	k := p.k
	for _, b := range k.Buffers {
		p.bufNames = append(p.bufNames, p.names.fresh(b.Name))
		if b.Elem.Scalar == ir.F64 || b.Elem.Scalar == ir.Bool {
			p.errAt(b.Pos, "buffer %s: element type %s cannot be stored in a buffer", b.Name, b.Elem)
		}
		p.noteType(b.Elem, b.Pos)
	}
	if !p.cuda {
		p.paramsType = p.names.fresh(k.Name + "_params")
	}
	members := newNamer(p.d.Reserved) // MSL struct members live in their own scope
	for _, x := range k.Params {
		if p.cuda {
			p.paramExpr = append(p.paramExpr, p.names.fresh(x.Name))
		} else {
			p.paramExpr = append(p.paramExpr, "params."+members.fresh(x.Name))
		}
		p.noteType(x.Type, x.Pos)
	}
	p.lenExpr = make([]string, len(k.Buffers))
	p.lenNames = make([]string, len(k.Buffers))
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op == ir.OpLen && in.Ref >= 0 && in.Ref < len(k.Buffers) && p.lenExpr[in.Ref] == "" {
			if p.cuda {
				p.lenNames[in.Ref] = p.names.fresh(k.Buffers[in.Ref].Name + "_len")
				p.lenExpr[in.Ref] = p.lenNames[in.Ref]
			} else {
				p.lenNames[in.Ref] = members.fresh(k.Buffers[in.Ref].Name + "_len")
				p.lenExpr[in.Ref] = "params." + p.lenNames[in.Ref]
			}
		}
		return true
	})
	for _, s := range k.Shared {
		p.sharedNames = append(p.sharedNames, p.names.fresh(s.Name))
		p.noteType(s.Elem, s.Pos)
	}
	for _, x := range k.Vars {
		p.varNames = append(p.varNames, p.names.fresh(x.Name))
		p.noteType(x.Type, x.Pos)
	}
}

// kernelLocals declares the shared arrays and the variables at the top of the kernel.
func (p *printer) kernelLocals() {
	for i, s := range p.k.Shared {
		qual := "__shared__"
		if !p.cuda {
			qual = "threadgroup"
		}
		p.line("%s %s %s[%d];", qual, p.typeName(s.Elem, s.Pos), p.sharedNames[i], s.Len)
	}
	for i, x := range p.k.Vars {
		if p.forVars[i] {
			continue // declared by its for statement
		}
		p.line("%s %s;", p.typeName(x.Type, x.Pos), p.varNames[i])
	}
}

// signature writes the parameter struct (MSL) and the kernel's first line(s).
func (p *printer) signature(out *strings.Builder) {
	k := p.k
	hasLen := false
	for _, l := range p.lenExpr {
		hasLen = hasLen || l != ""
	}
	if p.cuda {
		var args []string
		for i, b := range k.Buffers {
			c := ""
			if b.Access == ir.ReadOnly {
				c = "const "
			}
			args = append(args, fmt.Sprintf("%s%s* %s", c, p.typeName(b.Elem, b.Pos), p.bufNames[i]))
		}
		for i, x := range k.Params {
			args = append(args, fmt.Sprintf("%s %s", p.typeName(x.Type, x.Pos), p.paramExpr[i]))
		}
		for i := range k.Buffers {
			if p.lenExpr[i] != "" {
				args = append(args, "unsigned int "+p.lenNames[i])
			}
		}
		fmt.Fprintf(out, "extern \"C\" __global__ void __launch_bounds__(%d) %s(%s) {\n", k.Lanes(), k.Name, strings.Join(args, ", "))
		return
	}
	if len(k.Params) > 0 || hasLen {
		fmt.Fprintf(out, "struct %s {\n", p.paramsType)
		for i, x := range k.Params {
			fmt.Fprintf(out, "\t%s %s;\n", p.typeName(x.Type, x.Pos), strings.TrimPrefix(p.paramExpr[i], "params."))
		}
		for i := range k.Buffers {
			if p.lenExpr[i] != "" {
				fmt.Fprintf(out, "\tuint %s;\n", p.lenNames[i])
			}
		}
		out.WriteString("};\n\n")
	}
	var args []string
	for i, b := range k.Buffers {
		c := ""
		if b.Access == ir.ReadOnly {
			c = "const "
		}
		args = append(args, fmt.Sprintf("%sdevice %s* %s [[buffer(%d)]]", c, p.typeName(b.Elem, b.Pos), p.bufNames[i], i))
	}
	if len(k.Params) > 0 || hasLen {
		args = append(args, fmt.Sprintf("constant %s& params [[buffer(%d)]]", p.paramsType, len(k.Buffers)))
	}
	args = append(args,
		"uint3 gid [[thread_position_in_grid]]",
		"uint3 lid [[thread_position_in_threadgroup]]",
		"uint3 wgid [[threadgroup_position_in_grid]]",
		"uint3 nwg [[threadgroups_per_grid]]",
		"uint lidx [[thread_index_in_threadgroup]]",
		"uint sgsize [[threads_per_simdgroup]]",
		"uint lane [[thread_index_in_simdgroup]]",
		"uint sgid [[simdgroup_index_in_threadgroup]]")
	fmt.Fprintf(out, "kernel void %s(\n\t%s) {\n", k.Name, strings.Join(args, ",\n\t"))
}

// Blocks and control flow.

func (p *printer) block(b *ir.Block) { p.blockFrom(b, 0) }

// blockFrom prints b.Insts[start:] and reports whether it ended at a terminator.
func (p *printer) blockFrom(b *ir.Block, start int) bool {
	for _, in := range b.Insts[start:] {
		if p.err != nil {
			return false
		}
		p.stmt(in)
		if in.Op.IsTerminator() {
			return true // what follows never runs
		}
	}
	return false
}

// stmt prints one instruction of a block, following the plan: a variable load read by the
// variable's name and a store absorbed into a for statement print nothing.
func (p *printer) stmt(in *ir.Inst) {
	switch {
	case p.absorbed[in]:
		p.cur = in.Pos
	case p.substituted(in):
		p.cur = in.Pos
		p.vals[in] = &value{t: in.Type, name: p.varNames[in.Ref]}
	case p.compound(in):
		p.cur = in.Pos
		p.line("%s;", p.assign(in))
	default:
		p.inst(in)
	}
}

// silently prints instructions the plan says write no text (their values are written where
// they are used); any text they write is an internal error.
func (p *printer) silently(insts []*ir.Inst) {
	mark := p.body.Len()
	for _, in := range insts {
		p.stmt(in)
	}
	if p.body.Len() != mark {
		p.errAt(ir.Pos{}, "internal printer error: a loop header's instructions wrote text")
	}
}

func (p *printer) nested(b *ir.Block) {
	p.ind++
	p.block(b)
	p.ind--
}

func (p *printer) control(in *ir.Inst) {
	switch in.Op {
	case ir.OpIf:
		p.line("if (%s) {", strip(p.lane(in.Args[0], 0)))
		p.nested(in.Blocks[0])
		if len(in.Blocks[1].Insts) > 0 {
			p.line("} else {")
			p.nested(in.Blocks[1])
		}
		p.line("}")
	case ir.OpLoop:
		if pl := p.loops[in]; pl != nil && !pl.general {
			p.plainLoop(in, pl)
			return
		}
		var flag string
		for {
			flag = fmt.Sprintf("loop%d_first", p.loopN)
			p.loopN++
			if p.names.exact(flag) {
				break
			}
		}
		p.line("for (bool %s = true;; %s = false) {", flag, flag)
		p.ind++
		p.line("if (!%s) {", flag)
		p.nested(in.Blocks[1])
		p.line("}")
		p.block(in.Blocks[0])
		p.ind--
		p.line("}")
	case ir.OpBreak:
		p.line("break;")
	case ir.OpContinue:
		p.line("continue;")
	case ir.OpReturn:
		p.line("return;")
	case ir.OpBarrier:
		p.line("%s;", p.d.Barrier)
	}
}

// plainLoop prints a loop as `for (;;)`, `while (cond)` or `for (init; cond; update)` (see
// fold.go for when each applies).
func (p *printer) plainLoop(in *ir.Inst, pl *loopPlan) {
	body, cont := in.Blocks[0], in.Blocks[1]
	start := 0
	var cond, update, init string
	if pl.cond != nil {
		p.silently(body.Insts[:pl.condAt])
		c := pl.cond.Args[0]
		if pl.breakOn {
			cond = p.negate(c)
		} else {
			cond = strip(p.lane(c, 0))
		}
		start = pl.condAt + 1
	}
	if pl.update {
		update = p.update(cont)
	}
	if st := pl.init; st != nil {
		x := p.k.Vars[st.Ref]
		init = fmt.Sprintf("%s %s = %s", p.typeName(x.Type, x.Pos), p.varNames[st.Ref], strip(p.whole(st.Args[0])))
	}
	p.cur = in.Pos
	switch {
	case init != "" || update != "":
		h := "for (" + init + ";"
		if cond != "" {
			h += " " + cond
		}
		h += ";"
		if update != "" {
			h += " " + update
		}
		p.line("%s) {", h)
	case cond != "":
		p.line("while (%s) {", cond)
	default:
		p.line("for (;;) {")
	}
	p.ind++
	ended := p.blockFrom(body, start)
	if pl.tail && !ended {
		p.block(cont)
	}
	p.ind--
	p.line("}")
}

// negate returns the condition !c, inverting a folded not or integer comparison in place.
func (p *printer) negate(c *ir.Inst) string {
	if p.folded(c) && len(c.Args) > 0 && c.Args[0].Type.Lanes == 1 {
		a := c.Args[0]
		inv := map[ir.Op]string{ir.OpEq: "!=", ir.OpNe: "==", ir.OpLt: ">=", ir.OpLe: ">", ir.OpGt: "<=", ir.OpGe: "<"}
		switch s := a.Type.Scalar; {
		case c.Op == ir.OpNot && s == ir.Bool:
			return strip(p.lane(a, 0))
		case c.Op.IsCompare() && (s == ir.I32 || s == ir.U32 || (s == ir.Bool && (c.Op == ir.OpEq || c.Op == ir.OpNe))):
			return p.lane(a, 0) + " " + inv[c.Op] + " " + p.lane(c.Args[1], 0)
		}
	}
	x := p.lane(c, 0)
	if x[0] == '(' && strip(x) == x {
		x = "(" + x + ")" // a cast
	}
	return "!" + x
}

// update returns the continuing block cont (folded values and variable stores only) as one
// comma expression of assignments; `x = x + e` on u32 is written `x += e`.
func (p *printer) update(cont *ir.Block) string {
	mark := p.body.Len()
	var parts []string
	for _, in := range cont.Insts {
		if in.Op != ir.OpStore {
			p.stmt(in)
			continue
		}
		p.cur = in.Pos
		parts = append(parts, p.assign(in))
	}
	if p.body.Len() != mark {
		p.errAt(ir.Pos{}, "internal printer error: a loop's update wrote text")
	}
	return strings.Join(parts, ", ")
}

// compound reports whether the variable store in is `x = x + e` or `x = x - e` on u32 with
// the load of x read by name: `x += e` says the same (unsigned arithmetic wraps either way).
func (p *printer) compound(in *ir.Inst) bool {
	if in.Op != ir.OpStore || in.Mem != ir.MemVar || len(in.Args) != 1 {
		return false
	}
	v := in.Args[0]
	if (v.Op != ir.OpAdd && v.Op != ir.OpSub) || v.Type != ir.TU32 || !p.folded(v) {
		return false
	}
	l := v.Args[0]
	return l.Op == ir.OpLoad && l.Mem == ir.MemVar && l.Ref == in.Ref && p.substituted(l)
}

// assign returns the variable store in as a C assignment without the semicolon.
func (p *printer) assign(in *ir.Inst) string {
	name := p.varNames[in.Ref]
	v := in.Args[len(in.Args)-1]
	if p.compound(in) {
		op := map[ir.Op]string{ir.OpAdd: " += ", ir.OpSub: " -= "}[v.Op]
		return name + op + strip(p.lane(v.Args[1], 0))
	}
	x := p.whole(v)
	if elem := p.k.Vars[in.Ref].Type; elem.Scalar.Widened() != elem.Scalar {
		x = p.cast(elem, x)
	}
	return name + " = " + strip(x)
}

// Values.

// decl declares in's value as `const T name = expr;`.
// A value the plan folds is kept as its expression, written where it is used.
func (p *printer) decl(in *ir.Inst, expr string) {
	if p.folded(in) {
		p.vals[in] = &value{t: in.Type, lit: []string{expr}}
		return
	}
	name := p.valueName(in)
	p.line("const %s %s = %s;", p.typeName(in.Type, in.Pos), name, strip(expr))
	p.vals[in] = &value{t: in.Type, name: name}
}

func (p *printer) valueName(in *ir.Inst) string {
	if in.Name != "" {
		return p.names.fresh(in.Name)
	}
	return p.names.fresh(fmt.Sprintf("v%d", p.numbers[in]))
}

// get returns the printed form of an operand.
func (p *printer) get(a *ir.Inst) *value {
	if v, ok := p.vals[a]; ok {
		return v
	}
	p.errAt(a.Pos, "%s value used before it is printed (dead code or a scoping bug)", a.Op)
	return &value{t: a.Type, lit: []string{"0"}}
}

// lane returns lane i of operand a as an expression (the scalar itself for scalars; a splat
// constant's one lane).
func (p *printer) lane(a *ir.Inst, i int) string {
	v := p.get(a)
	if v.lit != nil {
		if i < len(v.lit) {
			return v.lit[i]
		}
		return v.lit[0]
	}
	if v.t.Lanes <= 1 {
		return v.name
	}
	if p.cuda {
		return fmt.Sprintf("%s.v[%d]", v.name, i)
	}
	return v.name + "." + "xyzw"[i:i+1]
}

// whole returns operand a as one expression of its type.
func (p *printer) whole(a *ir.Inst) string {
	v := p.get(a)
	if v.name != "" {
		return v.name
	}
	if v.t.Lanes <= 1 {
		return v.lit[0]
	}
	lanes := make([]string, v.t.Lanes)
	for i := range lanes {
		lanes[i] = p.lane(a, i)
	}
	return p.compose(v.t, lanes, a.Pos)
}

// compose builds a vector of type t from lane expressions.
func (p *printer) compose(t ir.Type, lanes []string, pos ir.Pos) string {
	for i := range lanes {
		lanes[i] = strip(lanes[i])
	}
	if p.cuda {
		return fmt.Sprintf("%s{{%s}}", p.typeName(t, pos), strings.Join(lanes, ", "))
	}
	return fmt.Sprintf("%s(%s)", p.typeName(t, pos), strings.Join(lanes, ", "))
}

// strip removes one pair of parentheses enclosing the whole of s.
func strip(s string) string {
	if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' {
		return s
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(s)-1 {
				return s
			}
		}
	}
	return s[1 : len(s)-1]
}
