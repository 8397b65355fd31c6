package kernels

import (
	"encoding/binary"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The float "block" formats: one value per block. f32 is the word itself; f16 and bf16 widen
// exactly with integer operations (HalfToF32, BF16ToF32), so every bit pattern, NaN payloads
// and subnormals included, decodes as the oracle decodes it. None has an integer path.

func init() {
	formats := []struct {
		f  Format
		in weightInputs
	}{
		{Format{Type: oracle.F32, Value: valueF32}, weightInputs{floats: []int{0}}},
		{Format{Type: oracle.F16, Value: valueF16}, weightInputs{halves: []int{0}}},
		{Format{Type: oracle.BF16, Value: valueBF16}, weightInputs{edges: bf16Edges}},
	}
	for _, x := range formats {
		RegisterFormat(x.f)
		registerWeightCells(x.f, x.in)
	}
}

func valueF32(d *Decoder, off, _ dsl.Value) dsl.Value {
	return d.W.Word(off.Shr(2)).Bitcast(dsl.F32)
}

func valueF16(d *Decoder, off, _ dsl.Value) dsl.Value {
	return HalfToF32(d.K, d.W.U16(off))
}

func valueBF16(d *Decoder, off, _ dsl.Value) dsl.Value {
	return BF16ToF32(d.K, d.W.U16(off))
}

// bf16Edges are bf16 values of every class: infinities, NaNs (quiet, signalling, negative),
// zeros, subnormals, the extremes of the finite range.
func bf16Edges() [][]byte {
	var out [][]byte
	for _, v := range []uint16{0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x0000, 0x8000, 0x0001, 0x807f, 0x7f7f, 0xff7f, 0x0080} {
		out = append(out, binary.LittleEndian.AppendUint16(nil, v))
	}
	return out
}
