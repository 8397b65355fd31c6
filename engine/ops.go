package engine

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// maxGroups is the most workgroups a call dispatches along one axis (Vulkan guarantees 65535);
// the element-wise twins lay more out along y (kernels.ElemGroups).
const maxGroups = 65535

// operand checks one operand of op: present, of type typ, with want values (0: any).
func operand(op, name string, t *Tensor, typ oracle.Type, want int) error {
	if t == nil {
		return fmt.Errorf("engine: %s: %s is nil", op, name)
	}
	if t.Type != typ {
		return fmt.Errorf("engine: %s: %s is %s, want %s values", op, name, t, typeName(typ))
	}
	if err := t.whole(op); err != nil {
		return err
	}
	if want > 0 && t.Len() != want {
		return fmt.Errorf("engine: %s: %s is %s (%d values), want %d values", op, name, t, t.Len(), want)
	}
	return nil
}

// sameEngine checks that every tensor belongs to e.
func (e *Engine) sameEngine(op string, ts ...*Tensor) error {
	for _, t := range ts {
		if t != nil && t.e != e {
			return fmt.Errorf("engine: %s: %s belongs to another engine", op, t)
		}
	}
	return nil
}

// perRow is the grid of a twin with one workgroup per R rows.
func perRow(rows int) func(s kernels.Schedule) [3]uint32 {
	return func(s kernels.Schedule) [3]uint32 {
		r := s.RowsPerGroup()
		return [3]uint32{uint32((rows + r - 1) / r), 1, 1}
	}
}

// elementwise is the grid of an element-wise twin over n items (kernels.ElemGroups).
func elementwise(n int) func(s kernels.Schedule) [3]uint32 {
	return func(s kernels.Schedule) [3]uint32 { return kernels.ElemGroups(n, s.Lanes) }
}

func f32bits(x float32) uint32 { return math.Float32bits(x) }

// dummy is a one-word buffer bound where a kernel's optional operand is absent (an unweighted
// norm's w, an unmasked softmax's mask). e.mu is held.
func (e *Engine) dummyView() (view, error) {
	if e.dummy == nil {
		b, err := e.dev.newBuffer(4)
		if err != nil {
			return view{}, fmt.Errorf("engine: %w", err)
		}
		e.dummy = b
	}
	return whole(e.dummy), nil
}

// run serves c under e.mu.
func (e *Engine) run(c *call) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.serve(c)
}

// RMSNorm is y = x / sqrt(mean(x^2) + eps) * w over each row of x (oracle.RMSNormF32); w nil is
// the unweighted norm. x and y are f32 with the same rows; w is f32 of one row.
func (e *Engine) RMSNorm(y, x, w *Tensor, eps float32) error {
	const op = "rms_norm"
	if err := operand(op, "x", x, oracle.F32, 0); err != nil {
		return err
	}
	rows, n := x.Rows(), x.Cols()
	if err := operand(op, "y", y, oracle.F32, rows*n); err != nil {
		return err
	}
	if w != nil {
		if err := operand(op, "w", w, oracle.F32, n); err != nil {
			return err
		}
	}
	if err := e.sameEngine(op, y, x, w); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	wv, weighted := view{}, uint32(0)
	if w != nil {
		wv, weighted = w.view(), 1
	} else {
		var err error
		if wv, err = e.dummyView(); err != nil {
			return err
		}
	}
	return e.serve(&call{
		op: op, typ: oracle.F32,
		operands: map[string]view{"x": x.view(), "w": wv, "y": y.view()},
		params:   map[string]uint32{"n": uint32(n), "eps": f32bits(eps), "weighted": weighted},
		groups:   perRow(rows),
		vars:     map[string]float64{"rows": float64(rows), "n": float64(n), "eps": float64(eps)},
		bytes:    4 * (2*rows*n + n),
	})
}

// MatVec is y = W x (oracle.MatVec): W is rows x n of any type with a twin (f32, f16, bf16, the
// quantized types), x f32 of n values, y f32 of rows values. Matrices of more rows than one
// dispatch may have are split into several dispatches over row ranges.
func (e *Engine) MatVec(y, w, x *Tensor) error {
	const op = "matvec"
	if w == nil || len(w.Shape) != 2 {
		return fmt.Errorf("engine: %s: W must be a matrix (rows x n), got %v", op, w)
	}
	rows, n := w.Shape[0], w.Shape[1]
	if err := operand(op, "x", x, oracle.F32, n); err != nil {
		return err
	}
	if err := operand(op, "y", y, oracle.F32, rows); err != nil {
		return err
	}
	if err := e.sameEngine(op, y, w, x); err != nil {
		return err
	}
	// 32768 rows per dispatch keeps every grid below 65535 workgroups.
	const chunk = 32768
	e.mu.Lock()
	defer e.mu.Unlock()
	names, tables, err := e.tablesFor(w.Type)
	if err != nil {
		return fmt.Errorf("engine: %s/%s: %w", op, w.Type, err)
	}
	parts := w.parts
	if parts == nil {
		parts = []*Tensor{w}
	}
	rb := w.rowBytes()
	first := 0 // the part's first row in W
	for _, p := range parts {
		for from := 0; from < p.Shape[0]; from += chunk {
			r := min(chunk, p.Shape[0]-from)
			ops := map[string]view{
				"w": p.rangeView(p.off+from*rb, r*rb),
				"x": x.view(),
				"y": {buf: y.buf, off: y.off + 4*(first+from), size: 4 * r},
			}
			for i, name := range names {
				ops[name] = whole(tables[i])
			}
			if err := e.serve(&call{
				op: op, typ: w.Type, operands: ops,
				params: map[string]uint32{"n": uint32(n)},
				groups: perRow(r),
				vars:   map[string]float64{"rows": float64(r), "n": float64(n)},
				bytes:  r*rb + 4*n + 4*r,
			}); err != nil {
				return err
			}
		}
		first += p.Shape[0]
	}
	return nil
}

// GetRows gathers rows of W (src_rows x n, any type with a twin) by the i32 ids into dst (f32,
// len(ids) x n), dequantized (oracle.GetRows): the token embedding.
func (e *Engine) GetRows(dst, w, ids *Tensor) error {
	const op = "get_rows"
	if w == nil || len(w.Shape) != 2 {
		return fmt.Errorf("engine: %s: W must be a matrix (src_rows x n), got %v", op, w)
	}
	srcRows, n := w.Shape[0], w.Shape[1]
	if err := w.whole(op); err != nil {
		return err
	}
	if err := operand(op, "ids", ids, I32, 0); err != nil {
		return err
	}
	rows := ids.Len()
	if err := operand(op, "dst", dst, oracle.F32, rows*n); err != nil {
		return err
	}
	if err := e.sameEngine(op, dst, w, ids); err != nil {
		return err
	}
	if rows > maxGroups {
		return fmt.Errorf("engine: %s: %d ids: at most %d per call", op, rows, maxGroups)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	names, tables, err := e.tablesFor(w.Type)
	if err != nil {
		return fmt.Errorf("engine: %s/%s: %w", op, w.Type, err)
	}
	ops := map[string]view{"w": w.view(), "ids": ids.view(), "dst": dst.view()}
	for i, name := range names {
		ops[name] = whole(tables[i])
	}
	return e.serve(&call{
		op: op, typ: w.Type, operands: ops,
		params: map[string]uint32{"n": uint32(n)},
		groups: func(s kernels.Schedule) [3]uint32 {
			return [3]uint32{uint32((n + s.Lanes - 1) / s.Lanes), uint32(rows), 1}
		},
		vars:  map[string]float64{"rows": float64(rows), "n": float64(n), "src_rows": float64(srcRows)},
		bytes: rows*w.rowBytes() + 4*rows + 4*rows*n,
	})
}

// Softmax is y = softmax(x*scale + mask) over each row of x (oracle.SoftmaxF32); mask nil is no
// mask, else one row broadcast or one row per row of x.
func (e *Engine) Softmax(y, x, mask *Tensor, scale float32) error {
	const op = "softmax"
	if err := operand(op, "x", x, oracle.F32, 0); err != nil {
		return err
	}
	rows, n := x.Rows(), x.Cols()
	if err := operand(op, "y", y, oracle.F32, rows*n); err != nil {
		return err
	}
	maskRows := 0
	if mask != nil {
		if err := operand(op, "mask", mask, oracle.F32, 0); err != nil {
			return err
		}
		if mask.Cols() != n || (mask.Rows() != 1 && mask.Rows() != rows) {
			return fmt.Errorf("engine: %s: mask is %s: want one row of %d or %d rows", op, mask, n, rows)
		}
		maskRows = mask.Rows()
	}
	if err := e.sameEngine(op, y, x, mask); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var mv view
	if mask != nil {
		mv = mask.view()
	} else {
		var err error
		if mv, err = e.dummyView(); err != nil {
			return err
		}
	}
	return e.serve(&call{
		op: op, typ: oracle.F32,
		operands: map[string]view{"x": x.view(), "mask": mv, "y": y.view()},
		params:   map[string]uint32{"n": uint32(n), "scale": f32bits(scale), "mask_rows": uint32(maskRows)},
		groups:   perRow(rows),
		vars:     map[string]float64{"rows": float64(rows), "n": float64(n), "scale": float64(scale), "mask_rows": float64(maskRows)},
		bytes:    4 * (2*rows*n + maskRows*n),
	})
}

// Rope rotates x (f32, tokens x heads x head_dim) by the positions pos (i32, one per token)
// into y (oracle.RopeF32), every pair of each head (n_dims = head_dim, less one when odd), in
// mode (oracle.RopeNormal: llama.cpp's normal mode; oracle.RopeNeox) with frequency base.
func (e *Engine) Rope(y, x, pos *Tensor, mode oracle.RopeMode, base float32) error {
	op := "rope_norm"
	switch mode {
	case oracle.RopeNormal:
	case oracle.RopeNeox:
		op = "rope_neox"
	default:
		return fmt.Errorf("engine: rope: mode %d is neither normal (0) nor neox (2)", mode)
	}
	if err := operand(op, "x", x, oracle.F32, 0); err != nil {
		return err
	}
	if len(x.Shape) != 3 {
		return fmt.Errorf("engine: %s: x is %s: want tokens x heads x head_dim", op, x)
	}
	tokens, heads, hd := x.Shape[0], x.Shape[1], x.Shape[2]
	if hd < 2 {
		return fmt.Errorf("engine: %s: head_dim %d: rope needs a pair of values", op, hd)
	}
	if err := operand(op, "y", y, oracle.F32, x.Len()); err != nil {
		return err
	}
	if err := operand(op, "pos", pos, I32, tokens); err != nil {
		return err
	}
	if err := e.sameEngine(op, y, x, pos); err != nil {
		return err
	}
	rows := tokens * heads
	return e.run(&call{
		op: op, typ: oracle.F32,
		operands: map[string]view{"x": x.view(), "pos": pos.view(), "y": y.view()},
		params: map[string]uint32{"head_dim": uint32(hd), "n_dims": uint32(hd &^ 1), "heads": uint32(heads),
			"rows": uint32(rows), "base": f32bits(base)},
		groups: elementwise(rows * ((hd + 1) / 2)),
		vars:   map[string]float64{"tokens": float64(tokens), "heads": float64(heads), "head_dim": float64(hd), "base": float64(base)},
		bytes:  8*x.Len() + 4*tokens,
	})
}

// binary serves an element-wise op y = f(a, b) with b of a's length or a shorter one repeated.
func (e *Engine) binary(op, an, bn string, y, a, b *Tensor, broadcast bool) error {
	if err := operand(op, an, a, oracle.F32, 0); err != nil {
		return err
	}
	n := a.Len()
	if err := operand(op, "y", y, oracle.F32, n); err != nil {
		return err
	}
	want := n
	if broadcast {
		want = 0
	}
	if err := operand(op, bn, b, oracle.F32, want); err != nil {
		return err
	}
	if n%b.Len() != 0 {
		return fmt.Errorf("engine: %s: %s has %d values, which does not divide %s's %d", op, bn, b.Len(), an, n)
	}
	if err := e.sameEngine(op, y, a, b); err != nil {
		return err
	}
	params := map[string]uint32{"n": uint32(n)}
	groups := elementwise(n)
	if broadcast {
		params["nb"] = uint32(b.Len())
		nb := b.Len()
		groups = func(s kernels.Schedule) [3]uint32 { return kernels.BroadcastGroups(n, nb, s.Lanes) }
	}
	return e.run(&call{
		op: op, typ: oracle.F32,
		operands: map[string]view{an: a.view(), bn: b.view(), "y": y.view()},
		params:   params,
		groups:   groups,
		vars:     map[string]float64{"rows": float64(a.Rows()), "n": float64(a.Cols())},
		bytes:    4 * (2*n + b.Len()),
	})
}

// Add is y = a + b (oracle.AddF32); b has a's length, or fewer values repeated over a (one row
// broadcast over the rows).
func (e *Engine) Add(y, a, b *Tensor) error { return e.binary("add", "a", "b", y, a, b, true) }

// Mul is y = a * b (oracle.MulF32), b as for Add.
func (e *Engine) Mul(y, a, b *Tensor) error { return e.binary("mul", "a", "b", y, a, b, true) }

// Swiglu is y = silu(x) * g (oracle.SwigluF32), x and g of the same length.
func (e *Engine) Swiglu(y, x, g *Tensor) error { return e.binary("swiglu", "x", "g", y, x, g, false) }

// Scale is y = x * s (oracle.ScaleF32).
func (e *Engine) Scale(y, x *Tensor, s float32) error {
	const op = "scale"
	if err := operand(op, "x", x, oracle.F32, 0); err != nil {
		return err
	}
	n := x.Len()
	if err := operand(op, "y", y, oracle.F32, n); err != nil {
		return err
	}
	if err := e.sameEngine(op, y, x); err != nil {
		return err
	}
	return e.run(&call{
		op: op, typ: oracle.F32,
		operands: map[string]view{"x": x.view(), "y": y.view()},
		params:   map[string]uint32{"n": uint32(n), "s": f32bits(s)},
		groups:   elementwise(n),
		vars:     map[string]float64{"rows": float64(x.Rows()), "n": float64(x.Cols()), "scale": float64(s)},
		bytes:    8 * n,
	})
}

// AttnParams describe AttnDecode's cache and heads.
type AttnParams struct {
	NHeads, NKVHeads, HeadDim int
	NKV                       int     // positions attended: 0 .. NKV-1
	Scale                     float32 // the scores' scale, usually 1/sqrt(HeadDim)
}

// AttnDecode is the attention of one query token (oracle.AttnDecodeF32): q (f32, NHeads x
// HeadDim) against the first NKV positions of the caches k and v (f32, positions x
// (NKVHeads*HeadDim), one row per position), written to out (f32, NHeads x HeadDim). scores is
// the kernel's scratch: f32 with at least NHeads rows of NKV values (its row length is the
// stride).
func (e *Engine) AttnDecode(out, q, k, v, scores *Tensor, p AttnParams) error {
	const op = "attn_decode"
	if p.NHeads <= 0 || p.NKVHeads <= 0 || p.HeadDim <= 0 || p.NKV <= 0 || p.NHeads%p.NKVHeads != 0 {
		return fmt.Errorf("engine: %s: %+v: every count must be positive and NHeads a multiple of NKVHeads", op, p)
	}
	if err := operand(op, "q", q, oracle.F32, p.NHeads*p.HeadDim); err != nil {
		return err
	}
	if err := operand(op, "out", out, oracle.F32, p.NHeads*p.HeadDim); err != nil {
		return err
	}
	kvDim := p.NKVHeads * p.HeadDim
	for _, c := range []struct {
		name string
		t    *Tensor
	}{{"k", k}, {"v", v}} {
		if err := operand(op, c.name, c.t, oracle.F32, 0); err != nil {
			return err
		}
		if c.t.Cols() != kvDim || c.t.Rows() < p.NKV {
			return fmt.Errorf("engine: %s: %s is %s: want at least %d rows (positions) of %d values", op, c.name, c.t, p.NKV, kvDim)
		}
	}
	if err := operand(op, "scores", scores, oracle.F32, 0); err != nil {
		return err
	}
	if scores.Rows() < p.NHeads || scores.Cols() < p.NKV {
		return fmt.Errorf("engine: %s: scores is %s: want at least %d rows of %d values", op, scores, p.NHeads, p.NKV)
	}
	if err := e.sameEngine(op, out, q, k, v, scores); err != nil {
		return err
	}
	return e.run(&call{
		op: op, typ: oracle.F32,
		operands: map[string]view{"q": q.view(), "k": k.view(), "v": v.view(), "out": out.view(), "scores": scores.view()},
		params: map[string]uint32{"head_dim": uint32(p.HeadDim), "n_heads": uint32(p.NHeads), "n_kv_heads": uint32(p.NKVHeads),
			"n_kv": uint32(p.NKV), "kv_stride": uint32(kvDim), "scores_stride": uint32(scores.Cols()), "scale": f32bits(p.Scale)},
		groups: func(kernels.Schedule) [3]uint32 { return [3]uint32{uint32(p.NHeads), 1, 1} },
		vars: map[string]float64{"n_kv": float64(p.NKV), "heads": float64(p.NHeads), "kv_heads": float64(p.NKVHeads),
			"head_dim": float64(p.HeadDim), "scale": float64(p.Scale)},
		bytes: 4 * (2*p.NHeads*p.HeadDim + 2*p.NKV*kvDim),
	})
}
