package native

import (
	"github.com/onesource-go/onesource/ir"
)

// The stride hint: for a varying u32 or i32 value, the difference its value is expected to make
// between adjacent lanes (lane l holds base + stride*l): 1 for the local index, 0 for a uniform
// value, and what adds, subtractions, multiplications and shifts by constants and variables
// only ever set to such values make of them. A load or store whose index is expected to be
// consecutive (stride 1) checks at run time that the lanes running it do address consecutive
// elements inside the array and then makes one vector access (os_ld_c, os_st_c); the hint is
// never trusted, so it need not be proved.

// noStride marks a value without a hint.
const noStride = -1 << 62

func (e *emitter) predict() {
	e.pred = map[*ir.Inst]int{}
	varPred := make([]int, len(e.k.Vars))
	seen := make([]bool, len(e.k.Vars))
	for pass := 0; pass < 8; pass++ {
		changed := false
		ir.Walk(e.k.Body, func(in *ir.Inst) bool {
			if in.Op == ir.OpStore && in.Mem == ir.MemVar {
				p := e.stride(in.Args[0])
				switch {
				case !seen[in.Ref]:
					seen[in.Ref], varPred[in.Ref], changed = true, p, true
				case varPred[in.Ref] != p && varPred[in.Ref] != noStride:
					varPred[in.Ref], changed = noStride, true
				}
				return true
			}
			if in.Type == ir.TVoid {
				return true
			}
			p := noStride
			switch {
			case e.uni[in]:
				p = 0
			case in.Op == ir.OpLoad && in.Mem == ir.MemVar:
				if seen[in.Ref] {
					p = varPred[in.Ref]
				}
			default:
				p = e.strideOf(in)
			}
			if old, ok := e.pred[in]; !ok || old != p {
				e.pred[in] = p
				changed = true
			}
			return true
		})
		if !changed {
			return
		}
	}
}

// stride is the hint of a (noStride when none).
func (e *emitter) stride(a *ir.Inst) int {
	if e.uni[a] || e.isStatic(a) {
		return 0
	}
	if p, ok := e.pred[a]; ok {
		return p
	}
	return noStride
}

func constU32(a *ir.Inst) (int, bool) {
	if a.Op != ir.OpConst || a.Type.Lanes > 1 || (a.Type.Scalar != ir.U32 && a.Type.Scalar != ir.I32) {
		return 0, false
	}
	return int(int32(uint32(a.Aux))), true
}

func (e *emitter) strideOf(in *ir.Inst) int {
	if in.Type.Lanes > 1 || (in.Type.Scalar != ir.U32 && in.Type.Scalar != ir.I32) {
		return noStride
	}
	ws := e.k.WorkgroupSize
	oneD := ws[1] == 1 && ws[2] == 1
	switch in.Op {
	case ir.OpBuiltin:
		switch ir.Builtin(in.Aux) {
		case ir.LocalIndex, ir.SubgroupLane:
			return 1
		case ir.LocalID, ir.GlobalID:
			if in.Ref == 0 && oneD {
				return 1
			}
		}
		return noStride
	case ir.OpAdd, ir.OpSub:
		a, b := e.stride(in.Args[0]), e.stride(in.Args[1])
		if a == noStride || b == noStride {
			return noStride
		}
		if in.Op == ir.OpSub {
			return a - b
		}
		return a + b
	case ir.OpMul:
		a, b := e.stride(in.Args[0]), e.stride(in.Args[1])
		if k, ok := constU32(in.Args[1]); ok && a != noStride {
			return a * k
		}
		if k, ok := constU32(in.Args[0]); ok && b != noStride {
			return b * k
		}
	case ir.OpShl:
		if k, ok := constU32(in.Args[1]); ok && k >= 0 && k < 31 {
			if a := e.stride(in.Args[0]); a != noStride {
				return a << k
			}
		}
	case ir.OpShr:
		if k, ok := constU32(in.Args[1]); ok && k >= 0 && k < 31 {
			if a := e.stride(in.Args[0]); a != noStride && a%(1<<k) == 0 {
				return a >> k
			}
		}
	case ir.OpBitcast, ir.OpConvert:
		a := in.Args[0]
		if a.Type.Lanes == 1 && (a.Type.Scalar == ir.U32 || a.Type.Scalar == ir.I32) {
			return e.stride(a)
		}
	}
	return noStride
}
