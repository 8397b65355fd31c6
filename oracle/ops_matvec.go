package oracle

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file defines matvec, y = W x for a weight matrix W of any type (rows of K values, ggml's
// mul_mat with one activation column), on two paths:
//
// Float path (MatVec): for f32, f16 and bf16 weights y[r] = DotF32(row, x, FloatDotWidth): the
// row's exact values times x, products rounded to float32, summed canonically. For quantized
// weights the row is taken unit by unit (32 values, dot_units.go): each unit's partial applies
// its scales once to four-accumulator sums of code*activation products, and the partials are
// summed canonically over BlockDotWidth virtual lanes.
//
// Integer path (MatVecQ8, DotQ8): the activation is quantized first, as ggml does, to q8_1
// (32-value blocks: q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, mxfp4, q1_0, q2_0, nvfp4) or q8_K
// (256-value blocks: q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs, tq2_0); see ActivationType. (ggml's
// GPU backends use q8_1 for all 32-value types; its CPU backend uses q8_0 for some, whose d and
// codes are identical to q8_1's, so the integer sums are the same.) Each weight block and the activation block under
// it give one float32 partial, computed from exact integer dot products and then scaled (every
// integer sum is exact in int32; int32 -> float32 conversions round to nearest even; products are
// rounded before adds). Weight blocks longer than 32 values on the q8_1 path (q1_0: 128, q2_0 and
// nvfp4: 64) give one partial per 32-value activation block under them. The partials of a row, in
// ascending order (one per activation block), are then reduced with SumF32(partials, W), W =
// Q8_1DotWidth or Q8_KDotWidth: virtual lane v owns partials v, v+W, ...
//
// Notation: q[j] are the weight's integer codes as its dequantizer reads them, a[j] the
// activation's int8 codes; dw, mw (dmin) the weight block's scales as float32 (f16 decoded
// exactly, E8M0 for mxfp4), da the activation block's scale (q8_1: its f16 d decoded; q8_K: its
// float32 d). f(i) is Int32ToFloat(i). "x*y" is one float32 multiply (rounded).
//
//	q8_0:    S = sum q*a                         partial = f(S) * (dw*da)
//	q4_0:    S = sum (q-8)*a                     partial = f(S) * (dw*da)
//	q5_0:    S = sum (q-16)*a                    partial = f(S) * (dw*da)
//	iq4_nl:  S = sum kvalues_iq4nl[q]*a          partial = f(S) * (dw*da)
//	mxfp4:   S = sum kvalues_mxfp4[q]*a          partial = f(S) * (dw*da)     (dw = E8M0 half scale)
//	q4_1, q5_1:
//	         S = sum q*a;  A = sum a             partial = (f(S) * (dw*da)) + (f(A) * (mw*da))
//
//	q1_0:    per 32 values: S = sum (2*bit-1)*a      partial = f(S) * (dw*da)
//	q2_0:    per 32 values: S = sum (q-1)*a          partial = f(S) * (dw*da)
//	nvfp4:   per 32 values, two 16-value sub-blocks with UE4M3 half scales d0, d1:
//	         S0, S1 = sum kvalues_mxfp4[q]*a over each
//	         partial = (f(S0) * (d0*da)) + (f(S1) * (d1*da))
//
// (For the 32-value types with f16 scales dw*da is exact: a product of two f16 values fits a
// float32. The q8_1 block's stored s = d*sum(a) is NOT used: it is rounded to f16; A is exact.)
//
// For the 256-value types with sub-block scales sc[s] and mins m[s] (s over the sub-blocks, 16
// values each for q2_K, q3_K, q6_K; 32 values each for q4_K, q5_K, iq4_xs):
//
//	q2_K, q4_K, q5_K:
//	         S = sum_s sc[s] * (sum_{j in s} q*a);  M = sum_s m[s] * (sum_{j in s} a)
//	         partial = (f(S) * (dw*da)) - (f(M) * (mw*da))
//	q3_K:    S = sum_s (sc[s]-32) * (sum_{j in s} q*a)      (q = low 2 bits - 4 if the hmask bit is 0)
//	         partial = f(S) * (dw*da)
//	q6_K:    S = sum_s sc[s] * (sum_{j in s} (q-32)*a)      (sc[s] int8)
//	         partial = f(S) * (dw*da)
//	iq4_xs:  S = sum_s (ls[s]-32) * (sum_{j in s} kvalues_iq4nl[q]*a)
//	         partial = f(S) * (dw*da)
//	tq2_0:   S = sum (q-1)*a                                partial = f(S) * (dw*da)
//
// The result of row r is y[r] = SumF32(partials of row r, Q8_KDotWidth).

// kvaluesIQ4NL is ggml's kvalues_iq4nl, the iq4_nl and iq4_xs codebook.
var kvaluesIQ4NL = [16]int32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// kvaluesMXFP4 is ggml's kvalues_mxfp4 (E2M1 values doubled).
var kvaluesMXFP4 = [16]int32{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// intDot is one weight type's integer path: act is the activation type; block computes the
// partial of one weight block (w, TypeSize bytes) with the activation block under it (a). Weight
// blocks longer than the activation block (q1_0, q2_0, nvfp4) use multi instead, which writes one
// partial per activation block under the weight block.
type intDot struct {
	act   Type
	block func(w, a []byte) float32
	multi func(w, a []byte, out []float32)
}

var intDots = map[Type]intDot{
	Q8_0:   {Q8_1, dotQ8_0, nil},
	Q4_0:   {Q8_1, dotQ4_0, nil},
	Q4_1:   {Q8_1, dotQ4_1, nil},
	Q5_0:   {Q8_1, dotQ5_0, nil},
	Q5_1:   {Q8_1, dotQ5_1, nil},
	IQ4_NL: {Q8_1, dotIQ4NL, nil},
	MXFP4:  {Q8_1, dotMXFP4, nil},
	Q2_K:   {Q8_K, dotQ2_K, nil},
	Q3_K:   {Q8_K, dotQ3_K, nil},
	Q4_K:   {Q8_K, dotQ4_K, nil},
	Q5_K:   {Q8_K, dotQ5_K, nil},
	Q6_K:   {Q8_K, dotQ6_K, nil},
	IQ4_XS: {Q8_K, dotIQ4_XS, nil},
	TQ2_0:  {Q8_K, dotTQ2_0, nil},
	Q1_0:   {Q8_1, nil, dotQ1_0},
	Q2_0:   {Q8_1, nil, dotQ2_0},
	NVFP4:  {Q8_1, nil, dotNVFP4},
}

// ActivationType returns the type MatVecQ8 quantizes the activation to for weight type t (Q8_1 or
// Q8_K); ok is false when t has no integer path.
func ActivationType(t Type) (act Type, ok bool) {
	d, ok := intDots[t]
	return d.act, ok
}

// MatVec computes dst = W x on the float path: W holds len(dst) rows of len(x) values of type t.
// For f32, f16 and bf16 weights dst[r] = DotF32(row r, x, FloatDotWidth) (the row's values as
// Dequantize gives them, exact). For a quantized t, dst[r] is the canonical sum over
// BlockDotWidth virtual lanes of the row's unit partials (UnitPartial, dot_units.go), one per 32
// values in order.
func MatVec(t Type, w []byte, x, dst []float32) error {
	rs, err := matvecShape("matvec", t, w, x, dst)
	if err != nil {
		return err
	}
	W, ok := Width("matvec", t)
	if !ok {
		return fmt.Errorf("oracle: matvec: %s has no float-path dot", t)
	}
	if isFloatType(t) {
		row := make([]float32, len(x))
		for r := range dst {
			if err := Dequantize(t, w[r*rs:(r+1)*rs], row); err != nil {
				return err
			}
			dst[r] = DotF32(row, x, W)
		}
		return nil
	}
	ti, _ := t.Info()
	per := ti.BlockSize / UnitSize
	units := len(x) / UnitSize
	partials := make([]float32, units)
	var c [UnitSize]float32
	g := make([]unitGroup, 0, 2)
	for r := range dst {
		row := w[r*rs : (r+1)*rs]
		for u := range partials {
			b := u / per
			if g, err = decodeUnit(t, row[b*ti.TypeSize:(b+1)*ti.TypeSize], u%per, &c, g); err != nil {
				return err
			}
			partials[u] = unitPartial(&c, g, x[u*UnitSize:(u+1)*UnitSize])
		}
		dst[r] = SumF32(partials, W)
	}
	return nil
}

// MatVecQ8 computes dst = W x on the integer path: x is quantized with Quantize(ActivationType(t))
// and each row is DotQ8 of its bytes with the quantized x.
func MatVecQ8(t Type, w []byte, x, dst []float32) error {
	rs, err := matvecShape("matvec_q8", t, w, x, dst)
	if err != nil {
		return err
	}
	d, ok := intDots[t]
	if !ok {
		return fmt.Errorf("oracle: matvec_q8: %s has no integer path", t)
	}
	as, err := RowSize(d.act, len(x))
	if err != nil {
		return fmt.Errorf("oracle: matvec_q8: %s activation: %v", d.act, err)
	}
	aq := make([]byte, as)
	if err := Quantize(d.act, x, aq); err != nil {
		return err
	}
	for r := range dst {
		if dst[r], err = DotQ8(t, w[r*rs:(r+1)*rs], aq); err != nil {
			return err
		}
	}
	return nil
}

// DotQ8 is one row of the integer path: wrow holds K values of type t, aq the same K values'
// activation already quantized to ActivationType(t) (e.g. by QuantizeQ8_1). It returns the
// canonical sum of the block partials (defined in the file comment) over Width("matvec_q8", t)
// virtual lanes: Q8_1DotWidth for q8_1 activations, Q8_KDotWidth for q8_K.
func DotQ8(t Type, wrow, aq []byte) (float32, error) {
	d, ok := intDots[t]
	if !ok {
		return 0, fmt.Errorf("oracle: dot_q8: %s has no integer path", t)
	}
	W, _ := Width("matvec_q8", t)
	wi, _ := t.Info()
	ai, _ := d.act.Info()
	if len(wrow)%wi.TypeSize != 0 {
		return 0, fmt.Errorf("oracle: dot_q8: %d bytes are not whole %s blocks", len(wrow), t)
	}
	nb := len(wrow) / wi.TypeSize
	aPer := wi.BlockSize / ai.BlockSize * ai.TypeSize // activation bytes under one weight block
	if len(aq) != nb*aPer {
		return 0, fmt.Errorf("oracle: dot_q8: %d %s values need %d bytes of %s, got %d", nb*wi.BlockSize, t, nb*aPer, d.act, len(aq))
	}
	per := wi.BlockSize / ai.BlockSize // activation blocks (and partials) per weight block
	partials := make([]float32, nb*per)
	for b := 0; b < nb; b++ {
		w, a := wrow[b*wi.TypeSize:(b+1)*wi.TypeSize], aq[b*aPer:(b+1)*aPer]
		if d.multi != nil {
			d.multi(w, a, partials[b*per:(b+1)*per])
		} else {
			partials[b] = d.block(w, a)
		}
	}
	return SumF32(partials, W), nil
}

func matvecShape(op string, t Type, w []byte, x, dst []float32) (int, error) {
	rs, err := RowSize(t, len(x))
	if err != nil {
		return 0, err
	}
	if len(w) != len(dst)*rs {
		return 0, fmt.Errorf("oracle: %s: %d rows of %d %s values need %d bytes, got %d", op, len(dst), len(x), t, len(dst)*rs, len(w))
	}
	return rs, nil
}

// ---- block readers ----

func mvHalf(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }

// q8_1 block: f16 d, f16 s, int8 qs[32].
func q81Scale(a []byte) float32     { return mvHalf(a) }
func q81Code(a []byte, j int) int32 { return int32(int8(a[4+j])) }

// q8_K block: float32 d, int8 qs[256], int16 bsums[16].
func q8KScale(a []byte) float32     { return math.Float32frombits(binary.LittleEndian.Uint32(a)) }
func q8KCode(a []byte, j int) int32 { return int32(int8(a[4+j])) }

func i2f(i int32) float32 { return Int32ToFloat(i) }

// ---- 32-value blocks with q8_1 ----

// nibble32 is the 4-bit code of value j in a q4_0-style nibble array (j < 16: low nibble of
// qs[j], else high nibble of qs[j-16]).
func nibble32(qs []byte, j int) int32 {
	if j < 16 {
		return int32(qs[j] & 0xf)
	}
	return int32(qs[j-16] >> 4)
}

// highBit32 is bit j of the little-endian uint32 qh of q5_0/q5_1.
func highBit32(qh []byte, j int) int32 {
	return int32(binary.LittleEndian.Uint32(qh)>>uint(j)) & 1
}

func dotQ8_0(w, a []byte) float32 { // f16 d, int8 qs[32]
	var s int32
	for j := 0; j < 32; j++ {
		s += int32(int8(w[2+j])) * q81Code(a, j)
	}
	return float32(i2f(s) * float32(mvHalf(w)*q81Scale(a)))
}

func dotQ4_0(w, a []byte) float32 { // f16 d, qs[16]
	var s int32
	for j := 0; j < 32; j++ {
		s += (nibble32(w[2:], j) - 8) * q81Code(a, j)
	}
	return float32(i2f(s) * float32(mvHalf(w)*q81Scale(a)))
}

func dotQ4_1(w, a []byte) float32 { // f16 d, f16 m, qs[16]
	var s, sa int32
	for j := 0; j < 32; j++ {
		c := q81Code(a, j)
		s += nibble32(w[4:], j) * c
		sa += c
	}
	da := q81Scale(a)
	return float32(i2f(s)*float32(mvHalf(w)*da)) + float32(i2f(sa)*float32(mvHalf(w[2:])*da))
}

func dotQ5_0(w, a []byte) float32 { // f16 d, qh[4], qs[16]
	var s int32
	for j := 0; j < 32; j++ {
		q := nibble32(w[6:], j) | highBit32(w[2:], j)<<4
		s += (q - 16) * q81Code(a, j)
	}
	return float32(i2f(s) * float32(mvHalf(w)*q81Scale(a)))
}

func dotQ5_1(w, a []byte) float32 { // f16 d, f16 m, qh[4], qs[16]
	var s, sa int32
	for j := 0; j < 32; j++ {
		c := q81Code(a, j)
		q := nibble32(w[8:], j) | highBit32(w[4:], j)<<4
		s += q * c
		sa += c
	}
	da := q81Scale(a)
	return float32(i2f(s)*float32(mvHalf(w)*da)) + float32(i2f(sa)*float32(mvHalf(w[2:])*da))
}

func dotIQ4NL(w, a []byte) float32 { // f16 d, qs[16]
	var s int32
	for j := 0; j < 32; j++ {
		s += kvaluesIQ4NL[nibble32(w[2:], j)] * q81Code(a, j)
	}
	return float32(i2f(s) * float32(mvHalf(w)*q81Scale(a)))
}

func dotMXFP4(w, a []byte) float32 { // uint8 e (E8M0), qs[16]
	var s int32
	for j := 0; j < 32; j++ {
		s += kvaluesMXFP4[nibble32(w[1:], j)] * q81Code(a, j)
	}
	return float32(i2f(s) * float32(E8M0ToF32Half(w[0])*q81Scale(a)))
}

// ---- 256-value blocks with q8_K ----

// kScaleMin is ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j of q4_K/q5_K.
func kScaleMin(j int, q []byte) (sc, m int32) {
	if j < 4 {
		return int32(q[j] & 63), int32(q[j+4] & 63)
	}
	return int32(q[j+4]&0xf | (q[j-4]>>6)<<4), int32(q[j+4]>>4 | (q[j]>>6)<<4)
}

// kFinish is the two-term K-quant partial (f(S)*(dw*da)) - (f(M)*(mw*da)).
func kFinish(s, m int32, dw, mw, da float32) float32 {
	return float32(i2f(s)*float32(dw*da)) - float32(i2f(m)*float32(mw*da))
}

func dotQ2_K(w, a []byte) float32 { // scales[16], qs[64], f16 d, f16 dmin
	var s, m int32
	for sb := 0; sb < 16; sb++ {
		var sqa, sa int32
		for e := sb * 16; e < sb*16+16; e++ {
			c := q8KCode(a, e)
			q := int32(w[16+(e/128)*32+e%32]>>(2*((e%128)/32))) & 3
			sqa += q * c
			sa += c
		}
		s += int32(w[sb]&0xf) * sqa
		m += int32(w[sb]>>4) * sa
	}
	return kFinish(s, m, mvHalf(w[80:]), mvHalf(w[82:]), q8KScale(a))
}

func dotQ3_K(w, a []byte) float32 { // hmask[32], qs[64], scales[12], f16 d
	hm, qs, sc := w[0:32], w[32:96], w[96:108]
	var s int32
	for sb := 0; sb < 16; sb++ {
		low := int32(sc[sb%8]) & 0xf
		if sb >= 8 {
			low = int32(sc[sb-8]) >> 4
		}
		scale := low | (int32(sc[8+sb%4])>>(2*(sb/4))&3)<<4
		var sqa int32
		for e := sb * 16; e < sb*16+16; e++ {
			c, j := e/128, (e%128)/32
			q := int32(qs[c*32+e%32]>>(2*j)) & 3
			if hm[e%32]>>(4*c+j)&1 == 0 {
				q -= 4
			}
			sqa += q * q8KCode(a, e)
		}
		s += (scale - 32) * sqa
	}
	return float32(i2f(s) * float32(mvHalf(w[108:])*q8KScale(a)))
}

func dotQ4_K(w, a []byte) float32 { // f16 d, f16 dmin, scales[12], qs[128]
	var s, m int32
	for sb := 0; sb < 8; sb++ {
		sc, mn := kScaleMin(sb, w[4:16])
		var sqa, sa int32
		for e := sb * 32; e < sb*32+32; e++ {
			c := q8KCode(a, e)
			q := int32(w[16+(e/64)*32+e%32]>>(4*((e%64)/32))) & 0xf
			sqa += q * c
			sa += c
		}
		s += sc * sqa
		m += mn * sa
	}
	return kFinish(s, m, mvHalf(w), mvHalf(w[2:]), q8KScale(a))
}

func dotQ5_K(w, a []byte) float32 { // f16 d, f16 dmin, scales[12], qh[32], qs[128]
	var s, m int32
	for sb := 0; sb < 8; sb++ {
		sc, mn := kScaleMin(sb, w[4:16])
		var sqa, sa int32
		for e := sb * 32; e < sb*32+32; e++ {
			c := q8KCode(a, e)
			ch, h := e/64, (e%64)/32
			q := int32(w[48+ch*32+e%32]>>(4*h))&0xf | (int32(w[16+e%32]>>(2*ch+h))&1)<<4
			sqa += q * c
			sa += c
		}
		s += sc * sqa
		m += mn * sa
	}
	return kFinish(s, m, mvHalf(w), mvHalf(w[2:]), q8KScale(a))
}

func dotQ6_K(w, a []byte) float32 { // ql[128], qh[64], int8 scales[16], f16 d
	ql, qh, sc := w[0:128], w[128:192], w[192:208]
	var s int32
	for sb := 0; sb < 16; sb++ {
		var sqa int32
		for e := sb * 16; e < sb*16+16; e++ {
			c, g, l := e/128, (e%128)/32, e%32
			lo := int32(ql[c*64+(g&1)*32+l])
			if g >= 2 {
				lo >>= 4
			}
			q := lo&0xf | (int32(qh[c*32+l])>>(2*g)&3)<<4
			sqa += (q - 32) * q8KCode(a, e)
		}
		s += int32(int8(sc[sb])) * sqa
	}
	return float32(i2f(s) * float32(mvHalf(w[208:])*q8KScale(a)))
}

func dotIQ4_XS(w, a []byte) float32 { // f16 d, uint16 scales_h, scales_l[4], qs[128]
	sh := int32(binary.LittleEndian.Uint16(w[2:]))
	var s int32
	for sb := 0; sb < 8; sb++ {
		ls := int32(w[4+sb/2])>>(4*(sb%2))&0xf | (sh>>(2*sb)&3)<<4
		qs := w[8+sb*16 : 8+sb*16+16]
		var sqa int32
		for j := 0; j < 32; j++ {
			sqa += kvaluesIQ4NL[nibble32(qs, j)] * q8KCode(a, sb*32+j)
		}
		s += (ls - 32) * sqa
	}
	return float32(i2f(s) * float32(mvHalf(w)*q8KScale(a)))
}

func dotTQ2_0(w, a []byte) float32 { // qs[64], f16 d
	var s int32
	for e := 0; e < 256; e++ {
		q := int32(w[(e/128)*32+e%32]>>(2*((e%128)/32))) & 3
		s += (q - 1) * q8KCode(a, e)
	}
	return float32(i2f(s) * float32(mvHalf(w[64:])*q8KScale(a)))
}

// ---- blocks longer than the q8_1 block ----

func dotQ1_0(w, a []byte, out []float32) { // f16 d, qs[16]: bit j set -> +d, clear -> -d
	dw := mvHalf(w)
	for k := range out {
		ab := a[k*36 : (k+1)*36]
		var s int32
		for j := 0; j < 32; j++ {
			e := k*32 + j
			s += (int32(w[2+e/8]>>uint(e%8)&1)*2 - 1) * q81Code(ab, j)
		}
		out[k] = float32(i2f(s) * float32(dw*q81Scale(ab)))
	}
}

func dotQ2_0(w, a []byte, out []float32) { // f16 d, qs[16]: value (q-1)*d, 2 bits per value
	dw := mvHalf(w)
	for k := range out {
		ab := a[k*36 : (k+1)*36]
		var s int32
		for j := 0; j < 32; j++ {
			e := k*32 + j
			s += (int32(w[2+e/4]>>uint(2*(e%4))&3) - 1) * q81Code(ab, j)
		}
		out[k] = float32(i2f(s) * float32(dw*q81Scale(ab)))
	}
}

func dotNVFP4(w, a []byte, out []float32) { // 4 UE4M3 scales, then 4 x qs[8] (16 values each)
	for k := range out {
		ab := a[k*36 : (k+1)*36]
		da := q81Scale(ab)
		var p [2]float32
		for h := 0; h < 2; h++ {
			sb := 2*k + h
			qs := w[4+8*sb : 4+8*sb+8]
			var s int32
			for j := 0; j < 16; j++ {
				q := int32(qs[j%8])
				if j >= 8 {
					q >>= 4
				}
				s += kvaluesMXFP4[q&0xf] * q81Code(ab, 16*h+j)
			}
			p[h] = float32(i2f(s) * float32(UE4M3ToF32Half(w[sb])*da))
		}
		out[k] = p[0] + p[1]
	}
}
