package irtest

import (
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
)

// Scale kernels: large kernels written with package dsl, for the compiler's scaling benchmarks
// and tests (build, lowering and emission must stay linear in the IR size). Each shape makes a
// kernel of about n IR instructions (Count gives the exact number of the built kernel):
//
//   - ShapeStraight: straight-line code (loads, an accumulator variable, arithmetic, stores),
//     with values that share debug names, as unrolled Go loops make them.
//   - ShapeLoops: loops nested min(n/32, MaxScaleLoops) deep, each a dsl For with the same
//     counter name, with straight-line work at every level.
//   - ShapeIfs: ifs nested min(n/8, MaxScaleIfs) deep on invocation-dependent conditions, every
//     other one with an else branch, with straight-line work at every level.
const (
	ShapeStraight = "straight"
	ShapeLoops    = "loops"
	ShapeIfs      = "ifs"
)

// Shapes lists the scale kernel shapes.
var Shapes = []string{ShapeStraight, ShapeLoops, ShapeIfs}

// Nesting limits of the scale shapes (the scale tests build kernels exactly this deep).
const (
	MaxScaleLoops = 1000
	MaxScaleIfs   = 10000
)

// Scale returns the dsl kernel of the given shape with about n instructions (Build it to get
// the IR: building is part of what the benchmarks measure).
func Scale(shape string, n int) *dsl.Kernel {
	switch shape {
	case ShapeLoops:
		d := min(max(n/32, 1), MaxScaleLoops)
		return NestedLoops(d, n/d)
	case ShapeIfs:
		d := min(max(n/8, 1), MaxScaleIfs)
		return NestedIfs(d, n/d)
	}
	return StraightLine(n)
}

// Count returns the number of instructions of k (nested ones included).
func Count(k *ir.Kernel) int {
	n := 0
	ir.Walk(k.Body, func(*ir.Inst) bool { n++; return true })
	return n
}

// scaleWork adds straight-line work of about n instructions: per step a load, the accumulator,
// a multiply-add into it (9 instructions), and every 8th step a store of the accumulator.
type scaleWork struct {
	k    *dsl.Kernel
	in   dsl.Array
	out  dsl.Array
	acc  dsl.Var
	base dsl.Value
	step int
}

func newScaleWork(name string, wg int) *scaleWork {
	k := dsl.New(name, wg)
	w := &scaleWork{k: k}
	w.in = k.Buffer("in", dsl.F32, dsl.Read)
	w.out = k.Buffer("out", dsl.F32, dsl.Write)
	w.base = k.GlobalID(dsl.X).Named("gid")
	w.acc = k.Var("acc", float32(0))
	return w
}

// add adds about n instructions of work indexed from idx.
func (w *scaleWork) add(idx dsl.Value, n int) {
	for ; n > 0; n -= 9 {
		j := w.step
		w.step++
		v := w.in.Load(idx.Add(uint32(j % 1024)))
		a := w.acc.Get()
		w.acc.Set(a.Mul(v).Named("t").Add(float32(j%4096) * 0.5))
		if j%8 == 7 {
			w.out.Store(idx.Add(uint32(j)), a)
			n -= 3
		}
	}
}

func (w *scaleWork) done() *dsl.Kernel {
	w.out.Store(w.base, w.acc.Get())
	return w.k
}

// StraightLine builds a kernel of about n instructions of straight-line code.
func StraightLine(n int) *dsl.Kernel {
	w := newScaleWork("scale_straight", 64)
	w.add(w.base, n-8)
	return w.done()
}

// NestedLoops builds a kernel of depth nested loops (dsl For loops over a parameter's count,
// every counter named i) with about per instructions at each level.
func NestedLoops(depth, per int) *dsl.Kernel {
	w := newScaleWork("scale_loops", 64)
	count := w.k.Param("count", dsl.U32)
	var level func(d int, idx dsl.Value)
	level = func(d int, idx dsl.Value) {
		if d == depth {
			return
		}
		w.k.For("i", uint32(0), count, uint32(1), func(i dsl.Value) {
			x := idx.Add(i)
			w.add(x, per-14)
			level(d+1, x)
		})
	}
	level(0, w.base)
	return w.done()
}

// NestedIfs builds a kernel of depth nested ifs whose conditions depend on a loaded value (so
// differ between invocations), every other one with an else branch, with about per
// instructions at each level.
func NestedIfs(depth, per int) *dsl.Kernel {
	w := newScaleWork("scale_ifs", 64)
	var level func(d int)
	level = func(d int) {
		if d == depth {
			return
		}
		v := w.in.Load(w.base.Add(uint32(d % 1024)))
		e := w.k.If(v.Gt(float32(d%4096)), func() {
			w.add(w.base, per-10)
			level(d + 1)
		})
		if d%2 == 1 {
			e.Else(func() { w.out.Store(w.base, v) })
		}
	}
	level(0)
	return w.done()
}
