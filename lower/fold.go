package lower

import (
	"math"

	"github.com/onesource-go/onesource/ir"
)

// Fold evaluates scalar operations whose operands are all constants, with exactly the semantics
// the targets have (IEEE float32 round-to-nearest-even, one rounding per operation, and one for
// an fma; wrapping integers), and drops if-branches whose condition is a constant. Division by
// zero, OpNative (the device's own function) and anything it is not sure about are left for the
// device.
func Fold(k *ir.Kernel) { foldBlock(k.Body) }

// foldBlock folds the instructions of b in place and reports whether the folded b contains a
// break or continue that targets a loop outside b.
func foldBlock(b *ir.Block) (jumps bool) {
	out := make([]*ir.Inst, 0, len(b.Insts))
	jumps = foldInto(b, &out)
	b.Insts = out
	return jumps
}

// foldInto folds the instructions of b (each one's nested blocks first, then the instruction),
// appending what remains of them to *out, and reports whether they contain a break or continue
// that targets a loop outside b. The branch an if with a constant condition takes is folded
// straight into *out; if it turns out to hold such a jump, it moves back into the if, which is
// kept (inlining it would change which loop the jump leaves: it stays correct, but keep the
// structure simple). So every instruction is appended once and moved at most once, and folding
// takes time linear in the size of the kernel however deep the inlined ifs nest.
func foldInto(b *ir.Block, out *[]*ir.Inst) (jumps bool) {
	for _, in := range b.Insts {
		switch {
		case in.Op == ir.OpIf && in.Args[0].Op == ir.OpConst:
			ti := 1
			if in.Args[0].Aux != 0 {
				ti = 0
			}
			foldBlock(in.Blocks[1-ti])
			mark := len(*out)
			if !foldInto(in.Blocks[ti], out) {
				continue // inlined
			}
			in.Blocks[ti].Insts = append([]*ir.Inst(nil), (*out)[mark:]...)
			*out = append((*out)[:mark], in)
			jumps = true
			continue
		case in.Op == ir.OpIf:
			for _, nb := range in.Blocks {
				jumps = foldBlock(nb) || jumps
			}
		case in.Op == ir.OpBreak || in.Op == ir.OpContinue:
			jumps = true
		default:
			for _, nb := range in.Blocks {
				foldBlock(nb) // a loop's blocks: their jumps target it
			}
		}
		if bits, ok := foldInst(in); ok {
			name, pos, t := in.Name, in.Pos, in.Type
			*in = ir.Inst{Op: ir.OpConst, Type: t, Aux: bits, Name: name, Pos: pos}
		}
		*out = append(*out, in)
	}
	return jumps
}

func foldInst(in *ir.Inst) (uint64, bool) {
	if len(in.Args) == 0 || in.Type.IsVector() || in.Type == ir.TVoid {
		return 0, false
	}
	for _, a := range in.Args {
		if a.Op != ir.OpConst || a.Type.IsVector() {
			return 0, false
		}
	}
	at := in.Args[0].Type
	a := in.Args[0].Aux
	var b uint64
	if len(in.Args) > 1 {
		b = in.Args[1].Aux
	}
	switch {
	case in.Op.IsBinary() || in.Op.IsCompare():
		switch at.Scalar {
		case ir.F32:
			return foldF32(in.Op, math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b)))
		case ir.I32, ir.U32:
			return foldInt(in.Op, uint32(a), uint32(b), at.Scalar == ir.I32)
		case ir.Bool:
			return foldBool(in.Op, a != 0, b != 0)
		}
	case in.Op == ir.OpSelect:
		if a != 0 {
			return in.Args[1].Aux, true
		}
		return in.Args[2].Aux, true
	case in.Op == ir.OpNot && at.Scalar == ir.Bool:
		return b2u(a == 0), true
	case in.Op == ir.OpNot && (at.Scalar == ir.I32 || at.Scalar == ir.U32):
		return uint64(^uint32(a)), true
	case in.Op == ir.OpNeg && at.Scalar == ir.F32:
		return uint64(uint32(a) ^ 0x80000000), true
	case in.Op == ir.OpNeg && at.Scalar == ir.I32:
		return uint64(uint32(-int32(uint32(a)))), true
	case in.Op == ir.OpBitcast && at.Scalar.Bits() == 32 && in.Type.Scalar.Bits() == 32:
		return a, true
	case in.Op == ir.OpConvert:
		return foldConvert(at.Scalar, in.Type.Scalar, a)
	case in.Op == ir.OpFma && at.Scalar == ir.F32:
		r := FmaF32(math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b)), math.Float32frombits(uint32(in.Args[2].Aux)))
		if r != r {
			return 0, false // leave NaN payloads to the device
		}
		return uint64(math.Float32bits(r)), true
	}
	return 0, false
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func foldF32(op ir.Op, x, y float32) (uint64, bool) {
	var r float32
	switch op {
	case ir.OpAdd:
		r = x + y
	case ir.OpSub:
		r = x - y
	case ir.OpMul:
		r = x * y
	case ir.OpDiv:
		r = x / y
	case ir.OpMin:
		r = x
		if y < x {
			r = y
		}
	case ir.OpMax:
		r = y
		if x > y {
			r = x
		}
	case ir.OpEq:
		return b2u(x == y), true
	case ir.OpNe:
		return b2u(x != y), true
	case ir.OpLt:
		return b2u(x < y), true
	case ir.OpLe:
		return b2u(x <= y), true
	case ir.OpGt:
		return b2u(x > y), true
	case ir.OpGe:
		return b2u(x >= y), true
	default:
		return 0, false
	}
	if r != r {
		return 0, false // leave NaN payloads to the device
	}
	return uint64(math.Float32bits(r)), true
}

func foldInt(op ir.Op, x, y uint32, signed bool) (uint64, bool) {
	sx, sy := int32(x), int32(y)
	var r uint32
	switch op {
	case ir.OpAdd:
		r = x + y
	case ir.OpSub:
		r = x - y
	case ir.OpMul:
		r = x * y
	case ir.OpDiv, ir.OpRem:
		if y == 0 || (signed && sx == math.MinInt32 && sy == -1) {
			return 0, false
		}
		switch {
		case signed && op == ir.OpDiv:
			r = uint32(sx / sy)
		case signed:
			r = uint32(sx % sy)
		case op == ir.OpDiv:
			r = x / y
		default:
			r = x % y
		}
	case ir.OpMin, ir.OpMax:
		less := x < y
		if signed {
			less = sx < sy
		}
		if less == (op == ir.OpMin) {
			r = x
		} else {
			r = y
		}
	case ir.OpAnd:
		r = x & y
	case ir.OpOr:
		r = x | y
	case ir.OpXor:
		r = x ^ y
	case ir.OpShl:
		r = x << (y & 31)
	case ir.OpShr:
		if signed {
			r = uint32(sx >> (y & 31))
		} else {
			r = x >> (y & 31)
		}
	case ir.OpEq:
		return b2u(x == y), true
	case ir.OpNe:
		return b2u(x != y), true
	case ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe:
		c := cmpInt(x, y, signed)
		switch op {
		case ir.OpLt:
			return b2u(c < 0), true
		case ir.OpLe:
			return b2u(c <= 0), true
		case ir.OpGt:
			return b2u(c > 0), true
		default:
			return b2u(c >= 0), true
		}
	default:
		return 0, false
	}
	return uint64(r), true
}

func cmpInt(x, y uint32, signed bool) int {
	if signed {
		switch {
		case int32(x) < int32(y):
			return -1
		case int32(x) > int32(y):
			return 1
		}
		return 0
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func foldBool(op ir.Op, x, y bool) (uint64, bool) {
	switch op {
	case ir.OpAnd:
		return b2u(x && y), true
	case ir.OpOr:
		return b2u(x || y), true
	case ir.OpXor, ir.OpNe:
		return b2u(x != y), true
	case ir.OpEq:
		return b2u(x == y), true
	}
	return 0, false
}

func foldConvert(from, to ir.Scalar, a uint64) (uint64, bool) {
	switch {
	case (from == ir.I32 || from == ir.U32) && (to == ir.I32 || to == ir.U32):
		return a, true
	case from == ir.I32 && to == ir.F32:
		return uint64(math.Float32bits(float32(int32(uint32(a))))), true
	case from == ir.U32 && to == ir.F32:
		return uint64(math.Float32bits(float32(uint32(a)))), true
	}
	return 0, false // float -> int out of range and f16 rounding are left to the device
}

// DeadCode removes instructions whose values are never used and that have no effect. It counts
// the uses of every value, then removes the unused ones, and with each the uses it made, until
// none is left: what removing the unused instructions pass after pass removes, in linear time.
func DeadCode(k *ir.Kernel) {
	uses := map[*ir.Inst]int{}
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		for _, a := range in.Args {
			uses[a]++
		}
		return true
	})
	dead := map[*ir.Inst]bool{}
	var work []*ir.Inst
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Type != ir.TVoid && uses[in] == 0 && pure(in) {
			dead[in] = true
			work = append(work, in)
		}
		return true
	})
	for len(work) > 0 {
		in := work[len(work)-1]
		work = work[:len(work)-1]
		for _, a := range in.Args {
			if uses[a]--; uses[a] == 0 && a.Type != ir.TVoid && pure(a) && !dead[a] {
				dead[a] = true
				work = append(work, a)
			}
		}
	}
	if len(dead) == 0 {
		return
	}
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		if dead[in] {
			return out
		}
		return append(out, in)
	})
}

func pure(in *ir.Inst) bool {
	switch in.Op {
	case ir.OpAtomic, ir.OpReduce, ir.OpShuffleXor, ir.OpShuffle, ir.OpSubgroupReduce:
		return false
	}
	return len(in.Blocks) == 0
}

// Simplify removes integer identities: x+0, 0+x, x-0, x*1, 1*x, x|0, x^0, x<<0, x>>0 (integers
// only: for floats x+0 turns -0 into +0, so no float identity is touched).
func Simplify(k *ir.Kernel) {
	replace := map[*ir.Inst]*ir.Inst{}
	isConst := func(in *ir.Inst, v uint64) bool { return in.Op == ir.OpConst && in.Aux == v }
	rewrite(k.Body, func(in *ir.Inst, out []*ir.Inst) []*ir.Inst {
		for i, a := range in.Args {
			if r, ok := replace[a]; ok {
				in.Args[i] = r
			}
		}
		if len(in.Args) == 2 && (in.Type.Scalar == ir.I32 || in.Type.Scalar == ir.U32) && !in.Type.IsVector() {
			a, b := in.Args[0], in.Args[1]
			var keep *ir.Inst
			switch in.Op {
			case ir.OpAdd, ir.OpOr, ir.OpXor:
				if isConst(b, 0) {
					keep = a
				} else if isConst(a, 0) {
					keep = b
				}
			case ir.OpSub, ir.OpShl, ir.OpShr:
				if isConst(b, 0) {
					keep = a
				}
			case ir.OpMul:
				if isConst(b, 1) {
					keep = a
				} else if isConst(a, 1) {
					keep = b
				}
			}
			if keep != nil {
				if keep.Name == "" && keep.Op != ir.OpConst {
					keep.Name = in.Name
				}
				replace[in] = keep
				return out
			}
		}
		return append(out, in)
	})
}
