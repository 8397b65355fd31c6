package oracle

import "fmt"

// This file defines the float-path dot over quantized weights, block by block: the in-block
// order of each format (rule 4 of the numeric contract: "inside a quantized block the format
// fixes one order, chosen for speed").
//
// A row of K values is cut into units of UnitSize = 32 consecutive values (every quantized
// type's block is a whole number of units: 1 for the 32-value types, 2 for q2_0 and nvfp4, 4
// for q1_0, 8 for the 256-value types). Each unit gives one float32 partial; the row's result is
// the canonical sum of its partials over BlockDotWidth virtual lanes (reduce.go): virtual lane v
// takes units v, v+W, ... A GPU invocation therefore works through whole units: it loads the
// unit's codes with a few wide loads, its scales once, and 32 consecutive activations (eight
// 16-byte loads).
//
// A unit is decoded into 32 codes c[j] and its groups: the maximal runs of consecutive values
// that share one scale s (and one min m, where the format has mins) in the format's definition,
// so one group of 32 or two of 16 (the types with a scale per 16 values), such that the format's
// dequantized value is exactly
//
//	value j = float32(s * c[j])            (+ m, one more rounding, where the group has a min)
//
// bit for bit what Dequantize gives (the codes are small integers or codebook values, exact in
// float32; a test checks every decoder against Dequantize). The partial of a unit is then
//
//	for each group g, in order, over its values j (ascending):
//	    a[r] = -0 + p[j0+r] + p[j0+4+r] + ...   r = 0..3 (four accumulators, p[j] = float32(c[j]*x[j]))
//	    P    = (a[0] + a[1]) + (a[2] + a[3])
//	    with a min: M likewise over x[j] itself
//	partial = -0 + float32(s_0*P_0) (+ float32(m_0*M_0)) + float32(s_1*P_1) (+ ...)
//
// every operation rounded (no FMA). Four accumulators, each taking every fourth value, are what
// a float4 register does: a GPU invocation multiplies a float4 of activations by four codes and
// adds into one float4, and a CPU (lavapipe) gets four independent add chains instead of one. The
// scale (and min) is applied once per group, not once per value. Dequantization itself
// (get_rows, Dequantize) is unchanged: these orders apply to the dot only.

// UnitSize is the number of values in one unit of the float-path dot over quantized weights.
const UnitSize = 32

// unitGroup is a run of consecutive values of a unit that share a scale (and a min).
type unitGroup struct {
	n      int     // values in the group; the groups of a unit cover its 32 values in order
	s      float32 // scale: value = float32(s*c)
	m      float32 // min, added after the product when hasMin
	hasMin bool
}

// unitDecoder decodes unit u (values 32u .. 32u+31) of the block blk (exactly TypeSize bytes):
// it writes the unit's 32 codes to c and appends the unit's groups to g, returning it.
type unitDecoder func(blk []byte, u int, c *[UnitSize]float32, g []unitGroup) []unitGroup

// unitDecoders holds the unit decoder of every quantized type (registered by the format files).
var unitDecoders = map[Type]unitDecoder{}

// sum4 is the four-accumulator sum of terms term(0..n-1) (n a multiple of 4):
// (a0 + a1) + (a2 + a3) with a_r = -0 + term(r) + term(r+4) + ...
func sum4(n int, term func(j int) float32) float32 {
	a := [4]float32{negZero, negZero, negZero, negZero}
	for j := 0; j < n; j++ {
		a[j%4] = a[j%4] + term(j)
	}
	return (a[0] + a[1]) + (a[2] + a[3])
}

// unitPartial is the partial of one unit: the groups' scaled four-accumulator sums, added in
// order (see the file comment). x holds the unit's 32 activations.
func unitPartial(c *[UnitSize]float32, groups []unitGroup, x []float32) float32 {
	acc := negZero
	o := 0
	for _, g := range groups {
		cs, xs := c[o:o+g.n], x[o:o+g.n]
		p := sum4(g.n, func(j int) float32 { return float32(cs[j] * xs[j]) })
		acc = acc + float32(g.s*p)
		if g.hasMin {
			m := sum4(g.n, func(j int) float32 { return xs[j] })
			acc = acc + float32(g.m*m)
		}
		o += g.n
	}
	return acc
}

// decodeUnit runs t's unit decoder for unit u of blk and checks that its groups cover the unit.
func decodeUnit(t Type, blk []byte, u int, c *[UnitSize]float32, g []unitGroup) ([]unitGroup, error) {
	dec, ok := unitDecoders[t]
	if !ok {
		return nil, fmt.Errorf("oracle: matvec: %s has no float-path dot", t)
	}
	g = dec(blk, u, c, g[:0])
	n := 0
	for _, gr := range g {
		if gr.n <= 0 || gr.n%4 != 0 {
			return nil, fmt.Errorf("oracle: matvec: %s unit decoder gave a group of %d values", t, gr.n)
		}
		n += gr.n
	}
	if n != UnitSize {
		return nil, fmt.Errorf("oracle: matvec: %s unit decoder covered %d values, want %d", t, n, UnitSize)
	}
	return g, nil
}

// UnitPartial returns the float-path partial of unit u (values 32u .. 32u+31) of one block of t
// (blk, exactly TypeSize bytes) against the unit's 32 activations x: the term a row's matvec sums
// canonically over BlockDotWidth virtual lanes.
func UnitPartial(t Type, blk []byte, u int, x []float32) (float32, error) {
	ti, ok := t.Info()
	if !ok || isFloatType(t) {
		return 0, fmt.Errorf("oracle: unit partial: %s is not a quantized type", t)
	}
	if len(blk) != ti.TypeSize || u < 0 || u >= ti.BlockSize/UnitSize || len(x) != UnitSize {
		return 0, fmt.Errorf("oracle: unit partial: %s: %d bytes, unit %d, %d activations (want %d bytes, unit < %d, %d activations)",
			t, len(blk), u, len(x), ti.TypeSize, ti.BlockSize/UnitSize, UnitSize)
	}
	var c [UnitSize]float32
	g, err := decodeUnit(t, blk, u, &c, make([]unitGroup, 0, 2))
	if err != nil {
		return 0, err
	}
	return unitPartial(&c, g, x), nil
}

// unitValues rebuilds the 32 dequantized values of unit u from its decoding (for the tests that
// pin every unit decoder to Dequantize).
func unitValues(t Type, blk []byte, u int) ([UnitSize]float32, error) {
	var c, y [UnitSize]float32
	g, err := decodeUnit(t, blk, u, &c, nil)
	if err != nil {
		return y, err
	}
	o := 0
	for _, gr := range g {
		for j := o; j < o+gr.n; j++ {
			y[j] = float32(gr.s * c[j])
			if gr.hasMin {
				y[j] = y[j] + gr.m
			}
		}
		o += gr.n
	}
	return y, nil
}
