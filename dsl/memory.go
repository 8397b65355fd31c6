package dsl

import (
	"github.com/onesource-go/onesource/ir"
)

// Array is a storage buffer (declared with Kernel.Buffer) or a workgroup shared array (declared
// with Kernel.Shared). Indices are i32 or u32 values or Go integers.
type Array struct {
	k    *Kernel
	mem  ir.Mem
	ref  int
	elem Type
	name string
}

// Buffer declares a storage buffer of elem elements (binding = declaration order, from 0).
// Narrow integer elements load as 32-bit values; a store takes a 32-bit value (wrapped) or a
// value of the element's own type. BF16 elements load and store bf16 values.
func (k *Kernel) Buffer(name string, elem Type, access Access) Array {
	if k == nil {
		return Array{}
	}
	p := callerPos()
	k.k.Buffers = append(k.k.Buffers, &ir.Buffer{Name: name, Elem: elem, Access: access, Pos: p})
	return Array{k: k, mem: ir.MemBuffer, ref: len(k.k.Buffers) - 1, elem: elem, name: name}
}

// Shared declares a workgroup shared array of n elements. Going over the kernel's shared-memory
// limit (DefaultSharedLimit unless SetSharedLimit) is an error at this line.
func (k *Kernel) Shared(name string, elem Type, n int) Array {
	if k == nil {
		return Array{}
	}
	p := callerPos()
	k.k.Shared = append(k.k.Shared, &ir.Shared{Name: name, Elem: elem, Len: n, Pos: p})
	if total := k.k.SharedBytes(); total > k.sharedLimit {
		k.errorf(p, "shared array %s: %d bytes of shared memory in all, over the limit of %d", name, total, k.sharedLimit)
	}
	return Array{k: k, mem: ir.MemShared, ref: len(k.k.Shared) - 1, elem: elem, name: name}
}

// Elem returns the array's element type.
func (a Array) Elem() Type { return a.elem }

func (a Array) valueType() Type { return ir.Type{Scalar: a.elem.Scalar.Widened(), Lanes: a.elem.Lanes} }

func (a Array) index(op string, i any, p ir.Pos) (*ir.Inst, bool) {
	if a.k == nil {
		return nil, false
	}
	iv, ok := a.k.operand(op, U32, i, p)
	if !ok {
		return nil, false
	}
	if iv.Type() != U32 && iv.Type() != I32 {
		a.k.errorf(p, "%s %s: index is %s, want i32 or u32", op, a.name, iv.Type())
		return nil, false
	}
	return iv.in, true
}

func (a Array) access() ir.Access {
	if a.mem == ir.MemBuffer {
		return a.k.k.Buffers[a.ref].Access
	}
	return ir.ReadWrite
}

// Load returns element i.
func (a Array) Load(i any) Value {
	p := callerPos()
	if a.k == nil {
		misuse(p, zeroArray("Load"), i)
		return Value{}
	}
	idx, ok := a.index("Load", i, p)
	if !ok {
		return a.k.poison(a.valueType(), p)
	}
	if a.access() == ir.WriteOnly {
		a.k.errorf(p, "Load from write-only buffer %s", a.name)
		return a.k.poison(a.valueType(), p)
	}
	return a.k.emit(&ir.Inst{Op: ir.OpLoad, Type: a.valueType(), Mem: a.mem, Ref: a.ref, Args: []*ir.Inst{idx}, Pos: p})
}

// Store writes v to element i.
func (a Array) Store(i any, v any) {
	p := callerPos()
	if a.k == nil {
		misuse(p, zeroArray("Store"), i, v)
		return
	}
	idx, ok := a.index("Store", i, p)
	if !ok {
		return
	}
	val, ok := a.k.operand("Store", a.valueType(), v, p)
	if !ok {
		return
	}
	if a.access() == ir.ReadOnly {
		a.k.errorf(p, "Store to read-only buffer %s", a.name)
		return
	}
	if val.Type() != a.valueType() && !(a.elem.Scalar.IsNarrow() && val.Type() == a.elem) {
		a.k.errorf(p, "Store: storing %s into %s of %s", val.Type(), a.name, a.elem)
		return
	}
	a.k.emit(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: a.mem, Ref: a.ref, Args: []*ir.Inst{idx, val.in}, Pos: p})
}

func (a Array) atomic(op ir.AtomicOp, i any, vals ...any) Value {
	p := callerPos()
	if a.k == nil {
		misuse(p, zeroArray("Atomic"+opName2(op.String())), append([]any{i}, vals...)...)
		return Value{}
	}
	name := "Atomic" + opName2(op.String())
	idx, ok := a.index(name, i, p)
	if !ok {
		return a.k.poison(a.valueType(), p)
	}
	if a.elem != I32 && a.elem != U32 && !(a.elem == F32 && op == ir.AtomicAdd) {
		a.k.errorf(p, "%s: atomics need i32 or u32 elements (AtomicAdd also f32), %s holds %s", name, a.name, a.elem)
		return a.k.poison(a.valueType(), p)
	}
	if a.access() != ir.ReadWrite {
		a.k.errorf(p, "%s: buffer %s is not read-write", name, a.name)
		return a.k.poison(a.valueType(), p)
	}
	args := []*ir.Inst{idx}
	for _, x := range vals {
		v, ok := a.k.operand(name, a.elem, x, p)
		if !ok {
			return a.k.poison(a.elem, p)
		}
		if v.Type() != a.elem {
			a.k.errorf(p, "%s: operand is %s, %s holds %s", name, v.Type(), a.name, a.elem)
			return a.k.poison(a.elem, p)
		}
		args = append(args, v.in)
	}
	return a.k.emit(&ir.Inst{Op: ir.OpAtomic, Type: a.elem, Mem: a.mem, Ref: a.ref, Aux: uint64(op), Args: args, Pos: p})
}

func opName2(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// AtomicAdd atomically adds v to element i and returns the old value. On an f32 array the add
// is one IEEE addition, rounded to nearest even, of v to the value it replaces: native where the
// target has float atomics, a compare-exchange loop otherwise (package lower). Adds from many
// invocations land in an order the device chooses, so an f32 total is the same on every run and
// every backend only when every partial sum is exact (integers below 2^24, for example).
func (a Array) AtomicAdd(i, v any) Value { return a.atomic(ir.AtomicAdd, i, v) }

// AtomicAnd atomically stores element & v and returns the old value (i32 or u32 elements).
func (a Array) AtomicAnd(i, v any) Value { return a.atomic(ir.AtomicAnd, i, v) }

// AtomicOr atomically stores element | v and returns the old value (i32 or u32 elements).
func (a Array) AtomicOr(i, v any) Value { return a.atomic(ir.AtomicOr, i, v) }

// AtomicXor atomically stores element ^ v and returns the old value (i32 or u32 elements).
func (a Array) AtomicXor(i, v any) Value { return a.atomic(ir.AtomicXor, i, v) }

// AtomicMin atomically stores min(element, v) and returns the old value.
func (a Array) AtomicMin(i, v any) Value { return a.atomic(ir.AtomicMin, i, v) }

// AtomicMax atomically stores max(element, v) and returns the old value.
func (a Array) AtomicMax(i, v any) Value { return a.atomic(ir.AtomicMax, i, v) }

// AtomicExchange atomically stores v and returns the old value.
func (a Array) AtomicExchange(i, v any) Value { return a.atomic(ir.AtomicExchange, i, v) }

// AtomicCompareExchange stores v when the element equals cmp; it returns the old value either way.
func (a Array) AtomicCompareExchange(i, cmp, v any) Value {
	return a.atomic(ir.AtomicCmpXchg, i, cmp, v)
}

// Len returns the element count: of the bound buffer at run time, or of the shared array.
func (a Array) Len() Value {
	p := callerPos()
	if a.k == nil {
		misuse(p, zeroArray("Len"))
		return Value{}
	}
	if a.mem == ir.MemShared {
		v, _ := a.k.konst(U32, a.k.k.Shared[a.ref].Len, p)
		return v
	}
	return a.k.emit(&ir.Inst{Op: ir.OpLen, Type: U32, Ref: a.ref, Pos: p})
}

// Param declares a scalar kernel parameter (f32, i32 or u32; a push constant on Vulkan) and
// returns its value. Parameters are laid out 4 bytes each in declaration order.
func (k *Kernel) Param(name string, t Type) Value {
	if k == nil {
		return Value{}
	}
	p := callerPos()
	k.k.Params = append(k.k.Params, &ir.Param{Name: name, Type: t, Pos: p})
	if t != F32 && t != I32 && t != U32 {
		k.errorf(p, "parameter %s: type %s, want f32, i32 or u32", name, t)
		return k.poison(ir.TU32, p)
	}
	return k.emit(&ir.Inst{Op: ir.OpParam, Type: t, Ref: len(k.k.Params) - 1, Name: name, Pos: p})
}

// Var is an invocation-private mutable variable: loop-carried state such as accumulators.
type Var struct {
	k   *Kernel
	ref int
	t   Type
}

// Var declares a variable initialised to init; its type is init's type (a Go number makes an f32
// for floats, an i32 for ints: pass a Value to choose).
func (k *Kernel) Var(name string, init any) Var {
	if k == nil {
		return Var{}
	}
	p := callerPos()
	var t Type
	switch x := init.(type) {
	case Value:
		t = x.Type()
	case float32, float64:
		t = F32
	case uint32:
		t = U32
	case bool:
		t = Bool
	default:
		t = I32
	}
	k.k.Vars = append(k.k.Vars, &ir.Var{Name: name, Type: t, Pos: p})
	v := Var{k: k, ref: len(k.k.Vars) - 1, t: t}
	if iv, ok := k.operand("Var", t, init, p); ok {
		k.emit(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: v.ref, Args: []*ir.Inst{iv.in}, Pos: p})
	}
	return v
}

// Get returns the variable's current value.
func (v Var) Get() Value {
	p := callerPos()
	if v.k == nil {
		return Value{}
	}
	return v.k.emit(&ir.Inst{Op: ir.OpLoad, Type: v.t, Mem: ir.MemVar, Ref: v.ref, Name: v.k.k.Vars[v.ref].Name, Pos: p})
}

// Set assigns x to the variable.
func (v Var) Set(x any) {
	p := callerPos()
	if v.k == nil {
		return
	}
	val, ok := v.k.operand("Set", v.t, x, p)
	if !ok {
		return
	}
	if val.Type() != v.t {
		v.k.errorf(p, "Set: assigning %s to variable %s of %s", val.Type(), v.k.k.Vars[v.ref].Name, v.t)
		return
	}
	v.k.emit(&ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemVar, Ref: v.ref, Args: []*ir.Inst{val.in}, Pos: p})
}

func (k *Kernel) builtin(b ir.Builtin, d Dim) Value {
	p := callerPos()
	if d < 0 || d > 2 {
		k.errorf(p, "%s: dimension %d, want X, Y or Z", b, d)
		d = 0
	}
	return k.emit(&ir.Inst{Op: ir.OpBuiltin, Type: U32, Aux: uint64(b), Ref: int(d), Pos: p})
}

// GlobalID returns the invocation's global id along d.
func (k *Kernel) GlobalID(d Dim) Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.GlobalID, d)
}

// LocalID returns the invocation's id within its workgroup along d.
func (k *Kernel) LocalID(d Dim) Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.LocalID, d)
}

// WorkgroupID returns the workgroup's id along d.
func (k *Kernel) WorkgroupID(d Dim) Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.WorkgroupID, d)
}

// NumWorkgroups returns the dispatch size in workgroups along d.
func (k *Kernel) NumWorkgroups(d Dim) Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.NumWorkgroups, d)
}

// LocalIndex returns the flattened id within the workgroup (x fastest).
func (k *Kernel) LocalIndex() Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.LocalIndex, 0)
}

// SubgroupSize returns the device's subgroup (warp, wave, SIMD-group) size.
func (k *Kernel) SubgroupSize() Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.SubgroupSize, 0)
}

// LaneID returns the invocation's lane within its subgroup.
func (k *Kernel) LaneID() Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.SubgroupLane, 0)
}

// SubgroupID returns the subgroup's index within the workgroup.
func (k *Kernel) SubgroupID() Value {
	if k == nil {
		return Value{}
	}
	return k.builtin(ir.SubgroupID, 0)
}
