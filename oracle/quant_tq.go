package oracle

import "math"

// The ternary formats of BitNet b1.58 / TriLM (256-value blocks, values in {-d, 0, d}):
//
//	tq1_0 {qs[48], qh[4], d}  five trits per qs byte and four per qh byte, stored as the fixed-point
//	                          fraction ceil(t*256/243) so that multiplying by 3 pops the top trit
//	tq2_0 {qs[64], d}         2-bit fields (trit+1), field l of byte m at bits 2l

var pow3 = [6]uint8{1, 3, 9, 27, 81, 243}

// tritAt extracts the n-th trit of a tq1_0 byte as ggml does: ((uint8(q*3^n)) * 3) >> 8.
func tritAt(q uint8, n int) int32 {
	v := q * pow3[n] // uint8 wrap-around is the point
	return int32((uint16(v) * 3) >> 8)
}

func dequantTQ1_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*54 : b*54+54]
		y := dst[b*256 : b*256+256]
		qs := blk[0:48]
		qh := blk[48:52]
		d := halfAt(blk[52:])
		k := 0
		for n := 0; n < 5; n++ {
			for m := 0; m < 32; m++ {
				y[k] = float32(tritAt(qs[m], n)-1) * d
				k++
			}
		}
		for n := 0; n < 5; n++ {
			for m := 0; m < 16; m++ {
				y[k] = float32(tritAt(qs[32+m], n)-1) * d
				k++
			}
		}
		for n := 0; n < 4; n++ {
			for j := 0; j < 4; j++ {
				y[k] = float32(tritAt(qh[j], n)-1) * d
				k++
			}
		}
	}
}

func dequantTQ2_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*66 : b*66+66]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk[64:])
		k := 0
		for j := 0; j < 64; j += 32 {
			for l := 0; l < 4; l++ {
				for m := 0; m < 32; m++ {
					q := int32((blk[j+m] >> uint(l*2)) & 3)
					y[k] = float32(q-1) * d
					k++
				}
			}
		}
	}
}

// lroundf is C's lroundf on x86-64 glibc: round half away from zero; NaN and out-of-range values
// give LONG_MIN.
func lroundf(f float32) int64 {
	r := math.Round(float64(f))
	if r != r || r >= 9223372036854775807 || r < -9223372036854775808 {
		return math.MinInt64
	}
	return int64(r)
}

// trit is ggml's "lroundf(x * id) + 1" stored in an int.
func trit(x, id float32) int32 {
	return int32(lroundf(x*id) + 1)
}

// tritPack turns the base-3 number q into ggml's fixed-point byte ceil(q*256/243).
func tritPack(q uint8) uint8 {
	return uint8((uint32(q)*256 + 242) / 243)
}

func quantTQ1_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*54 : b*54+54]
		d := amaxOf(x)
		id := inv(d)
		putHalf(blk[52:], d)
		for m := 0; m < 32; m++ {
			var q uint8
			for n := 0; n < 5; n++ {
				q = q*3 + uint8(trit(x[m+n*32], id))
			}
			blk[m] = tritPack(q)
		}
		x = x[160:]
		for m := 0; m < 16; m++ {
			var q uint8
			for n := 0; n < 5; n++ {
				q = q*3 + uint8(trit(x[m+n*16], id))
			}
			blk[32+m] = tritPack(q)
		}
		x = x[80:]
		for j := 0; j < 4; j++ {
			var q uint8
			for m := 0; m < 4; m++ {
				q = q*3 + uint8(trit(x[j+m*4], id))
			}
			q *= 3
			blk[48+j] = tritPack(q)
		}
	}
}

func quantTQ2_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*66 : b*66+66]
		d := amaxOf(x)
		id := inv(d)
		putHalf(blk[64:], d)
		for j := 0; j < 64; j += 32 {
			for m := 0; m < 32; m++ {
				var q uint8
				for n := 0; n < 4; n++ {
					q += uint8((trit(x[m+n*32], id) & 3) << uint(2*n))
				}
				blk[j+m] = q
			}
			x = x[128:]
		}
	}
}

func init() {
	dequantizers[TQ1_0] = dequantTQ1_0
	dequantizers[TQ2_0] = dequantTQ2_0
	quantizers[TQ1_0] = quantTQ1_0
	quantizers[TQ2_0] = quantTQ2_0
}

// ---- float-path dot units (dot_units.go) ----
//
// Both ternary types have one scale per 256-value block, so each of their eight units is one
// group of 32 with s = d and codes trit-1 in {-1, 0, 1} (Dequantize's float32(t-1)*d is d*c).
//
//	tq1_0 units 0..4: trit u of qs[0..31] (value j from qs[j]); unit 5: trits 0 (values 0..15)
//	      and 1 (16..31) of qs[32..47]; unit 6: trits 2 and 3 of qs[32..47]; unit 7: trit 4 of
//	      qs[32..47] (values 0..15), then trit n of qh[i] for value 16+4n+i
//	tq2_0 unit u: bits 2*(u&3) of bytes 32*(u>>2) .. 32*(u>>2)+31 (value j from byte j)

func init() {
	unitDecoders[TQ1_0] = unitTQ1_0
	unitDecoders[TQ2_0] = unitTQ2_0
}

// tq1Place returns the byte (index in the block) and the trit number of value k (0..255) of a
// tq1_0 block, following dequantTQ1_0.
func tq1Place(k int) (byteIdx, n int) {
	switch {
	case k < 160:
		return k % 32, k / 32
	case k < 240:
		return 32 + (k-160)%16, (k - 160) / 16
	}
	return 48 + (k-240)%4, (k - 240) / 4
}

func unitTQ1_0(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	for j := range c {
		b, n := tq1Place(32*u + j)
		c[j] = float32(tritAt(blk[b], n) - 1)
	}
	return append(g, unitGroup{n: 32, s: halfAt(blk[52:])})
}

func unitTQ2_0(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qs := blk[32*(u>>2) : 32*(u>>2)+32]
	for j := range c {
		c[j] = float32(int32((qs[j]>>uint(2*(u&3)))&3) - 1)
	}
	return append(g, unitGroup{n: 32, s: halfAt(blk[64:])})
}
