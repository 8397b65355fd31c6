package nagacheck

import (
	"fmt"
	"sort"
)

// SPIR-V opcodes and enumerants this file reads or writes.
const (
	opName                   = 5
	opMemberName             = 6
	opEntryPoint             = 15
	opExecutionMode          = 16
	opCapability             = 17
	opTypeVoid               = 19
	opTypeInt                = 21
	opTypeForwardPointer     = 39
	opConstantTrue           = 41
	opSpecConstantOp         = 52
	opTypePointer            = 32
	opConstant               = 43
	opFunction               = 54
	opVariable               = 59
	opLoad                   = 61
	opStore                  = 62
	opAccessChain            = 65
	opInBoundsAccessChain    = 66
	opDecorate               = 71
	opMemberDecorate         = 72
	opConvertFToU            = 109
	opConvertFToS            = 110
	opConvertSToF            = 111
	opConvertUToF            = 112
	opFConvert               = 115
	opFNegate                = 127
	opFAdd                   = 129
	opFSub                   = 131
	opFMul                   = 133
	opFDiv                   = 136
	opFRem                   = 140
	opFMod                   = 141
	opVectorTimesScalar      = 142
	opAtomicLoad             = 227
	opAtomicStore            = 228
	opAtomicExchange         = 229
	opAtomicCompareExchange  = 230
	opAtomicIIncrement       = 232
	opAtomicXor              = 242
	decorationBinding        = 33
	decorationDescriptorSet  = 34
	decorationNoContraction  = 42
	storageClassWorkgroup    = 4
	storageClassStorage      = 12
	scopeDevice              = 1
	scopeWorkgroup           = 2
	executionModeLocalSize   = 17
	semanticsRelaxed         = 0
	spirvMagic               = 0x07230203
	executionModeLocalSizeID = 38
)

// inst is one instruction of a parsed module: its opcode and operands (the words after the
// first).
type inst struct {
	op   uint16
	args []uint32
}

// module is a parsed SPIR-V module.
type module struct {
	header [5]uint32
	insts  []inst
}

func parse(words []uint32) (*module, error) {
	if len(words) < 5 || words[0] != spirvMagic {
		return nil, fmt.Errorf("not a SPIR-V module (%d words)", len(words))
	}
	m := &module{}
	copy(m.header[:], words[:5])
	for i := 5; i < len(words); {
		n := int(words[i] >> 16)
		if n == 0 || i+n > len(words) {
			return nil, fmt.Errorf("malformed instruction at word %d", i)
		}
		m.insts = append(m.insts, inst{op: uint16(words[i]), args: append([]uint32(nil), words[i+1:i+n]...)})
		i += n
	}
	return m, nil
}

func (m *module) words() []uint32 {
	out := append([]uint32(nil), m.header[:]...)
	for _, in := range m.insts {
		out = append(out, uint32(len(in.args)+1)<<16|uint32(in.op))
		out = append(out, in.args...)
	}
	return out
}

// str decodes a literal string starting at args[0].
func str(args []uint32) string {
	var b []byte
	for _, w := range args {
		for k := 0; k < 4; k++ {
			c := byte(w >> (8 * k))
			if c == 0 {
				return string(b)
			}
			b = append(b, c)
		}
	}
	return string(b)
}

// pointers tracks the pointers of a module: each pointer id's root variable and the storage
// class and pointee type of its type.
type pointers struct {
	root    map[uint32]uint32 // pointer id -> the global or local variable it points into
	ptrType map[uint32]uint32 // pointer id -> its OpTypePointer
	class   map[uint32]uint32 // OpTypePointer id -> storage class
	pointee map[uint32]uint32 // OpTypePointer id -> pointee type
	intType map[uint32]bool   // OpTypeInt 32 ids
}

func (m *module) pointers() *pointers {
	p := &pointers{root: map[uint32]uint32{}, ptrType: map[uint32]uint32{}, class: map[uint32]uint32{}, pointee: map[uint32]uint32{}, intType: map[uint32]bool{}}
	for _, in := range m.insts {
		switch in.op {
		case opTypeInt:
			if in.args[1] == 32 {
				p.intType[in.args[0]] = true
			}
		case opTypePointer:
			p.class[in.args[0]] = in.args[1]
			p.pointee[in.args[0]] = in.args[2]
		case opVariable:
			p.root[in.args[1]] = in.args[1]
			p.ptrType[in.args[1]] = in.args[0]
		case opAccessChain, opInBoundsAccessChain:
			p.root[in.args[1]] = p.root[in.args[2]]
			p.ptrType[in.args[1]] = in.args[0]
		}
	}
	return p
}

// storageClass is the storage class of pointer id (0 when unknown).
func (p *pointers) storageClass(id uint32) uint32 { return p.class[p.ptrType[id]] }

// toInt reports whether pointer id points to a 32-bit integer.
func (p *pointers) toInt(id uint32) bool { return p.intType[p.pointee[p.ptrType[id]]] }

// constants finds or adds 32-bit unsigned OpConstants.
type constants struct {
	m      *module
	uint   uint32            // the OpTypeInt 32 0 id
	byVal  map[uint32]uint32 // value -> OpConstant id
	insert []inst            // constants (and the type) to add before the first function
}

func (m *module) constants() *constants {
	c := &constants{m: m, byVal: map[uint32]uint32{}}
	for _, in := range m.insts {
		if in.op == opTypeInt && in.args[1] == 32 && in.args[2] == 0 && c.uint == 0 {
			c.uint = in.args[0]
		}
	}
	for _, in := range m.insts {
		if in.op == opConstant && in.args[0] == c.uint && c.uint != 0 && len(in.args) == 3 {
			if _, ok := c.byVal[in.args[2]]; !ok {
				c.byVal[in.args[2]] = in.args[1]
			}
		}
	}
	return c
}

func (c *constants) id(v uint32) uint32 {
	if id, ok := c.byVal[v]; ok {
		return id
	}
	if c.uint == 0 {
		c.uint = c.fresh()
		c.insert = append(c.insert, inst{op: opTypeInt, args: []uint32{c.uint, 32, 0}})
	}
	id := c.fresh()
	c.insert = append(c.insert, inst{op: opConstant, args: []uint32{c.uint, id, v}})
	c.byVal[v] = id
	return id
}

func (c *constants) fresh() uint32 {
	id := c.m.header[3]
	c.m.header[3]++
	return id
}

// flush inserts the added constants before the first function.
func (c *constants) flush() {
	if len(c.insert) == 0 {
		return
	}
	at := len(c.m.insts)
	for i, in := range c.m.insts {
		if in.op == opFunction {
			at = i
			break
		}
	}
	out := append([]inst(nil), c.m.insts[:at]...)
	out = append(out, c.insert...)
	c.m.insts = append(out, c.m.insts[at:]...)
	c.insert = nil
}

// globals maps the OpName of each module-scope OpVariable to its id, and each (set 0) binding
// number to its variable.
func (m *module) globals() (byName map[string]uint32, byBinding map[uint32]uint32) {
	names := map[uint32]string{}
	vars := map[uint32]bool{}
	byBinding = map[uint32]uint32{}
	inFunc := false
	for _, in := range m.insts {
		switch in.op {
		case opName:
			names[in.args[0]] = str(in.args[1:])
		case opFunction:
			inFunc = true
		case opVariable:
			if !inFunc {
				vars[in.args[1]] = true
			}
		case opDecorate:
			if in.args[1] == decorationBinding {
				byBinding[in.args[2]] = in.args[0]
			}
		}
	}
	byName = map[string]uint32{}
	for id := range vars {
		if n, ok := names[id]; ok {
			byName[n] = id
		}
	}
	return byName, byBinding
}

// capabilities lists the module's OpCapability operands.
func (m *module) capabilities() []uint32 {
	var cs []uint32
	for _, in := range m.insts {
		if in.op == opCapability {
			cs = append(cs, in.args[0])
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	return cs
}

// localSize returns the LocalSize execution mode of the first entry point (zeros when none).
func (m *module) localSize() [3]uint32 {
	for _, in := range m.insts {
		if in.op == opExecutionMode && in.args[1] == executionModeLocalSize && len(in.args) >= 5 {
			return [3]uint32{in.args[2], in.args[3], in.args[4]}
		}
	}
	return [3]uint32{}
}

// hasDecoration reports whether any OpDecorate in m carries decoration d.
func (m *module) hasDecoration(d uint32) bool {
	for _, in := range m.insts {
		if in.op == opDecorate && len(in.args) >= 2 && in.args[1] == d {
			return true
		}
	}
	return false
}

// atomicOperands returns, for an atomic instruction, the index in args of its pointer, scope
// and memory-semantics operands (a compare-exchange has two semantics; the second is at
// semantics+1), or ok false.
func atomicOperands(in inst) (ptr, scope, sem int, ok bool) {
	switch {
	case in.op == opAtomicStore:
		return 0, 1, 2, true
	case in.op == opAtomicLoad || in.op == opAtomicExchange || in.op == opAtomicCompareExchange ||
		in.op >= opAtomicIIncrement && in.op <= opAtomicXor:
		return 2, 3, 4, true
	}
	return 0, 0, 0, false
}

// isFloatArith reports whether op is a float arithmetic instruction or a conversion to or from
// a float, which a driver may rewrite unless it is decorated NoContraction (Mesa folds
// u32(f32(x)) into x).
func isFloatArith(op uint16) bool {
	switch op {
	case opFNegate, opFAdd, opFSub, opFMul, opFDiv, opFRem, opFMod, opVectorTimesScalar,
		opConvertFToU, opConvertFToS, opConvertSToF, opConvertUToF, opFConvert:
		return true
	}
	return false
}

// addNoContraction decorates the result of every float arithmetic instruction NoContraction
// (in the annotation section, after the decorations already there) and returns how many.
func addNoContraction(m *module) int {
	decorated := map[uint32]bool{}
	last := -1
	for i, in := range m.insts {
		switch in.op {
		case opDecorate:
			last = i
			if in.args[1] == decorationNoContraction {
				decorated[in.args[0]] = true
			}
		case opMemberDecorate:
			last = i
		}
	}
	var add []inst
	for _, in := range m.insts {
		if isFloatArith(in.op) && !decorated[in.args[1]] {
			add = append(add, inst{op: opDecorate, args: []uint32{in.args[1], decorationNoContraction}})
			decorated[in.args[1]] = true
		}
	}
	if len(add) == 0 {
		return 0
	}
	if last < 0 {
		// No annotations yet: they go right before the first type or constant.
		for i, in := range m.insts {
			if in.op >= opTypeVoid && in.op <= opTypeForwardPointer || in.op >= opConstantTrue && in.op <= opSpecConstantOp {
				last = i - 1
				break
			}
		}
	}
	out := append([]inst(nil), m.insts[:last+1]...)
	out = append(out, add...)
	m.insts = append(out, m.insts[last+1:]...)
	return len(add)
}
