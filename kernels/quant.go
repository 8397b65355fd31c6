package kernels

import (
	"fmt"
	"sort"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// Format says how a DSL kernel decodes one GGUF type. The generic weight kernels (get_rows,
// matvec, matvec_q8) are written once over Formats; a type is added by registering its Format.
type Format struct {
	Type oracle.Type

	// Tables names the codebook tables (oracle.TableBytes names) the decoder reads. The weight
	// kernels bind them, after their own buffers and in this order, as read-only u32 buffers
	// holding the table's bytes (padded to a multiple of 4), and Cases supply TableWords(name).
	Tables []string

	// Value returns element j (0 <= j < block size) of the block that starts at byte offset off,
	// as f32, bit-identical to oracle.Dequantize. off and j are u32 values.
	Value func(d *Decoder, off, j dsl.Value) dsl.Value

	// Unit decodes one 32-value unit of a block for the float-path matvec: u (a u32 value below
	// BlockSize/32) is the unit's index in the block that starts at byte offset off. It returns
	// the unit's 32 codes and its groups, exactly the oracle's unit decoder (oracle/dot_units.go):
	// oracle.Dequantize's value j of the unit is float32(Scale*Codes[j]) (+ Min). A format reads
	// them with word loads and decodes the scales once per group. nil for f32, f16 and bf16,
	// whose matvec multiplies Value by the activation.
	Unit func(d *Decoder, off, u dsl.Value) Unit

	// DotQ8 is the quantized-activation integer path, nil where ggml does not run the type that
	// way. matvec_q8 calls it once per ACTIVATION block (of oracle.ActivationType(t)): off is the
	// byte offset of the weight block that holds that activation block's values, aoff the byte
	// offset of the activation block in a; for weight blocks longer than an activation block
	// (q1_0, q2_0, nvfp4) the format works out from aoff which part of its block is meant. It
	// returns that activation block's f32 partial, bit-identical to the partial of
	// oracle.MatVecQ8; summing the partials is the caller's (the canonical sum over blocks).
	DotQ8 func(d *Decoder, off dsl.Value, a Bytes, aoff dsl.Value) dsl.Value
}

// Unit is one 32-value unit of a quantized block as the float-path matvec reads it.
type Unit struct {
	Codes  []dsl.Value // the 32 codes, f32, in value order (small integers or codebook values: exact)
	Groups []Group     // consecutive runs of the 32 values, in order, covering them
}

// Group is a run of consecutive values of a Unit that share a scale and, optionally, a min.
type Group struct {
	N      int       // values in the group (a multiple of 4)
	Scale  dsl.Value // f32: value = Scale*code (one rounding)
	Min    dsl.Value // f32, added after the product when HasMin
	HasMin bool
}

// Decoder is what a Format's functions read through: the kernel, the weight bytes and the
// tables.
type Decoder struct {
	K      *dsl.Kernel
	W      Bytes
	tables map[string]dsl.Array
}

// NewDecoder declares, in order, the table buffers of f on k (after whatever k already has) and
// returns a decoder over the weight bytes w.
func NewDecoder(k *dsl.Kernel, w Bytes, f Format) *Decoder {
	d := &Decoder{K: k, W: w, tables: map[string]dsl.Array{}}
	for _, name := range f.Tables {
		d.tables[name] = k.Buffer(name, dsl.U32, dsl.Read)
	}
	return d
}

// Table returns the buffer of a table the Format listed. Asking for one it did not list is a
// programming error in the Format, reported as a kernel build error.
func (d *Decoder) Table(name string) Bytes {
	a, ok := d.tables[name]
	if !ok {
		// A zero Array makes every read an error at Build, naming the caller's line.
		return Bytes{k: d.K}
	}
	return Bytes{k: d.K, w: a}
}

// TableWords returns the bytes of an oracle table padded with zeros to a multiple of 4, ready to
// bind as a u32 buffer.
func TableWords(name string) ([]byte, error) {
	b, ok := oracle.TableBytes(name)
	if !ok {
		return nil, fmt.Errorf("kernels: no oracle table %q", name)
	}
	return PadWords(b), nil
}

// PadWords returns b padded with zeros to a multiple of 4 bytes (how byte data is bound).
func PadWords(b []byte) []byte {
	if len(b)%4 == 0 {
		return b
	}
	out := make([]byte, (len(b)+3)&^3)
	copy(out, b)
	return out
}

var formats = map[oracle.Type]Format{}

// RegisterFormat adds the decoder of a type (from an init function); twice is a programming error.
func RegisterFormat(f Format) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := formats[f.Type]; dup {
		panic(fmt.Sprintf("kernels: format %s registered twice", f.Type))
	}
	formats[f.Type] = f
}

// Formats returns every registered format in type id order.
func Formats() []Format {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Format, 0, len(formats))
	for _, f := range formats {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// FormatOf returns the format of t.
func FormatOf(t oracle.Type) (Format, bool) {
	mu.Lock()
	defer mu.Unlock()
	f, ok := formats[t]
	return f, ok
}
