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
	tq1 := Format{Type: oracle.TQ1_0, Value: valueTQ1_0, Unit: unitTQ1_0}
	tq2 := Format{Type: oracle.TQ2_0, Value: valueTQ2_0, Unit: unitTQ2_0, DotQ8: dotTQ2_0}
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

// ---- float-path dot units (oracle/dot_units.go) ----
//
// One scale per block: every unit of both types is one group of 32 with the block's d (read
// once, one word), and codes trit-1 in {-1, 0, 1}.

// tqWords returns n little-endian 32-bit words of bytes start .. start+4n-1 (start a u32 byte
// offset, any alignment): n+1 whole-word loads joined with shifts (the shift past 32 bits in two
// steps, so an aligned start takes nothing from the next word). Where last is given, no word
// past word index last is loaded (a word that would be is replaced by word last); otherwise the
// caller knows that the word of byte start+4n is in the buffer.
func tqWords(b Bytes, start dsl.Value, n int, last dsl.Value) []dsl.Value {
	base := start.Shr(2)
	sh := start.And(3).Shl(3)
	up := sh.Xor(31) // 31 - sh
	lo := b.Word(base)
	out := make([]dsl.Value, n)
	for i := range out {
		at := base.Add(i + 1)
		if last.IR() != nil {
			at = at.Min(last)
		}
		hi := b.Word(at)
		out[i] = lo.Shr(sh).Or(hi.Shl(1).Shl(up))
		lo = hi
	}
	return out
}

// tq1Trits returns the trits number n of the four bytes of w, p = 3^n (1..81), each as a u32 in
// 0..2: ((byte*p mod 256) * 3) >> 8 as tritAt, two bytes at a time in 16-bit lanes (255*81 and
// 255*3 fit in a lane, so no lane carries into the next).
func tq1Trits(w, p dsl.Value) [4]dsl.Value {
	ev := w.And(0x00ff00ff).Mul(p).And(0x00ff00ff).Mul(3)        // bytes 0 and 2
	od := w.Shr(8).And(0x00ff00ff).Mul(p).And(0x00ff00ff).Mul(3) // bytes 1 and 3
	return [4]dsl.Value{ev.Shr(8).And(3), od.Shr(8).And(3), ev.Shr(24), od.Shr(24)}
}

// tritCode is the code trit-1 of a trit (u32 0..2) as f32.
func tritCode(t dsl.Value) dsl.Value { return t.Bitcast(dsl.I32).Sub(1).F32() }

// unitTQ1_0 reads 8 words from byte 0 of the block (units 0..4: qs[0..31], value j from byte j,
// all with trit u) or from byte 32 (units 5..7: qs[32..47] and qh[0..3]; word index clamped to
// the block, the words past qh are not used). Values 0..15 of units 5, 6, 7 are trits 0, 2, 4 of
// qs[32..47]; values 16..31 are trits 1, 3 of the same bytes (units 5, 6), and for unit 7 trit
// n of qh[i] for value 16+4n+i (the qh word, trit 0..3 by word). The trit number comes from u
// as 3^n read from a byte table held in two constants; each word gives its four trits with two
// multiplies. Scale: d at byte 52, one group of 32.
func unitTQ1_0(d *Decoder, off, u dsl.Value) Unit {
	k := d.K
	low := u.Lt(5)
	w := tqWords(d.W, off.Add(k.Select(low, k.U32(0), k.U32(32))), 8, off.Add(53).Shr(2))
	// 3^n by unit: byte u of the pair of constants (lo for u < 4, hi for u >= 4).
	pow := func(lo, hi uint32) dsl.Value {
		return k.Select(u.Lt(4), k.U32(lo), k.U32(hi)).Shr(u.And(3).Shl(3)).And(0xff)
	}
	p0 := pow(0x1b090301, 0x51090151) // values 0..15: trit u (u < 5), 0, 2, 4 (u = 5, 6, 7)
	p1 := pow(0x1b090301, 0x001b0351) // values 16..31: trit u (u < 5), 1, 3 (u = 5, 6)
	is7 := u.Eq(7)
	codes := make([]dsl.Value, 32)
	for i := 0; i < 8; i++ {
		word, p := w[i], p0
		if i >= 4 {
			word = k.Select(low, w[i], k.Select(is7, w[4], w[i-4]))
			p = k.Select(is7, k.U32(uint32([]int{1, 3, 9, 27}[i-4])), p1)
		}
		t := tq1Trits(word, p)
		for b := 0; b < 4; b++ {
			codes[4*i+b] = tritCode(t[b])
		}
	}
	return oneGroup(codes, d.W.F16(off.Add(52)), dsl.Value{}, false)
}

// unitTQ2_0 reads the 8 words of bytes 32*(u>>2) .. 32*(u>>2)+31 (value j from byte j, the
// field at bits 2*(u&3)): each word is shifted by the field once, then its four bytes' low two
// bits are the codes+1. The ninth word loaded lies at most at byte 64, inside the block. Scale:
// d at byte 64, one group of 32.
func unitTQ2_0(d *Decoder, off, u dsl.Value) Unit {
	w := tqWords(d.W, off.Add(u.Shr(2).Shl(5)), 8, dsl.Value{})
	sh := u.And(3).Shl(1)
	codes := make([]dsl.Value, 32)
	for i, wi := range w {
		ws := wi.Shr(sh)
		for b := 0; b < 4; b++ {
			q := ws
			if b > 0 {
				q = ws.Shr(8 * b)
			}
			codes[4*i+b] = tritCode(q.And(3))
		}
	}
	return oneGroup(codes, d.W.F16(off.Add(64)), dsl.Value{}, false)
}
