package kernels

// This file holds the generic weight kernels, written once over Formats: get_rows (dequantize
// rows of a weight matrix), matvec (the float path: f32/f16/bf16 weights value by value,
// quantized weights one 32-value unit at a time through Format.Unit, summed canonically) and
// matvec_q8 (the integer path: one partial per activation block through Format.DotQ8, summed
// canonically). Every registered Format gets the cells of the ops it supports, and the
// conformance inputs below build themselves from the type's block layout and the oracle.
//
// Binding layouts (bindings in declaration order; every weight or activation buffer is the raw
// GGUF bytes bound as u32 words, padded with zeros to a multiple of 4):
//
//	get_rows:  0 w (weights, rows of n values), 1 ids (i32 row indices, m), 2 dst (f32, m*n),
//	           then the Format's tables; params: n; dispatch [ceil(n/Lanes), m, 1]: one
//	           invocation per output value (adjacent invocations write adjacent values). An index
//	           outside the rows of w leaves its output row unwritten.
//	matvec:    0 w (rows of n values), 1 x (f32, n), 2 y (f32, rows), then the tables;
//	           params: n; dispatch [rows, 1, 1]: one workgroup per row, y[r] as oracle.MatVec.
//	           f32, f16, bf16: the terms are w[i]*x[i], summed by a dsl.Canon of width
//	           oracle.FloatDotWidth. Quantized types: the terms are the row's 32-value units'
//	           partials (Format.Unit decodes a unit's codes and scales with wide loads; unitPartial
//	           applies the in-block order of oracle/dot_units.go), summed by a dsl.Canon of width
//	           oracle.BlockDotWidth. The schedule's Layout says which units an invocation takes.
//	matvec_q8: 0 w (rows of n values), 1 a (the activation, x quantized to
//	           oracle.ActivationType), 2 y (f32, rows), then the tables; params: n; dispatch
//	           [rows, 1, 1]. The terms are the activation blocks' partials, Format.DotQ8 of the
//	           weight block over each, summed by a dsl.Canon of width oracle.Width("matvec_q8"):
//	           y[r] = oracle.DotQ8(row r, a).
//
// What the matvec techniques bought, measured kernel-only on lavapipe (2 threads, subgroups of
// 8) at 1024 rows of 4096, each as a ratio in one run against the kernel without it:
//
//   - Whole 32-value units per virtual lane, codes read as words, each group's scale applied
//     once (oracle/dot_units.go), against decoding value by value with the scale reloaded for
//     each: 1.2x (f16, bf16) to 4.5x (iq2_s); q4_0 2.1x, q4_K 4.1x, q6_K 2.6x, q8_0 1.7x.
//   - The activations read as eight vec4s per unit instead of 32 scalars: 1.12x (iq3_xxs) to
//     1.76x (q1_0) on the quantized float path; q4_0 1.64x, q4_K 1.47x, q8_0 1.35x.
//   - One row per workgroup of one subgroup (f32, f16, bf16) or four (quantized), instead of
//     64 lanes: f32 1.5-2x, f16/bf16 1.2x, the integer path 1.05-1.5x.
//   - Up to four slots walked in one loop, each term to its slot's accumulator, instead of a
//     loop per slot: 15% on the integer path (two copies of a heavy term cost that much).
//   - Several rows per workgroup (Schedule.Rows 2 or 4, sharing the activations): no gain on
//     lavapipe for f32, q4_0, q8_0, q4_K, q6_K (the tuner keeps one); kept as a knob for
//     devices where loads, not arithmetic, bound the kernel.
//   - `onesource tune` over lanes, layout and rows: up to 1.46x more on this device for the
//     integer path (16 lanes, strided, for the 256-value types), none or a few percent for the
//     float path, whose defaults above were chosen from the same sweep.
//
// The DotQ8 calling convention for weight blocks longer than the activation block (q1_0 with
// 128 values, q2_0 and nvfp4 with 64, each over 32-value q8_1 blocks): the oracle takes one
// partial per ACTIVATION block, so matvec_q8 calls DotQ8 once per activation block, with off the
// offset of the weight block that holds it and aoff the offset of that activation block, counted
// from the start of the activation vector. The Format picks the part of its block from aoff:
// part = (aoff / activation TypeSize) % (weight BlockSize / activation BlockSize).

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand"
	"sync"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The ops of the weight kernels.
const (
	opGetRows  = "get_rows"
	opMatVec   = "matvec"
	opMatVecQ8 = "matvec_q8"
)

// weightInputs is what the generic conformance inputs may know about a type beyond its block
// size: where its scales sit (edge blocks put special values there), hand-made edge blocks,
// and a source of realistic blocks for types the oracle cannot quantize. Every field is optional.
type weightInputs struct {
	halves []int           // byte offsets of f16 scales in a block
	floats []int           // byte offsets of f32 scales in a block
	edges  func() [][]byte // extra edge blocks, each exactly TypeSize bytes
	// sample returns nblocks realistic blocks; used only when the oracle has no reference
	// quantizer for the type (nil: random bytes with tame scales at halves and floats).
	sample func(rng *rand.Rand, nblocks int) []byte
}

var (
	weightMu  sync.Mutex
	weightIns = map[oracle.Type]weightInputs{}
)

// registerWeightCells registers the get_rows and matvec cells of f, and matvec_q8 when f has a
// DotQ8 (and the oracle an integer path for the type). Call it from the init that registers f;
// it is idempotent, and formats registered before this file's init get their cells anyway
// (weights.go sorts after format_*.go, and Go runs a package's init functions in file order).
// in, when given, describes the type's blocks for the conformance inputs.
func registerWeightCells(f Format, in ...weightInputs) {
	weightMu.Lock()
	if len(in) > 0 {
		weightIns[f.Type] = in[0]
	}
	weightMu.Unlock()
	ops := []string{opGetRows}
	if ti, _ := f.Type.Info(); ti.BlockSize == 1 || f.Unit != nil {
		ops = append(ops, opMatVec)
	}
	if _, ok := oracle.ActivationType(f.Type); ok && f.DotQ8 != nil {
		ops = append(ops, opMatVecQ8)
	}
	ti, _ := f.Type.Info()
	for _, op := range ops {
		if _, done := Lookup(op, f.Type); done {
			continue
		}
		w, _ := oracle.Width(op, f.Type)
		c := Cell{
			Op:    op,
			Type:  f.Type,
			Build: func(s Schedule) *dsl.Kernel { return buildWeight(op, f, s) },
			Cases: func(s Schedule) ([]Case, error) { return weightCases(op, f, s) },
			Width: w,
		}
		// The dots run one row per workgroup: one subgroup for the float types (cheap terms, and
		// no shared-memory stage), four for the quantized ones (whole units per lane). Measured
		// with onesource gate on lavapipe (subgroups of 8, 2 threads) at 1024x4096 against the
		// twins of before the canonical widths: 8 lanes make f32, f16 and bf16 1.2-2.0x as
		// fast, 32 lanes the quantized float path 1.7-4.5x and the integer path 1.0-1.5x; 16
		// and 64 lanes were slower for each. A tuner, per device, supersedes this default.
		switch {
		case op == opGetRows:
		case ti.BlockSize == 1:
			c.DefaultSubgroups = 1
		default:
			c.DefaultSubgroups = 4
		}
		if op != opGetRows {
			c.MaxRows = 4
		}
		Register(c)
	}
}

func init() {
	for _, f := range Formats() {
		registerWeightCells(f)
	}
}

func weightInputsOf(t oracle.Type) weightInputs {
	weightMu.Lock()
	defer weightMu.Unlock()
	return weightIns[t]
}

// wLog2 is the log2 of a power of two.
func wLog2(n int) int { return bits.TrailingZeros(uint(n)) }

func buildWeight(op string, f Format, s Schedule) *dsl.Kernel {
	switch op {
	case opGetRows:
		return buildGetRows(f, s)
	case opMatVec:
		return buildMatVec(f, s)
	default:
		return buildMatVecQ8(f, s)
	}
}

// buildGetRows: dst[i][j] = value j of row ids[i] (see the layout in the file comment).
func buildGetRows(f Format, s Schedule) *dsl.Kernel {
	ti, _ := f.Type.Info()
	k := dsl.New("get_rows_"+f.Type.String(), s.Lanes)
	w := NewBytes(k, "w")
	ids := k.Buffer("ids", dsl.I32, dsl.Read)
	dst := k.Buffer("dst", dsl.F32, dsl.Write)
	d := NewDecoder(k, w, f)
	n := k.Param("n", dsl.U32)
	j := k.WorkgroupID(dsl.X).Mul(s.Lanes).Add(k.LocalIndex()).Named("j")
	i := k.WorkgroupID(dsl.Y).Named("i")
	lb := wLog2(ti.BlockSize)
	rowBytes := n.Shr(lb).Mul(ti.TypeSize).Named("row_bytes")
	r := ids.Load(i).Bitcast(dsl.U32).Named("r")
	// A row index past the weights (or negative) writes nothing, rather than reading outside
	// the buffer; the oracle rejects such indices.
	rows := w.w.Len().Mul(4).Div(rowBytes.Max(1))
	k.If(j.Lt(n).And(r.Lt(rows)), func() {
		off := r.Mul(rowBytes).Add(j.Shr(lb).Mul(ti.TypeSize)).Named("off")
		v := f.Value(d, off, j.And(ti.BlockSize-1))
		dst.Store(i.Mul(n).Add(j), v)
	})
	return k
}

// matvecRows lays out the rows of a matvec workgroup: R = s.RowsPerGroup() consecutive rows
// from WorkgroupID.x*R, each row's byte offset in w (rows past the matrix read its last row, so
// every invocation reaches the reductions), and store, which writes the results of the rows that
// exist from invocation 0. The matrix has as many rows as y has values.
type matvecRows struct {
	k     *dsl.Kernel
	first dsl.Value   // the workgroup's first row
	offs  []dsl.Value // byte offset in w of each row (clamped)
	y     dsl.Array
}

func newMatvecRows(k *dsl.Kernel, s Schedule, y dsl.Array, rowBytes dsl.Value) matvecRows {
	R := s.RowsPerGroup()
	m := matvecRows{k: k, first: k.WorkgroupID(dsl.X).Mul(uint32(R)).Named("first_row"), y: y}
	last := y.Len().Max(1).Sub(1)
	for r := 0; r < R; r++ {
		m.offs = append(m.offs, m.first.Add(uint32(r)).Min(last).Mul(rowBytes).Named(fmt.Sprintf("row_off%d", r)))
	}
	return m
}

func (m matvecRows) store(totals []dsl.Value) {
	k := m.k
	k.If(k.LocalIndex().Eq(0), func() {
		n := m.y.Len()
		for r, t := range totals {
			row := m.first.Add(uint32(r))
			k.If(row.Lt(n), func() { m.y.Store(row, t.Named(fmt.Sprintf("total%d", r))) })
		}
	})
}

// buildMatVec: y[r] = oracle.MatVec's row r (see the layout in the file comment); s.Rows rows
// per workgroup share their activation loads.
func buildMatVec(f Format, s Schedule) *dsl.Kernel {
	ti, _ := f.Type.Info()
	lb := wLog2(ti.BlockSize)
	k := dsl.New("matvec_"+f.Type.String(), s.Lanes)
	w := NewBytes(k, "w")
	// Quantized rows are whole 32-value units, so x is read as vec4s (eight 16-byte loads a
	// unit); f32, f16 and bf16 rows may have any length.
	xElem := dsl.Vec(dsl.F32, 4)
	if ti.BlockSize == 1 {
		xElem = dsl.F32
	}
	x := k.Buffer("x", xElem, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	d := NewDecoder(k, w, f)
	n := k.Param("n", dsl.U32)
	rows := newMatvecRows(k, s, y, n.Shr(lb).Mul(ti.TypeSize).Named("row_bytes"))
	R := len(rows.offs)
	var totals []dsl.Value
	if ti.BlockSize == 1 {
		c := k.Canon(oracle.FloatDotWidth, s.Layout)
		totals = c.SumN(n, R, func(i dsl.Value) []dsl.Value {
			xi := x.Load(i)
			out := make([]dsl.Value, R)
			for r, off := range rows.offs {
				out[r] = f.Value(d, off.Add(i.Mul(ti.TypeSize)), k.U32(0)).Mul(xi)
			}
			return out
		})
	} else {
		per := ti.BlockSize / oracle.UnitSize // units per block
		c := k.Canon(oracle.BlockDotWidth, s.Layout)
		totals = c.SumN(n.Shr(wLog2(oracle.UnitSize)), R, func(u dsl.Value) []dsl.Value {
			xs := unitActivations(x, u.Mul(oracle.UnitSize))
			out := make([]dsl.Value, R)
			for r, off := range rows.offs {
				un := f.Unit(d, off.Add(u.Shr(wLog2(per)).Mul(ti.TypeSize)), u.And(per-1))
				out[r] = unitPartial(un, xs)
			}
			return out
		})
	}
	rows.store(totals)
	return k
}

// unitActivations loads the 32 activations at x0 of a unit (x a buffer of vec4s, x0 a multiple
// of 4) as eight vec4s.
func unitActivations(x dsl.Array, x0 dsl.Value) []dsl.Value {
	xs := make([]dsl.Value, oracle.UnitSize)
	base := x0.Shr(2)
	for q := 0; q < oracle.UnitSize/4; q++ {
		v := x.Load(base.Add(q))
		for l := 0; l < 4; l++ {
			xs[4*q+l] = v.Lane(l)
		}
	}
	return xs
}

// unitPartial is oracle/dot_units.go's partial of one unit against its 32 activations xs: per
// group, four accumulators (each every fourth product, as a float4 register holds them),
// (a0+a1)+(a2+a3), times the group's scale, plus the min times the same sum of the activations;
// the groups added in order.
func unitPartial(un Unit, xs []dsl.Value) dsl.Value {
	sum4 := func(term func(j int) dsl.Value, n int) dsl.Value {
		var a [4]dsl.Value
		for j := 0; j < n; j++ {
			t := term(j)
			if j < 4 {
				a[j] = t // -0 + t = t: the accumulators start at their first term
			} else {
				a[j%4] = a[j%4].Add(t)
			}
		}
		return a[0].Add(a[1]).Add(a[2].Add(a[3]))
	}
	var acc dsl.Value
	add := func(v dsl.Value) {
		if acc.IR() == nil {
			acc = v // -0 + v = v
		} else {
			acc = acc.Add(v)
		}
	}
	o := 0
	for _, g := range un.Groups {
		o0 := o
		add(g.Scale.Mul(sum4(func(j int) dsl.Value { return un.Codes[o0+j].Mul(xs[o0+j]) }, g.N)))
		if g.HasMin {
			add(g.Min.Mul(sum4(func(j int) dsl.Value { return xs[o0+j] }, g.N)))
		}
		o += g.N
	}
	return acc
}

// buildMatVecQ8: y[r] = oracle.DotQ8(row r, a) (see the layout in the file comment); s.Rows
// rows per workgroup.
func buildMatVecQ8(f Format, s Schedule) *dsl.Kernel {
	ti, _ := f.Type.Info()
	act, _ := oracle.ActivationType(f.Type)
	ai, _ := act.Info()
	W, _ := oracle.Width(opMatVecQ8, f.Type)
	per := ti.BlockSize / ai.BlockSize // activation blocks (partials) per weight block
	k := dsl.New("matvec_q8_"+f.Type.String(), s.Lanes)
	w := NewBytes(k, "w")
	a := NewBytes(k, "a")
	y := k.Buffer("y", dsl.F32, dsl.Write)
	d := NewDecoder(k, w, f)
	n := k.Param("n", dsl.U32)
	rows := newMatvecRows(k, s, y, n.Shr(wLog2(ti.BlockSize)).Mul(ti.TypeSize).Named("row_bytes"))
	parts := n.Shr(wLog2(ai.BlockSize)).Named("parts")
	totals := k.Canon(W, s.Layout).SumN(parts, len(rows.offs), func(p dsl.Value) []dsl.Value {
		out := make([]dsl.Value, len(rows.offs))
		for r, off := range rows.offs {
			out[r] = f.DotQ8(d, off.Add(p.Shr(wLog2(per)).Mul(ti.TypeSize)), a, p.Mul(ai.TypeSize))
		}
		return out
	})
	rows.store(totals)
	return k
}

// ---- helpers for Formats ----

// blockWords returns n little-endian 32-bit words of the block at byte offset off, starting at
// byte first of the block (first even): word i holds bytes off+first+4i .. off+first+4i+3, as
// one u32. It loads whole words and, where off+first is not a multiple of 4, joins two halves;
// it never loads a word past the one holding the block's last byte (blockBytes long), so a
// block at the end of a buffer is safe. Where the type size is a multiple of 4 the alignment is
// known when the kernel is built and no select is emitted.
func blockWords(b Bytes, off dsl.Value, first, n, typeSize int) []dsl.Value {
	out := make([]dsl.Value, n)
	if typeSize%4 == 0 { // off is a multiple of 4
		base := off.Shr(2)
		if first%4 == 0 {
			for i := range out {
				out[i] = b.Word(base.Add(first/4 + i))
			}
			return out
		}
		// Always two bytes past a word boundary.
		lo := b.Word(base.Add(first / 4))
		for i := range out {
			last := first/4 + i + 1
			var hi dsl.Value
			if 4*last < typeSize {
				hi = b.Word(base.Add(last))
			} else {
				hi = b.k.U32(0) // past the block: those bytes are not asked for
			}
			out[i] = lo.Shr(16).Or(hi.Shl(16))
			lo = hi
		}
		return out
	}
	start := off.Add(first)
	base := start.Shr(2)
	last := off.Add(typeSize - 1).Shr(2)
	odd := start.And(2).Ne(0)
	lo := b.Word(base)
	for i := range out {
		hi := b.Word(base.Add(i + 1).Min(last))
		out[i] = b.k.Select(odd, lo.Shr(16).Or(hi.Shl(16)), lo)
		lo = hi
	}
	return out
}

// dotWords returns the exact i32 sum of DotI8x4(q[i], a[i]) over the packed words.
func dotWords(k *dsl.Kernel, q, a []dsl.Value) dsl.Value {
	var s dsl.Value
	for i := range q {
		p := k.DotI8x4(q[i], a[i])
		if i == 0 {
			s = p
		} else {
			s = s.Add(p)
		}
	}
	return s
}

// sumWords returns the exact i32 sum of the signed bytes of the packed words.
func sumWords(k *dsl.Kernel, a []dsl.Value) dsl.Value {
	ones := make([]dsl.Value, len(a))
	for i := range ones {
		ones[i] = k.U32(0x01010101)
	}
	return dotWords(k, ones, a)
}

// subBytes subtracts c (0 < c < 128) from each byte of w, whose bytes are in 0..127, giving the
// signed bytes byte-c without borrows between bytes.
func subBytes(w dsl.Value, c uint32) dsl.Value {
	return w.Or(0x80808080).Sub(c * 0x01010101).Xor(0x80808080)
}

// spread4 moves the low 4 bits of h (a u32 below 16) to bit 0 of each byte: bit i to bit 8i.
func spread4(h dsl.Value) dsl.Value {
	return h.Mul(0x00204081).And(0x01010101)
}

// q81Scale returns the f16 scale d of the q8_1 block at aoff, as f32.
func q81Scale(a Bytes, aoff dsl.Value) dsl.Value { return a.F16(aoff) }

// q81CodeWords returns the 8 packed words of int8 codes of the q8_1 block at aoff (aoff is a
// multiple of 36, so the codes are word-aligned).
func q81CodeWords(a Bytes, aoff dsl.Value) []dsl.Value {
	base := aoff.Shr(2)
	out := make([]dsl.Value, 8)
	for i := range out {
		out[i] = a.Word(base.Add(1 + i))
	}
	return out
}

// q8KScale returns the f32 scale of the q8_K block at aoff (a multiple of 292).
func q8KScale(a Bytes, aoff dsl.Value) dsl.Value { return a.Word(aoff.Shr(2)).Bitcast(dsl.F32) }

// q8KWords returns n packed words of codes of the q8_K block at aoff, from code first (a
// multiple of 4).
func q8KWords(a Bytes, aoff dsl.Value, first, n int) []dsl.Value {
	base := aoff.Shr(2)
	out := make([]dsl.Value, n)
	for i := range out {
		out[i] = a.Word(base.Add(1 + first/4 + i))
	}
	return out
}

// q8KBsum returns bsums[j] of the q8_K block at aoff (the sum of codes 16j..16j+15), as i32.
func q8KBsum(a Bytes, aoff dsl.Value, j int) dsl.Value {
	w := a.Word(aoff.Shr(2).Add(65 + j/2))
	if j%2 == 0 {
		w = w.Shl(16)
	}
	return w.Bitcast(dsl.I32).Shr(16)
}

// ---- conformance inputs ----

// ggmlInput is quant_input.f32 of the ggml vectors (8 rows of 4096 values, one row per kind:
// uniform, gauss, weights_outliers, zero_blocks, large, small, offset, int_grid), regenerated
// with the recipe in oracle/testdata/ggml/README.md: quantizing a prefix of a row gives ggml's
// own blocks.
var ggmlInput = sync.OnceValue(func() [][]float32 {
	const rows, n = 8, 4096
	state := uint64(0x5eed00006a6d6c01)
	next := func() float64 {
		state += 0x9E3779B97F4A7C15
		z := state
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		return float64((z^z>>31)>>40) * (1.0 / (1 << 24))
	}
	out := make([][]float32, rows)
	for r := range out {
		out[r] = make([]float32, n)
		for j := range out[r] {
			u0, u1, u2, u3, u4 := next(), next(), next(), next(), next()
			U := float64(2*u0) - 1
			G := float64(float64(float64(float64(u0+u1)+u2)+u3)-2) * 1.7320508075688772
			var x float64
			switch r {
			case 0:
				x = U
			case 1:
				x = G
			case 2:
				x = float64(0.02 * G)
				if u4 < 0.01 {
					x = float64(x * 40)
				}
			case 3:
				b, o := (j/256)%4, j%256
				switch {
				case b == 1 && o == 17:
					x = 3.5
				case b == 2:
					x = 0.75
				case b == 3 && (o/32)%2 == 1:
					x = U
				}
			case 4:
				x = float64(30000 * U)
			case 5:
				if j < n/2 {
					x = float64(1e-4 * U)
				} else {
					x = float64(1e-7 * U)
				}
			case 6:
				if j < n/2 {
					x = 1.5 + U
				} else {
					x = -3 + float64(0.5*U)
				}
			case 7:
				if j < n/2 {
					x = float64((math.Floor(float64(16*u0)) - 8) * 0.25)
				} else {
					x = float64(0.1 * float64(float64(G*G)*G))
				}
			}
			out[r][j] = float32(x)
		}
	}
	return out
})

// kindRow returns n values of ggml kind r (0..7), the row's prefix, repeated past 4096 values.
func kindRow(r, n int) []float32 {
	src := ggmlInput()[r%8]
	out := make([]float32, n)
	for j := range out {
		out[j] = src[j%len(src)]
	}
	return out
}

// halfSpecials are f16 scale values for edge blocks: infinities, NaNs, zeros, the smallest and
// largest subnormals, the largest finite value, the smallest normal.
var halfSpecials = []uint16{0x7c00, 0xfc00, 0x7e00, 0xfd01, 0x0000, 0x8000, 0x0001, 0x83ff, 0x7bff, 0xfbff, 0x0400}

// floatSpecials are f32 scale values for edge blocks.
var floatSpecials = []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xffa00001, 0, 0x80000000, 1, 0x807fffff, 0x7f7fffff, 0xff7fffff, 0x00800000}

// tame makes blk's scales ordinary (so a random block is a plausible one).
func tame(blk []byte, in weightInputs, rng *rand.Rand) {
	for _, h := range in.halves {
		binary.LittleEndian.PutUint16(blk[h:], oracle.F32ToF16(float32(rng.Float64()*0.02-0.01)))
	}
	for _, o := range in.floats {
		binary.LittleEndian.PutUint32(blk[o:], math.Float32bits(float32(rng.Float64()*0.02-0.01)))
	}
}

// randomBlocks returns nblocks random blocks of t with tame scales.
func randomBlocks(t oracle.Type, in weightInputs, rng *rand.Rand, nblocks int) []byte {
	ti, _ := t.Info()
	b := make([]byte, nblocks*ti.TypeSize)
	rng.Read(b)
	for i := 0; i < nblocks; i++ {
		tame(b[i*ti.TypeSize:(i+1)*ti.TypeSize], in, rng)
	}
	return b
}

// weightRows returns rows rows of n values of t: row r holds ggml kind (kind0+r)%8 quantized by
// the oracle's reference quantizer; types it cannot quantize take in.sample or random blocks.
func weightRows(t oracle.Type, in weightInputs, rng *rand.Rand, kind0, rows, n int) ([]byte, error) {
	rs, err := oracle.RowSize(t, n)
	if err != nil {
		return nil, err
	}
	ti, _ := t.Info()
	out := make([]byte, 0, rows*rs)
	ref, _ := oracle.HasQuantizer(t)
	for r := 0; r < rows; r++ {
		switch {
		case ref:
			q := make([]byte, rs)
			if err := oracle.Quantize(t, kindRow(kind0+r, n), q); err != nil {
				return nil, err
			}
			out = append(out, q...)
		case in.sample != nil:
			out = append(out, in.sample(rng, n/ti.BlockSize)...)
		default:
			out = append(out, randomBlocks(t, in, rng, n/ti.BlockSize)...)
		}
	}
	return out, nil
}

// edgeBlocks returns t's edge blocks: all zero bytes, all 0xff bytes, a realistic block with
// each scale replaced by each special value, the same block with every other byte 0x00 and
// 0xff (extreme quants), random blocks, and the type's own edge blocks.
func edgeBlocks(t oracle.Type, in weightInputs, rng *rand.Rand) ([][]byte, error) {
	ti, _ := t.Info()
	fill := func(c byte) []byte {
		b := make([]byte, ti.TypeSize)
		for i := range b {
			b[i] = c
		}
		return b
	}
	out := [][]byte{fill(0), fill(0xff)}
	base, err := weightRows(t, in, rng, 1, 1, ti.BlockSize) // a gauss block
	if err != nil {
		return nil, err
	}
	for _, h := range in.halves {
		for _, v := range halfSpecials {
			b := append([]byte(nil), base...)
			binary.LittleEndian.PutUint16(b[h:], v)
			out = append(out, b)
		}
	}
	for _, o := range in.floats {
		for _, v := range floatSpecials {
			b := append([]byte(nil), base...)
			binary.LittleEndian.PutUint32(b[o:], v)
			out = append(out, b)
		}
	}
	if len(in.halves)+len(in.floats) > 0 && ti.BlockSize > 1 {
		scale := make([]bool, ti.TypeSize)
		for _, h := range in.halves {
			scale[h], scale[h+1] = true, true
		}
		for _, o := range in.floats {
			for i := 0; i < 4; i++ {
				scale[o+i] = true
			}
		}
		for _, c := range []byte{0x00, 0xff, 0x55, 0xaa} {
			b := append([]byte(nil), base...)
			for i := range b {
				if !scale[i] {
					b[i] = c
				}
			}
			out = append(out, b)
		}
	}
	for i := 0; i < 4; i++ {
		out = append(out, randomBlocks(t, in, rng, 1))
	}
	if in.edges != nil {
		for _, b := range in.edges() {
			if len(b) != ti.TypeSize {
				return nil, fmt.Errorf("kernels: %s edge block of %d bytes, want %d", t, len(b), ti.TypeSize)
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// WeightRows returns rows rows of n values of type t made as the conformance inputs make them:
// ggml's input kinds (uniform, gauss, outliers, ...) quantized by the oracle's reference
// quantizer, or, for the types it cannot quantize, realistic or random blocks with ordinary
// scales. seed fixes the bytes. n must be a whole number of t's blocks.
func WeightRows(t oracle.Type, rows, n int, seed int64) ([]byte, error) {
	if _, ok := FormatOf(t); !ok {
		return nil, fmt.Errorf("kernels: no format for %s", t)
	}
	return weightRows(t, weightInputsOf(t), rand.New(rand.NewSource(seed)), 0, rows, n)
}

// Tables returns the names and bytes (padded to words) of the tables t's weight kernels bind
// after their own buffers, in binding order.
func Tables(t oracle.Type) (names []string, bufs [][]byte, err error) {
	f, ok := FormatOf(t)
	if !ok {
		return nil, nil, fmt.Errorf("kernels: no format for %s", t)
	}
	bufs, err = tableBuffers(f)
	return f.Tables, bufs, err
}

// tableBuffers returns the table buffers of f, in binding order.
func tableBuffers(f Format) ([][]byte, error) {
	var out [][]byte
	for _, name := range f.Tables {
		b, err := TableWords(name)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func wI32Bytes(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func wF32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// weightShape is the number of values per row of the ordinary cases of a type: several blocks,
// and for the one-value "blocks" of f32, f16 and bf16 a count that is no multiple of a
// workgroup.
func weightShape(bs int, long bool) int {
	switch {
	case bs == 1 && long:
		return 300
	case bs == 1:
		return 100
	case long:
		return max(3, 416/bs) * bs
	}
	return max(2, 384/bs) * bs
}

// xVector returns n activation values: uniform in (-1, 1) from rng.
func xVector(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.Float64()*2 - 1)
	}
	return x
}

// xSpecial returns n activation values with zeros, negative zeros, subnormals, large and tiny
// values, spread over the blocks; for the integer path (q8) values are grouped so that whole
// activation blocks are zero, tiny or large.
func xSpecial(rng *rand.Rand, n int, q8 bool) []float32 {
	x := xVector(rng, n)
	if q8 {
		for i := range x {
			switch (i / 32) % 7 {
			case 1:
				x[i] = 0
			case 2:
				x[i] *= 1e-30 // the block scale rounds to a zero f16
			case 3:
				x[i] *= 1e-4 // a subnormal f16 block scale
			case 4:
				x[i] *= 3e6 // a block scale near the top of the f16 range
			case 5:
				x[i] = float32(i%7) - 3 // equal magnitudes, ties in the quantizer
			}
		}
		return x
	}
	specials := []float32{0, negZero, 1e-40, -1e-45, 1e30, -3e36, 1e-30, 65504, 2.5e-8}
	for i := range x {
		if i%3 == 0 {
			x[i] = specials[(i/3)%len(specials)]
		}
	}
	return x
}

// weightCases builds the conformance inputs of op for format f at schedule s.
func weightCases(op string, f Format, s Schedule) ([]Case, error) {
	t := f.Type
	ti, _ := t.Info()
	in := weightInputsOf(t)
	rng := rand.New(rand.NewSource(int64(t)*1000 + int64(len(op))))
	tables, err := tableBuffers(f)
	if err != nil {
		return nil, err
	}
	edges, err := edgeBlocks(t, in, rng)
	if err != nil {
		return nil, err
	}
	bs := ti.BlockSize
	var cases []Case
	add := func(c Case, err error) error {
		if err != nil {
			return fmt.Errorf("kernels: %s/%s case %s: %v", op, t, c.Name, err)
		}
		c.Buffers = append(c.Buffers, tables...)
		cases = append(cases, c)
		return nil
	}
	// edgeRows packs the edge blocks into rows of nb blocks (padding with ordinary blocks).
	edgeRows := func(nb int) ([]byte, int, error) {
		rows := (len(edges) + nb - 1) / nb
		w, err := weightRows(t, in, rng, 1, rows, nb*bs)
		if err != nil {
			return nil, 0, err
		}
		for i, e := range edges {
			copy(w[i*ti.TypeSize:], e)
		}
		return w, rows, nil
	}
	switch op {
	case opGetRows:
		n := weightShape(bs, false)
		w, err := weightRows(t, in, rng, 0, 8, n)
		if err != nil {
			return nil, err
		}
		if err := add(getRowsCase("ggml", t, w, n, []int32{7, 0, 3, 3, 5, 1, 6, 2, 4, 7, 0}, s)); err != nil {
			return nil, err
		}
		nb := max(1, 64/bs)
		ew, rows, err := edgeRows(nb)
		if err != nil {
			return nil, err
		}
		ids := make([]int32, rows)
		for i := range ids {
			ids[i] = int32(rows - 1 - i)
		}
		if err := add(getRowsCase("edge", t, ew, nb*bs, ids, s)); err != nil {
			return nil, err
		}
		w1, err := weightRows(t, in, rng, 1, 1, bs)
		if err != nil {
			return nil, err
		}
		if err := add(getRowsCase("one_row", t, w1, bs, []int32{0}, s)); err != nil {
			return nil, err
		}
	case opMatVec, opMatVecQ8:
		q8 := op == opMatVecQ8
		mk := func(name string, w []byte, x []float32) error {
			if q8 {
				return add(matvecQ8Case(name, t, w, x, s))
			}
			return add(matvecCase(name, t, w, x, s))
		}
		n := weightShape(bs, true)
		w, err := weightRows(t, in, rng, 0, 8, n)
		if err != nil {
			return nil, err
		}
		if err := mk("ggml", w, xVector(rng, n)); err != nil {
			return nil, err
		}
		w3, err := weightRows(t, in, rng, 0, 3, n)
		if err != nil {
			return nil, err
		}
		if err := mk("x_special", w3, xSpecial(rng, n, q8)); err != nil {
			return nil, err
		}
		// One edge block per row, at varying positions among ordinary blocks.
		nb := max(2, 64/bs)
		ew, err := weightRows(t, in, rng, 1, len(edges), nb*bs)
		if err != nil {
			return nil, err
		}
		rs := nb * ti.TypeSize
		for i, e := range edges {
			copy(ew[i*rs+(i%nb)*ti.TypeSize:], e)
		}
		if err := mk("edge", ew, xVector(rng, nb*bs)); err != nil {
			return nil, err
		}
		w1, err := weightRows(t, in, rng, 2, 1, bs)
		if err != nil {
			return nil, err
		}
		if err := mk("one_row", w1, xVector(rng, bs)); err != nil {
			return nil, err
		}
		if q8 {
			// An activation with one huge block: its q8_1 scale overflows f16 to Inf.
			xi := xVector(rng, bs)
			for i := 0; i < 32; i++ {
				xi[i] *= 3e7
			}
			w2, err := weightRows(t, in, rng, 1, 2, bs)
			if err != nil {
				return nil, err
			}
			if err := mk("x_huge_block", w2, xi); err != nil {
				return nil, err
			}
		}
		// More terms than 2W (W the canonical width): every virtual lane folds two or three,
		// and no lane count divides the terms evenly.
		W, _ := oracle.Width(op, t)
		term := 1 // values per term of the canonical sum
		switch {
		case q8:
			act, _ := oracle.ActivationType(t)
			ai, _ := act.Info()
			term = ai.BlockSize
		case bs > 1:
			term = oracle.UnitSize
		}
		nl := (2*W + 3) * term
		nl = (nl + bs - 1) / bs * bs
		wl, err := weightRows(t, in, rng, 1, 2, nl)
		if err != nil {
			return nil, err
		}
		if err := mk("long", wl, kindRow(1, nl)); err != nil {
			return nil, err
		}
	}
	return cases, nil
}

func getRowsCase(name string, t oracle.Type, w []byte, n int, ids []int32, s Schedule) (Case, error) {
	c := Case{Name: name}
	want := make([]float32, len(ids)*n)
	if err := oracle.GetRows(t, w, n, ids, want); err != nil {
		return c, err
	}
	c.Buffers = [][]byte{PadWords(w), wI32Bytes(ids), make([]byte, 4*len(want))}
	c.Params = []uint32{uint32(n)}
	c.Groups = [3]uint32{uint32((n + s.Lanes - 1) / s.Lanes), uint32(len(ids)), 1}
	c.Outputs = []int{2}
	c.Want = [][]byte{wF32Bytes(want)}
	c.Elem = []string{"f32"}
	return c, nil
}

func matvecCase(name string, t oracle.Type, w []byte, x []float32, s Schedule) (Case, error) {
	c := Case{Name: name}
	rs, err := oracle.RowSize(t, len(x))
	if err != nil {
		return c, err
	}
	want := make([]float32, len(w)/rs)
	if err := oracle.MatVec(t, w, x, want); err != nil {
		return c, err
	}
	c.Buffers = [][]byte{PadWords(w), wF32Bytes(x), make([]byte, 4*len(want))}
	c.Params = []uint32{uint32(len(x))}
	c.Groups = [3]uint32{uint32((len(want) + s.RowsPerGroup() - 1) / s.RowsPerGroup()), 1, 1}
	c.Outputs = []int{2}
	c.Want = [][]byte{wF32Bytes(want)}
	c.Elem = []string{"f32"}
	return c, nil
}

func matvecQ8Case(name string, t oracle.Type, w []byte, x []float32, s Schedule) (Case, error) {
	c := Case{Name: name}
	rs, err := oracle.RowSize(t, len(x))
	if err != nil {
		return c, err
	}
	act, ok := oracle.ActivationType(t)
	if !ok {
		return c, fmt.Errorf("%s has no integer path", t)
	}
	as, err := oracle.RowSize(act, len(x))
	if err != nil {
		return c, err
	}
	aq := make([]byte, as)
	if err := oracle.Quantize(act, x, aq); err != nil {
		return c, err
	}
	want := make([]float32, len(w)/rs)
	if err := oracle.MatVecQ8(t, w, x, want); err != nil {
		return c, err
	}
	c.Buffers = [][]byte{PadWords(w), PadWords(aq), make([]byte, 4*len(want))}
	c.Params = []uint32{uint32(len(x))}
	c.Groups = [3]uint32{uint32((len(want) + s.RowsPerGroup() - 1) / s.RowsPerGroup()), 1, 1}
	c.Outputs = []int{2}
	c.Want = [][]byte{wF32Bytes(want)}
	c.Elem = []string{"f32"}
	return c, nil
}
