package webgpu

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// Emit writes the WGSL module of the lowered, verified kernel k for the target o describes (see
// the package documentation for the form and the numeric contract). k must have been lowered
// with o.Caps(): an OpReduce left in it is an error, and so is anything WGSL cannot express
// under o (a subgroup operation without Options.SubgroupSize, a packed dot without
// Options.PackedDot, f64 values, a narrow shared array): each error is an *ir.Error naming the
// Go source line of the instruction or resource. Emit never panics; the same kernel always
// gives the same bytes.
func Emit(k *ir.Kernel, o Options) (mod *Module, err error) {
	if k == nil {
		return nil, errors.New("webgpu: Emit: nil kernel")
	}
	defer func() {
		if r := recover(); r != nil {
			mod, err = nil, &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: fmt.Sprintf("webgpu: internal emitter error: %v", r)}
		}
	}()
	if err := ir.Verify(k); err != nil {
		return nil, err
	}
	e := newEmitter(k, o)
	return e.run()
}

// value is how an IR value appears in the text.
type value struct {
	t    ir.Type
	name string // the declared identifier; "" for values written in place
	lit  string // in place: a constant's lane (a splat for vectors), a parameter, a builtin
}

// bufKind is how a buffer's elements are held in WGSL.
type bufKind uint8

const (
	bufPlain  bufKind = iota // array<T> or array<atomic<T>> of the element type itself
	bufPacked                // 8- or 16-bit elements packed into u32 words
)

type emitter struct {
	k     *ir.Kernel
	o     Options
	names *namer
	used  map[string]bool // helpers

	vals    map[*ir.Inst]*value
	numbers map[*ir.Inst]int
	useCnt  map[*ir.Inst]int

	bufNames     []string
	bufKinds     []bufKind
	bufAtomic    []bool // declared array<atomic<...>>
	sharedNames  []string
	sharedAtomic []bool
	varNames     []string
	paramFields  []string
	paramsType   string
	builtins     map[ir.Builtin]bool
	writesBuffer bool
	enables      map[string]bool
	requires     map[string]bool

	cur   ir.Pos
	body  strings.Builder
	ind   int
	loopN int
	err   error
}

func newEmitter(k *ir.Kernel, o Options) *emitter {
	return &emitter{
		k: k, o: o,
		names:    newNamer(k.Name),
		used:     map[string]bool{},
		vals:     map[*ir.Inst]*value{},
		numbers:  map[*ir.Inst]int{},
		useCnt:   map[*ir.Inst]int{},
		builtins: map[ir.Builtin]bool{},
		enables:  map[string]bool{},
		requires: map[string]bool{},
	}
}

// errAt records the first error, at position pos (the current instruction's, else the
// kernel's, when pos is unknown).
func (e *emitter) errAt(pos ir.Pos, format string, args ...any) {
	if e.err != nil {
		return
	}
	if pos == (ir.Pos{}) {
		pos = e.cur
	}
	if pos == (ir.Pos{}) {
		pos = e.k.Pos
	}
	e.err = &ir.Error{Pos: pos, Kernel: e.k.Name, Msg: "webgpu: " + fmt.Sprintf(format, args...)}
}

// maxIndent is the deepest indentation written, in tabs.
const maxIndent = 64

var tabs = strings.Repeat("\t", maxIndent)

func (e *emitter) line(format string, args ...any) {
	e.body.WriteString(tabs[:min(e.ind, maxIndent)])
	fmt.Fprintf(&e.body, format, args...)
	e.body.WriteByte('\n')
}

func (e *emitter) run() (*Module, error) {
	k, o := e.k, e.o
	if !isIdent(k.Name) || e.isKeyword(k.Name) {
		return nil, &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: fmt.Sprintf("webgpu: kernel name %q is not a WGSL identifier the entry point can take", k.Name)}
	}
	for _, d := range k.WorkgroupSize {
		if d == 0 {
			return nil, &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: fmt.Sprintf("webgpu: workgroup size %v has a zero dimension", k.WorkgroupSize)}
		}
	}
	if o.F16 {
		e.enables["f16"] = true
	}
	e.scan()
	if e.err != nil {
		return nil, e.err
	}
	e.declareResources()
	if e.err != nil {
		return nil, e.err
	}
	e.ind = 1
	for i, x := range k.Vars {
		e.line("var %s: %s;", e.varNames[i], e.typ(x.Type, x.Pos))
	}
	e.block(k.Body)
	if e.err != nil {
		return nil, e.err
	}
	return e.module(), nil
}

// isKeyword reports whether name is one of WGSL's own words (not only a name the emitter keeps
// for itself).
func (e *emitter) isKeyword(name string) bool {
	for _, r := range wgslReserved {
		if r == name {
			switch r {
			case "gid", "lid", "wgid", "nwg", "lidx", "sg_size", "sg_lane", "params":
				return false
			}
			return true
		}
	}
	return false
}

// scan numbers the values, counts uses and finds what the kernel needs: atomics per array,
// builtins, extensions; it reports what no option of WGSL can express.
func (e *emitter) scan() {
	k := e.k
	e.bufAtomic = make([]bool, len(k.Buffers))
	e.sharedAtomic = make([]bool, len(k.Shared))
	stores := make([]bool, len(k.Buffers))
	n := 0
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if e.err != nil {
			return false
		}
		e.cur = in.Pos
		if in.Type != ir.TVoid {
			e.numbers[in] = n
			n++
		}
		for _, a := range in.Args {
			e.useCnt[a]++
		}
		switch in.Op {
		case ir.OpReduce:
			e.errAt(in.Pos, "reduce.%s must be expanded by package lower before emitting (lower.Run with the target's caps; kernel at %s)", ir.ReduceOp(in.Aux), k.Pos)
		case ir.OpDotI8x4:
			if !e.o.PackedDot {
				e.errAt(in.Pos, "dot_i8x4: WGSL has dot4I8Packed only with the packed_4x8_integer_dot_product language extension (Options.PackedDot); lower with Caps.DotI8x4 = false to unpack it")
			}
			e.requires["packed_4x8_integer_dot_product"] = true
		case ir.OpShuffleXor, ir.OpShuffle:
			e.needSubgroups(in, in.Op.String())
		case ir.OpBuiltin:
			b := ir.Builtin(in.Aux)
			e.builtins[b] = true
			switch b {
			case ir.SubgroupSize, ir.SubgroupLane, ir.SubgroupID:
				e.needSubgroups(in, b.String())
				e.builtins[ir.SubgroupSize] = true
				if b == ir.SubgroupID {
					e.builtins[ir.LocalIndex] = true
				}
			}
		case ir.OpAtomic:
			switch in.Mem {
			case ir.MemBuffer:
				e.bufAtomic[in.Ref] = true
				e.writesBuffer = true
			case ir.MemShared:
				e.sharedAtomic[in.Ref] = true
			}
		case ir.OpStore:
			if in.Mem == ir.MemBuffer {
				stores[in.Ref] = true
				e.writesBuffer = true
			}
		}
		for _, t := range append([]ir.Type{in.Type}, argTypes(in)...) {
			e.checkValueType(t, in.Pos)
		}
		return true
	})
	e.bufKinds = make([]bufKind, len(k.Buffers))
	for i, b := range k.Buffers {
		if e.packed(b.Elem) {
			e.bufKinds[i] = bufPacked
			// A store of a narrow element changes part of a word other invocations may be
			// writing too: it is two atomics on the word, so the whole array is atomic.
			if stores[i] {
				e.bufAtomic[i] = true
			}
		}
	}
}

func argTypes(in *ir.Inst) []ir.Type {
	ts := make([]ir.Type, len(in.Args))
	for i, a := range in.Args {
		ts[i] = a.Type
	}
	return ts
}

// checkValueType reports value types WGSL has no spelling for.
func (e *emitter) checkValueType(t ir.Type, pos ir.Pos) {
	switch t.Scalar {
	case ir.Void, ir.Bool, ir.I32, ir.U32, ir.F32, ir.F16:
	case ir.F64:
		e.errAt(pos, "type %s: WGSL has no f64 (a lowering that needs it cannot target WebGPU)", t)
	default:
		e.errAt(pos, "value type %s: WGSL values are 32-bit (package lower legalizes %s values before a backend sees them)", t, t.Scalar)
	}
}

func (e *emitter) needSubgroups(in *ir.Inst, what string) {
	if e.o.SubgroupSize <= 1 {
		e.errAt(in.Pos, "%s needs subgroups, which WGSL has only with `enable subgroups;` (Options.SubgroupSize: the adapter's subgroupMinSize); lower for core WGSL (webgpu.Caps) so reductions use workgroup memory", what)
	}
	e.enables["subgroups"] = true
}

// packed reports whether buffer elements of type t are held as parts of u32 words.
func (e *emitter) packed(t ir.Type) bool {
	switch t.Scalar {
	case ir.I8, ir.U8, ir.I16, ir.U16, ir.BF16:
		return true
	case ir.F16:
		return !e.o.F16
	}
	return false
}

// Types.

func (e *emitter) scalar(s ir.Scalar, pos ir.Pos) string {
	switch s {
	case ir.Bool:
		return "bool"
	case ir.I32:
		return "i32"
	case ir.U32:
		return "u32"
	case ir.F32:
		return "f32"
	case ir.F16:
		if e.o.F16 {
			return "f16"
		}
		return "f32" // an f16 value held exactly in an f32
	}
	e.errAt(pos, "type %s has no WGSL value spelling", s)
	return "u32"
}

// typ is the WGSL spelling of value type t.
func (e *emitter) typ(t ir.Type, pos ir.Pos) string {
	s := e.scalar(t.Scalar, pos)
	if t.Lanes > 1 {
		return fmt.Sprintf("vec%d<%s>", t.Lanes, s)
	}
	return s
}

// Resources.

func (e *emitter) declareResources() {
	k := e.k
	e.paramsType = e.names.fresh(k.Name + "_params")
	for i, b := range k.Buffers {
		e.bufNames = append(e.bufNames, e.names.fresh(b.Name))
		switch {
		case b.Elem.Lanes < 1 || b.Elem.Lanes > 4 || b.Elem.Scalar == ir.Bool || b.Elem.Scalar == ir.F64 || b.Elem.Scalar == ir.Void:
			e.errAt(b.Pos, "buffer %s: element type %s cannot be stored in a WGSL storage buffer", b.Name, b.Elem)
		case b.Elem.Lanes > 1 && (b.Elem.Scalar.Bits() != 32):
			e.errAt(b.Pos, "buffer %s: vector element type %s: only 32-bit lanes", b.Name, b.Elem)
		case e.bufAtomic[i] && e.bufKinds[i] == bufPlain && b.Elem != ir.TI32 && b.Elem != ir.TU32:
			e.errAt(b.Pos, "buffer %s: atomics on %s elements: WGSL has atomics on i32 and u32 only (package lower rewrites f32 atomic adds into compare-exchange loops unless Caps.AtomicFloatAdd)", b.Name, b.Elem)
		}
	}
	members := newNamer()
	for _, x := range k.Params {
		e.paramFields = append(e.paramFields, members.fresh(x.Name))
		if x.Type.Lanes != 1 || x.Type.Scalar.Bits() != 32 || x.Type.Scalar == ir.Bool {
			e.errAt(x.Pos, "parameter %s: type %s is not a 32-bit scalar", x.Name, x.Type)
		}
	}
	for i, s := range k.Shared {
		e.sharedNames = append(e.sharedNames, e.names.fresh(s.Name))
		if s.Elem.Scalar.Bits() != 32 || s.Elem.Scalar == ir.Bool || s.Elem.Lanes < 1 || s.Elem.Lanes > 4 {
			e.errAt(s.Pos, "shared array %s: element type %s: WGSL workgroup arrays here hold 32-bit scalars or vectors (narrow and 16-bit shared elements are not supported by this backend, as on Vulkan)", s.Name, s.Elem)
		}
		if e.sharedAtomic[i] && s.Elem != ir.TI32 && s.Elem != ir.TU32 {
			e.errAt(s.Pos, "shared array %s: atomics on %s elements: WGSL has atomics on i32 and u32 only", s.Name, s.Elem)
		}
	}
	for _, x := range k.Vars {
		e.varNames = append(e.varNames, e.names.fresh(x.Name))
		e.checkValueType(x.Type, x.Pos)
	}
}

// bufElemType is the WGSL element type of buffer i's array.
func (e *emitter) bufElemType(i int) string {
	b := e.k.Buffers[i]
	t := "u32"
	if e.bufKinds[i] == bufPlain {
		t = e.typ(b.Elem, b.Pos)
	}
	if e.bufAtomic[i] {
		return "atomic<" + t + ">"
	}
	return t
}

// module assembles the text: header, directives, parameter struct, bindings, shared arrays,
// helpers and the entry point.
func (e *emitter) module() *Module {
	k, o := e.k, e.o
	m := &Module{Name: k.Name, WorkgroupSize: k.WorkgroupSize, ParamsBytes: 4 * len(k.Params)}
	if o.SubgroupSize > 1 {
		m.SubgroupSize = o.Caps().SubgroupSize
	}
	for _, x := range sortedKeys(e.enables) {
		m.Enables = append(m.Enables, x)
	}
	for _, x := range sortedKeys(e.requires) {
		m.Requires = append(m.Requires, x)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "// Code generated by onesource from DSL kernel %s (%s:%d). DO NOT EDIT.\n", k.Name, filepath.Base(k.Pos.File), k.Pos.Line)
	caps := o.Caps()
	var cs []string
	if caps.SubgroupSize > 1 {
		cs = append(cs, fmt.Sprintf("subgroups of at least %d", caps.SubgroupSize))
	} else {
		cs = append(cs, "no subgroups")
	}
	if caps.DotI8x4 {
		cs = append(cs, "packed int8 dot (dot4I8Packed)")
	} else {
		cs = append(cs, "int8 dot unpacked")
	}
	if caps.Float16 {
		cs = append(cs, "f16 arithmetic")
	} else {
		cs = append(cs, "f16 held in f32, rounded by integer code")
	}
	target := "core WGSL (WebGPU)"
	if len(m.Enables) > 0 || len(m.Requires) > 0 {
		target = "WGSL with " + strings.Join(append(append([]string(nil), m.Enables...), m.Requires...), ", ")
	}
	fmt.Fprintf(&out, "// Backend: webgpu. Lowering target: %s; %s.\n", target, strings.Join(cs, ", "))
	out.WriteString("// Numeric contract: a*b+c is written as two operations, but WGSL cannot forbid contracting them\n")
	out.WriteString("// (no NoContraction): compile with a WebGPU implementation that does not fuse (Dawn/Tint and\n")
	out.WriteString("// wgpu/naga emit no fused multiply-add for it). Float min/max, integer division and float->int\n")
	out.WriteString("// conversion are spelled out (select and the os_* helpers), never WGSL's min/max or plain casts.\n")
	var bl []string
	for i, b := range k.Buffers {
		what := fmt.Sprintf("%s (%s %s", e.bufNames[i], b.Elem, b.Access)
		if e.bufKinds[i] == bufPacked {
			what += ", packed in u32 words"
		}
		bl = append(bl, fmt.Sprintf("@binding(%d) %s)", i, what))
		bind := Binding{Name: b.Name, Type: "array<" + e.bufElemType(i) + ">", ElemBytes: b.Elem.Stride(), Words: e.bufKinds[i] == bufPacked, ReadOnly: b.Access == ir.ReadOnly && !e.bufAtomic[i]}
		m.Bindings = append(m.Bindings, bind)
	}
	if len(k.Params) > 0 {
		var fs []string
		for i, x := range k.Params {
			fs = append(fs, fmt.Sprintf("%s %s", e.paramFields[i], x.Type))
		}
		bl = append(bl, fmt.Sprintf("@binding(%d) params (%s: %s; 4 bytes each, a read-only storage buffer)", len(k.Buffers), e.paramsType, strings.Join(fs, ", ")))
		m.Bindings = append(m.Bindings, Binding{Name: "params", Type: e.paramsType, ReadOnly: true, Params: true})
	}
	if len(bl) > 0 {
		fmt.Fprintf(&out, "// Bindings, all @group(0): %s.\n", strings.Join(bl, ", "))
	}
	fmt.Fprintf(&out, "// Workgroup %dx%dx%d.\n\n", k.WorkgroupSize[0], k.WorkgroupSize[1], k.WorkgroupSize[2])
	for _, x := range m.Enables {
		fmt.Fprintf(&out, "enable %s;\n", x)
	}
	if e.enables["subgroups"] {
		// The shuffles of expanded reductions run in control flow the IR verifier proved uniform
		// across the workgroup; WGSL's own analysis cannot see that from the text.
		out.WriteString("diagnostic(off, subgroup_uniformity);\n")
	}
	for _, x := range m.Requires {
		// WGSL's `requires` directive is optional for a language extension; naga v0.19 does not parse it.
		fmt.Fprintf(&out, "// requires %s;\n", x)
	}
	if len(m.Enables) > 0 || len(m.Requires) > 0 {
		out.WriteByte('\n')
	}
	if len(k.Params) > 0 {
		fmt.Fprintf(&out, "struct %s {\n", e.paramsType)
		for i, x := range k.Params {
			fmt.Fprintf(&out, "\t%s: %s,\n", e.paramFields[i], e.typ(x.Type, x.Pos))
		}
		out.WriteString("}\n\n")
	}
	for i, b := range k.Buffers {
		acc := "read_write"
		if m.Bindings[i].ReadOnly {
			acc = "read"
		}
		fmt.Fprintf(&out, "@group(0) @binding(%d) var<storage, %s> %s: array<%s>;\n", i, acc, e.bufNames[i], e.bufElemType(i))
		_ = b
	}
	if len(k.Params) > 0 {
		fmt.Fprintf(&out, "@group(0) @binding(%d) var<storage, read> params: %s;\n", len(k.Buffers), e.paramsType)
	}
	if len(k.Buffers)+len(k.Params) > 0 {
		out.WriteByte('\n')
	}
	for i, s := range k.Shared {
		t := e.typ(s.Elem, s.Pos)
		if e.sharedAtomic[i] {
			t = "atomic<" + t + ">"
		}
		fmt.Fprintf(&out, "var<workgroup> %s: array<%s, %d>;\n", e.sharedNames[i], t, s.Len)
	}
	if len(k.Shared) > 0 {
		out.WriteByte('\n')
	}
	writeHelpers(&out, e.used)
	var args []string
	for _, b := range []struct {
		b          ir.Builtin
		name, decl string
	}{
		{ir.GlobalID, "gid", "global_invocation_id) gid: vec3<u32>"},
		{ir.LocalID, "lid", "local_invocation_id) lid: vec3<u32>"},
		{ir.WorkgroupID, "wgid", "workgroup_id) wgid: vec3<u32>"},
		{ir.NumWorkgroups, "nwg", "num_workgroups) nwg: vec3<u32>"},
		{ir.LocalIndex, "lidx", "local_invocation_index) lidx: u32"},
		{ir.SubgroupSize, "sg_size", "subgroup_size) sg_size: u32"},
		{ir.SubgroupLane, "sg_lane", "subgroup_invocation_id) sg_lane: u32"},
	} {
		if e.builtins[b.b] {
			args = append(args, "@builtin("+b.decl)
		}
	}
	wg := k.WorkgroupSize
	fmt.Fprintf(&out, "@compute @workgroup_size(%d, %d, %d)\n", wg[0], wg[1], wg[2])
	if len(args) <= 1 {
		fmt.Fprintf(&out, "fn %s(%s) {\n", k.Name, strings.Join(args, ""))
	} else {
		fmt.Fprintf(&out, "fn %s(\n\t%s,\n) {\n", k.Name, strings.Join(args, ",\n\t"))
	}
	out.WriteString(e.body.String())
	out.WriteString("}\n")
	m.Source = out.String()
	return m
}

func sortedKeys(m map[string]bool) []string {
	var s []string
	for x := range m {
		s = append(s, x)
	}
	sort.Strings(s)
	return s
}

// Blocks and control flow.

func (e *emitter) block(b *ir.Block) {
	for _, in := range b.Insts {
		if e.err != nil {
			return
		}
		e.inst(in)
		if in.Op.IsTerminator() {
			return // what follows never runs
		}
	}
}

func (e *emitter) nested(b *ir.Block) {
	e.ind++
	e.block(b)
	e.ind--
}

// leaves reports whether b holds a return, or a break or continue of the loop b belongs to
// (one not inside a loop nested in b).
func leaves(b *ir.Block) bool {
	for _, in := range b.Insts {
		switch in.Op {
		case ir.OpReturn, ir.OpBreak, ir.OpContinue:
			return true
		case ir.OpIf:
			if leaves(in.Blocks[0]) || leaves(in.Blocks[1]) {
				return true
			}
		case ir.OpLoop:
			if returns(in.Blocks[0]) || returns(in.Blocks[1]) {
				return true
			}
		}
	}
	return false
}

// returns reports whether b holds a return at any depth.
func returns(b *ir.Block) bool {
	found := false
	ir.Walk(b, func(in *ir.Inst) bool {
		found = found || in.Op == ir.OpReturn
		return !found
	})
	return found
}

func (e *emitter) control(in *ir.Inst) {
	switch in.Op {
	case ir.OpIf:
		e.line("if (%s) {", e.scalarOf(in.Args[0]))
		e.nested(in.Blocks[0])
		if len(in.Blocks[1].Insts) > 0 {
			e.line("} else {")
			e.nested(in.Blocks[1])
		}
		e.line("}")
	case ir.OpLoop:
		body, cont := in.Blocks[0], in.Blocks[1]
		switch {
		case len(cont.Insts) == 0:
			e.line("loop {")
			e.nested(body)
			e.line("}")
		case !leaves(cont):
			// WGSL's continuing block: where a continue in the body goes.
			e.line("loop {")
			e.nested(body)
			e.ind++
			e.line("continuing {")
			e.nested(cont)
			e.line("}")
			e.ind--
			e.line("}")
		default:
			// A continuing block that breaks, continues or returns is not a WGSL continuing
			// construct: it runs at the top of every iteration but the first, so a continue in
			// the body (which starts the next iteration) runs it too.
			var flag string
			for {
				flag = fmt.Sprintf("loop%d_first", e.loopN)
				e.loopN++
				if e.names.exact(flag) {
					break
				}
			}
			e.line("var %s = true;", flag)
			e.line("loop {")
			e.ind++
			e.line("if (!%s) {", flag)
			e.nested(cont)
			e.line("}")
			e.line("%s = false;", flag)
			e.block(body)
			e.ind--
			e.line("}")
		}
	case ir.OpBreak:
		e.line("break;")
	case ir.OpContinue:
		e.line("continue;")
	case ir.OpReturn:
		e.line("return;")
	case ir.OpBarrier:
		// The IR's barrier orders shared and buffer memory: WGSL splits that in two.
		if e.writesBuffer {
			e.line("storageBarrier();")
		}
		e.line("workgroupBarrier();")
	}
}

// Values.

// decl declares in's value as `let name: T = expr;`.
func (e *emitter) decl(in *ir.Inst, expr string) {
	name := e.valueName(in)
	e.line("let %s: %s = %s;", name, e.typ(in.Type, in.Pos), strip(expr))
	e.vals[in] = &value{t: in.Type, name: name}
}

func (e *emitter) valueName(in *ir.Inst) string {
	if in.Name != "" {
		return e.names.fresh(in.Name)
	}
	return e.names.fresh(fmt.Sprintf("v%d", e.numbers[in]))
}

func (e *emitter) get(a *ir.Inst) *value {
	if v, ok := e.vals[a]; ok {
		return v
	}
	e.errAt(a.Pos, "%s value used before it is written (dead code or a scoping bug)", a.Op)
	return &value{t: a.Type, lit: "0u"}
}

// whole returns operand a as one expression of its type.
func (e *emitter) whole(a *ir.Inst) string {
	v := e.get(a)
	if v.name != "" {
		return v.name
	}
	if v.t.Lanes > 1 {
		return fmt.Sprintf("%s(%s)", e.typ(v.t, a.Pos), strip(v.lit))
	}
	return v.lit
}

// scalarOf returns scalar operand a.
func (e *emitter) scalarOf(a *ir.Inst) string { return e.whole(a) }

// lane returns lane i of operand a.
func (e *emitter) lane(a *ir.Inst, i int) string {
	v := e.get(a)
	if v.name == "" {
		return v.lit
	}
	if v.t.Lanes <= 1 {
		return v.name
	}
	return v.name + "." + "xyzw"[i:i+1]
}

// allConst reports whether every operand of in is a constant written in place: WGSL would
// evaluate such an expression at shader creation, where overflow, division by zero and
// out-of-range shifts are errors rather than the wrapping the IR defines.
func (e *emitter) allConst(in *ir.Inst) bool {
	if len(in.Args) == 0 {
		return false
	}
	for _, a := range in.Args {
		if a.Op != ir.OpConst {
			return false
		}
	}
	return true
}

// materialize declares constant operand a as a let, so expressions using it are evaluated at
// run time.
func (e *emitter) materialize(a *ir.Inst) {
	v := e.get(a)
	if v.name != "" {
		return
	}
	name := e.names.fresh(fmt.Sprintf("c%d", e.numbers[a]))
	e.line("let %s: %s = %s;", name, e.typ(a.Type, a.Pos), strip(e.whole(a)))
	e.vals[a] = &value{t: a.Type, name: name}
}

// Literals.

// literal returns one lane of a constant of kind s with bit pattern bits.
func (e *emitter) literal(s ir.Scalar, bits uint64, pos ir.Pos) string {
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
			return "(-2147483647i - 1i)"
		case v < 0:
			return fmt.Sprintf("(%di)", v)
		}
		return fmt.Sprintf("%di", v)
	case ir.U32:
		return fmt.Sprintf("%du", uint32(bits))
	case ir.F32:
		return e.f32Lit(uint32(bits))
	case ir.F16:
		h := uint16(bits)
		if !e.o.F16 {
			// The f32 of the same value (exact).
			return e.f32Lit(math.Float32bits(float32(ir.ConstFloat(ir.TF16, uint64(h)))))
		}
		f := ir.ConstFloat(ir.TF16, uint64(h))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			e.used["os_f16_bits"] = true
			return fmt.Sprintf("os_f16_bits(0x%04xu)", h)
		}
		return floatText(strconv.FormatFloat(f, 'g', -1, 32), "h")
	}
	e.errAt(pos, "constant of kind %s has no WGSL literal", s)
	return "0u"
}

func (e *emitter) f32Lit(bits uint32) string {
	f := math.Float32frombits(bits)
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		e.used["os_f32_bits"] = true
		return fmt.Sprintf("os_f32_bits(0x%08xu)", bits)
	}
	return floatText(strconv.FormatFloat(float64(f), 'g', -1, 32), "f")
}

// floatText makes a decimal float literal: a '.' or exponent, the suffix, parentheses when
// negative. A shortest round-trip decimal parses back to the same bits (WGSL rounds float
// literals to nearest).
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

func infix(a, op, b string) string { return "(" + a + " " + op + " " + b + ")" }

func (e *emitter) helper(name string, args ...string) string {
	e.used[name] = true
	for i := range args {
		args[i] = strip(args[i])
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}
