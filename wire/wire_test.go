package wire

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/oracle"
)

func TestRoundTrips(t *testing.T) {
	f := []float32{0, float32(math.Copysign(0, -1)), 1.5, -3.25e-20, float32(math.Inf(1)), 65504}
	got, err := ToF32(F32(f))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f {
		if math.Float32bits(got[i]) != math.Float32bits(f[i]) {
			t.Errorf("f32 %d: %v -> %v", i, f[i], got[i])
		}
	}
	if b := F32([]float32{1}); !bytes.Equal(b, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("F32(1) = % x, want 00 00 80 3f (little-endian)", b)
	}
	h, _ := F16ToF32(F16([]float32{1, 0.1, 65504, 1e6}))
	for i, want := range []float32{1, oracle.F16ToF32(oracle.F32ToF16(0.1)), 65504, float32(math.Inf(1))} {
		if h[i] != want {
			t.Errorf("f16 %d: %v, want %v", i, h[i], want)
		}
	}
	// bf16: round to nearest even at bit 16; NaN stays NaN.
	bf, _ := BF16ToF32(BF16([]float32{1, math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), float32(math.NaN())}))
	if bf[0] != 1 || bf[1] != 1 || math.Float32bits(bf[2]) != 0x3f820000 || !math.IsNaN(float64(bf[3])) {
		t.Errorf("bf16: %v", bf)
	}
	i32, _ := ToI32(I32([]int32{-1, 7, math.MinInt32}))
	if i32[0] != -1 || i32[1] != 7 || i32[2] != math.MinInt32 {
		t.Errorf("i32: %v", i32)
	}
	u32, _ := ToU32(U32([]uint32{1, 1 << 31}))
	if u32[1] != 1<<31 {
		t.Errorf("u32: %v", u32)
	}
	if i8 := ToI8(I8([]int8{-128, 127})); i8[0] != -128 || i8[1] != 127 {
		t.Errorf("i8: %v", i8)
	}
	if w := Words([]byte{1, 2, 3, 4, 5}); len(w) != 8 || w[4] != 5 || w[7] != 0 {
		t.Errorf("Words: % x", w)
	}
	for _, c := range []func() error{
		func() error { _, err := ToF32(make([]byte, 6)); return err },
		func() error { _, err := ToU16(make([]byte, 3)); return err },
		func() error { _, err := F16ToF32(make([]byte, 1)); return err },
	} {
		if err := c(); err == nil || !strings.Contains(err.Error(), "not a whole number") {
			t.Errorf("a partial element: %v", err)
		}
	}
}
