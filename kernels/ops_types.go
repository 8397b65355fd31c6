package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// types: the value types beyond f32, i32, u32 and f16, one element per invocation
// (eachElement): bf16 conversions (ties, NaN, Inf, subnormals, integers that a plain int -> f32
// conversion would round twice), bf16 arithmetic, bf16 buffers, shared arrays and variables;
// i8, u8, i16 and u16 wrapping arithmetic, conversions, bitcasts, narrow buffers written without
// widening, and variables; and the vec4 horizontal ops (Dot, LaneSum, LaneMax,
// LaneMin). oracle.TypesRef lists every output. No reduction, so no result depends on the
// schedule.

func init() {
	Register(Cell{Op: "types", Type: oracle.BF16, Build: TypesKernel, Cases: typesCases,
		Feature: "bf16 and narrow integer values, vector helpers"})
}

// narrowKinds are the narrow integer types with the constant each adds (oracle.TypesRef's c).
var narrowKinds = []struct {
	t      dsl.Type
	name   string
	c      int
	max    int
	signed bool
}{
	{dsl.I8, "i8", 100, math.MaxUint8, true},
	{dsl.U8, "u8", 200, math.MaxUint8, false},
	{dsl.I16, "i16", 30000, math.MaxUint16, true},
	{dsl.U16, "u16", 60000, math.MaxUint16, false},
}

// narrowOf converts v to the narrow type t.
func narrowOf(v dsl.Value, t dsl.Type) dsl.Value {
	switch t {
	case dsl.I8:
		return v.I8()
	case dsl.U8:
		return v.U8()
	case dsl.I16:
		return v.I16()
	}
	return v.U16()
}

// cmpWord is oracle's comparison word of s and t: lt | le<<1 | eq<<2 | ne<<3 | gt<<4 | ge<<5.
func cmpWord(k *dsl.Kernel, s, t dsl.Value) dsl.Value {
	w := k.U32(0)
	for i, c := range []dsl.Value{s.Lt(t), s.Le(t), s.Eq(t), s.Ne(t), s.Gt(t), s.Ge(t)} {
		w = w.Or(k.Select(c, k.U32(1<<i), k.U32(0)))
	}
	return w
}

// TypesKernel builds the types cell (oracle.TypesRef).
//
// Bindings: 0 x (f32, n), 1 ab (bf16, 2n: a, b per element), 2 pq (i32, 2n: p, q), 3 vw
// (vec4 of f32, 2n: v, w), then the outputs 4 ybf (bf16, 8n), 5 yf (f32, 22n), 6 yw (u32, 16n),
// 7 y8 (i8, 20n), 8 yu8 (u8, 20n), 9 y16 (i16, 20n), 10 yu16 (u16, 20n). Parameters: n (u32).
// Dispatch ElemGroups(n, T).
func TypesKernel(s Schedule) *dsl.Kernel {
	T := s.Lanes
	k := dsl.New("types", T)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	ab := k.Buffer("ab", dsl.BF16, dsl.Read)
	pq := k.Buffer("pq", dsl.I32, dsl.Read)
	vw := k.Buffer("vw", dsl.Vec(dsl.F32, 4), dsl.Read)
	ybf := k.Buffer("ybf", dsl.BF16, dsl.Write)
	yf := k.Buffer("yf", dsl.F32, dsl.Write)
	yw := k.Buffer("yw", dsl.U32, dsl.Write)
	yn := make([]dsl.Array, len(narrowKinds))
	for j, nk := range narrowKinds {
		yn[j] = k.Buffer("y"+nk.name, nk.t, dsl.Write)
	}
	n := k.Param("n", dsl.U32)
	shBF := k.Shared("sh_bf16", dsl.BF16, T)
	lid := k.LocalIndex()
	store := func(y dsl.Array, i dsl.Value, per int, vals []dsl.Value) {
		base := i.Mul(uint32(per))
		for j, v := range vals {
			y.Store(base.Add(uint32(j)), v)
		}
	}
	eachElement(k, n, T, func(i dsl.Value) {
		i2 := i.Mul(2)
		xi := x.Load(i)
		a, b := ab.Load(i2), ab.Load(i2.Add(1))
		p, q := pq.Load(i2), pq.Load(i2.Add(1))
		v, w := vw.Load(i2), vw.Load(i2.Add(1))

		shBF.Store(lid, xi.BF16())
		store(ybf, i, oracle.TypesBF16Per, []dsl.Value{
			xi.BF16(), p.BF16(), p.U32().BF16(), p.I16().BF16(), p.U16().Bitcast(dsl.BF16),
			shBF.Load(lid), q.BF16(), q.U32().BF16(),
		})

		acc := k.Var("acc_bf16", a)
		k.For("j", 0, 3, 1, func(dsl.Value) { acc.Set(acc.Get().Mul(b).Add(a)) })
		bf := []dsl.Value{a.Add(b), a.Sub(b), a.Mul(b), a.Div(b), a.Sqrt(), a.Floor(), a.Min(b), a.Max(b),
			a.Neg(), a.Abs(), acc.Get(), a.Add(1.5)}
		fs := make([]dsl.Value, 0, oracle.TypesF32Per)
		for _, r := range bf {
			fs = append(fs, r.F32())
		}
		fs = append(fs, v.Dot(w), v.LaneSum(), v.LaneMax(), v.LaneMin(),
			p.I8().F32(), p.U16().F32(), a.F16().F32(), p.I8().F16().F32(), xi.F16().BF16().F32(), b.Sqrt().F32())
		store(yf, i, oracle.TypesF32Per, fs)

		words := make([]dsl.Value, 0, oracle.TypesWordPer)
		for _, nk := range narrowKinds {
			words = append(words, cmpWord(k, narrowOf(p, nk.t), narrowOf(q, nk.t)))
		}
		words = append(words, cmpWord(k, a, b),
			a.Bitcast(dsl.U16).U32(), p.I8().I32().Bitcast(dsl.U32), p.I8().U32(), p.U16().I32().Bitcast(dsl.U32),
			p.I8().Bitcast(dsl.U8).U32(), p.U16().Bitcast(dsl.I16).I32().Bitcast(dsl.U32),
			xi.U8().U32(), xi.I16().I32().Bitcast(dsl.U32), a.I8().I32().Bitcast(dsl.U32),
			p.U8().I16().I32().Bitcast(dsl.U32), p.I16().I8().U16().U32())
		store(yw, i, oracle.TypesWordPer, words)

		for j, nk := range narrowKinds {
			s, t := narrowOf(p, nk.t), narrowOf(q, nk.t)
			d := k.Select(t.Eq(0), k.Const(nk.t, 1), t)
			var abs dsl.Value
			if nk.signed {
				abs = s.Abs()
			} else {
				abs = s.Mul(nk.max) // s * max, wrapping
			}
			acc := k.Var("acc_"+nk.name, k.Const(nk.t, 0))
			k.For("j", 0, 3, 1, func(dsl.Value) { acc.Set(acc.Get().Mul(s).Add(t)) })
			store(yn[j], i, oracle.TypesIntPer, []dsl.Value{
				s.Add(t), s.Sub(t), s.Mul(t), s.Div(d), s.Rem(d), s.Shl(t), s.Shr(t), k.Const(nk.t, 0).Sub(s), abs,
				s.Not(), s.And(t), s.Or(t), s.Xor(t), s.Min(t), s.Max(t), narrowOf(xi, nk.t), narrowOf(a, nk.t),
				narrowOf(s.I32().Sub(1000), nk.t), acc.Get(), s.Add(nk.c),
			})
		}
	})
	return k
}

// typesInputs returns the inputs of n elements: the edge values first (f32 values at, beside and
// between bf16 rounding ties, NaNs whose payload is only in the low bits, subnormals, the
// overflow boundary, and values that convert to narrow integers at their limits; bf16 patterns of
// every class; integers at the narrow limits and where int -> f32 -> bf16 would round twice),
// then random values of every magnitude.
func typesInputs(rng *rand.Rand, n int) (x []float32, ab []uint16, pq []int32, vw [][4]float32) {
	xBits := []uint32{
		0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0xbf808000, 0xbf818000, // ties and beside
		0x7fc00001, 0x7f800001, 0xff800001, 0xffffffff, 0x7fffffff, 0x7f800000, 0xff800000, // NaN, Inf
		0x00000000, 0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x00007fff, 0x007fffff, 0x807f8000,
		0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0xff7f8000, 0x7f7f0000, // largest values, overflow ties
	}
	xVals := []float32{127.9, 128, -128.5, -129, 255.5, 256, 32767.9, -32768.9, 65535.9, 65536, 0x1p31, -0x1p31,
		3e9, -3e9, 1e10, 0.5, -0.5, -1, 2.5, 3.5}
	abEdge := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80, 0x3f81, 0x4000, 0xc040,
		0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x3f80, 0x3c00, 0x4b80}
	pqEdge := []int32{0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535, 65536,
		math.MaxInt32, math.MinInt32, 0x01000001, 0x02020001, 0x7fffffc0, 0x7fffff80, -0x02020001, 7, 0,
		9, 8, -8, 15, 16, 31, 0x00ff8000, 0x01018000, int32(-0x7fffffc0), 200, 100, -100}
	x = make([]float32, n)
	for i := range x {
		switch {
		case i < len(xBits):
			x[i] = math.Float32frombits(xBits[i])
		case i < len(xBits)+len(xVals):
			x[i] = xVals[i-len(xBits)]
		case i%3 == 0:
			x[i] = math.Float32frombits(rng.Uint32()) // every pattern, NaNs included
		case i%3 == 1:
			x[i] = randRow(rng, 1, "wide")[0]
		default:
			x[i] = float32(rng.NormFloat64() * 300)
		}
	}
	ab = make([]uint16, 2*n)
	for i := range ab {
		switch {
		case i < len(abEdge):
			ab[i] = abEdge[i]
		case i < 2*len(abEdge): // each edge value against each other's class
			ab[i] = abEdge[(i*7)%len(abEdge)]
		case i%4 == 0:
			ab[i] = uint16(rng.Uint32())
		default:
			ab[i] = uint16(math.Float32bits(float32(rng.NormFloat64()*math.Pow(2, float64(rng.Intn(40)-20)))) >> 16)
		}
	}
	pq = make([]int32, 2*n)
	for i := range pq {
		switch {
		case i < len(pqEdge):
			pq[i] = pqEdge[i]
		case i < 2*len(pqEdge):
			pq[i] = pqEdge[(i*5)%len(pqEdge)]
		case i%3 == 0:
			pq[i] = int32(rng.Uint32())
		default:
			pq[i] = int32(rng.Uint32()) >> rng.Intn(32)
		}
	}
	vw = make([][4]float32, 2*n)
	for i := range vw {
		for l := range vw[i] {
			vw[i][l] = randRow(rng, 1, []string{"normal", "unit", "wide"}[(i+l)%3])[0]
		}
	}
	if len(vw) > 2 {
		vw[1] = [4]float32{posInf, 0, nanF, negZero} // Inf*0 and NaN in a dot, NaN lanes in the max/min
		vw[2] = [4]float32{nanF, 1, -1, nanF}
	}
	return x, ab, pq, vw
}

func typesU16Bytes(x []uint16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func typesU32Bytes(x []uint32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func typesVec4Bytes(x [][4]float32) []byte {
	b := make([]byte, 0, 16*len(x))
	for _, v := range x {
		for _, f := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
	}
	return b
}

func typesNarrowBytes[T int8 | uint8 | int16 | uint16](x []T) []byte {
	var b []byte
	for _, v := range x {
		switch any(v).(type) {
		case int8, uint8:
			b = append(b, byte(v))
		default:
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		}
	}
	return b
}

// typesCases runs oracle.TypesRef over typesInputs for every elemSizes length.
func typesCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(116))
	var out []Case
	for _, sz := range elemSizes() {
		x, ab, pq, vw := typesInputs(rng, sz.n)
		want, err := oracle.TypesRef(x, ab, pq, vw)
		if err != nil {
			return nil, err
		}
		groups := sz.grid(s.Lanes)
		outs := [][]byte{typesU16Bytes(want.BF16), f32Bytes(want.F32), typesU32Bytes(want.Word),
			typesNarrowBytes(want.I8), typesNarrowBytes(want.U8), typesNarrowBytes(want.I16), typesNarrowBytes(want.U16)}
		bufs := [][]byte{f32Bytes(x), typesU16Bytes(ab), i32Bytes(pq), typesVec4Bytes(vw)}
		for _, o := range outs {
			bufs = append(bufs, make([]byte, len(o)))
		}
		out = append(out, Case{
			Name:    sz.name(fmt.Sprintf("n%d", sz.n)),
			Buffers: bufs,
			Params:  []uint32{uint32(sz.n)},
			Groups:  groups,
			Outputs: []int{4, 5, 6, 7, 8, 9, 10},
			Want:    outs,
			Elem:    []string{"bf16", "f32", "u32", "i8", "u8", "i16", "u16"},
		})
	}
	return out, nil
}
