package oracle

import "encoding/binary"

// The i-quants. All are 256-value super-blocks except iq4_nl (32 values). Layouts, little-endian,
// d is f16:
//
//	iq2_xxs {d, qs[32] uint16}                 per 32 values: 4 grid bytes, then a uint32 holding
//	                                           four 7-bit sign indices and a 4-bit scale
//	iq2_xs  {d, qs[32] uint16, scales[8]}      9-bit grid index + 7-bit sign index per 8 values
//	iq2_s   {d, qs[64], qh[8], scales[8]}      qs = 32 grid low bytes then 32 sign bytes
//	iq3_xxs {d, qs[96]}                        64 grid bytes, then 8 uint32 scale+signs
//	iq3_s   {d, qs[64], qh[8], signs[32], scales[4]}
//	iq1_s   {d, qs[32], qh[8] uint16}          11-bit grid index, 3-bit scale, delta sign
//	iq1_m   {qs[32], qh[16], scales[8]}        the f16 scale is spread over the scales' top nibbles
//	iq4_nl  {d, qs[16]}                        value = d * kvalues_iq4nl[nibble]
//	iq4_xs  {d, scales_h uint16, scales_l[4], qs[128]}
//
// The dequantizers are ports of ggml's dequantize_row_<t>; the quantizers of iq4_nl and iq4_xs
// are ports of quantize_row_iq4_nl_impl. The codebook i-quants (iq1/iq2/iq3) have no quantizer
// here: see Quantize.

const iq1sDelta = float32(0.125) // ggml's IQ1S_DELTA = IQ1M_DELTA

// signOf returns -1 when bit j of the sign byte is set, else 1 (ggml: signs & kmask_iq2xs[j]).
func signOf(signs uint8, j int) float32 {
	if signs&kmaskIQ2XS[j] != 0 {
		return -1
	}
	return 1
}

func dequantIQ2_XXS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*66 : b*66+66]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		for ib := 0; ib < 8; ib++ {
			q := blk[2+8*ib : 2+8*ib+8]
			aux1 := le32(q[4:])
			db := float32(d*(0.5+float32(aux1>>28))) * 0.25
			for l := 0; l < 4; l++ {
				grid := iq2xxsGrid[8*int(q[l]):]
				signs := ksignsIQ2XS[(aux1>>uint(7*l))&127]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := 0; j < 8; j++ {
					out[j] = float32(db*float32(grid[j])) * signOf(signs, j)
				}
			}
		}
	}
}

func dequantIQ2_XS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*74 : b*74+74]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		scales := blk[66:74]
		for ib := 0; ib < 8; ib++ {
			db := [2]float32{
				float32(d*(0.5+float32(scales[ib]&0xf))) * 0.25,
				float32(d*(0.5+float32(scales[ib]>>4))) * 0.25,
			}
			for l := 0; l < 4; l++ {
				q := le16(blk[2+2*(4*ib+l):])
				grid := iq2xsGrid[8*int(q&511):]
				signs := ksignsIQ2XS[q>>9]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := 0; j < 8; j++ {
					out[j] = float32(db[l/2]*float32(grid[j])) * signOf(signs, j)
				}
			}
		}
	}
}

func dequantIQ2_S(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*82 : b*82+82]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		qs := blk[2:34]
		signs := blk[34:66]
		qh := blk[66:74]
		scales := blk[74:82]
		for ib := 0; ib < 8; ib++ {
			db := [2]float32{
				float32(d*(0.5+float32(scales[ib]&0xf))) * 0.25,
				float32(d*(0.5+float32(scales[ib]>>4))) * 0.25,
			}
			for l := 0; l < 4; l++ {
				dl := db[l/2]
				idx := int(qs[4*ib+l]) | (int(qh[ib])<<uint(8-2*l))&0x300
				grid := iq2sGrid[8*idx:]
				s := signs[4*ib+l]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := 0; j < 8; j++ {
					out[j] = float32(dl*float32(grid[j])) * signOf(s, j)
				}
			}
		}
	}
}

func dequantIQ3_XXS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*98 : b*98+98]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		qs := blk[2:66]
		sas := blk[66:98]
		for ib := 0; ib < 8; ib++ {
			aux := le32(sas[4*ib:])
			db := float32(d*(0.5+float32(aux>>28))) * 0.5
			for l := 0; l < 4; l++ {
				signs := ksignsIQ2XS[(aux>>uint(7*l))&127]
				g1 := iq3xxsGrid[4*int(qs[8*ib+2*l]):]
				g2 := iq3xxsGrid[4*int(qs[8*ib+2*l+1]):]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := 0; j < 4; j++ {
					out[j] = float32(db*float32(g1[j])) * signOf(signs, j)
					out[j+4] = float32(db*float32(g2[j])) * signOf(signs, j+4)
				}
			}
		}
	}
}

func dequantIQ3_S(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*110 : b*110+110]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		qs := blk[2:66]
		qh := blk[66:74]
		signs := blk[74:106]
		scales := blk[106:110]
		k := 0
		for ib := 0; ib < 8; ib += 2 {
			db := [2]float32{
				d * float32(1+2*int32(scales[ib/2]&0xf)),
				d * float32(1+2*int32(scales[ib/2]>>4)),
			}
			for h := 0; h < 2; h++ {
				q := qs[8*(ib+h):]
				s := signs[4*(ib+h):]
				hb := int(qh[ib+h])
				for l := 0; l < 4; l++ {
					g1 := iq3sGrid[4*(int(q[2*l])|(hb<<uint(8-2*l))&256):]
					g2 := iq3sGrid[4*(int(q[2*l+1])|(hb<<uint(7-2*l))&256):]
					for j := 0; j < 4; j++ {
						y[k+j] = float32(db[h]*float32(g1[j])) * signOf(s[l], j)
						y[k+j+4] = float32(db[h]*float32(g2[j])) * signOf(s[l], j+4)
					}
					k += 8
				}
			}
		}
	}
}

func dequantIQ1_S(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*50 : b*50+50]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		qs := blk[2:34]
		for ib := 0; ib < 8; ib++ {
			qh := le16(blk[34+2*ib:])
			dl := d * float32(2*int32((qh>>12)&7)+1)
			delta := iq1sDelta
			if qh&0x8000 != 0 {
				delta = -iq1sDelta
			}
			for l := 0; l < 4; l++ {
				idx := int(qs[4*ib+l]) | int((qh>>uint(3*l))&7)<<8
				grid := iq1sGrid[8*idx:]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := 0; j < 8; j++ {
					out[j] = dl * (float32(int8(grid[j])) + delta)
				}
			}
		}
	}
}

// iq1MScale assembles iq1_m's f16 super-block scale from the top nibbles of its four uint16
// scale words.
func iq1MScale(scales []byte) float32 {
	s0, s1, s2, s3 := le16(scales), le16(scales[2:]), le16(scales[4:]), le16(scales[6:])
	u := s0>>12 | (s1>>8)&0x00f0 | (s2>>4)&0x0f00 | s3&0xf000
	return F16ToF32(u)
}

func dequantIQ1_M(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*56 : b*56+56]
		y := dst[b*256 : b*256+256]
		qs := blk[0:32]
		qhAll := blk[32:48]
		scales := blk[48:56]
		d := iq1MScale(scales)
		for ib := 0; ib < 8; ib++ {
			sc := le16(scales[2*(ib/2):])
			dl1 := d * float32(2*int32((sc>>uint(6*(ib%2)+0))&7)+1)
			dl2 := d * float32(2*int32((sc>>uint(6*(ib%2)+3))&7)+1)
			q := qs[4*ib:]
			qh := qhAll[2*ib:]
			idx := [4]int{
				int(q[0]) | (int(qh[0])<<8)&0x700,
				int(q[1]) | (int(qh[0])<<4)&0x700,
				int(q[2]) | (int(qh[1])<<8)&0x700,
				int(q[3]) | (int(qh[1])<<4)&0x700,
			}
			delta := [4]float32{iq1sDelta, iq1sDelta, iq1sDelta, iq1sDelta}
			if qh[0]&0x08 != 0 {
				delta[0] = -iq1sDelta
			}
			if qh[0]&0x80 != 0 {
				delta[1] = -iq1sDelta
			}
			if qh[1]&0x08 != 0 {
				delta[2] = -iq1sDelta
			}
			if qh[1]&0x80 != 0 {
				delta[3] = -iq1sDelta
			}
			for l := 0; l < 4; l++ {
				dl := dl1
				if l >= 2 {
					dl = dl2
				}
				grid := iq1sGrid[8*idx[l]:]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := 0; j < 8; j++ {
					out[j] = dl * (float32(int8(grid[j])) + delta[l])
				}
			}
		}
	}
}

func dequantIQ4_NL(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*18 : b*18+18]
		y := dst[b*32 : b*32+32]
		d := halfAt(blk)
		qs := blk[2:18]
		for j := 0; j < 16; j++ {
			y[j] = d * float32(tblIQ4NL[qs[j]&0xf])
			y[j+16] = d * float32(tblIQ4NL[qs[j]>>4])
		}
	}
}

func dequantIQ4_XS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*136 : b*136+136]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		scalesH := le16(blk[2:])
		scalesL := blk[4:8]
		for ib := 0; ib < 8; ib++ {
			ls := int32((scalesL[ib/2]>>uint(4*(ib%2)))&0xf) | int32((scalesH>>uint(2*ib))&3)<<4
			dl := d * float32(ls-32)
			qs := blk[8+16*ib : 8+16*ib+16]
			out := y[32*ib : 32*ib+32]
			for j := 0; j < 16; j++ {
				out[j] = dl * float32(tblIQ4NL[qs[j]&0xf])
				out[j+16] = dl * float32(tblIQ4NL[qs[j]>>4])
			}
		}
	}
}

// ---- iq4_nl / iq4_xs quantizers ----

// bestIndexInt8 is ggml's best_index_int8 for a sorted table of n (a power of two) levels: the
// index of the level nearest to x, x picking level i once 2x reaches val[i-1]+val[i] (a branchless
// binary search on doubled values, exact in float32).
func bestIndexInt8(n int, val []int8, x float32) int {
	x = float32(x) // callers pass a product; it must be rounded before doubling
	x2 := x + x
	idx := 0
	for step := n >> 1; step > 0; step >>= 1 {
		j := idx + step
		if x2 >= float32(int32(val[j-1])+int32(val[j])) {
			idx = j
		}
	}
	return idx
}

// quantIQ4NLImpl is ggml's quantize_row_iq4_nl_impl for 16 levels (iq4_nl: one 32-value block;
// iq4_xs: a 256-value super-block of eight 32-value blocks with 6-bit scales). qw is nil or the
// importance weights of these values. ntry 7 searches the scale (ggml_quantize_chunk), ntry -1
// does not (iq4_nl's from_float_ref). blk is the output block.
//
// L is the caller's level buffer, carried from block to block as ggml's is: for an all-zero
// 32-value block ggml (at the commit of the golden vectors) stores d = 0 and leaves that block's
// levels as they were, and iq4_nl's from_float_ref does not recompute them, so its nibbles repeat
// the previous block's (the values are 0 either way). ggml's buffer starts as uninitialized stack
// memory; the oracle's starts at zero.
func quantIQ4NLImpl(x []float32, blk []byte, superBlockSize int, qw []float32, ntry int, L *[256]uint8) {
	const blockSize = 32
	values := tblIQ4NL[:]
	var weight [blockSize]float32
	var scales [8]float32

	var sigma2 float32
	for j := 0; j < superBlockSize; j++ {
		sigma2 += float32(x[j] * x[j])
	}
	sigma2 *= 2 / float32(superBlockSize)

	var q4 []byte
	if superBlockSize == blockSize {
		q4 = blk[2:18]
	} else {
		q4 = blk[8:136]
	}
	clear(q4)
	putHalf(blk, 0)

	v0 := float32(values[0])
	var maxScale, amaxScale float32
	for ib := 0; ib < superBlockSize/blockSize; ib++ {
		xb := x[ib*blockSize : ib*blockSize+blockSize]
		Lb := L[ib*blockSize : ib*blockSize+blockSize]
		if qw != nil {
			imatrixWeights(weight[:], xb, qw[ib*blockSize:], sigma2)
		} else {
			for j, v := range xb {
				weight[j] = v * v
			}
		}
		var amax, max float32
		for _, v := range xb {
			if ax := fabs(v); ax > amax {
				amax = ax
				max = v
			}
		}
		if amax < groupMaxEps {
			scales[ib] = 0
			continue
		}
		var d float32
		if ntry > 0 {
			d = -max / v0
		} else {
			d = max / v0
		}
		id := 1 / d
		var sumqx, sumq2 float32
		for j, v := range xb {
			l := bestIndexInt8(16, values, id*v)
			Lb[j] = uint8(l)
			q := float32(values[l])
			w := weight[j]
			sumqx += float32(float32(w*q) * v)
			sumq2 += float32(float32(w*q) * q)
		}
		if sumq2 > 0 {
			d = sumqx / sumq2
		} else {
			d = 0
		}
		best := d * sumqx
		for itry := -ntry; itry <= ntry; itry++ {
			id = float32(itry+int(values[0])) / max
			sumqx, sumq2 = 0, 0
			for j, v := range xb {
				l := bestIndexInt8(16, values, id*v)
				q := float32(values[l])
				w := weight[j]
				sumqx += float32(float32(w*q) * v)
				sumq2 += float32(float32(w*q) * q)
			}
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				d = sumqx / sumq2
				best = d * sumqx
			}
		}
		scales[ib] = d
		if ad := fabs(d); ad > amaxScale {
			amaxScale = ad
			maxScale = d
		}
	}

	if superBlockSize/blockSize > 1 {
		var scalesH uint16
		scalesL := blk[4:8]
		d := -maxScale / 32
		putHalf(blk, d)
		id := inv(d)
		for ib := 0; ib < superBlockSize/blockSize; ib++ {
			l := max32(-32, min32(31, nearestInt(id*scales[ib])))
			dl := d * float32(l)
			idl := inv(dl)
			Lb := L[ib*blockSize : ib*blockSize+blockSize]
			xb := x[ib*blockSize : ib*blockSize+blockSize]
			for j, v := range xb {
				Lb[j] = uint8(bestIndexInt8(16, values, idl*v))
			}
			l += 32
			lLow := uint8(l & 0xf)
			lHigh := uint16(l >> 4)
			if ib%2 == 0 {
				scalesL[ib/2] = lLow
			} else {
				scalesL[ib/2] |= lLow << 4
			}
			scalesH |= lHigh << uint(2*(ib%8))
		}
		binary.LittleEndian.PutUint16(blk[2:], scalesH)
	} else {
		putHalf(blk, scales[0])
		if ntry > 0 {
			id := inv(scales[0])
			for j := 0; j < superBlockSize; j++ {
				L[j] = uint8(bestIndexInt8(16, values, id*x[j]))
			}
		}
	}

	for i := 0; i < superBlockSize/32; i++ {
		for j := 0; j < 16; j++ {
			q4[16*i+j] = L[32*i+j] | L[32*i+16+j]<<4
		}
	}
}

// quantIQ4_NLRef is quantize_row_iq4_nl_ref (from_float_ref): no scale search.
func quantIQ4_NLRef(src []float32, dst []byte) {
	var L [256]uint8
	for b := 0; b < len(src)/32; b++ {
		quantIQ4NLImpl(src[b*32:b*32+32], dst[b*18:b*18+18], 32, nil, -1, &L)
	}
}

// quantIQ4_NLChunk is what ggml_quantize_chunk does for iq4_nl without an imatrix (ntry 7).
func quantIQ4_NLChunk(src []float32, dst []byte) {
	var L [256]uint8
	for b := 0; b < len(src)/32; b++ {
		quantIQ4NLImpl(src[b*32:b*32+32], dst[b*18:b*18+18], 32, nil, 7, &L)
	}
}

func quantIQ4_NLW(src []float32, dst []byte, qwRow []float32) {
	var L [256]uint8
	for b := 0; b < len(src)/32; b++ {
		quantIQ4NLImpl(src[b*32:b*32+32], dst[b*18:b*18+18], 32, qwRow[b*32:b*32+32], 7, &L)
	}
}

func quantIQ4_XS(src []float32, dst []byte) {
	var L [256]uint8
	for b := 0; b < len(src)/256; b++ {
		quantIQ4NLImpl(src[b*256:b*256+256], dst[b*136:b*136+136], 256, nil, 7, &L)
	}
}

func quantIQ4_XSW(src []float32, dst []byte, qwRow []float32) {
	var L [256]uint8
	for b := 0; b < len(src)/256; b++ {
		quantIQ4NLImpl(src[b*256:b*256+256], dst[b*136:b*136+136], 256, qwRow[b*256:b*256+256], 7, &L)
	}
}

func init() {
	dequantizers[IQ2_XXS] = dequantIQ2_XXS
	dequantizers[IQ2_XS] = dequantIQ2_XS
	dequantizers[IQ2_S] = dequantIQ2_S
	dequantizers[IQ3_XXS] = dequantIQ3_XXS
	dequantizers[IQ3_S] = dequantIQ3_S
	dequantizers[IQ1_S] = dequantIQ1_S
	dequantizers[IQ1_M] = dequantIQ1_M
	dequantizers[IQ4_NL] = dequantIQ4_NL
	dequantizers[IQ4_XS] = dequantIQ4_XS

	quantizers[IQ4_NL] = quantIQ4_NLRef
	quantizers[IQ4_XS] = quantIQ4_XS
	chunkQuantizers[IQ4_NL] = quantIQ4_NLChunk
	weightedQuantizers[IQ4_NL] = quantIQ4_NLW
	weightedQuantizers[IQ4_XS] = quantIQ4_XSW
}

// ---- float-path dot units (dot_units.go) ----
//
// Unit u of a 256-value type is its 32-value sub-block ib = u; iq4_nl's block is its one unit.
// The codes are the grid values with their signs folded in (db*grid*(-1) = db*(-grid) exactly),
// the grid values plus the delta for iq1_s and iq1_m, the kvalues for iq4. Groups: one of 32
// where the format has one scale per 32 values (iq2_xxs, iq3_xxs, iq3_s, iq1_s, iq4_nl,
// iq4_xs), two of 16 where it has one per 16 (iq2_xs, iq2_s, iq1_m). The scales are the
// dequantizers' own expressions.

func init() {
	unitDecoders[IQ2_XXS] = unitIQ2_XXS
	unitDecoders[IQ2_XS] = unitIQ2_XS
	unitDecoders[IQ2_S] = unitIQ2_S
	unitDecoders[IQ3_XXS] = unitIQ3_XXS
	unitDecoders[IQ3_S] = unitIQ3_S
	unitDecoders[IQ1_S] = unitIQ1_S
	unitDecoders[IQ1_M] = unitIQ1_M
	unitDecoders[IQ4_NL] = unitIQ4_NL
	unitDecoders[IQ4_XS] = unitIQ4_XS
}

// signedGrid writes the n grid magnitudes of grid, signed by the bits of signs (bit j set:
// negative), to c.
func signedGrid(c []float32, grid []byte, signs uint8, n int) {
	for j := 0; j < n; j++ {
		c[j] = float32(grid[j]) * signOf(signs, j)
	}
}

// iq2_xxs: bytes 2+8u .. 9+8u (4 grid bytes, then scale and signs); one group of 32.
func unitIQ2_XXS(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	d := halfAt(blk)
	q := blk[2+8*u : 2+8*u+8]
	aux1 := le32(q[4:])
	db := float32(d*(0.5+float32(aux1>>28))) * 0.25
	for l := 0; l < 4; l++ {
		signedGrid(c[8*l:], iq2xxsGrid[8*int(q[l]):], ksignsIQ2XS[(aux1>>uint(7*l))&127], 8)
	}
	return append(g, unitGroup{n: 32, s: db})
}

// iq2_xs: qs[4u .. 4u+3] (bytes 2+8u .. 9+8u), scales[u]; two groups of 16.
func unitIQ2_XS(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	d := halfAt(blk)
	sc := blk[66+u]
	for l := 0; l < 4; l++ {
		q := le16(blk[2+2*(4*u+l):])
		signedGrid(c[8*l:], iq2xsGrid[8*int(q&511):], ksignsIQ2XS[q>>9], 8)
	}
	return append(g,
		unitGroup{n: 16, s: float32(d*(0.5+float32(sc&0xf))) * 0.25},
		unitGroup{n: 16, s: float32(d*(0.5+float32(sc>>4))) * 0.25})
}

// iq2_s: qs[4u .. 4u+3], signs[4u .. 4u+3], qh[u], scales[u]; two groups of 16.
func unitIQ2_S(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	d := halfAt(blk)
	qs, signs := blk[2+4*u:], blk[34+4*u:]
	qh, sc := blk[66+u], blk[74+u]
	for l := 0; l < 4; l++ {
		idx := int(qs[l]) | (int(qh)<<uint(8-2*l))&0x300
		signedGrid(c[8*l:], iq2sGrid[8*idx:], signs[l], 8)
	}
	return append(g,
		unitGroup{n: 16, s: float32(d*(0.5+float32(sc&0xf))) * 0.25},
		unitGroup{n: 16, s: float32(d*(0.5+float32(sc>>4))) * 0.25})
}

// iq3_xxs: qs[8u .. 8u+7] (bytes 2+8u ..), scales_and_signs word u (bytes 66+4u ..); one group.
func unitIQ3_XXS(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	d := halfAt(blk)
	qs := blk[2+8*u:]
	aux := le32(blk[66+4*u:])
	db := float32(d*(0.5+float32(aux>>28))) * 0.5
	for l := 0; l < 4; l++ {
		signs := ksignsIQ2XS[(aux>>uint(7*l))&127]
		signedGrid(c[8*l:], iq3xxsGrid[4*int(qs[2*l]):], signs, 4)
		signedGrid(c[8*l+4:], iq3xxsGrid[4*int(qs[2*l+1]):], signs>>4, 4)
	}
	return append(g, unitGroup{n: 32, s: db})
}

// iq3_s: qs[8u .. 8u+7], qh[u], signs[4u .. 4u+3], nibble u%2 of scales[u/2]; one group.
func unitIQ3_S(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	d := halfAt(blk)
	qs, signs := blk[2+8*u:], blk[74+4*u:]
	hb := int(blk[66+u])
	db := d * float32(1+2*int32((blk[106+u/2]>>uint(4*(u%2)))&0xf))
	for l := 0; l < 4; l++ {
		g1 := iq3sGrid[4*(int(qs[2*l])|(hb<<uint(8-2*l))&256):]
		g2 := iq3sGrid[4*(int(qs[2*l+1])|(hb<<uint(7-2*l))&256):]
		signedGrid(c[8*l:], g1, signs[l], 4)
		signedGrid(c[8*l+4:], g2, signs[l]>>4, 4)
	}
	return append(g, unitGroup{n: 32, s: db})
}

// iq1Codes writes the 8 values of iq1s_grid entry idx plus delta to c (exact: -1, 0 or 1 plus
// ±1/8).
func iq1Codes(c []float32, idx int, delta float32) {
	grid := iq1sGrid[8*idx:]
	for j := 0; j < 8; j++ {
		c[j] = float32(int8(grid[j])) + delta
	}
}

// iq1_s: qs[4u .. 4u+3], qh[u] (uint16: index bits, scale, delta sign); one group.
func unitIQ1_S(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	d := halfAt(blk)
	qs := blk[2+4*u:]
	qh := le16(blk[34+2*u:])
	dl := d * float32(2*int32((qh>>12)&7)+1)
	delta := iq1sDelta
	if qh&0x8000 != 0 {
		delta = -iq1sDelta
	}
	for l := 0; l < 4; l++ {
		iq1Codes(c[8*l:], int(qs[l])|int((qh>>uint(3*l))&7)<<8, delta)
	}
	return append(g, unitGroup{n: 32, s: dl})
}

// iq1_m: qs[4u .. 4u+3], qh[2u .. 2u+1], the 3-bit scales u of scales word u/2 and the f16
// scale from all four scale words; two groups of 16.
func unitIQ1_M(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	scales := blk[48:56]
	d := iq1MScale(scales)
	sc := le16(scales[2*(u/2):])
	dl1 := d * float32(2*int32((sc>>uint(6*(u%2)+0))&7)+1)
	dl2 := d * float32(2*int32((sc>>uint(6*(u%2)+3))&7)+1)
	qs := blk[4*u:]
	qh := blk[32+2*u:]
	for l := 0; l < 4; l++ {
		h := qh[l/2] >> uint(4*(l%2)) // bits 0-2: index bits 8-10, bit 3: delta sign
		delta := iq1sDelta
		if h&0x08 != 0 {
			delta = -iq1sDelta
		}
		iq1Codes(c[8*l:], int(qs[l])|int(h&7)<<8, delta)
	}
	return append(g, unitGroup{n: 16, s: dl1}, unitGroup{n: 16, s: dl2})
}

// iq4Codes writes the kvalues of the 32 nibbles of qs (low nibbles are values 0..15) to c.
func iq4Codes(qs []byte, c *[UnitSize]float32) {
	for j := 0; j < 16; j++ {
		c[j] = float32(tblIQ4NL[qs[j]&0xf])
		c[j+16] = float32(tblIQ4NL[qs[j]>>4])
	}
}

// iq4_nl: the whole block (d, qs[16]); one group.
func unitIQ4_NL(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	iq4Codes(blk[2:18], c)
	return append(g, unitGroup{n: 32, s: halfAt(blk)})
}

// iq4_xs: qs[16u .. 16u+15] (bytes 8+16u ..), the 6-bit scale u from scales_l and scales_h;
// one group.
func unitIQ4_XS(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	d := halfAt(blk)
	scalesH := le16(blk[2:])
	ls := int32((blk[4+u/2]>>uint(4*(u%2)))&0xf) | int32((scalesH>>uint(2*u))&3)<<4
	iq4Codes(blk[8+16*u:], c)
	return append(g, unitGroup{n: 32, s: d * float32(ls-32)})
}
