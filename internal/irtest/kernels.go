package irtest

import (
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/q8dot"
	"github.com/onesource-go/onesource/examples/rmsnorm"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/ir"
)

// Case is one hand-built kernel.
type Case struct {
	// Name is the kernel's name.
	Name string
	// WG is the workgroup size (default 64x1x1).
	WG []uint32
	// F64 marks kernels with f64 values (not expressible in MSL).
	F64 bool
	// Build adds the kernel's resources and body.
	Build func(b *Builder)
}

// Kernel builds and verifies the case's kernel.
func (c Case) Kernel() (*ir.Kernel, error) {
	wg := c.WG
	if len(wg) == 0 {
		wg = []uint32{64}
	}
	b := New(c.Name, wg...)
	c.Build(b)
	return b.Done()
}

// Examples builds the example kernels (examples/saxpy, rmsnorm, q8dot) at their default
// schedules.
func Examples() ([]*ir.Kernel, error) {
	var ks []*ir.Kernel
	for _, src := range []func() []*dsl.Kernel{saxpy.Kernels, rmsnorm.Kernels, q8dot.Kernels} {
		for _, d := range src() {
			k, err := d.Build()
			if err != nil {
				return nil, err
			}
			ks = append(ks, k)
		}
	}
	return ks, nil
}

var (
	f32, i32, u32, f16, f64, bl = ir.TF32, ir.TI32, ir.TU32, ir.TF16, ir.TF64, ir.TBool
)

func vec(s ir.Scalar, n int) ir.Type { return ir.Vec(s, n) }

// arith uses every element-wise op valid on values of type t, reading from buffer in and writing
// every result to buffer out, so nothing is dead.
func arith(b *Builder, t ir.Type) {
	in := b.Buffer("in", t, ir.ReadOnly)
	out := b.Buffer("out", t, ir.WriteOnly)
	g := b.GID()
	x := b.Name(b.Ld(in, g), "x")
	y := b.Name(b.Ld(in, b.Bin(ir.OpAdd, g, b.U32(1))), "y")
	idx := 0
	put := func(v *ir.Inst) {
		b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(64)), b.U32(uint32(idx))), v)
		idx++
	}
	pick := func(c *ir.Inst) { put(b.Op(ir.OpSelect, t, c, x, y)) }
	for _, op := range []ir.Op{ir.OpNeg, ir.OpAbs} {
		put(b.Un(op, x))
	}
	for _, op := range []ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpMin, ir.OpMax} {
		put(b.Bin(op, x, y))
	}
	for _, op := range []ir.Op{ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe} {
		pick(b.Bin(op, x, y))
	}
	if t.IsVector() {
		put(b.Op(ir.OpSelect, t, b.Bin(ir.OpLt, b.Ext(x, 0), b.Ext(y, 1)), x, y))
		lanes := make([]*ir.Inst, t.Lanes)
		for i := range lanes {
			lanes[i] = b.Add(&ir.Inst{Op: ir.OpExtract, Type: t.Elem(), Args: []*ir.Inst{y}, Aux: uint64(int(t.Lanes) - 1 - i)})
		}
		put(b.Op(ir.OpCompose, t, lanes...))
	}
	switch {
	case t.Scalar.IsFloat():
		put(b.Un(ir.OpSqrt, x))
		put(b.Un(ir.OpFloor, x))
		put(b.Bin(ir.OpAdd, b.Bin(ir.OpMul, x, y), b.C(t, 1.5))) // a*b+c: two roundings
	default:
		put(b.Un(ir.OpNot, x))
		for _, op := range []ir.Op{ir.OpRem, ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr} {
			put(b.Bin(op, x, y))
		}
		put(b.Bin(ir.OpShl, x, b.C(t, 33)))
		put(b.Bin(ir.OpShr, x, b.C(t, -1)))
	}
}

// Convs converts x to every listed type of its lane count and back.
func Convs(b *Builder, x *ir.Inst, put func(*ir.Inst), types ...ir.Scalar) {
	for _, s := range types {
		t := ir.Type{Scalar: s, Lanes: x.Type.Lanes}
		if t == x.Type {
			continue
		}
		put(b.Conv(x.Type, b.Conv(t, x)))
	}
	put(b.Conv(x.Type, x)) // identity
}

// Cases are the hand-built kernels: together they use every op, builtin, memory space, element
// type and control-flow shape of the IR.
var Cases = []Case{
	{Name: "arith_f32", Build: func(b *Builder) { arith(b, f32) }},
	{Name: "arith_i32", Build: func(b *Builder) { arith(b, i32) }},
	{Name: "arith_u32", Build: func(b *Builder) { arith(b, u32) }},
	{Name: "arith_vec2_f32", Build: func(b *Builder) { arith(b, vec(ir.F32, 2)) }},
	{Name: "arith_vec3_f32", Build: func(b *Builder) { arith(b, vec(ir.F32, 3)) }},
	{Name: "arith_vec4_f32", Build: func(b *Builder) { arith(b, vec(ir.F32, 4)) }},
	{Name: "arith_vec2_i32", Build: func(b *Builder) { arith(b, vec(ir.I32, 2)) }},
	{Name: "arith_vec3_u32", Build: func(b *Builder) { arith(b, vec(ir.U32, 3)) }},
	{Name: "arith_vec4_i32", Build: func(b *Builder) { arith(b, vec(ir.I32, 4)) }},
	{Name: "arith_vec4_u32", Build: func(b *Builder) { arith(b, vec(ir.U32, 4)) }},
	{Name: "arith_f16", Build: func(b *Builder) {
		in := b.Buffer("in", f32, ir.ReadOnly)
		out := b.Buffer("out", f32, ir.WriteOnly)
		g := b.GID()
		x := b.Conv(f16, b.Ld(in, g))
		y := b.Conv(f16, b.Ld(in, b.Bin(ir.OpAdd, g, b.U32(1))))
		v := b.Bin(ir.OpAdd, b.Bin(ir.OpMul, x, y), b.C(f16, 0.5))
		v = b.Bin(ir.OpMax, b.Bin(ir.OpMin, v, x), b.Un(ir.OpSqrt, b.Un(ir.OpAbs, y)))
		v = b.Op(ir.OpSelect, f16, b.Bin(ir.OpLt, v, x), b.Un(ir.OpNeg, v), b.Un(ir.OpFloor, v))
		v = b.Bin(ir.OpSub, b.Bin(ir.OpDiv, v, y), b.Bits(f16, 0x7c00)) // - inf
		h2 := b.Op(ir.OpCompose, vec(ir.F16, 2), v, x)
		h2 = b.Bin(ir.OpDiv, h2, b.C(vec(ir.F16, 2), 3))
		b.St(out, g, b.Bitcast(f32, h2))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Conv(f32, b.Conv(i32, v)))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(3)), b.Conv(f32, b.Conv(f16, b.Conv(u32, x))))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(4)), b.Conv(f32, b.Op(ir.OpSelect, f16, b.Bin(ir.OpNe, x, y), b.Bits(f16, 0x7e00), b.Bits(f16, 0x0001))))
		h4 := b.Op(ir.OpCompose, vec(ir.F16, 4), v, x, y, v)
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(5)), b.Bitcast(f32, b.Ext(b.Bitcast(vec(ir.U32, 2), h4), 1)))
	}},
	{Name: "f64", F64: true, Build: func(b *Builder) {
		in := b.Buffer("in", f32, ir.ReadOnly)
		out := b.Buffer("out", f32, ir.WriteOnly)
		g := b.GID()
		x := b.Conv(f64, b.Ld(in, g))
		q := b.Bin(ir.OpDiv, x, b.C(f64, 3))
		q = b.Bin(ir.OpSub, b.Bin(ir.OpMul, q, q), b.Un(ir.OpSqrt, x))
		q = b.Bin(ir.OpAdd, q, b.Un(ir.OpAbs, b.Un(ir.OpNeg, b.Bits(f64, 0x7ff0000000000000))))
		b.St(out, g, b.Conv(f32, b.Op(ir.OpSelect, f64, b.Bin(ir.OpGt, q, x), q, b.Un(ir.OpFloor, x))))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Conv(f32, b.Conv(i32, q)))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Conv(f32, b.Conv(u32, b.Bin(ir.OpMax, q, b.C(f64, 0.1)))))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(3)), b.Bitcast(f32, b.Ext(b.Bitcast(vec(ir.U32, 2), q), 0)))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(4)), b.Conv(f32, b.Conv(f16, q)))
	}},
	{Name: "convert_bitcast", Build: func(b *Builder) {
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
		Convs(b, x, put, ir.I32, ir.U32)
		xi := b.Conv(i32, x)
		Convs(b, xi, put, ir.F32, ir.U32)
		xu := b.Bitcast(u32, x)
		Convs(b, xu, put, ir.F32, ir.I32)
		put(b.Bitcast(u32, b.Bitcast(i32, xu)))
		put(b.Bitcast(u32, b.Bitcast(f32, b.Bitcast(i32, x))))
		put(b.Bitcast(u32, b.Bitcast(u32, xu))) // same-type bitcast
		v2 := b.Op(ir.OpCompose, vec(ir.F32, 2), x, x)
		v2i := b.Conv(vec(ir.I32, 2), v2)
		put(b.Ext(b.Bitcast(vec(ir.U32, 2), b.Conv(vec(ir.F32, 2), b.Conv(vec(ir.U32, 2), v2i))), 1))
		v3 := b.Bitcast(vec(ir.I32, 3), b.Op(ir.OpCompose, vec(ir.F32, 3), x, x, x))
		put(b.Ext(v3, 2))
	}},
	{Name: "bool_ops", Build: func(b *Builder) {
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
		nv := b.Un(ir.OpNot, b.Bin(ir.OpOr, b.Bin(ir.OpAnd, pv, qv), pv))
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Op(ir.OpSelect, i32, b.Ext(nv, 0), b.I32(-2147483648), b.I32(3)))
	}},
	{Name: "narrow_storage", Build: func(b *Builder) {
		type pair struct{ in, out int }
		var ps []pair
		for _, s := range []ir.Scalar{ir.I8, ir.U8, ir.I16, ir.U16, ir.F16} {
			ps = append(ps, pair{b.Buffer("in_"+s.String(), ir.S(s), ir.ReadOnly), b.Buffer("out_"+s.String(), ir.S(s), ir.ReadWrite)})
		}
		sh8 := b.Shared("bytes", ir.S(ir.I8), 64)
		shh := b.Shared("halves", f16, 64)
		g := b.GID()
		li := b.Builtin(ir.LocalIndex, 0)
		for _, p := range ps {
			v := b.Ld(p.in, g)
			if v.Type.Scalar == ir.F16 {
				w := b.Conv(f32, v)
				w = b.Bin(ir.OpMul, w, b.F32(2))
				b.St(p.out, g, b.Conv(f16, w))
				b.St(p.out, b.Bin(ir.OpAdd, g, b.U32(1)), v)
				b.Store(ir.MemShared, shh, li, v)
				continue
			}
			b.St(p.out, g, b.Bin(ir.OpAdd, v, b.C(v.Type, 1)))
			b.St(p.out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Ld(p.out, g))
			if v.Type == i32 {
				b.Store(ir.MemShared, sh8, li, v)
			}
		}
		b.Barrier()
		b.St(ps[0].out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Load(ir.MemShared, sh8, b.Bin(ir.OpXor, li, b.U32(1))))
		b.St(ps[4].out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Load(ir.MemShared, shh, b.Bin(ir.OpXor, li, b.U32(1))))
	}},
	{Name: "builtins", WG: []uint32{8, 4, 2}, Build: func(b *Builder) {
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
	{Name: "builtins_2d", WG: []uint32{16, 4}, Build: func(b *Builder) {
		out := b.Buffer("out", u32, ir.WriteOnly)
		i := b.Builtin(ir.LocalIndex, 0)
		b.St(out, i, b.Bin(ir.OpAdd, b.Builtin(ir.SubgroupLane, 0), b.Builtin(ir.SubgroupID, 0)))
	}},
	{Name: "memory_spaces", Build: func(b *Builder) {
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
		b.SetV(flag, b.Bin(ir.OpLt, g, b.Add(&ir.Inst{Op: ir.OpLen, Type: u32, Ref: ro})))
		b.If(b.GetV(flag), func() {
			b.St(wo, g, b.Bin(ir.OpAdd, b.GetV(acc), b.Ext(b.GetV(acc4), 2)))
		}, nil)
		b.St(rw, g, b.Bin(ir.OpAdd, b.Ld(rw, g), b.P(pi)))
		b.St(v2, g, b.Bin(ir.OpMul, b.Ld(v2, g), b.C(vec(ir.F32, 2), 0.5)))
		b.St(v3, g, b.Bin(ir.OpAdd, b.Ld(v3, g), b.C(vec(ir.U32, 3), 1)))
		b.St(v4, g, b.Un(ir.OpNeg, b.Ld(v4, g)))
		b.St(v3, b.U32(0), b.Op(ir.OpCompose, vec(ir.U32, 3), b.Add(&ir.Inst{Op: ir.OpLen, Type: u32, Ref: v3}), b.Load(ir.MemShared, shu, b.U32(0)), b.U32(0)))
		b.SetV(acc4, b.C(vec(ir.F32, 4), -0.25))
		b.St(v2, b.U32(1), b.Op(ir.OpCompose, vec(ir.F32, 2), b.Ext(b.GetV(acc4), 0), b.GetV(acc)))
	}},
	{Name: "atomics", Build: func(b *Builder) {
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
		b.Atomic(ir.MemBuffer, bu, ir.AtomicAdd, b.U32(1), b.U32(1)) // result unused
		b.Atomic(ir.MemShared, si, ir.AtomicCmpXchg, b.U32(1), b.I32(-1), x)
		for i, r := range rs {
			b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(32)), b.U32(uint32(i))), r)
		}
	}},
	{Name: "dot_shuffle", Build: buildDotShuffle},
	{Name: "dot_shuffle_wg48", WG: []uint32{48}, Build: buildDotShuffle},
	{Name: "dot_shuffle_wg16", WG: []uint32{16}, Build: buildDotShuffle},
	{Name: "cf_nested_if", Build: func(b *Builder) {
		in := b.Buffer("in", i32, ir.ReadOnly)
		out := b.Buffer("out", i32, ir.WriteOnly)
		r := b.Local("r", i32)
		g := b.GID()
		x := b.Ld(in, g)
		b.SetV(r, b.I32(0))
		b.If(b.Bin(ir.OpLt, x, b.I32(0)), func() {
			b.If(b.Bin(ir.OpLt, x, b.I32(-10)), func() { b.SetV(r, b.I32(1)) }, func() { b.SetV(r, b.I32(2)) })
		}, func() {
			b.If(b.Bin(ir.OpGt, x, b.I32(10)), func() { b.SetV(r, b.I32(3)) }, nil)
			b.If(b.Bin(ir.OpEq, x, b.I32(5)), nil, func() { b.SetV(r, b.Bin(ir.OpAdd, b.GetV(r), b.I32(4))) })
			b.If(b.Bin(ir.OpEq, x, b.I32(6)), nil, nil)
		})
		b.St(out, g, b.GetV(r))
	}},
	{Name: "cf_loops", Build: func(b *Builder) {
		in := b.Buffer("in", i32, ir.ReadOnly)
		out := b.Buffer("out", i32, ir.WriteOnly)
		i := b.Local("i", u32)
		j := b.Local("j", u32)
		s := b.Local("s", i32)
		g := b.GID()
		n := b.Add(&ir.Inst{Op: ir.OpLen, Type: u32, Ref: in})
		b.SetV(s, b.I32(0))
		b.For(i, n, func(iv *ir.Inst) {
			x := b.Ld(in, iv)
			b.If(b.Bin(ir.OpLt, x, b.I32(0)), func() { b.Continue() }, nil)
			b.If(b.Bin(ir.OpGt, x, b.I32(1000)), func() { b.Break() }, nil)
			b.For(j, b.U32(3), func(jv *ir.Inst) {
				b.If(b.Bin(ir.OpEq, jv, b.U32(1)), func() { b.Continue() }, func() {
					b.SetV(s, b.Bin(ir.OpAdd, b.GetV(s), x))
				})
			})
		})
		b.Loop(func() {
			b.Break()
			b.SetV(s, b.I32(99))
			b.St(out, g, b.I32(98))
		}, nil)
		b.SetV(i, b.U32(0))
		b.Loop(func() {
			b.SetV(s, b.Bin(ir.OpAdd, b.GetV(s), b.I32(1)))
			b.If(b.Bin(ir.OpGe, b.GetV(i), b.U32(4)), func() { b.Break() }, nil)
		}, func() {
			b.SetV(i, b.Bin(ir.OpAdd, b.GetV(i), b.U32(1)))
		})
		b.St(out, g, b.GetV(s))
	}},
	{Name: "cf_terminating_branches", Build: func(b *Builder) {
		in := b.Buffer("in", i32, ir.ReadOnly)
		out := b.Buffer("out", i32, ir.WriteOnly)
		i := b.Local("i", i32)
		g := b.GID()
		x := b.Ld(in, g)
		b.SetV(i, b.I32(0))
		b.Loop(func() {
			b.SetV(i, b.Bin(ir.OpAdd, b.GetV(i), b.I32(1)))
			b.If(b.Bin(ir.OpLt, b.GetV(i), x), func() { b.Continue() }, func() { b.Break() })
			b.St(out, g, b.I32(-1))
		}, nil)
		b.If(b.Bin(ir.OpEq, x, b.I32(3)), func() {
			b.St(out, g, b.I32(3))
			b.Return()
			b.St(out, g, b.I32(-3)) // dead
		}, nil)
		b.If(b.Bin(ir.OpEq, x, b.I32(4)), func() { b.Return() }, func() {
			b.St(out, g, b.GetV(i))
			b.Return()
		})
		b.St(out, g, b.I32(-4))
	}},
	{Name: "cf_return_in_continuing", Build: func(b *Builder) {
		out := b.Buffer("out", u32, ir.WriteOnly)
		i := b.Local("i", u32)
		j := b.Local("j", u32)
		g := b.GID()
		b.SetV(i, b.U32(0))
		b.Loop(func() {
			b.If(b.Bin(ir.OpGt, b.GetV(i), b.U32(100)), func() { b.Break() }, nil)
		}, func() {
			b.SetV(i, b.Bin(ir.OpAdd, b.GetV(i), b.U32(1)))
			b.If(b.Bin(ir.OpEq, b.GetV(i), g), func() {
				b.St(out, g, b.GetV(i))
				b.Return()
				b.St(out, g, b.U32(0)) // dead
			}, nil)
			b.St(out, b.U32(0), b.GetV(i))
		})
		b.St(out, g, b.U32(7))
		b.Loop(func() {
			b.St(out, g, b.U32(8))
		}, func() {
			b.SetV(j, b.U32(0))
			b.Loop(func() {
				b.SetV(j, b.Bin(ir.OpAdd, b.GetV(j), b.U32(1)))
				b.If(b.Bin(ir.OpGt, b.GetV(j), b.U32(3)), func() { b.Return() }, nil)
				b.St(out, b.GetV(j), g)
			}, func() {
				b.If(b.Bin(ir.OpGt, b.GetV(j), b.U32(10)), func() { b.Return() }, nil)
			})
			b.St(out, g, b.U32(9))
		})
	}},
	{Name: "cf_endless", Build: func(b *Builder) {
		out := b.Buffer("out", u32, ir.WriteOnly)
		g := b.GID()
		b.St(out, g, g)
		b.Loop(func() {
			b.Loop(nil, nil)
		}, func() {
			b.Loop(func() { b.St(out, g, b.U32(1)) }, nil)
		})
		b.St(out, g, b.U32(2)) // dead
	}},
	{Name: "barrier_uniform_loop", Build: func(b *Builder) {
		out := b.Buffer("out", f32, ir.ReadWrite)
		sh := b.Shared("sh", f32, 64)
		i := b.Local("i", u32)
		li := b.Builtin(ir.LocalIndex, 0)
		b.Store(ir.MemShared, sh, li, b.Ld(out, li))
		b.For(i, b.U32(6), func(iv *ir.Inst) {
			b.Barrier()
			s := b.Bin(ir.OpShl, b.U32(1), iv)
			v := b.Bin(ir.OpAdd, b.Load(ir.MemShared, sh, li), b.Load(ir.MemShared, sh, b.Bin(ir.OpXor, li, s)))
			b.Barrier()
			b.Store(ir.MemShared, sh, li, v)
		})
		b.St(out, li, b.Load(ir.MemShared, sh, li))
	}},
	{Name: "names_and_consts", Build: func(b *Builder) {
		out := b.Buffer("out", f32, ir.WriteOnly)
		kw := b.Buffer("float", u32, ir.ReadWrite)           // a C keyword
		ti := b.Buffer("threadIdx", u32, ir.ReadOnly)        // a CUDA builtin
		pr := b.Param("params", u32)                         // MSL's parameter struct
		ln := b.Shared("lane", u32, 64)                      // an MSL builtin argument
		v0 := b.Local("loop0_first", u32)                    // the printer's loop flag
		os := b.Local("os_div_i32", i32)                     // the printer's helper
		g := b.Name(b.GID(), "gid")                          // MSL builtin
		one := b.Name(b.F32(1), "one")                       // constants are printed in place
		two := b.Name(b.Bin(ir.OpAdd, one, b.F32(1)), "int") // keyword
		odd := b.Name(b.Bin(ir.OpAdd, two, one), "a.b[c]")
		dup := b.Name(b.Bin(ir.OpMul, odd, odd), "a.b[c]")
		und := b.Name(b.Bin(ir.OpMul, dup, two), "__x")
		v3 := b.Name(b.Bin(ir.OpAdd, und, one), "v3") // collides with a numbered name
		nan := b.Bits(f32, 0x7fc00001)
		inf := b.Bits(f32, 0xff800000)
		negz := b.Bits(f32, 0x80000000)
		sub := b.Bits(f32, 0x00000001)
		v := b.Bin(ir.OpAdd, v3, b.Op(ir.OpSelect, f32, b.Bin(ir.OpNe, nan, nan), inf, negz))
		v = b.Bin(ir.OpAdd, v, b.Bin(ir.OpMul, sub, b.F32(-3.5e-7)))
		b.St(out, g, v)
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Ext(b.C(vec(ir.F32, 4), -0.25), 3))
		iv := b.C(vec(ir.I32, 2), -3)
		b.St(out, b.Bin(ir.OpAdd, g, b.U32(2)), b.Ext(b.Conv(vec(ir.F32, 2), iv), 0))
		b.SetV(v0, b.Bin(ir.OpAdd, b.Ld(ti, g), b.P(pr)))
		b.SetV(os, b.I32(-2147483648))
		b.Store(ir.MemShared, ln, b.U32(0), b.GetV(v0))
		b.St(kw, g, b.Bin(ir.OpAdd, b.Load(ir.MemShared, ln, b.U32(0)), b.Bitcast(u32, b.GetV(os))))
		b.St(kw, b.U32(0), b.U32(4294967295))
	}},
}

func buildDotShuffle(b *Builder) {
	a := b.Buffer("a", u32, ir.ReadOnly)
	out := b.Buffer("out", i32, ir.WriteOnly)
	outf := b.Buffer("outf", f32, ir.WriteOnly)
	g := b.GID()
	x := b.Ld(a, g)
	y := b.Ld(a, b.Bin(ir.OpAdd, g, b.U32(1)))
	d := b.Name(b.Op(ir.OpDotI8x4, i32, x, y), "dot")
	d = b.Bin(ir.OpAdd, d, b.I32(5))
	for _, m := range []uint32{1, 2, 4} {
		d = b.Bin(ir.OpAdd, d, b.Op(ir.OpShuffleXor, i32, d, b.U32(m)))
	}
	b.St(out, g, d)
	f := b.Op(ir.OpShuffleXor, f32, b.Bitcast(f32, x), b.U32(1))
	u := b.Op(ir.OpShuffleXor, u32, x, b.U32(3))
	b.St(outf, g, b.Bin(ir.OpAdd, f, b.Conv(f32, u)))
}

// Reductions returns kernels with workgroup reductions (OpReduce) of every element type and
// both operations over workgroups of 1, 8, 64 and 256 invocations: lowering expands them into
// shuffles and shared memory, so they exercise what the lowering emits.
func Reductions() ([]*ir.Kernel, error) {
	var ks []*ir.Kernel
	for _, wg := range []uint32{1, 8, 64, 256} {
		b := New("reduce_wg"+itoa(int(wg)), wg)
		in := b.Buffer("in", f32, ir.ReadOnly)
		out := b.Buffer("out", f32, ir.WriteOnly)
		outi := b.Buffer("outi", i32, ir.WriteOnly)
		outu := b.Buffer("outu", u32, ir.WriteOnly)
		g := b.GID()
		x := b.Ld(in, g)
		s := b.Add(&ir.Inst{Op: ir.OpReduce, Type: f32, Aux: uint64(ir.ReduceSum), Args: []*ir.Inst{x}, Name: "sum"})
		m := b.Add(&ir.Inst{Op: ir.OpReduce, Type: f32, Aux: uint64(ir.ReduceMax), Args: []*ir.Inst{x}, Name: "max"})
		b.St(out, g, b.Bin(ir.OpAdd, s, m))
		xi := b.Conv(i32, x)
		b.St(outi, g, b.Add(&ir.Inst{Op: ir.OpReduce, Type: i32, Aux: uint64(ir.ReduceMax), Args: []*ir.Inst{xi}}))
		b.St(outu, g, b.Add(&ir.Inst{Op: ir.OpReduce, Type: u32, Aux: uint64(ir.ReduceSum), Args: []*ir.Inst{g}}))
		k, err := b.Done()
		if err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	return ks, nil
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
