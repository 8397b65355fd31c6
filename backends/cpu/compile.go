package cpu

import (
	"fmt"
	"sort"

	"github.com/onesource-go/onesource/ir"
)

// The compiler turns a lowered kernel into closures (steps) that run one instruction for every
// invocation of a workgroup at once. Every IR value has a place in the frame (frame.w for 32-bit
// words, frame.d for f64): a varying value one word per invocation and component (component c of
// a varying value is the run [off + c*L, off + c*L + L), L the workgroup's invocations), a
// uniform value (the same for every invocation: constants, parameters, workgroup ids, what is
// computed from them only, loads at a uniform index, variables only ever set to such values
// under uniform control) one word per component. Places are reused once a value is dead
// (linear scan over program order; a value used in a loop it was defined outside of lives to the
// loop's end). Extracts and bit-preserving casts take no step: they view their operand's place.

//go:generate go run genops.go

// opKind keys the tables of ops_gen.go.
type opKind struct {
	op ir.Op
	s  ir.Scalar
}

// loc is where a value lives.
type loc struct {
	off  int  // word offset of component 0 in frame.w (or frame.d when wide)
	uni  bool // one word per component, else one per invocation
	wide bool // f64: frame.d
}

// code is a compiled kernel.
type code struct {
	k      *ir.Kernel
	L, nw  int // invocations per workgroup, mask words
	S      int // subgroup size
	wsize  int // frame.w words
	dsize  int // frame.d words
	nmasks int // scratch masks
	body   *block
	init   frameInit
	vars   [2][2]int // [w, d] x [start, end): the variables' words, zeroed per workgroup
	shared []int     // bytes of each shared array
	bufs   []bufInfo
	params int
}

// bufInfo is what a dispatch needs to know about a buffer binding.
type bufInfo struct {
	name   string
	stride int
	atomic bool // the kernel makes atomic accesses to it: its bytes must be 4-byte aligned
}

// frameInit says how to fill the static places of a frame.
type frameInit struct {
	w32    []wordInit    // constants, once per frame
	w64    []dwordInit   // f64 constants
	lanes  []builtinInit // per-invocation builtins (local index, ids, subgroup lane), once per frame
	params []refInit     // once per dispatch: parameter Ref at off
	lens   []refInit     // once per dispatch: element count of buffer Ref
	numWG  []refInit     // once per dispatch: workgroup count of dimension Ref
	wgID   []refInit     // per workgroup: workgroup id of dimension Ref
	gID    []refInit     // per workgroup, varying: global id of dimension Ref
}

type wordInit struct {
	off int
	val uint32
}

type dwordInit struct {
	off int
	val uint64
}

type refInit struct{ off, ref int }

type builtinInit struct {
	off int
	b   ir.Builtin
	dim int
}

// compiler holds the state of one compilation.
type compiler struct {
	k      *ir.Kernel
	L, nw  int
	S      int
	num    map[*ir.Inst]int      // program order (pre-order)
	end    map[*ir.Inst]int      // of an if or loop: the last number inside it
	loopOf map[*ir.Inst]*ir.Inst // the innermost loop around an instruction
	exits  map[*ir.Inst]bool     // an if or loop that holds a break, continue or return
	uni    map[*ir.Inst]bool
	varUni []bool
	view   map[*ir.Inst]view // values that view another's place
	locs   map[*ir.Inst]loc
	varLoc []loc
	wsize  int
	dsize  int
	nmasks int
	loops  []int // mask index of the active lanes of each enclosing loop
	out    *code
	errs   []error
}

// view is a value that takes no step: component comp (of a vector; 0 for the whole value) of of.
type view struct {
	of   *ir.Inst
	comp int
	all  bool // the whole value (a bit-preserving cast), not one component
}

// compile compiles k for subgroups of sg invocations (a power of two; SubgroupSize outside the
// package's tests).
func compile(k *ir.Kernel, sg int) (*code, error) {
	L := k.Lanes()
	c := &compiler{
		k: k, L: L, nw: (L + 63) / 64, S: sg,
		num: map[*ir.Inst]int{}, end: map[*ir.Inst]int{}, loopOf: map[*ir.Inst]*ir.Inst{},
		exits: map[*ir.Inst]bool{}, view: map[*ir.Inst]view{}, locs: map[*ir.Inst]loc{},
	}
	c.out = &code{k: k, L: L, nw: c.nw, S: c.S, params: len(k.Params)}
	c.supported(k.Body)
	if len(c.errs) > 0 {
		return nil, c.joined()
	}
	n := 0
	c.number(k.Body, nil, &n)
	c.uniformity()
	c.places()
	for _, b := range k.Buffers {
		c.out.bufs = append(c.out.bufs, bufInfo{name: b.Name, stride: b.Elem.Stride()})
	}
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op == ir.OpAtomic && in.Mem == ir.MemBuffer {
			c.out.bufs[in.Ref].atomic = true
		}
		return true
	})
	c.out.body = c.block(k.Body)
	if len(c.errs) > 0 {
		return nil, c.joined()
	}
	c.out.wsize, c.out.dsize, c.out.nmasks = c.wsize, c.dsize, c.nmasks
	for _, s := range k.Shared {
		c.out.shared = append(c.out.shared, s.Len*s.Elem.Stride())
	}
	return c.out, nil
}

func (c *compiler) errf(p ir.Pos, format string, args ...any) {
	if len(c.errs) < 20 {
		c.errs = append(c.errs, &ir.Error{Pos: p, Kernel: c.k.Name, Msg: "cpu: " + fmt.Sprintf(format, args...)})
	}
}

func (c *compiler) joined() error {
	if len(c.errs) == 1 {
		return c.errs[0]
	}
	msg := ""
	for i, e := range c.errs {
		if i > 0 {
			msg += "\n"
		}
		msg += e.Error()
	}
	return fmt.Errorf("%s", msg)
}

// valueKind reports whether the executor holds values of scalar kind s.
func valueKind(s ir.Scalar) bool {
	switch s {
	case ir.Bool, ir.I32, ir.U32, ir.F16, ir.F32, ir.F64:
		return true
	}
	return false
}

// elemKind reports whether the executor loads and stores elements of type t.
func elemKind(t ir.Type) bool {
	switch t.Scalar {
	case ir.I8, ir.U8, ir.I16, ir.U16, ir.F16, ir.I32, ir.U32, ir.F32:
		return t.Lanes == 1 || t.Scalar.Bits() == 32
	}
	return false
}

// supported reports, as capability errors at their lines, the instructions the executor does not
// implement: operations it does not know (newer than this executor), OpReduce (lower expands it),
// and value or element types that lower legalizes away (narrow integers and bf16 as values).
func (c *compiler) supported(b *ir.Block) {
	for _, in := range b.Insts {
		switch in.Op {
		case ir.OpConst, ir.OpBuiltin, ir.OpParam, ir.OpLoad, ir.OpStore, ir.OpAtomic, ir.OpLen,
			ir.OpNeg, ir.OpNot, ir.OpAbs, ir.OpSqrt, ir.OpFloor, ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv,
			ir.OpRem, ir.OpMin, ir.OpMax, ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr,
			ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpSelect, ir.OpConvert, ir.OpBitcast,
			ir.OpCompose, ir.OpExtract, ir.OpDotI8x4, ir.OpShuffleXor, ir.OpShuffle, ir.OpSubgroupReduce, ir.OpNative, ir.OpFma,
			ir.OpIf, ir.OpLoop, ir.OpBreak, ir.OpContinue, ir.OpReturn, ir.OpBarrier:
		case ir.OpReduce:
			c.errf(in.Pos, "reduce is not lowered: compile with cpu.Compile, or lower with cpu.Caps first")
			continue
		default:
			c.errf(in.Pos, "operation %s is not supported by the CPU executor", in.Op)
			continue
		}
		if in.Type != ir.TVoid && !valueKind(in.Type.Scalar) {
			c.errf(in.Pos, "%s: values of type %s are not supported by the CPU executor (package lower legalizes them for cpu.Caps)", in.Op, in.Type)
		}
		for _, a := range in.Args {
			if !valueKind(a.Type.Scalar) {
				c.errf(in.Pos, "%s: operand of type %s is not supported by the CPU executor", in.Op, a.Type)
				break
			}
		}
		switch in.Op {
		case ir.OpLoad, ir.OpStore, ir.OpAtomic:
			if elem := c.elem(in); in.Mem != ir.MemVar && !elemKind(elem) {
				c.errf(in.Pos, "%s: elements of type %s are not supported by the CPU executor", in.Op, elem)
			}
			if in.Op == ir.OpAtomic {
				switch ir.AtomicOp(in.Aux) {
				case ir.AtomicAdd, ir.AtomicMin, ir.AtomicMax, ir.AtomicExchange, ir.AtomicCmpXchg, ir.AtomicAnd, ir.AtomicOr, ir.AtomicXor:
				default:
					c.errf(in.Pos, "atomic %s is not supported by the CPU executor", ir.AtomicOp(in.Aux))
				}
			}
		}
		for _, nb := range in.Blocks {
			c.supported(nb)
		}
	}
}

// elem is the element type a memory instruction addresses.
func (c *compiler) elem(in *ir.Inst) ir.Type {
	switch in.Mem {
	case ir.MemBuffer:
		return c.k.Buffers[in.Ref].Elem
	case ir.MemShared:
		return c.k.Shared[in.Ref].Elem
	}
	return c.k.Vars[in.Ref].Type
}

// number gives every instruction its place in program order and finds the loops around it and
// the ifs and loops that hold exits.
func (c *compiler) number(b *ir.Block, loop *ir.Inst, n *int) bool {
	exits := false
	for _, in := range b.Insts {
		c.num[in] = *n
		*n++
		c.loopOf[in] = loop
		inner := loop
		if in.Op == ir.OpLoop {
			inner = in
		}
		sub := false
		for _, nb := range in.Blocks {
			if c.number(nb, inner, n) {
				sub = true
			}
		}
		if len(in.Blocks) > 0 {
			c.end[in] = *n - 1
			c.exits[in] = sub
		}
		if sub || in.Op == ir.OpBreak || in.Op == ir.OpContinue || in.Op == ir.OpReturn {
			exits = true
		}
	}
	return exits
}

// Uniform is the executor's uniformity analysis of a kernel lowered for subgroups of sg
// invocations: vals[in] says that value in is the same for every invocation of a workgroup that
// computes it (constants, parameters, workgroup ids, what is computed from them only, loads at
// such an index, variables only ever set to such values under uniform control), vars[i] that
// variable i is. The native CPU backend (backends/native) compiles its lockstep code from the
// same facts.
func Uniform(k *ir.Kernel, sg int) (vals map[*ir.Inst]bool, vars []bool) {
	c := &compiler{k: k, L: k.Lanes(), S: sg}
	c.uniformity()
	return c.uni, c.varUni
}

// uniformity finds the uniform values and variables (see the comment at the top of the file): an
// optimistic start (every variable uniform), walks until nothing changes.
func (c *compiler) uniformity() {
	c.varUni = make([]bool, len(c.k.Vars))
	for i := range c.varUni {
		c.varUni[i] = true
	}
	for {
		c.uni = make(map[*ir.Inst]bool, len(c.num))
		changed := false
		c.uniBlock(c.k.Body, true, &changed)
		if !changed {
			return
		}
	}
}

// uniBlock walks b; ctrl says every invocation that is still running runs b (an invocation that
// returned never reads a value again, so returns do not matter).
func (c *compiler) uniBlock(b *ir.Block, ctrl bool, changed *bool) {
	for _, in := range b.Insts {
		switch in.Op {
		case ir.OpIf:
			cu := ctrl && c.uni[in.Args[0]]
			c.uniBlock(in.Blocks[0], cu, changed)
			c.uniBlock(in.Blocks[1], cu, changed)
			continue
		case ir.OpLoop:
			c.uniBlock(in.Blocks[0], ctrl, changed)
			c.uniBlock(in.Blocks[1], ctrl, changed)
			if ctrl && c.divergentExit(in.Blocks[0], false) {
				// From the second iteration on, some invocations may have left: every variable
				// set in the loop may differ between invocations.
				c.markStores(in, changed)
			}
			continue
		case ir.OpStore:
			if in.Mem == ir.MemVar && c.varUni[in.Ref] && (!ctrl || !c.uni[in.Args[len(in.Args)-1]]) {
				c.varUni[in.Ref] = false
				*changed = true
			}
			continue
		}
		if in.Type != ir.TVoid {
			c.uni[in] = c.isUniform(in)
		}
	}
}

// isUniform says whether in gives every invocation the same value, given its operands' facts.
func (c *compiler) isUniform(in *ir.Inst) bool {
	if c.L == 1 {
		return true
	}
	switch in.Op {
	case ir.OpConst, ir.OpParam, ir.OpLen:
		return true
	case ir.OpBuiltin:
		d := in.Ref
		switch ir.Builtin(in.Aux) {
		case ir.WorkgroupID, ir.NumWorkgroups, ir.SubgroupSize:
			return true
		case ir.LocalID, ir.GlobalID:
			return c.k.WorkgroupSize[d] == 1
		case ir.SubgroupID:
			return c.L <= c.S
		}
		return false
	case ir.OpLoad:
		if in.Mem == ir.MemVar {
			return c.varUni[in.Ref]
		}
		return c.uni[in.Args[0]]
	case ir.OpAtomic, ir.OpSubgroupReduce: // a reduction depends on which invocations run it
		return false
	}
	for _, a := range in.Args {
		if !c.uni[a] {
			return false
		}
	}
	return true
}

// divergentExit reports whether b (a loop's body) leaves the loop (break, continue) under a
// condition that may differ between invocations. Nested loops are their own.
func (c *compiler) divergentExit(b *ir.Block, under bool) bool {
	for _, in := range b.Insts {
		switch in.Op {
		case ir.OpBreak, ir.OpContinue:
			if under {
				return true
			}
		case ir.OpIf:
			nu := under || !c.uni[in.Args[0]]
			if c.divergentExit(in.Blocks[0], nu) || c.divergentExit(in.Blocks[1], nu) {
				return true
			}
		}
	}
	return false
}

// markStores makes every variable stored to inside loop non-uniform.
func (c *compiler) markStores(loop *ir.Inst, changed *bool) {
	for _, b := range loop.Blocks {
		ir.Walk(b, func(in *ir.Inst) bool {
			if in.Op == ir.OpStore && in.Mem == ir.MemVar && c.varUni[in.Ref] {
				c.varUni[in.Ref] = false
				*changed = true
			}
			return true
		})
	}
}

// isView reports whether in takes no step and views its operand: an extract, a cast that keeps
// the bits, a conversion between i32 and u32, abs of a u32.
func isView(in *ir.Inst) (view, bool) {
	switch in.Op {
	case ir.OpExtract:
		return view{of: in.Args[0], comp: int(in.Aux)}, true
	case ir.OpBitcast, ir.OpConvert:
		from, to := in.Args[0].Type, in.Type
		if from == to || from.Lanes == to.Lanes && word32(from.Scalar) && word32(to.Scalar) &&
			(in.Op == ir.OpBitcast || from.Scalar != ir.F32 && to.Scalar != ir.F32) {
			return view{of: in.Args[0], all: true}, true
		}
	case ir.OpAbs:
		if in.Type.Scalar == ir.U32 {
			return view{of: in.Args[0], all: true}, true
		}
	}
	return view{}, false
}

// word32 reports whether a value of kind s is its 32-bit word as is (i32, u32, f32).
func word32(s ir.Scalar) bool { return s == ir.I32 || s == ir.U32 || s == ir.F32 }

// places gives every value its place: static ones (constants, parameters, builtins, lengths,
// variables) first, then the others by linear scan.
func (c *compiler) places() {
	k := c.k
	// Variables: uniform ones one word per component.
	wstart, dstart := c.wsize, c.dsize
	c.varLoc = make([]loc, len(k.Vars))
	for i, v := range k.Vars {
		c.varLoc[i] = c.alloc(v.Type, c.varUni[i])
	}
	c.out.vars = [2][2]int{{wstart, c.wsize}, {dstart, c.dsize}}

	type key struct {
		op   ir.Op
		t    ir.Type
		aux  uint64
		ref  int
		uni  bool
		kind int
	}
	static := map[key]loc{}
	var dyn []*ir.Inst
	ini := &c.out.init
	var visit func(b *ir.Block)
	visit = func(b *ir.Block) {
		for _, in := range b.Insts {
			for _, nb := range in.Blocks {
				visit(nb)
			}
			if in.Type == ir.TVoid {
				continue
			}
			if v, ok := isView(in); ok {
				c.view[in] = v
				continue
			}
			kk := key{op: in.Op, t: in.Type, aux: in.Aux, ref: in.Ref, uni: c.uni[in]}
			switch in.Op {
			case ir.OpConst, ir.OpParam, ir.OpLen, ir.OpBuiltin:
			default:
				dyn = append(dyn, in)
				continue
			}
			if l, ok := static[kk]; ok {
				c.locs[in] = l
				continue
			}
			uni := c.uni[in]
			l := c.alloc(in.Type, uni)
			static[kk] = l
			c.locs[in] = l
			switch in.Op {
			case ir.OpConst:
				for i := 0; i < int(in.Type.Lanes); i++ {
					switch in.Type.Scalar {
					case ir.F64:
						ini.w64 = append(ini.w64, dwordInit{l.off + i, in.Aux})
					case ir.Bool:
						ini.w32 = append(ini.w32, wordInit{l.off + i, bit(in.Aux != 0)})
					case ir.F16:
						ini.w32 = append(ini.w32, wordInit{l.off + i, uint32(in.Aux) & 0xffff})
					default:
						ini.w32 = append(ini.w32, wordInit{l.off + i, uint32(in.Aux)})
					}
				}
			case ir.OpParam:
				ini.params = append(ini.params, refInit{l.off, in.Ref})
			case ir.OpLen:
				ini.lens = append(ini.lens, refInit{l.off, in.Ref})
			case ir.OpBuiltin:
				b, d := ir.Builtin(in.Aux), in.Ref
				switch {
				case b == ir.SubgroupSize:
					ini.w32 = append(ini.w32, wordInit{l.off, uint32(c.S)})
				case b == ir.NumWorkgroups:
					ini.numWG = append(ini.numWG, refInit{l.off, d})
				case b == ir.WorkgroupID || b == ir.GlobalID && uni:
					ini.wgID = append(ini.wgID, refInit{l.off, d})
				case b == ir.GlobalID:
					ini.gID = append(ini.gID, refInit{l.off, d})
				case uni: // local ids of a dimension of size 1, the subgroup id of one subgroup
					ini.w32 = append(ini.w32, wordInit{l.off, 0})
				default:
					ini.lanes = append(ini.lanes, builtinInit{l.off, b, d})
				}
			}
		}
	}
	visit(k.Body)
	sort.Slice(dyn, func(i, j int) bool { return c.num[dyn[i]] < c.num[dyn[j]] })
	c.allocate(dyn)
	// Views: resolve in program order (an extract of a view).
	var resolve func(in *ir.Inst) loc
	resolve = func(in *ir.Inst) loc {
		if l, ok := c.locs[in]; ok {
			return l
		}
		v := c.view[in]
		l := resolve(v.of)
		if !v.all {
			if l.uni {
				l.off += v.comp
			} else {
				l.off += v.comp * c.L
			}
		}
		c.locs[in] = l
		return l
	}
	for in := range c.view {
		resolve(in)
	}
}

// alloc takes a new place for a value of type t at the end of the frame.
func (c *compiler) alloc(t ir.Type, uni bool) loc {
	n := int(t.Lanes)
	if !uni {
		n *= c.L
	}
	if t.Scalar == ir.F64 {
		l := loc{off: c.dsize, uni: uni, wide: true}
		c.dsize += n
		return l
	}
	l := loc{off: c.wsize, uni: uni}
	c.wsize += n
	return l
}

// root follows views to the value that owns the place.
func (c *compiler) root(in *ir.Inst) *ir.Inst {
	for {
		v, ok := c.view[in]
		if !ok {
			return in
		}
		in = v.of
	}
}

// usePos is where a use by user of def's place ends: at user, or, when user is in a loop that
// def is outside of, at the end of the outermost such loop.
func (c *compiler) usePos(user, def *ir.Inst) int {
	p := c.num[user]
	dn := c.num[def]
	for l := c.loopOf[user]; l != nil; l = c.loopOf[l] {
		if c.num[l] < dn && dn <= c.end[l] {
			break
		}
		p = max(p, c.end[l])
	}
	return p
}

// allocate places the dynamic values (in program order) by linear scan: a place is reused by a
// value of the same size once the value holding it is dead.
func (c *compiler) allocate(dyn []*ir.Inst) {
	last := make(map[*ir.Inst]int, len(dyn))
	for _, in := range dyn {
		last[in] = c.num[in]
	}
	ir.Walk(c.k.Body, func(user *ir.Inst) bool {
		for _, a := range user.Args {
			r := c.root(a)
			if _, ok := last[r]; ok {
				last[r] = max(last[r], c.usePos(user, r))
			}
		}
		return true
	})
	type size struct {
		words int
		wide  bool
		uni   bool
	}
	type live struct {
		end int
		sz  size
		off int
	}
	free := map[size][]int{}
	var active []live // sorted by end, descending (pop from the back)
	for _, in := range dyn {
		start := c.num[in]
		for len(active) > 0 && active[len(active)-1].end < start {
			a := active[len(active)-1]
			active = active[:len(active)-1]
			free[a.sz] = append(free[a.sz], a.off)
		}
		uni := c.uni[in]
		sz := size{words: int(in.Type.Lanes), wide: in.Type.Scalar == ir.F64, uni: uni}
		var l loc
		if f := free[sz]; len(f) > 0 {
			l = loc{off: f[len(f)-1], uni: uni, wide: sz.wide}
			free[sz] = f[:len(f)-1]
		} else {
			l = c.alloc(in.Type, uni)
		}
		c.locs[in] = l
		e := live{end: last[in], sz: sz, off: l.off}
		i := sort.Search(len(active), func(i int) bool { return active[i].end <= e.end })
		active = append(active, live{})
		copy(active[i+1:], active[i:])
		active[i] = e
	}
}

// newMask takes a scratch mask.
func (c *compiler) newMask() int {
	c.nmasks++
	return c.nmasks - 1
}
