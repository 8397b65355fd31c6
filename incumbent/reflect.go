package incumbent

import (
	"fmt"
	"sort"
	"strings"
)

// Interface is what a SPIR-V module declares to the host, as Reflect reads it: the facts a
// manifest entry must agree with.
type Interface struct {
	EntryPoints []string // names of the GLCompute entry points
	// Bindings are the descriptor bindings the module declares (glslc -O removes the ones the
	// code never uses), sorted by set then binding; several variables aliasing one binding (as
	// ggml's A and A_PACKED16 do) make one entry.
	Bindings []DescriptorBinding
	// PushConstantSize is the byte size of the push-constant block: the end of its last member
	// (from the members' Offset decorations and types); 0 when the module declares none.
	PushConstantSize int
	// SpecConstants maps each SpecId the module declares to its type: "bool", "int32",
	// "uint32", "float32" (or another width, e.g. "int64"). glslc -O removes the ones the code
	// never uses.
	SpecConstants map[uint32]string
	// Capabilities are the module's OpCapability operands (SPIR-V Capability enumerants).
	Capabilities []uint32
}

// DescriptorBinding is one descriptor binding a module declares.
type DescriptorBinding struct {
	Set, Binding uint32
	// Kind is "storage" (a storage buffer: StorageBuffer storage class, or Uniform with a
	// BufferBlock struct), "uniform" (a uniform buffer) or "other" (an image, sampler or
	// acceleration structure: UniformConstant).
	Kind string
}

// SpecIDs returns the declared SpecIds, sorted.
func (in *Interface) SpecIDs() []uint32 {
	ids := make([]uint32, 0, len(in.SpecConstants))
	for id := range in.SpecConstants {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// binding returns the declared binding (set, b), or nil.
func (in *Interface) binding(set, b uint32) *DescriptorBinding {
	for i := range in.Bindings {
		if in.Bindings[i].Set == set && in.Bindings[i].Binding == b {
			return &in.Bindings[i]
		}
	}
	return nil
}

// hasCapability reports whether the module declares capability c.
func (in *Interface) hasCapability(c uint32) bool {
	for _, x := range in.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// SPIR-V opcodes, decorations and storage classes Reflect reads.
const (
	opEntryPoint       = 15
	opCapability       = 17
	opTypeBool         = 20
	opTypeInt          = 21
	opTypeFloat        = 22
	opTypeVector       = 23
	opTypeMatrix       = 24
	opTypeArray        = 28
	opTypeRuntimeArray = 29
	opTypeStruct       = 30
	opTypePointer      = 32
	opConstant         = 43
	opVariable         = 59
	opMemberDecorate   = 72

	decorationBlock        = 2
	decorationBufferBlock  = 3
	decorationArrayStride  = 6
	decorationMatrixStride = 7
	decorationBinding      = 33
	decorationDescSet      = 34
	decorationOffset       = 35

	scUniformConstant = 0
	scUniform         = 2
	scPushConstant    = 9
	scStorageBuffer   = 12

	execModelGLCompute = 5
)

// spvType is a type declaration Reflect keeps.
type spvType struct {
	op     uint32
	width  uint32   // int, float: bits
	signed bool     // int
	elem   uint32   // vector, matrix, array, runtime array: element (column) type
	count  uint32   // vector, matrix: components (columns); array: the length's constant id
	member []uint32 // struct: member types
}

// Reflect reads the interface a SPIR-V module declares: entry points, descriptor bindings, the
// push-constant block's size, the spec constants' ids and types, and its capabilities.
func Reflect(words []uint32) (*Interface, error) {
	in := &Interface{SpecConstants: map[uint32]string{}}
	types := map[uint32]*spvType{}
	consts := map[uint32]uint32{}
	ptrs := map[uint32][2]uint32{} // pointer type -> storage class, pointee
	type variable struct{ id, ptr, class uint32 }
	var vars []variable
	specID := map[uint32]uint32{} // result id -> SpecId
	set, binding := map[uint32]uint32{}, map[uint32]uint32{}
	hasBinding := map[uint32]bool{}
	block, bufferBlock := map[uint32]bool{}, map[uint32]bool{}
	arrayStride := map[uint32]uint32{}
	memberOffset := map[[2]uint32]uint32{} // struct, member -> Offset
	matrixStride := map[[2]uint32]uint32{}
	specType := map[uint32]uint32{} // spec constant result id -> its type id
	specBool := map[uint32]bool{}
	err := walk(words, func(op uint32, inst []uint32) {
		switch op {
		case opEntryPoint:
			if len(inst) >= 4 && inst[1] == execModelGLCompute {
				in.EntryPoints = append(in.EntryPoints, spvString(inst[3:]))
			}
		case opCapability:
			if len(inst) >= 2 {
				in.Capabilities = append(in.Capabilities, inst[1])
			}
		case opDecorate:
			if len(inst) < 3 {
				return
			}
			id, dec := inst[1], inst[2]
			switch {
			case dec == decorationSpecID && len(inst) >= 4:
				specID[id] = inst[3]
			case dec == decorationDescSet && len(inst) >= 4:
				set[id] = inst[3]
			case dec == decorationBinding && len(inst) >= 4:
				binding[id] = inst[3]
				hasBinding[id] = true
			case dec == decorationBlock:
				block[id] = true
			case dec == decorationBufferBlock:
				bufferBlock[id] = true
			case dec == decorationArrayStride && len(inst) >= 4:
				arrayStride[id] = inst[3]
			}
		case opMemberDecorate:
			if len(inst) >= 5 && inst[3] == decorationOffset {
				memberOffset[[2]uint32{inst[1], inst[2]}] = inst[4]
			}
			if len(inst) >= 5 && inst[3] == decorationMatrixStride {
				matrixStride[[2]uint32{inst[1], inst[2]}] = inst[4]
			}
		case opTypeBool:
			types[inst[1]] = &spvType{op: op, width: 32}
		case opTypeInt:
			if len(inst) >= 4 {
				types[inst[1]] = &spvType{op: op, width: inst[2], signed: inst[3] != 0}
			}
		case opTypeFloat:
			if len(inst) >= 3 {
				types[inst[1]] = &spvType{op: op, width: inst[2]}
			}
		case opTypeVector, opTypeMatrix, opTypeArray:
			if len(inst) >= 4 {
				types[inst[1]] = &spvType{op: op, elem: inst[2], count: inst[3]}
			}
		case opTypeRuntimeArray:
			if len(inst) >= 3 {
				types[inst[1]] = &spvType{op: op, elem: inst[2]}
			}
		case opTypeStruct:
			types[inst[1]] = &spvType{op: op, member: append([]uint32(nil), inst[2:]...)}
		case opTypePointer:
			if len(inst) >= 4 {
				ptrs[inst[1]] = [2]uint32{inst[2], inst[3]}
			}
		case opConstant:
			if len(inst) >= 4 {
				consts[inst[2]] = inst[3]
			}
		case opSpecConstant:
			if len(inst) >= 4 {
				consts[inst[2]] = inst[3]
				specType[inst[2]] = inst[1]
			}
		case opSpecConstantTrue, opSpecConstantFalse:
			if len(inst) >= 3 {
				specBool[inst[2]] = true
			}
		case opVariable:
			if len(inst) >= 4 {
				vars = append(vars, variable{id: inst[2], ptr: inst[1], class: inst[3]})
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for id, sid := range specID {
		switch {
		case specBool[id]:
			in.SpecConstants[sid] = "bool"
		case specType[id] != 0:
			t := types[specType[id]]
			switch {
			case t == nil:
				in.SpecConstants[sid] = "unknown"
			case t.op == opTypeInt && t.signed:
				in.SpecConstants[sid] = fmt.Sprintf("int%d", t.width)
			case t.op == opTypeInt:
				in.SpecConstants[sid] = fmt.Sprintf("uint%d", t.width)
			case t.op == opTypeFloat:
				in.SpecConstants[sid] = fmt.Sprintf("float%d", t.width)
			default:
				in.SpecConstants[sid] = "unknown"
			}
		}
		// A SpecId on anything else (a spec-constant composite or operation) is not a
		// constant the host sets.
	}

	// size is the byte size of type id as laid out in a block (explicit offsets and strides).
	var size func(id uint32, depth int) (int, error)
	size = func(id uint32, depth int) (int, error) {
		t := types[id]
		if t == nil || depth > 32 {
			return 0, fmt.Errorf("push-constant block: type %%%d cannot be sized", id)
		}
		switch t.op {
		case opTypeBool:
			return 4, nil
		case opTypeInt, opTypeFloat:
			return int(t.width) / 8, nil
		case opTypeVector:
			e, err := size(t.elem, depth+1)
			return e * int(t.count), err
		case opTypeMatrix:
			e, err := size(t.elem, depth+1)
			return e * int(t.count), err
		case opTypeArray:
			n, ok := consts[t.count]
			if !ok {
				return 0, fmt.Errorf("push-constant block: array %%%d has no constant length", id)
			}
			stride := int(arrayStride[id])
			if stride == 0 {
				e, err := size(t.elem, depth+1)
				if err != nil {
					return 0, err
				}
				stride = e
			}
			return stride * int(n), nil
		case opTypeStruct:
			end := 0
			for m, mt := range t.member {
				off, ok := memberOffset[[2]uint32{id, uint32(m)}]
				if !ok {
					return 0, fmt.Errorf("push-constant block: member %d of struct %%%d has no Offset", m, id)
				}
				var s int
				var err error
				if ms, ok := matrixStride[[2]uint32{id, uint32(m)}]; ok && types[mt] != nil && types[mt].op == opTypeMatrix {
					s = int(ms) * int(types[mt].count)
				} else if s, err = size(mt, depth+1); err != nil {
					return 0, err
				}
				end = max(end, int(off)+s)
			}
			return end, nil
		}
		return 0, fmt.Errorf("push-constant block: type %%%d (opcode %d) cannot be sized", id, t.op)
	}

	for _, v := range vars {
		p, ok := ptrs[v.ptr]
		if !ok {
			continue
		}
		pointee := p[1]
		// An array of descriptors (binding arrays) declares its element's struct.
		for t := types[pointee]; t != nil && (t.op == opTypeArray || t.op == opTypeRuntimeArray); t = types[pointee] {
			pointee = t.elem
		}
		switch v.class {
		case scPushConstant:
			s, err := size(pointee, 0)
			if err != nil {
				return nil, err
			}
			in.PushConstantSize = max(in.PushConstantSize, s)
			continue
		case scStorageBuffer, scUniform, scUniformConstant:
		default:
			continue
		}
		if !hasBinding[v.id] {
			continue
		}
		kind := "other"
		switch {
		case v.class == scStorageBuffer, v.class == scUniform && bufferBlock[pointee]:
			kind = "storage"
		case v.class == scUniform:
			kind = "uniform"
		}
		if b := in.binding(set[v.id], binding[v.id]); b != nil {
			if b.Kind != kind {
				b.Kind = "mixed (" + b.Kind + ", " + kind + ")"
			}
			continue
		}
		in.Bindings = append(in.Bindings, DescriptorBinding{Set: set[v.id], Binding: binding[v.id], Kind: kind})
	}
	sort.Slice(in.Bindings, func(i, j int) bool {
		a, b := in.Bindings[i], in.Bindings[j]
		return a.Set < b.Set || a.Set == b.Set && a.Binding < b.Binding
	})
	return in, nil
}

// spvString decodes a SPIR-V literal string (nul-terminated, little-endian words).
func spvString(w []uint32) string {
	var b strings.Builder
	for _, x := range w {
		for i := 0; i < 4; i++ {
			c := byte(x >> (8 * i))
			if c == 0 {
				return b.String()
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}
