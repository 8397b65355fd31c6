package kernels

import (
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The K-quants: 256-value super-blocks with sub-block scales (q2_K, q3_K, q4_K, q5_K, q6_K) and
// the activation format q8_K; layouts in oracle/quant_k.go. Value computes the sub-block scale
// and min as the oracle's dequantizer does (d*float(sc), dmin*float(m): each one rounding) and
// then the value (dl*float(q) - ml, or dl*float(q)). DotQ8 pairs a block with one q8_K block:
// the whole weight block is loaded as words once, each 16- or 32-value sub-block's codes are
// rebuilt as packed signed bytes and multiplied through DotI8x4, and the exact integer sums are
// scaled as oracle.MatVecQ8's formulas say. The activation's sums per 16 values (q8_K bsums,
// which the oracle's quantizer writes as the exact sums of the codes) give the min terms.

func init() {
	for _, x := range []struct {
		f  Format
		in weightInputs
	}{
		{Format{Type: oracle.Q2_K, Value: valueQ2_K, DotQ8: dotQ2_K}, weightInputs{halves: []int{80, 82}}},
		{Format{Type: oracle.Q3_K, Value: valueQ3_K, DotQ8: dotQ3_K}, weightInputs{halves: []int{108}}},
		{Format{Type: oracle.Q4_K, Value: valueQ4_K, DotQ8: dotQ4_K}, weightInputs{halves: []int{0, 2}}},
		{Format{Type: oracle.Q5_K, Value: valueQ5_K, DotQ8: dotQ5_K}, weightInputs{halves: []int{0, 2}}},
		{Format{Type: oracle.Q6_K, Value: valueQ6_K, DotQ8: dotQ6_K}, weightInputs{halves: []int{208}}},
		{Format{Type: oracle.Q8_K, Value: valueQ8_K}, weightInputs{floats: []int{0}}},
	} {
		RegisterFormat(x.f)
		registerWeightCells(x.f, x.in)
	}
}

// ---- values ----

// q2_K: dl = d*float(sc&15), ml = dmin*float(sc>>4) (sc = scales[j/16]); y = (dl*float(q)) - ml,
// q = 2 bits at shift 2*((j%128)/32) of qs[(j/128)*32 + j%32].
func valueQ2_K(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	sc := w.U8(off.Add(j.Shr(4)))
	dl := w.F16(off.Add(80)).Mul(sc.And(15).F32())
	ml := w.F16(off.Add(82)).Mul(sc.Shr(4).F32())
	q := w.U8(off.Add(16).Add(j.Shr(7).Shl(5)).Add(j.And(31))).Shr(j.Shr(5).And(3).Shl(1)).And(3)
	return dl.Mul(q.F32()).Sub(ml)
}

// q3_K: dl = d*float(scale-32) (6-bit scale j/16); y = dl*float(v), v = 2 bits of qs minus 4
// where the hmask bit is clear.
func valueQ3_K(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	sb := j.Shr(4)
	lo := w.U8(off.Add(96).Add(sb.And(7))).Shr(sb.Shr(3).Shl(2)).And(15)
	hi := w.U8(off.Add(104).Add(sb.And(3))).Shr(sb.Shr(2).Shl(1)).And(3)
	scale := lo.Or(hi.Shl(4)).Bitcast(dsl.I32).Sub(32)
	dl := w.F16(off.Add(108)).Mul(scale.F32())
	shift := j.Shr(5).And(3) // the 2-bit field and, with 4*(j/128), the hmask bit
	q := w.U8(off.Add(32).Add(j.Shr(7).Shl(5)).Add(j.And(31))).Shr(shift.Shl(1)).And(3)
	h := w.U8(off.Add(j.And(31))).Shr(j.Shr(7).Shl(2).Add(shift)).And(1)
	v := q.Or(h.Shl(2)).Bitcast(dsl.I32).Sub(4)
	return dl.Mul(v.F32())
}

// kScaleMin is ggml's get_scale_min_k4 for a dynamic sub-block sb (0..7) of the 12 scale bytes
// at offset at: the 6-bit scale and min, as u32.
func kScaleMin(w Bytes, at, sb dsl.Value) (sc, m dsl.Value) {
	k := w.k
	b1 := w.U8(at.Add(sb))        // q[sb]
	b2 := w.U8(at.Add(sb).Add(4)) // q[sb+4]
	b3 := w.U8(at.Add(sb.Xor(4))) // q[sb-4] where sb >= 4
	low := sb.Lt(4)
	sc = k.Select(low, b1.And(63), b2.And(15).Or(b3.Shr(6).Shl(4)))
	m = k.Select(low, b2.And(63), b2.Shr(4).Or(b1.Shr(6).Shl(4)))
	return sc, m
}

// q4_K: d1 = d*float(sc), m1 = dmin*float(m) of sub-block j/32; y = (d1*float(q)) - m1, q the
// nibble (low for even sub-blocks) of qs[(j/64)*32 + j%32].
func valueQ4_K(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	sb := j.Shr(5)
	sc, m := kScaleMin(w, off.Add(4), sb)
	d1 := w.F16(off).Mul(sc.F32())
	m1 := w.F16(off.Add(2)).Mul(m.F32())
	q := w.U8(off.Add(16).Add(j.Shr(6).Shl(5)).Add(j.And(31))).Shr(sb.And(1).Shl(2)).And(15)
	return d1.Mul(q.F32()).Sub(m1)
}

// q5_K: as q4_K with a fifth bit, bit j/32 of qh[j%32].
func valueQ5_K(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	sb := j.Shr(5)
	sc, m := kScaleMin(w, off.Add(4), sb)
	d1 := w.F16(off).Mul(sc.F32())
	m1 := w.F16(off.Add(2)).Mul(m.F32())
	lo := w.U8(off.Add(48).Add(j.Shr(6).Shl(5)).Add(j.And(31))).Shr(sb.And(1).Shl(2)).And(15)
	hi := w.U8(off.Add(16).Add(j.And(31))).Shr(sb).And(1)
	q := lo.Or(hi.Shl(4))
	return d1.Mul(q.F32()).Sub(m1)
}

// q6_K: y = (d*float(int8 scales[j/16])) * float(q-32), q = 4 low bits from ql and 2 high bits
// from qh.
func valueQ6_K(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	half := j.Shr(7)     // n
	g := j.Shr(5).And(3) // which 32 of the 128
	l := j.And(31)       // position within the 32
	lo := w.U8(off.Add(half.Shl(6)).Add(g.And(1).Shl(5)).Add(l)).Shr(g.Shr(1).Shl(2)).And(15)
	hi := w.U8(off.Add(128).Add(half.Shl(5)).Add(l)).Shr(g.Shl(1)).And(3)
	q := lo.Or(hi.Shl(4)).Bitcast(dsl.I32).Sub(32)
	sc := w.I8(off.Add(192).Add(j.Shr(4)))
	return w.F16(off.Add(208)).Mul(sc.F32()).Mul(q.F32())
}

// q8_K: y = d * float(int8 q), d an f32 (blocks are 292 bytes: d is word-aligned).
func valueQ8_K(d *Decoder, off, j dsl.Value) dsl.Value {
	dv := d.W.Word(off.Shr(2)).Bitcast(dsl.F32)
	return dv.Mul(d.W.I8(off.Add(4).Add(j)).F32())
}

// ---- integer path with q8_K ----

// blockByte returns byte i of the block whose words are ws, as u32.
func blockByte(ws []dsl.Value, i int) dsl.Value {
	return ws[i/4].Shr(8 * (i % 4)).And(0xff)
}

// blockHalf returns the f16 at byte i (even) of the block whose words are ws, as f32.
func blockHalf(k *dsl.Kernel, ws []dsl.Value, i int) dsl.Value {
	return HalfToF32(k, ws[i/4].Shr(8*(i%4)).And(0xffff))
}

// kPartial is the two-term K-quant partial (f(S)*(dw*da)) - (f(M)*(mw*da)).
func kPartial(s, m, dw, mw, da dsl.Value) dsl.Value {
	return partialTerm(s, dw, da).Sub(partialTerm(m, mw, da))
}

// imulAdd returns acc + c*x for i32 values (acc may be the zero Value: then c*x).
func imulAdd(acc, c, x dsl.Value) dsl.Value {
	p := c.Mul(x)
	if acc.IR() == nil {
		return p
	}
	return acc.Add(p)
}

// q2_K with q8_K: S = sum_s sc[s]*(sum q*a), M = sum_s m[s]*(sum a) over 16 sub-blocks of 16.
func dotQ2_K(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	k := d.K
	ws := blockWords(d.W, off, 0, 21, 84) // scales[16], qs[64], d, dmin
	var s, m dsl.Value
	for sb := 0; sb < 16; sb++ {
		base := 4 + (sb/8)*8 + 4*(sb%2) // the 16 bytes holding this sub-block's fields
		shift := 2 * ((sb % 8) / 2)
		q := make([]dsl.Value, 4)
		for i := range q {
			q[i] = ws[base+i].Shr(shift).And(0x03030303)
		}
		sqa := dotWords(k, q, q8KWords(a, aoff, 16*sb, 4))
		sc := blockByte(ws, sb).Bitcast(dsl.I32)
		s = imulAdd(s, sc.And(15), sqa)
		m = imulAdd(m, sc.Shr(4), q8KBsum(a, aoff, sb))
	}
	return kPartial(s, m, blockHalf(k, ws, 80), blockHalf(k, ws, 82), q8KScale(a, aoff))
}

// q3_K with q8_K: S = sum_s (sc[s]-32)*(sum q*a), q = low 2 bits - 4 where the hmask bit is 0.
func dotQ3_K(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	k := d.K
	ws := blockWords(d.W, off, 0, 28, 110) // hmask[32], qs[64], scales[12], d
	var s dsl.Value
	for sb := 0; sb < 16; sb++ {
		c, j, half := sb/8, (sb%8)/2, sb%2
		q := make([]dsl.Value, 4)
		for i := range q {
			lo := ws[8+c*8+half*4+i].Shr(2 * j).And(0x03030303)
			h := ws[half*4+i].Shr(4*c + j).And(0x01010101)
			q[i] = subBytes(lo.Or(h.Shl(2)), 4)
		}
		sqa := dotWords(k, q, q8KWords(a, aoff, 16*sb, 4))
		var lo dsl.Value
		if sb < 8 {
			lo = blockByte(ws, 96+sb).And(15)
		} else {
			lo = blockByte(ws, 96+sb-8).Shr(4)
		}
		hi := blockByte(ws, 96+8+sb%4).Shr(2 * (sb / 4)).And(3)
		scale := lo.Or(hi.Shl(4)).Bitcast(dsl.I32).Sub(32)
		s = imulAdd(s, scale, sqa)
	}
	return partialTerm(s, blockHalf(k, ws, 108), q8KScale(a, aoff))
}

// kScaleMinAt is get_scale_min_k4 for a constant sub-block sb of the scale bytes 4..15 of the
// block whose words are ws, as i32.
func kScaleMinAt(ws []dsl.Value, sb int) (sc, m dsl.Value) {
	q := func(i int) dsl.Value { return blockByte(ws, 4+i) }
	if sb < 4 {
		sc, m = q(sb).And(63), q(sb+4).And(63)
	} else {
		sc = q(sb + 4).And(15).Or(q(sb - 4).Shr(6).Shl(4))
		m = q(sb + 4).Shr(4).Or(q(sb).Shr(6).Shl(4))
	}
	return sc.Bitcast(dsl.I32), m.Bitcast(dsl.I32)
}

// q4_K and q5_K with q8_K: S = sum_s sc[s]*(sum q*a), M = sum_s m[s]*(sum a) over 8 sub-blocks
// of 32. qh is the word index of q5_K's fifth bits (0 for q4_K), ql that of the nibbles.
func dotK45(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value, typeSize, qh, ql int) dsl.Value {
	k := d.K
	ws := blockWords(d.W, off, 0, typeSize/4, typeSize)
	var s, m dsl.Value
	for sb := 0; sb < 8; sb++ {
		q := make([]dsl.Value, 8)
		for i := range q {
			q[i] = ws[ql+(sb/2)*8+i].Shr(4 * (sb % 2)).And(0x0f0f0f0f)
			if qh > 0 {
				q[i] = q[i].Or(ws[qh+i].Shr(sb).And(0x01010101).Shl(4))
			}
		}
		sqa := dotWords(k, q, q8KWords(a, aoff, 32*sb, 8))
		sc, mn := kScaleMinAt(ws, sb)
		s = imulAdd(s, sc, sqa)
		m = imulAdd(m, mn, q8KBsum(a, aoff, 2*sb).Add(q8KBsum(a, aoff, 2*sb+1)))
	}
	return kPartial(s, m, blockHalf(k, ws, 0), blockHalf(k, ws, 2), q8KScale(a, aoff))
}

func dotQ4_K(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	return dotK45(d, off, a, aoff, 144, 0, 4) // d, dmin, scales[12], qs[128]
}

func dotQ5_K(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	return dotK45(d, off, a, aoff, 176, 4, 12) // d, dmin, scales[12], qh[32], qs[128]
}

// q6_K with q8_K: S = sum_s sc[s]*(sum (q-32)*a), sc int8, over 16 sub-blocks of 16.
func dotQ6_K(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	k := d.K
	ws := blockWords(d.W, off, 0, 53, 210) // ql[128], qh[64], scales[16], d
	var s dsl.Value
	for sb := 0; sb < 16; sb++ {
		c, g, half := sb/8, (sb%8)/2, sb%2
		q := make([]dsl.Value, 4)
		for i := range q {
			lo := ws[(c*64+(g&1)*32+16*half)/4+i].Shr(4 * (g >> 1)).And(0x0f0f0f0f)
			hi := ws[32+c*8+half*4+i].Shr(2 * g).And(0x03030303)
			q[i] = subBytes(lo.Or(hi.Shl(4)), 32)
		}
		sqa := dotWords(k, q, q8KWords(a, aoff, 16*sb, 4))
		sc := ws[48+sb/4].Shl(24 - 8*(sb%4)).Bitcast(dsl.I32).Shr(24)
		s = imulAdd(s, sc, sqa)
	}
	return partialTerm(s, blockHalf(k, ws, 208), q8KScale(a, aoff))
}
