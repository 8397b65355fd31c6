package lower

// Checked mode: bounds-checked kernels.
//
// Checked instruments a kernel so that every storage-buffer access whose index may be out of
// bounds compares the index with the bound buffer's run-time element count (OpLen) first. An
// access out of bounds does not happen: a store or atomic is skipped, an atomic yields 0, and a
// load reads element 0 instead and yields 0. A runner of checked kernels therefore gives every
// buffer room for one element: the host harness maps at least 16 bytes; a binding smaller than
// its element (internal/devrun's 4-byte stand-in for an empty one, under a vec4) is safe to read
// only with robustBufferAccess, which the suite enables on Vulkan.
// Instead each invocation counts its violations and keeps its first one in variables, and
// writes them, when it ends, into a report buffer appended as the last binding: 16 bytes, four
// u32 words, zero before the dispatch,
//
//	word 0: how many accesses were out of bounds (atomic add)
//	word 1: the site id of the first one (0: none): an index into Diagnostics.Sites, plus one
//	word 2: its index (the bits of an i32 index as u32)
//	word 3: the element count of its buffer
//
// Word 1 is claimed with a compare-and-swap from 0, so exactly one invocation (the first to get
// there) writes its first violation into words 1 to 3; every write to the report buffer is an
// atomic. Diagnostics maps
// the site id back to the user's Go source line, the buffer and the kind of access, so a runner
// can say "kernels/ops_norm.go:57: store y[4096] outside its 4096 elements".
//
// Checked runs on a lowered kernel, after Run (RunChecked does both): it checks exactly the
// accesses the production kernel makes (the lowering drops loads whose value is unused, which the
// dsl builder's helpers may leave behind), and the result goes to a backend's emitter as it is
// (vulkan.Emit, cfamily.Print; its C-family text takes an element count for every checked
// buffer, see ir.Kernel.LenRefs). Lowering it again is harmless but not needed. The default
// pipeline never runs it: production kernels are unchecked, and byte for byte what they were.
//
// An access needs no check where an enclosing if proves its index in bounds: the then-block of
// `if i < b.Len()` (or `b.Len() > i`, and either side of an `&&`), the else-block of
// `if i >= b.Len()`, for a u32 index i and the same buffer b. Shared arrays and variables are not
// checked (shared arrays have a compile-time length: a future check can fold against it).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// CheckedEnv is the environment variable that, set to 1, runs bounds-checked kernels outside
// the test suite too: every engine (engine.Options.Checked) and prebuilt runtime
// (prebuilt.Options.Checked) of the process (CheckedRequested).
const CheckedEnv = "ONESOURCE_CHECKED"

// CheckedRequested reports whether CheckedEnv is 1.
func CheckedRequested() bool { return os.Getenv(CheckedEnv) == "1" }

// ReportWords is the size of the report buffer Checked appends, in u32 words.
const ReportWords = 4

// ReportBytes is the size of the report buffer Checked appends, in bytes: bind a zero-filled
// buffer of this size as the last binding of a checked kernel.
const ReportBytes = 4 * ReportWords

// Site is one checked buffer access of a kernel.
type Site struct {
	ID     uint32 // what the kernel records in word 1 of the report: index in Diagnostics.Sites + 1
	Pos    ir.Pos // the user's Go source line of the access
	Buffer string // the buffer's name
	Access string // "load", "store", or "atomic add" (min, max, xchg, cmpxchg)
	Signed bool   // the index is an i32 (reported as a signed number)
}

// Diagnostics is the table a checked kernel's report refers to.
type Diagnostics struct {
	Kernel  string
	Binding int    // the report buffer's binding: the last one of the checked kernel
	Name    string // the report buffer's name ("__oob" unless the kernel uses that name)
	Sites   []Site // Sites[i].ID == i+1
}

// OutOfBounds is a violation a checked kernel recorded: the first one, and how many there were.
type OutOfBounds struct {
	Site
	Kernel string
	Index  uint32 // the offending index (bits of an i32 when Site.Signed)
	Len    uint32 // the buffer's element count
	Count  uint32 // how many accesses of the dispatch were out of bounds (at least 1)
}

// ShortPos is p as reports print it: the file's directory and base name with the line
// ("kernels/ops_norm.go:57"), so messages do not depend on where the source tree lives.
func ShortPos(p ir.Pos) string {
	if p.File == "" {
		return "?"
	}
	dir := filepath.Base(filepath.Dir(p.File))
	base := filepath.Base(p.File)
	if dir == "." || dir == string(filepath.Separator) || dir == "" {
		return fmt.Sprintf("%s:%d", base, p.Line)
	}
	return fmt.Sprintf("%s/%s:%d", dir, base, p.Line)
}

// Error describes the violation: "kernels/ops_norm.go:57: store y[4096] outside its 4096
// elements", with "(and N more out-of-bounds accesses)" when there were others.
func (e *OutOfBounds) Error() string {
	idx := fmt.Sprint(e.Index)
	if e.Signed {
		idx = fmt.Sprint(int32(e.Index))
	}
	msg := fmt.Sprintf("%s: %s %s[%s] outside its %d elements", ShortPos(e.Pos), e.Access, e.Buffer, idx, e.Len)
	if e.Count > 1 {
		msg += fmt.Sprintf(" (and %d more out-of-bounds accesses)", e.Count-1)
	}
	return msg
}

// Violation decodes a report buffer read back after a checked kernel ran: nil when the kernel
// recorded no violation, else the first one. A report that is too short, or names a site the
// table does not have, is an error.
func (d *Diagnostics) Violation(report []byte) (*OutOfBounds, error) {
	if len(report) < ReportBytes {
		return nil, fmt.Errorf("checked %s: report buffer of %d bytes, want %d", d.Kernel, len(report), ReportBytes)
	}
	w := func(i int) uint32 {
		b := report[4*i:]
		return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	count, id := w(0), w(1)
	if count == 0 && id == 0 {
		return nil, nil
	}
	if id == 0 || int(id) > len(d.Sites) {
		return nil, fmt.Errorf("checked %s: report names site %d of %d (count %d): the report buffer was overwritten", d.Kernel, id, len(d.Sites), count)
	}
	return &OutOfBounds{Site: d.Sites[id-1], Kernel: d.Kernel, Index: w(2), Len: w(3), Count: max(count, 1)}, nil
}

// RunChecked lowers a copy of k for c (Run) and instruments the result (Checked): the kernel a
// checked run emits, with the table of its checked accesses. k itself is not modified.
func RunChecked(k *ir.Kernel, c Caps) (*ir.Kernel, *Diagnostics, error) {
	l, err := Run(k, c)
	if err != nil {
		return nil, nil, err
	}
	return Checked(l)
}

// Checked returns a bounds-checked copy of k (see the comment at the top of this file) and the
// table of its checked accesses: k is a lowered kernel (see RunChecked). k itself is not
// modified; it must verify. The result has one more buffer than k, the report, as its last
// binding.
func Checked(k *ir.Kernel) (*ir.Kernel, *Diagnostics, error) {
	if err := ir.Verify(k); err != nil {
		return nil, nil, err
	}
	out := k.Clone()
	used := map[string]bool{}
	for _, b := range out.Buffers {
		used[b.Name] = true
	}
	for _, p := range out.Params {
		used[p.Name] = true
	}
	for _, s := range out.Shared {
		used[s.Name] = true
	}
	name := "__oob"
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("__oob_%d", i)
	}
	d := &Diagnostics{Kernel: k.Name, Binding: len(out.Buffers), Name: name}
	out.Buffers = append(out.Buffers, &ir.Buffer{Name: name, Elem: ir.TU32, Access: ir.ReadWrite, Pos: k.Pos})
	c := &checker{k: out, d: d, report: d.Binding, safe: map[safeKey]int{}}
	for i, v := range []string{"count", "site", "index", "len"} {
		c.state[i] = len(out.Vars)
		out.Vars = append(out.Vars, &ir.Var{Name: name + "_" + v, Type: ir.TU32, Pos: k.Pos})
	}
	body := c.block(out.Body.Insts)
	g := &gen{pos: k.Pos}
	for _, v := range c.state {
		g.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: v, Args: []*ir.Inst{g.konst(ir.TU32, 0)}})
	}
	g.out = append(g.out, body...)
	if n := len(body); n == 0 || !body[n-1].Op.IsTerminator() {
		c.flush(g)
	}
	out.Body.Insts = g.out
	if err := ir.Verify(out); err != nil {
		return nil, nil, fmt.Errorf("checked %s: IR invalid after instrumentation (a lowering bug): %w", k.Name, err)
	}
	return out, d, nil
}

// safeKey is a fact of an enclosing if: index value idx is below the length of buffer ref.
type safeKey struct {
	idx *ir.Inst
	ref int
}

type checker struct {
	k      *ir.Kernel
	d      *Diagnostics
	report int
	safe   map[safeKey]int // facts in force (a count: nested ifs may state one twice)
	// state are the variables of the invocation's record: its violations so far, and the site,
	// index and length of its first one. A violation only updates them; the invocation writes
	// the report once, when it ends (flush).
	state [4]int
}

// block returns the instrumented instruction list of a block.
func (c *checker) block(insts []*ir.Inst) []*ir.Inst {
	out := make([]*ir.Inst, 0, len(insts))
	for _, in := range insts {
		switch in.Op {
		case ir.OpIf:
			thenFacts, elseFacts := facts(in.Args[0], true), facts(in.Args[0], false)
			c.with(thenFacts, func() { in.Blocks[0].Insts = c.block(in.Blocks[0].Insts) })
			c.with(elseFacts, func() { in.Blocks[1].Insts = c.block(in.Blocks[1].Insts) })
			out = append(out, in)
			continue
		case ir.OpLoop:
			for _, b := range in.Blocks {
				b.Insts = c.block(b.Insts)
			}
			out = append(out, in)
			continue
		case ir.OpReturn:
			g := &gen{out: out, pos: in.Pos}
			c.flush(g)
			out = append(g.out, in)
			continue
		case ir.OpLoad, ir.OpStore, ir.OpAtomic:
			if in.Mem == ir.MemBuffer && in.Ref != c.report && c.safe[safeKey{in.Args[0], in.Ref}] == 0 {
				out = c.check(in, out)
				continue
			}
		}
		out = append(out, in)
	}
	return out
}

func (c *checker) with(fs []safeKey, f func()) {
	for _, k := range fs {
		c.safe[k]++
	}
	f()
	for _, k := range fs {
		c.safe[k]--
	}
}

// facts returns the (index, buffer) pairs cond proves in bounds when it is true (when) or false.
func facts(cond *ir.Inst, when bool) []safeKey {
	isLen := func(x *ir.Inst) bool { return x.Op == ir.OpLen }
	fact := func(idx, l *ir.Inst) []safeKey {
		if idx.Type != ir.TU32 || !isLen(l) {
			return nil
		}
		return []safeKey{{idx, l.Ref}}
	}
	switch {
	case cond.Op == ir.OpAnd && cond.Type == ir.TBool && when:
		return append(facts(cond.Args[0], true), facts(cond.Args[1], true)...)
	case cond.Op == ir.OpOr && cond.Type == ir.TBool && !when:
		return append(facts(cond.Args[0], false), facts(cond.Args[1], false)...)
	case cond.Op == ir.OpNot && cond.Type == ir.TBool:
		return facts(cond.Args[0], !when)
	case cond.Op == ir.OpLt && when, cond.Op == ir.OpGe && !when: // i < len; !(i >= len)
		return fact(cond.Args[0], cond.Args[1])
	case cond.Op == ir.OpGt && when, cond.Op == ir.OpLe && !when: // len > i; !(len <= i)
		return fact(cond.Args[1], cond.Args[0])
	}
	return nil
}

// check appends to out the checked form of the buffer access in.
//
//	len = len(buf); i = u32(index); ok = i < len
//	load:           record(site, !ok, i, len); v = load(ok ? i : 0); in := ok ? v : 0
//	store, atomic:  if ok { in [; var = in] } else { record(site, true, i, len) [; var = 0] }
//	                [in := load var]
//
// A load keeps its place (in becomes the select, so its users see it); an atomic with a result
// becomes the load of a fresh variable, the access itself moving into the then-block.
func (c *checker) check(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
	g := &gen{out: out, pos: in.Pos}
	buf := c.k.Buffers[in.Ref]
	site := Site{ID: uint32(len(c.d.Sites) + 1), Pos: in.Pos, Buffer: buf.Name, Access: in.Op.String()}
	if in.Op == ir.OpAtomic {
		site.Access = "atomic " + ir.AtomicOp(in.Aux).String()
	}
	idx := in.Args[0]
	if idx.Type == ir.TI32 {
		site.Signed = true
		idx = g.op(ir.OpBitcast, ir.TU32, idx)
	}
	c.d.Sites = append(c.d.Sites, site)
	n := g.add(&ir.Inst{Op: ir.OpLen, Type: ir.TU32, Ref: in.Ref})
	ok := g.op(ir.OpLt, ir.TBool, idx, n)

	if in.Op == ir.OpLoad {
		// A load runs unconditionally, at index 0 when its own index is out of bounds, and its
		// value is replaced by 0 there: no branch (see flush for what branches cost).
		c.record(g, site.ID, g.op(ir.OpNot, ir.TBool, ok), idx, n)
		access := new(ir.Inst)
		*access = *in
		access.Name = ""
		safe := g.op(ir.OpSelect, ir.TU32, ok, idx, g.konst(ir.TU32, 0))
		if in.Args[0].Type != ir.TU32 {
			safe = g.op(ir.OpBitcast, in.Args[0].Type, safe)
		}
		access.Args = []*ir.Inst{safe}
		g.add(access)
		// An f16 is selected as f32 (exact both ways), so a target with f16 storage only never
		// has an f16 constant.
		held, vt := access, in.Type
		if vt.Scalar == ir.F16 {
			vt.Scalar = ir.F32
			held = g.op(ir.OpConvert, vt, access)
		}
		val := g.op(ir.OpSelect, vt, ok, held, g.konst(vt, 0))
		if vt != in.Type {
			*in = ir.Inst{Op: ir.OpConvert, Type: in.Type, Args: []*ir.Inst{val}, Name: in.Name, Pos: in.Pos}
		} else {
			*in = ir.Inst{Op: ir.OpSelect, Type: in.Type, Args: val.Args, Name: in.Name, Pos: in.Pos}
			g.out = g.out[:len(g.out)-1] // val is in itself now
		}
		return append(g.out, in)
	}
	// Stores and atomics run only in bounds.
	then := &gen{pos: in.Pos}
	els := &gen{pos: in.Pos}
	c.record(els, site.ID, els.konst(ir.TBool, 1), idx, n)
	if in.Type == ir.TVoid {
		then.out = append(then.out, in)
		g.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{ok}, Blocks: []*ir.Block{{Insts: then.out}, {Insts: els.out}}})
		return g.out
	}
	// The variable holds the value; an f16 is held as f32 (exact both ways), so a target with
	// f16 storage only never has an f16 variable or constant.
	vt := in.Type
	if vt.Scalar == ir.F16 {
		vt.Scalar = ir.F32
	}
	v := len(c.k.Vars)
	c.k.Vars = append(c.k.Vars, &ir.Var{Name: fmt.Sprintf("__oob_v%d", site.ID), Type: vt, Pos: in.Pos})
	access := new(ir.Inst)
	*access = *in
	access.Name = ""
	then.out = append(then.out, access)
	held := access
	if vt != in.Type {
		held = then.op(ir.OpConvert, vt, access)
	}
	then.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: v, Args: []*ir.Inst{held}})
	zero := els.konst(vt, 0)
	els.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: v, Args: []*ir.Inst{zero}})
	g.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{ok}, Blocks: []*ir.Block{{Insts: then.out}, {Insts: els.out}}})
	// in itself becomes the variable's value, so its users see it.
	if vt != in.Type {
		val := g.add(&ir.Inst{Op: ir.OpLoad, Type: vt, Mem: ir.MemVar, Ref: v})
		*in = ir.Inst{Op: ir.OpConvert, Type: in.Type, Args: []*ir.Inst{val}, Name: in.Name, Pos: in.Pos}
	} else {
		*in = ir.Inst{Op: ir.OpLoad, Type: in.Type, Mem: ir.MemVar, Ref: v, Name: in.Name, Pos: in.Pos}
	}
	return append(g.out, in)
}

// record appends the bookkeeping of an access of site id at index i of a buffer of n elements
// that is out of bounds when bad holds: the invocation's count goes up, and its first violation
// is kept. It has no branch.
func (c *checker) record(g *gen, id uint32, bad, i, n *ir.Inst) {
	load := func(v int) *ir.Inst {
		return g.add(&ir.Inst{Op: ir.OpLoad, Type: ir.TU32, Mem: ir.MemVar, Ref: c.state[v]})
	}
	store := func(v int, x *ir.Inst) {
		g.add(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: c.state[v], Args: []*ir.Inst{x}})
	}
	u32 := func(x uint32) *ir.Inst { return g.konst(ir.TU32, float64(x)) }
	store(0, g.op(ir.OpAdd, ir.TU32, load(0), g.op(ir.OpSelect, ir.TU32, bad, u32(1), u32(0))))
	site := load(1)
	first := g.op(ir.OpAnd, ir.TBool, bad, g.op(ir.OpEq, ir.TBool, site, u32(0)))
	store(1, g.op(ir.OpSelect, ir.TU32, first, u32(id), site))
	store(2, g.op(ir.OpSelect, ir.TU32, first, i, load(2)))
	store(3, g.op(ir.OpSelect, ir.TU32, first, n, load(3)))
}

// flush appends the invocation's report, written where it ends (the end of the kernel, every
// return): when it recorded violations, their count is added to word 0, and the first
// invocation to claim word 1 writes its first violation into words 1 to 3.
//
// A violation used to write the report where it happened, and every checked access was an if:
// an atomic add, a compare-exchange and two exchanges under two more ifs in its else-block.
// matvec_q8/q4_K at lanes=32, rows=4 has some 400 checked loads in its loop, and Mesa's lavapipe
// took 116 s to compile that pipeline (0.7 s unchecked). With the record in variables it took
// 4.1 s; with loads that do not branch (check), 1.5 s (2 cores, the other one busy).
func (c *checker) flush(g *gen) {
	get := func(g *gen, v int) *ir.Inst {
		return g.add(&ir.Inst{Op: ir.OpLoad, Type: ir.TU32, Mem: ir.MemVar, Ref: c.state[v]})
	}
	atomic := func(g *gen, op ir.AtomicOp, word int, args ...*ir.Inst) *ir.Inst {
		args = append([]*ir.Inst{g.konst(ir.TU32, float64(word))}, args...)
		return g.add(&ir.Inst{Op: ir.OpAtomic, Type: ir.TU32, Mem: ir.MemBuffer, Ref: c.report, Aux: uint64(op), Args: args})
	}
	count := get(g, 0)
	any := g.op(ir.OpNe, ir.TBool, count, g.konst(ir.TU32, 0))
	rep := &gen{pos: g.pos}
	atomic(rep, ir.AtomicAdd, 0, count)
	prev := atomic(rep, ir.AtomicCmpXchg, 1, rep.konst(ir.TU32, 0), get(rep, 1))
	first := rep.op(ir.OpEq, ir.TBool, prev, rep.konst(ir.TU32, 0))
	win := &gen{pos: g.pos}
	atomic(win, ir.AtomicExchange, 2, get(win, 2))
	atomic(win, ir.AtomicExchange, 3, get(win, 3))
	rep.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{first}, Blocks: []*ir.Block{{Insts: win.out}, {}}})
	g.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{any}, Blocks: []*ir.Block{{Insts: rep.out}, {}}})
}

// String lists the table, one site a line: "1 kernels/ops_norm.go:57 store y".
func (d *Diagnostics) String() string {
	var sb strings.Builder
	for _, s := range d.Sites {
		fmt.Fprintf(&sb, "%d %s %s %s\n", s.ID, ShortPos(s.Pos), s.Access, s.Buffer)
	}
	return sb.String()
}
