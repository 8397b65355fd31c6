package ir_test

import (
	"strings"
	"testing"

	"github.com/onesource-go/onesource/ir"
)

var here = ir.Pos{File: "k.go", Line: 7}

func c32(v float64) *ir.Inst {
	return &ir.Inst{Op: ir.OpConst, Type: ir.TF32, Aux: ir.ConstBits(ir.TF32, v), Pos: here}
}
func cu(v uint32) *ir.Inst {
	return &ir.Inst{Op: ir.OpConst, Type: ir.TU32, Aux: uint64(v), Pos: here}
}
func op(o ir.Op, t ir.Type, args ...*ir.Inst) *ir.Inst {
	return &ir.Inst{Op: o, Type: t, Args: args, Pos: here}
}

func kernel(body ...*ir.Inst) *ir.Kernel {
	return &ir.Kernel{
		Name: "k", WorkgroupSize: [3]uint32{64, 1, 1},
		Buffers: []*ir.Buffer{
			{Name: "in", Elem: ir.TF32, Access: ir.ReadOnly},
			{Name: "out", Elem: ir.TF32, Access: ir.WriteOnly},
			{Name: "cnt", Elem: ir.TU32, Access: ir.ReadWrite},
			{Name: "bytes", Elem: ir.S(ir.I8), Access: ir.ReadWrite},
		},
		Params: []*ir.Param{{Name: "n", Type: ir.TU32}},
		Shared: []*ir.Shared{{Name: "sh", Elem: ir.TF32, Len: 64}},
		Vars:   []*ir.Var{{Name: "acc", Type: ir.TF32}},
		Body:   &ir.Block{Insts: body},
	}
}

func TestVerify(t *testing.T) {
	gid := func() *ir.Inst { return &ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.GlobalID), Pos: here} }
	x := c32(1)
	u := cu(3)
	i := gid()
	load := &ir.Inst{Op: ir.OpLoad, Type: ir.TF32, Mem: ir.MemBuffer, Ref: 0, Args: []*ir.Inst{i}, Pos: here}
	// A value defined inside an if is not visible after it.
	inner := c32(2)
	ucmp := op(ir.OpLt, ir.TBool, u, u)
	ifInst := &ir.Inst{Op: ir.OpIf, Args: []*ir.Inst{ucmp}, Blocks: []*ir.Block{{Insts: []*ir.Inst{inner}}, {}}, Pos: here}
	// A barrier under a condition that depends on the invocation id.
	lane := gid()
	lcmp := op(ir.OpLt, ir.TBool, lane, u)
	divergent := &ir.Inst{Op: ir.OpIf, Args: []*ir.Inst{lcmp}, Blocks: []*ir.Block{{Insts: []*ir.Inst{{Op: ir.OpBarrier, Pos: ir.Pos{File: "k.go", Line: 99}}}}, {}}, Pos: here}
	cases := []struct {
		name string
		k    *ir.Kernel
		want string // "" = valid
	}{
		{"add", kernel(x, op(ir.OpAdd, ir.TF32, x, x)), ""},
		{"mismatch", kernel(x, u, op(ir.OpAdd, ir.TF32, x, u)), "mismatched operand types f32 and u32"},
		{"result type", kernel(x, op(ir.OpAdd, ir.TU32, x, x)), "result u32"},
		{"rem float", kernel(x, op(ir.OpRem, ir.TF32, x, x)), "needs integer"},
		{"compare result", kernel(x, op(ir.OpLt, ir.TF32, x, x)), "want bool"},
		{"load", kernel(i, load), ""},
		{"load write-only", kernel(i, &ir.Inst{Op: ir.OpLoad, Type: ir.TF32, Mem: ir.MemBuffer, Ref: 1, Args: []*ir.Inst{i}, Pos: here}), "write-only"},
		{"store read-only", kernel(i, x, &ir.Inst{Op: ir.OpStore, Mem: ir.MemBuffer, Ref: 0, Args: []*ir.Inst{i, x}, Pos: here}), "read-only buffer in"},
		{"store type", kernel(i, &ir.Inst{Op: ir.OpStore, Mem: ir.MemBuffer, Ref: 1, Args: []*ir.Inst{i, i}, Pos: here}), "storing u32"},
		{"narrow load widens", kernel(i, &ir.Inst{Op: ir.OpLoad, Type: ir.TI32, Mem: ir.MemBuffer, Ref: 3, Args: []*ir.Inst{i}, Pos: here}), ""},
		{"narrow load typed narrow", kernel(i, &ir.Inst{Op: ir.OpLoad, Type: ir.S(ir.I8), Mem: ir.MemBuffer, Ref: 3, Args: []*ir.Inst{i}, Pos: here}), "holds i8"},
		{"bad buffer", kernel(i, &ir.Inst{Op: ir.OpLoad, Type: ir.TF32, Mem: ir.MemBuffer, Ref: 9, Args: []*ir.Inst{i}, Pos: here}), "buffer 9 does not exist"},
		{"float index", kernel(x, &ir.Inst{Op: ir.OpLoad, Type: ir.TF32, Mem: ir.MemBuffer, Ref: 0, Args: []*ir.Inst{x}, Pos: here}), "index must be"},
		{"atomic", kernel(i, u, &ir.Inst{Op: ir.OpAtomic, Type: ir.TU32, Mem: ir.MemBuffer, Ref: 2, Aux: uint64(ir.AtomicAdd), Args: []*ir.Inst{i, u}, Pos: here}), ""},
		{"atomic add f32", kernel(i, x, &ir.Inst{Op: ir.OpAtomic, Type: ir.TF32, Mem: ir.MemShared, Ref: 0, Aux: uint64(ir.AtomicAdd), Args: []*ir.Inst{i, x}, Pos: here}), ""},
		{"atomic max f32", kernel(i, x, &ir.Inst{Op: ir.OpAtomic, Type: ir.TF32, Mem: ir.MemShared, Ref: 0, Aux: uint64(ir.AtomicMax), Args: []*ir.Inst{i, x}, Pos: here}), "needs i32 or u32"},
		{"atomic xor f32", kernel(i, x, &ir.Inst{Op: ir.OpAtomic, Type: ir.TF32, Mem: ir.MemShared, Ref: 0, Aux: uint64(ir.AtomicXor), Args: []*ir.Inst{i, x}, Pos: here}), "needs i32 or u32"},
		{"shuffle lane", kernel(u, x, op(ir.OpShuffle, ir.TF32, x, u)), ""},
		{"subgroup reduce", kernel(x, &ir.Inst{Op: ir.OpSubgroupReduce, Type: ir.TF32, Args: []*ir.Inst{x}, Aux: uint64(ir.ReduceSum), Ref: 8, Pos: here}), ""},
		{"subgroup reduce width", kernel(x, &ir.Inst{Op: ir.OpSubgroupReduce, Type: ir.TF32, Args: []*ir.Inst{x}, Aux: uint64(ir.ReduceMax), Ref: 6, Pos: here}), "not a power of two"},
		{"shuffle lane type", kernel(u, x, op(ir.OpShuffle, ir.TF32, x, x)), "by a u32 mask or lane"},
		{"out of scope", kernel(u, ucmp, ifInst, op(ir.OpAdd, ir.TF32, inner, inner)), "not in scope"},
		{"use before def", kernel(op(ir.OpNeg, ir.TF32, x), x), "not in scope"},
		{"break outside loop", kernel(&ir.Inst{Op: ir.OpBreak, Pos: here}), "outside a loop"},
		{"break in continuing", kernel(&ir.Inst{Op: ir.OpLoop, Blocks: []*ir.Block{{Insts: []*ir.Inst{{Op: ir.OpBreak, Pos: here}}}, {Insts: []*ir.Inst{{Op: ir.OpBreak, Pos: here}}}}, Pos: here}), "continuing"},
		{"if cond", kernel(u, &ir.Inst{Op: ir.OpIf, Args: []*ir.Inst{u}, Blocks: []*ir.Block{{}, {}}, Pos: here}), "want bool"},
		{"if blocks", kernel(x, op(ir.OpLt, ir.TBool, x, x), &ir.Inst{Op: ir.OpIf, Pos: here}), "blocks"},
		{"dot", kernel(u, op(ir.OpDotI8x4, ir.TI32, u, u)), ""},
		{"dot types", kernel(x, op(ir.OpDotI8x4, ir.TI32, x, x)), "packed u32"},
		{"shuffle", kernel(x, u, op(ir.OpShuffleXor, ir.TF32, x, u)), ""},
		{"bitcast width", kernel(x, op(ir.OpBitcast, ir.TF16, x)), "cannot bitcast"},
		{"bitcast vec2 f16", kernel(u, op(ir.OpBitcast, ir.Vec(ir.F16, 2), u)), ""},
		{"compose", kernel(x, op(ir.OpCompose, ir.Vec(ir.F32, 3), x, x, x)), ""},
		{"compose count", kernel(x, op(ir.OpCompose, ir.Vec(ir.F32, 3), x, x)), "from 2 lanes"},
		{"extract", kernel(x, &ir.Inst{Op: ir.OpExtract, Type: ir.TF32, Args: []*ir.Inst{x}, Pos: here}), "lane 0 of f32"},
		{"param type", kernel(&ir.Inst{Op: ir.OpParam, Type: ir.TF32, Ref: 0, Pos: here}), "parameter n is u32"},
		{"reduce", kernel(x, &ir.Inst{Op: ir.OpReduce, Type: ir.TF32, Args: []*ir.Inst{x}, Pos: here}), ""},
		{"fma", kernel(x, op(ir.OpFma, ir.TF32, x, x, x)), ""},
		{"fma types", kernel(x, u, op(ir.OpFma, ir.TF32, x, u, x)), "takes f32, f32, f32"},
		{"fma operands", kernel(x, op(ir.OpFma, ir.TF32, x, x)), "takes 3 operands"},
		{"native exp", kernel(x, &ir.Inst{Op: ir.OpNative, Type: ir.TF32, Aux: uint64(ir.NativeExp), Args: []*ir.Inst{x}, Pos: here}), ""},
		{"native pow", kernel(x, &ir.Inst{Op: ir.OpNative, Type: ir.TF32, Aux: uint64(ir.NativePow), Args: []*ir.Inst{x, x}, Pos: here}), ""},
		{"native pow arity", kernel(x, &ir.Inst{Op: ir.OpNative, Type: ir.TF32, Aux: uint64(ir.NativePow), Args: []*ir.Inst{x}, Pos: here}), "takes 2 operands"},
		{"native type", kernel(u, &ir.Inst{Op: ir.OpNative, Type: ir.TF32, Aux: uint64(ir.NativeSin), Args: []*ir.Inst{u}, Pos: here}), "operand 0 is u32"},
		{"native unknown", kernel(x, &ir.Inst{Op: ir.OpNative, Type: ir.TF32, Aux: 99, Args: []*ir.Inst{x}, Pos: here}), "unknown native function"},
		{"barrier under lane condition", kernel(u, lane, lcmp, divergent), "k.go:99"},
		{"barrier under uniform condition", kernel(u, ucmp, &ir.Inst{Op: ir.OpIf, Args: []*ir.Inst{ucmp}, Blocks: []*ir.Block{{Insts: []*ir.Inst{{Op: ir.OpBarrier, Pos: here}}}, {}}, Pos: here}), ""},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ir.Verify(c.k)
			if c.want == "" {
				if err != nil {
					t.Fatalf("valid kernel rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid kernel accepted, want error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "k.go:") {
				t.Fatalf("error %q has no source position", err)
			}
		})
	}
}

func TestVerifyKernelShape(t *testing.T) {
	for _, c := range []struct {
		mod  func(k *ir.Kernel)
		want string
	}{
		{func(k *ir.Kernel) { k.Name = "9lives" }, "not an identifier"},
		{func(k *ir.Kernel) { k.WorkgroupSize = [3]uint32{0, 1, 1} }, "zero dimension"},
		{func(k *ir.Kernel) { k.WorkgroupSize = [3]uint32{64, 32, 1} }, "over the limit"},
		{func(k *ir.Kernel) { k.Buffers[1].Name = "in" }, "already used"},
		{func(k *ir.Kernel) { k.Params[0].Type = ir.TF16 }, "not a 32-bit scalar"},
		{func(k *ir.Kernel) { k.Shared[0].Len = 0 }, "not positive"},
		{func(k *ir.Kernel) { k.Buffers[0].Elem = ir.TBool }, "cannot be stored"},
		{func(k *ir.Kernel) { k.Body = nil }, "no body"},
	} {
		k := kernel()
		c.mod(k)
		err := ir.Verify(k)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	x := c32(1)
	add := op(ir.OpAdd, ir.TF32, x, x)
	k := kernel(x, add)
	c := k.Clone()
	if c.Body.Insts[1].Args[0] != c.Body.Insts[0] {
		t.Fatal("clone's operands do not point at the clone's instructions")
	}
	c.Body.Insts[0].Aux = ir.ConstBits(ir.TF32, 5)
	c.Buffers[0].Name = "changed"
	if k.Body.Insts[0].Aux != ir.ConstBits(ir.TF32, 1) || k.Buffers[0].Name != "in" {
		t.Fatal("modifying the clone changed the original")
	}
	if k.String() == c.String() {
		t.Fatal("clone and original print the same after a change")
	}
}

func TestConstRoundTrip(t *testing.T) {
	for _, c := range []struct {
		t ir.Type
		v float64
	}{{ir.TF32, 0.1}, {ir.TF32, -0.0}, {ir.TI32, -5}, {ir.TU32, 4294967295}, {ir.TF16, 65504}, {ir.TF16, 5.960464477539063e-08}, {ir.TBool, 1}} {
		bits := ir.ConstBits(c.t, c.v)
		want := c.v
		if c.t == ir.TF32 {
			want = float64(float32(c.v))
		}
		if got := ir.ConstFloat(c.t, bits); got != want {
			t.Errorf("%s %v: round trip gives %v", c.t, c.v, got)
		}
	}
	if ir.FormatConst(ir.TF32, 0x7fc00000) != "0x7fc00000" || ir.FormatConst(ir.TF32, ir.ConstBits(ir.TF32, 2)) != "2.0" {
		t.Errorf("FormatConst: %s %s", ir.FormatConst(ir.TF32, 0x7fc00000), ir.FormatConst(ir.TF32, ir.ConstBits(ir.TF32, 2)))
	}
}
