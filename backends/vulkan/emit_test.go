package vulkan_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

// emitCase is one hand-built kernel and what its module must declare.
type emitCase struct {
	name  string
	build func(b *irtest.Builder)
	want  vulkan.Features
	sub   uint32 // EmitOptions.SubgroupSize
}

var (
	f32, i32, u32, f16, f64, bl = ir.TF32, ir.TI32, ir.TU32, ir.TF16, ir.TF64, ir.TBool
)

func vec(s ir.Scalar, n int) ir.Type { return ir.Vec(s, n) }

// shared is the build function of the irtest case name: a kernel the C-family backends' tests
// use too, built here with the default 64x1x1 workgroup.
func shared(name string) func(*irtest.Builder) {
	for _, c := range irtest.Cases {
		if c.Name == name && len(c.WG) == 0 {
			return c.Build
		}
	}
	panic("no irtest case " + name + " with the default workgroup size")
}

var emitCases = []emitCase{
	{name: "arith_f32", build: shared("arith_f32")},
	{name: "arith_i32", build: shared("arith_i32")},
	{name: "arith_u32", build: shared("arith_u32")},
	{name: "arith_vec2_f32", build: shared("arith_vec2_f32")},
	{name: "arith_vec3_f32", build: shared("arith_vec3_f32")},
	{name: "arith_vec4_f32", build: shared("arith_vec4_f32")},
	{name: "arith_vec2_i32", build: shared("arith_vec2_i32")},
	{name: "arith_vec3_u32", build: shared("arith_vec3_u32")},
	{name: "arith_vec4_i32", build: shared("arith_vec4_i32")},
	{name: "arith_vec4_u32", build: shared("arith_vec4_u32")},
	{name: "arith_f16", want: vulkan.Features{Float16: true}, build: func(b *irtest.Builder) {
		// f16 values computed in registers, from f32 buffers.
		in := b.Buffer("in", f32, ir.ReadOnly)
		out := b.Buffer("out", f32, ir.WriteOnly)
		g := b.GID()
		x := b.Conv(f16, b.Ld(in, g))
		y := b.Conv(f16, b.Ld(in, b.Bin(ir.OpAdd, g, b.U32(1))))
		v := b.Bin(ir.OpAdd, b.Bin(ir.OpMul, x, y), b.C(f16, 0.5))
		v = b.Bin(ir.OpMax, b.Bin(ir.OpMin, v, x), b.Un(ir.OpSqrt, b.Un(ir.OpAbs, y)))
		v = b.Op(ir.OpSelect, f16, b.Bin(ir.OpLt, v, x), b.Un(ir.OpNeg, v), b.Un(ir.OpFloor, v))
		h2 := b.Op(ir.OpCompose, vec(ir.F16, 2), v, x)
		h2 = b.Bin(ir.OpDiv, h2, b.C(vec(ir.F16, 2), 3))
		b.St(out, g, b.Bitcast(f32, h2))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Conv(f32, b.Conv(i32, v)))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(3)), b.Conv(f32, b.Conv(f16, b.Conv(u32, x))))
	}},
	{name: "f64", want: vulkan.Features{Float64: true}, build: func(b *irtest.Builder) {
		in := b.Buffer("in", f32, ir.ReadOnly)
		out := b.Buffer("out", f32, ir.WriteOnly)
		g := b.GID()
		x := b.Conv(f64, b.Ld(in, g))
		q := b.Bin(ir.OpDiv, x, b.C(f64, 3))
		q = b.Bin(ir.OpSub, b.Bin(ir.OpMul, q, q), b.Un(ir.OpSqrt, x))
		b.St(out, g, b.Conv(f32, b.Op(ir.OpSelect, f64, b.Bin(ir.OpGt, q, x), q, b.Un(ir.OpFloor, x))))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Conv(f32, b.Conv(i32, q)))
	}},
	{name: "convert_bitcast", build: func(b *irtest.Builder) {
		in := b.Buffer("in", f32, ir.ReadOnly)
		out := b.Buffer("out", u32, ir.WriteOnly)
		g := b.GID()
		n := 0
		put := func(v *ir.Inst) {
			if v.Type != u32 {
				v = b.Bitcast(u32, v)
			}
			b.St(out, b.Bin(ir.OpAdd, g, b.U32(uint32(n))), v)
			n++
		}
		x := b.Ld(in, g)
		irtest.Convs(b, x, put, ir.I32, ir.U32)
		xi := b.Conv(i32, x)
		irtest.Convs(b, xi, put, ir.F32, ir.U32)
		xu := b.Bitcast(u32, x)
		irtest.Convs(b, xu, put, ir.F32, ir.I32)
		put(b.Bitcast(u32, b.Bitcast(i32, xu)))
		put(b.Bitcast(u32, b.Bitcast(u32, xu))) // same-type bitcast
		v2 := b.Op(ir.OpCompose, vec(ir.F32, 2), x, x)
		v2i := b.Conv(vec(ir.I32, 2), v2)
		put(b.Ext(b.Bitcast(vec(ir.U32, 2), b.Conv(vec(ir.F32, 2), b.Conv(vec(ir.U32, 2), v2i))), 1))
	}},
	{name: "bool_ops", build: func(b *irtest.Builder) {
		in := b.Buffer("in", i32, ir.ReadOnly)
		out := b.Buffer("out", i32, ir.WriteOnly)
		g := b.GID()
		x := b.Ld(in, g)
		p := b.Bin(ir.OpLt, x, b.I32(0))
		q := b.Bin(ir.OpGt, x, b.I32(10))
		r := b.Bin(ir.OpAnd, b.Bin(ir.OpOr, p, q), b.Un(ir.OpNot, b.Bin(ir.OpXor, p, b.C(bl, 1))))
		r = b.Bin(ir.OpNe, b.Bin(ir.OpEq, r, p), q)
		b.St(out, g, b.Op(ir.OpSelect, i32, r, x, b.I32(7)))
		pv := b.Op(ir.OpCompose, vec(ir.Bool, 2), p, q)
		qv := b.Bin(ir.OpEq, pv, b.C(vec(ir.Bool, 2), 0))
		sel := b.Op(ir.OpSelect, vec(ir.I32, 2), b.Bin(ir.OpXor, pv, qv), b.C(vec(ir.I32, 2), 1), b.C(vec(ir.I32, 2), -1))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Ext(sel, 1))
	}},
	{name: "narrow_storage", want: vulkan.Features{StorageBuffer8: true, StorageBuffer16: true}, build: func(b *irtest.Builder) {
		// i8/u8/i16/u16/f16 buffers: loads widen, stores narrow; f16 converted, never computed.
		type pair struct{ in, out int }
		var ps []pair
		for _, s := range []ir.Scalar{ir.I8, ir.U8, ir.I16, ir.U16, ir.F16} {
			ps = append(ps, pair{b.Buffer("in_"+s.String(), ir.S(s), ir.ReadOnly), b.Buffer("out_"+s.String(), ir.S(s), ir.ReadWrite)})
		}
		g := b.GID()
		for _, p := range ps {
			v := b.Ld(p.in, g)
			if v.Type.Scalar == ir.F16 {
				w := b.Conv(f32, v)
				w = b.Bin(ir.OpMul, w, b.F32(2))
				b.St(p.out, g, b.Conv(f16, w))
				b.St(p.out, b.Bin(ir.OpAdd, g, b.U32(1)), v)
				continue
			}
			b.St(p.out, g, b.Bin(ir.OpAdd, v, b.C(v.Type, 1)))
			b.St(p.out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Ld(p.out, g))
		}
	}},
	{name: "f16_buffer_arith", want: vulkan.Features{StorageBuffer16: true, Float16: true}, build: func(b *irtest.Builder) {
		in := b.Buffer("in", f16, ir.ReadOnly)
		out := b.Buffer("out", f16, ir.WriteOnly)
		g := b.GID()
		b.St(out, g, b.Bin(ir.OpAdd, b.Ld(in, g), b.C(f16, 1)))
	}},
	{name: "builtins", want: vulkan.Features{SubgroupBasic: true}, build: func(b *irtest.Builder) {
		out := b.Buffer("out", u32, ir.WriteOnly)
		i := b.Builtin(ir.LocalIndex, 0)
		n := 0
		put := func(v *ir.Inst) {
			b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, i, b.U32(16)), b.U32(uint32(n))), v)
			n++
		}
		for _, bi := range []ir.Builtin{ir.GlobalID, ir.LocalID, ir.WorkgroupID, ir.NumWorkgroups} {
			for d := range 3 {
				put(b.Builtin(bi, d))
			}
		}
		for _, bi := range []ir.Builtin{ir.SubgroupSize, ir.SubgroupLane, ir.SubgroupID} {
			put(b.Builtin(bi, 0))
		}
	}},
	{name: "memory_spaces", build: func(b *irtest.Builder) {
		ro := b.Buffer("ro", f32, ir.ReadOnly)
		wo := b.Buffer("wo", f32, ir.WriteOnly)
		rw := b.Buffer("rw", i32, ir.ReadWrite)
		v2 := b.Buffer("v2", vec(ir.F32, 2), ir.ReadWrite)
		v3 := b.Buffer("v3", vec(ir.U32, 3), ir.ReadWrite)
		v4 := b.Buffer("v4", vec(ir.I32, 4), ir.ReadWrite)
		pf := b.Param("scale", f32)
		pi := b.Param("offset", i32)
		pu := b.Param("n", u32)
		sh := b.Shared("tile", f32, 64)
		sh4 := b.Shared("tile4", vec(ir.F32, 4), 8)
		shu := b.Shared("counts", u32, 4)
		acc := b.Local("acc", f32)
		acc4 := b.Local("acc4", vec(ir.F32, 4))
		flag := b.Local("flag", bl)
		li := b.Builtin(ir.LocalIndex, 0)
		g := b.GID()
		b.Store(ir.MemShared, sh, li, b.Bin(ir.OpMul, b.Ld(ro, g), b.P(pf)))
		b.Store(ir.MemShared, sh4, b.Bin(ir.OpAnd, li, b.U32(7)), b.C(vec(ir.F32, 4), 2))
		b.Store(ir.MemShared, shu, b.U32(0), b.P(pu))
		b.Barrier()
		b.SetV(acc, b.Load(ir.MemShared, sh, b.Bin(ir.OpXor, li, b.U32(1))))
		b.SetV(acc4, b.Load(ir.MemShared, sh4, b.U32(3)))
		b.SetV(flag, b.Bin(ir.OpLt, g, b.Op(ir.OpLen, u32)))
		b.If(b.GetV(flag), func() {
			b.St(wo, g, b.Bin(ir.OpAdd, b.GetV(acc), b.Ext(b.GetV(acc4), 2)))
		}, nil)
		b.St(rw, g, b.Bin(ir.OpAdd, b.Ld(rw, g), b.P(pi)))
		b.St(v2, g, b.Bin(ir.OpMul, b.Ld(v2, g), b.C(vec(ir.F32, 2), 0.5)))
		b.St(v3, g, b.Bin(ir.OpAdd, b.Ld(v3, g), b.C(vec(ir.U32, 3), 1)))
		b.St(v4, g, b.Un(ir.OpNeg, b.Ld(v4, g)))
		b.St(v3, b.U32(0), b.Op(ir.OpCompose, vec(ir.U32, 3), b.Add(&ir.Inst{Op: ir.OpLen, Type: u32, Ref: v3}), b.Load(ir.MemShared, shu, b.U32(0)), b.U32(0)))
	}},
	{name: "atomics", build: func(b *irtest.Builder) {
		bi := b.Buffer("bi", i32, ir.ReadWrite)
		bu := b.Buffer("bu", u32, ir.ReadWrite)
		si := b.Shared("si", i32, 4)
		su := b.Shared("su", u32, 4)
		out := b.Buffer("out", i32, ir.WriteOnly)
		g := b.GID()
		z := b.U32(0)
		x := b.Bitcast(i32, g)
		var rs []*ir.Inst
		for _, mem := range []ir.Mem{ir.MemBuffer, ir.MemShared} {
			ri, ru := bi, bu
			if mem == ir.MemShared {
				ri, ru = si, su
			}
			for _, op := range []ir.AtomicOp{ir.AtomicAdd, ir.AtomicMin, ir.AtomicMax, ir.AtomicExchange} {
				rs = append(rs, b.Atomic(mem, ri, op, z, x))
				rs = append(rs, b.Bitcast(i32, b.Atomic(mem, ru, op, z, g)))
			}
			rs = append(rs, b.Atomic(mem, ri, ir.AtomicCmpXchg, z, b.I32(0), x))
			rs = append(rs, b.Bitcast(i32, b.Atomic(mem, ru, ir.AtomicCmpXchg, z, b.U32(5), g)))
		}
		for i, r := range rs {
			b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(32)), b.U32(uint32(i))), r)
		}
	}},
	// Native f32 atomic adds (lower.Caps.AtomicFloatAdd) on a buffer and a shared array, their
	// results used.
	{name: "atomics_f32", want: vulkan.Features{AtomicFloat32Add: true}, build: func(b *irtest.Builder) {
		hist := b.Buffer("hist", f32, ir.ReadWrite)
		tally := b.Shared("tally", f32, 8)
		out := b.Buffer("out", f32, ir.WriteOnly)
		g := b.GID()
		bin := b.Bin(ir.OpAnd, g, b.U32(7))
		w := b.Conv(f32, g)
		r1 := b.Atomic(ir.MemShared, tally, ir.AtomicAdd, bin, w)
		b.Barrier()
		r2 := b.Atomic(ir.MemBuffer, hist, ir.AtomicAdd, bin, b.Load(ir.MemShared, tally, bin))
		b.St(out, g, b.Bin(ir.OpAdd, r1, r2))
	}},
	{name: "dot_shuffle", sub: 8, want: vulkan.Features{IntegerDotProduct: true, SubgroupShuffle: true, SubgroupBasic: true}, build: shared("dot_shuffle")},
	{name: "cf_nested_if", build: shared("cf_nested_if")},
	{name: "cf_loops", build: shared("cf_loops")},
	{name: "cf_terminating_branches", build: shared("cf_terminating_branches")},
	{name: "cf_early_return_in_loop", build: func(b *irtest.Builder) {
		in := b.Buffer("in", i32, ir.ReadOnly)
		out := b.Buffer("out", i32, ir.WriteOnly)
		i := b.Local("i", u32)
		g := b.GID()
		b.If(b.Bin(ir.OpGe, g, b.Op(ir.OpLen, u32)), func() { b.Return() }, nil)
		// a loop that only exits by returning: its merge is unreachable
		b.SetV(i, b.U32(0))
		b.Loop(func() {
			b.If(b.Bin(ir.OpEq, b.Ld(in, b.GetV(i)), b.I32(0)), func() {
				b.St(out, g, b.Bitcast(i32, b.GetV(i)))
				b.Return()
			}, nil)
		}, func() {
			b.SetV(i, b.Bin(ir.OpAdd, b.GetV(i), b.U32(1)))
		})
	}},
	{name: "cf_return_in_continuing", build: shared("cf_return_in_continuing")},
	{name: "cf_endless", build: shared("cf_endless")},
	{name: "barrier_uniform_loop", build: shared("barrier_uniform_loop")},
	{name: "names_and_consts", build: buildNamesAndConsts},
}

func buildNamesAndConsts(b *irtest.Builder) {
	out := b.Buffer("out", f32, ir.WriteOnly)
	g := b.Name(b.GID(), "gid")
	one := b.Name(b.F32(1), "one")
	one2 := b.Name(b.F32(1), "another_one") // deduplicated constant, the first name is kept
	nan := b.Bits(f32, 0x7fc00001)
	inf := b.Bits(f32, 0xff800000)
	negz := b.Bits(f32, 0x80000000)
	v := b.Name(b.Bin(ir.OpAdd, one, one2), "two")
	v = b.Bin(ir.OpAdd, v, b.Op(ir.OpSelect, f32, b.Bin(ir.OpNe, nan, nan), inf, negz))
	b.St(out, g, v)
	b.St(out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Ext(b.C(vec(ir.F32, 4), -0.25), 3))
	iv := b.C(vec(ir.I32, 2), -3)
	b.St(out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Ext(b.Conv(vec(ir.F32, 2), iv), 0))
}

// featureNames lists the set features, for messages.
func featureNames(f vulkan.Features) string {
	var s []string
	add := func(ok bool, n string) {
		if ok {
			s = append(s, n)
		}
	}
	add(f.Int8, "Int8")
	add(f.Int16, "Int16")
	add(f.Float16, "Float16")
	add(f.Float64, "Float64")
	add(f.StorageBuffer8, "StorageBuffer8")
	add(f.StorageBuffer16, "StorageBuffer16")
	add(f.IntegerDotProduct, "IntegerDotProduct")
	add(f.SubgroupShuffle, "SubgroupShuffle")
	add(f.SubgroupBasic, "SubgroupBasic")
	add(f.SubgroupArithmetic, "SubgroupArithmetic")
	add(f.AtomicFloat32Add, "AtomicFloat32Add")
	return "{" + strings.Join(s, " ") + "}"
}

func buildCase(t testing.TB, c emitCase) *ir.Kernel {
	b := irtest.New(c.name, 64)
	c.build(b)
	return done(t, b)
}

func TestEmitValidates(t *testing.T) {
	needSPIRVTools(t)
	for _, c := range emitCases {
		t.Run(c.name, func(t *testing.T) {
			k := buildCase(t, c)
			mod, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: c.sub})
			if err != nil {
				t.Fatalf("Emit: %v\n%s", err, k)
			}
			if err := spirvVal(t, mod.Words); err != nil {
				t.Fatalf("%v\nIR:\n%s", err, k)
			}
			if mod.Features != c.want {
				t.Errorf("features %s, want %s", featureNames(mod.Features), featureNames(c.want))
			}
			if mod.Name != k.Name || mod.WorkgroupSize != k.WorkgroupSize || mod.SubgroupSize != c.sub {
				t.Errorf("module header %q %v %d", mod.Name, mod.WorkgroupSize, mod.SubgroupSize)
			}
			if mod.PushConstantSize != uint32(4*len(k.Params)) || len(mod.Bindings) != len(k.Buffers) || mod.SharedBytes != uint32(k.SharedBytes()) {
				t.Errorf("module layout: push %d, bindings %d, shared %d", mod.PushConstantSize, len(mod.Bindings), mod.SharedBytes)
			}
			// Stable: the same IR gives the same words.
			again, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: c.sub})
			if err != nil || !slices.Equal(again.Words, mod.Words) {
				t.Errorf("emitting twice gave different words (err %v)", err)
			}
		})
	}
}

// TestEmitContract checks the numeric contract in the disassembly of arith kernels: every float
// add/sub/mul/div is NoContraction, there is no Fma, no FMin/FMax, no OpSDotAccSat, and shift
// counts are masked.
func TestEmitContract(t *testing.T) {
	needSPIRVTools(t)
	for _, name := range []string{"arith_f32", "arith_vec4_f32", "arith_f16", "f64", "arith_i32", "dot_shuffle"} {
		t.Run(name, func(t *testing.T) {
			var c emitCase
			for _, x := range emitCases {
				if x.name == name {
					c = x
				}
			}
			mod, err := vulkan.Emit(buildCase(t, c), vulkan.EmitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dis, err := spirvDis(t, mod.Words, true)
			if err != nil {
				t.Fatal(err)
			}
			noContract := map[string]bool{}
			for _, line := range strings.Split(dis, "\n") {
				f := strings.Fields(line)
				if len(f) == 3 && f[0] == "OpDecorate" && f[2] == "NoContraction" {
					noContract[f[1]] = true
				}
			}
			for _, line := range strings.Split(dis, "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || f[1] != "=" {
					continue
				}
				switch f[2] {
				case "OpFAdd", "OpFSub", "OpFMul", "OpFDiv":
					if !noContract[f[0]] {
						t.Errorf("%s is not decorated NoContraction", strings.TrimSpace(line))
					}
				case "OpSDotAccSat", "OpSDotAccSatKHR":
					t.Errorf("saturating dot product: %s", line)
				case "OpExtInst":
					for _, bad := range []string{"Fma", "FMin", "FMax", "NMin", "NMax"} {
						if slices.Contains(f, bad) {
							t.Errorf("forbidden %s: %s", bad, line)
						}
					}
				case "OpShiftLeftLogical", "OpShiftRightLogical", "OpShiftRightArithmetic":
					if !strings.Contains(dis, f[len(f)-1]+" = OpBitwiseAnd") {
						t.Errorf("shift count not masked: %s", line)
					}
				}
			}
		})
	}
}

func TestEmitErrors(t *testing.T) {
	// An unexpanded reduction.
	b := irtest.New("reduce_left", 64)
	out := b.Buffer("out", f32, ir.WriteOnly)
	g := b.GID()
	r := b.Add(&ir.Inst{Op: ir.OpReduce, Type: f32, Aux: uint64(ir.ReduceSum), Args: []*ir.Inst{b.Conv(f32, g)}})
	b.St(out, g, r)
	k := done(t, b)
	_, err := vulkan.Emit(k, vulkan.EmitOptions{})
	var ie *ir.Error
	if err == nil || !errors.As(err, &ie) || ie.Pos != r.Pos || ie.Kernel != "reduce_left" || !strings.Contains(err.Error(), "lower") {
		t.Errorf("reduce: got %v, want an error at %s naming the kernel and package lower", err, r.Pos)
	}

	// A narrow shared array.
	b = irtest.New("narrow_shared", 64)
	sh := b.Shared("bytes", ir.S(ir.U8), 64)
	b.Store(ir.MemShared, sh, b.GID(), b.U32(1))
	k = done(t, b)
	_, err = vulkan.Emit(k, vulkan.EmitOptions{})
	if err == nil || !errors.As(err, &ie) || ie.Pos != k.Shared[0].Pos || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("narrow shared: got %v", err)
	}

	// Malformed IR (not verified) gives errors, never a panic.
	bad := []*ir.Kernel{
		nil,
		{Name: "nobody", WorkgroupSize: [3]uint32{1, 1, 1}},
		{Name: "zero_wg", Body: &ir.Block{}},
		{Name: "bad_ref", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpLen, Type: u32, Ref: 3}}}},
		{Name: "bad_arg", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpNeg, Type: f32, Args: []*ir.Inst{{Op: ir.OpConst, Type: f32}}}}}},
		{Name: "break_outside", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpBreak}}}},
		{Name: "bad_op", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.Op(200)}}}},
		{Name: "nil_args", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpAdd, Type: f32, Args: []*ir.Inst{nil, nil}}}}},
	}
	// An f32 atomic other than add (the verifier refuses it; unverified IR still gets an error).
	idx, val := &ir.Inst{Op: ir.OpConst, Type: u32}, &ir.Inst{Op: ir.OpConst, Type: f32}
	fmin := &ir.Inst{Op: ir.OpAtomic, Type: f32, Mem: ir.MemBuffer, Aux: uint64(ir.AtomicMin), Args: []*ir.Inst{idx, val}}
	fk := &ir.Kernel{Name: "f32_atomic_min", WorkgroupSize: [3]uint32{1, 1, 1}, Buffers: []*ir.Buffer{{Name: "b", Elem: f32, Access: ir.ReadWrite}}, Body: &ir.Block{Insts: []*ir.Inst{idx, val, fmin}}}
	if _, err := vulkan.Emit(fk, vulkan.EmitOptions{}); err == nil || !strings.Contains(err.Error(), "only native float atomic is add") {
		t.Errorf("f32 atomic min: got %v", err)
	}
	for _, k := range bad {
		if _, err := vulkan.Emit(k, vulkan.EmitOptions{}); err == nil {
			t.Errorf("kernel %v: no error", k)
		}
	}
}
