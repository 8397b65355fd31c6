package cfamily

import (
	"sort"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// The printing plan: which values are written in place in the one expression that uses them,
// which variable loads read the variable itself where they are used, and how each loop is
// written. Every decision keeps the order and the rounding of the IR's evaluation exactly:
//
//   - A value is written in place (folded) only into its single user in the same block, and only
//     where that user's text names the operand exactly once. Pure operations move freely within
//     the block (they read no memory and never trap: the integer division helpers are total);
//     a buffer or shared load moves only when nothing between it and the place its user is
//     evaluated writes memory, synchronizes or branches, and never into an operand evaluated
//     conditionally (a select's arms, the right side of && and ||). Named values keep their
//     declarations, so the user's names stay in the text.
//   - Where the dialect writes float + - * / as plain C operators (HIP, MSL), a float operation
//     is never folded into another float operation: C may contract a*b+c into an FMA only
//     within one expression, so the text keeps one statement per rounding as before, and a
//     build that forgot -ffp-contract=off still cannot fuse. CUDA's __fadd_rn etc. are explicit
//     calls and fold freely.
//   - A load of a private variable (OpLoad of MemVar) reads the variable by name at every use
//     when no store to that variable can run between the load and the last use.
//   - A loop whose body begins with `if (c) break;` (after instructions that all fold into c)
//     has the condition !c in its header; a continuing block of folded values and variable
//     stores is the for statement's update expression; a store to a variable used by nothing
//     but the loop, right before it, becomes the for statement's declaration. A continuing
//     block no `continue` reaches is printed at the end of the body. Everything else keeps the
//     general form, which runs the continuing block first on every iteration but the first.

// instInfo is what the plan knows about one instruction.
type instInfo struct {
	block    *ir.Block
	depth    int      // nesting depth of block
	end      int      // preorder number of the last instruction nested in this one (itself if none)
	user     *ir.Inst // a user (the only one when the value has one use)
	outer    int      // the largest index in block of an instruction with a use nested in it; -1: none
	lastEval int      // the largest index in block where a same-block use is evaluated; -1: none
	evalAt   int      // the index in block where this instruction's value is evaluated
	size     int      // operations in this instruction's printed expression, folded operands included
	fold     bool     // written in place in its user's expression
	subst    bool     // a variable load read by the variable's name at its uses
}

// loopPlan says how one loop is printed.
type loopPlan struct {
	general bool     // the general form (the flag that skips the continuing block once)
	cond    *ir.Inst // the If of the body's leading `if (c) break;`, or nil
	condAt  int      // its index in the body
	breakOn bool     // the loop leaves when cond's condition is true (the break is in the then branch)
	update  bool     // the continuing block is the for statement's update expression
	tail    bool     // the continuing block is printed at the end of the body
	init    *ir.Inst // the variable store before the loop that declares the for's variable, or nil
}

// planOff turns the plan off (tests only): every value is declared and every loop takes the
// general form, the printer's first, plainest output, against which the tests check that the
// plan changes no result.
var planOff bool

// plan computes the printing plan of the kernel body: p.pre, p.info, p.loops, p.absorbed and
// p.forVars. It takes time linear in the kernel's size (a few binary searches per variable
// load), whatever the nesting depth.
func (p *printer) plan() {
	p.pre = map[*ir.Inst]int{}
	p.loops = map[*ir.Inst]*loopPlan{}
	p.absorbed = map[*ir.Inst]bool{}
	p.forVars = map[int]bool{}
	p.varStores = make([][]int, len(p.k.Vars))
	p.varAccess = make([][]int, len(p.k.Vars))
	p.hasContinue = map[*ir.Inst]bool{}
	if planOff {
		return
	}
	p.collect(p.k.Body, 0, nil)
	p.planBlock(p.k.Body)
}

// collect numbers the instructions in preorder and records, per value, a user and the outermost
// position of its nested uses; per variable, where it is stored and accessed; per loop, whether
// a continue targets it.
func (p *printer) collect(b *ir.Block, depth int, loop *ir.Inst) {
	p.stack = append(p.stack[:depth], 0)
	for i, in := range b.Insts {
		p.stack[depth] = i
		n := len(p.info)
		p.pre[in] = n
		p.info = append(p.info, instInfo{block: b, depth: depth, outer: -1, lastEval: -1, evalAt: i})
		for _, a := range in.Args {
			ai, ok := p.pre[a]
			if !ok {
				continue // not verified; Print reports it
			}
			f := &p.info[ai]
			f.user = in
			if f.block != b && f.depth < len(p.stack) {
				f.outer = max(f.outer, p.stack[f.depth])
			}
		}
		if in.Mem == ir.MemVar && in.Ref >= 0 && in.Ref < len(p.k.Vars) {
			switch in.Op {
			case ir.OpStore, ir.OpAtomic:
				p.varStores[in.Ref] = append(p.varStores[in.Ref], n)
				p.varAccess[in.Ref] = append(p.varAccess[in.Ref], n)
			case ir.OpLoad:
				p.varAccess[in.Ref] = append(p.varAccess[in.Ref], n)
			}
		}
		if in.Op == ir.OpContinue && loop != nil {
			p.hasContinue[loop] = true
		}
		for bi, nb := range in.Blocks {
			inner := loop
			if in.Op == ir.OpLoop && bi == 0 {
				inner = in
			}
			p.collect(nb, depth+1, inner)
		}
		p.info[n].end = len(p.info) - 1
	}
}

func (p *printer) infoOf(in *ir.Inst) *instInfo {
	if n, ok := p.pre[in]; ok {
		return &p.info[n]
	}
	return nil
}

// folded reports whether in is written in place in its user's expression.
func (p *printer) folded(in *ir.Inst) bool {
	f := p.infoOf(in)
	return f != nil && f.fold
}

// substituted reports whether in is a variable load read by the variable's name.
func (p *printer) substituted(in *ir.Inst) bool {
	f := p.infoOf(in)
	return f != nil && f.subst
}

// silent reports whether printing in writes no text.
func (p *printer) silent(in *ir.Inst) bool {
	switch in.Op {
	case ir.OpConst, ir.OpParam, ir.OpLen:
		return true
	}
	f := p.infoOf(in)
	return f != nil && (f.fold || f.subst)
}

// planBlock decides the folds and variable reads of b (after its nested blocks), then the form
// of each loop in b.
func (p *printer) planBlock(b *ir.Block) {
	for _, in := range b.Insts {
		for _, nb := range in.Blocks {
			p.planBlock(nb)
		}
	}
	n := len(b.Insts)
	// moves[i] counts the instructions among b.Insts[:i] no load may be moved across.
	moves := make([]int32, n+1)
	for i, in := range b.Insts {
		moves[i+1] = moves[i]
		if !loadMovesAcross(in) {
			moves[i+1]++
		}
	}
	for i := n - 1; i >= 0; i-- {
		in := b.Insts[i]
		f := &p.info[p.pre[in]]
		f.evalAt = i
		switch {
		case p.canSubst(in, f, b):
			f.subst = true
		case p.canFold(in, f, b, i, moves):
			f.fold = true
			f.evalAt = p.info[p.pre[f.user]].evalAt
		}
		for _, a := range in.Args {
			if ai, ok := p.pre[a]; ok && p.info[ai].block == b {
				p.info[ai].lastEval = max(p.info[ai].lastEval, f.evalAt)
			}
		}
	}
	p.limitFolds(b)
	for i, in := range b.Insts {
		if in.Op == ir.OpLoop {
			p.planLoop(b, i, in)
		}
	}
}

// maxFoldOps is the largest size (operations, weighted by opWeight) of one printed expression: folding stops there, so a
// long chain of single-use values reads as several statements rather than one line.
const maxFoldOps = 5

// opWeight is what one operation adds to an expression's size: 2 where its text wraps the
// operands in casts (signed integer arithmetic goes through unsigned, f16 through f32).
func opWeight(in *ir.Inst) int {
	switch in.Type.Scalar {
	case ir.I32:
		switch in.Op {
		case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpNeg, ir.OpAbs, ir.OpShl:
			return 2
		}
	case ir.F16:
		if pureOp(in.Op) && in.Op != ir.OpSelect {
			return 2
		}
	}
	return 1
}

// limitFolds keeps every expression of b within maxFoldOps operations, declaring the largest
// folded operands where one would grow past it. Declaring a folded value is always exact: it
// is then evaluated at its own place, earlier than its user, with nothing in between that a
// fold was allowed to move it across.
func (p *printer) limitFolds(b *ir.Block) {
	for _, in := range b.Insts {
		f := &p.info[p.pre[in]]
		f.size = opWeight(in)
		var parts []*instInfo
		for _, a := range in.Args {
			if af := p.infoOf(a); af != nil && af.fold {
				f.size += af.size
				parts = append(parts, af)
			}
		}
		if f.size <= maxFoldOps {
			continue
		}
		sort.SliceStable(parts, func(x, y int) bool { return parts[x].size > parts[y].size })
		for _, af := range parts {
			if f.size <= maxFoldOps {
				break
			}
			af.fold = false
			f.size -= af.size
		}
	}
}

// loadMovesAcross reports whether a buffer or shared load may be evaluated after in instead of
// before it: in writes no such memory, does not synchronize and does not branch.
func loadMovesAcross(in *ir.Inst) bool {
	switch {
	case in.Op == ir.OpStore:
		return in.Mem == ir.MemVar
	case in.Op == ir.OpConst || in.Op == ir.OpParam || in.Op == ir.OpLen || in.Op == ir.OpBuiltin || in.Op == ir.OpLoad:
		return true
	}
	return pureOp(in.Op)
}

// pureOp reports whether op computes its result from its operands alone (no memory, no
// subgroup exchange, no trap: the printed integer division is total).
func pureOp(op ir.Op) bool {
	switch op {
	case ir.OpNeg, ir.OpNot, ir.OpAbs, ir.OpSqrt, ir.OpFloor,
		ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpMin, ir.OpMax,
		ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr,
		ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe,
		ir.OpSelect, ir.OpConvert, ir.OpBitcast, ir.OpExtract, ir.OpDotI8x4:
		return true
	}
	return false
}

// canSubst reports whether the variable load in may be read by the variable's name at each
// use: no store to the variable runs between the load and the last evaluation of a use.
func (p *printer) canSubst(in *ir.Inst, f *instInfo, b *ir.Block) bool {
	if in.Op != ir.OpLoad || in.Mem != ir.MemVar || in.Ref < 0 || in.Ref >= len(p.k.Vars) || len(in.Args) != 0 {
		return false
	}
	if in.Name != "" && in.Name != p.k.Vars[in.Ref].Name {
		return false // the load carries a name of its own: keep it
	}
	// The reads happen up to the start of the last instruction evaluating a use as its operand
	// (an instruction reads its operands before it writes or runs nested code), and up to the
	// end of the last instruction with a use nested in it.
	hi := -1
	if f.lastEval >= 0 {
		hi = p.pre[b.Insts[f.lastEval]] - 1
	}
	if f.outer >= 0 {
		hi = max(hi, p.info[p.pre[b.Insts[f.outer]]].end)
	}
	if hi < 0 {
		return true
	}
	stores := p.varStores[in.Ref]
	j := sort.SearchInts(stores, p.pre[in]+1)
	return j == len(stores) || stores[j] > hi
}

// canFold reports whether the value in (index i of b) may be written in place in its user.
func (p *printer) canFold(in *ir.Inst, f *instInfo, b *ir.Block, i int, moves []int32) bool {
	if in.Name != "" || in.Type.Lanes != 1 || in.Type == ir.TVoid || p.useCnt[in] != 1 || f.user == nil {
		return false
	}
	load := in.Op == ir.OpLoad && (in.Mem == ir.MemBuffer || in.Mem == ir.MemShared)
	if !load && !pureOp(in.Op) && in.Op != ir.OpBuiltin {
		return false
	}
	u := f.user
	uf := p.infoOf(u)
	if uf == nil || uf.block != b {
		return false // a use in a nested block may run more often (a loop) or not at all
	}
	slot := -1
	for j, a := range u.Args {
		if a == in {
			slot = j
			break
		}
	}
	ok, conditional := p.slotTakesExpr(u, slot)
	if !ok || !p.keepsRounding(in, u) {
		return false
	}
	if load {
		if conditional {
			return false
		}
		if e := uf.evalAt; e < i || moves[e] != moves[i+1] {
			return false
		}
	}
	return true
}

// slotTakesExpr reports whether operand slot of u may be an expression: u's text names it
// exactly once, where an expression fits. conditional says the operand is not evaluated every
// time u is (a select's arms, the right side of && and ||).
func (p *printer) slotTakesExpr(u *ir.Inst, slot int) (ok, conditional bool) {
	if slot < 0 {
		return false, false
	}
	scalar := u.Type.Lanes == 1
	switch u.Op {
	case ir.OpNeg, ir.OpNot, ir.OpSqrt, ir.OpFloor, ir.OpConvert:
		return scalar, false
	case ir.OpAbs:
		return scalar && u.Type.Scalar != ir.I32, false // i32 abs names its operand twice
	case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpXor, ir.OpShl, ir.OpShr,
		ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe:
		return scalar && u.Args[0].Type.Lanes == 1, false
	case ir.OpAnd, ir.OpOr:
		return scalar, u.Type.Scalar == ir.Bool && slot == 1
	case ir.OpSelect:
		return scalar, slot > 0
	case ir.OpBitcast:
		return scalar && u.Args[0].Type.Lanes == 1, false
	case ir.OpCompose:
		return true, false
	case ir.OpLoad:
		return u.Mem == ir.MemBuffer || u.Mem == ir.MemShared, false
	case ir.OpStore:
		return u.Args[slot].Type.Lanes == 1, false
	case ir.OpIf:
		return true, false
	case ir.OpShuffleXor:
		return scalar && formatTakesExprs(p.d.ShuffleXor, 2), false
	case ir.OpDotI8x4:
		return formatTakesExprs(p.d.Dot, 2), false
	}
	return false, false
}

// formatTakesExprs reports whether the dialect format names each of its first n operands
// (%[1]s ...) exactly once, as a whole argument or after a cast: `(`, `, ` or `)` before it and
// `,` or `)` after it.
func formatTakesExprs(format string, n int) bool {
	for i := 1; i <= n; i++ {
		verb := "%[" + string(rune('0'+i)) + "]s"
		if strings.Count(format, verb) != 1 {
			return false
		}
		at := strings.Index(format, verb)
		before, after := format[:at], format[at+len(verb):]
		if !(strings.HasSuffix(before, "(") || strings.HasSuffix(before, ", ") || strings.HasSuffix(before, ")")) ||
			!(strings.HasPrefix(after, ",") || strings.HasPrefix(after, ")")) {
			return false
		}
	}
	return true
}

// keepsRounding reports whether folding in into u keeps every float rounding where a compiler
// cannot move it: where float arithmetic is spelled as C operators, a float operation's
// operands may only be loads and conversions from integers, so a*b+c never forms in one
// expression (C allows contraction only within an expression).
func (p *printer) keepsRounding(in, u *ir.Inst) bool {
	if !u.Type.Scalar.IsFloat() {
		return true
	}
	switch u.Op {
	case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpNeg:
	default:
		return true
	}
	ops := p.d.F32
	if u.Type.Scalar == ir.F64 {
		ops = p.d.F64
	}
	if ops.Add != "" && ops.Sub != "" && ops.Mul != "" && ops.Div != "" {
		return true // explicitly rounded calls
	}
	switch in.Op {
	case ir.OpLoad:
		return true
	case ir.OpConvert, ir.OpBitcast:
		return !in.Args[0].Type.Scalar.IsFloat()
	}
	return false
}

// planLoop decides the printed form of the loop lp, index j of block b.
func (p *printer) planLoop(b *ir.Block, j int, lp *ir.Inst) {
	body, cont := lp.Blocks[0], lp.Blocks[1]
	pl := &loopPlan{}
	p.loops[lp] = pl
	for k, in := range body.Insts {
		if p.silent(in) {
			continue
		}
		if in.Op == ir.OpIf && len(in.Args) == 1 && in.Args[0].Type == ir.TBool {
			then, els := in.Blocks[0].Insts, in.Blocks[1].Insts
			switch {
			case isBreak(then) && len(els) == 0:
				pl.cond, pl.condAt, pl.breakOn = in, k, true
			case len(then) == 0 && isBreak(els):
				pl.cond, pl.condAt = in, k
			}
		}
		break
	}
	switch {
	case len(cont.Insts) == 0:
	case p.simpleUpdate(cont):
		pl.update = true
	case !p.hasContinue[lp]:
		pl.tail = true
	default:
		pl.general, pl.cond = true, nil
		return
	}
	if !pl.update || j == 0 {
		return
	}
	st := b.Insts[j-1]
	if st.Op != ir.OpStore || st.Mem != ir.MemVar || st.Ref < 0 || st.Ref >= len(p.k.Vars) || len(st.Args) != 1 {
		return
	}
	x := p.k.Vars[st.Ref]
	if x.Type.Lanes != 1 || x.Type.Scalar.Widened() != x.Type.Scalar {
		return
	}
	counted := false
	for _, in := range cont.Insts {
		counted = counted || (in.Op == ir.OpStore && in.Mem == ir.MemVar && in.Ref == st.Ref)
	}
	acc := p.varAccess[st.Ref]
	if !counted || len(acc) == 0 || acc[0] < p.pre[st] || acc[len(acc)-1] > p.info[p.pre[lp]].end {
		return // the variable is used outside the loop
	}
	pl.init = st
	p.absorbed[st] = true
	p.forVars[st.Ref] = true
}

func isBreak(insts []*ir.Inst) bool { return len(insts) == 1 && insts[0].Op == ir.OpBreak }

// simpleUpdate reports whether the continuing block cont is nothing but folded values and
// stores to variables (at least one): one comma expression.
func (p *printer) simpleUpdate(cont *ir.Block) bool {
	stores := 0
	for _, in := range cont.Insts {
		switch {
		case in.Op == ir.OpStore && in.Mem == ir.MemVar && len(in.Args) == 1 && in.Args[0].Type.Lanes == 1:
			stores++
		case !p.silent(in):
			return false
		}
	}
	return stores > 0
}
