package vulkan

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/onesource-go/onesource/ir"
)

// EmitOptions are the target facts the emitter records into the Module, and how it writes it.
type EmitOptions struct {
	// SubgroupSize is the subgroup size the lowering assumed (0: none). It is recorded in
	// Module.SubgroupSize, where the module uses subgroups: the device must run the pipeline
	// with exactly that size (a module without subgroup operations records 0).
	SubgroupSize uint32
	// Env is the target environment: the SPIR-V version written and the extensions declared
	// (EnvDefault: Vulkan1_3). Device.Env is the one a device runs.
	Env Env
	// Debug adds source-level debug information: an OpString with the path of each Go file the
	// kernel's instructions come from, an OpSource naming the kernel's file, and an OpLine with
	// the Go file and line before the code of each IR instruction, so validation layers,
	// debuggers and RenderDoc point at the DSL line. Off by default: the words then do not
	// depend on where the source tree lives, and stay small.
	Debug bool
	// CoopMatrix is the cooperative-matrix shape (VK_KHR_cooperative_matrix, int8 products into
	// int32 at subgroup scope) the native body of the mma island uses (IslandShape picks it from
	// what the device lists); a kernel lowered with the island native needs one.
	CoopMatrix CoopShape
}

// Emit translates a verified, lowered kernel into a SPIR-V module for opts.Env (SPIR-V 1.6 for
// Vulkan 1.3 by default; see the package documentation for the contract). It never panics: IR
// it cannot express (an unexpanded OpReduce, a narrow shared array, malformed instructions, a
// capability the environment cannot declare) gives an error that names the kernel and the
// instruction's position.
func Emit(k *ir.Kernel, opts EmitOptions) (mod *Module, err error) {
	if k == nil {
		return nil, errors.New("vulkan: Emit: nil kernel")
	}
	if opts.Env > Vulkan1_3 {
		return nil, fmt.Errorf("vulkan: Emit: unknown environment %v", opts.Env)
	}
	opts.Env = opts.Env.resolve()
	e := &spvEmitter{
		k:    k,
		m:    newSPVModule(),
		opts: opts,
		vals: map[*ir.Inst]uint32{},
		bi:   map[ir.Builtin]uint32{},
	}
	defer func() {
		if r := recover(); r != nil {
			mod, err = nil, &ir.Error{Pos: k.Pos, Kernel: k.Name, Msg: fmt.Sprintf("vulkan: internal emitter error: %v", r)}
		}
	}()
	if err := e.kernel(); err != nil {
		return nil, err
	}
	if err := e.envFinish(opts.Env, spvCapNeeds); err != nil {
		return nil, err
	}
	return e.module(), nil
}

// spvEmitter holds the state of one Emit call.
type spvEmitter struct {
	k    *ir.Kernel
	m    *spvModule
	opts EmitOptions

	vals map[*ir.Inst]uint32 // IR value -> SPIR-V result id

	fn        uint32   // the entry point function
	first     uint32   // label of its first block
	bufVars   []uint32 // per k.Buffers
	bufElem   []uint32 // element type per buffer
	pcVar     uint32   // push-constant block variable (0: no params)
	shVars    []uint32 // per k.Shared
	varIDs    []uint32 // per k.Vars (Function storage)
	bi        map[ir.Builtin]uint32
	iface     []uint32          // entry point interface, in declaration order
	storeOnly map[*ir.Inst]bool // value used only as the stored value of buffer stores

	fnVars spvWords // OpVariable instructions of the first block
	code   spvWords // the function's blocks (the first block's label and variables excluded)

	term  bool // the current block has ended (what follows is dead)
	skip  bool // a return inside a continuing block was recorded: the rest of this IR block is dead
	loops []*spvLoop

	inCont      int    // > 0 while emitting a loop's continuing block (returns set a flag)
	flagVar     uint32 // Function bool: a return happened inside a continuing block
	flagReturns int    // count of such returns emitted so far

	pending error // the first emission error; emission stops there

	coopTypes map[[4]uint32]uint32 // cooperative-matrix types by component, rows, columns, use

	// Debug information (EmitOptions.Debug).
	files    map[string]uint32 // Go file path -> its OpString
	linePos  ir.Pos            // the OpLine in effect at the end of code (zero: none)
	lineScan int               // code before this index has no OpLabel after the OpLine in effect
}

type spvLoop struct {
	merge, cont uint32
	broke       bool // a break to merge was emitted
}

// errAt returns an emission error at an instruction (or resource) position.
func (e *spvEmitter) errAt(p ir.Pos, format string, args ...any) error {
	return &ir.Error{Pos: p, Kernel: e.k.Name, Msg: "vulkan: " + fmt.Sprintf(format, args...)}
}

func (e *spvEmitter) kernel() error {
	k, m := e.k, e.m
	if k.Body == nil {
		return e.errAt(k.Pos, "kernel has no body")
	}
	for _, d := range k.WorkgroupSize {
		if d == 0 {
			return e.errAt(k.Pos, "workgroup size %v has a zero dimension", k.WorkgroupSize)
		}
	}
	e.scanUses()

	// Debug information: the DSL kernel and its Go position (the base name of its file; with
	// EmitOptions.Debug the path, which OpLine refers to).
	var file uint32
	if e.opts.Debug {
		file = e.fileString(k.Pos.File)
	} else {
		file = m.id()
		m.strings.instStr(spvOpString, []uint32{file}, filepath.Base(k.Pos.File))
	}
	m.strings.inst(spvOpSource, spvSourceLangUnknown, 0, file)
	m.processed.instStr(spvOpModuleProcessed, nil, fmt.Sprintf("onesource: kernel %s at %s", k.Name, k.Pos.Short()))

	m.tFunc(m.tVoid())
	e.fn = m.id()
	m.name(e.fn, k.Name)
	e.first = m.id()

	if err := e.declareResources(); err != nil {
		return err
	}

	e.block(k.Body)
	if err := e.pending; err != nil {
		return err
	}
	if !e.term {
		e.code.inst(spvOpReturn)
		e.term = true
	}
	return nil
}

// declareResources declares the buffers, the push-constant block, the shared arrays and the
// private variables.
func (e *spvEmitter) declareResources() error {
	k, m := e.k, e.m
	for i, b := range k.Buffers {
		m.at = b.Pos
		if b.Elem.Lanes < 1 || b.Elem.Lanes > 4 || (b.Elem.Lanes > 1 && b.Elem.Scalar.Bits() != 32) || b.Elem.Scalar == ir.Bool || b.Elem.Scalar == ir.Void || b.Elem.Scalar == ir.F64 {
			return e.errAt(b.Pos, "buffer %s: element type %s cannot be stored in a buffer", b.Name, b.Elem)
		}
		switch b.Elem.Scalar.Bits() {
		case 8:
			m.capability(spvCapStorageBuffer8BitAccess)
		case 16:
			m.capability(spvCapStorageBuffer16BitAccess)
		}
		elem := e.typeOf(b.Elem)
		arr := m.tRuntimeArray(elem, uint32(spvElemSize(b.Elem)))
		st := m.tStruct(arr)
		m.decorate(st, spvDecBlock)
		m.memberDecorate(st, 0, spvDecOffset, 0)
		switch b.Access {
		case ir.ReadOnly:
			m.memberDecorate(st, 0, spvDecNonWritable)
		case ir.WriteOnly:
			m.memberDecorate(st, 0, spvDecNonReadable)
		}
		m.name(st, b.Name+"_block")
		m.memberName(st, 0, "data")
		v := m.id()
		m.globals.inst(spvOpVariable, m.tPtr(spvSCStorageBuffer, st), v, spvSCStorageBuffer)
		m.decorate(v, spvDecDescriptorSet, 0)
		m.decorate(v, spvDecBinding, uint32(i))
		m.name(v, b.Name)
		e.bufVars = append(e.bufVars, v)
		e.bufElem = append(e.bufElem, elem)
		e.iface = append(e.iface, v)
	}
	if len(k.Params) > 0 {
		members := make([]uint32, len(k.Params))
		for i, p := range k.Params {
			if p.Type.Lanes != 1 || p.Type.Scalar.Bits() != 32 || p.Type.Scalar == ir.Bool {
				return e.errAt(p.Pos, "parameter %s: type %s is not a 32-bit scalar", p.Name, p.Type)
			}
			members[i] = e.typeOf(p.Type)
		}
		st := m.tStruct(members...)
		m.decorate(st, spvDecBlock)
		m.name(st, "Params")
		for i, p := range k.Params {
			m.memberDecorate(st, uint32(i), spvDecOffset, uint32(4*i))
			m.memberName(st, uint32(i), p.Name)
		}
		e.pcVar = m.id()
		m.globals.inst(spvOpVariable, m.tPtr(spvSCPushConstant, st), e.pcVar, spvSCPushConstant)
		m.name(e.pcVar, "params")
		e.iface = append(e.iface, e.pcVar)
	}
	for _, s := range k.Shared {
		if s.Elem.Scalar.Bits() != 32 || s.Elem.Scalar == ir.Bool || s.Elem.Lanes < 1 || s.Elem.Lanes > 4 {
			return e.errAt(s.Pos, "shared array %s: element type %s is not supported in workgroup memory by the Vulkan emitter (32-bit scalars and vectors only)", s.Name, s.Elem)
		}
		if s.Len <= 0 {
			return e.errAt(s.Pos, "shared array %s: length %d is not positive", s.Name, s.Len)
		}
		arr := m.tArray(e.typeOf(s.Elem), uint32(s.Len))
		v := m.id()
		m.globals.inst(spvOpVariable, m.tPtr(spvSCWorkgroup, arr), v, spvSCWorkgroup)
		m.name(v, s.Name)
		e.shVars = append(e.shVars, v)
		e.iface = append(e.iface, v)
	}
	for _, x := range k.Vars {
		m.at = x.Pos
		if !x.Type.IsValue() {
			return e.errAt(x.Pos, "variable %s: type %s is not a value type", x.Name, x.Type)
		}
		if x.Type.Scalar == ir.F16 {
			m.capability(spvCapFloat16)
		}
		v := m.id()
		e.fnVars.inst(spvOpVariable, m.tPtr(spvSCFunction, e.typeOf(x.Type)), v, spvSCFunction)
		m.name(v, x.Name)
		e.varIDs = append(e.varIDs, v)
	}
	return nil
}

// spvElemSize is the array stride of a buffer element (std430: a 3-lane vector takes 16 bytes).
func spvElemSize(t ir.Type) int {
	lanes := int(t.Lanes)
	if lanes == 3 {
		lanes = 4
	}
	return t.Scalar.Bits() / 8 * lanes
}

// scanUses finds the f32 -> f16 conversions whose value is used only as the stored value of
// buffer stores (such a conversion can carry an FPRoundingMode RTE decoration). It also sizes
// the value map.
func (e *spvEmitter) scanUses() {
	n := 0
	var convs map[*ir.Inst]bool
	ir.Walk(e.k.Body, func(in *ir.Inst) bool {
		n++
		if in.Op == ir.OpConvert && in.Type == ir.TF16 && len(in.Args) == 1 && in.Args[0] != nil && in.Args[0].Type == ir.TF32 {
			if convs == nil {
				convs = map[*ir.Inst]bool{}
			}
			convs[in] = true
		}
		return true
	})
	e.vals = make(map[*ir.Inst]uint32, n)
	e.storeOnly = map[*ir.Inst]bool{}
	if convs == nil {
		return
	}
	other := map[*ir.Inst]bool{}
	ir.Walk(e.k.Body, func(in *ir.Inst) bool {
		for i, a := range in.Args {
			if !convs[a] {
				continue
			}
			if in.Op == ir.OpStore && in.Mem == ir.MemBuffer && i == len(in.Args)-1 && i > 0 {
				e.storeOnly[a] = true
			} else {
				other[a] = true
			}
		}
		return true
	})
	for a := range other {
		delete(e.storeOnly, a)
	}
}

// module assembles the words and the Module description.
func (e *spvEmitter) module() *Module {
	k, m := e.k, e.m
	iface := e.iface
	if e.opts.Env.spirvWord() < spv14 {
		// Before SPIR-V 1.4 the interface lists the Input and Output variables only: here the
		// builtins.
		iface = nil
		for _, v := range e.iface {
			for _, b := range e.bi {
				if b == v {
					iface = append(iface, v)
					break
				}
			}
		}
	}
	var entry spvWords
	entry.instStr(spvOpEntryPoint, []uint32{spvExecModelGLCompute, e.fn}, k.Name, iface...)
	var modes spvWords
	modes.inst(spvOpExecutionMode, e.fn, spvExecModeLocalSize, k.WorkgroupSize[0], k.WorkgroupSize[1], k.WorkgroupSize[2])

	void := m.tVoid()
	fnType := m.tFunc(void)
	var code spvWords
	code.inst(spvOpFunction, void, e.fn, spvFunctionCtlNone, fnType)
	code.inst(spvOpLabel, e.first)
	code = append(code, e.fnVars...)
	code = append(code, e.code...)
	code.inst(spvOpFunctionEnd)

	words := m.assemble(e.opts.Env.spirvWord(), entry, modes, code)
	mod := &Module{
		Name:             k.Name,
		Env:              e.opts.Env,
		Words:            words,
		PushConstantSize: uint32(4 * len(k.Params)),
		WorkgroupSize:    k.WorkgroupSize,
		SubgroupSize:     e.opts.SubgroupSize,
		SharedBytes:      uint32(k.SharedBytes()),
	}
	for _, b := range k.Buffers {
		mod.Bindings = append(mod.Bindings, Binding{Name: b.Name, ElemSize: spvElemSize(b.Elem), ReadOnly: b.Access == ir.ReadOnly})
	}
	c := m.caps
	mod.Features = Features{
		Int8:              c[spvCapInt8],
		Int16:             c[spvCapInt16],
		Float16:           c[spvCapFloat16],
		Float64:           c[spvCapFloat64],
		StorageBuffer8:    c[spvCapStorageBuffer8BitAccess],
		StorageBuffer16:   c[spvCapStorageBuffer16BitAccess],
		IntegerDotProduct: c[spvCapDotProduct],
		SubgroupShuffle:   c[spvCapGroupNonUniformShuffle],
		SubgroupBasic:     c[spvCapGroupNonUniform],

		SubgroupArithmetic: c[spvCapGroupNonUniformArithmetic],
		AtomicFloat32Add:   c[spvCapAtomicFloat32AddEXT],
		CooperativeMatrix:  c[spvCapCooperativeMatrixKHR],
	}
	if !c[spvCapGroupNonUniform] && !c[spvCapCooperativeMatrixKHR] {
		// The module uses no subgroup operation or builtin (each declares GroupNonUniform) and no
		// cooperative matrix (whose layout across lanes is the subgroup's): the size the
		// lowering assumed binds nothing, and requiring it would refuse a workgroup narrower than
		// a subgroup (a kernel of one invocation per workgroup on lavapipe's 8).
		mod.SubgroupSize = 0
	}
	return mod
}

// fileString returns the OpString holding a Go file's path, declaring it on first use.
func (e *spvEmitter) fileString(path string) uint32 {
	if id, ok := e.files[path]; ok {
		return id
	}
	if e.files == nil {
		e.files = map[string]uint32{}
	}
	id := e.m.id()
	e.m.strings.instStr(spvOpString, []uint32{id}, path)
	e.files[path] = id
	return id
}

// at is called before the code of each IR instruction: it records the instruction's position
// (the capabilities it declares are traced to it) and, with EmitOptions.Debug, puts an OpLine
// with its Go file and line before its code unless the line in effect is already that one. An
// OpLine lasts until the end of its block, so a label since the last one clears it.
func (e *spvEmitter) at(in *ir.Inst) {
	e.m.at = in.Pos
	if !e.opts.Debug || in.Op == ir.OpConst || in.Pos.File == "" || in.Pos.Line <= 0 {
		return
	}
	for i := e.lineScan; i < len(e.code); {
		n := int(e.code[i] >> 16)
		if spvOp(e.code[i]&0xffff) == spvOpLabel {
			e.linePos = ir.Pos{}
		}
		if n == 0 {
			break
		}
		i += n
	}
	e.lineScan = len(e.code)
	if in.Pos == e.linePos {
		return
	}
	e.code.inst(spvOpLine, e.fileString(in.Pos.File), uint32(in.Pos.Line), 0)
	e.linePos = in.Pos
	e.lineScan = len(e.code)
}
