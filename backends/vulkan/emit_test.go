package vulkan_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/ir"
)

// emitCase is one hand-built kernel and what its module must declare.
type emitCase struct {
	name  string
	build func(b *kb)
	want  vulkan.Features
	sub   uint32 // EmitOptions.SubgroupSize
}

var (
	f32, i32, u32, f16, f64, bl = ir.TF32, ir.TI32, ir.TU32, ir.TF16, ir.TF64, ir.TBool
)

func vec(s ir.Scalar, n int) ir.Type { return ir.Vec(s, n) }

// arith emits every element-wise op valid on values of type t (one each), reading two values
// from buffer in and writing results to buffer out (which hold t elements), so nothing is dead.
func arith(b *kb, t ir.Type) {
	in := b.buffer("in", t, ir.ReadOnly)
	out := b.buffer("out", t, ir.WriteOnly)
	g := b.gid()
	x := b.name(b.ld(in, g), "x")
	y := b.name(b.ld(in, b.bin(ir.OpAdd, g, b.u32(1))), "y")
	idx := 0
	put := func(v *ir.Inst) {
		b.st(out, b.bin(ir.OpAdd, b.bin(ir.OpMul, g, b.u32(64)), b.u32(uint32(idx))), v)
		idx++
	}
	pick := func(c *ir.Inst) { put(b.op(ir.OpSelect, t, c, x, y)) }
	for _, op := range []ir.Op{ir.OpNeg, ir.OpAbs} {
		put(b.un(op, x))
	}
	for _, op := range []ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpMin, ir.OpMax} {
		put(b.bin(op, x, y))
	}
	for _, op := range []ir.Op{ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe} {
		pick(b.bin(op, x, y))
	}
	if t.IsVector() {
		// a scalar condition selecting vectors (SPIR-V 1.4+)
		put(b.op(ir.OpSelect, t, b.bin(ir.OpLt, b.ext(x, 0), b.ext(y, 1)), x, y))
		lanes := make([]*ir.Inst, t.Lanes)
		for i := range lanes {
			lanes[i] = b.add(&ir.Inst{Op: ir.OpExtract, Type: t.Elem(), Args: []*ir.Inst{y}, Aux: uint64(int(t.Lanes) - 1 - i)})
		}
		put(b.op(ir.OpCompose, t, lanes...))
	}
	switch {
	case t.Scalar.IsFloat():
		put(b.un(ir.OpSqrt, x))
		put(b.un(ir.OpFloor, x))
		put(b.bin(ir.OpAdd, b.bin(ir.OpMul, x, y), b.c(t, 1.5))) // a*b+c: two roundings
	default:
		put(b.un(ir.OpNot, x))
		for _, op := range []ir.Op{ir.OpRem, ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr} {
			put(b.bin(op, x, y))
		}
		put(b.bin(ir.OpShl, x, b.c(t, 33)))
	}
}

// convs converts x of type from to every other numeric type of its lane count and back.
func convs(b *kb, x *ir.Inst, put func(*ir.Inst), types ...ir.Scalar) {
	for _, s := range types {
		t := ir.Type{Scalar: s, Lanes: x.Type.Lanes}
		if t == x.Type {
			continue
		}
		put(b.conv(x.Type, b.conv(t, x)))
	}
	put(b.conv(x.Type, x)) // identity
}

var emitCases = []emitCase{
	{name: "arith_f32", build: func(b *kb) { arith(b, f32) }},
	{name: "arith_i32", build: func(b *kb) { arith(b, i32) }},
	{name: "arith_u32", build: func(b *kb) { arith(b, u32) }},
	{name: "arith_vec2_f32", build: func(b *kb) { arith(b, vec(ir.F32, 2)) }},
	{name: "arith_vec3_f32", build: func(b *kb) { arith(b, vec(ir.F32, 3)) }},
	{name: "arith_vec4_f32", build: func(b *kb) { arith(b, vec(ir.F32, 4)) }},
	{name: "arith_vec2_i32", build: func(b *kb) { arith(b, vec(ir.I32, 2)) }},
	{name: "arith_vec3_u32", build: func(b *kb) { arith(b, vec(ir.U32, 3)) }},
	{name: "arith_vec4_i32", build: func(b *kb) { arith(b, vec(ir.I32, 4)) }},
	{name: "arith_vec4_u32", build: func(b *kb) { arith(b, vec(ir.U32, 4)) }},
	{name: "arith_f16", want: vulkan.Features{Float16: true}, build: func(b *kb) {
		// f16 values computed in registers, from f32 buffers.
		in := b.buffer("in", f32, ir.ReadOnly)
		out := b.buffer("out", f32, ir.WriteOnly)
		g := b.gid()
		x := b.conv(f16, b.ld(in, g))
		y := b.conv(f16, b.ld(in, b.bin(ir.OpAdd, g, b.u32(1))))
		v := b.bin(ir.OpAdd, b.bin(ir.OpMul, x, y), b.c(f16, 0.5))
		v = b.bin(ir.OpMax, b.bin(ir.OpMin, v, x), b.un(ir.OpSqrt, b.un(ir.OpAbs, y)))
		v = b.op(ir.OpSelect, f16, b.bin(ir.OpLt, v, x), b.un(ir.OpNeg, v), b.un(ir.OpFloor, v))
		h2 := b.op(ir.OpCompose, vec(ir.F16, 2), v, x)
		h2 = b.bin(ir.OpDiv, h2, b.c(vec(ir.F16, 2), 3))
		b.st(out, g, b.bcast(f32, h2))
		b.st(out, b.bin(ir.OpAdd, g, b.u32(2)), b.conv(f32, b.conv(i32, v)))
		b.st(out, b.bin(ir.OpAdd, g, b.u32(3)), b.conv(f32, b.conv(f16, b.conv(u32, x))))
	}},
	{name: "f64", want: vulkan.Features{Float64: true}, build: func(b *kb) {
		in := b.buffer("in", f32, ir.ReadOnly)
		out := b.buffer("out", f32, ir.WriteOnly)
		g := b.gid()
		x := b.conv(f64, b.ld(in, g))
		q := b.bin(ir.OpDiv, x, b.c(f64, 3))
		q = b.bin(ir.OpSub, b.bin(ir.OpMul, q, q), b.un(ir.OpSqrt, x))
		b.st(out, g, b.conv(f32, b.op(ir.OpSelect, f64, b.bin(ir.OpGt, q, x), q, b.un(ir.OpFloor, x))))
		b.st(out, b.bin(ir.OpAdd, g, b.u32(1)), b.conv(f32, b.conv(i32, q)))
	}},
	{name: "convert_bitcast", build: func(b *kb) {
		in := b.buffer("in", f32, ir.ReadOnly)
		out := b.buffer("out", u32, ir.WriteOnly)
		g := b.gid()
		n := 0
		put := func(v *ir.Inst) {
			if v.Type != u32 {
				v = b.bcast(u32, v)
			}
			b.st(out, b.bin(ir.OpAdd, g, b.u32(uint32(n))), v)
			n++
		}
		x := b.ld(in, g)
		convs(b, x, put, ir.I32, ir.U32)
		xi := b.conv(i32, x)
		convs(b, xi, put, ir.F32, ir.U32)
		xu := b.bcast(u32, x)
		convs(b, xu, put, ir.F32, ir.I32)
		put(b.bcast(u32, b.bcast(i32, xu)))
		put(b.bcast(u32, b.bcast(u32, xu))) // same-type bitcast
		v2 := b.op(ir.OpCompose, vec(ir.F32, 2), x, x)
		v2i := b.conv(vec(ir.I32, 2), v2)
		put(b.ext(b.bcast(vec(ir.U32, 2), b.conv(vec(ir.F32, 2), b.conv(vec(ir.U32, 2), v2i))), 1))
	}},
	{name: "bool_ops", build: func(b *kb) {
		in := b.buffer("in", i32, ir.ReadOnly)
		out := b.buffer("out", i32, ir.WriteOnly)
		g := b.gid()
		x := b.ld(in, g)
		p := b.bin(ir.OpLt, x, b.i32(0))
		q := b.bin(ir.OpGt, x, b.i32(10))
		r := b.bin(ir.OpAnd, b.bin(ir.OpOr, p, q), b.un(ir.OpNot, b.bin(ir.OpXor, p, b.c(bl, 1))))
		r = b.bin(ir.OpNe, b.bin(ir.OpEq, r, p), q)
		b.st(out, g, b.op(ir.OpSelect, i32, r, x, b.i32(7)))
		pv := b.op(ir.OpCompose, vec(ir.Bool, 2), p, q)
		qv := b.bin(ir.OpEq, pv, b.c(vec(ir.Bool, 2), 0))
		sel := b.op(ir.OpSelect, vec(ir.I32, 2), b.bin(ir.OpXor, pv, qv), b.c(vec(ir.I32, 2), 1), b.c(vec(ir.I32, 2), -1))
		b.st(out, b.bin(ir.OpAdd, g, b.u32(1)), b.ext(sel, 1))
	}},
	{name: "narrow_storage", want: vulkan.Features{StorageBuffer8: true, StorageBuffer16: true}, build: func(b *kb) {
		// i8/u8/i16/u16/f16 buffers: loads widen, stores narrow; f16 converted, never computed.
		type pair struct{ in, out int }
		var ps []pair
		for _, s := range []ir.Scalar{ir.I8, ir.U8, ir.I16, ir.U16, ir.F16} {
			ps = append(ps, pair{b.buffer("in_"+s.String(), ir.S(s), ir.ReadOnly), b.buffer("out_"+s.String(), ir.S(s), ir.ReadWrite)})
		}
		g := b.gid()
		for _, p := range ps {
			v := b.ld(p.in, g)
			if v.Type.Scalar == ir.F16 {
				w := b.conv(f32, v)
				w = b.bin(ir.OpMul, w, b.f32(2))
				b.st(p.out, g, b.conv(f16, w))
				b.st(p.out, b.bin(ir.OpAdd, g, b.u32(1)), v)
				continue
			}
			b.st(p.out, g, b.bin(ir.OpAdd, v, b.c(v.Type, 1)))
			b.st(p.out, b.bin(ir.OpAdd, g, b.u32(1)), b.ld(p.out, g))
		}
	}},
	{name: "f16_buffer_arith", want: vulkan.Features{StorageBuffer16: true, Float16: true}, build: func(b *kb) {
		in := b.buffer("in", f16, ir.ReadOnly)
		out := b.buffer("out", f16, ir.WriteOnly)
		g := b.gid()
		b.st(out, g, b.bin(ir.OpAdd, b.ld(in, g), b.c(f16, 1)))
	}},
	{name: "builtins", want: vulkan.Features{SubgroupBasic: true}, build: func(b *kb) {
		out := b.buffer("out", u32, ir.WriteOnly)
		i := b.builtin(ir.LocalIndex, 0)
		n := 0
		put := func(v *ir.Inst) {
			b.st(out, b.bin(ir.OpAdd, b.bin(ir.OpMul, i, b.u32(16)), b.u32(uint32(n))), v)
			n++
		}
		for _, bi := range []ir.Builtin{ir.GlobalID, ir.LocalID, ir.WorkgroupID, ir.NumWorkgroups} {
			for d := range 3 {
				put(b.builtin(bi, d))
			}
		}
		for _, bi := range []ir.Builtin{ir.SubgroupSize, ir.SubgroupLane, ir.SubgroupID} {
			put(b.builtin(bi, 0))
		}
	}},
	{name: "memory_spaces", build: func(b *kb) {
		ro := b.buffer("ro", f32, ir.ReadOnly)
		wo := b.buffer("wo", f32, ir.WriteOnly)
		rw := b.buffer("rw", i32, ir.ReadWrite)
		v2 := b.buffer("v2", vec(ir.F32, 2), ir.ReadWrite)
		v3 := b.buffer("v3", vec(ir.U32, 3), ir.ReadWrite)
		v4 := b.buffer("v4", vec(ir.I32, 4), ir.ReadWrite)
		pf := b.param("scale", f32)
		pi := b.param("offset", i32)
		pu := b.param("n", u32)
		sh := b.shared("tile", f32, 64)
		sh4 := b.shared("tile4", vec(ir.F32, 4), 8)
		shu := b.shared("counts", u32, 4)
		acc := b.local("acc", f32)
		acc4 := b.local("acc4", vec(ir.F32, 4))
		flag := b.local("flag", bl)
		li := b.builtin(ir.LocalIndex, 0)
		g := b.gid()
		b.store(ir.MemShared, sh, li, b.bin(ir.OpMul, b.ld(ro, g), b.p(pf)))
		b.store(ir.MemShared, sh4, b.bin(ir.OpAnd, li, b.u32(7)), b.c(vec(ir.F32, 4), 2))
		b.store(ir.MemShared, shu, b.u32(0), b.p(pu))
		b.barrier()
		b.setv(acc, b.load(ir.MemShared, sh, b.bin(ir.OpXor, li, b.u32(1))))
		b.setv(acc4, b.load(ir.MemShared, sh4, b.u32(3)))
		b.setv(flag, b.bin(ir.OpLt, g, b.op(ir.OpLen, u32)))
		b.ifElse(b.getv(flag), func() {
			b.st(wo, g, b.bin(ir.OpAdd, b.getv(acc), b.ext(b.getv(acc4), 2)))
		}, nil)
		b.st(rw, g, b.bin(ir.OpAdd, b.ld(rw, g), b.p(pi)))
		b.st(v2, g, b.bin(ir.OpMul, b.ld(v2, g), b.c(vec(ir.F32, 2), 0.5)))
		b.st(v3, g, b.bin(ir.OpAdd, b.ld(v3, g), b.c(vec(ir.U32, 3), 1)))
		b.st(v4, g, b.un(ir.OpNeg, b.ld(v4, g)))
		b.st(v3, b.u32(0), b.op(ir.OpCompose, vec(ir.U32, 3), b.add(&ir.Inst{Op: ir.OpLen, Type: u32, Ref: v3}), b.load(ir.MemShared, shu, b.u32(0)), b.u32(0)))
	}},
	{name: "atomics", build: func(b *kb) {
		bi := b.buffer("bi", i32, ir.ReadWrite)
		bu := b.buffer("bu", u32, ir.ReadWrite)
		si := b.shared("si", i32, 4)
		su := b.shared("su", u32, 4)
		out := b.buffer("out", i32, ir.WriteOnly)
		g := b.gid()
		z := b.u32(0)
		x := b.bcast(i32, g)
		var rs []*ir.Inst
		for _, mem := range []ir.Mem{ir.MemBuffer, ir.MemShared} {
			ri, ru := bi, bu
			if mem == ir.MemShared {
				ri, ru = si, su
			}
			for _, op := range []ir.AtomicOp{ir.AtomicAdd, ir.AtomicMin, ir.AtomicMax, ir.AtomicExchange} {
				rs = append(rs, b.atomic(mem, ri, op, z, x))
				rs = append(rs, b.bcast(i32, b.atomic(mem, ru, op, z, g)))
			}
			rs = append(rs, b.atomic(mem, ri, ir.AtomicCmpXchg, z, b.i32(0), x))
			rs = append(rs, b.bcast(i32, b.atomic(mem, ru, ir.AtomicCmpXchg, z, b.u32(5), g)))
		}
		for i, r := range rs {
			b.st(out, b.bin(ir.OpAdd, b.bin(ir.OpMul, g, b.u32(32)), b.u32(uint32(i))), r)
		}
	}},
	{name: "dot_shuffle", sub: 8, want: vulkan.Features{IntegerDotProduct: true, SubgroupShuffle: true, SubgroupBasic: true}, build: func(b *kb) {
		a := b.buffer("a", u32, ir.ReadOnly)
		out := b.buffer("out", i32, ir.WriteOnly)
		outf := b.buffer("outf", f32, ir.WriteOnly)
		g := b.gid()
		x := b.ld(a, g)
		y := b.ld(a, b.bin(ir.OpAdd, g, b.u32(1)))
		d := b.name(b.op(ir.OpDotI8x4, i32, x, y), "dot")
		d = b.bin(ir.OpAdd, d, b.i32(5)) // never OpSDotAccSat
		for _, m := range []uint32{1, 2, 4} {
			d = b.bin(ir.OpAdd, d, b.op(ir.OpShuffleXor, i32, d, b.u32(m)))
		}
		b.st(out, g, d)
		f := b.op(ir.OpShuffleXor, f32, b.bcast(f32, x), b.u32(1))
		u := b.op(ir.OpShuffleXor, u32, x, b.u32(3))
		b.st(outf, g, b.bin(ir.OpAdd, f, b.conv(f32, u)))
	}},
	{name: "cf_nested_if", build: func(b *kb) {
		in := b.buffer("in", i32, ir.ReadOnly)
		out := b.buffer("out", i32, ir.WriteOnly)
		r := b.local("r", i32)
		g := b.gid()
		x := b.ld(in, g)
		b.setv(r, b.i32(0))
		b.ifElse(b.bin(ir.OpLt, x, b.i32(0)), func() {
			b.ifElse(b.bin(ir.OpLt, x, b.i32(-10)), func() { b.setv(r, b.i32(1)) }, func() { b.setv(r, b.i32(2)) })
		}, func() {
			b.ifElse(b.bin(ir.OpGt, x, b.i32(10)), func() { b.setv(r, b.i32(3)) }, nil)
			b.ifElse(b.bin(ir.OpEq, x, b.i32(5)), nil, func() { b.setv(r, b.bin(ir.OpAdd, b.getv(r), b.i32(4))) })
			b.ifElse(b.bin(ir.OpEq, x, b.i32(6)), nil, nil)
		})
		b.st(out, g, b.getv(r))
	}},
	{name: "cf_loops", build: func(b *kb) {
		in := b.buffer("in", i32, ir.ReadOnly)
		out := b.buffer("out", i32, ir.WriteOnly)
		i := b.local("i", u32)
		j := b.local("j", u32)
		s := b.local("s", i32)
		g := b.gid()
		n := b.op(ir.OpLen, u32)
		b.setv(s, b.i32(0))
		b.forN(i, n, func(iv *ir.Inst) {
			x := b.ld(in, iv)
			b.ifElse(b.bin(ir.OpLt, x, b.i32(0)), func() { b.cont() }, nil)
			b.ifElse(b.bin(ir.OpGt, x, b.i32(1000)), func() { b.brk() }, nil)
			b.forN(j, b.u32(3), func(jv *ir.Inst) {
				b.ifElse(b.bin(ir.OpEq, jv, b.u32(1)), func() { b.cont() }, func() {
					b.setv(s, b.bin(ir.OpAdd, b.getv(s), x))
				})
			})
		})
		// loop whose body is a break at the top, with dead code after it
		b.loop(func() {
			b.brk()
			b.setv(s, b.i32(99))
			b.st(out, g, b.i32(98))
		}, nil)
		// do-while: the condition is in the continuing block
		b.setv(i, b.u32(0))
		b.loop(func() {
			b.setv(s, b.bin(ir.OpAdd, b.getv(s), b.i32(1)))
			b.ifElse(b.bin(ir.OpGe, b.getv(i), b.u32(4)), func() { b.brk() }, nil)
		}, func() {
			b.setv(i, b.bin(ir.OpAdd, b.getv(i), b.u32(1)))
		})
		b.st(out, g, b.getv(s))
	}},
	{name: "cf_terminating_branches", build: func(b *kb) {
		in := b.buffer("in", i32, ir.ReadOnly)
		out := b.buffer("out", i32, ir.WriteOnly)
		i := b.local("i", i32)
		g := b.gid()
		x := b.ld(in, g)
		b.setv(i, b.i32(0))
		b.loop(func() {
			b.setv(i, b.bin(ir.OpAdd, b.getv(i), b.i32(1)))
			// both branches leave: the merge is unreachable and the rest is dead
			b.ifElse(b.bin(ir.OpLt, b.getv(i), x), func() { b.cont() }, func() { b.brk() })
			b.st(out, g, b.i32(-1))
		}, nil)
		b.ifElse(b.bin(ir.OpEq, x, b.i32(3)), func() {
			b.st(out, g, b.i32(3))
			b.ret()
			b.st(out, g, b.i32(-3)) // dead
		}, nil)
		b.ifElse(b.bin(ir.OpEq, x, b.i32(4)), func() { b.ret() }, func() {
			b.st(out, g, b.getv(i))
			b.ret()
		})
		b.st(out, g, b.i32(-4)) // dead
	}},
	{name: "cf_early_return_in_loop", build: func(b *kb) {
		in := b.buffer("in", i32, ir.ReadOnly)
		out := b.buffer("out", i32, ir.WriteOnly)
		i := b.local("i", u32)
		g := b.gid()
		b.ifElse(b.bin(ir.OpGe, g, b.op(ir.OpLen, u32)), func() { b.ret() }, nil)
		// a loop that only exits by returning: its merge is unreachable
		b.setv(i, b.u32(0))
		b.loop(func() {
			b.ifElse(b.bin(ir.OpEq, b.ld(in, b.getv(i)), b.i32(0)), func() {
				b.st(out, g, b.bcast(i32, b.getv(i)))
				b.ret()
			}, nil)
		}, func() {
			b.setv(i, b.bin(ir.OpAdd, b.getv(i), b.u32(1)))
		})
	}},
	{name: "cf_return_in_continuing", build: func(b *kb) {
		out := b.buffer("out", u32, ir.WriteOnly)
		i := b.local("i", u32)
		j := b.local("j", u32)
		g := b.gid()
		b.setv(i, b.u32(0))
		b.loop(func() {
			b.ifElse(b.bin(ir.OpGt, b.getv(i), b.u32(100)), func() { b.brk() }, nil)
		}, func() {
			b.setv(i, b.bin(ir.OpAdd, b.getv(i), b.u32(1)))
			b.ifElse(b.bin(ir.OpEq, b.getv(i), g), func() {
				b.st(out, g, b.getv(i))
				b.ret()
				b.st(out, g, b.u32(0)) // dead
			}, nil)
			b.st(out, b.u32(0), b.getv(i)) // runs only when the continuing did not return
		})
		b.st(out, g, b.u32(7))
		// return at the top of a continuing block: no break, the loop exits only by returning
		b.loop(func() {
			b.st(out, g, b.u32(8))
		}, func() {
			// a loop nested in the continuing block, returning from inside it
			b.setv(j, b.u32(0))
			b.loop(func() {
				b.setv(j, b.bin(ir.OpAdd, b.getv(j), b.u32(1)))
				b.ifElse(b.bin(ir.OpGt, b.getv(j), b.u32(3)), func() { b.ret() }, nil)
				b.st(out, b.getv(j), g)
			}, func() {
				b.ifElse(b.bin(ir.OpGt, b.getv(j), b.u32(10)), func() { b.ret() }, nil)
			})
			b.st(out, g, b.u32(9)) // dead: the inner loop only returns
		})
	}},
	{name: "cf_endless", build: func(b *kb) {
		out := b.buffer("out", u32, ir.WriteOnly)
		g := b.gid()
		b.st(out, g, g)
		b.loop(func() {
			b.loop(nil, nil) // an empty endless loop inside an endless loop
		}, func() {
			b.loop(func() { b.st(out, g, b.u32(1)) }, nil) // endless loop in continuing
		})
		b.st(out, g, b.u32(2)) // dead
	}},
	{name: "barrier_uniform_loop", build: func(b *kb) {
		out := b.buffer("out", f32, ir.ReadWrite)
		sh := b.shared("sh", f32, 64)
		i := b.local("i", u32)
		li := b.builtin(ir.LocalIndex, 0)
		b.store(ir.MemShared, sh, li, b.ld(out, li))
		b.forN(i, b.u32(6), func(iv *ir.Inst) {
			b.barrier()
			s := b.bin(ir.OpShl, b.u32(1), iv)
			v := b.bin(ir.OpAdd, b.load(ir.MemShared, sh, li), b.load(ir.MemShared, sh, b.bin(ir.OpXor, li, s)))
			b.barrier()
			b.store(ir.MemShared, sh, li, v)
		})
		b.st(out, li, b.load(ir.MemShared, sh, li))
	}},
	{name: "names_and_consts", build: buildNamesAndConsts},
}

func buildNamesAndConsts(b *kb) {
	out := b.buffer("out", f32, ir.WriteOnly)
	g := b.name(b.gid(), "gid")
	one := b.name(b.f32(1), "one")
	one2 := b.name(b.f32(1), "another_one") // deduplicated constant, the first name is kept
	nan := b.cbits(f32, 0x7fc00001)
	inf := b.cbits(f32, 0xff800000)
	negz := b.cbits(f32, 0x80000000)
	v := b.name(b.bin(ir.OpAdd, one, one2), "two")
	v = b.bin(ir.OpAdd, v, b.op(ir.OpSelect, f32, b.bin(ir.OpNe, nan, nan), inf, negz))
	b.st(out, g, v)
	b.st(out, b.bin(ir.OpAdd, g, b.u32(1)), b.ext(b.c(vec(ir.F32, 4), -0.25), 3))
	iv := b.c(vec(ir.I32, 2), -3)
	b.st(out, b.bin(ir.OpAdd, g, b.u32(2)), b.ext(b.conv(vec(ir.F32, 2), iv), 0))
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
	return "{" + strings.Join(s, " ") + "}"
}

func buildCase(t testing.TB, c emitCase) *ir.Kernel {
	b := newKB(c.name, 64)
	c.build(b)
	return b.done(t)
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
	b := newKB("reduce_left", 64)
	out := b.buffer("out", f32, ir.WriteOnly)
	g := b.gid()
	r := b.add(&ir.Inst{Op: ir.OpReduce, Type: f32, Aux: uint64(ir.ReduceSum), Args: []*ir.Inst{b.conv(f32, g)}})
	b.st(out, g, r)
	k := b.done(t)
	_, err := vulkan.Emit(k, vulkan.EmitOptions{})
	var ie *ir.Error
	if err == nil || !errors.As(err, &ie) || ie.Pos != r.Pos || ie.Kernel != "reduce_left" || !strings.Contains(err.Error(), "lower") {
		t.Errorf("reduce: got %v, want an error at %s naming the kernel and package lower", err, r.Pos)
	}

	// A narrow shared array.
	b = newKB("narrow_shared", 64)
	sh := b.shared("bytes", ir.S(ir.U8), 64)
	b.store(ir.MemShared, sh, b.gid(), b.u32(1))
	k = b.done(t)
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
	for _, k := range bad {
		if _, err := vulkan.Emit(k, vulkan.EmitOptions{}); err == nil {
			t.Errorf("kernel %v: no error", k)
		}
	}
}
