package cpu

// The differential test against host execution of the CUDA text the C-family printer writes for
// the same lowered kernel (package backends/cfamily/host): the printer's os_* helpers define the
// results the IR leaves undefined (x/0, float to int out of range), and the executor must give
// the same bytes. The kernels are race-free (each invocation writes its own elements) so every
// byte is compared.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

var (
	f32t, i32t, u32t, f16t, f64t, boolt = ir.TF32, ir.TI32, ir.TU32, ir.TF16, ir.TF64, ir.TBool
)

// hostKernels are race-free kernels over every value type, operation, conversion and bit cast:
// invocation g writes out[g*stride + i] for its i-th result.
// hostCase is a kernel of hostKernels and how each of its result words compares.
type hostCase struct {
	irtest.Case
	kinds *[]byte // per result word: 'u' exact, 'f' an f32, 'h' two f16s, 'd' an f64's low word (its high word follows)
}

func hostKernels() []hostCase {
	const stride = 256
	// put stores v (any value type) as u32 words at out[g*stride + n...].
	type putter func(v *ir.Inst)
	newPut := func(b *irtest.Builder, out int, g *ir.Inst, kinds *[]byte) putter {
		n := 0
		var put putter
		var kind byte // how the next stored word compares (see sameResult)
		words := 0    // words stored for the value being put
		put = func(v *ir.Inst) {
			t := v.Type
			if kind == 0 {
				words = 0
				switch t.Scalar {
				case ir.F32:
					kind = 'f'
				case ir.F16:
					kind = 'h'
				case ir.F64:
					kind = 'd'
				default:
					kind = 'u'
				}
				defer func() { kind = 0 }()
			}
			switch {
			case t.Scalar == ir.Bool:
				put(b.Op(ir.OpSelect, ir.Vec(ir.U32, int(t.Lanes)), v, b.C(ir.Vec(ir.U32, int(t.Lanes)), 1), b.C(ir.Vec(ir.U32, int(t.Lanes)), 0)))
				return
			case t.Lanes > 1 && t.Scalar != ir.F16:
				for i := 0; i < int(t.Lanes); i++ {
					put(b.Ext(v, i))
				}
				return
			case t.Scalar == ir.F16 && t.Lanes%2 == 1:
				var lanes []*ir.Inst
				if t.Lanes == 1 {
					lanes = []*ir.Inst{v}
				} else {
					for i := 0; i < int(t.Lanes); i++ {
						lanes = append(lanes, b.Ext(v, i))
					}
				}
				for len(lanes) > 0 {
					pair := []*ir.Inst{lanes[0], b.Bits(f16t, 0x3c00)}
					if len(lanes) > 1 {
						pair[1] = lanes[1]
						lanes = lanes[1:]
					}
					lanes = lanes[1:]
					put(b.Op(ir.OpCompose, ir.Vec(ir.F16, 2), pair...))
				}
				return
			case t.Scalar == ir.F16:
				put(b.Bitcast(ir.Vec(ir.U32, int(t.Lanes)/2), v))
				return
			case t.Scalar == ir.F64:
				put(b.Bitcast(ir.Vec(ir.U32, 2), v))
				return
			case t.Scalar != ir.U32:
				v = b.Bitcast(u32t, v)
			}
			if n >= stride {
				panic("hostKernels: too many results")
			}
			if kind == 'd' && words%2 == 1 {
				*kinds = append(*kinds, 'D')
			} else {
				*kinds = append(*kinds, kind)
			}
			words++
			b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(stride)), b.U32(uint32(n))), v)
			n++
		}
		return put
	}
	arith := func(b *irtest.Builder, put putter, x, y *ir.Inst) {
		t := x.Type
		s := t.Scalar
		for _, op := range []ir.Op{ir.OpNeg, ir.OpAbs} {
			if op == ir.OpNeg && s == ir.U32 || op == ir.OpAbs && s == ir.U32 {
				continue
			}
			put(b.Un(op, x))
		}
		for _, op := range []ir.Op{ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpMin, ir.OpMax} {
			put(b.Bin(op, x, y))
			put(b.Bin(op, y, x))
		}
		for _, op := range []ir.Op{ir.OpEq, ir.OpNe, ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe} {
			put(b.Bin(op, x, y))
		}
		put(b.Op(ir.OpSelect, t, b.Bin(ir.OpLt, x, y), x, y))
		if s.IsFloat() {
			put(b.Un(ir.OpSqrt, x))
			put(b.Un(ir.OpFloor, x))
			put(b.Bin(ir.OpAdd, b.Bin(ir.OpMul, x, y), b.C(t, 1.5)))
			return
		}
		put(b.Un(ir.OpNot, x))
		for _, op := range []ir.Op{ir.OpRem, ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr} {
			put(b.Bin(op, x, y))
			put(b.Bin(op, y, x))
		}
	}
	// load reads operands x and y of type t from the f32 and i32 inputs.
	load := func(b *irtest.Builder, t ir.Type, inF, inI int, g *ir.Inst) (*ir.Inst, *ir.Inst) {
		var xs, ys []*ir.Inst
		for i := 0; i < int(t.Lanes); i++ {
			at := func(k int) *ir.Inst { return b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(8)), b.U32(uint32(k))) }
			var x, y *ir.Inst
			switch t.Scalar {
			case ir.I32:
				x, y = b.Ld(inI, at(i)), b.Ld(inI, at(i+4))
			case ir.U32:
				x, y = b.Bitcast(u32t, b.Ld(inI, at(i))), b.Bitcast(u32t, b.Ld(inI, at(i+4)))
			case ir.F32:
				x, y = b.Ld(inF, at(i)), b.Ld(inF, at(i+4))
			default:
				x, y = b.Conv(t.Elem(), b.Ld(inF, at(i))), b.Conv(t.Elem(), b.Ld(inF, at(i+4)))
			}
			xs, ys = append(xs, x), append(ys, y)
		}
		if t.Lanes == 1 {
			return xs[0], ys[0]
		}
		return b.Op(ir.OpCompose, t, xs...), b.Op(ir.OpCompose, t, ys...)
	}
	kernel := func(name string, f64 bool, body func(b *irtest.Builder, put putter, inF, inI int, g *ir.Inst)) hostCase {
		hc := hostCase{kinds: new([]byte)}
		hc.Case = irtest.Case{Name: name, F64: f64, Build: func(b *irtest.Builder) {
			*hc.kinds = nil
			inF := b.Buffer("inf", f32t, ir.ReadOnly)
			inI := b.Buffer("ini", i32t, ir.ReadOnly)
			out := b.Buffer("out", u32t, ir.WriteOnly)
			g := b.GID()
			body(b, newPut(b, out, g, hc.kinds), inF, inI, g)
		}}
		return hc
	}
	var cases []hostCase
	for _, t := range []ir.Type{f32t, i32t, u32t, f16t, f64t, ir.Vec(ir.F32, 3), ir.Vec(ir.I32, 2), ir.Vec(ir.U32, 4), ir.Vec(ir.F16, 2), ir.Vec(ir.F16, 3), ir.Vec(ir.F64, 2)} {
		name := fmt.Sprintf("arith_%s%d", t.Scalar, t.Lanes)
		cases = append(cases, kernel(name, t.Scalar == ir.F64, func(b *irtest.Builder, put putter, inF, inI int, g *ir.Inst) {
			x, y := load(b, t, inF, inI, g)
			arith(b, put, x, y)
		}))
	}
	kinds := []ir.Scalar{ir.I32, ir.U32, ir.F16, ir.F32, ir.F64}
	for _, lanes := range []int{1, 2} {
		cases = append(cases, kernel("convert_"+string(rune('0'+lanes)), true, func(b *irtest.Builder, put putter, inF, inI int, g *ir.Inst) {
			for _, from := range kinds {
				x, _ := load(b, ir.Vec(from, lanes), inF, inI, g)
				if lanes == 1 {
					x, _ = load(b, ir.S(from), inF, inI, g)
				}
				for _, to := range kinds {
					put(b.Conv(ir.Type{Scalar: to, Lanes: x.Type.Lanes}, x))
				}
			}
		}))
	}
	cases = append(cases, kernel("bitcast", true, func(b *irtest.Builder, put putter, inF, inI int, g *ir.Inst) {
		x, y := load(b, ir.Vec(ir.F32, 4), inF, inI, g)
		// f16 lanes without NaNs: a NaN's payload is not part of the contract, and these bits
		// are compared as other types.
		fin := b.Op(ir.OpSelect, ir.Vec(ir.F32, 4), b.Bin(ir.OpNe, x, x), b.C(ir.Vec(ir.F32, 4), 0), x)
		h := b.Conv(ir.Vec(ir.F16, 4), fin)
		d := b.Bitcast(f64t, b.Op(ir.OpCompose, ir.Vec(ir.F32, 2), b.Ext(x, 0), b.Ext(y, 1)))
		put(d)
		put(b.Bitcast(ir.Vec(ir.F16, 2), b.Ext(x, 2)))
		put(b.Bitcast(ir.Vec(ir.F16, 4), d))
		put(b.Bitcast(f64t, h))
		put(b.Bitcast(ir.Vec(ir.I32, 2), h))
		put(b.Bitcast(ir.Vec(ir.F32, 4), b.Op(ir.OpCompose, ir.Vec(ir.F64, 2), d, b.Bin(ir.OpAdd, d, d))))
		put(b.Bitcast(ir.Vec(ir.F16, 4), b.Bitcast(ir.Vec(ir.U32, 2), d)))
		put(b.Bitcast(u32t, b.Bitcast(ir.Vec(ir.F16, 2), b.Ext(x, 3))))
	}))
	cases = append(cases, kernel("bool_select_dot", false, func(b *irtest.Builder, put putter, inF, inI int, g *ir.Inst) {
		x, y := load(b, ir.Vec(ir.I32, 4), inF, inI, g)
		f, _ := load(b, ir.Vec(ir.F32, 2), inF, inI, g)
		p := b.Bin(ir.OpLt, x, y)
		q := b.Bin(ir.OpGt, x, b.C(ir.Vec(ir.I32, 4), 3))
		put(b.Bin(ir.OpAnd, p, q))
		put(b.Bin(ir.OpOr, p, q))
		put(b.Bin(ir.OpXor, p, q))
		put(b.Bin(ir.OpEq, p, q))
		put(b.Bin(ir.OpNe, p, q))
		put(b.Un(ir.OpNot, p))
		put(b.Op(ir.OpSelect, ir.Vec(ir.I32, 4), p, x, y))
		put(b.Op(ir.OpSelect, ir.Vec(ir.I32, 4), b.Ext(q, 2), x, y))
		put(b.Op(ir.OpSelect, ir.Vec(ir.F32, 2), b.Bin(ir.OpNe, f, f), f, b.C(ir.Vec(ir.F32, 2), -0.0)))
		xu := b.Bitcast(ir.Vec(ir.U32, 4), x)
		yu := b.Bitcast(ir.Vec(ir.U32, 4), y)
		for i := 0; i < 4; i++ {
			put(b.Op(ir.OpDotI8x4, i32t, b.Ext(xu, i), b.Ext(yu, 3-i)))
		}
		put(b.Op(ir.OpDotI8x4, i32t, b.U32(0x80808080), b.U32(0x80808080)))
		put(b.Op(ir.OpDotI8x4, i32t, b.U32(0x7f80017f), b.U32(0xff7f80ff)))
	}))
	return cases
}

func TestDifferentialHost(t *testing.T) {
	opts := host.Options{SubgroupSize: SubgroupSize, Timeout: 2 * time.Minute}
	if err := host.Available(opts); err != nil {
		t.Skipf("host execution: %v", err)
	}
	for _, c := range hostKernels() {
		t.Run(c.Name, func(t *testing.T) {
			k, err := c.Kernel()
			if err != nil {
				t.Fatal(err)
			}
			low, err := lower.Run(k, Caps)
			if err != nil {
				t.Fatal(err)
			}
			src, err := cfamily.Print(low, cuda.Dialect)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := host.Compile(src, host.CUDA, low.Name, len(low.Buffers), len(low.Params), opts)
			if err != nil {
				t.Fatal(err)
			}
			code, err := compile(low, SubgroupSize)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(11, uint64(len(c.Name))))
			for trial := 0; trial < 4; trial++ {
				bufs := [][]byte{fill(r, f32t, 64*8+8, false), fill(r, i32t, 64*8+8, false), make([]byte, 4*64*256)}
				groups := [3]uint32{1, 1, 1}
				res, err := prog.Run(bufs, nil, groups, low.WorkgroupSize, opts)
				if err != nil {
					t.Fatal(err)
				}
				got := [][]byte{bufs[0], bufs[1], append([]byte(nil), bufs[2]...)}
				if err := code.run(t.Context(), 1, got, nil, groups); err != nil {
					t.Fatal(err)
				}
				kinds := *c.kinds
				for e := 0; e < 64*256; e++ {
					j := e % 256
					if j >= len(kinds) {
						continue
					}
					if !sameResult(kinds[j], got[2][4*e:], res.Buffers[2][4*e:]) {
						t.Errorf("trial %d: invocation %d, result %d (%c): cpu %x, host %x", trial, e/256, j, kinds[j], got[2][4*e:4*e+8], res.Buffers[2][4*e:4*e+8])
						break
					}
				}
			}
		})
	}
}

// sameResult compares one result word (two for an f64) of kind k: any NaN equals any NaN (NaN
// payloads are not part of the contract).
func sameResult(k byte, a, b []byte) bool {
	u, v := binary.LittleEndian.Uint32(a), binary.LittleEndian.Uint32(b)
	switch k {
	case 'f':
		return u == v || isNaN32(u) && isNaN32(v)
	case 'h':
		for _, sh := range []uint{0, 16} {
			x, y := u>>sh&0xffff, v>>sh&0xffff
			if x != y && !(isNaN16(x) && isNaN16(y)) {
				return false
			}
		}
		return true
	case 'd':
		x, y := binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)
		return x == y || math.IsNaN(math.Float64frombits(x)) && math.IsNaN(math.Float64frombits(y))
	case 'D': // checked with its low word
		return true
	}
	return u == v
}

func isNaN32(u uint32) bool { return u&0x7f800000 == 0x7f800000 && u&0x7fffff != 0 }
func isNaN16(u uint32) bool { return u&0x7c00 == 0x7c00 && u&0x3ff != 0 }
