package oracle

import (
	"encoding/binary"
	"math"
)

// The K-quants: 256-value super-blocks with 16 or 8 sub-block scales. Layouts, little-endian
// (d, dmin f16 unless noted):
//
//	q2_K {scales[16], qs[64], d, dmin}            sub-block of 16: scale = low nibble, min = high
//	q3_K {hmask[32], qs[64], scales[12], d}       16 six-bit signed scales (offset 32)
//	q4_K {d, dmin, scales[12], qs[128]}           8 six-bit scales and mins
//	q5_K {d, dmin, scales[12], qh[32], qs[128]}   as q4_K plus a fifth bit per value
//	q6_K {ql[128], qh[64], scales[16] int8, d}
//	q8_K {d float32, qs[256] int8, bsums[16] int16}
//
// The quantizers are ports of ggml's quantize_row_<t>_ref and, with an importance matrix,
// quantize_row_<t>_impl; the helpers below are ggml's make_*_quants, in the same float32
// operation order (every product that feeds a sum is rounded on its own).

// makeQxQuants is ggml's make_qx_quants: symmetric quantization of x to L in [0, 2*nmax) with a
// scale search; it returns the scale. qw may be nil (then rmseType picks the weights).
func makeQxQuants(n, nmax int, x []float32, L []int8, rmseType int, qw []float32) float32 {
	var max, amax float32
	for i := 0; i < n; i++ {
		if ax := fabs(x[i]); ax > amax {
			amax = ax
			max = x[i]
		}
	}
	if amax < groupMaxEps {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / max
	clampL := func(l int32) int32 { return max32(int32(-nmax), min32(int32(nmax-1), l)) }
	if rmseType == 0 {
		for i := 0; i < n; i++ {
			l := nearestInt(iscale * x[i])
			L[i] = int8(int32(nmax) + clampL(l))
		}
		return 1 / iscale
	}
	returnEarly := false
	if rmseType < 0 {
		rmseType = -rmseType
		returnEarly = true
	}
	weight := func(i int) float32 {
		switch {
		case qw != nil:
			return qw[i]
		case rmseType == 1:
			return x[i] * x[i]
		case rmseType == 2:
			return 1
		case rmseType == 3:
			return fabs(x[i])
		default:
			return sqrtf(fabs(x[i]))
		}
	}
	var sumlx, suml2 float32
	for i := 0; i < n; i++ {
		l := clampL(nearestInt(iscale * x[i]))
		L[i] = int8(l + int32(nmax))
		w := weight(i)
		fl := float32(l)
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	if returnEarly {
		if suml2 > 0 {
			return 0.5 * (scale + 1/iscale)
		}
		return 1 / iscale
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / max
		sumlx, suml2 = 0, 0
		for i := 0; i < n; i++ {
			l := clampL(nearestInt(iscale * x[i]))
			w := weight(i)
			fl := float32(l)
			sumlx += float32(float32(w*x[i]) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i := 0; i < n; i++ {
				l := nearestInt(iscale * x[i])
				L[i] = int8(int32(nmax) + clampL(l))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3Quants is ggml's make_q3_quants (q3_K reference quantizer, weights x*x).
func makeQ3Quants(n, nmax int, x []float32, L []int8, doRmse bool) float32 {
	var max, amax float32
	for i := 0; i < n; i++ {
		if ax := fabs(x[i]); ax > amax {
			amax = ax
			max = x[i]
		}
	}
	if amax < groupMaxEps {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0
	}
	iscale := -float32(nmax) / max
	clampL := func(l int32) int32 { return max32(int32(-nmax), min32(int32(nmax-1), l)) }
	if doRmse {
		var sumlx, suml2 float32
		for i := 0; i < n; i++ {
			l := clampL(nearestInt(iscale * x[i]))
			L[i] = int8(l)
			w := x[i] * x[i]
			fl := float32(l)
			sumlx += float32(float32(w*x[i]) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		for itry := 0; itry < 5; itry++ {
			nChanged := 0
			for i := 0; i < n; i++ {
				w := x[i] * x[i]
				fL := float32(L[i])
				slx := sumlx - float32(float32(w*x[i])*fL)
				if slx > 0 {
					sl2 := suml2 - float32(float32(w*fL)*fL)
					newL := clampL(nearestInt(float32(x[i]*sl2) / slx))
					if newL != int32(L[i]) {
						fn := float32(newL)
						slx += float32(float32(w*x[i]) * fn)
						sl2 += float32(float32(w*fn) * fn)
						if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
							L[i] = int8(newL)
							sumlx = slx
							suml2 = sl2
							nChanged++
						}
					}
				}
			}
			if nChanged == 0 {
				break
			}
		}
		for i := 0; i < n; i++ {
			L[i] += int8(nmax)
		}
		if suml2 > 0 {
			return sumlx / suml2
		}
		return 0
	}
	for i := 0; i < n; i++ {
		l := clampL(nearestInt(iscale * x[i]))
		L[i] = int8(l + int32(nmax))
	}
	return 1 / iscale
}

// makeQkx2Quants is ggml's make_qkx2_quants: asymmetric quantization to [0, nmax] with a min,
// searching nstep+1 scales; it returns the scale and theMin (= -min, the value ggml stores).
func makeQkx2Quants(n, nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0, -mn
	}
	fnmax := float32(nmax)
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	var bestError float32
	for i := 0; i < n; i++ {
		l := nearestInt(iscale * (x[i] - mn))
		L[i] = uint8(max32(0, min32(int32(nmax), l)))
		diff := float32(float32(scale*float32(L[i]))+mn) - x[i]
		if useMad {
			diff = fabs(diff)
		} else {
			diff = diff * diff
		}
		bestError += float32(weights[i] * diff)
	}
	if nstep < 1 {
		return scale, -mn
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+fnmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			l := max32(0, min32(int32(nmax), nearestInt(iscale*(x[i]-mn))))
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i := 0; i < n; i++ {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				if useMad {
					diff = fabs(diff)
				} else {
					diff = diff * diff
				}
				curError += float32(weights[i] * diff)
			}
			if curError < bestError {
				copy(L[:n], Laux[:n])
				bestError = curError
				scale = thisScale
				mn = thisMin
			}
		}
	}
	return scale, -mn
}

// makeQkx3Quants is ggml's make_qkx3_quants (the importance-weighted variant of make_qkx2_quants;
// nil weights mean x*x); it returns the scale and theMin = -min.
func makeQkx3Quants(n, nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	wt := func(i int) float32 {
		if weights != nil {
			return weights[i]
		}
		return x[i] * x[i]
	}
	mn, mx := x[0], x[0]
	sumW := wt(0)
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := wt(i)
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx <= mn {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0, -mn
	}
	fnmax := float32(nmax)
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	var bestMad float32
	for i := 0; i < n; i++ {
		l := nearestInt(iscale * (x[i] - mn))
		L[i] = uint8(max32(0, min32(int32(nmax), l)))
		diff := float32(float32(scale*float32(L[i]))+mn) - x[i]
		if useMad {
			diff = fabs(diff)
		} else {
			diff = diff * diff
		}
		bestMad += float32(wt(i) * diff)
	}
	if nstep < 1 {
		return scale, -mn
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+fnmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			v := iscale * (x[i] - mn)
			var l int32
			if v > 0 {
				if !(v < fnmax) {
					v = fnmax
				}
				l = nearestInt(v)
			}
			Laux[i] = uint8(l)
			w := wt(i)
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var mad float32
			for i := 0; i < n; i++ {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				if useMad {
					diff = fabs(diff)
				} else {
					diff = diff * diff
				}
				mad += float32(wt(i) * diff)
			}
			if mad < bestMad {
				copy(L[:n], Laux[:n])
				bestMad = mad
				scale = thisScale
				mn = thisMin
			}
		}
	}
	return scale, -mn
}

// makeQpQuants is ggml's make_qp_quants: non-negative x (scales or mins) to [0, nmax] with
// weights, used to quantize the sub-block scales of the imatrix K-quants.
func makeQpQuants(n, nmax int, x []float32, L []uint8, qw []float32) float32 {
	var mx float32
	for i := 0; i < n; i++ {
		if !(mx > x[i]) {
			mx = x[i]
		}
	}
	if mx < groupMaxEps {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := fnmax / mx
	for i := 0; i < n; i++ {
		L[i] = uint8(nearestInt(iscale * x[i]))
	}
	scale := 1 / iscale
	var bestMse float32
	for i := 0; i < n; i++ {
		diff := x[i] - float32(scale*float32(L[i]))
		bestMse += float32(float32(qw[i]*diff) * diff)
	}
	for is := -4; is <= 4; is++ {
		if is == 0 {
			continue
		}
		iscaleIs := float32(float32(0.1*float32(is))+fnmax) / mx
		scaleIs := 1 / iscaleIs
		var mse float32
		for i := 0; i < n; i++ {
			l := min32(int32(nmax), nearestInt(iscaleIs*x[i]))
			diff := x[i] - float32(scaleIs*float32(l))
			mse += float32(float32(qw[i]*diff) * diff)
		}
		if mse < bestMse {
			bestMse = mse
			iscale = iscaleIs
		}
	}
	var sumlx, suml2 float32
	for i := 0; i < n; i++ {
		l := min32(int32(nmax), nearestInt(iscale*x[i]))
		L[i] = uint8(l)
		w := qw[i]
		fl := float32(l)
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for itry := 0; itry < 5; itry++ {
		nChanged := 0
		for i := 0; i < n; i++ {
			w := qw[i]
			fL := float32(L[i])
			slx := sumlx - float32(float32(w*x[i])*fL)
			sl2 := suml2 - float32(float32(w*fL)*fL)
			if slx > 0 && sl2 > 0 {
				newL := min32(int32(nmax), nearestInt(float32(x[i]*sl2)/slx))
				if newL != int32(L[i]) {
					fn := float32(newL)
					slx += float32(float32(w*x[i]) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = uint8(newL)
						sumlx = slx
						suml2 = sl2
						nChanged++
					}
				}
			}
		}
		if nChanged == 0 {
			break
		}
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

func min32(a, b int32) int32 {
	if a < b {
		return a
	}
	return b
}

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}

// getScaleMinK4 is ggml's get_scale_min_k4: the j-th 6-bit scale and min of q4_K/q5_K.
func getScaleMinK4(j int, q []byte) (d, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// ---- dequantizers ----

func dequantQ2_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*84 : b*84+84]
		y := dst[b*256 : b*256+256]
		scales := blk[0:16]
		d := halfAt(blk[80:])
		mn := halfAt(blk[82:])
		k := 0
		is := 0
		for n := 0; n < 2; n++ {
			q := blk[16+32*n : 16+32*n+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for h := 0; h < 2; h++ {
					sc := scales[is]
					is++
					dl := float32(d * float32(sc&0xf))
					ml := float32(mn * float32(sc>>4))
					for l := 0; l < 16; l++ {
						y[k] = float32(dl*float32((q[l+16*h]>>shift)&3)) - ml
						k++
					}
				}
			}
		}
	}
}

// q3KScales unpacks the 16 six-bit q3_K scales (still offset by 32) the way ggml's
// dequantize_row_q3_K does with its kmask shuffles.
func q3KScales(s []byte) [16]int8 {
	var out [16]int8
	for j := 0; j < 16; j++ {
		var lo uint8
		if j < 8 {
			lo = s[j] & 0xf
		} else {
			lo = s[j-8] >> 4
		}
		hi := (s[8+j%4] >> uint(2*(j/4))) & 3
		out[j] = int8(lo | hi<<4)
	}
	return out
}

func dequantQ3_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*110 : b*110+110]
		y := dst[b*256 : b*256+256]
		hm := blk[0:32]
		dAll := halfAt(blk[108:])
		scales := q3KScales(blk[96:108])
		k := 0
		is := 0
		m := uint8(1)
		for n := 0; n < 2; n++ {
			q := blk[32+32*n : 32+32*n+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for h := 0; h < 2; h++ {
					dl := dAll * float32(int32(scales[is])-32)
					is++
					for l := 0; l < 16; l++ {
						v := int32((q[l+16*h] >> shift) & 3)
						if hm[l+16*h]&m == 0 {
							v -= 4
						}
						y[k] = dl * float32(v)
						k++
					}
				}
				m <<= 1
			}
		}
	}
}

func dequantQ4_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*144 : b*144+144]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		mn := halfAt(blk[2:])
		scales := blk[4:16]
		for j := 0; j < 4; j++ {
			q := blk[16+32*j : 16+32*j+32]
			sc, m := getScaleMinK4(2*j, scales)
			d1, m1 := float32(d*float32(sc)), float32(mn*float32(m))
			sc, m = getScaleMinK4(2*j+1, scales)
			d2, m2 := float32(d*float32(sc)), float32(mn*float32(m))
			out := y[64*j : 64*j+64]
			for l := 0; l < 32; l++ {
				out[l] = float32(d1*float32(q[l]&0xf)) - m1
				out[l+32] = float32(d2*float32(q[l]>>4)) - m2
			}
		}
	}
}

func dequantQ5_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*176 : b*176+176]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk)
		mn := halfAt(blk[2:])
		scales := blk[4:16]
		qh := blk[16:48]
		u1, u2 := uint8(1), uint8(2)
		for j := 0; j < 4; j++ {
			ql := blk[48+32*j : 48+32*j+32]
			sc, m := getScaleMinK4(2*j, scales)
			d1, m1 := float32(d*float32(sc)), float32(mn*float32(m))
			sc, m = getScaleMinK4(2*j+1, scales)
			d2, m2 := float32(d*float32(sc)), float32(mn*float32(m))
			out := y[64*j : 64*j+64]
			for l := 0; l < 32; l++ {
				v1 := int32(ql[l] & 0xf)
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				v2 := int32(ql[l] >> 4)
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				out[l] = float32(d1*float32(v1)) - m1
				out[l+32] = float32(d2*float32(v2)) - m2
			}
			u1 <<= 2
			u2 <<= 2
		}
	}
}

func dequantQ6_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*210 : b*210+210]
		y := dst[b*256 : b*256+256]
		d := halfAt(blk[208:])
		for n := 0; n < 2; n++ {
			ql := blk[64*n : 64*n+64]
			qh := blk[128+32*n : 128+32*n+32]
			sc := blk[192+8*n : 192+8*n+8]
			out := y[128*n : 128*n+128]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int32(ql[l]&0xf|((qh[l]>>0)&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|((qh[l]>>2)&3)<<4) - 32
				q3 := int32(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
				out[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				out[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				out[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				out[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

func dequantQ8_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*292 : b*292+292]
		y := dst[b*256 : b*256+256]
		d := math.Float32frombits(le32(blk))
		for j, q := range blk[4:260] {
			y[j] = d * float32(int8(q))
		}
	}
}

// ---- shared packing ----

// pack2bit stores 256 2-bit levels as q2_K/q3_K do: byte l of each 32-byte group holds values
// l, l+32, l+64, l+96 of its 128-value half.
func pack2bit(qs []byte, L []uint8) {
	for j := 0; j < 256; j += 128 {
		for l := 0; l < 32; l++ {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

// packScalesK4 stores 8 six-bit scales and mins in the 12 scale bytes of q4_K/q5_K.
func packScalesK4(s []byte, ls, lm []uint8) {
	for j := 0; j < 8; j++ {
		if j < 4 {
			s[j] = ls[j]
			s[j+4] = lm[j]
		} else {
			s[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
			s[j-4] |= (ls[j] >> 4) << 6
			s[j] |= (lm[j] >> 4) << 6
		}
	}
}

// ---- q2_K ----

func quantQ2_K(src []float32, dst []byte) {
	var L [256]uint8
	var Laux [16]uint8
	var weights, mins, scales [16]float32
	const q4scale = float32(15)
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*84 : b*84+84]
		var maxScale, maxMin float32
		for j := 0; j < 16; j++ {
			for l := 0; l < 16; l++ {
				weights[l] = fabs(x[16*j+l])
			}
			scales[j], mins[j] = makeQkx2Quants(16, 3, x[16*j:], weights[:], L[16*j:], Laux[:], -0.5, 0.1, 15, true)
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		sc := blk[0:16]
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := 0; j < 16; j++ {
				sc[j] = uint8(nearestInt(iscale * scales[j]))
			}
			putHalf(blk[80:], maxScale/q4scale)
		} else {
			clear(sc)
			putHalf(blk[80:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := 0; j < 16; j++ {
				sc[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
			}
			putHalf(blk[82:], maxMin/q4scale)
		} else {
			putHalf(blk[82:], 0)
		}
		q2KRequantize(x, blk, L[:], halfAt(blk[80:]), halfAt(blk[82:]))
		pack2bit(blk[16:80], L[:])
	}
}

// q2KRequantize recomputes the 2-bit levels from the stored (rounded) scales and mins.
func q2KRequantize(x []float32, blk []byte, L []uint8, dm, mm float32) {
	sc := blk[0:16]
	for j := 0; j < 16; j++ {
		d := dm * float32(sc[j]&0xf)
		if d == 0 {
			continue
		}
		m := float32(mm * float32(sc[j]>>4))
		for ii := 0; ii < 16; ii++ {
			l := nearestInt((x[16*j+ii] + m) / d)
			L[16*j+ii] = uint8(max32(0, min32(3, l)))
		}
	}
}

func quantQ2_KW(src []float32, dst []byte, qwRow []float32) {
	var L [256]uint8
	var Laux [16]uint8
	var mins, scales, sw, weight [16]float32
	var Ls, Lm [16]uint8
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*84 : b*84+84]
		sw = [16]float32{}
		var sumx2 float32
		for _, v := range x {
			sumx2 += float32(v * v)
		}
		sigma2 := sumx2 / 256
		for j := 0; j < 16; j++ {
			imatrixWeights(weight[:], x[16*j:16*j+16], qwRow[256*b+16*j:], sigma2)
			for l := 0; l < 16; l++ {
				sw[j] += weight[l]
			}
			scales[j], mins[j] = makeQkx3Quants(16, 3, x[16*j:], weight[:], L[16*j:], Laux[:], -0.9, 0.05, 36, false)
		}
		dm := makeQpQuants(16, 15, scales[:], Ls[:], sw[:])
		mm := makeQpQuants(16, 15, mins[:], Lm[:], sw[:])
		putHalf(blk[80:], dm)
		putHalf(blk[82:], mm)
		for j := 0; j < 16; j++ {
			blk[j] = Ls[j] | Lm[j]<<4
		}
		q2KRequantize(x, blk, L[:], halfAt(blk[80:]), halfAt(blk[82:]))
		pack2bit(blk[16:80], L[:])
	}
}

// ---- q3_K ----

// q3KFinish requantizes with the stored scales, splits off the high bits into hmask, and packs.
func q3KFinish(x []float32, blk []byte, L []int8) {
	s := blk[96:108]
	dAll := halfAt(blk[108:])
	for j := 0; j < 16; j++ {
		var sc int8
		if j < 8 {
			sc = int8(s[j] & 0xf)
		} else {
			sc = int8(s[j-8] >> 4)
		}
		sc = int8(int32(uint8(sc)|((s[8+j%4]>>uint(2*(j/4)))&3)<<4) - 32)
		d := dAll * float32(sc)
		if d == 0 {
			continue
		}
		for ii := 0; ii < 16; ii++ {
			l := nearestInt(x[16*j+ii] / d)
			L[16*j+ii] = int8(max32(-4, min32(3, l)) + 4)
		}
	}
	hmask := blk[0:32]
	clear(hmask)
	m := 0
	hm := uint8(1)
	var U [256]uint8
	for j := 0; j < 256; j++ {
		if L[j] > 3 {
			hmask[m] |= hm
			L[j] -= 4
		}
		m++
		if m == 32 {
			m = 0
			hm <<= 1
		}
		U[j] = uint8(L[j])
	}
	pack2bit(blk[32:96], U[:])
}

// q3KPutScale stores 6-bit scale l (0..63) as scale j of q3_K's 12 scale bytes.
func q3KPutScale(s []byte, j int, l uint8) {
	if j < 8 {
		s[j] = l & 0xf
	} else {
		s[j-8] |= (l & 0xf) << 4
	}
	s[j%4+8] |= (l >> 4) << uint(2*(j/4))
}

func quantQ3_K(src []float32, dst []byte) {
	var L [256]int8
	var scales [16]float32
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*110 : b*110+110]
		var maxScale, amax float32
		for j := 0; j < 16; j++ {
			scales[j] = makeQ3Quants(16, 4, x[16*j:], L[16*j:], true)
			if s := fabs(scales[j]); s > amax {
				amax = s
				maxScale = scales[j]
			}
		}
		s := blk[96:108]
		clear(s)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := 0; j < 16; j++ {
				l := int8(nearestInt(iscale * scales[j]))
				l = int8(max32(-32, min32(31, int32(l))) + 32)
				q3KPutScale(s, j, uint8(l))
			}
			putHalf(blk[108:], 1/iscale)
		} else {
			putHalf(blk[108:], 0)
		}
		q3KFinish(x, blk, L[:])
	}
}

func quantQ3_KW(src []float32, dst []byte, qwRow []float32) {
	var L [256]int8
	var scales, weight, sw [16]float32
	var Ls [16]int8
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*110 : b*110+110]
		var sumx2 float32
		for _, v := range x {
			sumx2 += float32(v * v)
		}
		sigma2 := float32(2*sumx2) / 256
		for j := 0; j < 16; j++ {
			imatrixWeights(weight[:], x[16*j:16*j+16], qwRow[256*b+16*j:], sigma2)
			var sumw float32
			for l := 0; l < 16; l++ {
				sumw += weight[l]
			}
			sw[j] = sumw
			scales[j] = makeQxQuants(16, 4, x[16*j:], L[16*j:], 1, weight[:])
		}
		s := blk[96:108]
		clear(s)
		dBlock := makeQxQuants(16, 32, scales[:], Ls[:], 1, sw[:])
		for j := 0; j < 16; j++ {
			q3KPutScale(s, j, uint8(Ls[j]))
		}
		putHalf(blk[108:], dBlock)
		q3KFinish(x, blk, L[:])
	}
}

// ---- q4_K and q5_K ----

// qKx5Finish requantizes q4_K (nmax 15) or q5_K (nmax 31) levels with the stored scales/mins.
func qK45Requantize(x []float32, scales []byte, d, dmin float32, L []uint8, nmax int32) {
	for j := 0; j < 8; j++ {
		sc, m := getScaleMinK4(j, scales)
		dd := d * float32(sc)
		if dd == 0 {
			continue
		}
		dm := float32(dmin * float32(m))
		for ii := 0; ii < 32; ii++ {
			l := nearestInt((x[32*j+ii] + dm) / dd)
			L[32*j+ii] = uint8(max32(0, min32(nmax, l)))
		}
	}
}

func packQ4K(qs []byte, L []uint8) {
	for j := 0; j < 256; j += 64 {
		q := qs[j/2 : j/2+32]
		for l := 0; l < 32; l++ {
			q[l] = L[j+l] | L[j+l+32]<<4
		}
	}
}

func packQ5K(qh, ql []byte, L []uint8) {
	clear(qh)
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < 256; n += 64 {
		q := ql[n/2 : n/2+32]
		for j := 0; j < 32; j++ {
			l1 := L[n+j]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			l2 := L[n+j+32]
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			q[j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
	}
}

// quantK45Ref is quantize_row_q4_K_ref (nmax 15) and quantize_row_q5_K_ref (nmax 31).
func quantK45Ref(x []float32, blk []byte, nmax int, rmin float32, nstep int, L []uint8) {
	var Laux [32]uint8
	var weights [32]float32
	var mins, scales [8]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		xb := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xb {
			sumX2 += float32(v * v)
		}
		avX := sqrtf(sumX2 / 32)
		for l, v := range xb {
			weights[l] = avX + fabs(v)
		}
		scales[j], mins[j] = makeQkx2Quants(32, nmax, xb, weights[:], L[32*j:], Laux[:], rmin, 0.1, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := 0; j < 8; j++ {
		ls[j] = min(63, uint8(nearestInt(invScale*scales[j])))
		lm[j] = min(63, uint8(nearestInt(invMin*mins[j])))
	}
	packScalesK4(blk[4:16], ls[:], lm[:])
	putHalf(blk, maxScale/63)
	putHalf(blk[2:], maxMin/63)
	qK45Requantize(x, blk[4:16], halfAt(blk), halfAt(blk[2:]), L, int32(nmax))
}

// quantK45W is quantize_row_q4_K_impl / quantize_row_q5_K_impl with quant weights.
func quantK45W(x []float32, blk []byte, nmax int, qw []float32, L []uint8, clamp63 bool) {
	var Laux [32]uint8
	var weights [32]float32
	var mins, scales, sw [8]float32
	var Ls, Lm [8]uint8
	var sumX2 float32
	for _, v := range x {
		sumX2 += float32(v * v)
	}
	sigma2 := float32(2*sumX2) / 256
	for j := 0; j < 8; j++ {
		xb := x[32*j : 32*j+32]
		imatrixWeights(weights[:], xb, qw[32*j:], sigma2)
		var sumw float32
		for _, w := range weights {
			sumw += w
		}
		sw[j] = sumw
		scales[j], mins[j] = makeQkx3Quants(32, nmax, xb, weights[:], L[32*j:], Laux[:], -0.9, 0.05, 36, false)
	}
	dBlock := makeQpQuants(8, 63, scales[:], Ls[:], sw[:])
	mBlock := makeQpQuants(8, 63, mins[:], Lm[:], sw[:])
	if clamp63 {
		for j := range Ls {
			Ls[j] = min(63, Ls[j])
			Lm[j] = min(63, Lm[j])
		}
	}
	packScalesK4(blk[4:16], Ls[:], Lm[:])
	putHalf(blk, dBlock)
	putHalf(blk[2:], mBlock)
	qK45Requantize(x, blk[4:16], halfAt(blk), halfAt(blk[2:]), L, int32(nmax))
}

func quantQ4_K(src []float32, dst []byte) {
	var L [256]uint8
	for b := 0; b < len(src)/256; b++ {
		blk := dst[b*144 : b*144+144]
		quantK45Ref(src[b*256:b*256+256], blk, 15, -1, 20, L[:])
		packQ4K(blk[16:144], L[:])
	}
}

func quantQ4_KW(src []float32, dst []byte, qwRow []float32) {
	var L [256]uint8
	for b := 0; b < len(src)/256; b++ {
		blk := dst[b*144 : b*144+144]
		quantK45W(src[b*256:b*256+256], blk, 15, qwRow[256*b:], L[:], false)
		packQ4K(blk[16:144], L[:])
	}
}

func quantQ5_K(src []float32, dst []byte) {
	var L [256]uint8
	for b := 0; b < len(src)/256; b++ {
		blk := dst[b*176 : b*176+176]
		quantK45Ref(src[b*256:b*256+256], blk, 31, -0.5, 15, L[:])
		packQ5K(blk[16:48], blk[48:176], L[:])
	}
}

func quantQ5_KW(src []float32, dst []byte, qwRow []float32) {
	var L [256]uint8
	for b := 0; b < len(src)/256; b++ {
		blk := dst[b*176 : b*176+176]
		quantK45W(src[b*256:b*256+256], blk, 31, qwRow[256*b:], L[:], true)
		packQ5K(blk[16:48], blk[48:176], L[:])
	}
}

// ---- q6_K ----

// quantQ6KBlock is the body of quantize_row_q6_K_ref (qw nil) and quantize_row_q6_K_impl.
func quantQ6KBlock(x []float32, blk []byte, qw []float32) {
	var L [256]int8
	var scales [16]float32
	var maxScale, maxAbsScale float32
	for ib := 0; ib < 16; ib++ {
		var w []float32
		if qw != nil {
			w = qw[16*ib : 16*ib+16]
		}
		scale := makeQxQuants(16, 32, x[16*ib:], L[16*ib:], 1, w)
		scales[ib] = scale
		if a := fabs(scale); a > maxAbsScale {
			maxAbsScale = a
			maxScale = scale
		}
	}
	if maxAbsScale < groupMaxEps {
		clear(blk)
		return
	}
	iscale := -128 / maxScale
	putHalf(blk[208:], 1/iscale)
	sc := blk[192:208]
	for ib := 0; ib < 16; ib++ {
		sc[ib] = uint8(int8(min32(127, nearestInt(iscale*scales[ib]))))
	}
	dAll := halfAt(blk[208:])
	for j := 0; j < 16; j++ {
		d := dAll * float32(int8(sc[j]))
		if d == 0 {
			continue
		}
		for ii := 0; ii < 16; ii++ {
			l := nearestInt(x[16*j+ii] / d)
			L[16*j+ii] = int8(max32(-32, min32(31, l)) + 32)
		}
	}
	for n := 0; n < 2; n++ {
		j := 128 * n
		ql := blk[64*n : 64*n+64]
		qh := blk[128+32*n : 128+32*n+32]
		for l := 0; l < 32; l++ {
			a, b, c, e := uint8(L[j+l]), uint8(L[j+l+32]), uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[l] = a&0xf | (c&0xf)<<4
			ql[l+32] = b&0xf | (e&0xf)<<4
			qh[l] = a>>4 | (b>>4)<<2 | (c>>4)<<4 | (e>>4)<<6
		}
	}
}

func quantQ6_K(src []float32, dst []byte) {
	for b := 0; b < len(src)/256; b++ {
		quantQ6KBlock(src[b*256:b*256+256], dst[b*210:b*210+210], nil)
	}
}

func quantQ6_KW(src []float32, dst []byte, qwRow []float32) {
	for b := 0; b < len(src)/256; b++ {
		quantQ6KBlock(src[b*256:b*256+256], dst[b*210:b*210+210], qwRow[256*b:256*b+256])
	}
}

// ---- q8_K ----

// quantQ8_K is quantize_row_q8_K_ref. For an all-zero block ggml writes d = 0 and zero quants
// and leaves bsums untouched; the oracle writes zero bsums there (what they sum to).
func quantQ8_K(src []float32, dst []byte) {
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*292 : b*292+292]
		max, amax := float32(0), float32(0)
		for _, v := range x {
			if ax := fabs(v); ax > amax {
				amax = ax
				max = v
			}
		}
		if amax == 0 {
			clear(blk)
			continue
		}
		iscale := -127 / max
		qs := blk[4:260]
		for j, v := range x {
			qs[j] = uint8(int8(min32(127, nearestInt(iscale*v))))
		}
		for j := 0; j < 16; j++ {
			var sum int32
			for ii := 0; ii < 16; ii++ {
				sum += int32(int8(qs[j*16+ii]))
			}
			binary.LittleEndian.PutUint16(blk[260+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(blk, math.Float32bits(1/iscale))
	}
}

func init() {
	dequantizers[Q2_K] = dequantQ2_K
	dequantizers[Q3_K] = dequantQ3_K
	dequantizers[Q4_K] = dequantQ4_K
	dequantizers[Q5_K] = dequantQ5_K
	dequantizers[Q6_K] = dequantQ6_K
	dequantizers[Q8_K] = dequantQ8_K

	quantizers[Q2_K] = quantQ2_K
	quantizers[Q3_K] = quantQ3_K
	quantizers[Q4_K] = quantQ4_K
	quantizers[Q5_K] = quantQ5_K
	quantizers[Q6_K] = quantQ6_K
	quantizers[Q8_K] = quantQ8_K

	weightedQuantizers[Q2_K] = quantQ2_KW
	weightedQuantizers[Q3_K] = quantQ3_KW
	weightedQuantizers[Q4_K] = quantQ4_KW
	weightedQuantizers[Q5_K] = quantQ5_KW
	weightedQuantizers[Q6_K] = quantQ6_KW
}

// ---- float-path dot units (dot_units.go) ----
//
// A K-quant block is 8 units of 32 values. q4_K and q5_K have one 32-value sub-block (6-bit
// scale and min) per unit: one group. q2_K, q3_K and q6_K have a scale (and for q2_K a min) per
// 16 values: two groups of 16. q8_K has one scale for the block: one group. Each group's scale
// and min are the dequantizer's own rounded products; a min is stored negated (the dequantizer's
// x - ml is x + (-ml) exactly).

func init() {
	unitDecoders[Q2_K] = unitQ2_K
	unitDecoders[Q3_K] = unitQ3_K
	unitDecoders[Q4_K] = unitQ4_K
	unitDecoders[Q5_K] = unitQ5_K
	unitDecoders[Q6_K] = unitQ6_K
	unitDecoders[Q8_K] = unitQ8_K
}

// q2_K: unit u is 2-bit field u%4 (shift 2*(u%4)) of qs[32*(u/4) .. +31] (block bytes
// 16+32*(u/4) ..); groups of 16 with scale bytes 2u and 2u+1: s = d*float(sc&15),
// m = -(dmin*float(sc>>4)).
func unitQ2_K(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qs := blk[16+32*(u/4) : 16+32*(u/4)+32]
	shift := uint(2 * (u % 4))
	for j := range c {
		c[j] = float32((qs[j] >> shift) & 3)
	}
	d, mn := halfAt(blk[80:]), halfAt(blk[82:])
	for h := 0; h < 2; h++ {
		sc := blk[2*u+h]
		g = append(g, unitGroup{n: 16, s: float32(d * float32(sc&0xf)), m: -float32(mn * float32(sc>>4)), hasMin: true})
	}
	return g
}

// q3_K: unit u is 2-bit field u%4 of qs[32*(u/4) .. +31] (block bytes 32+32*(u/4) ..) with bit u
// of hmask[0..31] as the third bit (clear: minus 4); groups of 16 with the 6-bit scales 2u and
// 2u+1: s = d*float(scale-32).
func unitQ3_K(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	hm := blk[0:32]
	qs := blk[32+32*(u/4) : 32+32*(u/4)+32]
	shift := uint(2 * (u % 4))
	for j := range c {
		v := int32((qs[j] >> shift) & 3)
		if hm[j]&(1<<uint(u)) == 0 {
			v -= 4
		}
		c[j] = float32(v)
	}
	dAll := halfAt(blk[108:])
	scales := q3KScales(blk[96:108])
	for h := 0; h < 2; h++ {
		g = append(g, unitGroup{n: 16, s: dAll * float32(int32(scales[2*u+h])-32)})
	}
	return g
}

// q4_K: unit u is sub-block u: the low (u even) or high nibbles of qs[32*(u/2) .. +31] (block
// bytes 16+32*(u/2) ..); one group, s = d*float(sc), m = -(dmin*float(m)) from the 6-bit scale
// and min u.
func unitQ4_K(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qs := blk[16+32*(u/2) : 16+32*(u/2)+32]
	shift := uint(4 * (u % 2))
	for j := range c {
		c[j] = float32((qs[j] >> shift) & 0xf)
	}
	sc, m := getScaleMinK4(u, blk[4:16])
	return append(g, unitGroup{n: 32, s: float32(halfAt(blk) * float32(sc)), m: -float32(halfAt(blk[2:]) * float32(m)), hasMin: true})
}

// q5_K: as q4_K (nibbles at block bytes 48+32*(u/2) ..) with bit u of qh[0..31] (block bytes
// 16..47) as the fifth bit.
func unitQ5_K(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	qh := blk[16:48]
	ql := blk[48+32*(u/2) : 48+32*(u/2)+32]
	shift := uint(4 * (u % 2))
	for j := range c {
		c[j] = float32((ql[j]>>shift)&0xf | ((qh[j]>>uint(u))&1)<<4)
	}
	sc, m := getScaleMinK4(u, blk[4:16])
	return append(g, unitGroup{n: 32, s: float32(halfAt(blk) * float32(sc)), m: -float32(halfAt(blk[2:]) * float32(m)), hasMin: true})
}

// q6_K: unit u (half n = u/4, part p = u%4) takes nibble p/2 of ql[64n + 32*(p%2) .. +31] and
// 2-bit field p of qh[32n .. +31] (block bytes 128+32n ..), minus 32; groups of 16 with the int8
// scales 2u and 2u+1 (block bytes 192+2u, 193+2u): s = d*float(sc).
func unitQ6_K(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	n, p := u/4, u%4
	ql := blk[64*n+32*(p%2) : 64*n+32*(p%2)+32]
	qh := blk[128+32*n : 128+32*n+32]
	lshift, hshift := uint(4*(p/2)), uint(2*p)
	for j := range c {
		c[j] = float32(int32((ql[j]>>lshift)&0xf|((qh[j]>>hshift)&3)<<4) - 32)
	}
	d := halfAt(blk[208:])
	for h := 0; h < 2; h++ {
		g = append(g, unitGroup{n: 16, s: float32(d * float32(int8(blk[192+2*u+h])))})
	}
	return g
}

// q8_K: unit u is the int8 codes qs[32u .. +31] (block bytes 4+32u ..); one group, s = d (f32).
func unitQ8_K(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup {
	for j, q := range blk[4+32*u : 4+32*u+32] {
		c[j] = float32(int8(q))
	}
	return append(g, unitGroup{n: 32, s: math.Float32frombits(le32(blk))})
}
