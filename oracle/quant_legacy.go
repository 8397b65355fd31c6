package oracle

import (
	"encoding/binary"
	"math"
)

// The "legacy" 32-value block formats (q4_0, q4_1, q5_0, q5_1, q8_0, q8_1) and the sign/2-bit
// formats q1_0 (128 values) and q2_0 (64 values). Layouts, little-endian, d/m/s are f16:
//
//	q4_0 {d, qs[16]}            value j: (nibble - 8) * d, low nibbles hold j < 16
//	q4_1 {d, m, qs[16]}         value j: nibble*d + m
//	q5_0 {d, qh[4], qs[16]}     value j: ((nibble | bit j of qh << 4) - 16) * d
//	q5_1 {d, m, qh[4], qs[16]}  value j: (nibble | bit j of qh << 4)*d + m
//	q8_0 {d, qs[32] int8}       value j: q*d
//	q8_1 {d, s, qs[32] int8}    value j: q*d; s = d*sum(q) (for integer dot products)
//	q1_0 {d, qs[16]}            value j: bit j set ? d : -d
//	q2_0 {d, qs[16]}            value j: (2-bit field j - 1) * d, field j at bits 2*(j%4) of byte j/4

const groupMaxEps = float32(1e-15) // ggml's GROUP_MAX_EPS

func dequantQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*18 : b*18+18]
		y := dst[b*32 : b*32+32]
		d := halfAt(blk)
		qs := blk[2:18]
		for j := 0; j < 16; j++ {
			y[j] = float32(int32(qs[j]&0x0f)-8) * d
			y[j+16] = float32(int32(qs[j]>>4)-8) * d
		}
	}
}

func dequantQ4_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*20 : b*20+20]
		y := dst[b*32 : b*32+32]
		d := halfAt(blk)
		m := halfAt(blk[2:])
		qs := blk[4:20]
		for j := 0; j < 16; j++ {
			y[j] = float32(float32(qs[j]&0x0f)*d) + m
			y[j+16] = float32(float32(qs[j]>>4)*d) + m
		}
	}
}

func dequantQ5_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*22 : b*22+22]
		y := dst[b*32 : b*32+32]
		d := halfAt(blk)
		qh := le32(blk[2:])
		qs := blk[6:22]
		for j := 0; j < 16; j++ {
			xh0 := uint8((qh>>uint(j))<<4) & 0x10
			xh1 := uint8(qh>>uint(j+12)) & 0x10
			y[j] = float32(int32(qs[j]&0x0f|xh0)-16) * d
			y[j+16] = float32(int32(qs[j]>>4|xh1)-16) * d
		}
	}
}

func dequantQ5_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*24 : b*24+24]
		y := dst[b*32 : b*32+32]
		d := halfAt(blk)
		m := halfAt(blk[2:])
		qh := le32(blk[4:])
		qs := blk[8:24]
		for j := 0; j < 16; j++ {
			xh0 := uint8((qh>>uint(j))<<4) & 0x10
			xh1 := uint8(qh>>uint(j+12)) & 0x10
			y[j] = float32(float32(qs[j]&0x0f|xh0)*d) + m
			y[j+16] = float32(float32(qs[j]>>4|xh1)*d) + m
		}
	}
}

func dequantQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*34 : b*34+34]
		y := dst[b*32 : b*32+32]
		d := halfAt(blk)
		for j, q := range blk[2:34] {
			y[j] = float32(int8(q)) * d
		}
	}
}

// dequantQ8_1 decodes q8_1 as d*q (ggml has no q8_1 dequantizer; s is not needed for values).
func dequantQ8_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*36 : b*36+36]
		y := dst[b*32 : b*32+32]
		d := halfAt(blk)
		for j, q := range blk[4:36] {
			y[j] = float32(int8(q)) * d
		}
	}
}

func dequantQ1_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/128; b++ {
		blk := src[b*18 : b*18+18]
		y := dst[b*128 : b*128+128]
		d := halfAt(blk)
		pm := [2]float32{-d, d} // bit clear: -d, bit set: d
		qs := blk[2:18]
		for j := 0; j < 128; j++ {
			y[j] = pm[(qs[j/8]>>uint(j%8))&1]
		}
	}
}

func dequantQ2_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/64; b++ {
		blk := src[b*18 : b*18+18]
		y := dst[b*64 : b*64+64]
		d := halfAt(blk)
		// the four products (q-1)*d, each computed as ggml computes it (0*d keeps d's sign)
		lv := [4]float32{float32(-1) * d, float32(0) * d, float32(1) * d, float32(2) * d}
		for i, q := range blk[2:18] {
			y[4*i] = lv[q&3]
			y[4*i+1] = lv[(q>>2)&3]
			y[4*i+2] = lv[(q>>4)&3]
			y[4*i+3] = lv[q>>6]
		}
	}
}

// ---- reference quantizers (quantize_row_<t>_ref) ----

// absMax returns the first value of largest magnitude in x and that magnitude, scanning as
// ggml's "if (amax < fabsf(v)) { amax = fabsf(v); max = v; }" does.
func absMax(x []float32) (max, amax float32) {
	for _, v := range x {
		if amax < fabs(v) {
			amax = fabs(v)
			max = v
		}
	}
	return max, amax
}

// minMax scans x as ggml's q4_1/q5_1 quantizers do (start at FLT_MAX / -FLT_MAX).
func minMax(x []float32) (min, max float32) {
	min, max = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < min {
			min = v
		}
		if v > max {
			max = v
		}
	}
	return min, max
}

// amaxOf is ggml's "amax = MAX(amax, fabsf(v))" loop (MAX(a,b) = a > b ? a : b).
func amaxOf(x []float32) float32 {
	var amax float32
	for _, v := range x {
		if a := fabs(v); !(amax > a) {
			amax = a
		}
	}
	return amax
}

// inv is ggml's "d ? 1.0f/d : 0.0f" (a NaN d counts as true).
func inv(d float32) float32 {
	if d != 0 {
		return 1 / d
	}
	return 0
}

func quantQ4_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*18 : b*18+18]
		max, _ := absMax(x)
		d := max / -8
		id := inv(d)
		putHalf(blk, d)
		for j := 0; j < 16; j++ {
			x0 := float32(x[j] * id)
			x1 := float32(x[j+16] * id)
			xi0 := min(15, int8(cvtI32(x0+8.5)))
			xi1 := min(15, int8(cvtI32(x1+8.5)))
			blk[2+j] = uint8(xi0) | uint8(xi1)<<4
		}
	}
}

func quantQ4_1(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*20 : b*20+20]
		mn, mx := minMax(x)
		d := (mx - mn) / 15
		id := inv(d)
		putHalf(blk, d)
		putHalf(blk[2:], mn)
		for j := 0; j < 16; j++ {
			x0 := float32((x[j] - mn) * id)
			x1 := float32((x[j+16] - mn) * id)
			xi0 := min(15, int8(cvtI32(x0+0.5)))
			xi1 := min(15, int8(cvtI32(x1+0.5)))
			blk[4+j] = uint8(xi0) | uint8(xi1)<<4
		}
	}
}

func quantQ5_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*22 : b*22+22]
		max, _ := absMax(x)
		d := max / -16
		id := inv(d)
		putHalf(blk, d)
		var qh uint32
		for j := 0; j < 16; j++ {
			x0 := float32(x[j] * id)
			x1 := float32(x[j+16] * id)
			xi0 := uint8(min(31, int8(cvtI32(x0+16.5))))
			xi1 := uint8(min(31, int8(cvtI32(x1+16.5))))
			blk[6+j] = xi0&0x0f | (xi1&0x0f)<<4
			qh |= uint32((xi0&0x10)>>4) << uint(j)
			qh |= uint32((xi1&0x10)>>4) << uint(j+16)
		}
		binary.LittleEndian.PutUint32(blk[2:], qh)
	}
}

func quantQ5_1(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*24 : b*24+24]
		mn, mx := minMax(x)
		d := (mx - mn) / 31
		id := inv(d)
		putHalf(blk, d)
		putHalf(blk[2:], mn)
		var qh uint32
		for j := 0; j < 16; j++ {
			x0 := float32((x[j] - mn) * id)
			x1 := float32((x[j+16] - mn) * id)
			xi0 := uint8(cvtI32(x0 + 0.5))
			xi1 := uint8(cvtI32(x1 + 0.5))
			blk[8+j] = xi0&0x0f | (xi1&0x0f)<<4
			qh |= uint32((xi0&0x10)>>4) << uint(j)
			qh |= uint32((xi1&0x10)>>4) << uint(j+16)
		}
		binary.LittleEndian.PutUint32(blk[4:], qh)
	}
}

func quantQ8_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*34 : b*34+34]
		d := amaxOf(x) / 127
		id := inv(d)
		putHalf(blk, d)
		for j, v := range x {
			blk[2+j] = uint8(int8(cvtI32(roundAway(v * id))))
		}
	}
}

func quantQ8_1(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*36 : b*36+36]
		d := amaxOf(x) / 127
		id := inv(d)
		putHalf(blk, d)
		var sum int32
		for j := 0; j < 16; j++ {
			q0 := int8(cvtI32(roundAway(x[j] * id)))
			q1 := int8(cvtI32(roundAway(x[j+16] * id)))
			blk[4+j] = uint8(q0)
			blk[4+16+j] = uint8(q1)
			sum += int32(q0) + int32(q1)
		}
		putHalf(blk[2:], float32(sum)*d)
	}
}

func quantQ1_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/128; b++ {
		x := src[b*128 : b*128+128]
		blk := dst[b*18 : b*18+18]
		var sumAbs float32
		for _, v := range x {
			sumAbs += fabs(v)
		}
		putHalf(blk, sumAbs/128)
		qs := blk[2:18]
		clear(qs)
		for j, v := range x {
			if v >= 0 {
				qs[j/8] |= 1 << uint(j%8)
			}
		}
	}
}

func quantQ2_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/64; b++ {
		x := src[b*64 : b*64+64]
		blk := dst[b*18 : b*18+18]
		var amax float32
		for _, v := range x {
			if a := fabs(v); a > amax {
				amax = a
			}
		}
		d := amax
		var id float32
		if d > 0 {
			id = 1 / d
		}
		putHalf(blk, d)
		qs := blk[2:18]
		clear(qs)
		for j, w := range x {
			q := cvtI32(roundAway(w*id)) + 1
			q = max(0, min(3, q))
			qs[j/4] |= uint8(q) << uint((j%4)*2)
		}
	}
}

// ---- importance-weighted quantizers (quantize_row_<t>_impl with quant_weights) ----

// rowSigma2 is sum(x*x)/len(x) accumulated in float32 in order, as the legacy impls compute it.
func rowSigma2(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return s / float32(len(x))
}

// imatrixWeights fills w[j] = qw[j] * sqrtf(sigma2 + x[j]*x[j]).
func imatrixWeights(w, x, qw []float32, sigma2 float32) {
	sigma2 = float32(sigma2) // a rounding barrier: callers compute sigma2 with a multiply
	for j := range w {
		w[j] = qw[j] * sqrtf(sigma2+float32(x[j]*x[j]))
	}
}

func quantQ4_0W(src []float32, dst []byte, qwRow []float32) {
	sigma2 := rowSigma2(src)
	var weight [32]float32
	var L [32]int8
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*18 : b*18+18]
		imatrixWeights(weight[:], x, qwRow[b*32:b*32+32], sigma2)
		d := makeQxQuants(32, 8, x, L[:], 1, weight[:])
		putHalf(blk, d)
		for j := 0; j < 16; j++ {
			blk[2+j] = uint8(L[j]) | uint8(L[j+16])<<4
		}
	}
}

func quantQ4_1W(src []float32, dst []byte, qwRow []float32) {
	sigma2 := rowSigma2(src)
	var weight [32]float32
	var L, Laux [32]uint8
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*20 : b*20+20]
		imatrixWeights(weight[:], x, qwRow[b*32:b*32+32], sigma2)
		d, mn := makeQkx3Quants(32, 15, x, weight[:], L[:], Laux[:], -0.9, 0.05, 36, false)
		putHalf(blk, d)
		putHalf(blk[2:], -mn)
		for j := 0; j < 16; j++ {
			blk[4+j] = L[j] | L[j+16]<<4
		}
	}
}

func quantQ5_0W(src []float32, dst []byte, qwRow []float32) {
	sigma2 := rowSigma2(src)
	var weight [32]float32
	var L [32]int8
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*22 : b*22+22]
		imatrixWeights(weight[:], x, qwRow[b*32:b*32+32], sigma2)
		d := makeQxQuants(32, 16, x, L[:], 1, weight[:])
		putHalf(blk, d)
		var qh uint32
		for j := 0; j < 16; j++ {
			xi0, xi1 := uint8(L[j]), uint8(L[j+16])
			blk[6+j] = xi0&0x0f | (xi1&0x0f)<<4
			qh |= uint32((xi0&0x10)>>4) << uint(j)
			qh |= uint32((xi1&0x10)>>4) << uint(j+16)
		}
		binary.LittleEndian.PutUint32(blk[2:], qh)
	}
}

func quantQ5_1W(src []float32, dst []byte, qwRow []float32) {
	sigma2 := rowSigma2(src)
	var weight [32]float32
	var L, Laux [32]uint8
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*24 : b*24+24]
		imatrixWeights(weight[:], x, qwRow[b*32:b*32+32], sigma2)
		d, mn := makeQkx3Quants(32, 31, x, weight[:], L[:], Laux[:], -0.9, 0.05, 36, false)
		putHalf(blk, d)
		putHalf(blk[2:], -mn)
		var qh uint32
		for j := 0; j < 16; j++ {
			xi0, xi1 := L[j], L[j+16]
			blk[8+j] = xi0&0x0f | (xi1&0x0f)<<4
			qh |= uint32((xi0&0x10)>>4) << uint(j)
			qh |= uint32((xi1&0x10)>>4) << uint(j+16)
		}
		binary.LittleEndian.PutUint32(blk[4:], qh)
	}
}

func init() {
	dequantizers[Q4_0] = dequantQ4_0
	dequantizers[Q4_1] = dequantQ4_1
	dequantizers[Q5_0] = dequantQ5_0
	dequantizers[Q5_1] = dequantQ5_1
	dequantizers[Q8_0] = dequantQ8_0
	dequantizers[Q8_1] = dequantQ8_1
	dequantizers[Q1_0] = dequantQ1_0
	dequantizers[Q2_0] = dequantQ2_0

	quantizers[Q4_0] = quantQ4_0
	quantizers[Q4_1] = quantQ4_1
	quantizers[Q5_0] = quantQ5_0
	quantizers[Q5_1] = quantQ5_1
	quantizers[Q8_0] = quantQ8_0
	quantizers[Q8_1] = quantQ8_1
	quantizers[Q1_0] = quantQ1_0
	quantizers[Q2_0] = quantQ2_0

	weightedQuantizers[Q4_0] = quantQ4_0W
	weightedQuantizers[Q4_1] = quantQ4_1W
	weightedQuantizers[Q5_0] = quantQ5_0W
	weightedQuantizers[Q5_1] = quantQ5_1W
}

// ---- float-path dot units (dot_units.go) ----
//
// The 32-value types are one unit, one group (the block's d, and m where the type has one);
// q2_0 is two units and q1_0 four, each one group with the block's d.

func init() {
	unitDecoders[Q4_0] = unitQ4_0
	unitDecoders[Q4_1] = unitQ4_1
	unitDecoders[Q5_0] = unitQ5_0
	unitDecoders[Q5_1] = unitQ5_1
	unitDecoders[Q8_0] = unitQ8_0
	unitDecoders[Q8_1] = unitQ8_1
	unitDecoders[Q1_0] = unitQ1_0
	unitDecoders[Q2_0] = unitQ2_0
}

// nibbleCodes writes the 32 nibbles of qs (low nibbles are values 0..15) minus bias to c, with
// bit j of qh (when qh is not nil) as the fifth bit of value j.
func nibbleCodes(qs []byte, qh *uint32, bias int32, c *[UnitSize]float32) {
	for j := 0; j < 16; j++ {
		lo, hi := int32(qs[j]&0x0f), int32(qs[j]>>4)
		if qh != nil {
			lo |= int32((*qh>>uint(j))&1) << 4
			hi |= int32((*qh>>uint(j+16))&1) << 4
		}
		c[j] = float32(lo - bias)
		c[j+16] = float32(hi - bias)
	}
}

func unitQ4_0(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	nibbleCodes(blk[2:18], nil, 8, c)
	return append(g, unitGroup{n: 32, s: halfAt(blk)})
}

func unitQ4_1(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	nibbleCodes(blk[4:20], nil, 0, c)
	return append(g, unitGroup{n: 32, s: halfAt(blk), m: halfAt(blk[2:]), hasMin: true})
}

func unitQ5_0(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qh := le32(blk[2:])
	nibbleCodes(blk[6:22], &qh, 16, c)
	return append(g, unitGroup{n: 32, s: halfAt(blk)})
}

func unitQ5_1(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qh := le32(blk[4:])
	nibbleCodes(blk[8:24], &qh, 0, c)
	return append(g, unitGroup{n: 32, s: halfAt(blk), m: halfAt(blk[2:]), hasMin: true})
}

func unitQ8_0(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	for j, q := range blk[2:34] {
		c[j] = float32(int8(q))
	}
	return append(g, unitGroup{n: 32, s: halfAt(blk)})
}

func unitQ8_1(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	for j, q := range blk[4:36] {
		c[j] = float32(int8(q))
	}
	return append(g, unitGroup{n: 32, s: halfAt(blk)})
}

// q1_0: bit set +1, clear -1 (value ±d); unit u holds bits 32u .. 32u+31.
func unitQ1_0(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qs := blk[2+4*u : 2+4*u+4]
	for j := range c {
		c[j] = float32(2*int32((qs[j/8]>>uint(j%8))&1) - 1)
	}
	return append(g, unitGroup{n: 32, s: halfAt(blk)})
}

// q2_0: code = 2-bit field - 1; unit u holds fields 32u .. 32u+31 (bytes 8u .. 8u+7).
func unitQ2_0(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qs := blk[2+8*u : 2+8*u+8]
	for j := range c {
		c[j] = float32(int32((qs[j/4]>>uint(2*(j%4)))&3) - 1)
	}
	return append(g, unitGroup{n: 32, s: halfAt(blk)})
}
