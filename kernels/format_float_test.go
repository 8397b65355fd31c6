package kernels

import (
	"encoding/binary"
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/oracle"
)

// TestFloatFormatsEveryHalf decodes every f16 and every bf16 bit pattern with the get_rows cell
// (one row of 65536 values) and compares with the oracle.
func TestFloatFormatsEveryHalf(t *testing.T) {
	d := vktest.Device(t)
	const n = 1 << 16
	w := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(w[2*i:], uint16(i))
	}
	s := Schedule{Lanes: 64}
	for _, typ := range []oracle.Type{oracle.F16, oracle.BF16} {
		c, err := getRowsCase("every_half", typ, w, n, []int32{0}, s)
		if err != nil {
			t.Fatal(err)
		}
		cell, _ := Lookup("get_rows", typ)
		out := vktest.Run(t, d, cell.Build(s), c.Buffers, vktest.U32s(c.Params), c.Groups)
		if j := firstDiff("f32", out[2], c.Want[0]); j >= 0 {
			t.Errorf("%s: %#04x decodes to %08x, oracle %08x", typ, j, binary.LittleEndian.Uint32(out[2][4*j:]), binary.LittleEndian.Uint32(c.Want[0][4*j:]))
		}
	}
}

// TestFloatFormatsRandom runs the float formats' cells on random bits.
func TestFloatFormatsRandom(t *testing.T) {
	for _, typ := range []oracle.Type{oracle.F32, oracle.F16, oracle.BF16} {
		t.Run(typ.String(), func(t *testing.T) { stressFormat(t, typ) })
	}
}

// TestGetRowsOutOfRange checks that a row index outside the weights writes nothing (the output
// keeps its zeros) instead of reading past the buffer.
func TestGetRowsOutOfRange(t *testing.T) {
	d := vktest.Device(t)
	const n = 40
	x := xVector(rand.New(rand.NewSource(5)), 2*n)
	c, err := getRowsCase("oob", oracle.F32, wF32Bytes(x), n, []int32{1, 0}, Schedule{Lanes: 32})
	if err != nil {
		t.Fatal(err)
	}
	c.Buffers[1] = wI32Bytes([]int32{1, 2, -1, 0, 1 << 30})
	c.Buffers[2] = make([]byte, 4*5*n)
	c.Groups[1] = 5
	want := append(append(append(wF32Bytes(x[n:]), make([]byte, 8*n)...), wF32Bytes(x[:n])...), make([]byte, 4*n)...)
	cell, _ := Lookup("get_rows", oracle.F32)
	out := vktest.Run(t, d, cell.Build(Schedule{Lanes: 32}), c.Buffers, vktest.U32s(c.Params), c.Groups)
	if j := firstDiff("f32", out[2], want); j >= 0 {
		t.Errorf("value %d (row %d) = %08x, want %08x", j, j/n, binary.LittleEndian.Uint32(out[2][4*j:]), binary.LittleEndian.Uint32(want[4*j:]))
	}
}
