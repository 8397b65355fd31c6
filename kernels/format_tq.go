package kernels

import (
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The ternary decoders: ports of oracle/quant_tq.go. Both give y = float(t - 1) * d with the
// trit t in {0, 1, 2} and d the block's f16 scale.
//
//	tq1_0 {qs[48], qh[4], d}  values 0..159: trit j>>5 of qs[j&31]; 160..239: trit (j-160)>>4 of
//	                          qs[32 + (j-160)&15]; 240..255: trit (j-240)>>2 of qh[(j-240)&3];
//	                          trit n of byte q is ((q * 3^n mod 256) * 3) >> 8
//	tq2_0 {qs[64], d}         value j: bits 2*((j>>5)&3) of qs[(j>>7)*32 + j&31], minus 1

func init() {
	tq1 := Format{Type: oracle.TQ1_0, Value: valueTQ1_0}
	tq2 := Format{Type: oracle.TQ2_0, Value: valueTQ2_0, DotQ8: dotTQ2_0}
	RegisterFormat(tq1)
	RegisterFormat(tq2)
	registerWeightCells(tq1, weightInputs{halves: []int{52}})
	registerWeightCells(tq2, weightInputs{halves: []int{64}})
}

func valueTQ1_0(d *Decoder, off, j dsl.Value) dsl.Value {
	k, w := d.K, d.W
	// Where value j's trit lives: byte index and trit number n (0..4), by range of j.
	j2, j3 := j.Sub(160), j.Sub(240)
	in2, in3 := j.Ge(160), j.Ge(240)
	byteIdx := k.Select(in3, j3.And(3).Add(48), k.Select(in2, j2.And(15).Add(32), j.And(31)))
	n := k.Select(in3, j3.Shr(2), k.Select(in2, j2.Shr(4), j.Shr(5)))
	// 3^n: bytes 1, 3, 9, 27 of a constant, and 81 for n = 4.
	p3 := k.Select(n.Eq(4), k.U32(81), k.U32(0x1b090301).Shr(n.Shl(3)).And(0xff))
	t := w.U8(off.Add(byteIdx)).Mul(p3).And(0xff).Mul(3).Shr(8)
	return t.Bitcast(dsl.I32).Sub(1).F32().Mul(w.F16(off.Add(52)))
}

func valueTQ2_0(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	q := w.U8(off.Add(j.Shr(7).Shl(5)).Add(j.And(31))).Shr(j.Shr(5).And(3).Shl(1)).And(3)
	return q.Bitcast(dsl.I32).Sub(1).F32().Mul(w.F16(off.Add(64)))
}

// dotTQ2_0 is the q8_K partial of a tq2_0 block: f(sum (q-1)*a) * (dw*da). The four 2-bit fields
// at bits 2l of a qs word become four int8 values q-1 as ((w>>2l) & 0x03030303) + 0x7f7f7f7f,
// xor 0x80808080 (no byte carries: 0x7f + 3 < 0x100).
func dotTQ2_0(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	k, w := d.K, d.W
	aw := aoff.Shr(2).Add(1)
	var s dsl.Value
	qs := qWords(w, off, 0, 16, 66)
	for i, qw := range qs { // qs word i: bytes 4i..4i+3
		h, m := i/8, 4*(i%8)
		for l := 0; l < 4; l++ {
			q := qw.Shr(2 * l).And(0x03030303).Add(0x7f7f7f7f).Xor(0x80808080)
			e := h*128 + l*32 + m // the value of byte 0 of this word
			p := k.DotI8x4(q, a.Word(aw.Add(e/4)))
			if i == 0 && l == 0 {
				s = p
			} else {
				s = s.Add(p)
			}
		}
	}
	da := a.Word(aoff.Shr(2)).Bitcast(dsl.F32)
	return s.F32().Mul(w.F16(off.Add(64)).Mul(da))
}
