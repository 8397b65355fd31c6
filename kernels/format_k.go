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
		{Format{Type: oracle.Q2_K, Value: valueQ2_K, Unit: unitQ2_K, DotQ8: dotQ2_K}, weightInputs{halves: []int{80, 82}}},
		{Format{Type: oracle.Q3_K, Value: valueQ3_K, Unit: unitQ3_K, DotQ8: dotQ3_K}, weightInputs{halves: []int{108}}},
		{Format{Type: oracle.Q4_K, Value: valueQ4_K, Unit: unitQ4_K, DotQ8: dotQ4_K}, weightInputs{halves: []int{0, 2}}},
		{Format{Type: oracle.Q5_K, Value: valueQ5_K, Unit: unitQ5_K, DotQ8: dotQ5_K}, weightInputs{halves: []int{0, 2}}},
		{Format{Type: oracle.Q6_K, Value: valueQ6_K, Unit: unitQ6_K, DotQ8: dotQ6_K}, weightInputs{halves: []int{208}}},
		{Format{Type: oracle.Q8_K, Value: valueQ8_K, Unit: unitQ8_K}, weightInputs{floats: []int{0}}},
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

// ---- float-path dot units (oracle/dot_units.go) ----
//
// A block is 8 units of 32 values; u (0..7) is a u32 value. Each decoder loads the unit's code
// bytes as whole words, builds each value's code in its own byte of those words with word-wide
// shifts and masks (the fields of four values at once), then takes the bytes out as f32 codes;
// each group's scale (and min) is decoded once from one or two words. The scales and mins are
// the dequantizer's rounded products (d*float(sc), dmin*float(m)); a min is negated, since the
// dequantizer's x - ml is exactly x + (-ml).

// kUnitWords returns n little-endian words of the block at off starting at its byte at (a u32
// value, a multiple of 4): word i holds block bytes at+4i .. at+4i+3. For type sizes that are a
// multiple of 4 these are n aligned loads; otherwise (q3_K, q6_K: off is 2 mod 4 for odd blocks)
// n+1 loads joined in halves where off is 2 mod 4. It never loads past the word that holds the
// block's last byte.
func kUnitWords(b Bytes, off, at dsl.Value, n, typeSize int) []dsl.Value {
	out := make([]dsl.Value, n)
	base := off.Add(at).Shr(2)
	if typeSize%4 == 0 { // off is a multiple of 4
		for i := range out {
			out[i] = b.Word(base.Add(i))
		}
		return out
	}
	odd := off.And(2).Ne(0)
	last := off.Add(typeSize - 1).Shr(2)
	lo := b.Word(base)
	for i := range out {
		next := base.Add(i + 1)
		if i == n-1 {
			next = next.Min(last) // only the last one can lie past the block (when off is aligned)
		}
		hi := b.Word(next)
		out[i] = b.k.Select(odd, lo.Shr(16).Or(hi.Shl(16)), lo)
		lo = hi
	}
	return out
}

// kFieldCodes returns the bytes of the words (each a value's field, below 256), in byte order,
// minus bias, as f32.
func kFieldCodes(words []dsl.Value, bias int32) []dsl.Value {
	out := make([]dsl.Value, 4*len(words))
	for j := range out {
		w := words[j/4]
		var b dsl.Value
		switch j % 4 {
		case 0:
			b = w.And(0xff)
		case 3:
			b = w.Shr(24)
		default:
			b = w.Shr(8 * (j % 4)).And(0xff)
		}
		if bias != 0 {
			b = b.Bitcast(dsl.I32).Sub(bias)
		}
		out[j] = b.F32()
	}
	return out
}

// q2_K (84-byte blocks, off a multiple of 4): unit u reads the 8 words of qs[32*(u/4) .. +31]
// (block bytes 16+32*(u/4) ..) and takes their 2-bit field u%4; its scale bytes 2u and 2u+1
// (one word) and d, dmin (word 20). Two groups of 16: s = d*float(sc&15), m = -(dmin*float(sc>>4)).
func unitQ2_K(d *Decoder, off, u dsl.Value) Unit {
	k := d.K
	base := off.Shr(2)
	q := kUnitWords(d.W, off, u.Shr(2).Shl(5).Add(16), 8, 84)
	shift := u.And(3).Shl(1)
	for i := range q {
		q[i] = q[i].Shr(shift).And(0x03030303)
	}
	sc := d.W.Word(base.Add(u.Shr(1))).Shr(u.And(1).Shl(4)) // scale byte 2u in bits 0..7, 2u+1 in 8..15
	dm := d.W.Word(base.Add(20))
	dd, dmin := HalfToF32(k, dm), HalfToF32(k, dm.Shr(16))
	groups := make([]Group, 2)
	for h := range groups {
		b := sc.Shr(8 * h)
		groups[h] = Group{N: 16, Scale: dd.Mul(b.And(15).F32()), Min: dmin.Mul(b.Shr(4).And(15).F32()).Neg(), HasMin: true}
	}
	return Unit{Codes: kFieldCodes(q, 0), Groups: groups}
}

// q3_K (110-byte blocks): unit u reads the 8 words of hmask[0..31] (block bytes 0..31, bit u is
// each value's third bit) and of qs[32*(u/4) .. +31] (block bytes 32+32*(u/4) .., 2-bit field
// u%4); code = field | bit<<2, minus 4. Two groups of 16 with the 6-bit scales 2u and 2u+1: the
// nibbles in bytes 96+2*(u%4), +1 (low for u < 4, high otherwise) and the 2-bit fields u/2 of
// bytes 104+2*(u%2), +1; s = d*float(scale-32), d at byte 108.
func unitQ3_K(d *Decoder, off, u dsl.Value) Unit {
	hm := blockWords(d.W, off, 0, 8, 110)
	q := kUnitWords(d.W, off, u.Shr(2).Shl(5).Add(32), 8, 110)
	shift := u.And(3).Shl(1)
	for i := range q {
		q[i] = q[i].Shr(shift).And(0x03030303).Or(hm[i].Shr(u).And(0x01010101).Shl(2))
	}
	lo := d.W.U16(off.Add(96).Add(u.And(3).Shl(1))).Shr(u.Shr(2).Shl(2))
	hi := d.W.U16(off.Add(104).Add(u.And(1).Shl(1))).Shr(u.Shr(1).Shl(1))
	dAll := d.W.F16(off.Add(108))
	groups := make([]Group, 2)
	for h := range groups {
		scale := lo.Shr(8 * h).And(15).Or(hi.Shr(8 * h).And(3).Shl(4)).Bitcast(dsl.I32).Sub(32)
		groups[h] = Group{N: 16, Scale: dAll.Mul(scale.F32())}
	}
	return Unit{Codes: kFieldCodes(q, 4), Groups: groups}
}

// unitK45 is q4_K (qh 0) and q5_K: unit u is sub-block u, the nibbles u%2 (low for even u) of
// the 8 words at block byte ql+32*(u/2), for q5_K with bit u of the 8 words at byte qh as the
// fifth bit. One group: the 6-bit scale and min u (get_scale_min_k4) from the scale words 1..3
// (bytes u%4, u%4+4, u%4+8 of the 12 scale bytes), s = d*float(sc), m = -(dmin*float(m)), d and
// dmin in word 0.
func unitK45(d *Decoder, off, u dsl.Value, typeSize, qh, ql int) Unit {
	k := d.K
	base := off.Shr(2) // typeSize is a multiple of 4
	q := kUnitWords(d.W, off, u.Shr(1).Shl(5).Add(ql), 8, typeSize)
	shift := u.And(1).Shl(2)
	var h []dsl.Value
	if qh > 0 {
		h = blockWords(d.W, off, qh, 8, typeSize)
	}
	for i := range q {
		q[i] = q[i].Shr(shift).And(0x0f0f0f0f)
		if qh > 0 {
			q[i] = q[i].Or(h[i].Shr(u).And(0x01010101).Shl(4))
		}
	}
	sh := u.And(3).Shl(3)
	a := d.W.Word(base.Add(1)).Shr(sh) // scale byte u%4
	b := d.W.Word(base.Add(2)).Shr(sh) // u%4 + 4
	c := d.W.Word(base.Add(3)).Shr(sh) // u%4 + 8
	low := u.Lt(4)
	sc := k.Select(low, a.And(63), c.And(15).Or(a.Shr(6).And(3).Shl(4)))
	mn := k.Select(low, b.And(63), c.Shr(4).And(15).Or(b.Shr(6).And(3).Shl(4)))
	dm := d.W.Word(base)
	s := HalfToF32(k, dm).Mul(sc.F32())
	m := HalfToF32(k, dm.Shr(16)).Mul(mn.F32()).Neg()
	return oneGroup(kFieldCodes(q, 0), s, m, true)
}

// q4_K: d, dmin, scales[12], qs[128] (nibbles at byte 16).
func unitQ4_K(d *Decoder, off, u dsl.Value) Unit { return unitK45(d, off, u, 144, 0, 16) }

// q5_K: d, dmin, scales[12], qh[32] (byte 16), qs[128] (nibbles at byte 48).
func unitQ5_K(d *Decoder, off, u dsl.Value) Unit { return unitK45(d, off, u, 176, 16, 48) }

// q6_K (210-byte blocks): unit u (half n = u/4, part p = u%4) reads the 8 words of
// ql[64n+32*(p%2) .. +31] (block bytes from 64n+32*(p%2), nibble p/2) and of qh[32n .. +31]
// (block bytes 128+32n .., 2-bit field p); code = nibble | field<<4, minus 32. Two groups of 16
// with the int8 scales at bytes 192+2u and 193+2u (one 16-bit load): s = d*float(sc), d at 208.
func unitQ6_K(d *Decoder, off, u dsl.Value) Unit {
	n, p := u.Shr(2), u.And(3)
	ql := kUnitWords(d.W, off, n.Shl(6).Add(p.And(1).Shl(5)), 8, 210)
	qh := kUnitWords(d.W, off, n.Shl(5).Add(128), 8, 210)
	lsh, hsh := p.Shr(1).Shl(2), p.Shl(1)
	q := make([]dsl.Value, 8)
	for i := range q {
		q[i] = ql[i].Shr(lsh).And(0x0f0f0f0f).Or(qh[i].Shr(hsh).And(0x03030303).Shl(4))
	}
	sc := d.W.U16(off.Add(192).Add(u.Shl(1)))
	dd := d.W.F16(off.Add(208))
	groups := make([]Group, 2)
	for h := range groups {
		s := sc.Shl(24 - 8*h).Bitcast(dsl.I32).Shr(24)
		groups[h] = Group{N: 16, Scale: dd.Mul(s.F32())}
	}
	return Unit{Codes: kFieldCodes(q, 32), Groups: groups}
}

// q8_K (292-byte blocks, off a multiple of 4): unit u reads the 8 words of qs[32u .. +31] (block
// bytes 4+32u ..), signed bytes; one group, s = d (the f32 in word 0).
func unitQ8_K(d *Decoder, off, u dsl.Value) Unit {
	qs := kUnitWords(d.W, off, u.Shl(5).Add(4), 8, 292)
	return oneGroup(byteCodes(qs), d.W.Word(off.Shr(2)).Bitcast(dsl.F32), dsl.Value{}, false)
}
