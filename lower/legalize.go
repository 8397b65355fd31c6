package lower

import "github.com/onesource-go/onesource/ir"

// LegalizeDot rewrites OpDotI8x4 into unpack + multiply-add for targets without a packed dot:
// each byte is sign-extended with a shift pair, products are summed in byte order. Integer
// arithmetic wraps, so the result equals the packed instruction's (non-saturating) for all inputs.
func LegalizeDot(k *ir.Kernel, c Caps) error {
	if c.DotI8x4 {
		return nil
	}
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if in.Op != ir.OpDotI8x4 {
			return append(out, in)
		}
		g := &gen{out: out, pos: in.Pos}
		a := g.op(ir.OpBitcast, ir.TI32, in.Args[0])
		b := g.op(ir.OpBitcast, ir.TI32, in.Args[1])
		var sum *ir.Inst
		for i := 0; i < 4; i++ {
			byteOf := func(x *ir.Inst) *ir.Inst {
				up := g.op(ir.OpShl, ir.TI32, x, g.konst(ir.TI32, float64(24-8*i)))
				return g.op(ir.OpShr, ir.TI32, up, g.konst(ir.TI32, 24))
			}
			p := g.op(ir.OpMul, ir.TI32, byteOf(a), byteOf(b))
			if sum == nil {
				sum = p
			} else {
				sum = g.op(ir.OpAdd, ir.TI32, sum, p)
			}
		}
		name := in.Name
		*in = *sum
		in.Name = name
		g.out[len(g.out)-1] = in
		return g.out
	})
	return nil
}

// LegalizeF16 rewrites f16 arithmetic for targets that only store f16: operands widen to f32,
// the operation runs in f32 and the result rounds back to f16. For + - * / and sqrt this equals
// native f16 arithmetic bit for bit (f32 carries 24 >= 2*11+2 significand bits, so the double
// rounding is innocuous); min, max, abs, neg, floor, compares and selects are exact in f32.
func LegalizeF16(k *ir.Kernel, c Caps) error {
	if c.Float16 {
		return nil
	}
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if !needsF16Arith(in) {
			return append(out, in)
		}
		g := &gen{out: out, pos: in.Pos}
		wide := func(t ir.Type) ir.Type {
			if t.Scalar == ir.F16 {
				return ir.Type{Scalar: ir.F32, Lanes: t.Lanes}
			}
			return t
		}
		if in.Op == ir.OpConst {
			f := g.add(&ir.Inst{Op: ir.OpConst, Type: wide(in.Type), Aux: ir.ConstBits(ir.TF32, ir.ConstFloat(ir.TF16, in.Aux))})
			*in = ir.Inst{Op: ir.OpConvert, Type: in.Type, Args: []*ir.Inst{f}, Name: in.Name, Pos: in.Pos}
			return append(g.out, in)
		}
		args := make([]*ir.Inst, len(in.Args))
		for i, a := range in.Args {
			args[i] = a
			if a.Type.Scalar == ir.F16 {
				args[i] = g.op(ir.OpConvert, wide(a.Type), a)
			}
		}
		if in.Type.Scalar != ir.F16 { // compares: result is bool
			in.Args = args
			return append(g.out, in)
		}
		w := g.add(&ir.Inst{Op: in.Op, Type: wide(in.Type), Args: args, Aux: in.Aux})
		*in = ir.Inst{Op: ir.OpConvert, Type: in.Type, Args: []*ir.Inst{w}, Name: in.Name, Pos: in.Pos}
		return append(g.out, in)
	})
	return nil
}

// needsF16Arith reports whether in computes with f16 values (rather than only moving them).
func needsF16Arith(in *ir.Inst) bool {
	switch in.Op {
	case ir.OpLoad, ir.OpStore, ir.OpConvert, ir.OpBitcast, ir.OpIf, ir.OpLoop:
		return false
	case ir.OpConst:
		return in.Type.Scalar == ir.F16
	}
	if in.Type.Scalar == ir.F16 {
		return true
	}
	for _, a := range in.Args {
		if a.Type.Scalar == ir.F16 {
			return true
		}
	}
	return false
}
