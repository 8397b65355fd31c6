package kernels

import (
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The i-quant decoders: ports of oracle/quant_iq.go (ggml's dequantize_row_iq*), one element at
// a time and without branches. Every float operation is the oracle's, in the oracle's order:
//
//	iq2_xxs, iq2_xs, iq2_s:  db = (d * (0.5 + float(scale4))) * 0.25;  y = (db * grid) * sign
//	iq3_xxs:                 db = (d * (0.5 + float(scale4))) * 0.5;   y = (db * grid) * sign
//	iq3_s:                   db = d * float(1 + 2*scale4);             y = (db * grid) * sign
//	iq1_s, iq1_m:            dl = d * float(2*scale3 + 1);             y = dl * (float(grid) + delta)
//	iq4_nl:                  y = d * float(kvalues_iq4nl[q])
//	iq4_xs:                  dl = d * float(ls - 32);                  y = dl * float(kvalues_iq4nl[q])
//
// Multiplying by a sign of ±1 is exact, so it is done by flipping the sign bit. ggml's sign
// table ksigns_iq2xs maps a 7-bit index s to s | parity(s)<<7 (eight signs with an even number
// of minus signs); the decoders compute that byte instead of loading it (the tests check the
// identity on the oracle's table). The codebooks are read from the table buffers: grids of
// uint64 entries as their bytes (entry i, byte b at 8*i+b), uint32 grids likewise, kvalues as
// int8 bytes.
//
// Alignment: off is the block's byte offset in a buffer whose blocks lie back to back from a
// 4-aligned start, so it is even for every type here (all sizes are even except mxfp4's) and
// 4-aligned for types whose size is a multiple of 4 (iq1_m, iq4_xs, nvfp4); activation blocks
// (q8_1: 36 bytes, q8_K: 292 bytes) are 4-aligned.

func init() {
	d0 := weightInputs{halves: []int{0}} // the f16 scale d leads the block
	for _, x := range []struct {
		f  Format
		in weightInputs
	}{
		{Format{Type: oracle.IQ2_XXS, Tables: []string{"iq2xxs_grid"}, Value: valueIQ2XXS, Unit: unitIQ2XXS}, d0},
		{Format{Type: oracle.IQ2_XS, Tables: []string{"iq2xs_grid"}, Value: valueIQ2XS, Unit: unitIQ2XS}, d0},
		{Format{Type: oracle.IQ2_S, Tables: []string{"iq2s_grid"}, Value: valueIQ2S, Unit: unitIQ2S}, d0},
		{Format{Type: oracle.IQ3_XXS, Tables: []string{"iq3xxs_grid"}, Value: valueIQ3XXS, Unit: unitIQ3XXS}, d0},
		{Format{Type: oracle.IQ3_S, Tables: []string{"iq3s_grid"}, Value: valueIQ3S, Unit: unitIQ3S}, d0},
		{Format{Type: oracle.IQ1_S, Tables: []string{"iq1s_grid"}, Value: valueIQ1S, Unit: unitIQ1S}, d0},
		{Format{Type: oracle.IQ1_M, Tables: []string{"iq1s_grid"}, Value: valueIQ1M, Unit: unitIQ1M}, weightInputs{sample: iq1mSample, edges: iq1mEdges}},
		{Format{Type: oracle.IQ4_NL, Tables: []string{"kvalues_iq4nl"}, Value: valueIQ4NL, Unit: unitIQ4NL, DotQ8: dotIQ4NL}, d0},
		{Format{Type: oracle.IQ4_XS, Tables: []string{"kvalues_iq4nl"}, Value: valueIQ4XS, Unit: unitIQ4XS, DotQ8: dotIQ4XS}, d0},
	} {
		RegisterFormat(x.f)
		registerWeightCells(x.f, x.in)
	}
}

// IQ1MSetScale writes the f16 scale h of an iq1_m block (56 bytes) into the top nibbles of its
// four uint16 scale words, keeping their 3-bit sub-block scales.
func IQ1MSetScale(blk []byte, h uint16) {
	for i := 0; i < 4; i++ {
		o := 48 + 2*i
		s := uint16(blk[o]) | uint16(blk[o+1])<<8
		s = s&0x0fff | (h>>(4*i)&0xf)<<12
		blk[o], blk[o+1] = byte(s), byte(s>>8)
	}
}

// iq1mSample returns random iq1_m blocks with ordinary scales (iq1_m has no reference quantizer,
// and its f16 scale is spread over nibbles the generic inputs do not know).
func iq1mSample(rng *rand.Rand, nblocks int) []byte {
	b := make([]byte, 56*nblocks)
	rng.Read(b)
	for i := 0; i < nblocks; i++ {
		IQ1MSetScale(b[56*i:56*i+56], oracle.F32ToF16(float32(rng.Float64()*0.02-0.01)))
	}
	return b
}

// iq1mEdges are iq1_m blocks with each special f16 scale (halfSpecials) in the scale nibbles.
func iq1mEdges() [][]byte {
	rng := rand.New(rand.NewSource(56))
	var out [][]byte
	for _, h := range halfSpecials {
		b := iq1mSample(rng, 1)
		IQ1MSetScale(b, h)
		out = append(out, b)
	}
	return out
}

// iqSignByte returns ksigns_iq2xs[s7] for a 7-bit index s7 (u32): s7 with its parity in bit 7.
func iqSignByte(s7 dsl.Value) dsl.Value {
	p := s7.Xor(s7.Shr(4))
	p = p.Xor(p.Shr(2))
	p = p.Xor(p.Shr(1))
	return s7.Or(p.And(1).Shl(7))
}

// iqSigned returns v * (bit b of signs set ? -1 : 1), exactly: the sign bit flips.
func iqSigned(v, signs, b dsl.Value) dsl.Value {
	return v.Bitcast(dsl.U32).Xor(signs.Shr(b).And(1).Shl(31)).Bitcast(dsl.F32)
}

// iqHalfScale is ggml's "d * (0.5f + scale4) * q" of iq2 and iq3_xxs: (d*(0.5+float(s)))*q.
func iqHalfScale(d, s dsl.Value, q float32) dsl.Value {
	return d.Mul(s.F32().Add(0.5)).Mul(q)
}

func valueIQ2XXS(d *Decoder, off, j dsl.Value) dsl.Value { // {d, qs[32] uint16}: 8 bytes per 32 values
	w := d.W
	grp := off.Add(2).Add(j.Shr(5).Shl(3)) // the 8 bytes of this 32-value block
	aux := w.U32(grp.Add(4))
	db := iqHalfScale(w.F16(off), aux.Shr(28), 0.25)
	l := j.Shr(3).And(3)
	g := d.Table("iq2xxs_grid").U8(w.U8(grp.Add(l)).Shl(3).Or(j.And(7)))
	signs := iqSignByte(aux.Shr(l.Mul(7)).And(127))
	return iqSigned(db.Mul(g.F32()), signs, j.And(7))
}

func valueIQ2XS(d *Decoder, off, j dsl.Value) dsl.Value { // {d, qs[32] uint16, scales[8]}
	w := d.W
	q := w.U16(off.Add(2).Add(j.Shr(3).Shl(1)))
	sc := w.U8(off.Add(66).Add(j.Shr(5))).Shr(j.Shr(4).And(1).Shl(2)).And(0xf)
	db := iqHalfScale(w.F16(off), sc, 0.25)
	g := d.Table("iq2xs_grid").U8(q.And(511).Shl(3).Or(j.And(7)))
	return iqSigned(db.Mul(g.F32()), iqSignByte(q.Shr(9)), j.And(7))
}

func valueIQ2S(d *Decoder, off, j dsl.Value) dsl.Value { // {d, qs[32], signs[32], qh[8], scales[8]}
	w := d.W
	ib, grp := j.Shr(5), j.Shr(3)
	sc := w.U8(off.Add(74).Add(ib)).Shr(j.Shr(4).And(1).Shl(2)).And(0xf)
	db := iqHalfScale(w.F16(off), sc, 0.25)
	qh := w.U8(off.Add(66).Add(ib)).Shr(grp.And(3).Shl(1)).And(3)
	idx := w.U8(off.Add(2).Add(grp)).Or(qh.Shl(8))
	g := d.Table("iq2s_grid").U8(idx.Shl(3).Or(j.And(7)))
	signs := w.U8(off.Add(34).Add(grp))
	return iqSigned(db.Mul(g.F32()), signs, j.And(7))
}

func valueIQ3XXS(d *Decoder, off, j dsl.Value) dsl.Value { // {d, qs[64], scales_and_signs[8] uint32}
	w := d.W
	aux := w.U32(off.Add(66).Add(j.Shr(5).Shl(2)))
	db := iqHalfScale(w.F16(off), aux.Shr(28), 0.5)
	g := d.Table("iq3xxs_grid").U8(w.U8(off.Add(2).Add(j.Shr(2))).Shl(2).Or(j.And(3)))
	signs := iqSignByte(aux.Shr(j.Shr(3).And(3).Mul(7)).And(127))
	return iqSigned(db.Mul(g.F32()), signs, j.And(7))
}

func valueIQ3S(d *Decoder, off, j dsl.Value) dsl.Value { // {d, qs[64], qh[8], signs[32], scales[4]}
	w := d.W
	ib := j.Shr(5)
	sc := w.U8(off.Add(106).Add(ib.Shr(1))).Shr(ib.And(1).Shl(2)).And(0xf)
	db := w.F16(off).Mul(sc.Shl(1).Add(1).F32())
	q := j.Shr(2) // the grid byte: 4 values each
	hi := w.U8(off.Add(66).Add(ib)).Shr(q.And(7)).And(1)
	idx := w.U8(off.Add(2).Add(q)).Or(hi.Shl(8))
	g := d.Table("iq3s_grid").U8(idx.Shl(2).Or(j.And(3)))
	signs := w.U8(off.Add(74).Add(j.Shr(3)))
	return iqSigned(db.Mul(g.F32()), signs, j.And(7))
}

// iqDelta returns ±IQ1S_DELTA (0.125), negative when neg (a u32 0 or 1) is 1.
func iqDelta(neg dsl.Value) dsl.Value {
	return neg.Shl(31).Or(0x3e000000).Bitcast(dsl.F32)
}

func valueIQ1S(d *Decoder, off, j dsl.Value) dsl.Value { // {d, qs[32], qh[8] uint16}
	w := d.W
	qh := w.U16(off.Add(34).Add(j.Shr(5).Shl(1)))
	dl := w.F16(off).Mul(qh.Shr(12).And(7).Shl(1).Add(1).F32())
	hi := qh.Shr(j.Shr(3).And(3).Mul(3)).And(7)
	idx := w.U8(off.Add(2).Add(j.Shr(3))).Or(hi.Shl(8))
	g := d.Table("iq1s_grid").I8(idx.Shl(3).Or(j.And(7)))
	return dl.Mul(g.F32().Add(iqDelta(qh.Shr(15))))
}

func valueIQ1M(d *Decoder, off, j dsl.Value) dsl.Value { // {qs[32], qh[16], scales[8]}
	w := d.W
	// The f16 super-block scale is the top nibbles of the four uint16 scale words.
	w0 := w.Word(off.Add(48).Shr(2))
	w1 := w.Word(off.Add(52).Shr(2))
	u := w0.Shr(12).And(0xf).Or(w0.Shr(24).And(0xf0)).Or(w1.Shr(4).And(0xf00)).Or(w1.Shr(16).And(0xf000))
	ib := j.Shr(5)
	half := j.Shr(4).And(1) // l >= 2: the second 3-bit scale and the second qh byte
	// The 3-bit scale: uint16 word ib/2 (half ib/2 & 1 of w0 or w1), bits 6*(ib&1) + 3*half.
	sc := d.K.Select(ib.Ge(4), w1, w0)
	s3 := sc.Shr(ib.Shr(1).And(1).Shl(4).Add(ib.And(1).Mul(6)).Add(half.Mul(3))).And(7)
	dl := HalfToF32(d.K, u).Mul(s3.Shl(1).Add(1).F32())
	qh := w.U8(off.Add(32).Add(ib.Shl(1)).Add(half)).Shr(j.Shr(3).And(1).Shl(2)) // bits 0-2: index, bit 3: delta sign
	idx := w.U8(off.Add(j.Shr(3))).Or(qh.And(7).Shl(8))
	g := d.Table("iq1s_grid").I8(idx.Shl(3).Or(j.And(7)))
	return dl.Mul(g.F32().Add(iqDelta(qh.Shr(3).And(1))))
}

func valueIQ4NL(d *Decoder, off, j dsl.Value) dsl.Value { // {d, qs[16]}
	w := d.W
	q := w.U8(off.Add(2).Add(j.And(15))).Shr(j.Shr(4).Shl(2)).And(0xf)
	return w.F16(off).Mul(d.Table("kvalues_iq4nl").I8(q).F32())
}

// iq4xsHead returns the first two words of the (4-aligned) iq4_xs block at off: d | scales_h<<16,
// and scales_l, whose nibble ib is the low 4 bits of block ib's scale.
func iq4xsHead(w Bytes, off dsl.Value) (w0, w1 dsl.Value) {
	base := off.Shr(2)
	return w.Word(base), w.Word(base.Add(1))
}

// iq4xsScale returns ls - 32 (i32) for 32-value block ib (u32), given the head words.
func iq4xsScale(w0, w1, ib dsl.Value) dsl.Value {
	lo := w1.Shr(ib.Shl(2)).And(0xf)
	hi := w0.Shr(ib.Shl(1).Add(16)).And(3)
	return lo.Or(hi.Shl(4)).Bitcast(dsl.I32).Sub(32)
}

func valueIQ4XS(d *Decoder, off, j dsl.Value) dsl.Value { // {d, scales_h uint16, scales_l[4], qs[128]}
	w := d.W
	ib := j.Shr(5)
	w0, w1 := iq4xsHead(w, off)
	dl := HalfToF32(d.K, w0.And(0xffff)).Mul(iq4xsScale(w0, w1, ib).F32())
	q := w.U8(off.Add(8).Add(ib.Shl(4)).Add(j.And(15))).Shr(j.Shr(4).And(1).Shl(2)).And(0xf)
	return dl.Mul(d.Table("kvalues_iq4nl").I8(q).F32())
}

// qWords returns n little-endian 32-bit words of the block of typeSize bytes at byte offset off,
// from byte first of the block: word i holds bytes off+first+4i .. off+first+4i+3. Any alignment
// works: each word joins two loaded words with shifts (no select), the shift past 32 bits done
// in two steps so that an aligned word takes nothing from its neighbour; no word past the one
// holding the block's last byte is loaded. Where the type size and first are multiples of 4 the
// block is 4-aligned and the words are loaded as they are.
func qWords(b Bytes, off dsl.Value, first, n, typeSize int) []dsl.Value {
	out := make([]dsl.Value, n)
	if typeSize%4 == 0 && first%4 == 0 {
		base := off.Shr(2)
		for i := range out {
			out[i] = b.Word(base.Add(first/4 + i))
		}
		return out
	}
	start := off.Add(first)
	base := start.Shr(2)
	last := off.Add(typeSize - 1).Shr(2)
	sh := start.And(3).Shl(3)
	up := sh.Xor(31) // 31 - sh, sh being 0, 8, 16 or 24
	lo := b.Word(base)
	for i := range out {
		hi := b.Word(base.Add(i + 1).Min(last))
		out[i] = lo.Shr(sh).Or(hi.Shl(1).Shl(up))
		lo = hi
	}
	return out
}

// kv16 is a 16-entry int8 table (kvalues_iq4nl, kvalues_fp4) held as its four words, loaded
// once, so that a lookup selects among them instead of loading by a per-invocation index.
type kv16 [4]dsl.Value

func loadKV16(t Bytes) kv16 {
	return kv16{t.Word(0), t.Word(1), t.Word(2), t.Word(3)}
}

// byteOf returns entry n (u32, 0..15) of the table as the low byte of a u32 (zero-extended).
func (t kv16) byteOf(k *dsl.Kernel, n dsl.Value) dsl.Value {
	hi := n.And(8).Ne(0)
	mid := n.And(4).Ne(0)
	w := k.Select(hi, k.Select(mid, t[3], t[2]), k.Select(mid, t[1], t[0]))
	return w.Shr(n.And(3).Shl(3)).And(0xff)
}

// kvPack maps the four nibbles held in the low 4 bits of each byte of n (u32) through the
// table, returning the four int8 results packed in a u32 (byte i from byte i).
func kvPack(k *dsl.Kernel, t kv16, n dsl.Value) dsl.Value {
	b0 := t.byteOf(k, n.And(0xf))
	b1 := t.byteOf(k, n.Shr(8).And(0xf))
	b2 := t.byteOf(k, n.Shr(16).And(0xf))
	b3 := t.byteOf(k, n.Shr(24))
	return b0.Or(b1.Shl(8)).Or(b2.Shl(16)).Or(b3.Shl(24))
}

// kvDot16 returns, for the 16 bytes of 4-bit codes q[0..3] (u32 words), the exact integer sum over
// the 32 values of table[code] * activation code, where the values of the low nibbles pair with the
// activation words lo[0..3] and those of the high nibbles with hi[0..3] (the q4_0 nibble order).
func kvDot16(k *dsl.Kernel, t kv16, q [4]dsl.Value, lo, hi func(i int) dsl.Value) dsl.Value {
	var s dsl.Value
	for i := 0; i < 4; i++ {
		a := k.DotI8x4(kvPack(k, t, q[i].And(0x0f0f0f0f)), lo(i))
		b := k.DotI8x4(kvPack(k, t, q[i].Shr(4).And(0x0f0f0f0f)), hi(i))
		if i == 0 {
			s = a.Add(b)
		} else {
			s = s.Add(a).Add(b)
		}
	}
	return s
}

// dotIQ4NL is the q8_1 partial of an iq4_nl block: f(sum kvalues[q]*a) * (dw*da).
func dotIQ4NL(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	w := d.W
	var q [4]dsl.Value
	copy(q[:], qWords(w, off, 2, 4, 18))
	aw := aoff.Shr(2).Add(1) // the 32 activation codes: 8 words
	s := kvDot16(d.K, loadKV16(d.Table("kvalues_iq4nl")), q,
		func(i int) dsl.Value { return a.Word(aw.Add(i)) },
		func(i int) dsl.Value { return a.Word(aw.Add(4 + i)) })
	return s.F32().Mul(w.F16(off).Mul(a.F16(aoff)))
}

// dotIQ4XS is the q8_K partial of an iq4_xs block: f(sum_s (ls[s]-32) * sum kvalues[q]*a) * (dw*da).
func dotIQ4XS(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	k, w := d.K, d.W
	t := loadKV16(d.Table("kvalues_iq4nl"))
	ow := off.Shr(2)
	w0, w1 := iq4xsHead(w, off)
	aw := aoff.Shr(2).Add(1)
	acc := k.Var("iq4xs_s", k.I32(0))
	k.For("iq4xs_sb", k.U32(0), 8, 1, func(sb dsl.Value) {
		var q [4]dsl.Value
		qw := ow.Add(2).Add(sb.Shl(2)) // qs of sub-block sb: 16 bytes at off+8+16*sb
		for i := range q {
			q[i] = w.Word(qw.Add(i))
		}
		ab := aw.Add(sb.Shl(3))
		sqa := kvDot16(k, t, q,
			func(i int) dsl.Value { return a.Word(ab.Add(i)) },
			func(i int) dsl.Value { return a.Word(ab.Add(4 + i)) })
		acc.Set(acc.Get().Add(iq4xsScale(w0, w1, sb).Mul(sqa)))
	})
	da := a.Word(aoff.Shr(2)).Bitcast(dsl.F32)
	return acc.Get().F32().Mul(HalfToF32(k, w0.And(0xffff)).Mul(da))
}

// ---- float-path dot units (oracle/dot_units.go) ----
//
// Unit u of a 256-value type is its 32-value sub-block u; iq4_nl's block is its one unit. Each
// decoder loads the unit's bytes as whole words (iqBlock.words: where the bytes straddle words,
// a select on the block's alignment, tested once per block, joins the halves of two loaded
// words), each grid entry once as table words (one word per 4 values), and decodes each
// group's scale once. A code is the grid magnitude
// (an exact f32 conversion) with the sign bit xor-ed in from the packed sign bits (ggml's
// ksigns_iq2xs byte: the 7 stored bits and their parity, computed for all four 7-bit fields of
// a word at once by window7); iq1's codes are grid + delta (an exact f32 add); iq4's are the
// kvalues, picked by selects among the table's four words.

// iqBlock is a block at byte offset off (even) of typeSize bytes, as the unit decoders read it.
type iqBlock struct {
	d        *Decoder
	off      dsl.Value
	typeSize int
	last     dsl.Value // the word index of the block's last byte: no load goes past it
	odd      dsl.Value // bool, off % 4 == 2 (blocks of a size that is not a multiple of 4)
}

func newIQBlock(d *Decoder, off dsl.Value, typeSize int) iqBlock {
	b := iqBlock{d: d, off: off, typeSize: typeSize, last: off.Add(typeSize - 1).Shr(2)}
	if typeSize%4 != 0 {
		b.odd = off.And(2).Ne(0)
	}
	return b
}

// words returns n little-endian words of the block from byte off+rel: word i holds bytes
// off+rel+4i .. off+rel+4i+3. rel is an even u32 value whose remainder mod 4 is rel4 (0 or 2),
// known when the kernel is built, so the bytes straddle words exactly when off%4 + rel4 is 2:
// then each word joins the halves of two loaded words (a select on the block's alignment).
func (b iqBlock) words(rel dsl.Value, rel4, n int) []dsl.Value {
	w := b.d.W
	start := b.off.Add(rel)
	base := start.Shr(2)
	out := make([]dsl.Value, n)
	if b.typeSize%4 == 0 && rel4 == 0 { // 4-aligned
		for i := range out {
			out[i] = w.Word(base.Add(i))
		}
		return out
	}
	lo := w.Word(base)
	for i := range out {
		hi := w.Word(base.Add(i + 1))
		if i == n-1 {
			// Unneeded (and perhaps past the block) when the bytes do not straddle.
			hi = w.Word(base.Add(i + 1).Min(b.last))
		}
		joined := lo.Shr(16).Or(hi.Shl(16))
		switch {
		case b.typeSize%4 == 0: // rel4 == 2: always straddling
			out[i] = joined
		case rel4 == 0:
			out[i] = b.d.K.Select(b.odd, joined, lo)
		default:
			out[i] = b.d.K.Select(b.odd, lo, joined)
		}
		lo = hi
	}
	return out
}

// byteAt returns byte i (0..3) of the word w, zero-extended.
func byteAt(w dsl.Value, i int) dsl.Value {
	switch i {
	case 0:
		return w.And(0xff)
	case 3:
		return w.Shr(24)
	}
	return w.Shr(8 * i).And(0xff)
}

// sbyteF32 returns byte i (0..3) of the word w, sign-extended, as f32.
func sbyteF32(w dsl.Value, i int) dsl.Value {
	if i < 3 {
		w = w.Shl(24 - 8*i)
	}
	return w.Bitcast(dsl.I32).Shr(24).F32()
}

// signBit returns bit i of w moved to bit 31 (an f32 sign), every other bit clear.
func signBit(w dsl.Value, i int) dsl.Value {
	if i < 31 {
		w = w.Shl(31 - i)
	}
	return w.And(0x80000000)
}

// window7 returns, in each bit i, the parity of bits i .. i+6 of w (bits past 31 count as 0):
// at the start of a 7-bit sign index, the eighth sign bit of its ksigns_iq2xs byte.
func window7(w dsl.Value) dsl.Value {
	y1 := w.Xor(w.Shr(1))   // bits i, i+1
	y2 := y1.Xor(y1.Shr(2)) // i .. i+3
	return y2.Xor(y1.Shr(4)).Xor(w.Shr(6))
}

// gridCode returns byte i of the table word tw (a grid magnitude) as f32 with the sign bit sign
// (0 or 0x80000000) xor-ed in: magnitude * ±1, exactly.
func gridCode(tw dsl.Value, i int, sign dsl.Value) dsl.Value {
	return byteAt(tw, i).F32().Bitcast(dsl.U32).Xor(sign).Bitcast(dsl.F32)
}

// gridEntry8 returns the two table words of entry idx (u32) of a grid of 8-byte entries.
func gridEntry8(t Bytes, idx dsl.Value) [2]dsl.Value {
	e := idx.Shl(1)
	return [2]dsl.Value{t.Word(e), t.Word(e.Add(1))}
}

// iq2Signs returns the 8 sign bits (at bit 31) of the 7-bit sign index at bit p of w, the eighth
// from par = window7(w).
func iq2Signs(w, par dsl.Value, p int) [8]dsl.Value {
	var s [8]dsl.Value
	for j := 0; j < 7; j++ {
		s[j] = signBit(w, p+j)
	}
	s[7] = signBit(par, p)
	return s
}

// unitIQ2XXS reads bytes 2+8u .. 9+8u (two words: the four grid indices, then the word of four
// 7-bit sign indices and the 4-bit scale) and d: one group of 32, db = (d*(0.5+s))*0.25.
func unitIQ2XXS(d *Decoder, off, u dsl.Value) Unit {
	w := newIQBlock(d, off, 66).words(u.Shl(3).Add(2), 2, 2)
	aux := w[1]
	db := iqHalfScale(d.W.F16(off), aux.Shr(28), 0.25)
	par := window7(aux)
	t := d.Table("iq2xxs_grid")
	codes := make([]dsl.Value, 32)
	for l := 0; l < 4; l++ {
		g := gridEntry8(t, byteAt(w[0], l))
		s := iq2Signs(aux, par, 7*l)
		for j := 0; j < 8; j++ {
			codes[8*l+j] = gridCode(g[j/4], j%4, s[j])
		}
	}
	return Unit{Codes: codes, Groups: []Group{{N: 32, Scale: db}}}
}

// unitIQ2XS reads qs[4u .. 4u+3] (bytes 2+8u .. 9+8u, two words of two uint16: 9-bit grid index,
// 7-bit sign index), scales[u] and d: two groups of 16, db = (d*(0.5+nibble))*0.25 with the low
// nibble, then the high.
func unitIQ2XS(d *Decoder, off, u dsl.Value) Unit {
	w := newIQBlock(d, off, 74).words(u.Shl(3).Add(2), 2, 2)
	dh := d.W.F16(off)
	sc := d.W.U8(off.Add(66).Add(u))
	t := d.Table("iq2xs_grid")
	codes := make([]dsl.Value, 32)
	for h := 0; h < 2; h++ {
		par := window7(w[h])
		for l := 0; l < 2; l++ {
			q := w[h]
			if l == 1 {
				q = q.Shr(16)
			}
			g := gridEntry8(t, q.And(511))
			s := iq2Signs(w[h], par, 16*l+9)
			for j := 0; j < 8; j++ {
				codes[16*h+8*l+j] = gridCode(g[j/4], j%4, s[j])
			}
		}
	}
	return Unit{Codes: codes, Groups: []Group{
		{N: 16, Scale: iqHalfScale(dh, sc.And(15), 0.25)},
		{N: 16, Scale: iqHalfScale(dh, sc.Shr(4), 0.25)},
	}}
}

// unitIQ2S reads qs[4u .. 4u+3] (one word of grid index low bytes), signs[4u .. 4u+3] (one word:
// bit m signs value m), qh[u] (two index bits per 8 values), scales[u] and d: two groups of 16,
// db = (d*(0.5+nibble))*0.25 with the low nibble, then the high.
func unitIQ2S(d *Decoder, off, u dsl.Value) Unit {
	b := newIQBlock(d, off, 82)
	qs := b.words(u.Shl(2).Add(2), 2, 1)[0]
	sg := b.words(u.Shl(2).Add(34), 2, 1)[0]
	qh := d.W.U8(off.Add(66).Add(u))
	sc := d.W.U8(off.Add(74).Add(u))
	dh := d.W.F16(off)
	t := d.Table("iq2s_grid")
	codes := make([]dsl.Value, 32)
	for l := 0; l < 4; l++ {
		g := gridEntry8(t, byteAt(qs, l).Or(qh.Shl(8-2*l).And(0x300)))
		for j := 0; j < 8; j++ {
			codes[8*l+j] = gridCode(g[j/4], j%4, signBit(sg, 8*l+j))
		}
	}
	return Unit{Codes: codes, Groups: []Group{
		{N: 16, Scale: iqHalfScale(dh, sc.And(15), 0.25)},
		{N: 16, Scale: iqHalfScale(dh, sc.Shr(4), 0.25)},
	}}
}

// unitIQ3XXS reads qs[8u .. 8u+7] (two words: eight grid indices, one per 4 values), the
// scales-and-signs word u (bytes 66+4u ..: four 7-bit sign indices, a 4-bit scale) and d: one
// group of 32, db = (d*(0.5+s))*0.5.
func unitIQ3XXS(d *Decoder, off, u dsl.Value) Unit {
	b := newIQBlock(d, off, 98)
	qs := b.words(u.Shl(3).Add(2), 2, 2)
	aux := b.words(u.Shl(2).Add(66), 2, 1)[0]
	db := iqHalfScale(d.W.F16(off), aux.Shr(28), 0.5)
	par := window7(aux)
	t := d.Table("iq3xxs_grid")
	codes := make([]dsl.Value, 32)
	for l := 0; l < 4; l++ {
		s := iq2Signs(aux, par, 7*l)
		for h := 0; h < 2; h++ {
			g := t.Word(byteAt(qs[l/2], 2*(l%2)+h))
			for j := 0; j < 4; j++ {
				codes[8*l+4*h+j] = gridCode(g, j, s[4*h+j])
			}
		}
	}
	return Unit{Codes: codes, Groups: []Group{{N: 32, Scale: db}}}
}

// unitIQ3S reads qs[8u .. 8u+7] (two words: eight grid index low bytes), qh[u] (bit m: the ninth
// index bit of grid entry m), signs[4u .. 4u+3] (one word: bit m signs value m), the nibble u%2
// of scales[u/2] and d: one group of 32, db = d*(1+2*nibble).
func unitIQ3S(d *Decoder, off, u dsl.Value) Unit {
	b := newIQBlock(d, off, 110)
	qs := b.words(u.Shl(3).Add(2), 2, 2)
	sg := b.words(u.Shl(2).Add(74), 2, 1)[0]
	qh := d.W.U8(off.Add(66).Add(u))
	sc := d.W.U8(off.Add(106).Add(u.Shr(1))).Shr(u.And(1).Shl(2)).And(15)
	db := d.W.F16(off).Mul(sc.Shl(1).Add(1).F32())
	t := d.Table("iq3s_grid")
	codes := make([]dsl.Value, 32)
	for m := 0; m < 8; m++ {
		g := t.Word(byteAt(qs[m/4], m%4).Or(qh.Shl(8 - m).And(256)))
		for j := 0; j < 4; j++ {
			codes[4*m+j] = gridCode(g, j, signBit(sg, 4*m+j))
		}
	}
	return Unit{Codes: codes, Groups: []Group{{N: 32, Scale: db}}}
}

// iq1Codes appends the 8 codes of iq1s_grid entry idx (int8 -1, 0, 1) plus delta (f32 ±1/8).
func iq1Codes(codes []dsl.Value, t Bytes, idx, delta dsl.Value) []dsl.Value {
	g := gridEntry8(t, idx)
	for j := 0; j < 8; j++ {
		codes = append(codes, sbyteF32(g[j/4], j%4).Add(delta))
	}
	return codes
}

// unitIQ1S reads qs[4u .. 4u+3] (one word of grid index low bytes), qh[u] (the uint16 at
// 34+2u: four 3-bit index tops, a 3-bit scale, the delta sign) and d: one group of 32,
// dl = d*(2*s+1), codes grid + delta.
func unitIQ1S(d *Decoder, off, u dsl.Value) Unit {
	qs := newIQBlock(d, off, 50).words(u.Shl(2).Add(2), 2, 1)[0]
	qh := d.W.U16(off.Add(34).Add(u.Shl(1)))
	dl := d.W.F16(off).Mul(qh.Shr(12).And(7).Shl(1).Add(1).F32())
	delta := iqDelta(qh.Shr(15))
	t := d.Table("iq1s_grid")
	codes := make([]dsl.Value, 0, 32)
	for l := 0; l < 4; l++ {
		var hi dsl.Value
		if l < 3 {
			hi = qh.Shl(8 - 3*l)
		} else {
			hi = qh.Shr(1)
		}
		codes = iq1Codes(codes, t, byteAt(qs, l).Or(hi.And(0x700)), delta)
	}
	return Unit{Codes: codes, Groups: []Group{{N: 32, Scale: dl}}}
}

// unitIQ1M reads (the block is 4-aligned) qs[4u .. 4u+3] (one word of grid index low bytes),
// qh[2u .. 2u+1] (half of a word: per 8 values a 3-bit index top and a delta sign) and both
// scale words (the f16 d in the four top nibbles; the two 3-bit scales of sub-block u): two
// groups of 16, dl = d*(2*s+1) with the first scale, then the second; codes grid + delta.
func unitIQ1M(d *Decoder, off, u dsl.Value) Unit {
	k, w := d.K, d.W
	base := off.Shr(2)
	qs := w.Word(base.Add(u))
	qh := w.Word(base.Add(8).Add(u.Shr(1))).Shr(u.And(1).Shl(4)) // bits 0-15: qh[2u], qh[2u+1]
	w0, w1 := w.Word(base.Add(12)), w.Word(base.Add(13))
	h := w0.Shr(12).And(0xf).Or(w0.Shr(24).And(0xf0)).Or(w1.Shr(4).And(0xf00)).Or(w1.Shr(16).And(0xf000))
	dh := HalfToF32(k, h)
	// Scale word u/2 is half (u/2)%2 of w0 (u < 4) or w1; sub-block u's scales sit at bit 6*(u%2).
	sc := k.Select(u.Ge(4), w1, w0).Shr(u.And(2).Shl(3).Add(u.And(1).Mul(6)))
	dl1 := dh.Mul(sc.And(7).Shl(1).Add(1).F32())
	dl2 := dh.Mul(sc.Shr(3).And(7).Shl(1).Add(1).F32())
	t := d.Table("iq1s_grid")
	codes := make([]dsl.Value, 0, 32)
	for l := 0; l < 4; l++ {
		hi := qh // the index top at bits 4l .. 4l+2, to bits 8 .. 10
		switch l {
		case 0, 1:
			hi = qh.Shl(8 - 4*l)
		case 3:
			hi = qh.Shr(4)
		}
		delta := qh.Shl(28 - 4*l).And(0x80000000).Or(0x3e000000).Bitcast(dsl.F32) // ±0.125
		codes = iq1Codes(codes, t, byteAt(qs, l).Or(hi.And(0x700)), delta)
	}
	return Unit{Codes: codes, Groups: []Group{{N: 16, Scale: dl1}, {N: 16, Scale: dl2}}}
}

// kvCode returns the kvalue of the nibble at bit p (a multiple of 4) of q, as f32: selects
// among the table's four words, then the sign-extended byte.
func kvCode(k *dsl.Kernel, t kv16, q dsl.Value, p int) dsl.Value {
	hi := q.And(uint32(8) << p).Ne(0)
	mid := q.And(uint32(4) << p).Ne(0)
	w := k.Select(hi, k.Select(mid, t[3], t[2]), k.Select(mid, t[1], t[0]))
	var sh dsl.Value // 8 * (the nibble's low two bits)
	if p == 0 {
		sh = q.Shl(3).And(0x18)
	} else {
		sh = q.Shr(p - 3).And(0x18)
	}
	return w.Shl(sh.Xor(24)).Bitcast(dsl.I32).Shr(24).F32()
}

// iq4Codes returns the kvalues of the 32 nibbles of four words (the low nibbles are values
// 0..15, the high ones 16..31).
func iq4Codes(k *dsl.Kernel, t kv16, qs []dsl.Value) []dsl.Value {
	codes := make([]dsl.Value, 32)
	for j := 0; j < 16; j++ {
		codes[j] = kvCode(k, t, qs[j/4], 8*(j%4))
		codes[j+16] = kvCode(k, t, qs[j/4], 8*(j%4)+4)
	}
	return codes
}

// unitIQ4NL reads the whole block (d, then qs[16] as four words): one group of 32, scale d.
func unitIQ4NL(d *Decoder, off, _ dsl.Value) Unit {
	qs := blockWords(d.W, off, 2, 4, 18)
	codes := iq4Codes(d.K, loadKV16(d.Table("kvalues_iq4nl")), qs)
	return Unit{Codes: codes, Groups: []Group{{N: 32, Scale: d.W.F16(off)}}}
}

// unitIQ4XS reads (the block is 4-aligned) the head words (d, scales_h, scales_l) and
// qs[16u .. 16u+15] (four words): one group of 32, dl = d*(ls-32).
func unitIQ4XS(d *Decoder, off, u dsl.Value) Unit {
	w := d.W
	w0, w1 := iq4xsHead(w, off)
	dl := HalfToF32(d.K, w0.And(0xffff)).Mul(iq4xsScale(w0, w1, u).F32())
	qb := off.Shr(2).Add(2).Add(u.Shl(2))
	qs := []dsl.Value{w.Word(qb), w.Word(qb.Add(1)), w.Word(qb.Add(2)), w.Word(qb.Add(3))}
	codes := iq4Codes(d.K, loadKV16(d.Table("kvalues_iq4nl")), qs)
	return Unit{Codes: codes, Groups: []Group{{N: 32, Scale: dl}}}
}
