package oracle

import (
	"fmt"
	"strings"
)

// Type is a GGUF tensor type. Its value is ggml's type id, the number stored in GGUF files.
type Type uint32

// The GGUF types the oracle defines. Values are ggml's ggml_type ids.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
	NVFP4   Type = 40
	Q1_0    Type = 41
	Q2_0    Type = 42
)

// TypeInfo is the block layout of a type: BlockSize values are stored in TypeSize bytes.
type TypeInfo struct {
	Name      string // ggml's name, e.g. "q4_K"
	BlockSize int    // values per block
	TypeSize  int    // bytes per block
}

var typeInfo = map[Type]TypeInfo{
	F32:     {"f32", 1, 4},
	F16:     {"f16", 1, 2},
	BF16:    {"bf16", 1, 2},
	Q4_0:    {"q4_0", 32, 18},
	Q4_1:    {"q4_1", 32, 20},
	Q5_0:    {"q5_0", 32, 22},
	Q5_1:    {"q5_1", 32, 24},
	Q8_0:    {"q8_0", 32, 34},
	Q8_1:    {"q8_1", 32, 36},
	Q1_0:    {"q1_0", 128, 18},
	Q2_0:    {"q2_0", 64, 18},
	Q2_K:    {"q2_K", 256, 84},
	Q3_K:    {"q3_K", 256, 110},
	Q4_K:    {"q4_K", 256, 144},
	Q5_K:    {"q5_K", 256, 176},
	Q6_K:    {"q6_K", 256, 210},
	Q8_K:    {"q8_K", 256, 292},
	IQ2_XXS: {"iq2_xxs", 256, 66},
	IQ2_XS:  {"iq2_xs", 256, 74},
	IQ2_S:   {"iq2_s", 256, 82},
	IQ3_XXS: {"iq3_xxs", 256, 98},
	IQ3_S:   {"iq3_s", 256, 110},
	IQ1_S:   {"iq1_s", 256, 50},
	IQ1_M:   {"iq1_m", 256, 56},
	IQ4_NL:  {"iq4_nl", 32, 18},
	IQ4_XS:  {"iq4_xs", 256, 136},
	TQ1_0:   {"tq1_0", 256, 54},
	TQ2_0:   {"tq2_0", 256, 66},
	MXFP4:   {"mxfp4", 32, 17},
	NVFP4:   {"nvfp4", 64, 36},
}

// Types lists every type the oracle defines, in ggml id order.
func Types() []Type {
	out := make([]Type, 0, len(typeInfo))
	for id := Type(0); id < 64; id++ {
		if _, ok := typeInfo[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// Info returns t's block layout; ok is false for a type the oracle does not know.
func (t Type) Info() (TypeInfo, bool) {
	ti, ok := typeInfo[t]
	return ti, ok
}

// String returns ggml's name for t, or "type(N)" for an unknown id.
func (t Type) String() string {
	if ti, ok := typeInfo[t]; ok {
		return ti.Name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// ParseType maps ggml's type name (case-insensitive: "q4_K", "Q4_K") to its Type.
func ParseType(name string) (Type, error) {
	for t, ti := range typeInfo {
		if strings.EqualFold(ti.Name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("oracle: unknown type %q", name)
}

// RowSize returns the bytes n values of type t occupy, or an error when n is not a whole number
// of blocks or t is unknown.
func RowSize(t Type, n int) (int, error) {
	ti, ok := typeInfo[t]
	if !ok {
		return 0, fmt.Errorf("oracle: unknown type %d", uint32(t))
	}
	if n < 0 || n%ti.BlockSize != 0 {
		return 0, fmt.Errorf("oracle: %s: %d values is not a whole number of %d-value blocks", ti.Name, n, ti.BlockSize)
	}
	return n / ti.BlockSize * ti.TypeSize, nil
}

// dequantizers holds, per type, the function that turns whole blocks into f32 values:
// len(src) is a multiple of the type size and len(dst) = len(src)/TypeSize*BlockSize.
var dequantizers = map[Type]func(src []byte, dst []float32){}

// Dequantize decodes n = len(dst) values of type t from src. It returns an error, never panics,
// when src does not hold exactly the bytes of n values or the type has no dequantizer.
func Dequantize(t Type, src []byte, dst []float32) error {
	size, err := RowSize(t, len(dst))
	if err != nil {
		return err
	}
	if len(src) != size {
		return fmt.Errorf("oracle: %s: %d values need %d bytes, got %d", t, len(dst), size, len(src))
	}
	f, ok := dequantizers[t]
	if !ok {
		return fmt.Errorf("oracle: %s: no dequantizer", t)
	}
	f(src, dst)
	return nil
}
