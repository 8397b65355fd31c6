// Package wire converts between Go values and the bytes kernels read and write: little-endian
// f32, f16 and bf16 bits, i8/u8, i16/u16, i32/u32 — what prebuilt's Run and the engine's Upload
// take and what they give back — so that no program writes its own bytesOf again.
//
// The contract: To* functions never fail; From* functions return an error when the byte count
// is not a whole number of elements. f16 and bf16 conversions from f32 round to nearest even
// (package oracle's F32ToF16 and ggml's bf16 rounding), as the kernels and the oracle do.
package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/onesource-go/onesource/oracle"
)

// F32 is x as little-endian f32 bytes.
func F32(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// ToF32 reads little-endian f32 values.
func ToF32(b []byte) ([]float32, error) {
	if err := whole(b, 4, "f32"); err != nil {
		return nil, err
	}
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x, nil
}

// F16 is x rounded to f16 (nearest even), as little-endian bytes.
func F16(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], oracle.F32ToF16(v))
	}
	return b
}

// F16Bits is f16 values given as their bits, as little-endian bytes.
func F16Bits(h []uint16) []byte { return U16(h) }

// F16ToF32 reads little-endian f16 values, widened exactly to f32.
func F16ToF32(b []byte) ([]float32, error) {
	h, err := ToU16(b)
	if err != nil {
		return nil, fmt.Errorf("wire: f16: %w", err)
	}
	x := make([]float32, len(h))
	for i, v := range h {
		x[i] = oracle.F16ToF32(v)
	}
	return x, nil
}

// BF16 is x rounded to bf16 (nearest even; NaN stays NaN), as little-endian bytes.
func BF16(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], f32ToBF16(v))
	}
	return b
}

// BF16ToF32 reads little-endian bf16 values, widened exactly to f32.
func BF16ToF32(b []byte) ([]float32, error) {
	h, err := ToU16(b)
	if err != nil {
		return nil, fmt.Errorf("wire: bf16: %w", err)
	}
	x := make([]float32, len(h))
	for i, v := range h {
		x[i] = oracle.BF16ToF32(v)
	}
	return x, nil
}

func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it quiet and a NaN
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// I32 is x as little-endian i32 bytes (token ids, positions).
func I32(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

// ToI32 reads little-endian i32 values.
func ToI32(b []byte) ([]int32, error) {
	if err := whole(b, 4, "i32"); err != nil {
		return nil, err
	}
	x := make([]int32, len(b)/4)
	for i := range x {
		x[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x, nil
}

// U32 is x as little-endian u32 bytes.
func U32(x []uint32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// ToU32 reads little-endian u32 values.
func ToU32(b []byte) ([]uint32, error) {
	if err := whole(b, 4, "u32"); err != nil {
		return nil, err
	}
	x := make([]uint32, len(b)/4)
	for i := range x {
		x[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return x, nil
}

// U16 is x as little-endian u16 bytes.
func U16(x []uint16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

// ToU16 reads little-endian u16 values.
func ToU16(b []byte) ([]uint16, error) {
	if err := whole(b, 2, "u16"); err != nil {
		return nil, err
	}
	x := make([]uint16, len(b)/2)
	for i := range x {
		x[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return x, nil
}

// I16 is x as little-endian i16 bytes.
func I16(x []int16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

// I8 is x as bytes.
func I8(x []int8) []byte {
	b := make([]byte, len(x))
	for i, v := range x {
		b[i] = byte(v)
	}
	return b
}

// ToI8 reads i8 values.
func ToI8(b []byte) []int8 {
	x := make([]int8, len(b))
	for i, v := range b {
		x[i] = int8(v)
	}
	return x
}

// Words pads b with zeros to a whole number of 32-bit words, as kernels that read a buffer of
// bytes (quantized weights, i8 values) as u32 words bind it.
func Words(b []byte) []byte {
	if len(b)%4 == 0 {
		return b
	}
	return append(append([]byte(nil), b...), make([]byte, 4-len(b)%4)...)
}

func whole(b []byte, size int, what string) error {
	if len(b)%size != 0 {
		return fmt.Errorf("wire: %d bytes are not a whole number of %d-byte %s values", len(b), size, what)
	}
	return nil
}
