package oracle

import "fmt"

// This file defines the element-wise and row ops on f32 activations. Every op writes a
// caller-provided dst and returns an error (never panics) when the shapes do not fit. The ops that
// reduce do so in the canonical order over RowWidth virtual lanes (reduce.go), which no schedule
// changes. Every multiply is rounded to float32 before any add (no FMA).
//
// Row ops take the row length n and treat x as len(x)/n consecutive rows.

// rowsOf returns len(x)/n, or an error when x is not whole rows of n.
func rowsOf(op string, x []float32, n int) (int, error) {
	if n <= 0 || len(x)%n != 0 {
		return 0, fmt.Errorf("oracle: %s: %d values are not whole rows of %d", op, len(x), n)
	}
	return len(x) / n, nil
}

func sameLen(op string, dst, x []float32) error {
	if len(dst) != len(x) {
		return fmt.Errorf("oracle: %s: dst has %d values, input %d", op, len(dst), len(x))
	}
	return nil
}

// broadcast checks that b repeats over a: len(b) > 0 and divides len(a).
func broadcast(op string, dst, a, b []float32) error {
	if err := sameLen(op, dst, a); err != nil {
		return err
	}
	if len(b) == 0 && len(a) == 0 {
		return nil
	}
	if len(b) == 0 || len(a)%len(b) != 0 {
		return fmt.Errorf("oracle: %s: %d values cannot broadcast over %d", op, len(b), len(a))
	}
	return nil
}

// AddF32 sets dst[i] = a[i] + b[i % len(b)]: b is either the same length as a or one row
// broadcast over a's rows (ggml_add). dst may alias a.
func AddF32(dst, a, b []float32) error {
	if err := broadcast("add", dst, a, b); err != nil {
		return err
	}
	for i := range a {
		dst[i] = a[i] + b[i%len(b)]
	}
	return nil
}

// MulF32 sets dst[i] = a[i] * b[i % len(b)] (ggml_mul, b broadcast over rows). dst may alias a.
func MulF32(dst, a, b []float32) error {
	if err := broadcast("mul", dst, a, b); err != nil {
		return err
	}
	for i := range a {
		dst[i] = float32(a[i] * b[i%len(b)])
	}
	return nil
}

// ScaleF32 sets dst[i] = x[i] * s (ggml_scale). dst may alias x.
func ScaleF32(dst, x []float32, s float32) error {
	if err := sameLen("scale", dst, x); err != nil {
		return err
	}
	for i, v := range x {
		dst[i] = float32(v * s)
	}
	return nil
}

// SiluF32 sets dst[i] = Silu(x[i]). dst may alias x.
func SiluF32(dst, x []float32) error {
	if err := sameLen("silu", dst, x); err != nil {
		return err
	}
	for i, v := range x {
		dst[i] = Silu(v)
	}
	return nil
}

// GeluF32 sets dst[i] = Gelu(x[i]) (ggml's tanh approximation). dst may alias x.
func GeluF32(dst, x []float32) error {
	if err := sameLen("gelu", dst, x); err != nil {
		return err
	}
	for i, v := range x {
		dst[i] = Gelu(v)
	}
	return nil
}

// SwigluF32 sets dst[i] = Silu(x[i]) * g[i] (ggml_swiglu_split: x is the activated half, g the
// gate). dst may alias x or g.
func SwigluF32(dst, x, g []float32) error {
	if err := sameLen("swiglu", dst, x); err != nil {
		return err
	}
	if err := sameLen("swiglu", g, x); err != nil {
		return err
	}
	for i := range x {
		dst[i] = Swiglu(x[i], g[i])
	}
	return nil
}

// RMSNormF32 normalizes each row of n values (ggml_rms_norm). The op sequence per row:
//
//	ss    = SumSqF32(row, RowWidth) (canonical order; each square rounded, then added)
//	mean  = ss / float32(n)         (one correctly rounded division; n exact for n <= 2^24)
//	scale = 1 / Sqrt(mean + eps)    (add, sqrt, divide: three roundings; Rsqrt(mean + eps))
//	y[i]  = x[i] * scale
//
// If w is not nil it is one row of n weights and y[i] = (x[i] * scale) * w[i] (ggml's fused
// rms_norm+mul rounds the same way). dst may alias x.
func RMSNormF32(dst, x, w []float32, n int, eps float32) error {
	rows, err := rowsOf("rms_norm", x, n)
	if err != nil {
		return err
	}
	if err := sameLen("rms_norm", dst, x); err != nil {
		return err
	}
	if w != nil && len(w) != n {
		return fmt.Errorf("oracle: rms_norm: %d weights for rows of %d", len(w), n)
	}
	for r := 0; r < rows; r++ {
		row := x[r*n : (r+1)*n]
		out := dst[r*n : (r+1)*n]
		scale := rmsScale(row, n, eps)
		for i, v := range row {
			y := float32(v * scale)
			if w != nil {
				y = float32(y * w[i])
			}
			out[i] = y
		}
	}
	return nil
}

// rmsScale is 1/sqrt(SumSqF32(row)/n + eps) in RMSNormF32's op order.
func rmsScale(row []float32, n int, eps float32) float32 {
	mean := SumSqF32(row, RowWidth) / float32(n)
	return Rsqrt(mean + eps)
}

// AddRMSNormF32 is the fused residual-add + rms_norm + weight op: sum[i] = a[i] + b[i] is stored
// (the new residual stream), then dst = RMSNormF32(sum) * w, rows of n. w may be
// nil (no weight). dst may alias a or b, sum may alias a or b, but dst and sum must not overlap.
func AddRMSNormF32(sum, dst, a, b, w []float32, n int, eps float32) error {
	if err := sameLen("add_rms_norm", a, b); err != nil {
		return err
	}
	if err := sameLen("add_rms_norm", sum, a); err != nil {
		return err
	}
	if _, err := rowsOf("add_rms_norm", a, n); err != nil {
		return err
	}
	if err := AddF32(sum, a, b); err != nil {
		return err
	}
	return RMSNormF32(dst, sum, w, n, eps)
}

// SoftmaxF32 is the row-wise softmax of ggml_soft_max_ext with scale (and max_bias 0). mask is nil, one row of n values added to every row, or one row per row of x. The op
// sequence per row:
//
//	v[i] = x[i] * scale                    (then v[i] = v[i] + mask[i] with a mask)
//	m    = MaxF32(v, RowWidth)
//	e[i] = Exp(v[i] - m)
//	s    = SumF32(e, RowWidth)
//	r    = 1 / s
//	y[i] = e[i] * r                        (multiply by the reciprocal, as ggml does)
//
// -Inf entries (masked positions) give exactly 0. A row that is entirely -Inf gives NaN
// everywhere (v - m is -Inf - -Inf), as in ggml. dst may alias x.
func SoftmaxF32(dst, x, mask []float32, n int, scale float32) error {
	rows, err := rowsOf("soft_max", x, n)
	if err != nil {
		return err
	}
	if err := sameLen("soft_max", dst, x); err != nil {
		return err
	}
	if mask != nil && len(mask) != n && len(mask) != len(x) {
		return fmt.Errorf("oracle: soft_max: mask has %d values: want %d (one row) or %d", len(mask), n, len(x))
	}
	v := make([]float32, n)
	for r := 0; r < rows; r++ {
		row := x[r*n : (r+1)*n]
		for i, xv := range row {
			v[i] = float32(xv * scale)
			if mask != nil {
				v[i] = v[i] + mask[(r*n+i)%len(mask)]
			}
		}
		m := MaxF32(v, RowWidth)
		for i := range v {
			v[i] = Exp(v[i] - m)
		}
		rs := 1 / SumF32(v, RowWidth)
		out := dst[r*n : (r+1)*n]
		for i := range v {
			out[i] = float32(v[i] * rs)
		}
	}
	return nil
}

// RopeMode selects which elements rope rotates together (ggml's mode argument).
type RopeMode int

const (
	// RopeNormal rotates adjacent pairs (x[2i], x[2i+1]) (ggml mode 0, GPT-J style, llama).
	RopeNormal RopeMode = 0
	// RopeNeox rotates (x[i], x[i+NDims/2]) (ggml mode 2, GPT-NeoX style, qwen, ...).
	RopeNeox RopeMode = 2
)

// RopeParams describes a rope op on x laid out [tokens][heads][HeadDim] (row-major).
type RopeParams struct {
	HeadDim int      // values per head
	NDims   int      // the first NDims values of each head are rotated (even, <= HeadDim); the rest are copied
	Base    float32  // frequency base (ggml's freq_base, e.g. 10000)
	Mode    RopeMode // RopeNormal or RopeNeox
}

// RopeFreqs returns the rotation frequency of each of the nDims/2 pairs, the definition every
// backend uses (in-kernel or as a table):
//
//	c       = (-2 * Log(base)) / float32(nDims)   (portable Log; *-2 exact; one rounded division)
//	freq[i] = Exp(float32(i) * c)                  (i*c one rounding; portable Exp)
//
// This is base^(-2i/nDims) with a bounded error (a few ULP) for every i. ggml's CPU backend instead
// multiplies theta by powf(base, -2/nDims) i times, which accumulates i roundings, is sequential in
// i (a GPU thread per pair cannot reproduce it cheaply) and is not what ggml's own GPU backends do
// (pos*powf(theta_scale, i)). The angle of pair i at position pos is then
// theta = float32(pos) * freq[i] (one rounding; pos exact for |pos| <= 2^24).
func RopeFreqs(nDims int, base float32) []float32 {
	if nDims < 2 {
		return nil
	}
	c := float32(-2*Log(base)) / float32(nDims)
	out := make([]float32, nDims/2)
	for i := range out {
		out[i] = Exp(float32(float32(i) * c))
	}
	return out
}

// RopeF32 applies rotary position embedding (ggml_rope_ext with freq_scale 1, ext_factor 0,
// attn_factor 1 and no freq_factors) to x, laid out [len(pos)][heads][p.HeadDim]; pos holds one
// position per token. For each token, head and pair i (0 <= i < NDims/2), with
// theta = float32(pos) * RopeFreqs(NDims, Base)[i], c = Cos(theta), s = Sin(theta) and the pair
// (x0, x1) = (x[2i], x[2i+1]) (RopeNormal) or (x[i], x[i+NDims/2]) (RopeNeox):
//
//	y0 = (x0*c) - (x1*s)
//	y1 = (x0*s) + (x1*c)                      (each product rounded, then one add)
//
// Values at NDims and beyond are copied. dst must not alias x.
func RopeF32(dst, x []float32, pos []int32, p RopeParams) error {
	if p.HeadDim <= 0 || p.NDims <= 0 || p.NDims%2 != 0 || p.NDims > p.HeadDim {
		return fmt.Errorf("oracle: rope: n_dims %d must be even and in 2..head_dim (%d)", p.NDims, p.HeadDim)
	}
	if p.Mode != RopeNormal && p.Mode != RopeNeox {
		return fmt.Errorf("oracle: rope: unknown mode %d", p.Mode)
	}
	if err := sameLen("rope", dst, x); err != nil {
		return err
	}
	perToken := 0
	if len(pos) > 0 {
		perToken = len(x) / len(pos)
	}
	if len(pos) == 0 && len(x) != 0 || len(pos) > 0 && (len(x)%len(pos) != 0 || perToken%p.HeadDim != 0) {
		return fmt.Errorf("oracle: rope: %d values are not %d tokens of whole %d-value heads", len(x), len(pos), p.HeadDim)
	}
	freq := RopeFreqs(p.NDims, p.Base)
	half := p.NDims / 2
	for tok, ps := range pos {
		fp := Int32ToFloat(ps)
		for h := 0; h < perToken/p.HeadDim; h++ {
			off := tok*perToken + h*p.HeadDim
			in, out := x[off:off+p.HeadDim], dst[off:off+p.HeadDim]
			for i := 0; i < half; i++ {
				theta := float32(fp * freq[i])
				c, s := Cos(theta), Sin(theta)
				j0, j1 := 2*i, 2*i+1
				if p.Mode == RopeNeox {
					j0, j1 = i, i+half
				}
				x0, x1 := in[j0], in[j1]
				out[j0] = float32(x0*c) - float32(x1*s)
				out[j1] = float32(x0*s) + float32(x1*c)
			}
			copy(out[p.NDims:], in[p.NDims:])
		}
	}
	return nil
}

// GetRows dequantizes the rows listed in rows (ggml_get_rows) from data, which holds whole rows of
// n values of type t, into dst (len(rows)*n values, in the order listed). Each value is exactly
// what Dequantize gives. A row index out of range is an error.
func GetRows(t Type, data []byte, n int, rows []int32, dst []float32) error {
	rs, err := RowSize(t, n)
	if err != nil {
		return err
	}
	if n == 0 || rs == 0 || len(data)%rs != 0 {
		return fmt.Errorf("oracle: get_rows: %d bytes are not whole %s rows of %d values", len(data), t, n)
	}
	if len(dst) != len(rows)*n {
		return fmt.Errorf("oracle: get_rows: dst has %d values, %d rows of %d need %d", len(dst), len(rows), n, len(rows)*n)
	}
	nrows := len(data) / rs
	for i, r := range rows {
		if r < 0 || int(r) >= nrows {
			return fmt.Errorf("oracle: get_rows: row %d out of range [0, %d)", r, nrows)
		}
		if err := Dequantize(t, data[int(r)*rs:(int(r)+1)*rs], dst[i*n:(i+1)*n]); err != nil {
			return err
		}
	}
	return nil
}

// QuantizeQ8_1 is the quantize_q8_1 op: x (a whole number of 32-value blocks) quantized to q8_1
// by ggml's reference quantizer (Quantize(Q8_1, ...)), the activation format of the integer
// matvec path of the 32-value block types.
func QuantizeQ8_1(x []float32, dst []byte) error {
	return Quantize(Q8_1, x, dst)
}
