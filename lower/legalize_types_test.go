package lower_test

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// interp runs a lowered straight-line kernel (ifs allowed, no loops) for one invocation on the
// CPU with the IR's meaning on 32-bit kinds: f32 operations round to nearest even (Go's
// float32), integers wrap, shift counts are taken modulo 32, loads of narrow elements extend
// and stores wrap. Values and buffer elements are bit patterns.
type interp struct {
	k    *ir.Kernel
	bufs [][]uint64
	vars []uint64
	vals map[*ir.Inst]uint64
}

func f32of(b uint64) float32  { return math.Float32frombits(uint32(b)) }
func bitsOf(f float32) uint64 { return uint64(math.Float32bits(f)) }
func b2(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (m *interp) run(t *testing.T, b *ir.Block) {
	for _, in := range b.Insts {
		if in.Type.IsVector() || in.Op == ir.OpLoop {
			t.Fatalf("interp: %s %s not supported", in.Op, in.Type)
		}
		arg := func(i int) uint64 { return m.vals[in.Args[i]] }
		s := in.Type.Scalar
		if len(in.Args) > 0 {
			s = in.Args[0].Type.Scalar
		}
		var r uint64
		switch op := in.Op; {
		case op == ir.OpConst:
			r = in.Aux
		case op == ir.OpLoad && in.Mem == ir.MemVar:
			r = m.vars[in.Ref]
		case op == ir.OpLoad:
			e := m.k.Buffers[in.Ref].Elem.Scalar
			r = m.bufs[in.Ref][arg(0)]
			if e.IsSigned() && e.Bits() < 32 { // sign-extend to 32 bits
				r = uint64(uint32(int64(r<<(64-e.Bits())) >> (64 - e.Bits())))
			}
		case op == ir.OpStore && in.Mem == ir.MemVar:
			m.vars[in.Ref] = arg(0)
		case op == ir.OpStore:
			e := m.k.Buffers[in.Ref].Elem.Scalar
			m.bufs[in.Ref][arg(0)] = arg(1) & (1<<e.Bits() - 1)
		case op == ir.OpIf:
			m.run(t, in.Blocks[1-int(arg(0))])
		case op == ir.OpSelect:
			r = arg(2)
			if arg(0) != 0 {
				r = arg(1)
			}
		case op == ir.OpBitcast:
			r = arg(0)
		case op == ir.OpConvert:
			r = convert(s, in.Type.Scalar, arg(0))
		case s == ir.F32 && (op.IsUnary() || op.IsBinary() || op.IsCompare()):
			r = floatOp(op, f32of(arg(0)), f32of(m.vals[in.Args[len(in.Args)-1]]))
		case s == ir.Bool && op == ir.OpNot:
			r = arg(0) ^ 1
		case s == ir.I32 || s == ir.U32 || s == ir.Bool:
			r = intOp(t, op, uint32(arg(0)), uint32(m.vals[in.Args[len(in.Args)-1]]), s == ir.I32)
		default:
			t.Fatalf("interp: %s on %s not supported", op, s)
		}
		m.vals[in] = r
	}
}

func convert(from, to ir.Scalar, a uint64) uint64 {
	switch {
	case from == ir.F32 && to == ir.I32:
		f := f32of(a)
		if f != f || f >= 0x1p31 || f < -0x1p31 {
			return 0xdeadbeef // undefined: the lowering must select around it
		}
		return uint64(uint32(int32(f)))
	case from == ir.F32 && to == ir.U32:
		f := f32of(a)
		if f != f || f >= 0x1p32 || f <= -1 {
			return 0xdeadbeef
		}
		return uint64(uint32(f))
	case from == ir.I32 && to == ir.F32:
		return bitsOf(float32(int32(uint32(a))))
	case from == ir.U32 && to == ir.F32:
		return bitsOf(float32(uint32(a)))
	}
	return a // i32 <-> u32
}

func floatOp(op ir.Op, x, y float32) uint64 {
	switch op {
	case ir.OpNeg:
		return bitsOf(x) ^ 0x80000000
	case ir.OpAbs:
		return bitsOf(x) &^ 0x80000000
	case ir.OpSqrt:
		return bitsOf(float32(math.Sqrt(float64(x))))
	case ir.OpFloor:
		return bitsOf(float32(math.Floor(float64(x))))
	case ir.OpAdd:
		return bitsOf(x + y)
	case ir.OpSub:
		return bitsOf(x - y)
	case ir.OpMul:
		return bitsOf(x * y)
	case ir.OpDiv:
		return bitsOf(x / y)
	case ir.OpMin:
		if y < x {
			return bitsOf(y)
		}
		return bitsOf(x)
	case ir.OpMax:
		if x > y {
			return bitsOf(x)
		}
		return bitsOf(y)
	case ir.OpEq:
		return b2(x == y)
	case ir.OpNe:
		return b2(x != y)
	case ir.OpLt:
		return b2(x < y)
	case ir.OpLe:
		return b2(x <= y)
	case ir.OpGt:
		return b2(x > y)
	case ir.OpGe:
		return b2(x >= y)
	}
	panic(op)
}

func intOp(t *testing.T, op ir.Op, x, y uint32, signed bool) uint64 {
	sx, sy := int32(x), int32(y)
	lt := x < y
	if signed {
		lt = sx < sy
	}
	switch op {
	case ir.OpNeg:
		return uint64(-x)
	case ir.OpNot:
		return uint64(^x)
	case ir.OpAbs:
		if sx < 0 {
			return uint64(uint32(-sx))
		}
		return uint64(x)
	case ir.OpAdd:
		return uint64(x + y)
	case ir.OpSub:
		return uint64(x - y)
	case ir.OpMul:
		return uint64(x * y)
	case ir.OpDiv, ir.OpRem:
		if y == 0 || signed && sx == math.MinInt32 && sy == -1 {
			t.Fatalf("interp: undefined %s %d, %d", op, x, y)
		}
		switch {
		case signed && op == ir.OpDiv:
			return uint64(uint32(sx / sy))
		case signed:
			return uint64(uint32(sx % sy))
		case op == ir.OpDiv:
			return uint64(x / y)
		}
		return uint64(x % y)
	case ir.OpMin:
		if lt {
			return uint64(x)
		}
		return uint64(y)
	case ir.OpMax:
		if lt {
			return uint64(y)
		}
		return uint64(x)
	case ir.OpAnd:
		return uint64(x & y)
	case ir.OpOr:
		return uint64(x | y)
	case ir.OpXor:
		return uint64(x ^ y)
	case ir.OpShl:
		return uint64(x << (y & 31))
	case ir.OpShr:
		if signed {
			return uint64(uint32(sx >> (y & 31)))
		}
		return uint64(x >> (y & 31))
	case ir.OpEq:
		return b2(x == y)
	case ir.OpNe:
		return b2(x != y)
	case ir.OpLt:
		return b2(lt)
	case ir.OpLe:
		return b2(lt || x == y)
	case ir.OpGt:
		return b2(!lt && x != y)
	case ir.OpGe:
		return b2(!lt)
	}
	t.Fatalf("interp: %s not supported", op)
	return 0
}

// typesProbe is a one-invocation kernel of the new types: inputs p, q (i32), x (f32) and a, b
// (bf16, loaded from a bf16 buffer), outputs through a bf16 buffer, a u32 buffer and an i8
// buffer (a narrow value stored as itself).
func typesProbe() *dsl.Kernel {
	k := dsl.New("probe", 1)
	pq := k.Buffer("pq", dsl.I32, dsl.Read)
	xs := k.Buffer("x", dsl.F32, dsl.Read)
	ab := k.Buffer("ab", dsl.BF16, dsl.Read)
	obf := k.Buffer("obf", dsl.BF16, dsl.Write)
	ow := k.Buffer("ow", dsl.U32, dsl.Write)
	o8 := k.Buffer("o8", dsl.I8, dsl.Write)
	p, q, x, a, b := pq.Load(0), pq.Load(1), xs.Load(0), ab.Load(0), ab.Load(1)
	for i, v := range []dsl.Value{p.BF16(), p.U32().BF16(), x.BF16(), a.Add(b), a.Sub(b), a.Mul(b), a.Div(b),
		a.Sqrt(), a.Floor(), a.Min(b), a.Max(b), a.Neg(), a.Abs(), p.I16().BF16(), p.U16().Bitcast(dsl.BF16)} {
		obf.Store(i, v)
	}
	s, t := p.I8(), q.I8()
	u, w := p.U16(), q.U16()
	d := k.Select(t.Eq(0), k.Const(dsl.I8, 1), t)
	for i, v := range []dsl.Value{s.Add(t), s.Sub(t), s.Mul(t), s.Div(d), s.Rem(d), s.Shl(t), s.Shr(t), s.Neg(), s.Abs(), s.Not(),
		s.Min(t), s.Max(t), x.I8(), a.I8(), s.Add(100)} {
		o8.Store(i, v)
	}
	cmp := func(s, t dsl.Value) dsl.Value {
		w := k.U32(0)
		for i, c := range []dsl.Value{s.Lt(t), s.Le(t), s.Eq(t), s.Ne(t), s.Gt(t), s.Ge(t)} {
			w = w.Or(k.Select(c, k.U32(1<<i), k.U32(0)))
		}
		return w
	}
	for i, v := range []dsl.Value{u.Add(w).U32(), u.Sub(w).U32(), u.Mul(w).U32(), u.Shl(w).U32(), u.Shr(w).U32(), u.Not().U32(),
		s.U32(), s.Bitcast(dsl.U8).U32(), u.Bitcast(dsl.I16).I32().Bitcast(dsl.U32), x.U16().U32(), a.Bitcast(dsl.U16).U32(),
		cmp(s, t), cmp(u, w), cmp(a, b), x.I16().I8().U16().U32()} {
		ow.Store(i, v)
	}
	return k
}

// probeWant is what typesProbe must write, from the oracle and Go's own narrow arithmetic.
func probeWant(p, q int32, x float32, a, b uint16) (bf []uint16, w []uint32, i8 []int8) {
	fa, fb := oracle.BF16ToF32(a), oracle.BF16ToF32(b)
	bf = []uint16{oracle.IntToBF16(int64(p)), oracle.IntToBF16(int64(uint32(p))), oracle.F32ToBF16(x),
		oracle.AddBF16(a, b), oracle.SubBF16(a, b), oracle.MulBF16(a, b), oracle.DivBF16(a, b), oracle.SqrtBF16(a),
		oracle.FloorBF16(a), oracle.MinBF16(a, b), oracle.MaxBF16(a, b), a ^ 0x8000, a & 0x7fff,
		oracle.IntToBF16(int64(int16(p))), uint16(p)}
	s, t := int8(p), int8(q)
	d := t
	if d == 0 {
		d = 1
	}
	abs := s
	if s < 0 {
		abs = -s
	}
	i8 = []int8{s + t, s - t, s * t, s / d, s % d, s << (uint8(t) & 7), s >> (uint8(t) & 7), -s, abs, ^s,
		min(s, t), max(s, t), int8(oracle.FloatToInt32(x)), int8(oracle.FloatToInt32(fa)), s + 100}
	u, v := uint16(p), uint16(q)
	cmp := func(lt, le, eq, ne, gt, ge bool) uint32 {
		var w uint32
		for i, c := range []bool{lt, le, eq, ne, gt, ge} {
			if c {
				w |= 1 << i
			}
		}
		return w
	}
	w = []uint32{uint32(u + v), uint32(u - v), uint32(u * v), uint32(u << (v & 15)), uint32(u >> (v & 15)), uint32(^u),
		uint32(s), uint32(uint8(s)), uint32(int32(int16(u))), uint32(uint16(oracle.FloatToInt32(x))), uint32(a),
		cmp(s < t, s <= t, s == t, s != t, s > t, s >= t), cmp(u < v, u <= v, u == v, u != v, u > v, u >= v),
		cmp(fa < fb, fa <= fb, fa == fb, fa != fb, fa > fb, fa >= fb), uint32(uint16(int8(int16(oracle.FloatToInt32(x)))))}
	return bf, w, i8
}

// probeInputs are the inputs of TestLegalizeTypesMeaning: edge integers (narrow limits, integers
// that int -> f32 -> bf16 would round twice, the i32 and u32 extremes), f32 values at and
// beside bf16 rounding ties, NaNs with payload only in the low bits, subnormals, overflow, and
// random values of every kind.
func probeInputs(n int) (pq []int32, xs []float32, ab []uint16) {
	rng := rand.New(rand.NewSource(16))
	ints := []int32{0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, 65535, 65536, math.MaxInt32, math.MinInt32,
		0x01000001, 0x02020001, -0x02020001, 0x7fffffc0, 0x7fffff80, int32(-0x7fffffc0), 0x00ff8000, 0x01018000, 8, 9, 7, -8}
	xbits := []uint32{0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0x7fc00001, 0x7f800001, 0xff800001, 0xffffffff,
		0x7f800000, 0x00000001, 0x00008000, 0x00018000, 0x007fffff, 0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0x80000000, 0x4f000000, 0xcf000000}
	bfs := []uint16{0, 0x8000, 1, 0x8001, 0x7f, 0x80, 0x3f80, 0x3f81, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x4000, 0xc040}
	for i := 0; i < n; i++ {
		var p, q int32
		switch {
		case i < len(ints)*len(ints):
			p, q = ints[i/len(ints)], ints[i%len(ints)]
		case i%2 == 0:
			p, q = int32(rng.Uint32()), int32(rng.Uint32())>>rng.Intn(32)
		default: // magnitudes from 2^24 up, where int -> bf16 rounds
			p, q = int32(rng.Uint32()|1<<24)>>rng.Intn(8), int32(rng.Intn(1<<16)-1<<15)
		}
		x := math.Float32frombits(rng.Uint32())
		if i < len(xbits) {
			x = math.Float32frombits(xbits[i])
		} else if i%3 == 0 {
			x = float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(40))))
		}
		a, b := uint16(rng.Uint32()), uint16(rng.Uint32())
		if i < len(bfs)*len(bfs) {
			a, b = bfs[i/len(bfs)], bfs[i%len(bfs)]
		}
		pq, xs, ab = append(pq, p, q), append(xs, x), append(ab, a, b)
	}
	return pq, xs, ab
}

// TestLegalizeTypesMeaning runs the lowered probe on the CPU (interp) for many inputs and checks
// every output against the oracle: the lowering's integer rounding to bf16, its int -> bf16
// conversion, bf16 loads and stores, and the re-extension of narrow values. NaN results of bf16
// arithmetic compare as NaN (the payload is the device's).
func TestLegalizeTypesMeaning(t *testing.T) {
	k, err := typesProbe().Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, caps := range []lower.Caps{{}, {Float16: true, SubgroupSize: 32, DotI8x4: true}} {
		lk, err := lower.Run(k, caps)
		if err != nil {
			t.Fatal(err)
		}
		pq, xs, ab := probeInputs(30_000)
		bad := 0
		for i := range xs {
			m := &interp{k: lk, vals: map[*ir.Inst]uint64{}, vars: make([]uint64, len(lk.Vars))}
			m.bufs = [][]uint64{{uint64(uint32(pq[2*i])), uint64(uint32(pq[2*i+1]))}, {bitsOf(xs[i])}, {uint64(ab[2*i]), uint64(ab[2*i+1])},
				make([]uint64, 15), make([]uint64, 15), make([]uint64, 15)}
			m.run(t, lk.Body)
			bf, w, i8 := probeWant(pq[2*i], pq[2*i+1], xs[i], ab[2*i], ab[2*i+1])
			var diffs []string
			for j, want := range bf {
				got := uint16(m.bufs[3][j])
				nan := func(h uint16) bool { return h&0x7f80 == 0x7f80 && h&0x7f != 0 }
				if got != want && !(j >= 3 && j <= 12 && nan(got) && nan(want)) {
					diffs = append(diffs, fmt.Sprintf("bf16 output %d = %#04x, want %#04x", j, got, want))
				}
			}
			for j, want := range w {
				if got := uint32(m.bufs[4][j]); got != want {
					diffs = append(diffs, fmt.Sprintf("u32 output %d = %#x, want %#x", j, got, want))
				}
			}
			for j, want := range i8 {
				if got := int8(m.bufs[5][j]); got != want {
					diffs = append(diffs, fmt.Sprintf("i8 output %d = %d, want %d", j, got, want))
				}
			}
			if len(diffs) > 0 {
				if bad < 5 {
					t.Errorf("p=%d q=%d x=%g (%#08x) a=%#04x b=%#04x: %s", pq[2*i], pq[2*i+1], xs[i], math.Float32bits(xs[i]), ab[2*i], ab[2*i+1], strings.Join(diffs, "; "))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Fatalf("caps %+v: %d of %d inputs differ", caps, bad, len(xs))
		}
	}
}

// TestLegalizeTypesRemovesThem: after lowering no value, variable, buffer or shared element of
// bf16 or a narrow value type is left, whatever the target, so no backend needs to know them.
func TestLegalizeTypesRemovesThem(t *testing.T) {
	k := typesProbe()
	sh := k.Shared("sh", dsl.BF16, 4)
	acc := k.Var("acc", k.Const(dsl.BF16, 1))
	n := k.Var("n", k.Const(dsl.U8, 250))
	i := k.LocalIndex()
	sh.Store(i, acc.Get().Mul(2))
	acc.Set(sh.Load(i))
	n.Set(n.Get().Add(10))
	built, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, caps := range []lower.Caps{{}, {Float16: true}} {
		lk, err := lower.Run(built, caps)
		if err != nil {
			t.Fatal(err)
		}
		value := func(s ir.Scalar) bool { return s.IsNarrow() || s == ir.BF16 }
		ir.Walk(lk.Body, func(in *ir.Inst) bool {
			if value(in.Type.Scalar) {
				t.Errorf("%s still has type %s", in.Op, in.Type)
			}
			return true
		})
		for _, v := range lk.Vars {
			if value(v.Type.Scalar) {
				t.Errorf("variable %s still %s", v.Name, v.Type)
			}
		}
		for _, b := range lk.Buffers {
			if b.Elem.Scalar == ir.BF16 {
				t.Errorf("buffer %s still %s", b.Name, b.Elem)
			}
		}
		if lk.Buffers[2].Elem != ir.S(ir.U16) || lk.Buffers[5].Elem != ir.S(ir.I8) {
			t.Errorf("bf16 buffer lowered to %s, i8 buffer to %s: want u16 and i8", lk.Buffers[2].Elem, lk.Buffers[5].Elem)
		}
		if lk.Shared[0].Elem != ir.TF32 {
			t.Errorf("bf16 shared array lowered to %s, want f32", lk.Shared[0].Elem)
		}
	}
}

// TestLegalizeTypesUnsupported: an operation the pass does not know on a bf16 value is an error
// at the user's line, not a silent miscompile (a bitcast between f16 and bf16 verifies, and the
// DSL refuses it, but IR written by hand can hold one).
func TestLegalizeTypesUnsupported(t *testing.T) {
	_, file, line, _ := runtime.Caller(0)
	pos := ir.Pos{File: file, Line: line}
	h := &ir.Inst{Op: ir.OpConst, Type: ir.TF16, Aux: 0x3c00, Pos: pos}
	bc := &ir.Inst{Op: ir.OpBitcast, Type: ir.S(ir.BF16), Args: []*ir.Inst{h}, Pos: pos}
	idx := &ir.Inst{Op: ir.OpConst, Type: ir.TU32, Pos: pos}
	st := &ir.Inst{Op: ir.OpStore, Mem: ir.MemBuffer, Args: []*ir.Inst{idx, bc}, Pos: pos}
	k := &ir.Kernel{Name: "bad", WorkgroupSize: [3]uint32{1, 1, 1}, Pos: pos,
		Buffers: []*ir.Buffer{{Name: "y", Elem: ir.S(ir.BF16), Access: ir.WriteOnly}},
		Body:    &ir.Block{Insts: []*ir.Inst{h, bc, idx, st}}}
	if err := ir.Verify(k); err != nil {
		t.Fatalf("the hand-written kernel does not verify: %v", err)
	}
	_, err := lower.Run(k, lower.Caps{})
	if err == nil {
		t.Fatal("a bitcast from f16 to bf16 was lowered")
	}
	want := fmt.Sprintf("%s:%d", filepath.Base(file), line)
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "bitcast from f16 to bf16") {
		t.Errorf("error %q does not name %s and the bitcast", err, want)
	}
}
