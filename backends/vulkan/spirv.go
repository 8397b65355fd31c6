package vulkan

// A small SPIR-V binary writer: the opcodes and enumerants the emitter uses, instruction
// encoding, string literals, id allocation and de-duplicated types and constants. Every name
// here carries the spv prefix so it cannot collide with the device runtime in this package.

import (
	"slices"

	"github.com/onesource-go/onesource/ir"
)

// spvOp is a SPIR-V opcode.
type spvOp uint16

// Opcodes (SPIR-V 1.6, section 3.52).
const (
	spvOpSource                    spvOp = 3
	spvOpName                      spvOp = 5
	spvOpMemberName                spvOp = 6
	spvOpString                    spvOp = 7
	spvOpLine                      spvOp = 8
	spvOpExtension                 spvOp = 10
	spvOpExtInstImport             spvOp = 11
	spvOpExtInst                   spvOp = 12
	spvOpMemoryModel               spvOp = 14
	spvOpEntryPoint                spvOp = 15
	spvOpExecutionMode             spvOp = 16
	spvOpCapability                spvOp = 17
	spvOpTypeVoid                  spvOp = 19
	spvOpTypeBool                  spvOp = 20
	spvOpTypeInt                   spvOp = 21
	spvOpTypeFloat                 spvOp = 22
	spvOpTypeVector                spvOp = 23
	spvOpTypeArray                 spvOp = 28
	spvOpTypeRuntimeArray          spvOp = 29
	spvOpTypeStruct                spvOp = 30
	spvOpTypePointer               spvOp = 32
	spvOpTypeFunction              spvOp = 33
	spvOpConstantTrue              spvOp = 41
	spvOpConstantFalse             spvOp = 42
	spvOpConstant                  spvOp = 43
	spvOpConstantComposite         spvOp = 44
	spvOpFunction                  spvOp = 54
	spvOpFunctionEnd               spvOp = 56
	spvOpVariable                  spvOp = 59
	spvOpLoad                      spvOp = 61
	spvOpStore                     spvOp = 62
	spvOpAccessChain               spvOp = 65
	spvOpArrayLength               spvOp = 68
	spvOpDecorate                  spvOp = 71
	spvOpMemberDecorate            spvOp = 72
	spvOpCompositeConstruct        spvOp = 80
	spvOpCompositeExtract          spvOp = 81
	spvOpCopyObject                spvOp = 83
	spvOpConvertFToU               spvOp = 109
	spvOpConvertFToS               spvOp = 110
	spvOpConvertSToF               spvOp = 111
	spvOpConvertUToF               spvOp = 112
	spvOpUConvert                  spvOp = 113
	spvOpSConvert                  spvOp = 114
	spvOpFConvert                  spvOp = 115
	spvOpBitcast                   spvOp = 124
	spvOpSNegate                   spvOp = 126
	spvOpFNegate                   spvOp = 127
	spvOpIAdd                      spvOp = 128
	spvOpFAdd                      spvOp = 129
	spvOpISub                      spvOp = 130
	spvOpFSub                      spvOp = 131
	spvOpIMul                      spvOp = 132
	spvOpFMul                      spvOp = 133
	spvOpUDiv                      spvOp = 134
	spvOpSDiv                      spvOp = 135
	spvOpFDiv                      spvOp = 136
	spvOpUMod                      spvOp = 137
	spvOpSRem                      spvOp = 138
	spvOpLogicalEqual              spvOp = 164
	spvOpLogicalNotEqual           spvOp = 165
	spvOpLogicalOr                 spvOp = 166
	spvOpLogicalAnd                spvOp = 167
	spvOpLogicalNot                spvOp = 168
	spvOpSelect                    spvOp = 169
	spvOpIEqual                    spvOp = 170
	spvOpINotEqual                 spvOp = 171
	spvOpUGreaterThan              spvOp = 172
	spvOpSGreaterThan              spvOp = 173
	spvOpUGreaterThanEqual         spvOp = 174
	spvOpSGreaterThanEqual         spvOp = 175
	spvOpULessThan                 spvOp = 176
	spvOpSLessThan                 spvOp = 177
	spvOpULessThanEqual            spvOp = 178
	spvOpSLessThanEqual            spvOp = 179
	spvOpFOrdEqual                 spvOp = 180
	spvOpFUnordNotEqual            spvOp = 183
	spvOpFOrdLessThan              spvOp = 184
	spvOpFOrdGreaterThan           spvOp = 186
	spvOpFOrdLessThanEqual         spvOp = 188
	spvOpFOrdGreaterThanEqual      spvOp = 190
	spvOpShiftRightLogical         spvOp = 194
	spvOpShiftRightArithmetic      spvOp = 195
	spvOpShiftLeftLogical          spvOp = 196
	spvOpBitwiseOr                 spvOp = 197
	spvOpBitwiseXor                spvOp = 198
	spvOpBitwiseAnd                spvOp = 199
	spvOpNot                       spvOp = 200
	spvOpControlBarrier            spvOp = 224
	spvOpAtomicExchange            spvOp = 229
	spvOpAtomicCompareExchange     spvOp = 230
	spvOpAtomicIAdd                spvOp = 234
	spvOpAtomicSMin                spvOp = 236
	spvOpAtomicUMin                spvOp = 237
	spvOpAtomicSMax                spvOp = 238
	spvOpAtomicUMax                spvOp = 239
	spvOpAtomicAnd                 spvOp = 240
	spvOpAtomicOr                  spvOp = 241
	spvOpAtomicXor                 spvOp = 242
	spvOpLoopMerge                 spvOp = 246
	spvOpSelectionMerge            spvOp = 247
	spvOpLabel                     spvOp = 248
	spvOpBranch                    spvOp = 249
	spvOpBranchConditional         spvOp = 250
	spvOpReturn                    spvOp = 253
	spvOpUnreachable               spvOp = 255
	spvOpModuleProcessed           spvOp = 330
	spvOpGroupNonUniformShuffle    spvOp = 345
	spvOpGroupNonUniformIAdd       spvOp = 349
	spvOpGroupNonUniformFAdd       spvOp = 350
	spvOpGroupNonUniformSMax       spvOp = 356
	spvOpGroupNonUniformUMax       spvOp = 357
	spvOpGroupNonUniformFMax       spvOp = 358
	spvOpGroupNonUniformShuffleXor spvOp = 346
	spvOpSDot                      spvOp = 4450
	spvOpAtomicFAddEXT             spvOp = 6035 // SPV_EXT_shader_atomic_float_add
)

// Enumerants (SPIR-V 1.6, section 3).
const (
	spvMagic = 0x07230203 // the version word follows: Env.spirvWord

	spvAddressingLogical  = 0
	spvMemoryModelGLSL450 = 1
	spvExecModelGLCompute = 5
	spvExecModeLocalSize  = 17
	spvSourceLangUnknown  = 0
	spvFunctionCtlNone    = 0
	spvSelectionCtlNone   = 0
	spvLoopCtlNone        = 0
	spvPacked4x8Bit       = 0 // PackedVectorFormat4x8Bit
	spvRoundingRTE        = 0 // FPRoundingMode RTE
)

// spvCap is a SPIR-V capability.
type spvCap uint32

// Capabilities.
const (
	spvCapShader                      spvCap = 1
	spvCapFloat16                     spvCap = 9
	spvCapFloat64                     spvCap = 10
	spvCapInt16                       spvCap = 22
	spvCapInt8                        spvCap = 39
	spvCapGroupNonUniform             spvCap = 61
	spvCapGroupNonUniformShuffle      spvCap = 65
	spvCapGroupNonUniformArithmetic   spvCap = 63
	spvCapStorageBuffer16BitAccess    spvCap = 4433
	spvCapStorageBuffer8BitAccess     spvCap = 4448
	spvCapDotProductInput4x8BitPacked spvCap = 6018
	spvCapDotProduct                  spvCap = 6019
	spvCapAtomicFloat32AddEXT         spvCap = 6033
)

// Storage classes.
const (
	spvSCInput         = 1
	spvSCWorkgroup     = 4
	spvSCFunction      = 7
	spvSCPushConstant  = 9
	spvSCStorageBuffer = 12
)

// Decorations.
const (
	spvDecBlock          = 2
	spvDecArrayStride    = 6
	spvDecBuiltIn        = 11
	spvDecNonWritable    = 24
	spvDecNonReadable    = 25
	spvDecBinding        = 33
	spvDecDescriptorSet  = 34
	spvDecOffset         = 35
	spvDecFPRoundingMode = 39
	spvDecNoContraction  = 42
)

// BuiltIn decoration values.
const (
	spvBINumWorkgroups             = 24
	spvBIWorkgroupID               = 26
	spvBILocalInvocationID         = 27
	spvBIGlobalInvocationID        = 28
	spvBILocalInvocationIndex      = 29
	spvBISubgroupSize              = 36
	spvBISubgroupID                = 40
	spvBISubgroupLocalInvocationID = 41
)

// Scopes and memory semantics.
const (
	spvScopeDevice    = 1
	spvScopeWorkgroup = 2
	spvScopeSubgroup  = 3

	spvSemRelaxed         = 0
	spvSemAcquireRelease  = 0x8
	spvSemUniformMemory   = 0x40
	spvSemWorkgroupMemory = 0x100
)

// GLSL.std.450 extended instructions.
const (
	spvGLSLFAbs  = 4
	spvGLSLSAbs  = 5
	spvGLSLFloor = 8
	spvGLSLSqrt  = 31
	spvGLSLUMin  = 38
	spvGLSLSMin  = 39
	spvGLSLUMax  = 41
	spvGLSLSMax  = 42
)

// spvWords is a stream of encoded instructions.
type spvWords []uint32

// inst appends one instruction: the word count and opcode, then the operands.
func (w *spvWords) inst(op spvOp, operands ...uint32) {
	*w = append(*w, uint32(len(operands)+1)<<16|uint32(op))
	*w = append(*w, operands...)
}

// instStr appends an instruction whose operands are head, a string literal, then tail.
func (w *spvWords) instStr(op spvOp, head []uint32, s string, tail ...uint32) {
	lit := spvString(s)
	n := 1 + len(head) + len(lit) + len(tail)
	*w = append(*w, uint32(n)<<16|uint32(op))
	*w = append(*w, head...)
	*w = append(*w, lit...)
	*w = append(*w, tail...)
}

// spvString encodes s as a SPIR-V literal string: UTF-8 bytes, nul-terminated, padded with
// zeros to a whole word, little-endian within each word. A nul byte inside s would end the
// literal early, so it is replaced by U+FFFD.
func spvString(s string) []uint32 {
	b := []byte(s)
	if slices.Contains(b, 0) {
		var out []byte
		for _, c := range b {
			if c == 0 {
				out = append(out, 0xef, 0xbf, 0xbd)
			} else {
				out = append(out, c)
			}
		}
		b = out
	}
	words := make([]uint32, len(b)/4+1)
	for i, c := range b {
		words[i/4] |= uint32(c) << (8 * (i % 4))
	}
	return words
}

// spvTypeKey identifies a non-aggregate type (or a runtime array, shared by equal elements) for
// de-duplication: SPIR-V 1.4+ forbids two ids for one such type.
type spvTypeKey struct {
	op      spvOp
	a, b, c uint32
}

// spvConstKey identifies a constant: its type id and bits (a vector splat uses the vector type).
type spvConstKey struct {
	typ  uint32
	bits uint64
}

// spvModule collects the sections of a module while it is built, then assembles them in the
// order the specification requires (2.4, logical layout).
type spvModule struct {
	bound     uint32 // next free id
	caps      map[spvCap]bool
	glslID    uint32   // GLSL.std.450 import, 0 until used
	strings   spvWords // OpString, OpSource
	names     spvWords // OpName, OpMemberName
	names16   spvWords // OpName of 16-bit float results: kept only with the Float16 capability
	processed spvWords // OpModuleProcessed
	annots    spvWords // decorations
	globals   spvWords // types, constants, global variables
	types     map[spvTypeKey]uint32
	consts    map[spvConstKey]uint32
	named     map[uint32]bool

	capPos map[spvCap]ir.Pos // where each capability was first needed
	at     ir.Pos            // the position of what is being emitted (for capPos)
	exts   []string          // OpExtension names, in first-use order
}

func newSPVModule() *spvModule {
	return &spvModule{
		bound:  1,
		caps:   map[spvCap]bool{spvCapShader: true},
		capPos: map[spvCap]ir.Pos{},
		types:  map[spvTypeKey]uint32{},
		consts: map[spvConstKey]uint32{},
		named:  map[uint32]bool{},
	}
}

// id allocates a fresh result id.
func (m *spvModule) id() uint32 {
	id := m.bound
	m.bound++
	return id
}

// capability records that the module declares c, and the position that first needed it.
func (m *spvModule) capability(c spvCap) {
	if !m.caps[c] {
		m.caps[c] = true
		m.capPos[c] = m.at
	}
}

// extension records that the module declares the SPIR-V extension name.
func (m *spvModule) extension(name string) {
	if !slices.Contains(m.exts, name) {
		m.exts = append(m.exts, name)
	}
}

// glsl returns the id of the GLSL.std.450 extended instruction set import.
func (m *spvModule) glsl() uint32 {
	if m.glslID == 0 {
		m.glslID = m.id()
	}
	return m.glslID
}

// name gives id a debug name (the first name given wins).
func (m *spvModule) name(id uint32, s string) {
	if s == "" || m.named[id] {
		return
	}
	m.named[id] = true
	m.names.instStr(spvOpName, []uint32{id}, s)
}

// name16 names a 16-bit float result. spirv-val (2023.1) counts an OpName as a use that
// 16-bit storage alone does not allow, so the name is kept only when the module declares
// Float16 anyway.
func (m *spvModule) name16(id uint32, s string) {
	if s == "" || m.named[id] {
		return
	}
	m.named[id] = true
	m.names16.instStr(spvOpName, []uint32{id}, s)
}

func (m *spvModule) memberName(id, member uint32, s string) {
	m.names.instStr(spvOpMemberName, []uint32{id, member}, s)
}

func (m *spvModule) decorate(id uint32, dec uint32, lits ...uint32) {
	m.annots.inst(spvOpDecorate, append([]uint32{id, dec}, lits...)...)
}

func (m *spvModule) memberDecorate(id, member, dec uint32, lits ...uint32) {
	m.annots.inst(spvOpMemberDecorate, append([]uint32{id, member, dec}, lits...)...)
}

// typ returns the id of the type key, declaring it with the given operands on first use.
func (m *spvModule) typ(key spvTypeKey, operands ...uint32) uint32 {
	if id, ok := m.types[key]; ok {
		return id
	}
	id := m.id()
	m.types[key] = id
	m.globals.inst(key.op, append([]uint32{id}, operands...)...)
	return id
}

func (m *spvModule) tVoid() uint32 { return m.typ(spvTypeKey{op: spvOpTypeVoid}) }
func (m *spvModule) tBool() uint32 { return m.typ(spvTypeKey{op: spvOpTypeBool}) }

func (m *spvModule) tInt(width uint32, signed bool) uint32 {
	s := uint32(0)
	if signed {
		s = 1
	}
	return m.typ(spvTypeKey{op: spvOpTypeInt, a: width, b: s}, width, s)
}

func (m *spvModule) tFloat(width uint32) uint32 {
	return m.typ(spvTypeKey{op: spvOpTypeFloat, a: width}, width)
}

func (m *spvModule) tVec(comp uint32, n uint32) uint32 {
	return m.typ(spvTypeKey{op: spvOpTypeVector, a: comp, b: n}, comp, n)
}

func (m *spvModule) tPtr(sc uint32, pointee uint32) uint32 {
	return m.typ(spvTypeKey{op: spvOpTypePointer, a: sc, b: pointee}, sc, pointee)
}

func (m *spvModule) tFunc(ret uint32) uint32 {
	return m.typ(spvTypeKey{op: spvOpTypeFunction, a: ret}, ret)
}

// tRuntimeArray returns a runtime array of elem laid out with the given stride.
func (m *spvModule) tRuntimeArray(elem, stride uint32) uint32 {
	key := spvTypeKey{op: spvOpTypeRuntimeArray, a: elem, b: stride}
	if id, ok := m.types[key]; ok {
		return id
	}
	id := m.typ(key, elem)
	m.decorate(id, spvDecArrayStride, stride)
	return id
}

// tArray returns a sized array of elem (no explicit layout: for Workgroup memory).
func (m *spvModule) tArray(elem uint32, n uint32) uint32 {
	l := m.constU32(n)
	return m.typ(spvTypeKey{op: spvOpTypeArray, a: elem, b: l}, elem, l)
}

// tStruct declares a new struct type (structs are never shared: each has its own decorations).
func (m *spvModule) tStruct(members ...uint32) uint32 {
	id := m.id()
	m.globals.inst(spvOpTypeStruct, append([]uint32{id}, members...)...)
	return id
}

// constant returns the id of the scalar constant of type typ with the given bits, where width is
// the type's width in bits (64-bit constants take two words, low word first).
func (m *spvModule) constant(typ uint32, width int, bits uint64) uint32 {
	key := spvConstKey{typ, bits}
	if id, ok := m.consts[key]; ok {
		return id
	}
	id := m.id()
	m.consts[key] = id
	if width == 64 {
		m.globals.inst(spvOpConstant, typ, id, uint32(bits), uint32(bits>>32))
	} else {
		m.globals.inst(spvOpConstant, typ, id, uint32(bits))
	}
	return id
}

// constBool returns OpConstantTrue or OpConstantFalse.
func (m *spvModule) constBool(v bool) uint32 {
	t := m.tBool()
	bits := uint64(0)
	if v {
		bits = 1
	}
	key := spvConstKey{t, bits}
	if id, ok := m.consts[key]; ok {
		return id
	}
	id := m.id()
	m.consts[key] = id
	if v {
		m.globals.inst(spvOpConstantTrue, t, id)
	} else {
		m.globals.inst(spvOpConstantFalse, t, id)
	}
	return id
}

// constSplat returns the vector constant of type vecType whose lanes are all the constant lane.
func (m *spvModule) constSplat(vecType uint32, n int, lane uint32, bits uint64) uint32 {
	key := spvConstKey{vecType, bits}
	if id, ok := m.consts[key]; ok {
		return id
	}
	id := m.id()
	m.consts[key] = id
	ops := []uint32{vecType, id}
	for range n {
		ops = append(ops, lane)
	}
	m.globals.inst(spvOpConstantComposite, ops...)
	return id
}

func (m *spvModule) constU32(v uint32) uint32 { return m.constant(m.tInt(32, false), 32, uint64(v)) }

func (m *spvModule) constI32(v int32) uint32 {
	return m.constant(m.tInt(32, true), 32, uint64(uint32(v)))
}

// assemble writes the module of SPIR-V version word version: header, capabilities, extensions
// (sorted), imports, memory model, the entry point (from entry, already encoded), execution
// modes, debug sections, annotations, globals and the function (code).
func (m *spvModule) assemble(version uint32, entry, modes, code spvWords) []uint32 {
	var w spvWords
	caps := make([]int, 0, len(m.caps))
	for c := range m.caps {
		caps = append(caps, int(c))
	}
	slices.Sort(caps)
	n := 5 + 2*len(caps) + len(entry) + len(modes) + len(m.strings) + len(m.names) + len(m.names16) +
		len(m.processed) + len(m.annots) + len(m.globals) + len(code) + 3 + 8
	w = make(spvWords, 0, n)
	w = append(w, spvMagic, version, 0, m.bound, 0)
	for _, c := range caps {
		w.inst(spvOpCapability, uint32(c))
	}
	exts := slices.Clone(m.exts)
	slices.Sort(exts)
	for _, x := range exts {
		w.instStr(spvOpExtension, nil, x)
	}
	if m.glslID != 0 {
		w.instStr(spvOpExtInstImport, []uint32{m.glslID}, "GLSL.std.450")
	}
	w.inst(spvOpMemoryModel, spvAddressingLogical, spvMemoryModelGLSL450)
	w = append(w, entry...)
	w = append(w, modes...)
	w = append(w, m.strings...)
	w = append(w, m.names...)
	if m.caps[spvCapFloat16] {
		w = append(w, m.names16...)
	}
	w = append(w, m.processed...)
	w = append(w, m.annots...)
	w = append(w, m.globals...)
	w = append(w, code...)
	return w
}
