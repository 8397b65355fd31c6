package vulkan

import (
	"github.com/onesource-go/onesource/ir"
)

// Types and constants.

// scalarType returns the SPIR-V type of one lane of kind s.
func (e *spvEmitter) scalarType(s ir.Scalar) uint32 {
	m := e.m
	switch s {
	case ir.Void:
		return m.tVoid()
	case ir.Bool:
		return m.tBool()
	case ir.I8:
		return m.tInt(8, true)
	case ir.U8:
		return m.tInt(8, false)
	case ir.I16:
		return m.tInt(16, true)
	case ir.U16:
		return m.tInt(16, false)
	case ir.I32:
		return m.tInt(32, true)
	case ir.U32:
		return m.tInt(32, false)
	case ir.F16:
		return m.tFloat(16)
	case ir.F32:
		return m.tFloat(32)
	case ir.F64:
		m.capability(spvCapFloat64)
		return m.tFloat(64)
	}
	panic("unknown scalar kind " + s.String())
}

// typeOf returns the SPIR-V type of t.
func (e *spvEmitter) typeOf(t ir.Type) uint32 {
	s := e.scalarType(t.Scalar)
	if t.Lanes > 1 {
		return e.m.tVec(s, uint32(t.Lanes))
	}
	return s
}

// boolOf is the bool type with t's lane count (the result of comparing two t values).
func (e *spvEmitter) boolOf(t ir.Type) uint32 {
	return e.typeOf(ir.Type{Scalar: ir.Bool, Lanes: t.Lanes})
}

// constOf returns the constant of type t whose every lane has the bit pattern bits.
func (e *spvEmitter) constOf(t ir.Type, bits uint64) uint32 {
	m := e.m
	var lane uint32
	switch t.Scalar {
	case ir.Bool:
		if bits != 0 {
			bits = 1
		}
		lane = m.constBool(bits != 0)
	case ir.F64:
		lane = m.constant(e.scalarType(ir.F64), 64, bits)
	case ir.F16:
		bits &= 0xffff
		lane = m.constant(e.scalarType(ir.F16), 16, bits)
	case ir.I32, ir.U32, ir.F32:
		bits &= 0xffffffff
		lane = m.constant(e.scalarType(t.Scalar), 32, bits)
	default:
		panic("constant of type " + t.String())
	}
	if t.Lanes > 1 {
		return m.constSplat(e.typeOf(t), int(t.Lanes), lane, bits)
	}
	return lane
}

// Instruction helpers.

// op appends an instruction with a result of type typ and returns the result id.
func (e *spvEmitter) op(o spvOp, typ uint32, operands ...uint32) uint32 {
	id := e.m.id()
	e.code = append(e.code, uint32(len(operands)+3)<<16|uint32(o), typ, id)
	e.code = append(e.code, operands...)
	return id
}

// fop is op for float arithmetic: the result is decorated NoContraction (the numeric contract:
// a*b+c is two roundings).
func (e *spvEmitter) fop(o spvOp, typ uint32, operands ...uint32) uint32 {
	id := e.op(o, typ, operands...)
	e.m.decorate(id, spvDecNoContraction)
	return id
}

// ext appends a GLSL.std.450 extended instruction.
func (e *spvEmitter) ext(inst uint32, typ uint32, operands ...uint32) uint32 {
	set := e.m.glsl()
	id := e.m.id()
	e.code = append(e.code, uint32(len(operands)+5)<<16|uint32(spvOpExtInst), typ, id, set, inst)
	e.code = append(e.code, operands...)
	return id
}

func (e *spvEmitter) label(id uint32) {
	e.code.inst(spvOpLabel, id)
	e.term = false
}

func (e *spvEmitter) branch(id uint32) { e.code.inst(spvOpBranch, id) }

func (e *spvEmitter) fail(err error) {
	if e.pending == nil {
		e.pending = err
	}
}

// Blocks and control flow.

// block emits the instructions of b. Instructions after a terminator are dead and are not
// emitted. Inside a continuing block, a return only sets the flag; the rest of the block after
// a construct that may have returned runs under a check of the flag.
func (e *spvEmitter) block(b *ir.Block) {
	if b == nil {
		return
	}
	for i, in := range b.Insts {
		if e.term || e.skip || e.pending != nil {
			break
		}
		if in == nil {
			e.fail(e.errAt(e.k.Pos, "nil instruction"))
			break
		}
		before := e.flagReturns
		e.inst(in)
		if e.inCont > 0 && e.flagReturns > before && !e.term && !e.skip && e.pending == nil && i+1 < len(b.Insts) {
			rest := &ir.Block{Insts: b.Insts[i+1:]}
			e.unlessReturned(func() { e.block(rest) })
			break
		}
	}
	e.skip = false
}

// flag returns the variable recording a return inside a continuing block.
func (e *spvEmitter) flag() uint32 {
	if e.flagVar == 0 {
		m := e.m
		e.flagVar = m.id()
		e.fnVars.inst(spvOpVariable, m.tPtr(spvSCFunction, m.tBool()), e.flagVar, spvSCFunction, m.constBool(false))
		m.name(e.flagVar, "returned")
	}
	return e.flagVar
}

// unlessReturned emits body inside a selection taken only when the return flag is clear.
func (e *spvEmitter) unlessReturned(body func()) {
	m := e.m
	f := e.op(spvOpLoad, m.tBool(), e.flag())
	merge, run := m.id(), m.id()
	e.code.inst(spvOpSelectionMerge, merge, spvSelectionCtlNone)
	e.code.inst(spvOpBranchConditional, f, merge, run)
	e.label(run)
	body()
	if !e.term {
		e.branch(merge)
	}
	e.label(merge)
}

func (e *spvEmitter) emitIf(in *ir.Inst, cond uint32) {
	m := e.m
	merge, then := m.id(), m.id()
	els := merge
	hasElse := len(in.Blocks[1].Insts) > 0
	if hasElse {
		els = m.id()
	}
	e.code.inst(spvOpSelectionMerge, merge, spvSelectionCtlNone)
	e.code.inst(spvOpBranchConditional, cond, then, els)
	e.label(then)
	e.block(in.Blocks[0])
	thenTerm := e.term
	if !e.term {
		e.branch(merge)
	}
	elseTerm := false
	if hasElse {
		e.label(els)
		e.block(in.Blocks[1])
		elseTerm = e.term
		if !e.term {
			e.branch(merge)
		}
	}
	e.label(merge)
	if thenTerm && elseTerm {
		// Neither branch reaches the merge: it is unreachable, and so is the rest of the block.
		e.code.inst(spvOpUnreachable)
		e.term = true
	}
}

func (e *spvEmitter) emitLoop(in *ir.Inst) {
	m := e.m
	header, body, cont, merge := m.id(), m.id(), m.id(), m.id()
	e.branch(header)
	e.label(header)
	e.code.inst(spvOpLoopMerge, merge, cont, spvLoopCtlNone)
	e.branch(body)
	e.label(body)
	lp := &spvLoop{merge: merge, cont: cont}
	start := e.flagReturns
	e.loops = append(e.loops, lp)
	e.block(in.Blocks[0])
	e.loops = e.loops[:len(e.loops)-1]
	if !e.term {
		e.branch(cont)
	}
	bodyReturned := e.flagReturns > start // only inside an outer continuing block

	e.label(cont)
	continuing := func() {
		e.inCont++
		e.block(in.Blocks[1])
		e.inCont--
	}
	if bodyReturned {
		e.unlessReturned(continuing)
	} else {
		continuing()
	}
	returned := e.flagReturns > start
	switch {
	case returned:
		f := e.op(spvOpLoad, m.tBool(), e.flag())
		e.code.inst(spvOpBranchConditional, f, merge, header)
	case !lp.broke && e.inCont > 0:
		// An endless loop inside a continuing block: the enclosing loop's back edge must stay
		// reachable, so this loop's back edge is conditional on a constant true.
		e.code.inst(spvOpBranchConditional, m.constBool(true), header, merge)
	default:
		e.branch(header)
	}

	e.label(merge)
	switch {
	case !lp.broke && !returned && e.inCont == 0:
		// No way out of the loop: its merge is unreachable, and so is the rest of the block.
		e.code.inst(spvOpUnreachable)
		e.term = true
	case returned && e.inCont == 0:
		// A return inside the continuing block left the loop: return now.
		if !lp.broke {
			e.code.inst(spvOpReturn)
			e.term = true
			return
		}
		f := e.op(spvOpLoad, m.tBool(), e.flag())
		after, ret := m.id(), m.id()
		e.code.inst(spvOpSelectionMerge, after, spvSelectionCtlNone)
		e.code.inst(spvOpBranchConditional, f, ret, after)
		e.label(ret)
		e.code.inst(spvOpReturn)
		e.label(after)
	}
	// returned && inCont > 0: the flag stays set; the enclosing block skips what follows.
}

// inst emits one instruction.
func (e *spvEmitter) inst(in *ir.Inst) {
	e.at(in)
	var buf [4]uint32
	args := buf[:0]
	if len(in.Args) > len(buf) {
		args = make([]uint32, 0, len(in.Args))
	}
	args = args[:len(in.Args)]
	for i, a := range in.Args {
		id, ok := e.vals[a]
		if a == nil || !ok {
			e.fail(e.errAt(in.Pos, "%s: operand %d is not a value defined before it", in.Op, i))
			return
		}
		args[i] = id
	}
	if err := e.checkShape(in); err != nil {
		e.fail(err)
		return
	}
	e.noteFloat16(in)
	m := e.m
	t := in.Type
	var res uint32
	switch in.Op {
	case ir.OpConst:
		res = e.constOf(t, in.Aux)
	case ir.OpBuiltin:
		res = e.builtin(in)
	case ir.OpParam:
		p := e.k.Params[in.Ref]
		ptr := e.op(spvOpAccessChain, m.tPtr(spvSCPushConstant, e.typeOf(p.Type)), e.pcVar, m.constU32(uint32(in.Ref)))
		res = e.op(spvOpLoad, e.typeOf(t), ptr)
	case ir.OpLoad:
		ptr, elem := e.pointer(in, args)
		v := e.op(spvOpLoad, e.typeOf(elem), ptr)
		res = e.widen(v, elem)
	case ir.OpStore:
		ptr, elem := e.pointer(in, args)
		v := e.narrow(args[len(args)-1], elem)
		e.code.inst(spvOpStore, ptr, v)
		return
	case ir.OpAtomic:
		res = e.atomic(in, args)
	case ir.OpLen:
		res = e.op(spvOpArrayLength, e.typeOf(ir.TU32), e.bufVars[in.Ref], 0)
	case ir.OpNeg:
		if t.Scalar.IsFloat() {
			res = e.op(spvOpFNegate, e.typeOf(t), args[0])
		} else {
			res = e.op(spvOpSNegate, e.typeOf(t), args[0])
		}
	case ir.OpNot:
		if t.Scalar == ir.Bool {
			res = e.op(spvOpLogicalNot, e.typeOf(t), args[0])
		} else {
			res = e.op(spvOpNot, e.typeOf(t), args[0])
		}
	case ir.OpAbs:
		switch {
		case t.Scalar.IsFloat():
			res = e.ext(spvGLSLFAbs, e.typeOf(t), args[0])
		case t.Scalar.IsSigned():
			res = e.ext(spvGLSLSAbs, e.typeOf(t), args[0])
		default:
			res = e.op(spvOpCopyObject, e.typeOf(t), args[0])
		}
	case ir.OpSqrt:
		res = e.ext(spvGLSLSqrt, e.typeOf(t), args[0])
	case ir.OpFloor:
		res = e.ext(spvGLSLFloor, e.typeOf(t), args[0])
	case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpMin, ir.OpMax,
		ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr:
		res = e.binary(in, args[0], args[1])
	case ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe:
		res = e.compare(in, args[0], args[1])
	case ir.OpSelect:
		res = e.op(spvOpSelect, e.typeOf(t), e.selectCond(in, args[0]), args[1], args[2])
	case ir.OpConvert:
		res = e.convert(in, args[0])
	case ir.OpBitcast:
		if in.Args[0].Type == t {
			res = e.op(spvOpCopyObject, e.typeOf(t), args[0])
		} else {
			res = e.op(spvOpBitcast, e.typeOf(t), args[0])
		}
	case ir.OpCompose:
		res = e.op(spvOpCompositeConstruct, e.typeOf(t), args...)
	case ir.OpExtract:
		res = e.op(spvOpCompositeExtract, e.typeOf(t), args[0], uint32(in.Aux))
	case ir.OpDotI8x4:
		// Non-saturating packed dot product: never OpSDotAccSat (an add after it is an OpIAdd).
		m.capability(spvCapDotProduct)
		m.capability(spvCapDotProductInput4x8BitPacked)
		res = e.op(spvOpSDot, e.typeOf(t), args[0], args[1], spvPacked4x8Bit)
	case ir.OpShuffleXor:
		m.capability(spvCapGroupNonUniform)
		m.capability(spvCapGroupNonUniformShuffle)
		res = e.op(spvOpGroupNonUniformShuffleXor, e.typeOf(t), m.constU32(spvScopeSubgroup), args[0], args[1])
	case ir.OpSubgroupReduce:
		// The device's own reduction over the whole subgroup (lower leaves only clusters of
		// exactly the pipeline's subgroup size here); GroupOperation Reduce = 0.
		if e.opts.SubgroupSize == 0 || uint32(in.Ref) != e.opts.SubgroupSize {
			e.fail(e.errAt(in.Pos, "subgroup reduction over clusters of %d lanes needs a pipeline with subgroups of exactly %d (package lower expands the others)", in.Ref, in.Ref))
			return
		}
		m.capability(spvCapGroupNonUniform)
		m.capability(spvCapGroupNonUniformArithmetic)
		op := spvOpGroupNonUniformFAdd
		switch {
		case ir.ReduceOp(in.Aux) == ir.ReduceSum && t.Scalar != ir.F32:
			op = spvOpGroupNonUniformIAdd
		case ir.ReduceOp(in.Aux) == ir.ReduceMax && t.Scalar == ir.F32:
			op = spvOpGroupNonUniformFMax
		case ir.ReduceOp(in.Aux) == ir.ReduceMax && t.Scalar == ir.I32:
			op = spvOpGroupNonUniformSMax
		case ir.ReduceOp(in.Aux) == ir.ReduceMax:
			op = spvOpGroupNonUniformUMax
		}
		res = e.op(op, e.typeOf(t), m.constU32(spvScopeSubgroup), 0, args[0])
	case ir.OpShuffle:
		m.capability(spvCapGroupNonUniform)
		m.capability(spvCapGroupNonUniformShuffle)
		res = e.op(spvOpGroupNonUniformShuffle, e.typeOf(t), m.constU32(spvScopeSubgroup), args[0], args[1])
	case ir.OpReduce:
		e.fail(e.errAt(in.Pos, "reduce.%s must be expanded by package lower before emission", ir.ReduceOp(in.Aux)))
		return
	case ir.OpFma:
		// GLSL.std.450 Fma may round twice (Vulkan gives it the precision of a multiply and an
		// add): the exact fma is lower.LegalizeFma's emulation (lower with Caps.ExactFma false).
		e.fail(e.errAt(in.Pos, "fma must be legalized by package lower before emission (Vulkan's Fma is not exact)"))
		return
	case ir.OpNative:
		if in.Aux >= uint64(ir.NativeCount) {
			e.fail(e.errAt(in.Pos, "unknown native function %d", in.Aux))
			return
		}
		res = e.ext(glslNative[in.Aux], e.typeOf(t), args...)
	case ir.OpIsland:
		e.island(in, args)
		return
	case ir.OpIf:
		e.emitIf(in, args[0])
		return
	case ir.OpLoop:
		e.emitLoop(in)
		return
	case ir.OpBreak, ir.OpContinue:
		if len(e.loops) == 0 || e.inCont > 0 {
			e.fail(e.errAt(in.Pos, "%s outside a loop body", in.Op))
			return
		}
		lp := e.loops[len(e.loops)-1]
		if in.Op == ir.OpBreak {
			lp.broke = true
			e.branch(lp.merge)
		} else {
			e.branch(lp.cont)
		}
		e.term = true
		return
	case ir.OpReturn:
		if e.inCont > 0 {
			// Structured SPIR-V cannot leave a continue construct by returning: record the
			// return; the loop exits through its back edge and returns after its merge.
			e.code.inst(spvOpStore, e.flag(), m.constBool(true))
			e.flagReturns++
			e.skip = true
			return
		}
		e.code.inst(spvOpReturn)
		e.term = true
		return
	case ir.OpBarrier:
		wg := m.constU32(spvScopeWorkgroup)
		e.code.inst(spvOpControlBarrier, wg, wg, m.constU32(spvSemAcquireRelease|spvSemWorkgroupMemory|spvSemUniformMemory))
		return
	default:
		e.fail(e.errAt(in.Pos, "cannot emit %s", in.Op))
		return
	}
	e.vals[in] = res
	if in.Type.Scalar == ir.F16 {
		m.name16(res, in.Name)
	} else {
		m.name(res, in.Name)
	}
}

// noteFloat16 declares the Float16 capability when in computes with f16 values. Loading an f16
// buffer element, storing one, and converting between f16 and f32 where the f16 side is such a
// load or store, need only 16-bit storage.
func (e *spvEmitter) noteFloat16(in *ir.Inst) {
	f16 := in.Type.Scalar == ir.F16
	for _, a := range in.Args {
		if a.Type.Scalar == ir.F16 {
			f16 = true
		}
	}
	if !f16 {
		return
	}
	switch in.Op {
	case ir.OpLoad, ir.OpStore:
		if in.Mem == ir.MemBuffer {
			return
		}
	case ir.OpConvert:
		from := in.Args[0]
		switch {
		case from.Type.Scalar == ir.F16 && in.Type.Scalar.IsFloat() && in.Type.Scalar != ir.F16:
			if from.Op == ir.OpLoad && from.Mem == ir.MemBuffer {
				return
			}
		case in.Type.Scalar == ir.F16 && from.Type.Scalar.IsFloat() && from.Type.Scalar != ir.F16:
			if e.storeOnly[in] {
				return
			}
		}
	}
	e.m.capability(spvCapFloat16)
}

// builtin loads an invocation builtin, declaring its Input variable on first use.
func (e *spvEmitter) builtin(in *ir.Inst) uint32 {
	m := e.m
	b := ir.Builtin(in.Aux)
	u32 := e.typeOf(ir.TU32)
	typ := u32
	if b.PerDim() {
		typ = m.tVec(u32, 3)
	}
	v, ok := e.bi[b]
	if !ok {
		var dec uint32
		var name string
		switch b {
		case ir.GlobalID:
			dec, name = spvBIGlobalInvocationID, "gl_GlobalInvocationID"
		case ir.LocalID:
			dec, name = spvBILocalInvocationID, "gl_LocalInvocationID"
		case ir.WorkgroupID:
			dec, name = spvBIWorkgroupID, "gl_WorkGroupID"
		case ir.NumWorkgroups:
			dec, name = spvBINumWorkgroups, "gl_NumWorkGroups"
		case ir.LocalIndex:
			dec, name = spvBILocalInvocationIndex, "gl_LocalInvocationIndex"
		case ir.SubgroupSize:
			dec, name = spvBISubgroupSize, "gl_SubgroupSize"
		case ir.SubgroupLane:
			dec, name = spvBISubgroupLocalInvocationID, "gl_SubgroupInvocationID"
		case ir.SubgroupID:
			dec, name = spvBISubgroupID, "gl_SubgroupID"
		}
		switch b {
		case ir.SubgroupSize, ir.SubgroupLane, ir.SubgroupID:
			m.capability(spvCapGroupNonUniform)
		}
		v = m.id()
		m.globals.inst(spvOpVariable, m.tPtr(spvSCInput, typ), v, spvSCInput)
		m.decorate(v, spvDecBuiltIn, dec)
		m.name(v, name)
		e.bi[b] = v
		e.iface = append(e.iface, v)
	}
	x := e.op(spvOpLoad, typ, v)
	if b.PerDim() {
		return e.op(spvOpCompositeExtract, u32, x, uint32(in.Ref))
	}
	return x
}

// pointer returns a pointer to the element or variable an OpLoad, OpStore or OpAtomic
// addresses, and the element's type.
func (e *spvEmitter) pointer(in *ir.Inst, args []uint32) (uint32, ir.Type) {
	m := e.m
	switch in.Mem {
	case ir.MemBuffer:
		elem := e.k.Buffers[in.Ref].Elem
		return e.op(spvOpAccessChain, m.tPtr(spvSCStorageBuffer, e.bufElem[in.Ref]), e.bufVars[in.Ref], m.constU32(0), args[0]), elem
	case ir.MemShared:
		elem := e.k.Shared[in.Ref].Elem
		return e.op(spvOpAccessChain, m.tPtr(spvSCWorkgroup, e.typeOf(elem)), e.shVars[in.Ref], args[0]), elem
	default:
		return e.varIDs[in.Ref], e.k.Vars[in.Ref].Type
	}
}

// widen converts a loaded narrow integer to its 32-bit value type.
func (e *spvEmitter) widen(v uint32, elem ir.Type) uint32 {
	switch elem.Scalar {
	case ir.I8, ir.I16:
		return e.op(spvOpSConvert, e.typeOf(ir.TI32), v)
	case ir.U8, ir.U16:
		return e.op(spvOpUConvert, e.typeOf(ir.TU32), v)
	}
	return v
}

// narrow converts a 32-bit value to a narrow integer element (wrapping).
func (e *spvEmitter) narrow(v uint32, elem ir.Type) uint32 {
	switch elem.Scalar {
	case ir.I8, ir.I16:
		return e.op(spvOpSConvert, e.typeOf(elem), v)
	case ir.U8, ir.U16:
		return e.op(spvOpUConvert, e.typeOf(elem), v)
	}
	return v
}

func (e *spvEmitter) atomic(in *ir.Inst, args []uint32) uint32 {
	m := e.m
	ptr, elem := e.pointer(in, args)
	scope := uint32(spvScopeDevice)
	if in.Mem == ir.MemShared {
		scope = spvScopeWorkgroup
	}
	sc := m.constU32(scope)
	sem := m.constU32(spvSemRelaxed)
	t := e.typeOf(in.Type)
	signed := elem.Scalar.IsSigned()
	switch ir.AtomicOp(in.Aux) {
	case ir.AtomicAdd:
		if elem.Scalar == ir.F32 {
			// Native f32 add (lower.Caps.AtomicFloatAdd, the device's AtomicFloat32Add).
			m.capability(spvCapAtomicFloat32AddEXT)
			return e.op(spvOpAtomicFAddEXT, t, ptr, sc, sem, args[1])
		}
		return e.op(spvOpAtomicIAdd, t, ptr, sc, sem, args[1])
	case ir.AtomicMin:
		if signed {
			return e.op(spvOpAtomicSMin, t, ptr, sc, sem, args[1])
		}
		return e.op(spvOpAtomicUMin, t, ptr, sc, sem, args[1])
	case ir.AtomicMax:
		if signed {
			return e.op(spvOpAtomicSMax, t, ptr, sc, sem, args[1])
		}
		return e.op(spvOpAtomicUMax, t, ptr, sc, sem, args[1])
	case ir.AtomicExchange:
		return e.op(spvOpAtomicExchange, t, ptr, sc, sem, args[1])
	case ir.AtomicAnd:
		return e.op(spvOpAtomicAnd, t, ptr, sc, sem, args[1])
	case ir.AtomicOr:
		return e.op(spvOpAtomicOr, t, ptr, sc, sem, args[1])
	case ir.AtomicXor:
		return e.op(spvOpAtomicXor, t, ptr, sc, sem, args[1])
	default: // AtomicCmpXchg: Args [index, comparator, value]
		return e.op(spvOpAtomicCompareExchange, t, ptr, sc, sem, sem, args[2], args[1])
	}
}

func (e *spvEmitter) binary(in *ir.Inst, a, b uint32) uint32 {
	t := in.Type
	typ := e.typeOf(t)
	fl := t.Scalar.IsFloat()
	signed := t.Scalar.IsSigned()
	boolean := t.Scalar == ir.Bool
	pick := func(f, s, u spvOp) uint32 {
		switch {
		case fl:
			return e.fop(f, typ, a, b)
		case signed:
			return e.op(s, typ, a, b)
		}
		return e.op(u, typ, a, b)
	}
	switch in.Op {
	case ir.OpAdd:
		return pick(spvOpFAdd, spvOpIAdd, spvOpIAdd)
	case ir.OpSub:
		return pick(spvOpFSub, spvOpISub, spvOpISub)
	case ir.OpMul:
		return pick(spvOpFMul, spvOpIMul, spvOpIMul)
	case ir.OpDiv:
		return pick(spvOpFDiv, spvOpSDiv, spvOpUDiv)
	case ir.OpRem:
		return pick(spvOpFDiv, spvOpSRem, spvOpUMod) // floats rejected by checkShape
	case ir.OpMin:
		if fl { // b < a ? b : a
			c := e.op(spvOpFOrdLessThan, e.boolOf(t), b, a)
			return e.op(spvOpSelect, typ, c, b, a)
		}
		if signed {
			return e.ext(spvGLSLSMin, typ, a, b)
		}
		return e.ext(spvGLSLUMin, typ, a, b)
	case ir.OpMax:
		if fl { // a > b ? a : b
			c := e.op(spvOpFOrdGreaterThan, e.boolOf(t), a, b)
			return e.op(spvOpSelect, typ, c, a, b)
		}
		if signed {
			return e.ext(spvGLSLSMax, typ, a, b)
		}
		return e.ext(spvGLSLUMax, typ, a, b)
	case ir.OpAnd:
		if boolean {
			return e.op(spvOpLogicalAnd, typ, a, b)
		}
		return e.op(spvOpBitwiseAnd, typ, a, b)
	case ir.OpOr:
		if boolean {
			return e.op(spvOpLogicalOr, typ, a, b)
		}
		return e.op(spvOpBitwiseOr, typ, a, b)
	case ir.OpXor:
		if boolean {
			return e.op(spvOpLogicalNotEqual, typ, a, b)
		}
		return e.op(spvOpBitwiseXor, typ, a, b)
	}
	// Shifts: the IR takes the count modulo the width; SPIR-V leaves counts >= width undefined.
	n := e.op(spvOpBitwiseAnd, typ, b, e.constOf(t, uint64(t.Scalar.Bits()-1)))
	switch {
	case in.Op == ir.OpShl:
		return e.op(spvOpShiftLeftLogical, typ, a, n)
	case signed:
		return e.op(spvOpShiftRightArithmetic, typ, a, n)
	}
	return e.op(spvOpShiftRightLogical, typ, a, n)
}

func (e *spvEmitter) compare(in *ir.Inst, a, b uint32) uint32 {
	at := in.Args[0].Type
	typ := e.boolOf(at)
	type ops struct{ f, s, u, b spvOp }
	var o ops
	switch in.Op {
	case ir.OpEq:
		o = ops{spvOpFOrdEqual, spvOpIEqual, spvOpIEqual, spvOpLogicalEqual}
	case ir.OpNe: // unordered: true when either is NaN, like C's !=
		o = ops{spvOpFUnordNotEqual, spvOpINotEqual, spvOpINotEqual, spvOpLogicalNotEqual}
	case ir.OpLt:
		o = ops{spvOpFOrdLessThan, spvOpSLessThan, spvOpULessThan, 0}
	case ir.OpLe:
		o = ops{spvOpFOrdLessThanEqual, spvOpSLessThanEqual, spvOpULessThanEqual, 0}
	case ir.OpGt:
		o = ops{spvOpFOrdGreaterThan, spvOpSGreaterThan, spvOpUGreaterThan, 0}
	default:
		o = ops{spvOpFOrdGreaterThanEqual, spvOpSGreaterThanEqual, spvOpUGreaterThanEqual, 0}
	}
	switch {
	case at.Scalar.IsFloat():
		return e.op(o.f, typ, a, b)
	case at.Scalar == ir.Bool:
		return e.op(o.b, typ, a, b)
	case at.Scalar.IsSigned():
		return e.op(o.s, typ, a, b)
	}
	return e.op(o.u, typ, a, b)
}

// convert emits a value conversion. Conversions that involve a float are decorated
// NoContraction too: without it Mesa treats them as free to fold (f2u(u2f(x)) becomes x,
// skipping the rounding to 24 bits; TestExecConversionRoundTrip).
func (e *spvEmitter) convert(in *ir.Inst, v uint32) uint32 {
	from, to := in.Args[0].Type, in.Type
	typ := e.typeOf(to)
	switch {
	case from == to:
		return e.op(spvOpCopyObject, typ, v)
	case from.Scalar.IsFloat() && to.Scalar.IsFloat():
		id := e.fop(spvOpFConvert, typ, v)
		if to.Scalar == ir.F16 && from.Scalar == ir.F32 && to.Lanes == 1 && e.storeOnly[in] {
			// Round to nearest even (the numeric contract); Vulkan allows this decoration on a
			// conversion whose result is only stored to a buffer.
			e.m.decorate(id, spvDecFPRoundingMode, spvRoundingRTE)
		}
		return id
	case from.Scalar.IsFloat():
		if to.Scalar.IsSigned() {
			return e.fop(spvOpConvertFToS, typ, v)
		}
		return e.fop(spvOpConvertFToU, typ, v)
	case to.Scalar.IsFloat():
		if from.Scalar.IsSigned() {
			return e.fop(spvOpConvertSToF, typ, v)
		}
		return e.fop(spvOpConvertUToF, typ, v)
	}
	return e.op(spvOpBitcast, typ, v) // i32 <-> u32
}

// glslNative is the GLSL.std.450 instruction of each native function (ir.OpNative): the
// device's own, inexact implementation.
var glslNative = [ir.NativeCount]uint32{
	ir.NativeExp: 27, ir.NativeExp2: 29, ir.NativeLog: 28, ir.NativeLog2: 30, ir.NativeSin: 13,
	ir.NativeCos: 14, ir.NativeTanh: 21, ir.NativePow: 26, ir.NativeRsqrt: 32,
}

// checkShape rejects instructions whose operands, blocks or resource indices do not have the
// shape the emitter relies on (the verifier guarantees it; a clear error beats a bad module).
func (e *spvEmitter) checkShape(in *ir.Inst) error {
	k := e.k
	nargs, nblocks := -1, 0
	switch in.Op {
	case ir.OpConst, ir.OpBuiltin, ir.OpParam, ir.OpLen, ir.OpLoop, ir.OpBreak, ir.OpContinue, ir.OpReturn, ir.OpBarrier:
		nargs = 0
	case ir.OpNeg, ir.OpNot, ir.OpAbs, ir.OpSqrt, ir.OpFloor, ir.OpConvert, ir.OpBitcast, ir.OpExtract, ir.OpReduce, ir.OpSubgroupReduce:
		nargs = 1
	case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpMin, ir.OpMax, ir.OpAnd, ir.OpOr, ir.OpXor,
		ir.OpShl, ir.OpShr, ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpDotI8x4, ir.OpShuffleXor, ir.OpShuffle:
		nargs = 2
	case ir.OpSelect, ir.OpIsland:
		nargs = 3
	case ir.OpIf:
		nargs = 1
	}
	if in.Op == ir.OpIf || in.Op == ir.OpLoop {
		nblocks = 2
	}
	if in.Op == ir.OpIsland {
		nblocks = 1
	}
	if len(in.Blocks) != nblocks {
		return e.errAt(in.Pos, "%s has %d blocks, want %d", in.Op, len(in.Blocks), nblocks)
	}
	for _, b := range in.Blocks {
		if b == nil {
			return e.errAt(in.Pos, "%s has a nil block", in.Op)
		}
	}
	if nargs >= 0 && len(in.Args) != nargs {
		return e.errAt(in.Pos, "%s takes %d operands, has %d", in.Op, nargs, len(in.Args))
	}
	if in.Type != ir.TVoid && !in.Type.IsValue() {
		return e.errAt(in.Pos, "%s: result type %s is not a value type", in.Op, in.Type)
	}
	switch in.Op {
	case ir.OpParam:
		if in.Ref < 0 || in.Ref >= len(k.Params) {
			return e.errAt(in.Pos, "parameter %d does not exist", in.Ref)
		}
	case ir.OpLen:
		if in.Ref < 0 || in.Ref >= len(k.Buffers) {
			return e.errAt(in.Pos, "buffer %d does not exist", in.Ref)
		}
	case ir.OpBuiltin:
		if in.Aux > uint64(ir.SubgroupID) || (ir.Builtin(in.Aux).PerDim() && (in.Ref < 0 || in.Ref > 2)) {
			return e.errAt(in.Pos, "unknown builtin %d (dimension %d)", in.Aux, in.Ref)
		}
	case ir.OpLoad, ir.OpStore, ir.OpAtomic:
		n := 0
		switch in.Mem {
		case ir.MemBuffer:
			n = len(k.Buffers)
		case ir.MemShared:
			n = len(k.Shared)
		case ir.MemVar:
			n = len(k.Vars)
			if in.Op == ir.OpAtomic {
				return e.errAt(in.Pos, "atomics need a buffer or shared array")
			}
		default:
			return e.errAt(in.Pos, "%s: unknown memory space %d", in.Op, in.Mem)
		}
		if in.Ref < 0 || in.Ref >= n {
			return e.errAt(in.Pos, "%s: %s %d does not exist", in.Op, in.Mem, in.Ref)
		}
		idx := 1
		if in.Mem == ir.MemVar {
			idx = 0
		}
		want := idx
		switch in.Op {
		case ir.OpStore:
			want = idx + 1
		case ir.OpAtomic:
			want = 2
			if ir.AtomicOp(in.Aux) == ir.AtomicCmpXchg {
				want = 3
			}
			if in.Aux > uint64(ir.AtomicXor) {
				return e.errAt(in.Pos, "unknown atomic op %d", in.Aux)
			}
			if in.Mem != ir.MemVar {
				var elem ir.Type
				if in.Mem == ir.MemBuffer {
					elem = k.Buffers[in.Ref].Elem
				} else {
					elem = k.Shared[in.Ref].Elem
				}
				if elem.Scalar == ir.F32 && ir.AtomicOp(in.Aux) != ir.AtomicAdd {
					return e.errAt(in.Pos, "atomic %s on f32 elements: the SPIR-V target's only native float atomic is add (SPV_EXT_shader_atomic_float_add)", ir.AtomicOp(in.Aux))
				}
				if elem.Scalar == ir.F32 && in.Type != ir.TF32 {
					return e.errAt(in.Pos, "atomic add on f32 elements with result type %s", in.Type)
				}
			}
		}
		if len(in.Args) != want {
			return e.errAt(in.Pos, "%s takes %d operands, has %d", in.Op, want, len(in.Args))
		}
	case ir.OpRem:
		if in.Type.Scalar.IsFloat() {
			return e.errAt(in.Pos, "rem on %s: floats have no remainder in the IR", in.Type)
		}
	case ir.OpIsland:
		c := ir.DecodeIsland(in.Aux)
		for i, x := range [3]struct {
			ref  int
			elem ir.Type
		}{{c.A, ir.TU32}, {c.B, ir.TU32}, {c.D, ir.TI32}} {
			if x.ref >= len(k.Shared) || k.Shared[x.ref].Elem != x.elem || in.Args[i].Type != ir.TU32 {
				return e.errAt(in.Pos, "island %s: operand %d is not a u32 tile index of a shared array of %s", c.Island, i, x.elem)
			}
		}
	case ir.OpExtract:
		if in.Aux >= uint64(in.Args[0].Type.Lanes) {
			return e.errAt(in.Pos, "extract lane %d of %s", in.Aux, in.Args[0].Type)
		}
	}
	return nil
}
