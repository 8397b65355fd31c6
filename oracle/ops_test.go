package oracle

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

const opDataDir = "testdata/ggml/ops"

func opReadFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(opDataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func opReadF32(t *testing.T, name string) []float32 {
	b := opReadFile(t, name)
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func opReadF64(t *testing.T, name string) []float64 {
	b := opReadFile(t, name)
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

func opReadI32(t *testing.T, name string) []int32 {
	b := opReadFile(t, name)
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// nmse is ggml test-backend-ops' normalized mean squared error: sum((ref-got)^2) / sum(ref^2).
// Positions where both are NaN, or both the same infinity, are skipped; any other non-finite
// mismatch gives +Inf.
func opNMSE(ref []float64, got []float32) float64 {
	var num, den float64
	for i, r := range ref {
		g := float64(got[i])
		if math.IsNaN(r) && math.IsNaN(g) || math.IsInf(r, 0) && r == g {
			continue
		}
		if math.IsNaN(r) || math.IsNaN(g) || math.IsInf(r, 0) || math.IsInf(g, 0) {
			return math.Inf(1)
		}
		num += (r - g) * (r - g)
		den += r * r
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return num / den
}

func opF64s(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// checkNMSE prints the measured NMSE and fails when it exceeds bound.
func opCheckNMSE(t *testing.T, name string, ref []float64, got []float32, bound float64) {
	t.Helper()
	if len(ref) != len(got) {
		t.Fatalf("%s: %d reference values, %d results", name, len(ref), len(got))
	}
	e := opNMSE(ref, got)
	t.Logf("NMSE %-34s %.3e (bound %.0e)", name, e, bound)
	if !(e <= bound) {
		t.Errorf("%s: NMSE %.3e > %.0e", name, e, bound)
	}
}

func TestOpsAgainstGGML(t *testing.T) {
	t.Run("rms_norm", func(t *testing.T) {
		x := opReadF32(t, "rms_norm.x.f32")
		got := make([]float32, len(x))
		if err := RMSNormF32(got, x, nil, 4096, 1e-6); err != nil {
			t.Fatal(err)
		}
		opCheckNMSE(t, "rms_norm [4,4096]", opF64s(opReadF32(t, "rms_norm.out.f32")), got, 1e-12)
	})
	t.Run("soft_max", func(t *testing.T) {
		x := opReadF32(t, "soft_max.x.f32")
		got := make([]float32, len(x))
		scale := math.Float32frombits(0x3db504f3)
		if err := SoftmaxF32(got, x, nil, 1024, scale); err != nil {
			t.Fatal(err)
		}
		opCheckNMSE(t, "soft_max [4,1024] scale 1/sqrt(128)", opF64s(opReadF32(t, "soft_max.out.f32")), got, 1e-12)
	})
	t.Run("add_rms_norm", func(t *testing.T) {
		a, b, w := opReadF32(t, "add_rms_norm.a.f32"), opReadF32(t, "add_rms_norm.b.f32"), opReadF32(t, "add_rms_norm.w.f32")
		sum := make([]float32, len(a))
		out := make([]float32, len(a))
		if err := AddRMSNormF32(sum, out, a, b, w, 4096, 1e-6); err != nil {
			t.Fatal(err)
		}
		wantSum := opReadF32(t, "add_rms_norm.sum.f32")
		for i := range sum {
			if math.Float32bits(sum[i]) != math.Float32bits(wantSum[i]) {
				t.Fatalf("sum[%d] = %g, ggml %g: the add must be bit-exact", i, sum[i], wantSum[i])
			}
		}
		t.Logf("add_rms_norm: sum bit-exact with ggml (%d values)", len(sum))
		norm := make([]float32, len(a))
		if err := AddRMSNormF32(make([]float32, len(a)), norm, a, b, nil, 4096, 1e-6); err != nil {
			t.Fatal(err)
		}
		opCheckNMSE(t, "add_rms_norm norm (no weight)", opF64s(opReadF32(t, "add_rms_norm.norm.f32")), norm, 1e-12)
		opCheckNMSE(t, "add_rms_norm out (fused mul)", opF64s(opReadF32(t, "add_rms_norm.out.f32")), out, 1e-12)
		opCheckNMSE(t, "add_rms_norm out_unfused", opF64s(opReadF32(t, "add_rms_norm.out_unfused.f32")), out, 1e-12)
	})
	for _, rc := range []struct {
		name string
		mode RopeMode
		base float32
	}{{"rope_norm", RopeNormal, 1e4}, {"rope_neox", RopeNeox, 1e6}} {
		t.Run(rc.name, func(t *testing.T) {
			x := opReadF32(t, rc.name+".x.f32")
			pos := opReadI32(t, rc.name+".pos.i32")
			got := make([]float32, len(x))
			if err := RopeF32(got, x, pos, RopeParams{HeadDim: 128, NDims: 128, Base: rc.base, Mode: rc.mode}); err != nil {
				t.Fatal(err)
			}
			opCheckNMSE(t, rc.name+" [5,4,128] pos 0..4095", opF64s(opReadF32(t, rc.name+".out.f32")), got, 1e-7)
			// Per token, to show where the difference lives (ggml's angle recurrence drifts with pos).
			for tok, p := range pos {
				ref := opF64s(opReadF32(t, rc.name+".out.f32")[tok*512 : (tok+1)*512])
				t.Logf("     %s pos %4d: NMSE %.3e", rc.name, p, opNMSE(ref, got[tok*512:(tok+1)*512]))
			}
		})
	}
	x := opReadF32(t, "mul_mat.x.f32")
	for _, mc := range []struct {
		typ  Type
		xq   string
		xact Type
	}{{Q8_0, "x_q8_0", Q8_0}, {Q4_0, "x_q8_0", Q8_0}, {Q4_K, "x_q8_K", Q8_K}, {Q6_K, "x_q8_K", Q8_K}} {
		t.Run("mul_mat_"+mc.typ.String(), func(t *testing.T) {
			const K, N = 2048, 64
			w := opReadFile(t, "mul_mat."+mc.typ.String()+".w.bin")
			exact := opReadF64(t, "mul_mat."+mc.typ.String()+".out_exact.f64")
			q8act := opReadF64(t, "mul_mat."+mc.typ.String()+".out_q8act.f64")
			ggmlOut := opF64s(opReadF32(t, "mul_mat."+mc.typ.String()+".out.f32"))

			yf := make([]float32, N)
			if err := MatVec(mc.typ, w, x, yf); err != nil {
				t.Fatal(err)
			}
			opCheckNMSE(t, "matvec float path vs f64 exact "+mc.typ.String(), exact, yf, 1e-12)
			// ggml quantizes the activation first, so the float path differs from ggml's output by
			// the activation's quantization error: shown, not asserted.
			t.Logf("NMSE %-34s %.3e (informative: ggml quantized x)", "matvec float path vs ggml "+mc.typ.String(), opNMSE(ggmlOut, yf))

			// The activation ggml quantized must be what our quantizer gives (q8_1 shares q8_0's d
			// and codes).
			act, ok := ActivationType(mc.typ)
			if !ok {
				t.Fatalf("%s: no integer path", mc.typ)
			}
			as, _ := RowSize(act, K)
			aq := make([]byte, as)
			if err := Quantize(act, x, aq); err != nil {
				t.Fatal(err)
			}
			want := opReadFile(t, "mul_mat."+mc.typ.String()+"."+mc.xq+".bin")
			if act == Q8_K {
				if string(aq) != string(want) {
					t.Errorf("q8_K activation differs from ggml's")
				}
			} else {
				for b := 0; b < K/32; b++ {
					if string(aq[b*36:b*36+2]) != string(want[b*34:b*34+2]) || string(aq[b*36+4:b*36+36]) != string(want[b*34+2:b*34+34]) {
						t.Fatalf("block %d: q8_1 d/codes differ from ggml's q8_0 activation", b)
					}
				}
			}

			yq := make([]float32, N)
			if err := MatVecQ8(mc.typ, w, x, yq); err != nil {
				t.Fatal(err)
			}
			opCheckNMSE(t, "matvec integer path vs f64 q8act "+mc.typ.String(), q8act, yq, 1e-12)
			opCheckNMSE(t, "matvec integer path vs ggml "+mc.typ.String(), ggmlOut, yq, 1e-12)
		})
	}
}

// randomBlocks returns nb blocks of type t of random bytes whose scale fields are set to sane f16
// (or E8M0) values, so every code bit is exercised and every result is finite.
func opRandomBlocks(t Type, nb int, seed uint64) []byte {
	ti, _ := t.Info()
	s := opSplitmix(seed)
	b := make([]byte, nb*ti.TypeSize)
	for i := range b {
		b[i] = byte(s.next())
	}
	halves := map[Type][]int{
		Q8_0: {0}, Q4_0: {0}, Q4_1: {0, 2}, Q5_0: {0}, Q5_1: {0, 2}, IQ4_NL: {0},
		Q2_K: {80, 82}, Q3_K: {108}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208}, IQ4_XS: {0}, TQ2_0: {64},
		Q1_0: {0}, Q2_0: {0},
	}
	for blk := 0; blk < nb; blk++ {
		base := blk * ti.TypeSize
		for _, off := range halves[t] {
			h := uint16(0x2000 + s.next()%0x1800) // about 2^-7 .. 2^-1, either sign
			if s.next()&1 == 1 {
				h |= 0x8000
			}
			binary.LittleEndian.PutUint16(b[base+off:], h)
		}
		if t == MXFP4 {
			b[base] = byte(120 + s.next()%10)
		}
	}
	return b
}

// dequantAct decodes a q8_1 or q8_K activation exactly (d*q in float64).
func opDequantAct(act Type, aq []byte, k int) []float64 {
	out := make([]float64, k)
	for j := range out {
		if act == Q8_1 {
			blk := aq[(j/32)*36:]
			out[j] = float64(q81Scale(blk)) * float64(int8(blk[4+j%32]))
		} else {
			blk := aq[(j/256)*292:]
			out[j] = float64(q8KScale(blk)) * float64(int8(blk[4+j%256]))
		}
	}
	return out
}

// TestMatVecIntegerPathConsistent checks every integer-path type against the dequantizer: the
// integer dot must equal sum(Dequantize(W) * dequant(x_q)) up to float32 rounding of the partials.
// Random block bytes exercise every code bit; ggml's quantized rows (when the quant testdata is
// there) add realistic blocks.
func TestMatVecIntegerPathConsistent(t *testing.T) {
	const K, N = 1024, 8
	x := opGauss(99, K, 1)
	for wt := range intDots {
		t.Run(wt.String(), func(t *testing.T) {
			ti, _ := wt.Info()
			rs := K / ti.BlockSize * ti.TypeSize
			sources := map[string][]byte{"random": opRandomBlocks(wt, N*K/ti.BlockSize, uint64(wt)+1)}
			if b, err := os.ReadFile(filepath.Join("testdata/ggml/quant", wt.String()+".ref.bin")); err == nil {
				// rows of 4096: take the first K values of each of the 8 rows
				rows := make([]byte, 0, N*rs)
				full := len(b) / 8
				for r := 0; r < 8; r++ {
					rows = append(rows, b[r*full:r*full+rs]...)
				}
				sources["ggml rows"] = rows
			}
			act, _ := ActivationType(wt)
			as, _ := RowSize(act, K)
			aq := make([]byte, as)
			if err := Quantize(act, x, aq); err != nil {
				t.Skipf("activation quantizer: %v", err)
			}
			xa := opDequantAct(act, aq, K)
			for name, w := range sources {
				y := make([]float32, N)
				if err := MatVecQ8(wt, w, x, y); err != nil {
					t.Fatal(err)
				}
				row := make([]float32, K)
				worst, nonFinite := 0.0, 0
				for r := 0; r < N; r++ {
					if err := Dequantize(wt, w[r*rs:(r+1)*rs], row); err != nil {
						t.Skipf("dequantizer: %v", err)
					}
					var ref, mag float64
					for j, v := range row {
						ref += float64(v) * xa[j]
						mag += math.Abs(float64(v) * xa[j])
					}
					if math.IsInf(mag, 0) || math.IsNaN(mag) {
						// An f16 scale that overflowed (ggml's "large" row): both sides are non-finite.
						nonFinite++
						if f := float64(y[r]); !math.IsInf(f, 0) && !math.IsNaN(f) {
							t.Errorf("%s %s row %d: dequantized row is not finite but the integer path gives %g", wt, name, r, f)
						}
						continue
					}
					if mag == 0 { // an all-zero row (f16 scales that underflowed: ggml's "small" row)
						if y[r] != 0 {
							t.Errorf("%s %s row %d: zero row gives %g", wt, name, r, y[r])
						}
						continue
					}
					rel := math.Abs(float64(y[r])-ref) / mag
					worst = math.Max(worst, rel)
				}
				t.Logf("%-7s %-9s integer path vs dequantized f64: max |diff|/sum|w*a| = %.2e (%d non-finite rows)", wt, name, worst, nonFinite)
				if !(worst <= 2e-6) {
					t.Errorf("%s %s: integer path disagrees with the dequantizer: %.2e", wt, name, worst)
				}
			}
		})
	}
}

// TestMatVecFloatPathEveryType runs the float path on every type and checks it against an
// independent statement of its definition: for f32, f16 and bf16 the pairwise tree of
// FloatDotWidth lane sums of rounded products of the dequantized row; for the quantized types
// the same tree over BlockDotWidth lanes of the unit partials, each restated here from the
// unit's codes and groups. It also bounds the float path against the f64 dot of the dequantized
// row (the orders differ only in rounding).
func TestMatVecFloatPathEveryType(t *testing.T) {
	for _, wt := range Types() {
		ti, _ := wt.Info()
		k := 3 * max(ti.BlockSize, 32) * 64 // more units than virtual lanes: every lane folds several
		if ti.BlockSize == 1 {
			k = 1000
		}
		x := opGauss(uint64(wt)+50, k, 1)
		w := opRandomBlocks(wt, 3*k/ti.BlockSize, uint64(wt)+60)
		y := make([]float32, 3)
		if err := MatVec(wt, w, x, y); err != nil {
			t.Errorf("%s: %v", wt, err)
			continue
		}
		rs := len(w) / 3
		row := make([]float32, k)
		for r := range y {
			wr := w[r*rs : (r+1)*rs]
			if err := Dequantize(wt, wr, row); err != nil {
				t.Fatal(err)
			}
			var terms []float32
			W := BlockDotWidth
			if ti.BlockSize == 1 {
				W = FloatDotWidth
				for j := range row {
					terms = append(terms, float32(row[j]*x[j]))
				}
			} else {
				for u := 0; u < k/UnitSize; u++ {
					b := u / (ti.BlockSize / UnitSize)
					var c [UnitSize]float32
					g, err := decodeUnit(wt, wr[b*ti.TypeSize:(b+1)*ti.TypeSize], u%(ti.BlockSize/UnitSize), &c, nil)
					if err != nil {
						t.Fatal(err)
					}
					terms = append(terms, opUnitPartial(c[:], g, x[u*UnitSize:(u+1)*UnitSize]))
				}
			}
			want := opTreeReduce(terms, W, float32(math.Copysign(0, -1)), addOp)
			if !opSame32(y[r], want) {
				t.Errorf("%s row %d: %g != %g", wt, r, y[r], want)
			}
			var ref, mag float64
			for j, v := range row {
				ref += float64(v) * float64(x[j])
				mag += math.Abs(float64(v) * float64(x[j]))
			}
			if mag > 0 && !math.IsInf(mag, 0) {
				if rel := math.Abs(float64(y[r])-ref) / mag; rel > 1e-5 {
					t.Errorf("%s row %d: float path %g vs f64 %g: rel %.2e", wt, r, y[r], ref, rel)
				}
			}
		}
		if _, ok := ActivationType(wt); ok {
			if err := MatVecQ8(wt, w, x, y); err != nil {
				t.Errorf("%s integer path: %v", wt, err)
			}
		}
	}
}

// opUnitPartial restates the unit partial of dot_units.go: per group, four accumulators each
// over every fourth rounded product, (a0+a1)+(a2+a3), times the scale (plus the min times the
// same sum of the activations), the groups added in order starting from -0.
func opUnitPartial(c []float32, groups []unitGroup, x []float32) float32 {
	negz := float32(math.Copysign(0, -1))
	sum4 := func(v []float32) float32 {
		a := []float32{negz, negz, negz, negz}
		for j, t := range v {
			a[j%4] += t
		}
		return (a[0] + a[1]) + (a[2] + a[3])
	}
	acc, o := negz, 0
	for _, g := range groups {
		p := make([]float32, g.n)
		for j := range p {
			p[j] = float32(c[o+j] * x[o+j])
		}
		acc += float32(g.s * sum4(p))
		if g.hasMin {
			acc += float32(g.m * sum4(x[o:o+g.n]))
		}
		o += g.n
	}
	return acc
}

func TestMatVecOrderAndErrors(t *testing.T) {
	const K = 3 * FloatDotWidth
	x := opGauss(5, K, 1)
	w := make([]byte, 4*K)
	for i, v := range opGauss(6, K, 1) {
		binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(v))
	}
	y := make([]float32, 1)
	if err := MatVec(F32, w, x, y); err != nil {
		t.Fatal(err)
	}
	// Virtual lane v adds its products v, v+W, v+2W from -0; the lanes then pair up as a tree.
	lanes := make([]float32, FloatDotWidth)
	for v := range lanes {
		lanes[v] = float32(math.Copysign(0, -1))
		for i := v; i < K; i += FloatDotWidth {
			lanes[v] += float32(math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * x[i])
		}
	}
	for len(lanes) > 1 {
		next := make([]float32, len(lanes)/2)
		for i := range next {
			next[i] = lanes[2*i] + lanes[2*i+1]
		}
		lanes = next
	}
	if !opSame32(y[0], lanes[0]) {
		t.Errorf("f32 matvec %g != the stated order %g", y[0], lanes[0])
	}
	bad := []struct {
		name string
		err  error
	}{
		{"wrong byte count", MatVec(F32, w[:10], x, y)},
		{"K not whole blocks", MatVec(Q4_0, make([]byte, 18), make([]float32, 33), y)},
		{"no integer path", MatVecQ8(IQ2_XXS, make([]byte, 66), make([]float32, 256), y)},
		{"dot_q8 short activation", func() error { _, err := DotQ8(Q4_0, make([]byte, 18), make([]byte, 10)); return err }()},
		{"unit partial of a float type", func() error { _, err := UnitPartial(F32, make([]byte, 4), 0, make([]float32, 32)); return err }()},
		{"unit partial past the block", func() error { _, err := UnitPartial(Q4_0, make([]byte, 18), 1, make([]float32, 32)); return err }()},
	}
	for _, b := range bad {
		if b.err == nil {
			t.Errorf("%s: no error", b.name)
		}
	}
}

func TestSoftmaxEdgeCases(t *testing.T) {
	inf := float32(math.Inf(1))
	x := []float32{
		1, 2, -inf, 3, // masked entry
		-inf, -inf, -inf, -inf, // entirely masked row
		0, 0, 0, 0,
	}
	y := make([]float32, len(x))
	if err := SoftmaxF32(y, x, nil, 4, 1); err != nil {
		t.Fatal(err)
	}
	if y[2] != 0 || math.Signbit(float64(y[2])) {
		t.Errorf("masked entry = %g, want +0", y[2])
	}
	for i := 4; i < 8; i++ {
		if y[i] == y[i] {
			t.Errorf("all -Inf row: y[%d] = %g, want NaN", i, y[i])
		}
	}
	for i := 8; i < 12; i++ {
		if y[i] != 0.25 {
			t.Errorf("uniform row: %g, want 0.25", y[i])
		}
	}
	// A mask row broadcast over rows.
	mask := []float32{0, -inf, 0, -inf}
	if err := SoftmaxF32(y[:8], []float32{1, 1, 1, 1, 5, 9, 5, 9}, mask, 4, 1); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2, 4, 6} {
		if y[i] != 0.5 || y[i+1] != 0 {
			t.Errorf("masked softmax row: %v", y[:8])
			break
		}
	}
	if SoftmaxF32(y, x, []float32{1, 2, 3}, 4, 1) == nil {
		t.Error("bad mask length accepted")
	}
}

func TestRMSNormDefinition(t *testing.T) {
	x := opGauss(11, 300, 3)
	y := make([]float32, len(x))
	w := opGauss(12, 100, 1)
	if err := RMSNormF32(y, x, w, 100, 1e-5); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 3; r++ {
		row := x[r*100 : (r+1)*100]
		scale := 1 / Sqrt(SumSqF32(row, RowWidth)/100+1e-5)
		for i, v := range row {
			if want := float32(float32(v*scale) * w[i]); y[r*100+i] != want {
				t.Fatalf("row %d [%d]: %g != %g", r, i, y[r*100+i], want)
			}
		}
	}
	// zeros stay zeros, denormal inputs are kept (not flushed) and scaled up.
	z := []float32{0, 0x1p-149, -0x1p-140, 0}
	if err := RMSNormF32(z, z, nil, 4, 1e-6); err != nil {
		t.Fatal(err)
	}
	if z[0] != 0 || z[1] == 0 || z[2] == 0 || z[1] != float32(0x1p-149*Rsqrt(1e-6)) {
		t.Errorf("denormal rms_norm: %v", z)
	}
	if RMSNormF32(y, x, nil, 7, 1e-5) == nil || RMSNormF32(y[:5], x, nil, 100, 1e-5) == nil {
		t.Error("bad shape accepted")
	}
}

func TestElementwiseOps(t *testing.T) {
	a := []float32{1, -2, 0x1p-149, 3e38, 0.5, 7}
	b := []float32{0x1p-149, 2}
	y := make([]float32, len(a))
	if err := AddF32(y, a, b); err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 0, 0x1p-148, 3e38, 0.5, 9} // b repeats over a; the denormal sum is kept
	for i := range y {
		if y[i] != want[i] {
			t.Errorf("add[%d] = %g want %g", i, y[i], want[i])
		}
	}
	if err := MulF32(y, a, []float32{2}); err != nil {
		t.Fatal(err)
	}
	if y[2] != 0x1p-148 || !math.IsInf(float64(y[3]), 1) {
		t.Errorf("mul: denormal %g (want 2^-148), overflow %g", y[2], y[3])
	}
	if err := ScaleF32(y, a, 0.5); err != nil {
		t.Fatal(err)
	}
	if y[2] != 0 || y[4] != 0.25 { // 2^-150 ties to even: 0
		t.Errorf("scale: %v", y)
	}
	if err := ScaleF32(y, []float32{0x1p-140, 0, 0, 0, 0, 0}, 0x1p-5); err != nil || y[0] != 0x1p-145 {
		t.Errorf("scale into denormal: %g", y[0])
	}
	if err := SiluF32(y, a); err != nil || y[0] != Silu(1) {
		t.Errorf("silu: %v %v", err, y)
	}
	if err := GeluF32(y, a); err != nil || y[5] != Gelu(7) {
		t.Errorf("gelu: %v %v", err, y)
	}
	if err := SwigluF32(y, a, a); err != nil || y[4] != float32(Silu(0.5)*0.5) {
		t.Errorf("swiglu: %v %v", err, y)
	}
	if AddF32(y, a, make([]float32, 4)) == nil || MulF32(y[:2], a, b) == nil || SwigluF32(y, a, b) == nil {
		t.Error("bad shapes accepted")
	}
	// ops against float64 formulas over a spread of inputs
	x := opGauss(21, 4096, 4)
	g := opGauss(22, 4096, 1)
	for _, c := range []struct {
		name string
		f    func(dst []float32) error
		ref  func(i int) float64
	}{
		{"silu", func(d []float32) error { return SiluF32(d, x) }, func(i int) float64 { v := float64(x[i]); return v / (1 + math.Exp(-v)) }},
		{"gelu", func(d []float32) error { return GeluF32(d, x) }, func(i int) float64 {
			v := float64(x[i])
			return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*v*(1+0.044715*v*v)))
		}},
		{"swiglu", func(d []float32) error { return SwigluF32(d, x, g) }, func(i int) float64 {
			v := float64(x[i])
			return v / (1 + math.Exp(-v)) * float64(g[i])
		}},
	} {
		d := make([]float32, len(x))
		if err := c.f(d); err != nil {
			t.Fatal(err)
		}
		ref := make([]float64, len(x))
		for i := range ref {
			ref[i] = c.ref(i)
		}
		opCheckNMSE(t, c.name+" vs float64 formula", ref, d, 1e-13)
	}
}

func TestRopeDefinition(t *testing.T) {
	x := opGauss(31, 2*3*16, 1)
	y := make([]float32, len(x))
	pos := []int32{0, 5}
	p := RopeParams{HeadDim: 16, NDims: 12, Base: 10000, Mode: RopeNeox}
	if err := RopeF32(y, x, pos, p); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 48; i++ { // position 0 is the identity
		if y[i] != x[i] {
			t.Fatalf("pos 0: y[%d] = %g != x %g", i, y[i], x[i])
		}
	}
	freq := RopeFreqs(12, 10000)
	for h := 0; h < 3; h++ {
		off := 48 + h*16
		for i := 0; i < 6; i++ {
			th := float32(5 * freq[i])
			c, s := Cos(th), Sin(th)
			x0, x1 := x[off+i], x[off+i+6]
			if y[off+i] != float32(x0*c)-float32(x1*s) || y[off+i+6] != float32(x0*s)+float32(x1*c) {
				t.Fatalf("head %d pair %d differs from the definition", h, i)
			}
		}
		for i := 12; i < 16; i++ {
			if y[off+i] != x[off+i] {
				t.Fatalf("dims past n_dims must be copied")
			}
		}
	}
	worst := 0.0
	for _, nd := range []int{64, 128, 256} {
		for _, base := range []float32{1e4, 5e5, 1e6} {
			for i, f := range RopeFreqs(nd, base) {
				e := mathULPErr(f, math.Pow(float64(base), -2*float64(i)/float64(nd)))
				worst = math.Max(worst, e)
			}
		}
	}
	t.Logf("RopeFreqs: max %.2f ULP from base^(-2i/d) (d 64..256, base 1e4..1e6)", worst)
	if worst > 16 {
		t.Errorf("RopeFreqs error %.2f ULP > 16", worst)
	}
	for _, bad := range []RopeParams{{HeadDim: 16, NDims: 11, Base: 1e4}, {HeadDim: 16, NDims: 18, Base: 1e4}, {HeadDim: 16, NDims: 16, Base: 1e4, Mode: 1}} {
		if RopeF32(y, x, pos, bad) == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if RopeF32(y, x, []int32{1, 2, 3, 4, 5}, p) == nil || RopeF32(y, x, []int32{1, 2, 3, 4}, p) == nil {
		t.Error("wrong token count accepted")
	}
}

func TestGetRowsAndQuantizeQ8_1(t *testing.T) {
	src := opGauss(41, 4*64, 1)
	data := make([]byte, 4*4*64)
	if err := Quantize(F32, src, data); err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 2*64)
	if err := GetRows(F32, data, 64, []int32{3, 1}, dst); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		if dst[i] != src[3*64+i] || dst[64+i] != src[64+i] {
			t.Fatalf("get_rows value %d differs", i)
		}
	}
	if GetRows(F32, data, 64, []int32{4}, dst[:64]) == nil || GetRows(F32, data, 64, []int32{-1}, dst[:64]) == nil {
		t.Error("row out of range accepted")
	}
	q := make([]byte, 2*36)
	if err := QuantizeQ8_1(src[:64], q); err != nil {
		t.Skipf("q8_1 quantizer: %v", err)
	}
	want := make([]byte, 2*36)
	if err := Quantize(Q8_1, src[:64], want); err != nil || string(q) != string(want) {
		t.Errorf("quantize_q8_1 differs from Quantize(Q8_1)")
	}
}
