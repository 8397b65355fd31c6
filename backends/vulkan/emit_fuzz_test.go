package vulkan_test

import (
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

// irGen builds a random small kernel from fuzz bytes. It keeps to the IR's typing and scoping
// rules, so most kernels verify; the ones that do not (a barrier under divergent control, say)
// are dropped by the caller.
type irGen struct {
	data  []byte
	b     *irtest.Builder
	pool  [][]*ir.Inst // visible values, one slice per open block
	depth int          // block nesting
	loops int          // loop bodies open (break/continue allowed when > 0 and cont == 0)
	cont  int          // continuing blocks open
	n     int          // instructions made (bounded)
}

func (g *irGen) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	c := g.data[0]
	g.data = g.data[1:]
	return c
}

func (g *irGen) intn(n int) int { return int(g.byte()) % n }

func (g *irGen) chance(pct int) bool { return int(g.byte())%100 < pct }

var genScalars = []ir.Scalar{ir.I32, ir.U32, ir.F32, ir.Bool, ir.F16, ir.I32, ir.U32, ir.F32, ir.F64}

func (g *irGen) valueType() ir.Type {
	s := genScalars[g.intn(len(genScalars))]
	lanes := 1
	if g.chance(30) && s != ir.F64 {
		lanes = 2 + g.intn(3)
	}
	return ir.Type{Scalar: s, Lanes: uint8(lanes)}
}

var genElems = []ir.Type{
	ir.TI32, ir.TU32, ir.TF32, ir.S(ir.I8), ir.S(ir.U8), ir.S(ir.I16), ir.S(ir.U16), ir.TF16,
	ir.Vec(ir.F32, 2), ir.Vec(ir.U32, 3), ir.Vec(ir.I32, 4), ir.TF32, ir.TU32,
}

var genShared = []ir.Type{ir.TI32, ir.TU32, ir.TF32, ir.Vec(ir.F32, 4), ir.Vec(ir.U32, 2)}

func genKernel(data []byte) *ir.Kernel {
	g := &irGen{data: data}
	wgs := [][]uint32{{64}, {8}, {1}, {8, 8}, {4, 2, 2}, {32}}
	g.b = irtest.New("fuzz", wgs[g.intn(len(wgs))]...)
	b := g.b
	for i := range 1 + g.intn(4) {
		b.Buffer("b"+itoaS(i), genElems[g.intn(len(genElems))], ir.Access(g.intn(3)))
	}
	for i := range g.intn(3) {
		b.Param("p"+itoaS(i), []ir.Type{ir.TI32, ir.TU32, ir.TF32}[g.intn(3)])
	}
	for i := range g.intn(3) {
		b.Shared("s"+itoaS(i), genShared[g.intn(len(genShared))], 1+g.intn(64))
	}
	for i := range g.intn(4) {
		b.Local("v"+itoaS(i), g.valueType())
	}
	g.pool = [][]*ir.Inst{nil}
	g.stmts(3 + g.intn(10))
	return b.K
}

func itoaS(i int) string { return string(rune('0' + i)) }

func (g *irGen) def(in *ir.Inst) *ir.Inst {
	g.n++
	if in.Type != ir.TVoid {
		g.pool[len(g.pool)-1] = append(g.pool[len(g.pool)-1], in)
		if g.chance(20) {
			in.Name = "t" + itoaS(g.n%10)
		}
	}
	return in
}

// nested runs f as the body of a new block.
func (g *irGen) nested(f func()) func() {
	return func() {
		g.pool = append(g.pool, nil)
		g.depth++
		f()
		g.depth--
		g.pool = g.pool[:len(g.pool)-1]
	}
}

func (g *irGen) stmts(n int) {
	for range n {
		if g.n > 200 {
			return
		}
		g.stmt()
	}
}

func (g *irGen) stmt() {
	b := g.b
	k := b.K
	switch g.intn(16) {
	case 0, 1, 2: // a store to a buffer
		if i := g.intn(len(k.Buffers)); k.Buffers[i].Access != ir.ReadOnly {
			e := k.Buffers[i].Elem
			b.St(i, g.index(), g.val(ir.Type{Scalar: e.Scalar.Widened(), Lanes: e.Lanes}))
		}
	case 3: // shared
		if len(k.Shared) > 0 {
			i := g.intn(len(k.Shared))
			b.Store(ir.MemShared, i, g.index(), g.val(k.Shared[i].Elem))
		}
	case 4, 5: // variable
		if len(k.Vars) > 0 {
			i := g.intn(len(k.Vars))
			b.SetV(i, g.val(k.Vars[i].Type))
		}
	case 6, 7: // if / else
		if g.depth < 4 {
			cond := g.val(ir.TBool)
			var els func()
			if g.chance(50) {
				els = g.nested(func() { g.stmts(1 + g.intn(4)) })
			}
			b.If(cond, g.nested(func() { g.stmts(1 + g.intn(4)) }), els)
		}
	case 8: // loop
		if g.depth < 4 {
			body := g.nested(func() {
				g.loops++
				saved := g.cont
				g.cont = 0
				if g.chance(70) {
					b.If(g.val(ir.TBool), g.nested(func() { g.stmts(g.intn(2)); b.Break() }), nil)
				}
				g.stmts(1 + g.intn(4))
				g.cont = saved
				g.loops--
			})
			var cont func()
			if g.chance(50) {
				cont = g.nested(func() {
					g.cont++
					g.stmts(1 + g.intn(3))
					g.cont--
				})
			}
			b.Loop(body, cont)
		}
	case 9: // break / continue
		if g.loops > 0 && g.cont == 0 {
			if g.chance(50) {
				b.Break()
			} else {
				b.Continue()
			}
		}
	case 10: // return
		if g.chance(40) {
			b.Return()
		}
	case 11: // barrier
		if g.chance(50) {
			b.Barrier()
		}
	default: // a value, often used by a store later
		g.val(g.valueType())
	}
}

// index returns an i32 or u32 index.
func (g *irGen) index() *ir.Inst {
	if g.chance(20) {
		return g.val(ir.TI32)
	}
	return g.val(ir.TU32)
}

// val returns a visible value of type t or makes one.
func (g *irGen) val(t ir.Type) *ir.Inst {
	var cands []*ir.Inst
	for _, s := range g.pool {
		for _, v := range s {
			if v.Type == t {
				cands = append(cands, v)
			}
		}
	}
	if len(cands) > 0 && g.chance(60) {
		return cands[g.intn(len(cands))]
	}
	if g.n > 200 || g.chance(15) {
		return g.konst(t)
	}
	g.n++
	return g.make(t)
}

func (g *irGen) konst(t ir.Type) *ir.Inst {
	b := g.b
	var bits uint64
	switch t.Scalar {
	case ir.Bool:
		bits = uint64(g.intn(2))
	case ir.F32:
		bits = ir.ConstBits(ir.TF32, float64(int(g.byte())-128)/4)
		if g.chance(5) {
			bits = 0x7fc00000
		}
	case ir.F16:
		bits = ir.ConstBits(ir.TF16, float64(int(g.byte())-128)/8)
	case ir.F64:
		bits = ir.ConstBits(ir.TF64, float64(int(g.byte())-128)/3)
	case ir.I32:
		bits = uint64(uint32(int32(int8(g.byte()))))
	default:
		bits = uint64(g.byte())
	}
	return g.def(b.Bits(t, bits))
}

func numericT(t ir.Type) bool { return t.Scalar == ir.I32 || t.Scalar == ir.U32 || t.Scalar.IsFloat() }
func integerT(t ir.Type) bool { return t.Scalar == ir.I32 || t.Scalar == ir.U32 }

// make builds a new value of type t with a random operation that yields t.
func (g *irGen) make(t ir.Type) *ir.Inst {
	b, k := g.b, g.b.K
	type maker func() *ir.Inst
	var ms []maker
	un := func(op ir.Op) maker { return func() *ir.Inst { return g.def(b.Op(op, t, g.val(t))) } }
	bin := func(op ir.Op) maker { return func() *ir.Inst { return g.def(b.Op(op, t, g.val(t), g.val(t))) } }
	if numericT(t) {
		ms = append(ms, un(ir.OpNeg), un(ir.OpAbs), bin(ir.OpAdd), bin(ir.OpSub), bin(ir.OpMul), bin(ir.OpDiv), bin(ir.OpMin), bin(ir.OpMax))
		ms = append(ms, func() *ir.Inst {
			from := ir.Type{Scalar: []ir.Scalar{ir.I32, ir.U32, ir.F32, ir.F16}[g.intn(4)], Lanes: t.Lanes}
			return g.def(b.Op(ir.OpConvert, t, g.val(from)))
		})
	}
	if t.Scalar.IsFloat() {
		ms = append(ms, un(ir.OpSqrt), un(ir.OpFloor))
	}
	if integerT(t) {
		ms = append(ms, un(ir.OpNot), bin(ir.OpRem), bin(ir.OpAnd), bin(ir.OpOr), bin(ir.OpXor), bin(ir.OpShl), bin(ir.OpShr))
	}
	if t.Scalar == ir.Bool {
		ms = append(ms, un(ir.OpNot), bin(ir.OpAnd), bin(ir.OpOr), bin(ir.OpXor), func() *ir.Inst {
			ops := []ir.Op{ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe}
			at := ir.Type{Scalar: []ir.Scalar{ir.I32, ir.U32, ir.F32, ir.F16}[g.intn(4)], Lanes: t.Lanes}
			return g.def(b.Op(ops[g.intn(len(ops))], t, g.val(at), g.val(at)))
		})
	}
	if t.Scalar != ir.Bool && t.Scalar.Bits()*int(t.Lanes) == 32 {
		ms = append(ms, func() *ir.Inst {
			from := []ir.Type{ir.TI32, ir.TU32, ir.TF32, ir.Vec(ir.F16, 2)}[g.intn(4)]
			return g.def(b.Op(ir.OpBitcast, t, g.val(from)))
		})
	}
	ms = append(ms, func() *ir.Inst {
		c := ir.TBool
		if t.Lanes > 1 && g.chance(50) {
			c = ir.Type{Scalar: ir.Bool, Lanes: t.Lanes}
		}
		return g.def(b.Op(ir.OpSelect, t, g.val(c), g.val(t), g.val(t)))
	})
	if t.IsVector() {
		ms = append(ms, func() *ir.Inst {
			lanes := make([]*ir.Inst, t.Lanes)
			for i := range lanes {
				lanes[i] = g.val(t.Elem())
			}
			return g.def(b.Op(ir.OpCompose, t, lanes...))
		})
	} else if t.Scalar != ir.F64 {
		ms = append(ms, func() *ir.Inst {
			vt := ir.Type{Scalar: t.Scalar, Lanes: uint8(2 + g.intn(3))}
			return g.def(b.Add(&ir.Inst{Op: ir.OpExtract, Type: t, Args: []*ir.Inst{g.val(vt)}, Aux: uint64(g.intn(int(vt.Lanes)))}))
		})
	}
	if t == ir.TU32 {
		ms = append(ms, func() *ir.Inst {
			bi := ir.Builtin(g.intn(8))
			return g.def(b.Builtin(bi, g.intn(3)))
		}, func() *ir.Inst {
			return g.def(b.Add(&ir.Inst{Op: ir.OpLen, Type: t, Ref: g.intn(len(k.Buffers))}))
		})
	}
	if t == ir.TI32 {
		ms = append(ms, func() *ir.Inst { return g.def(b.Op(ir.OpDotI8x4, t, g.val(ir.TU32), g.val(ir.TU32))) })
	}
	if t == ir.TF32 { // the device's own functions (an fma is lowered before emission: not here)
		ms = append(ms, func() *ir.Inst {
			f := ir.NativeFunc(g.intn(int(ir.NativeCount)))
			args := []*ir.Inst{g.val(t)}
			if f == ir.NativePow {
				args = append(args, g.val(t))
			}
			return g.def(b.Add(&ir.Inst{Op: ir.OpNative, Type: t, Aux: uint64(f), Args: args}))
		})
	}
	if t.Lanes == 1 && t.Scalar.Bits() == 32 && t.Scalar != ir.Bool {
		ms = append(ms, func() *ir.Inst { return g.def(b.Op(ir.OpShuffleXor, t, g.val(t), g.val(ir.TU32))) })
	}
	// Memory and parameters yielding t.
	for i, p := range k.Params {
		if p.Type == t {
			ms = append(ms, func() *ir.Inst { return g.def(b.P(i)) })
		}
	}
	for i, buf := range k.Buffers {
		if (ir.Type{Scalar: buf.Elem.Scalar.Widened(), Lanes: buf.Elem.Lanes}) != t {
			continue
		}
		if buf.Access != ir.WriteOnly {
			ms = append(ms, func() *ir.Inst { return g.def(b.Ld(i, g.index())) })
		}
		if buf.Access == ir.ReadWrite && integerT(t) && t.Lanes == 1 {
			ms = append(ms, g.atomicMaker(ir.MemBuffer, i, t))
		}
	}
	for i, s := range k.Shared {
		if s.Elem == t {
			ms = append(ms, func() *ir.Inst { return g.def(b.Load(ir.MemShared, i, g.index())) })
			if integerT(t) && t.Lanes == 1 {
				ms = append(ms, g.atomicMaker(ir.MemShared, i, t))
			}
		}
	}
	for i, v := range k.Vars {
		if v.Type == t {
			ms = append(ms, func() *ir.Inst { return g.def(b.GetV(i)) })
		}
	}
	return ms[g.intn(len(ms))]()
}

func (g *irGen) atomicMaker(mem ir.Mem, ref int, t ir.Type) func() *ir.Inst {
	return func() *ir.Inst {
		op := ir.AtomicOp(g.intn(5))
		args := []*ir.Inst{g.index(), g.val(t)}
		if op == ir.AtomicCmpXchg {
			args = append(args, g.val(t))
		}
		return g.def(g.b.Atomic(mem, ref, op, args...))
	}
}

var (
	fuzzSeenMu sync.Mutex
	fuzzSeen   = map[[32]byte]bool{}
)

// moduleShape hashes the instruction sequence of a module (opcodes and word counts, not ids or
// literals): modules that differ only in constants, names or ids share a shape.
func moduleShape(words []uint32) [32]byte {
	ops := []uint32{words[1]} // the SPIR-V version: each environment's module is its own shape
	for i := 5; i < len(words); {
		n := int(words[i] >> 16)
		ops = append(ops, words[i])
		if n == 0 {
			break
		}
		i += n
	}
	return sha256.Sum256(wordsBytes(ops))
}

// FuzzEmit: every generated kernel that passes ir.Verify must emit for every environment, and
// each module must pass spirv-val for its environment. spirv-val runs once per module shape
// (instruction sequence), which keeps fuzzing (and its minimization) fast; try
//
//	go test ./backends/vulkan -run '^$' -fuzz FuzzEmit -fuzztime 2m -fuzzminimizetime 200x
func FuzzEmit(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		seed := make([]byte, 64+r.IntN(512))
		for i := range seed {
			seed[i] = byte(r.Uint32())
		}
		f.Add(seed)
	}
	f.Add([]byte{})
	f.Add([]byte("loop with a break and a return in continuing"))
	haveTools := spirvTools() == nil
	f.Fuzz(func(t *testing.T, data []byte) {
		k := genKernel(data)
		if ir.Verify(k) != nil {
			return
		}
		// Every environment: spirv-val checks each module for the one its version names.
		for _, env := range vulkan.Envs {
			mod, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: 8, Env: env})
			if err != nil {
				var ie *ir.Error
				if errors.As(err, &ie) && strings.Contains(ie.Msg, "workgroup memory") {
					return // narrow shared arrays: a documented limitation
				}
				t.Fatalf("Emit for %v: %v\n%s", env, err, k)
			}
			if !haveTools {
				continue
			}
			sum := moduleShape(mod.Words)
			fuzzSeenMu.Lock()
			seen := fuzzSeen[sum]
			fuzzSeen[sum] = true
			fuzzSeenMu.Unlock()
			if seen {
				continue
			}
			if err := spirvVal(t, mod.Words); err != nil {
				t.Fatalf("%v: %v\nIR:\n%s", env, err, k)
			}
		}
	})
}

// TestFuzzGeneratorMostlyValid keeps the generator honest: most of its kernels must verify.
func TestFuzzGeneratorMostlyValid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ok := 0
	const n = 300
	for range n {
		data := make([]byte, 400)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if ir.Verify(genKernel(data)) == nil {
			ok++
		}
	}
	if ok < n/2 {
		t.Errorf("only %d of %d generated kernels verify", ok, n)
	}
	t.Logf("%d of %d generated kernels verify", ok, n)
}
