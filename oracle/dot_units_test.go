package oracle

import (
	"math"
	"math/rand"
	"testing"
)

// TestUnitDecodersMatchDequantize pins every float-path unit decoder to Dequantize (itself
// checked against ggml's own values): for ggml's blocks of every type and for random and
// extreme blocks, float32(s*c[j]) (+ m) must give Dequantize's bits for every value of every
// unit. So the dot's codes and scales are the format's, not a second reading of it.
func TestUnitDecodersMatchDequantize(t *testing.T) {
	m := loadManifest(t)
	golden := map[Type][]byte{}
	for _, e := range m.Quant {
		ty := mustType(t, e.Type)
		golden[ty] = append(golden[ty], readGGML(t, e.QuantFile)...)
	}
	rng := rand.New(rand.NewSource(11))
	for _, ty := range Types() {
		if isFloatType(ty) {
			continue
		}
		ti, _ := ty.Info()
		if _, ok := unitDecoders[ty]; !ok {
			t.Errorf("%s has no float-path unit decoder", ty)
			continue
		}
		blocks := golden[ty]
		for _, fill := range []byte{0x00, 0xff, 0x7c, 0x55} {
			for i := 0; i < ti.TypeSize; i++ {
				blocks = append(blocks, fill)
			}
		}
		rnd := make([]byte, 64*ti.TypeSize)
		rng.Read(rnd)
		blocks = append(blocks, rnd...)
		nb := len(blocks) / ti.TypeSize
		want := make([]float32, ti.BlockSize)
		bad := 0
		for b := 0; b < nb && bad < 5; b++ {
			blk := blocks[b*ti.TypeSize : (b+1)*ti.TypeSize]
			if err := Dequantize(ty, blk, want); err != nil {
				t.Fatal(err)
			}
			for u := 0; u < ti.BlockSize/UnitSize; u++ {
				got, err := unitValues(ty, blk, u)
				if err != nil {
					t.Fatalf("%s: %v", ty, err)
				}
				for j, g := range got {
					if w := want[u*UnitSize+j]; !sameF32(g, w) {
						t.Errorf("%s block %d unit %d value %d: s*c gives %g (%#08x), Dequantize %g (%#08x)",
							ty, b, u, j, g, math.Float32bits(g), w, math.Float32bits(w))
						bad++
						break
					}
				}
			}
		}
	}
}

// TestUnitPartialOrder checks unitPartial against an independent statement of the in-block
// order on a block whose partial depends on it: four interleaved accumulators, then
// (a0+a1)+(a2+a3), the scale applied once.
func TestUnitPartialOrder(t *testing.T) {
	var c [UnitSize]float32
	x := make([]float32, UnitSize)
	for j := range c {
		c[j] = float32(j%7) - 3
		x[j] = float32(math.Pow(1.7, float64(j%11))) * float32(1-2*(j%2))
	}
	x[0] = 1e8 // absorbs the small terms of accumulator 0 differently by order
	s := float32(0.3)
	var a [4]float32
	for r := 0; r < 4; r++ {
		a[r] = float32(math.Copysign(0, -1))
		for j := r; j < UnitSize; j += 4 {
			a[r] += float32(c[j] * x[j])
		}
	}
	want := float32(s * ((a[0] + a[1]) + (a[2] + a[3])))
	got := unitPartial(&c, []unitGroup{{n: 32, s: s}}, x)
	if !sameF32(got, want) {
		t.Fatalf("unit partial %g, the stated order gives %g", got, want)
	}
	seq := float32(0)
	for j := range c {
		seq += float32(c[j] * x[j])
	}
	if sameF32(got, float32(s*seq)) {
		t.Fatalf("the test input does not tell the four-accumulator order from the sequential one")
	}
}

// TestUnitGroupsAreMaximal checks the group rule: a unit splits into two groups only where the
// format has two scales, so on random blocks the two groups' scales (or mins) differ somewhere.
func TestUnitGroupsAreMaximal(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for ty, dec := range unitDecoders {
		ti, _ := ty.Info()
		blk := make([]byte, ti.TypeSize)
		split, differ := false, false
		for trial := 0; trial < 200; trial++ {
			rng.Read(blk)
			var c [UnitSize]float32
			for u := 0; u < ti.BlockSize/UnitSize; u++ {
				g := dec(blk, u, &c, nil)
				if len(g) < 2 {
					continue
				}
				split = true
				for i := 1; i < len(g); i++ {
					if !sameF32(g[i].s, g[0].s) || g[i].hasMin != g[0].hasMin || !sameF32(g[i].m, g[0].m) {
						differ = true
					}
				}
			}
		}
		if split && !differ {
			t.Errorf("%s: units split into groups whose scales and mins never differ: one group, not several", ty)
		}
	}
}
