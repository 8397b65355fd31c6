package kernels

import (
	"fmt"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// Rotary position embedding (oracle.RopeF32) in its two modes, and rms_norm followed by rope
// fused in one kernel (oracle.RMSNormF32 per head, then oracle.RopeF32 on the result).
//
// x is laid out [tokens][heads][headDim]; pos holds one i32 position per token. Each head is
// split into units of two values: unit u < nDims/2 rotates the pair (2u, 2u+1) (normal) or
// (u, u+nDims/2) (neox) by theta = float32(pos) * Exp(float32(u) * c) with
// c = (-2*Log(base)) / float32(nDims) (oracle.RopeFreqs, computed in the kernel with the portable
// Log and Exp); the units beyond copy the values 2u and 2u+1 (both modes store the unrotated tail
// there). Adjacent invocations take adjacent units, so loads and stores are coalesced.

func init() {
	Register(Cell{Op: "rope_norm", Type: oracle.F32, Build: func(s Schedule) *dsl.Kernel { return Rope(s, oracle.RopeNormal) },
		Cases: func(s Schedule) ([]Case, error) { return ropeCases(s, oracle.RopeNormal) }})
	Register(Cell{Op: "rope_neox", Type: oracle.F32, Build: func(s Schedule) *dsl.Kernel { return Rope(s, oracle.RopeNeox) },
		Cases: func(s Schedule) ([]Case, error) { return ropeCases(s, oracle.RopeNeox) }})
	Register(Cell{Op: "rms_norm_rope", Type: oracle.F32, Build: RMSNormRope, Cases: rmsNormRopeCases, Width: oracle.RowWidth})
}

// ropeFreqC is c = (-2*Log(base)) / float32(nDims), the exponent step of oracle.RopeFreqs.
func ropeFreqC(k *dsl.Kernel, base, nDims dsl.Value) dsl.Value {
	return Log(k, base).Mul(-2).Div(nDims.F32()).Named("freq_c")
}

// ropeUnit emits unit u (u32) of one head: rotate or copy, reading value j of the head through
// load and writing through store. neox is a bool (a Go constant becomes a constant Value).
func ropeUnit(k *dsl.Kernel, u, half, headDim, neox, c, posF dsl.Value, load func(j dsl.Value) dsl.Value, store func(j, v dsl.Value)) {
	k.If(u.Lt(half), func() {
		j0 := k.Select(neox, u, u.Mul(2))
		j1 := k.Select(neox, u.Add(half), u.Mul(2).Add(1))
		theta := posF.Mul(Exp(k, u.F32().Mul(c)))
		sin, cos := SinCos(k, theta)
		x0, x1 := load(j0), load(j1)
		store(j0, x0.Mul(cos).Sub(x1.Mul(sin)))
		store(j1, x0.Mul(sin).Add(x1.Mul(cos)))
	}).Else(func() {
		j := u.Mul(2)
		store(j, load(j))
		k.If(j.Add(1).Lt(headDim), func() { store(j.Add(1), load(j.Add(1))) })
	})
}

// Rope builds rope in mode (oracle.RopeNormal or oracle.RopeNeox) with s.Lanes invocations per
// workgroup, one invocation per unit of two values (eachElement).
//
// Bindings: 0 x (f32, rows*headDim), 1 pos (i32, tokens), 2 y (f32, rows*headDim). Parameters:
// head_dim (u32), n_dims (u32, even, <= head_dim), heads (u32, heads per token), rows (u32,
// tokens*heads), base (f32). Dispatch ElemGroups(rows*ceil(head_dim/2), T).
// y = oracle.RopeF32(x, pos, {head_dim, n_dims, base, mode}).
func Rope(s Schedule, mode oracle.RopeMode) *dsl.Kernel {
	T := s.Lanes
	name := "rope_norm"
	if mode == oracle.RopeNeox {
		name = "rope_neox"
	}
	k := dsl.New(name, T)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	pos := k.Buffer("pos", dsl.I32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	headDim := k.Param("head_dim", dsl.U32)
	nDims := k.Param("n_dims", dsl.U32)
	heads := k.Param("heads", dsl.U32)
	rows := k.Param("rows", dsl.U32)
	base := k.Param("base", dsl.F32)
	units := headDim.Add(1).Shr(1).Named("units")
	half := nDims.Shr(1).Named("half")
	c := ropeFreqC(k, base, nDims)
	neox := k.Const(dsl.Bool, mode == oracle.RopeNeox)
	eachElement(k, rows.Mul(units), T, func(g dsl.Value) {
		row := g.Div(units)
		u := g.Sub(row.Mul(units))
		posF := pos.Load(row.Div(heads)).F32()
		off := row.Mul(headDim)
		ropeUnit(k, u, half, headDim, neox, c, posF,
			func(j dsl.Value) dsl.Value { return x.Load(off.Add(j)) },
			func(j, v dsl.Value) { y.Store(off.Add(j), v) })
	})
	return k
}

// RMSNormRope builds rms_norm followed by rope, fused: one workgroup of s.Lanes invocations per
// head normalizes the head's headDim values (canonical sum of squares of width oracle.RowWidth,
// times the weight when weighted) and rotates the normalized values, never storing them in
// between.
//
// Bindings: 0 x (f32, rows*headDim), 1 pos (i32, tokens), 2 w (f32, headDim; one value when
// unweighted), 3 y (f32, rows*headDim). Parameters: head_dim (u32, the norm's row length),
// n_dims (u32), heads (u32, per token), base (f32), eps (f32), weighted (u32), mode (u32:
// 0 normal, 2 neox). Dispatch (tokens*heads, 1, 1). y = oracle.RopeF32(oracle.RMSNormF32(x, w,
// head_dim, eps), pos, {head_dim, n_dims, base, mode}).
func RMSNormRope(s Schedule) *dsl.Kernel {
	T := s.Lanes
	k := dsl.New("rms_norm_rope", T)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	pos := k.Buffer("pos", dsl.I32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	headDim := k.Param("head_dim", dsl.U32)
	nDims := k.Param("n_dims", dsl.U32)
	heads := k.Param("heads", dsl.U32)
	base := k.Param("base", dsl.F32)
	eps := k.Param("eps", dsl.F32)
	weighted := k.Param("weighted", dsl.U32).Ne(0)
	neox := k.Param("mode", dsl.U32).Eq(uint32(oracle.RopeNeox))
	wg := k.WorkgroupID(dsl.X)
	off := wg.Mul(headDim).Named("row")
	lane := k.LocalIndex().Named("lane")
	scale := rmsScale(k, rowCanon(k, s), headDim, eps, func(i dsl.Value) dsl.Value { return x.Load(off.Add(i)) })
	units := headDim.Add(1).Shr(1).Named("units")
	half := nDims.Shr(1).Named("half")
	c := ropeFreqC(k, base, nDims)
	posF := pos.Load(wg.Div(heads)).F32().Named("pos")
	norm := func(j dsl.Value) dsl.Value {
		v := x.Load(off.Add(j)).Mul(scale)
		wj := w.Load(k.Select(weighted, j, k.U32(0))) // index 0 when unweighted: always bound
		return k.Select(weighted, v.Mul(wj), v)
	}
	k.For("u", lane, units, T, func(u dsl.Value) {
		ropeUnit(k, u, half, headDim, neox, c, posF, norm, func(j, v dsl.Value) { y.Store(off.Add(j), v) })
	})
	return k
}

// ropeShape is one rope case: tokens (one position each) of heads heads of p.HeadDim values.
type ropeShape struct {
	name  string
	heads int
	pos   []int32
	p     oracle.RopeParams
}

// ropeShapes are the rope cases, the same at every schedule.
func ropeShapes(mode oracle.RopeMode) []ropeShape {
	const T = 64
	p := func(headDim, nDims int, base float32) oracle.RopeParams {
		return oracle.RopeParams{HeadDim: headDim, NDims: nDims, Base: base, Mode: mode}
	}
	return []ropeShape{
		{"d64", 2, []int32{0, 1, 4095}, p(64, 64, 10000)},
		{"d128_base1e6", 3, []int32{4095, 17}, p(128, 128, 1e6)},
		{"partial", 3, []int32{0, 100, 2048}, p(80, 32, 10000)}, // rotates 32 of 80 (phi-2 style)
		{"odd_tail", 2, []int32{3, 4095}, p(7, 4, 10000)},       // head of odd length
		{"pair", 1, []int32{1}, p(2, 2, 10000)},
		{"tiny_base", 1, []int32{0, 5, 4095, 65535}, p(6, 6, 2)},
		{"ragged", 1, []int32{7, 0}, p(2*T+6, 2*T, 500000)}, // units not a multiple of T
		{"far", 2, []int32{1 << 20, -3, 100000}, p(16, 16, 10000)},
	}
}

// ropeInput draws rows*headDim values with specials over them: ±Inf, NaN, subnormals, -0 and values
// whose products overflow.
func ropeInput(rng *rand.Rand, rows, headDim int) []float32 {
	x := randRow(rng, rows*headDim, "normal")
	for i, v := range []float32{posInf, nanF, minSub, maxSub, negZero, maxFinite, -maxFinite, negInfF, 0} {
		j := (i*37 + 5) % len(x)
		x[j] = v
	}
	return x
}

func ropeCases(s Schedule, mode oracle.RopeMode) ([]Case, error) {
	rng := rand.New(rand.NewSource(104 + int64(mode)))
	var out []Case
	for _, sh := range ropeShapes(mode) {
		rows := len(sh.pos) * sh.heads
		x := ropeInput(rng, rows, sh.p.HeadDim)
		want := make([]float32, len(x))
		if err := oracle.RopeF32(want, x, sh.pos, sh.p); err != nil {
			return nil, fmt.Errorf("rope %s: %w", sh.name, err)
		}
		units := rows * ((sh.p.HeadDim + 1) / 2)
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%dx%dx%d", sh.name, len(sh.pos), sh.heads, sh.p.HeadDim),
			Buffers: [][]byte{f32Bytes(x), i32Bytes(sh.pos), make([]byte, 4*len(x))},
			Params:  []uint32{uint32(sh.p.HeadDim), uint32(sh.p.NDims), uint32(sh.heads), uint32(rows), fbits(sh.p.Base)},
			Groups:  ElemGroups(units, s.Lanes),
			Outputs: []int{2},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}

func rmsNormRopeCases(s Schedule) ([]Case, error) {
	const T = oracle.RowWidth
	rng := rand.New(rand.NewSource(105))
	var out []Case
	shapes := []struct {
		ropeShape
		eps      float32
		weighted bool
		kind     string
	}{
		{ropeShape{"d64", 2, []int32{0, 1, 4095}, oracle.RopeParams{HeadDim: 64, NDims: 64, Base: 10000, Mode: oracle.RopeNeox}}, 1e-6, true, "normal"},
		{ropeShape{"d128", 3, []int32{4095, 9}, oracle.RopeParams{HeadDim: 128, NDims: 128, Base: 1e6, Mode: oracle.RopeNormal}}, 1e-6, true, "unit"},
		{ropeShape{"partial", 2, []int32{0, 300}, oracle.RopeParams{HeadDim: 80, NDims: 32, Base: 10000, Mode: oracle.RopeNeox}}, 1e-5, false, "normal"},
		{ropeShape{"odd", 2, []int32{2, 4095}, oracle.RopeParams{HeadDim: 7, NDims: 4, Base: 10000, Mode: oracle.RopeNormal}}, 1e-6, true, "normal"},
		{ropeShape{"pair", 1, []int32{1, 0}, oracle.RopeParams{HeadDim: 2, NDims: 2, Base: 10000, Mode: oracle.RopeNormal}}, 1e-6, false, "normal"},
		{ropeShape{"ragged", 1, []int32{4095, 1}, oracle.RopeParams{HeadDim: T + 6, NDims: (T + 6) &^ 1, Base: 10000, Mode: oracle.RopeNeox}}, 1e-6, true, "wide"},
		{ropeShape{"long", 1, []int32{77}, oracle.RopeParams{HeadDim: 2*T + 10, NDims: 2 * T, Base: 10000, Mode: oracle.RopeNormal}}, 1e-6, false, "unit"},
		{ropeShape{"tiny", 2, []int32{4095, 0}, oracle.RopeParams{HeadDim: 16, NDims: 16, Base: 10000, Mode: oracle.RopeNeox}}, 1e-6, true, "tiny"},
		{ropeShape{"zeros_eps0", 1, []int32{3}, oracle.RopeParams{HeadDim: 8, NDims: 8, Base: 10000, Mode: oracle.RopeNormal}}, 0, false, "zeros"},
		{ropeShape{"specials", 3, []int32{1, 4095}, oracle.RopeParams{HeadDim: 32, NDims: 32, Base: 10000, Mode: oracle.RopeNormal}}, 1e-6, true, "special"},
	}
	for _, sh := range shapes {
		rows := len(sh.pos) * sh.heads
		n := sh.p.HeadDim
		var x []float32
		if sh.kind == "special" {
			x = ropeInput(rng, rows, n)
		} else {
			x = randRow(rng, rows*n, sh.kind)
		}
		var w, wref []float32 = []float32{0}, nil
		if sh.weighted {
			w = make([]float32, n)
			for i := range w {
				w[i] = float32(1 + 0.25*rng.NormFloat64())
			}
			w[0] = -1.5
			wref = w
		}
		normed := make([]float32, len(x))
		if err := oracle.RMSNormF32(normed, x, wref, n, sh.eps); err != nil {
			return nil, fmt.Errorf("rms_norm_rope %s: %w", sh.name, err)
		}
		want := make([]float32, len(x))
		if err := oracle.RopeF32(want, normed, sh.pos, sh.p); err != nil {
			return nil, fmt.Errorf("rms_norm_rope %s: %w", sh.name, err)
		}
		out = append(out, Case{
			Name:    fmt.Sprintf("%s_%dx%dx%d_mode%d", sh.name, len(sh.pos), sh.heads, n, sh.p.Mode),
			Buffers: [][]byte{f32Bytes(x), i32Bytes(sh.pos), f32Bytes(w), make([]byte, 4*len(x))},
			Params: []uint32{uint32(n), uint32(sh.p.NDims), uint32(sh.heads), fbits(sh.p.Base), fbits(sh.eps),
				b2u(sh.weighted), uint32(sh.p.Mode)},
			Groups:  [3]uint32{uint32(rows), 1, 1},
			Outputs: []int{3},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}
