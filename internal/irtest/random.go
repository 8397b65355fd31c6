package irtest

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/ir"
)

// Random builds a random kernel from seed: a mix of every value op on scalars and vectors,
// loads, stores, atomics, shuffles, packed dots, nested ifs and loops (with break, continue and
// return), barriers at the top level, odd constants (NaN, infinities, subnormals, extremes) and
// odd names. The result verifies (an error means the generator has a bug). Kernels are for
// printing and compiling only: loops need not terminate.
func Random(seed int64) (*ir.Kernel, error) {
	k, err := random(seed, true)
	if err != nil {
		// A barrier after a return some invocations take does not verify: build it again
		// without barriers.
		k, err = random(seed, false)
	}
	return k, err
}

func random(seed int64, barriers bool) (*ir.Kernel, error) {
	r := rand.New(rand.NewSource(seed))
	g := &rgen{r: r, b: New(fmt.Sprintf("random_%d", seed), []uint32{1, 8, 32, 64, 48}[r.Intn(5)]), barriers: barriers}
	g.setup()
	g.scopes = [][]*ir.Inst{nil}
	n := 8 + r.Intn(12)
	for i := 0; i < n; i++ {
		g.stmt(0)
	}
	return g.b.Done()
}

type rgen struct {
	r        *rand.Rand
	b        *Builder
	scopes   [][]*ir.Inst
	bufs     map[ir.Type][]int // writable buffers by value type
	ro       map[ir.Type][]int // readable buffers by value type
	shared   map[ir.Type][]int
	vars     map[ir.Type][]int
	atomB    []int // read_write i32/u32 buffers
	atomS    []int
	loops    int
	inCont   bool
	barriers bool
}

var randTypes = []ir.Type{
	ir.TF32, ir.TI32, ir.TU32, ir.TBool, ir.TF16,
	ir.Vec(ir.F32, 2), ir.Vec(ir.F32, 3), ir.Vec(ir.F32, 4), ir.Vec(ir.I32, 2), ir.Vec(ir.U32, 4), ir.Vec(ir.I32, 3),
	ir.Vec(ir.F16, 2), ir.Vec(ir.Bool, 2),
}

var randNames = []string{"", "", "", "x", "x", "acc", "int", "float", "lane", "gid", "a.b", "__r", "os_tmp", "v1", "half", "threadIdx", "params", "1st"}

func (g *rgen) setup() {
	b := g.b
	g.bufs, g.ro, g.shared, g.vars = map[ir.Type][]int{}, map[ir.Type][]int{}, map[ir.Type][]int{}, map[ir.Type][]int{}
	for i, e := range []ir.Type{ir.TF32, ir.TU32, ir.TI32, ir.TF16, ir.S(ir.I8), ir.S(ir.U16), ir.Vec(ir.F32, 4), ir.Vec(ir.I32, 3), ir.Vec(ir.U32, 2)} {
		acc := []ir.Access{ir.ReadOnly, ir.WriteOnly, ir.ReadWrite}[g.r.Intn(3)]
		if i < 3 {
			acc = ir.ReadWrite
		}
		idx := b.Buffer(fmt.Sprintf("buf%d", i), e, acc)
		vt := ir.Type{Scalar: e.Scalar.Widened(), Lanes: e.Lanes}
		if acc != ir.WriteOnly {
			g.ro[vt] = append(g.ro[vt], idx)
		}
		if acc != ir.ReadOnly {
			g.bufs[vt] = append(g.bufs[vt], idx)
		}
		if acc == ir.ReadWrite && (e == ir.TI32 || e == ir.TU32) {
			g.atomB = append(g.atomB, idx)
		}
	}
	b.Param("p", ir.TF32)
	b.Param("q", ir.TU32)
	b.Param("float", ir.TI32)
	for i, e := range []ir.Type{ir.TF32, ir.TU32, ir.TI32, ir.S(ir.U8), ir.Vec(ir.F32, 2)} {
		idx := b.Shared(fmt.Sprintf("sh%d", i), e, 64)
		vt := ir.Type{Scalar: e.Scalar.Widened(), Lanes: e.Lanes}
		g.shared[vt] = append(g.shared[vt], idx)
		if e == ir.TI32 || e == ir.TU32 {
			g.atomS = append(g.atomS, idx)
		}
	}
	for _, t := range randTypes {
		g.vars[t] = append(g.vars[t], b.Local("var_"+t.String(), t))
	}
}

func (g *rgen) add(in *ir.Inst) *ir.Inst {
	g.b.Add(in)
	if in.Type != ir.TVoid {
		if g.r.Intn(4) == 0 {
			in.Name = randNames[g.r.Intn(len(randNames))]
		}
		s := &g.scopes[len(g.scopes)-1]
		*s = append(*s, in)
	}
	return in
}

func (g *rgen) op(op ir.Op, t ir.Type, args ...*ir.Inst) *ir.Inst {
	return g.add(&ir.Inst{Op: op, Type: t, Args: args})
}

// pick returns a value of type t in scope, or nil.
func (g *rgen) pick(t ir.Type) *ir.Inst {
	var c []*ir.Inst
	for _, s := range g.scopes {
		for _, v := range s {
			if v.Type == t {
				c = append(c, v)
			}
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[g.r.Intn(len(c))]
}

// index is a u32 index below 64.
func (g *rgen) index(d int) *ir.Inst {
	x := g.val(ir.TU32, d+1)
	return g.op(ir.OpAnd, ir.TU32, x, g.konst(ir.TU32))
}

func (g *rgen) konst(t ir.Type) *ir.Inst {
	var bits uint64
	switch t.Scalar {
	case ir.F32:
		bits = uint64([]uint32{0x3f800000, 0x7fc00000, 0x7f800000, 0xff800000, 0x80000000, 0x00000001, 0x7f7fffff, 0xbe800000, math.Float32bits(float32(g.r.NormFloat64()))}[g.r.Intn(9)])
	case ir.F16:
		bits = uint64([]uint16{0x3c00, 0x7e00, 0x7c00, 0xfc00, 0x8000, 0x0001, 0x7bff, 0xb400}[g.r.Intn(8)])
	case ir.I32, ir.U32:
		bits = uint64([]uint32{0, 1, 63, 0x80000000, 0xffffffff, 31, 32, 33, uint32(g.r.Int31())}[g.r.Intn(9)])
	case ir.Bool:
		bits = uint64(g.r.Intn(2))
	}
	if t == ir.TU32 && g.r.Intn(2) == 0 {
		bits = 63 // index masks
	}
	return g.add(&ir.Inst{Op: ir.OpConst, Type: t, Aux: bits})
}

// val returns a value of type t: one in scope, a constant, or a new computation.
func (g *rgen) val(t ir.Type, d int) *ir.Inst {
	if v := g.pick(t); v != nil && (d > 3 || g.r.Intn(3) == 0) {
		return v
	}
	if d > 4 {
		return g.konst(t)
	}
	return g.compute(t, d)
}

func (g *rgen) compute(t ir.Type, d int) *ir.Inst {
	r := g.r
	s := t.Scalar
	if t.Lanes > 1 {
		switch r.Intn(4) {
		case 0:
			lanes := make([]*ir.Inst, t.Lanes)
			for i := range lanes {
				lanes[i] = g.val(t.Elem(), d+1)
			}
			return g.op(ir.OpCompose, t, lanes...)
		case 1:
			if l, ok := g.ro[t]; ok && r.Intn(2) == 0 {
				return g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemBuffer, Ref: l[r.Intn(len(l))], Args: []*ir.Inst{g.index(d)}})
			}
			if v := g.vars[t]; len(v) > 0 {
				return g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemVar, Ref: v[0]})
			}
		}
	}
	switch s {
	case ir.Bool:
		switch r.Intn(4) {
		case 0:
			return g.op([]ir.Op{ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpEq, ir.OpNe}[r.Intn(5)], t, g.val(t, d+1), g.val(t, d+1))
		case 1:
			return g.op(ir.OpNot, t, g.val(t, d+1))
		}
		at := []ir.Type{ir.TF32, ir.TI32, ir.TU32, ir.TF16}[r.Intn(4)]
		at.Lanes = t.Lanes
		return g.op([]ir.Op{ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe}[r.Intn(6)], t, g.val(at, d+1), g.val(at, d+1))
	case ir.F32, ir.F16:
		switch r.Intn(9) {
		case 0, 1:
			return g.op([]ir.Op{ir.OpNeg, ir.OpAbs, ir.OpSqrt, ir.OpFloor}[r.Intn(4)], t, g.val(t, d+1))
		case 2, 3, 4:
			return g.op([]ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpMin, ir.OpMax}[r.Intn(6)], t, g.val(t, d+1), g.val(t, d+1))
		case 5:
			from := []ir.Scalar{ir.F32, ir.F16, ir.I32, ir.U32}[r.Intn(4)]
			return g.op(ir.OpConvert, t, g.val(ir.Type{Scalar: from, Lanes: t.Lanes}, d+1))
		case 6:
			c := g.val(ir.Type{Scalar: ir.Bool, Lanes: []uint8{1, t.Lanes}[r.Intn(2)]}, d+1)
			return g.op(ir.OpSelect, t, c, g.val(t, d+1), g.val(t, d+1))
		case 7:
			if t == ir.TF32 {
				if r.Intn(2) == 0 {
					return g.op(ir.OpShuffleXor, t, g.val(t, d+1), g.konstMask())
				}
				return g.op(ir.OpBitcast, t, g.val([]ir.Type{ir.TU32, ir.TI32, ir.Vec(ir.F16, 2)}[r.Intn(3)], d+1))
			}
		case 8:
			if t == ir.TF32 {
				return g.load(t, d)
			}
		}
		return g.konst(t)
	default: // i32, u32
		switch r.Intn(12) {
		case 0, 1:
			return g.op([]ir.Op{ir.OpNeg, ir.OpNot, ir.OpAbs}[r.Intn(3)], t, g.val(t, d+1))
		case 2, 3, 4:
			return g.op([]ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpMin, ir.OpMax, ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr}[r.Intn(12)], t, g.val(t, d+1), g.val(t, d+1))
		case 5:
			from := []ir.Scalar{ir.F32, ir.F16, ir.I32, ir.U32}[r.Intn(4)]
			return g.op(ir.OpConvert, t, g.val(ir.Type{Scalar: from, Lanes: t.Lanes}, d+1))
		case 6:
			c := g.val(ir.Type{Scalar: ir.Bool, Lanes: []uint8{1, t.Lanes}[r.Intn(2)]}, d+1)
			return g.op(ir.OpSelect, t, c, g.val(t, d+1), g.val(t, d+1))
		case 7:
			if t.Lanes == 1 {
				from := []ir.Type{ir.TF32, ir.TI32, ir.TU32, ir.Vec(ir.F16, 2)}[r.Intn(4)]
				return g.op(ir.OpBitcast, t, g.val(from, d+1))
			}
			from := ir.Type{Scalar: []ir.Scalar{ir.F32, ir.I32, ir.U32}[r.Intn(3)], Lanes: t.Lanes}
			return g.op(ir.OpBitcast, t, g.val(from, d+1))
		case 8:
			if t == ir.TI32 {
				return g.op(ir.OpDotI8x4, t, g.val(ir.TU32, d+1), g.val(ir.TU32, d+1))
			}
			if t == ir.TU32 {
				return g.add(&ir.Inst{Op: ir.OpBuiltin, Type: t, Aux: uint64(r.Intn(8)), Ref: r.Intn(3)})
			}
		case 9:
			if t.Lanes == 1 {
				return g.op(ir.OpShuffleXor, t, g.val(t, d+1), g.konstMask())
			}
		case 10:
			if t.Lanes == 1 {
				return g.atomic(t, d)
			}
		case 11:
			if t.Lanes == 1 {
				if t == ir.TU32 && r.Intn(3) == 0 {
					return g.add(&ir.Inst{Op: ir.OpLen, Type: t, Ref: r.Intn(len(g.b.K.Buffers))})
				}
				if t == ir.TU32 && r.Intn(2) == 0 {
					return g.add(&ir.Inst{Op: ir.OpParam, Type: t, Ref: 1})
				}
				return g.load(t, d)
			}
		}
		if t.Lanes > 1 {
			lanes := make([]*ir.Inst, t.Lanes)
			for i := range lanes {
				lanes[i] = g.val(t.Elem(), d+1)
			}
			return g.op(ir.OpCompose, t, lanes...)
		}
		if v := g.pick(ir.Vec(s, 4)); v != nil && s == ir.U32 {
			return g.add(&ir.Inst{Op: ir.OpExtract, Type: t, Args: []*ir.Inst{v}, Aux: uint64(r.Intn(4))})
		}
		return g.konst(t)
	}
}

func (g *rgen) konstMask() *ir.Inst {
	return g.add(&ir.Inst{Op: ir.OpConst, Type: ir.TU32, Aux: uint64(1) << uint(g.r.Intn(5))})
}

// load reads a scalar of type t from a buffer, shared array or variable.
func (g *rgen) load(t ir.Type, d int) *ir.Inst {
	r := g.r
	switch r.Intn(3) {
	case 0:
		if l := g.ro[t]; len(l) > 0 {
			return g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemBuffer, Ref: l[r.Intn(len(l))], Args: []*ir.Inst{g.index(d)}})
		}
	case 1:
		if l := g.shared[t]; len(l) > 0 {
			return g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemShared, Ref: l[r.Intn(len(l))], Args: []*ir.Inst{g.index(d)}})
		}
	}
	return g.add(&ir.Inst{Op: ir.OpLoad, Type: t, Mem: ir.MemVar, Ref: g.vars[t][0]})
}

func (g *rgen) atomic(t ir.Type, d int) *ir.Inst {
	r := g.r
	mem, list := ir.MemBuffer, g.atomB
	if r.Intn(2) == 0 {
		mem, list = ir.MemShared, g.atomS
	}
	var ref = -1
	for _, i := range list {
		e := g.b.K.Buffers
		if mem == ir.MemBuffer && e[i].Elem == t {
			ref = i
		}
		if mem == ir.MemShared && g.b.K.Shared[i].Elem == t {
			ref = i
		}
	}
	if ref < 0 {
		return g.konst(t)
	}
	op := ir.AtomicOp(r.Intn(5))
	args := []*ir.Inst{g.index(d), g.val(t, d+1)}
	if op == ir.AtomicCmpXchg {
		args = append(args, g.val(t, d+1))
	}
	return g.add(&ir.Inst{Op: ir.OpAtomic, Type: t, Mem: mem, Ref: ref, Aux: uint64(op), Args: args})
}

// stmt adds one statement at nesting depth d.
func (g *rgen) stmt(d int) {
	r := g.r
	b := g.b
	switch k := r.Intn(10); {
	case k < 3:
		t := randTypes[r.Intn(len(randTypes))]
		if l := g.bufs[t]; len(l) > 0 && r.Intn(2) == 0 {
			b.Store(ir.MemBuffer, l[r.Intn(len(l))], g.index(0), g.val(t, 0))
			return
		}
		if l := g.shared[t]; len(l) > 0 && r.Intn(2) == 0 {
			b.Store(ir.MemShared, l[r.Intn(len(l))], g.index(0), g.val(t, 0))
			return
		}
		b.Store(ir.MemVar, g.vars[t][0], g.val(t, 0))
	case k < 5:
		g.val(randTypes[r.Intn(len(randTypes))], 0)
	case k == 5 && d < 3:
		c := g.val(ir.TBool, 1)
		g.block(func() { g.stmts(d + 1) }, func(then *ir.Block) {
			g.block(func() {
				if r.Intn(2) == 0 {
					g.stmts(d + 1)
				}
			}, func(els *ir.Block) {
				in := &ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{c}, Blocks: []*ir.Block{then, els}}
				b.Add(in)
			})
		})
	case k == 6 && d < 3 && !g.inCont:
		g.loops++
		g.block(func() {
			g.stmts(d + 1)
			if r.Intn(2) == 0 {
				c := g.val(ir.TBool, 1)
				g.block(func() { b.Break() }, func(then *ir.Block) {
					b.Add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{c}, Blocks: []*ir.Block{then, {}}})
				})
			}
			g.stmts(d + 1)
		}, func(body *ir.Block) {
			g.loops--
			save := g.inCont
			g.inCont = true
			g.block(func() {
				if r.Intn(2) == 0 {
					g.stmts(d + 1)
				}
			}, func(cont *ir.Block) {
				g.inCont = save
				b.Add(&ir.Inst{Op: ir.OpLoop, Type: ir.TVoid, Blocks: []*ir.Block{body, cont}})
			})
		})
	case k == 7 && d > 0:
		switch {
		case g.loops > 0 && !g.inCont && r.Intn(3) > 0:
			if r.Intn(2) == 0 {
				b.Break()
			} else {
				b.Continue()
			}
		case r.Intn(4) == 0:
			b.Return()
		}
	case k == 8 && d == 0 && g.barriers:
		b.Barrier()
	}
}

func (g *rgen) stmts(d int) {
	n := 1 + g.r.Intn(3)
	for i := 0; i < n; i++ {
		g.stmt(d)
	}
}

// block builds a nested block with fill, in its own value scope, then hands it to use (which
// adds the owning instruction in the enclosing block).
func (g *rgen) block(fill func(), use func(*ir.Block)) {
	blk := &ir.Block{}
	g.b.blocks = append(g.b.blocks, blk)
	g.scopes = append(g.scopes, nil)
	fill()
	g.scopes = g.scopes[:len(g.scopes)-1]
	g.b.blocks = g.b.blocks[:len(g.b.blocks)-1]
	use(blk)
}
