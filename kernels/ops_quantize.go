package kernels

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// quantize_q8_1: f32 activations to q8_1 blocks (ggml's quantize_row_q8_1_ref, oracle
// QuantizeQ8_1), the activation format of the integer matvec path. Per block of 32 values:
//
//	amax = 0; for each v in order: a = |v|; amax = amax > a ? amax : a   (sequential, as ggml)
//	d    = amax / 127;  id = d != 0 ? 1/d : 0
//	q[j] = int8 of (int32 of roundf(x[j]*id))   (roundf: half away from zero; the int32 conversion
//	       gives math.MinInt32 for NaN and out-of-range values, int8 keeps its low byte)
//	block = {f16(d), f16(float32(sum of q) * d), q[0..31]}   (36 bytes)
//
// The sequential amax is kept as it is (not a tree): with a NaN in the block it gives the max of
// the values after the last NaN, which a tree would not.

func init() {
	Register(Cell{Op: "quantize_q8_1", Type: oracle.F32, Build: QuantizeQ8_1, Cases: quantizeQ8_1Cases})
}

// q8_1 block geometry.
const (
	q81Values = 32 // values per block
	q81Words  = 9  // 36 bytes per block, as u32 words: {d | s<<16}, then 8 words of 4 int8
)

// roundHalfAway is C's roundf (oracle's roundAway): round half away from zero, exactly. For
// |f| < 2^23 the fraction |f| - floor(|f|) is exact and compared with 0.5; larger values, ±Inf
// and NaN come out as they went in. The sign (also of a zero result) is f's.
func roundHalfAway(k *dsl.Kernel, f dsl.Value) dsl.Value {
	a := absBits(f)
	fl := a.Floor()
	r := k.Select(a.Sub(fl).Ge(0.5), fl.Add(1), fl)
	return r.Bitcast(dsl.U32).Or(f.Bitcast(dsl.U32).And(0x80000000)).Bitcast(dsl.F32)
}

// cvtI32 is oracle.FloatToInt32 (C's (int)f on x86): truncation toward zero; NaN and values
// outside [-2^31, 2^31) give math.MinInt32, selected explicitly since GPU conversions leave them
// undefined.
func cvtI32(k *dsl.Kernel, f dsl.Value) dsl.Value {
	bad := f.Ne(f).Or(f.Ge(2147483648)).Or(f.Lt(-2147483648))
	return k.Select(bad, k.I32(math.MinInt32), f.I32())
}

// QuantizeQ8_1 builds quantize_q8_1 with s.Lanes invocations per workgroup. A workgroup
// quantizes max(1, T/32) consecutive blocks: the lanes load the values (coalesced) into shared
// memory, one lane per block folds amax in ggml's order, every lane quantizes its values, and
// the lanes write the blocks' 9 words each (coalesced), the block's first lane summing the q.
//
// Bindings: 0 x (f32, 32*nb), 1 y (u32, 9*nb: the q8_1 bytes). Parameters: nb (u32, blocks).
// Dispatch (ceil(nb / max(1, T/32)), 1, 1). y = oracle.QuantizeQ8_1(x).
func QuantizeQ8_1(s Schedule) *dsl.Kernel {
	T := s.Lanes
	bpw := max(1, T/q81Values) // blocks per workgroup
	E := bpw * q81Values       // values per workgroup
	k := dsl.New("quantize_q8_1", T)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.U32, dsl.Write)
	nb := k.Param("nb", dsl.U32)
	xs := k.Shared("xs", dsl.F32, E)
	ds := k.Shared("ds", dsl.F32, bpw)
	qs := k.Shared("qs", dsl.I32, E)
	lane := k.LocalIndex().Named("lane")
	base := k.WorkgroupID(dsl.X).Mul(uint32(bpw)).Named("first_block")

	k.For("e", lane, E, T, func(e dsl.Value) {
		v := k.Var("v", float32(0))
		k.If(base.Add(e.Shr(5)).Lt(nb), func() { v.Set(x.Load(base.Mul(q81Values).Add(e))) })
		xs.Store(e, v.Get())
	})
	k.Barrier()
	k.If(lane.Lt(uint32(bpw)), func() {
		amax := k.Var("amax", float32(0))
		k.For("j", 0, q81Values, 1, func(j dsl.Value) {
			a := absBits(xs.Load(lane.Mul(q81Values).Add(j)))
			amax.Set(k.Select(amax.Get().Gt(a), amax.Get(), a))
		})
		ds.Store(lane, amax.Get().Div(127))
	})
	k.Barrier()
	k.For("e", lane, E, T, func(e dsl.Value) {
		d := ds.Load(e.Shr(5))
		id := k.Select(d.Ne(0), k.F32(1).Div(d), k.F32(0))
		q := cvtI32(k, roundHalfAway(k, xs.Load(e).Mul(id)))
		qs.Store(e, q.Shl(24).Shr(24)) // the int8, sign-extended
	})
	k.Barrier()
	k.For("w", lane, q81Words*bpw, T, func(w dsl.Value) {
		b := w.Div(q81Words)
		kw := w.Sub(b.Mul(q81Words))
		blk := base.Add(b)
		k.If(blk.Lt(nb), func() {
			word := k.Var("word", uint32(0))
			k.If(kw.Eq(0), func() {
				sum := k.Var("sum", k.I32(0))
				k.For("j", 0, q81Values, 1, func(j dsl.Value) {
					sum.Set(sum.Get().Add(qs.Load(b.Mul(q81Values).Add(j))))
				})
				d := ds.Load(b)
				sd := sum.Get().F32().Mul(d)
				word.Set(F32ToHalf(k, d).Or(F32ToHalf(k, sd).Shl(16)))
			}).Else(func() {
				q0 := b.Mul(q81Values).Add(kw.Sub(1).Mul(4))
				packed := k.U32(0)
				for t := 0; t < 4; t++ {
					packed = packed.Or(qs.Load(q0.Add(t)).Bitcast(dsl.U32).And(0xff).Shl(8 * t))
				}
				word.Set(packed)
			})
			y.Store(blk.Mul(q81Words).Add(kw), word.Get())
		})
	})
	return k
}

// q81Block returns one block of 32 inputs of the given kind; the kinds cover ggml's edge cases.
func q81Block(rng *rand.Rand, kind string) []float32 {
	x := randRow(rng, q81Values, "normal")
	switch kind {
	case "normal":
	case "zeros":
		x = randRow(rng, q81Values, "zeros")
	case "ties": // d = 1 exactly: x*id = x, so halves round away from zero
		for i := range x {
			x[i] = float32(i%16)/2 - 4 + 0.5*float32(i%2)
		}
		x[7] = 127
		x[8], x[9], x[10], x[11] = 0.5, -0.5, 2.5, -2.5
	case "huge": // d's f16 overflows to Inf; the values still quantize
		for i := range x {
			x[i] *= 1e37
		}
		x[3] = maxFinite
	case "tiny": // d is subnormal as f32 and 0 as f16; 1/d overflows to Inf
		x = randRow(rng, q81Values, "tiny")
	case "underflow": // amax/127 rounds to 0: id = 0
		for i := range x {
			x[i] = 0
		}
		x[5], x[6] = minSub, -minSub
	case "inf": // amax = Inf: d = Inf, id = 0, Inf*0 = NaN -> int min -> 0; s = 0*Inf = NaN
		x[13] = posInf
	case "nan_mid": // amax restarts after the NaN: earlier, larger values wrap around int8
		x[0], x[1] = 3000, -1e10
		x[20] = nanF
	case "nan_last": // amax = NaN: d, id and every q are NaN -> 0
		x[31] = nanF
	case "f16_edges": // d near the f16 subnormal and overflow thresholds
		for i := range x {
			x[i] = float32(i) * 1e-7
		}
		x[31] = 65504 * 127
	default:
		panic("kernels: q8_1 block kind " + kind)
	}
	return x
}

func quantizeQ8_1Cases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(112))
	bpw := max(1, s.Lanes/q81Values)
	kinds := []string{"normal", "zeros", "ties", "huge", "tiny", "underflow", "inf", "nan_mid", "nan_last", "f16_edges"}
	shapes := []struct {
		name   string
		blocks []string
	}{
		{"one", []string{"normal"}},
		{"edges", kinds},
		{"ragged", repeatKinds([]string{"normal", "normal", "nan_mid"}, 17)}, // no multiple of any blocks-per-workgroup
		{"many", repeatKinds([]string{"normal"}, 37)},
	}
	var out []Case
	for _, sh := range shapes {
		var x []float32
		for _, kind := range sh.blocks {
			x = append(x, q81Block(rng, kind)...)
		}
		nb := len(sh.blocks)
		want := make([]byte, nb*q81Words*4)
		if err := oracle.QuantizeQ8_1(x, want); err != nil {
			return nil, fmt.Errorf("quantize_q8_1 %s: %w", sh.name, err)
		}
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%dblocks", sh.name, nb),
			Buffers: [][]byte{f32Bytes(x), make([]byte, len(want))},
			Params:  []uint32{uint32(nb)},
			Groups:  [3]uint32{uint32((nb + bpw - 1) / bpw), 1, 1},
			Outputs: []int{1},
			Want:    [][]byte{want},
			Elem:    []string{"q8_1"},
		})
	}
	return out, nil
}

// repeatKinds returns n block kinds cycling through kinds.
func repeatKinds(kinds []string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = kinds[i%len(kinds)]
	}
	return out
}
