package ir

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// ugen builds random kernels for the uniformity analysis: values that are and are not uniform,
// variables assigned both, ifs, loops with break and continue, returns (in continuing blocks
// too), barriers and reductions anywhere, and dead code after jumps.
type ugen struct {
	r      *rand.Rand
	k      *Kernel
	blocks []*Block
	scopes [][]*Inst
	loops  int
	inCont bool
	line   int
	depth  int
}

func newUgen(seed int64, depth int) *ugen {
	k := &Kernel{
		Name: "u", WorkgroupSize: [3]uint32{64, 1, 1},
		Buffers: []*Buffer{{Name: "in", Elem: TU32, Access: ReadOnly}, {Name: "cnt", Elem: TU32, Access: ReadWrite}},
		Params:  []*Param{{Name: "n", Type: TU32}},
		Vars:    []*Var{{Name: "a", Type: TU32}, {Name: "b", Type: TU32}, {Name: "c", Type: TU32}, {Name: "d", Type: TU32}},
		Body:    &Block{},
	}
	return &ugen{r: rand.New(rand.NewSource(seed)), k: k, blocks: []*Block{k.Body}, scopes: [][]*Inst{nil}, depth: depth}
}

func (g *ugen) add(in *Inst) *Inst {
	g.line++
	in.Pos = Pos{File: "u.go", Line: g.line}
	b := g.blocks[len(g.blocks)-1]
	b.Insts = append(b.Insts, in)
	if in.Type != TVoid {
		g.scopes[len(g.scopes)-1] = append(g.scopes[len(g.scopes)-1], in)
	}
	return in
}

// val returns a u32 value: one in scope or a new one.
func (g *ugen) val() *Inst {
	if g.r.Intn(3) > 0 {
		var vs []*Inst
		for _, s := range g.scopes {
			for _, v := range s {
				if v.Type == TU32 {
					vs = append(vs, v)
				}
			}
		}
		if len(vs) > 0 {
			return vs[g.r.Intn(len(vs))]
		}
	}
	switch g.r.Intn(9) {
	case 0:
		return g.add(&Inst{Op: OpBuiltin, Type: TU32, Aux: uint64(GlobalID)})
	case 1:
		return g.add(&Inst{Op: OpBuiltin, Type: TU32, Aux: uint64(WorkgroupID)})
	case 2:
		return g.add(&Inst{Op: OpParam, Type: TU32})
	case 3:
		return g.add(&Inst{Op: OpConst, Type: TU32, Aux: uint64(g.r.Intn(4))})
	case 4:
		return g.add(&Inst{Op: OpLoad, Type: TU32, Mem: MemBuffer, Args: []*Inst{g.val()}})
	case 5:
		return g.add(&Inst{Op: OpAtomic, Type: TU32, Mem: MemBuffer, Ref: 1, Aux: uint64(AtomicAdd), Args: []*Inst{g.val(), g.val()}})
	case 6:
		return g.add(&Inst{Op: OpAdd, Type: TU32, Args: []*Inst{g.val(), g.val()}})
	case 7:
		return g.add(&Inst{Op: OpReduce, Type: TU32, Aux: uint64(ReduceSum), Args: []*Inst{g.val()}})
	}
	return g.add(&Inst{Op: OpLoad, Type: TU32, Mem: MemVar, Ref: g.r.Intn(4)})
}

func (g *ugen) nested(f func()) *Block {
	b := &Block{}
	g.blocks = append(g.blocks, b)
	g.scopes = append(g.scopes, nil)
	f()
	g.scopes = g.scopes[:len(g.scopes)-1]
	g.blocks = g.blocks[:len(g.blocks)-1]
	return b
}

func (g *ugen) stmts(d int) {
	for n := 1 + g.r.Intn(4); n > 0; n-- {
		g.stmt(d)
	}
}

func (g *ugen) stmt(d int) {
	switch k := g.r.Intn(12); {
	case k < 2:
		g.add(&Inst{Op: OpStore, Mem: MemVar, Ref: g.r.Intn(4), Args: []*Inst{g.val()}})
	case k < 3:
		g.val()
	case k < 5 && d < g.depth:
		c := g.add(&Inst{Op: OpLt, Type: TBool, Args: []*Inst{g.val(), g.val()}})
		in := &Inst{Op: OpIf, Args: []*Inst{c}}
		then := g.nested(func() { g.stmts(d + 1) })
		els := g.nested(func() {
			if g.r.Intn(2) == 0 {
				g.stmts(d + 1)
			}
		})
		in.Blocks = []*Block{then, els}
		g.add(in)
	case k < 7 && d < g.depth && !g.inCont:
		in := &Inst{Op: OpLoop}
		g.loops++
		body := g.nested(func() { g.stmts(d + 1) })
		g.loops--
		save := g.inCont
		g.inCont = true
		cont := g.nested(func() {
			if g.r.Intn(2) == 0 {
				g.stmts(d + 1)
			}
		})
		g.inCont = save
		in.Blocks = []*Block{body, cont}
		g.add(in)
	case k < 9 && d > 0:
		switch {
		case g.loops > 0 && !g.inCont && g.r.Intn(3) > 0:
			op := OpBreak
			if g.r.Intn(2) == 0 {
				op = OpContinue
			}
			g.add(&Inst{Op: op})
		case g.r.Intn(2) == 0:
			g.add(&Inst{Op: OpReturn})
		}
	case k < 11:
		g.add(&Inst{Op: OpBarrier})
	}
}

// TestUniformityMatchesReference compares the linear analysis with the exponential one it
// replaced, on random kernels: the same errors, in the same order.
func TestUniformityMatchesReference(t *testing.T) {
	seeds := 4000
	if testing.Short() {
		seeds = 500
	}
	withErrs := 0
	for seed := int64(0); seed < int64(seeds); seed++ {
		g := newUgen(seed, 2+int(seed%4))
		for n := 3 + g.r.Intn(8); n > 0; n-- {
			g.stmt(0)
		}
		got, want := Verify(g.k), refVerify(g.k)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: Verify:\n%v\nreference:\n%v\nkernel:\n%s", seed, got, want, g.k)
		}
		if got != nil {
			withErrs++
		}
	}
	t.Logf("%d kernels, %d with uniformity errors", seeds, withErrs)
	if withErrs < seeds/10 || withErrs > seeds*9/10 {
		t.Errorf("%d of %d kernels have errors: the generator does not exercise both outcomes", withErrs, seeds)
	}
}

// deepLoops nests depth loops, each with an invocation-dependent break when divergent (else a
// uniform one), and a barrier in the innermost body.
func deepLoops(depth int, divergent bool) *Kernel {
	k := &Kernel{Name: "deep", WorkgroupSize: [3]uint32{64, 1, 1}, Params: []*Param{{Name: "n", Type: TU32}}, Body: &Block{}}
	p := Pos{File: "deep.go", Line: 1}
	src := &Inst{Op: OpParam, Type: TU32, Pos: p}
	if divergent {
		src = &Inst{Op: OpBuiltin, Type: TU32, Aux: uint64(LocalIndex), Pos: p}
	}
	k.Body.Insts = []*Inst{src}
	b := k.Body
	for i := 0; i < depth; i++ {
		c := &Inst{Op: OpConst, Type: TU32, Aux: uint64(i), Pos: p}
		cmp := &Inst{Op: OpLt, Type: TBool, Args: []*Inst{src, c}, Pos: p}
		brk := &Inst{Op: OpIf, Args: []*Inst{cmp}, Blocks: []*Block{{Insts: []*Inst{{Op: OpBreak, Pos: p}}}, {}}, Pos: p}
		body := &Block{Insts: []*Inst{c, cmp, brk}}
		b.Insts = append(b.Insts, &Inst{Op: OpLoop, Blocks: []*Block{body, {}}, Pos: Pos{File: "deep.go", Line: 10 + i}})
		b = body
	}
	b.Insts = append(b.Insts, &Inst{Op: OpBarrier, Pos: Pos{File: "deep.go", Line: 2}})
	return k
}

// TestUniformityDeepLoops verifies 1000 nested loops (the analysis used to take time
// exponential in the depth) and checks what it reports against the reference at small depths.
func TestUniformityDeepLoops(t *testing.T) {
	for _, divergent := range []bool{false, true} {
		for depth := 1; depth <= 8; depth++ {
			k := deepLoops(depth, divergent)
			if got, want := fmt.Sprint(Verify(k)), fmt.Sprint(refVerify(k)); got != want {
				t.Fatalf("depth %d divergent %v: Verify %s, reference %s", depth, divergent, got, want)
			}
		}
		start := time.Now()
		err := Verify(deepLoops(1000, divergent))
		t.Logf("1000 nested loops (divergent breaks %v): %v", divergent, time.Since(start))
		if divergent != (err != nil) {
			t.Errorf("1000 nested loops, divergent breaks %v: %v", divergent, err)
		}
	}
}
