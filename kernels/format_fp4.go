package kernels

import (
	"fmt"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The 4-bit float decoders: ports of oracle/quant_fp4.go. Both read E2M1 codes through
// kvalues_fp4 (the values doubled: 0, 1, 2, 3, 4, 6, 8, 12 and negatives) and scale by half the
// block scale, y = float(kvalues_fp4[q]) * dhalf:
//
//	mxfp4 {e, qs[16]}     32 values; dhalf = E8M0Half(e); byte j&15, high nibble for j >= 16
//	nvfp4 {d[4], qs[32]}  64 values, sub-block s = j>>4 with dhalf = UE4M3Half(d[s]); byte
//	                      4 + 8s + (j&7), high nibble for (j>>3)&1

func init() {
	mx := Format{Type: oracle.MXFP4, Tables: []string{"kvalues_fp4"}, Value: valueMXFP4, Unit: unitMXFP4, DotQ8: dotMXFP4}
	nv := Format{Type: oracle.NVFP4, Tables: []string{"kvalues_fp4"}, Value: valueNVFP4, Unit: unitNVFP4, DotQ8: dotNVFP4}
	RegisterFormat(mx)
	RegisterFormat(nv)
	registerWeightCells(mx, weightInputs{edges: mxfp4Edges})
	registerWeightCells(nv, weightInputs{edges: nvfp4Edges})
}

// E8M0Half decodes an E8M0 scale byte e (u32, 0..255) to half its value, 2^(e-128), exactly as
// oracle.E8M0ToF32Half: e = 0 and 1 give the float32 subnormals 2^-128 and 2^-127 (bits
// 0x00200000 << e), otherwise the bits are (e-1) << 23 (e = 255 gives 2^127).
func E8M0Half(k *dsl.Kernel, e dsl.Value) dsl.Value {
	return k.Select(e.Lt(2), k.U32(0x00200000).Shl(e), e.Sub(1).Shl(23)).Bitcast(dsl.F32)
}

// UE4M3Half decodes an nvfp4 UE4M3 scale byte x (u32, 0..255) exactly as
// oracle.UE4M3ToF32Half, quirks included: 0x00 and 0x7f give 0 but bit 7 is otherwise ignored
// (0xff gives 240, 0x80 gives 0); exponent field 0 gives man * 2^-10, otherwise
// (8 + man) * 2^(exp-11). Every result is exact.
func UE4M3Half(k *dsl.Kernel, x dsl.Value) dsl.Value {
	exp := x.Shr(3).And(0xf)
	man := x.And(7)
	normal := exp.Add(119).Shl(23).Or(man.Shl(20)).Bitcast(dsl.F32) // (1+man/8) * 2^(exp-8)
	sub := man.F32().Mul(float32(1.0 / 1024))
	v := k.Select(exp.Eq(0), sub, normal)
	return k.Select(x.Eq(0x7f), k.F32(0), v)
}

func valueMXFP4(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	q := w.U8(off.Add(1).Add(j.And(15))).Shr(j.Shr(4).Shl(2)).And(0xf)
	return d.Table("kvalues_fp4").I8(q).F32().Mul(E8M0Half(d.K, w.U8(off)))
}

func valueNVFP4(d *Decoder, off, j dsl.Value) dsl.Value {
	w := d.W
	s := j.Shr(4)
	q := w.U8(off.Add(4).Add(s.Shl(3)).Add(j.And(7))).Shr(j.Shr(3).And(1).Shl(2)).And(0xf)
	return d.Table("kvalues_fp4").I8(q).F32().Mul(UE4M3Half(d.K, w.U8(off.Add(s))))
}

// dotMXFP4 is the q8_1 partial of an mxfp4 block: f(sum kvalues_fp4[q]*a) * (dhalf*da).
func dotMXFP4(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	w := d.W
	var q [4]dsl.Value
	copy(q[:], qWords(w, off, 1, 4, 17)) // 17-byte blocks: any alignment
	aw := aoff.Shr(2).Add(1)
	s := kvDot16(d.K, loadKV16(d.Table("kvalues_fp4")), q,
		func(i int) dsl.Value { return a.Word(aw.Add(i)) },
		func(i int) dsl.Value { return a.Word(aw.Add(4 + i)) })
	return s.F32().Mul(E8M0Half(d.K, w.U8(off)).Mul(a.F16(aoff)))
}

// dotNVFP4 is the q8_1 partial of one half of an nvfp4 block. The oracle gives a 64-value nvfp4
// block two partials, one per q8_1 block under it; following the weight kernels' convention
// (weights.go) DotQ8 is called once per activation block and the half is h = (aoff / 36) % 2,
// aoff counted from the start of the activation vector. The partial of half h is
// (f(S0) * (d0*da)) + (f(S1) * (d1*da)) over its two 16-value sub-blocks 2h and 2h+1.
func dotNVFP4(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value {
	k, w := d.K, d.W
	t := loadKV16(d.Table("kvalues_fp4"))
	h := aoff.Div(36).And(1)
	da := a.F16(aoff)
	aw := aoff.Shr(2).Add(1)
	var p [2]dsl.Value
	for i := 0; i < 2; i++ {
		sb := h.Shl(1).Add(i)
		qw := off.Shr(2).Add(1).Add(sb.Shl(1)) // qs of sub-block sb: 8 bytes at off+4+8*sb
		q0, q1 := w.Word(qw), w.Word(qw.Add(1))
		ab := aw.Add(4 * i)
		s := k.DotI8x4(kvPack(k, t, q0.And(0x0f0f0f0f)), a.Word(ab)).
			Add(k.DotI8x4(kvPack(k, t, q1.And(0x0f0f0f0f)), a.Word(ab.Add(1)))).
			Add(k.DotI8x4(kvPack(k, t, q0.Shr(4).And(0x0f0f0f0f)), a.Word(ab.Add(2)))).
			Add(k.DotI8x4(kvPack(k, t, q1.Shr(4).And(0x0f0f0f0f)), a.Word(ab.Add(3))))
		p[i] = s.F32().Mul(UE4M3Half(k, w.U8(off.Add(sb))).Mul(da))
	}
	return p[0].Add(p[1])
}

// fp4Codes are 16 bytes holding every 4-bit code in both nibbles.
func fp4Codes() []byte {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(i) | byte(15-i)<<4
	}
	return b
}

// mxfp4Edges are mxfp4 blocks with every code under the extreme and subnormal E8M0 scales.
func mxfp4Edges() [][]byte {
	var out [][]byte
	for _, e := range []byte{0, 1, 2, 3, 126, 127, 128, 129, 253, 254, 255} {
		out = append(out, append([]byte{e}, fp4Codes()...))
	}
	return out
}

// nvfp4Edges are nvfp4 blocks with every code under UE4M3 scales of every class: zero, the
// 0x7f "NaN" (decoded as 0), bit 7 set (ignored), subnormals, the largest values.
func nvfp4Edges() [][]byte {
	var out [][]byte
	for _, s := range [][4]byte{
		{0x00, 0x7f, 0x80, 0xff}, {0x01, 0x07, 0x08, 0x09}, {0x7e, 0xfe, 0x81, 0x87},
		{0x38, 0x3f, 0x40, 0x77}, {0xf8, 0x88, 0x06, 0x7d},
	} {
		out = append(out, append(append(s[:], fp4Codes()...), fp4Codes()...))
	}
	return out
}

// ---- float-path dot units (oracle/dot_units.go) ----
//
// The codes are kvalues_fp4[q] as f32. The table is symmetric (entry q+8 is -entry q) with
// magnitudes below 16, so fp4Mags holds the eight magnitudes as nibbles of one constant (built
// from the oracle's table when the package loads) and a code is a shift and mask of it, negated
// as an integer by the code's bit 3 (so -0 cannot arise: entry 8 is +0 like the table's).

var fp4Mags = func() uint32 {
	t, ok := oracle.TableBytes("kvalues_fp4")
	if !ok || len(t) != 16 {
		panic("kernels: no 16-entry kvalues_fp4 table")
	}
	var c uint32
	for m := 0; m < 8; m++ {
		v := int8(t[m])
		if v < 0 || v > 15 || int8(t[m+8]) != -v {
			panic(fmt.Sprintf("kernels: kvalues_fp4 entries %d and %d are %d and %d, not a magnitude below 16 and its negative", m, m+8, v, int8(t[m+8])))
		}
		c |= uint32(v) << (4 * m)
	}
	return c
}()

// fp4Code returns kvalues_fp4 of the 4-bit code at bits sh .. sh+3 of w (sh <= 28), as f32.
func fp4Code(k *dsl.Kernel, w dsl.Value, sh int) dsl.Value {
	var m4 dsl.Value // 4 * (code & 7): the magnitude's bit position in fp4Mags
	if sh >= 2 {
		m4 = w.Shr(sh - 2).And(28)
	} else {
		m4 = w.Shl(2 - sh).And(28)
	}
	mag := k.U32(fp4Mags).Shr(m4).And(15).Bitcast(dsl.I32)
	neg := w.Shl(28 - sh).Bitcast(dsl.I32).Shr(31) // 0, or -1 where bit sh+3 is set
	return mag.Xor(neg).Sub(neg).F32()
}

// fp4WordCodes writes the 8 codes of the nibbles of w: the low nibble of byte b to out[lo+b],
// the high one to out[hi+b].
func fp4WordCodes(k *dsl.Kernel, w dsl.Value, out []dsl.Value, lo, hi int) {
	for b := 0; b < 4; b++ {
		out[lo+b] = fp4Code(k, w, 8*b)
		out[hi+b] = fp4Code(k, w, 8*b+4)
	}
}

// unitMXFP4: the block's one unit, one group of 32. The 17 bytes at off (any alignment) always
// lie in the five words from off/4; they are loaded once, e is their byte off and qs[4i..4i+3]
// is word i joined from two of them. Value j is the low nibble of qs[j] (j < 16), the high one
// of qs[j-16]. Scale: E8M0Half(e).
func unitMXFP4(d *Decoder, off, _ dsl.Value) Unit {
	k := d.K
	base := off.Shr(2)
	sh := off.And(3).Shl(3)
	var l [5]dsl.Value
	for i := range l {
		l[i] = d.W.Word(base.Add(i))
	}
	up := sh.Xor(24) // 24 - sh: byte off+1+4i moves to bit 0
	codes := make([]dsl.Value, 32)
	for i := 0; i < 4; i++ {
		q := l[i].Shr(sh).Shr(8).Or(l[i+1].Shl(up))
		fp4WordCodes(k, q, codes, 4*i, 16+4*i)
	}
	return oneGroup(codes, E8M0Half(k, l[0].Shr(sh).And(0xff)), dsl.Value{}, false)
}

// unitNVFP4: unit u is sub-blocks 2u and 2u+1, the four aligned words of bytes 4+16u ..
// 4+16u+15 (36-byte blocks are 4-aligned), and two groups of 16 with the scales
// UE4M3Half(d[2u]) and UE4M3Half(d[2u+1]), both from the block's first word. Word i belongs to
// group i>>1; its byte b holds value 4(i&1)+b of the group (low nibble) and value 8+4(i&1)+b
// (high).
func unitNVFP4(d *Decoder, off, u dsl.Value) Unit {
	k := d.K
	base := off.Shr(2)
	sc := d.W.Word(base).Shr(u.Shl(4)) // d[2u] in bits 0..7, d[2u+1] in bits 8..15
	codes := make([]dsl.Value, 32)
	q := base.Add(1).Add(u.Shl(2))
	for i := 0; i < 4; i++ {
		o := 16*(i>>1) + 4*(i&1)
		fp4WordCodes(k, d.W.Word(q.Add(i)), codes, o, o+8)
	}
	return Unit{Codes: codes, Groups: []Group{
		{N: 16, Scale: UE4M3Half(k, sc.And(0xff))},
		{N: 16, Scale: UE4M3Half(k, sc.Shr(8).And(0xff))},
	}}
}
