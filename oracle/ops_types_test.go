package oracle

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// bigToBF16 rounds the exact value x to bf16 (nearest, ties to even) from its definition: the
// bf16 values near x are the multiples of 2^q, q = max(e-8, -133) for x in [2^(e-1), 2^e); a
// result at or above 2^128 is an infinity. Independent of F32ToBF16.
func bigToBF16(x *big.Float) uint16 {
	sign := uint16(0)
	if x.Signbit() {
		sign = 0x8000
	}
	a := new(big.Float).Abs(x)
	if a.Sign() == 0 {
		return sign
	}
	e := a.MantExp(nil)
	q := max(e-8, -133)
	scaled := new(big.Float).SetMantExp(a, -q) // exact
	n, _ := scaled.Int(nil)                    // floor (scaled >= 0)
	frac := new(big.Float).Sub(scaled, new(big.Float).SetInt(n))
	switch frac.Cmp(big.NewFloat(0.5)) {
	case 1:
		n.Add(n, big.NewInt(1))
	case 0:
		if n.Bit(0) == 1 {
			n.Add(n, big.NewInt(1))
		}
	}
	r, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(n), q).Float64()
	if r >= 0x1p128 {
		return sign | 0x7f80
	}
	return sign | uint16(math.Float32bits(float32(r))>>16)
}

// bf16Operands returns pairs of finite bf16 patterns: every pair of a set of edge values
// (subnormals, the normal boundary, ones, the largest values), then random pairs of every
// magnitude and of nearby magnitudes (where additions cancel).
func bf16Operands(n int) [][2]uint16 {
	edges := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x007f, 0x0080, 0x0081, 0x00ff, 0x3f80, 0x3f81,
		0xbf80, 0x3fff, 0x4000, 0x7f7f, 0xff7f, 0x7f00, 0x0100, 0x3c01, 0x4b7f}
	var out [][2]uint16
	for _, a := range edges {
		for _, b := range edges {
			out = append(out, [2]uint16{a, b})
		}
	}
	rng := rand.New(rand.NewSource(30))
	finite := func() uint16 {
		for {
			h := uint16(rng.Uint32())
			if h&0x7f80 != 0x7f80 {
				return h
			}
		}
	}
	for len(out) < n {
		a := finite()
		b := finite()
		if len(out)%2 == 0 { // nearby exponents
			b = b&0x807f | (a&0x7f80+uint16(rng.Intn(5))<<7-2<<7)&0x7f80
			if b&0x7f80 == 0x7f80 {
				b &^= 0x0080
			}
		}
		out = append(out, [2]uint16{a, b})
	}
	return out
}

// TestBF16ArithmeticIsCorrectlyRounded checks the claim the bf16 definitions rest on: the f32
// operation rounded to bf16 (AddBF16 ...) equals the exact result rounded once to bf16, for +,
// -, * and / (exact big.Float arithmetic; the quotient to 300 bits, which cannot land on a
// rounding tie unless it is exact) and for sqrt of every finite bf16.
func TestBF16ArithmeticIsCorrectlyRounded(t *testing.T) {
	big1 := func(h uint16) *big.Float { return new(big.Float).SetPrec(600).SetFloat64(float64(BF16ToF32(h))) }
	ops := []struct {
		name  string
		f     func(a, b uint16) uint16
		exact func(x, y *big.Float) *big.Float
	}{
		{"add", AddBF16, func(x, y *big.Float) *big.Float { return new(big.Float).SetPrec(600).Add(x, y) }},
		{"sub", SubBF16, func(x, y *big.Float) *big.Float { return new(big.Float).SetPrec(600).Sub(x, y) }},
		{"mul", MulBF16, func(x, y *big.Float) *big.Float { return new(big.Float).SetPrec(600).Mul(x, y) }},
		{"div", DivBF16, func(x, y *big.Float) *big.Float { return new(big.Float).SetPrec(300).Quo(x, y) }},
	}
	bad := 0
	for _, p := range bf16Operands(60000) {
		for _, op := range ops {
			if op.name == "div" && p[1]&0x7fff == 0 {
				continue // x/0: an infinity or NaN, by IEEE rules in f32 and bf16 alike
			}
			got := op.f(p[0], p[1])
			want := bigToBF16(op.exact(big1(p[0]), big1(p[1])))
			if r := op.exact(big1(p[0]), big1(p[1])); r.Sign() == 0 {
				want = got // the sign of an exact zero sum is IEEE's rule, not a rounding
			}
			if got != want {
				if bad < 10 {
					t.Errorf("%s(%#04x, %#04x) = %#04x, correctly rounded %#04x", op.name, p[0], p[1], got, want)
				}
				bad++
			}
		}
	}
	for h := 0; h < 0x8000; h++ { // every finite non-negative bf16 (negative ones give NaN)
		if uint16(h)&0x7f80 == 0x7f80 {
			continue
		}
		got := SqrtBF16(uint16(h))
		want := bigToBF16(new(big.Float).SetPrec(300).Sqrt(big1(uint16(h))))
		if got != want {
			if bad < 10 {
				t.Errorf("sqrt(%#04x) = %#04x, correctly rounded %#04x", h, got, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d results are not correctly rounded", bad)
	}
}

// TestIntToBF16 checks the one-rounding integer conversion against big.Float's rounding to 8
// bits, and that it differs from the double rounding int -> f32 -> bf16 where that rounds twice.
func TestIntToBF16(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	ints := []int64{0, 1, -1, 255, 256, 257, 0x1ff, 0x201, 1 << 24, 1<<24 + 1, 0x02020001, -0x02020001,
		math.MaxInt32, math.MinInt32, math.MaxUint32, 0x7fffffc0, 0xffffff80, 0xff800000, 0xff7fffff}
	for len(ints) < 200000 {
		ints = append(ints, int64(int32(rng.Uint32()))>>rng.Intn(32), int64(rng.Uint32()))
	}
	for _, i := range ints {
		f := new(big.Float).SetPrec(8).SetMode(big.ToNearestEven).SetInt64(i)
		v, _ := f.Float32()
		want := uint16(math.Float32bits(v) >> 16)
		if got := IntToBF16(i); got != want {
			t.Fatalf("IntToBF16(%d) = %#04x, want %#04x", i, got, want)
		}
	}
	if twice := F32ToBF16(float32(int32(0x02020001))); twice == IntToBF16(0x02020001) {
		t.Errorf("0x02020001 rounds the same through f32 (%#04x): the case that needs one rounding is not one", twice)
	}
}

// TestBF16ConversionEdges checks F32ToBF16 on every float32 whose low half is a rounding edge
// against the definition (bigToBF16), NaN aside.
func TestBF16ConversionEdges(t *testing.T) {
	for hi := uint32(0); hi < 0x10000; hi++ {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff} {
			u := hi<<16 | lo
			f := math.Float32frombits(u)
			if f != f || math.IsInf(float64(f), 0) {
				continue
			}
			if got, want := F32ToBF16(f), bigToBF16(big.NewFloat(float64(f))); got != want {
				t.Fatalf("F32ToBF16(%#08x) = %#04x, want %#04x", u, got, want)
			}
		}
	}
}

// TestNarrowOps checks entries of the types cell's narrow table that Go's own arithmetic is
// easy to get wrong for: the most negative value divided by -1, shift counts past the width,
// float conversions out of range (FloatToInt32 then the low bits), and wrapping.
func TestNarrowOps(t *testing.T) {
	r := narrowOps[int8](-128, -1, float32(math.NaN()), 0x4380 /* 256 */, 100, 8)
	if r[3] != -128 || r[4] != 0 || r[7] != -128 || r[8] != -128 || r[15] != 0 || r[16] != 0 {
		t.Errorf("int8(-128) op -1: div %d rem %d neg %d abs %d, NaN -> %d, 256 -> %d", r[3], r[4], r[7], r[8], r[15], r[16])
	}
	r = narrowOps[int8](1, 9, 300, 0xc3a0 /* -320 */, 100, 8) // shift by 9 = shift by 1
	if r[5] != 2 || r[6] != 0 || r[15] != 44 || r[16] != -64 || r[19] != 101 {
		t.Errorf("int8: 1<<9 = %d, 1>>9 = %d, int8(300.0) = %d, int8(-320.0) = %d, 1+100 = %d", r[5], r[6], r[15], r[16], r[19])
	}
	u := narrowOps[uint16](0, 1, -1, 0, 60000, 16)
	if u[1] != 65535 || u[7] != 0 || u[15] != 65535 || u[8] != 0 {
		t.Errorf("uint16: 0-1 = %d, -0 = %d, uint16(-1.0) = %d, 0*max = %d", u[1], u[7], u[15], u[8])
	}
	if _, err := TypesRef(make([]float32, 2), make([]uint16, 4), make([]int32, 3), make([][4]float32, 4)); err == nil {
		t.Error("TypesRef accepted inputs of the wrong lengths")
	}
}
