package kernels

import (
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The legacy 32-value formats (q4_0, q4_1, q5_0, q5_1, q8_0, q8_1) and the sign/2-bit formats
// q1_0 (128 values) and q2_0 (64 values); layouts in oracle/quant_legacy.go. Value performs the
// oracle's float operations in its order: (q-8)*d, q*d + m (two roundings), ... DotQ8 pairs a
// block with q8_1 activation blocks: the codes are rebuilt as packed signed bytes, four values
// a word, in the activation's value order, and multiplied through DotI8x4, the exact integer
// sums then scaled as oracle.MatVecQ8's partial formulas say.

func init() {
	for _, x := range []struct {
		f  Format
		in weightInputs
	}{
		{Format{Type: oracle.Q4_0, Value: valueQ4_0, Unit: unitQ4_0, DotQ8: dotQ4_0}, weightInputs{halves: []int{0}}},
		{Format{Type: oracle.Q4_1, Value: valueQ4_1, Unit: unitQ4_1, DotQ8: dotQ4_1}, weightInputs{halves: []int{0, 2}}},
		{Format{Type: oracle.Q5_0, Value: valueQ5_0, Unit: unitQ5_0, DotQ8: dotQ5_0}, weightInputs{halves: []int{0}}},
		{Format{Type: oracle.Q5_1, Value: valueQ5_1, Unit: unitQ5_1, DotQ8: dotQ5_1}, weightInputs{halves: []int{0, 2}}},
		{Format{Type: oracle.Q8_0, Value: valueQ8_0, Unit: unitQ8_0, DotQ8: dotQ8_0}, weightInputs{halves: []int{0}}},
		{Format{Type: oracle.Q8_1, Value: valueQ8_1, Unit: unitQ8_1}, weightInputs{halves: []int{0, 2}}},
		{Format{Type: oracle.Q1_0, Value: valueQ1_0, Unit: unitQ1_0, DotQ8: dotQ1_0}, weightInputs{halves: []int{0}}},
		{Format{Type: oracle.Q2_0, Value: valueQ2_0, Unit: unitQ2_0, DotQ8: dotQ2_0}, weightInputs{halves: []int{0}}},
	} {
		RegisterFormat(x.f)
		registerWeightCells(x.f, x.in)
	}
}

// nibble32 is the 4-bit code of value j of a q4_0-style nibble array at byte offset qs (j < 16:
// low nibble of byte j, else high nibble of byte j-16), as u32.
func nibble32(w Bytes, qs, j dsl.Value) dsl.Value {
	b := w.U8(qs.Add(j.And(15)))
	return b.Shr(j.Shr(4).Shl(2)).And(15)
}

// bitAt is bit j of the bytes at offset at (bit j%8 of byte j/8), as u32.
func bitAt(w Bytes, at, j dsl.Value) dsl.Value {
	return w.U8(at.Add(j.Shr(3))).Shr(j.And(7)).And(1)
}

// y = float32(int32(nibble) - 8) * d
func valueQ4_0(d *Decoder, off, j dsl.Value) dsl.Value {
	q := nibble32(d.W, off.Add(2), j).Bitcast(dsl.I32).Sub(8)
	return q.F32().Mul(d.W.F16(off))
}

// y = float32(float32(nibble) * d) + m
func valueQ4_1(d *Decoder, off, j dsl.Value) dsl.Value {
	q := nibble32(d.W, off.Add(4), j)
	return q.F32().Mul(d.W.F16(off)).Add(d.W.F16(off.Add(2)))
}

// y = float32(int32(nibble | bit j of qh << 4) - 16) * d
func valueQ5_0(d *Decoder, off, j dsl.Value) dsl.Value {
	q := nibble32(d.W, off.Add(6), j).Or(bitAt(d.W, off.Add(2), j).Shl(4))
	return q.Bitcast(dsl.I32).Sub(16).F32().Mul(d.W.F16(off))
}

// y = float32(float32(nibble | bit j of qh << 4) * d) + m
func valueQ5_1(d *Decoder, off, j dsl.Value) dsl.Value {
	q := nibble32(d.W, off.Add(8), j).Or(bitAt(d.W, off.Add(4), j).Shl(4))
	return q.F32().Mul(d.W.F16(off)).Add(d.W.F16(off.Add(2)))
}

// y = float32(int8 q) * d
func valueQ8_0(d *Decoder, off, j dsl.Value) dsl.Value {
	return d.W.I8(off.Add(2).Add(j)).F32().Mul(d.W.F16(off))
}

// y = float32(int8 q) * d (s, at offset 2, is not a value's business)
func valueQ8_1(d *Decoder, off, j dsl.Value) dsl.Value {
	return d.W.I8(off.Add(4).Add(j)).F32().Mul(d.W.F16(off))
}

// y = bit j set ? d : -d
func valueQ1_0(d *Decoder, off, j dsl.Value) dsl.Value {
	dv := d.W.F16(off)
	return d.K.Select(bitAt(d.W, off.Add(2), j).Eq(1), dv, dv.Neg())
}

// y = float32(int32(2-bit field j) - 1) * d (0*d keeps d's sign, as ggml's product does)
func valueQ2_0(d *Decoder, off, j dsl.Value) dsl.Value {
	b := d.W.U8(off.Add(2).Add(j.Shr(2)))
	q := b.Shr(j.And(3).Shl(1)).And(3).Bitcast(dsl.I32).Sub(1)
	return q.F32().Mul(d.W.F16(off))
}

// nibbleWords splits 4 words of q4_0-style nibbles (16 bytes) into the 8 packed words of codes
// 0..31 in value order: the low nibbles are values 0..15, the high ones 16..31.
func nibbleWords(qs []dsl.Value) []dsl.Value {
	out := make([]dsl.Value, 8)
	for i := 0; i < 4; i++ {
		out[i] = qs[i].And(0x0f0f0f0f)
		out[4+i] = qs[i].Shr(4).And(0x0f0f0f0f)
	}
	return out
}

// fifthBits puts bit v of qh at bit 4 of the byte of value v in the 8 packed code words.
func fifthBits(q []dsl.Value, qh dsl.Value) []dsl.Value {
	out := make([]dsl.Value, len(q))
	for i := range q {
		out[i] = q[i].Or(spread4(qh.Shr(4 * i).And(15)).Shl(4))
	}
	return out
}

// partialTerm is float32(i32 s) * (dw*da): one partial term.
func partialTerm(s, dw, da dsl.Value) dsl.Value { return s.F32().Mul(dw.Mul(da)) }

// S = sum (q-8)*a; partial = f(S) * (dw*da)
func dotQ4_0(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	q := nibbleWords(blockWords(d.W, off, 2, 4, 18))
	for i := range q {
		q[i] = subBytes(q[i], 8)
	}
	s := dotWords(d.K, q, q81CodeWords(a, aoff))
	return partialTerm(s, d.W.F16(off), q81Scale(a, aoff))
}

// S = sum q*a; A = sum a; partial = (f(S) * (dw*da)) + (f(A) * (mw*da))
func dotQ4_1(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	q := nibbleWords(blockWords(d.W, off, 4, 4, 20))
	aw := q81CodeWords(a, aoff)
	da := q81Scale(a, aoff)
	s := partialTerm(dotWords(d.K, q, aw), d.W.F16(off), da)
	return s.Add(partialTerm(sumWords(d.K, aw), d.W.F16(off.Add(2)), da))
}

// S = sum (q-16)*a; partial = f(S) * (dw*da)
func dotQ5_0(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	w := blockWords(d.W, off, 2, 5, 22) // qh, then the 16 bytes of nibbles
	q := fifthBits(nibbleWords(w[1:]), w[0])
	for i := range q {
		q[i] = subBytes(q[i], 16)
	}
	s := dotWords(d.K, q, q81CodeWords(a, aoff))
	return partialTerm(s, d.W.F16(off), q81Scale(a, aoff))
}

// S = sum q*a; A = sum a; partial = (f(S) * (dw*da)) + (f(A) * (mw*da))
func dotQ5_1(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	w := blockWords(d.W, off, 4, 5, 24)
	q := fifthBits(nibbleWords(w[1:]), w[0])
	aw := q81CodeWords(a, aoff)
	da := q81Scale(a, aoff)
	s := partialTerm(dotWords(d.K, q, aw), d.W.F16(off), da)
	return s.Add(partialTerm(sumWords(d.K, aw), d.W.F16(off.Add(2)), da))
}

// S = sum q*a; partial = f(S) * (dw*da)
func dotQ8_0(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	s := dotWords(d.K, blockWords(d.W, off, 2, 8, 34), q81CodeWords(a, aoff))
	return partialTerm(s, d.W.F16(off), q81Scale(a, aoff))
}

// q81Part is the index of the activation block at aoff within a weight block of per of them
// (the DotQ8 convention of weights.go).
func q81Part(aoff dsl.Value, per int) dsl.Value {
	return aoff.Div(36).And(per - 1)
}

// Per 32 values: S = sum (2*bit-1)*a; partial = f(S) * (dw*da)
func dotQ1_0(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	bits := d.W.U32(off.Add(2).Add(q81Part(aoff, 4).Shl(2))) // bit v: value 32*part + v
	aw := q81CodeWords(a, aoff)
	q := make([]dsl.Value, 8)
	for i := range q {
		// bytes 0/1 -> 0xff/0x01: -1/+1
		q[i] = spread4(bits.Shr(4 * i).And(15)).Mul(0xfe).Xor(0xffffffff)
	}
	return partialTerm(dotWords(d.K, q, aw), d.W.F16(off), q81Scale(a, aoff))
}

// Per 32 values: S = sum (q-1)*a; partial = f(S) * (dw*da)
func dotQ2_0(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	at := off.Add(2).Add(q81Part(aoff, 2).Shl(3)) // 8 bytes: 32 two-bit fields
	aw := q81CodeWords(a, aoff)
	q := make([]dsl.Value, 8)
	for u := 0; u < 2; u++ {
		w := d.W.U32(at.Add(4 * u))
		for m := 0; m < 4; m++ {
			x := w.Shr(8 * m)
			t := x.And(3).Or(x.Shl(6).And(0x300)).Or(x.Shl(12).And(0x30000)).Or(x.Shl(18).And(0x3000000))
			q[4*u+m] = subBytes(t, 1)
		}
	}
	return partialTerm(dotWords(d.K, q, aw), d.W.F16(off), q81Scale(a, aoff))
}

// ---- float-path dot units (oracle/dot_units.go) ----
//
// Each reads the unit's codes with whole-word loads (blockWords) and its scale once.

// oneGroup is the single 32-value group of a unit with scale s (and min m when hasMin).
func oneGroup(codes []dsl.Value, s, m dsl.Value, hasMin bool) Unit {
	return Unit{Codes: codes, Groups: []Group{{N: 32, Scale: s, Min: m, HasMin: hasMin}}}
}

// nibbleCodes returns the 32 codes of 4 words of q4_0-style nibbles (the low nibbles are values
// 0..15) minus bias, as f32; when qh is given, bit j of it is the fifth bit of value j.
func nibbleCodes(qs []dsl.Value, qh *dsl.Value, bias int32) []dsl.Value {
	out := make([]dsl.Value, 32)
	for j := range out {
		q := qs[(j%16)/4].Shr(8*(j%4) + 4*(j/16)).And(15)
		if qh != nil {
			q = q.Or(qh.Shr(j).And(1).Shl(4))
		}
		out[j] = q.Bitcast(dsl.I32).Sub(bias).F32()
	}
	return out
}

// byteCodes returns the signed bytes of the words, in byte order, as f32.
func byteCodes(words []dsl.Value) []dsl.Value {
	out := make([]dsl.Value, 4*len(words))
	for j := range out {
		out[j] = words[j/4].Shl(24 - 8*(j%4)).Bitcast(dsl.I32).Shr(24).F32()
	}
	return out
}

func unitQ4_0(d *Decoder, off, _ dsl.Value) Unit {
	return oneGroup(nibbleCodes(blockWords(d.W, off, 2, 4, 18), nil, 8), d.W.F16(off), dsl.Value{}, false)
}

func unitQ4_1(d *Decoder, off, _ dsl.Value) Unit {
	return oneGroup(nibbleCodes(blockWords(d.W, off, 4, 4, 20), nil, 0), d.W.F16(off), d.W.F16(off.Add(2)), true)
}

func unitQ5_0(d *Decoder, off, _ dsl.Value) Unit {
	w := blockWords(d.W, off, 2, 5, 22) // qh, then the 16 bytes of nibbles
	return oneGroup(nibbleCodes(w[1:], &w[0], 16), d.W.F16(off), dsl.Value{}, false)
}

func unitQ5_1(d *Decoder, off, _ dsl.Value) Unit {
	w := blockWords(d.W, off, 4, 5, 24)
	return oneGroup(nibbleCodes(w[1:], &w[0], 0), d.W.F16(off), d.W.F16(off.Add(2)), true)
}

func unitQ8_0(d *Decoder, off, _ dsl.Value) Unit {
	return oneGroup(byteCodes(blockWords(d.W, off, 2, 8, 34)), d.W.F16(off), dsl.Value{}, false)
}

func unitQ8_1(d *Decoder, off, _ dsl.Value) Unit {
	return oneGroup(byteCodes(blockWords(d.W, off, 4, 8, 36)), d.W.F16(off), dsl.Value{}, false)
}

// q1_0: code = 2*bit - 1; unit u holds bits 32u .. 32u+31, one (2-aligned) word.
func unitQ1_0(d *Decoder, off, u dsl.Value) Unit {
	bits := d.W.U32(off.Add(2).Add(u.Shl(2)))
	codes := make([]dsl.Value, 32)
	for j := range codes {
		codes[j] = bits.Shr(j).And(1).Shl(1).Bitcast(dsl.I32).Sub(1).F32()
	}
	return oneGroup(codes, d.W.F16(off), dsl.Value{}, false)
}

// q2_0: code = 2-bit field - 1; unit u holds fields 32u .. 32u+31, two (2-aligned) words.
func unitQ2_0(d *Decoder, off, u dsl.Value) Unit {
	at := off.Add(2).Add(u.Shl(3))
	w := []dsl.Value{d.W.U32(at), d.W.U32(at.Add(4))}
	codes := make([]dsl.Value, 32)
	for j := range codes {
		codes[j] = w[j/16].Shr(2 * (j % 16)).And(3).Bitcast(dsl.I32).Sub(1).F32()
	}
	return oneGroup(codes, d.W.F16(off), dsl.Value{}, false)
}
