package oracle

import "math"

// The 4-bit float formats. Both store E2M1 codes whose values, doubled, are kvalues_fp4
// (0, 1, 2, 3, 4, 6, 8, 12 and their negatives), so the block scales are decoded at half value:
//
//	mxfp4 {e, qs[16]}      32 values; scale E8M0ToF32Half(e); low nibbles hold values 0..15
//	nvfp4 {d[4], qs[32]}   64 values in four 16-value sub-blocks, scale UE4M3ToF32Half(d[s]);
//	                       within sub-block s, byte j holds value j (low) and j+8 (high)

func dequantMXFP4(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*17 : b*17+17]
		y := dst[b*32 : b*32+32]
		d := E8M0ToF32Half(blk[0])
		qs := blk[1:17]
		for j := 0; j < 16; j++ {
			y[j] = float32(tblFP4[qs[j]&0xf]) * d
			y[j+16] = float32(tblFP4[qs[j]>>4]) * d
		}
	}
}

func dequantNVFP4(src []byte, dst []float32) {
	for b := 0; b < len(dst)/64; b++ {
		blk := src[b*36 : b*36+36]
		y := dst[b*64 : b*64+64]
		for s := 0; s < 4; s++ {
			d := UE4M3ToF32Half(blk[s])
			qs := blk[4+8*s : 4+8*s+8]
			yb := y[16*s : 16*s+16]
			for j := 0; j < 8; j++ {
				yb[j] = float32(tblFP4[qs[j]&0xf]) * d
				yb[j+8] = float32(tblFP4[qs[j]>>4]) * d
			}
		}
	}
}

// bestIndexFP4 is ggml's best_index_mxfp4: the first code whose value kvalues*e is nearest x.
func bestIndexFP4(x, e float32) uint8 {
	best := 0
	bestErr := fabs(float32(float32(tblFP4[0])*e) - x)
	for i := 1; i < 16; i++ {
		if err := fabs(float32(float32(tblFP4[i])*e) - x); err < bestErr {
			best = i
			bestErr = err
		}
	}
	return uint8(best)
}

// log2f is a float32 log2 (the float64 log2 rounded once); ggml's mxfp4 quantizer only takes its
// floor, which agrees with a correctly rounded log2f.
func log2f(f float32) float32 {
	return float32(math.Log2(float64(f)))
}

func quantMXFP4(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*17 : b*17+17]
		_, amax := absMax(x)
		var e uint8
		if amax > 0 {
			e = uint8(cvtI32(float32(math.Floor(float64(log2f(amax)))) - 2 + 127))
		}
		d := E8M0ToF32Half(e)
		blk[0] = e
		for j := 0; j < 16; j++ {
			blk[1+j] = bestIndexFP4(x[j], d) | bestIndexFP4(x[j+16], d)<<4
		}
	}
}

func quantNVFP4(src []float32, dst []byte) {
	for b := 0; b < len(src)/64; b++ {
		blk := dst[b*36 : b*36+36]
		for s := 0; s < 4; s++ {
			xb := src[b*64+16*s : b*64+16*s+16]
			_, amax := absMax(xb)
			ue := F32ToUE4M3(amax / 6)
			blk[s] = ue
			d := UE4M3ToF32Half(ue)
			for j := 0; j < 8; j++ {
				blk[4+8*s+j] = bestIndexFP4(xb[j], d) | bestIndexFP4(xb[8+j], d)<<4
			}
		}
	}
}

func init() {
	dequantizers[MXFP4] = dequantMXFP4
	dequantizers[NVFP4] = dequantNVFP4
	quantizers[MXFP4] = quantMXFP4
	quantizers[NVFP4] = quantNVFP4
}

// ---- float-path dot units (dot_units.go) ----
//
// The codes are the codebook values float32(kvalues_fp4[q]) (the doubled E2M1 values) and the
// scales the half scales Dequantize multiplies them by.
//
//	mxfp4 one unit, one group of 32: s = E8M0ToF32Half(e); value j from the low (j < 16) or
//	      high nibble of qs[j&15]
//	nvfp4 unit u covers sub-blocks 2u and 2u+1 (bytes 4+16u .. 4+16u+15): two groups of 16,
//	      s = UE4M3ToF32Half(d[2u]) and UE4M3ToF32Half(d[2u+1])

func init() {
	unitDecoders[MXFP4] = unitMXFP4
	unitDecoders[NVFP4] = unitNVFP4
}

func unitMXFP4(blk []byte, _ int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qs := blk[1:17]
	for j := 0; j < 16; j++ {
		c[j] = float32(tblFP4[qs[j]&0xf])
		c[j+16] = float32(tblFP4[qs[j]>>4])
	}
	return append(g, unitGroup{n: 32, s: E8M0ToF32Half(blk[0])})
}

func unitNVFP4(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	for h := 0; h < 2; h++ {
		s := 2*u + h
		qs := blk[4+8*s : 4+8*s+8]
		for j := 0; j < 8; j++ {
			c[16*h+j] = float32(tblFP4[qs[j]&0xf])
			c[16*h+j+8] = float32(tblFP4[qs[j]>>4])
		}
		g = append(g, unitGroup{n: 16, s: UE4M3ToF32Half(blk[s])})
	}
	return g
}
