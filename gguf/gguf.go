// Package gguf reads and writes GGUF files (versions 2 and 3, little-endian), the model format of
// ggml and llama.cpp.
//
// A file is: the magic "GGUF", a uint32 version, a uint64 tensor count, a uint64 metadata count;
// the metadata key/value pairs (key: uint64 length + bytes; uint32 value type; value); the tensor
// infos (name; uint32 dimension count; uint64 dimensions, innermost first as ggml's ne; uint32
// ggml type; uint64 offset relative to the data section); padding to the alignment
// (general.alignment, a uint32 power of two, default 32); the tensor data, each tensor at an
// aligned offset.
//
// Open memory-maps the file where the platform allows (a plain read otherwise) and Close unmaps
// it. Every malformed or truncated input is reported as a *FormatError carrying the byte offset;
// the reader never panics and bounds every count and length by the bytes actually present before
// allocating. Tensor types are the oracle's (github.com/onesource-go/onesource/oracle), and
// Tensor.Dequantize decodes a tensor with oracle.Dequantize.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"

	"github.com/onesource-go/onesource/oracle"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment of a file without general.alignment.
const DefaultAlignment = 32

// AlignmentKey is the metadata key that sets the data alignment (a uint32 power of two).
const AlignmentKey = "general.alignment"

// MaxDims is the most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
const MaxDims = 4

// maxArrayDepth bounds nested arrays (arrays of arrays); ggml itself writes none.
const maxArrayDepth = 8

// FormatError reports a malformed or truncated GGUF file: what is wrong and the byte offset in
// the file where it was found.
type FormatError struct {
	Offset int64
	Msg    string
}

// Error formats the error as "gguf: at byte OFFSET: MESSAGE".
func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: at byte %d: %s", e.Offset, e.Msg)
}

// File is a parsed GGUF file. Tensor data stays in the mapped (or read) file until Close.
type File struct {
	Version    uint32   // 2 or 3
	Metadata   []KV     // in file order
	Tensors    []Tensor // in file order
	Alignment  uint64   // data alignment in bytes
	DataOffset int64    // absolute file offset of the data section (aligned)

	data  []byte       // the whole file
	close func() error // releases data (munmap), nil when nothing to release
	byKey map[string]int
	byTen map[string]int
}

// Tensor is one tensor's info and a view of its data in its File.
type Tensor struct {
	Name   string
	Dims   []uint64    // ggml order: Dims[0] is the row length (innermost), then rows, ...
	Type   oracle.Type // ggml type id
	Offset uint64      // relative to the file's DataOffset
	Size   uint64      // bytes of data

	file *File
}

// Open reads the GGUF file at path, memory-mapping it where possible. The caller must Close it.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s: not a regular file", path)
	}
	data, release, err := mapFile(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		if release != nil {
			release()
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.close = release
	return f, nil
}

// Close releases the file's memory. Tensor data slices must not be used afterwards.
func (f *File) Close() error {
	c := f.close
	f.close = nil
	f.data = nil
	if c != nil {
		return c()
	}
	return nil
}

// Lookup returns the metadata value of key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.byKey[key]
	if !ok {
		return Value{}, false
	}
	return f.Metadata[i].Value, true
}

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.byTen[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// NumElements returns the number of values of t (the product of its dimensions; 1 for none).
func (t *Tensor) NumElements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d // bounded when parsed
	}
	return n
}

// Data returns t's bytes, a view into the file (valid until the file is closed; do not modify a
// memory-mapped file's bytes).
func (t *Tensor) Data() []byte {
	if t.file == nil || t.file.data == nil {
		return nil
	}
	start := uint64(t.file.DataOffset) + t.Offset
	return t.file.data[start : start+t.Size : start+t.Size]
}

// Dequantize returns t's values as float32, decoded by oracle.Dequantize.
func (t *Tensor) Dequantize() ([]float32, error) {
	n := t.NumElements()
	if n > uint64(math.MaxInt)/4 {
		return nil, fmt.Errorf("gguf: tensor %q: %d values are too many to dequantize at once", t.Name, n)
	}
	data := t.Data()
	if data == nil && t.Size > 0 {
		return nil, errors.New("gguf: file is closed")
	}
	out := make([]float32, n)
	if err := oracle.Dequantize(t.Type, data, out); err != nil {
		return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
	}
	return out, nil
}

// RowSize returns the bytes of one row (Dims[0] values) of t.
func (t *Tensor) RowSize() uint64 {
	if len(t.Dims) == 0 {
		return t.Size
	}
	ti, _ := t.Type.Info()
	return t.Dims[0] / uint64(ti.BlockSize) * uint64(ti.TypeSize)
}

// reader is a bounds-checked cursor over the file bytes.
type reader struct {
	b   []byte
	off int
}

func (r *reader) errf(at int, format string, args ...any) error {
	return &FormatError{Offset: int64(at), Msg: fmt.Sprintf(format, args...)}
}

func (r *reader) left() int { return len(r.b) - r.off }

// take returns the next n bytes or a truncation error naming what was being read.
func (r *reader) take(n uint64, what string) ([]byte, error) {
	if n > uint64(r.left()) {
		return nil, r.errf(r.off, "truncated %s: need %d bytes, %d left in the file", what, n, r.left())
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *reader) u8(what string) (uint8, error) {
	b, err := r.take(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (r *reader) u16(what string) (uint16, error) {
	b, err := r.take(2, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (r *reader) u32(what string) (uint32, error) {
	b, err := r.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(what string) (uint64, error) {
	b, err := r.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) str(what string) (string, error) {
	at := r.off
	n, err := r.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(r.left()) {
		return "", r.errf(at, "%s length %d exceeds the %d bytes left in the file", what, n, r.left())
	}
	b, _ := r.take(n, what)
	return string(b), nil
}

// count reads a uint64 element count and checks that count elements of at least minSize bytes
// each fit in the rest of the file.
func (r *reader) count(what string, minSize int) (int, error) {
	at := r.off
	n, err := r.u64(what)
	if err != nil {
		return 0, err
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(r.left())/uint64(minSize) {
		return 0, r.errf(at, "%s %d cannot fit in the %d bytes left in the file", what, n, r.left())
	}
	return int(n), nil
}

// Parse parses a GGUF file held in data. The File keeps data: Tensor.Data returns slices of it.
func Parse(data []byte) (*File, error) {
	r := &reader{b: data}
	magic, err := r.take(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, r.errf(0, "not a GGUF file: magic %q, want %q", magic, Magic)
	}
	version, err := r.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return nil, r.errf(4, "GGUF version 1 (32-bit counts) is not supported")
	case bits.ReverseBytes32(version) == 2 || bits.ReverseBytes32(version) == 3:
		return nil, r.errf(4, "big-endian GGUF (version bytes %#08x) is not supported", version)
	default:
		return nil, r.errf(4, "unsupported GGUF version %d", version)
	}
	f := &File{Version: version, data: data, Alignment: DefaultAlignment, byKey: map[string]int{}, byTen: map[string]int{}}
	nTensors, err := r.count("tensor count", 8+4+4+8)
	if err != nil {
		return nil, err
	}
	nKV, err := r.count("metadata count", 8+4+1)
	if err != nil {
		return nil, err
	}
	f.Metadata = make([]KV, 0, nKV)
	for i := 0; i < nKV; i++ {
		at := r.off
		key, err := r.str(fmt.Sprintf("metadata key %d", i))
		if err != nil {
			return nil, err
		}
		if _, dup := f.byKey[key]; dup {
			return nil, r.errf(at, "duplicate metadata key %q", key)
		}
		tAt := r.off
		vt, err := r.u32(fmt.Sprintf("type of %q", key))
		if err != nil {
			return nil, err
		}
		v, err := r.value(ValueType(vt), tAt, key, 0)
		if err != nil {
			return nil, err
		}
		if key == AlignmentKey {
			a, ok := v.V.(uint32)
			if !ok {
				return nil, r.errf(tAt, "%s must be a u32, got %s", AlignmentKey, ValueType(vt))
			}
			if a == 0 || a&(a-1) != 0 {
				return nil, r.errf(tAt, "%s %d is not a power of two", AlignmentKey, a)
			}
			f.Alignment = uint64(a)
		}
		f.byKey[key] = len(f.Metadata)
		f.Metadata = append(f.Metadata, KV{Key: key, Value: v})
	}
	f.Tensors = make([]Tensor, 0, nTensors)
	infoAt := make([]int, 0, nTensors)
	for i := 0; i < nTensors; i++ {
		at := r.off
		t, err := r.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.byTen[t.Name]; dup {
			return nil, r.errf(at, "duplicate tensor name %q", t.Name)
		}
		t.file = f
		f.byTen[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
		infoAt = append(infoAt, at)
	}
	// The data section starts at the next multiple of the alignment.
	start := (uint64(r.off) + f.Alignment - 1) / f.Alignment * f.Alignment
	f.DataOffset = int64(start)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return nil, r.errf(infoAt[i], "tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		end, carry := bits.Add64(start, t.Offset, 0)
		end2, carry2 := bits.Add64(end, t.Size, 0)
		if carry != 0 || carry2 != 0 || end2 > uint64(len(data)) {
			return nil, r.errf(int(min(end, uint64(len(data)))), "tensor %q: data [%d, %d) (%d bytes at data offset %d) runs past the end of the file (%d bytes): truncated file?",
				t.Name, end, end2, t.Size, t.Offset, len(data))
		}
	}
	return f, nil
}

// tensorInfo reads one tensor info and checks its shape and type.
func (r *reader) tensorInfo(i int) (Tensor, error) {
	var t Tensor
	name, err := r.str(fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return t, err
	}
	t.Name = name
	at := r.off
	nd, err := r.u32(fmt.Sprintf("tensor %q dimension count", name))
	if err != nil {
		return t, err
	}
	if nd > MaxDims {
		return t, r.errf(at, "tensor %q has %d dimensions, at most %d are allowed", name, nd, MaxDims)
	}
	t.Dims = make([]uint64, nd)
	elems := uint64(1)
	for d := range t.Dims {
		dAt := r.off
		v, err := r.u64(fmt.Sprintf("tensor %q dimension %d", name, d))
		if err != nil {
			return t, err
		}
		if v > math.MaxInt64 {
			return t, r.errf(dAt, "tensor %q dimension %d is %d, above the int64 range", name, d, v)
		}
		hi, lo := bits.Mul64(elems, v)
		if hi != 0 || lo > math.MaxInt64 {
			return t, r.errf(dAt, "tensor %q: element count overflows int64", name)
		}
		t.Dims[d], elems = v, lo
	}
	tAt := r.off
	typ, err := r.u32(fmt.Sprintf("tensor %q type", name))
	if err != nil {
		return t, err
	}
	t.Type = oracle.Type(typ)
	ti, ok := t.Type.Info()
	if !ok {
		return t, r.errf(tAt, "tensor %q has unknown type %d", name, typ)
	}
	rowLen := uint64(1)
	if nd > 0 {
		rowLen = t.Dims[0]
	}
	if rowLen%uint64(ti.BlockSize) != 0 {
		return t, r.errf(tAt, "tensor %q: row length %d is not a multiple of the %s block size %d", name, rowLen, t.Type, ti.BlockSize)
	}
	hi, size := bits.Mul64(elems/uint64(ti.BlockSize), uint64(ti.TypeSize))
	if hi != 0 || size > math.MaxInt64 {
		return t, r.errf(tAt, "tensor %q: byte size overflows int64", name)
	}
	t.Size = size
	t.Offset, err = r.u64(fmt.Sprintf("tensor %q offset", name))
	return t, err
}

// value reads one value of type vt (its type tag was at tagAt) for key; depth counts nested arrays.
func (r *reader) value(vt ValueType, tagAt int, key string, depth int) (Value, error) {
	what := fmt.Sprintf("value of %q", key)
	switch vt {
	case TypeUint8:
		v, err := r.u8(what)
		return Value{v}, err
	case TypeInt8:
		v, err := r.u8(what)
		return Value{int8(v)}, err
	case TypeUint16:
		v, err := r.u16(what)
		return Value{v}, err
	case TypeInt16:
		v, err := r.u16(what)
		return Value{int16(v)}, err
	case TypeUint32:
		v, err := r.u32(what)
		return Value{v}, err
	case TypeInt32:
		v, err := r.u32(what)
		return Value{int32(v)}, err
	case TypeFloat32:
		v, err := r.u32(what)
		return Value{math.Float32frombits(v)}, err
	case TypeUint64:
		v, err := r.u64(what)
		return Value{v}, err
	case TypeInt64:
		v, err := r.u64(what)
		return Value{int64(v)}, err
	case TypeFloat64:
		v, err := r.u64(what)
		return Value{math.Float64frombits(v)}, err
	case TypeBool:
		at := r.off
		v, err := r.u8(what)
		if err != nil {
			return Value{}, err
		}
		if v > 1 {
			return Value{}, r.errf(at, "bool %s is %d, want 0 or 1", what, v)
		}
		return Value{v == 1}, nil
	case TypeString:
		v, err := r.str(what)
		return Value{v}, err
	case TypeArray:
		if depth >= maxArrayDepth {
			return Value{}, r.errf(tagAt, "%s: arrays nested deeper than %d", what, maxArrayDepth)
		}
		eAt := r.off
		et32, err := r.u32(what + " element type")
		if err != nil {
			return Value{}, err
		}
		et := ValueType(et32)
		if et.minSize() == 0 {
			return Value{}, r.errf(eAt, "%s: unknown array element type %d", what, et32)
		}
		n, err := r.count(what+" element count", et.minSize())
		if err != nil {
			return Value{}, err
		}
		return r.array(et, n, eAt, key, depth)
	}
	return Value{}, r.errf(tagAt, "%s: unknown value type %d", what, uint32(vt))
}

// array reads n elements of type et (n already bounded by the bytes left).
func (r *reader) array(et ValueType, n int, eAt int, key string, depth int) (Value, error) {
	what := fmt.Sprintf("array %q", key)
	if sz := et.fixedSize(); sz > 0 {
		b, err := r.take(uint64(n)*uint64(sz), what)
		if err != nil {
			return Value{}, err
		}
		le := binary.LittleEndian
		switch et {
		case TypeUint8:
			return Value{append([]uint8(nil), b...)}, nil
		case TypeInt8:
			a := make([]int8, n)
			for i := range a {
				a[i] = int8(b[i])
			}
			return Value{a}, nil
		case TypeBool:
			a := make([]bool, n)
			for i := range a {
				if b[i] > 1 {
					return Value{}, r.errf(r.off-len(b)+i, "%s element %d: bool is %d, want 0 or 1", what, i, b[i])
				}
				a[i] = b[i] == 1
			}
			return Value{a}, nil
		case TypeUint16:
			a := make([]uint16, n)
			for i := range a {
				a[i] = le.Uint16(b[2*i:])
			}
			return Value{a}, nil
		case TypeInt16:
			a := make([]int16, n)
			for i := range a {
				a[i] = int16(le.Uint16(b[2*i:]))
			}
			return Value{a}, nil
		case TypeUint32:
			a := make([]uint32, n)
			for i := range a {
				a[i] = le.Uint32(b[4*i:])
			}
			return Value{a}, nil
		case TypeInt32:
			a := make([]int32, n)
			for i := range a {
				a[i] = int32(le.Uint32(b[4*i:]))
			}
			return Value{a}, nil
		case TypeFloat32:
			a := make([]float32, n)
			for i := range a {
				a[i] = math.Float32frombits(le.Uint32(b[4*i:]))
			}
			return Value{a}, nil
		case TypeUint64:
			a := make([]uint64, n)
			for i := range a {
				a[i] = le.Uint64(b[8*i:])
			}
			return Value{a}, nil
		case TypeInt64:
			a := make([]int64, n)
			for i := range a {
				a[i] = int64(le.Uint64(b[8*i:]))
			}
			return Value{a}, nil
		case TypeFloat64:
			a := make([]float64, n)
			for i := range a {
				a[i] = math.Float64frombits(le.Uint64(b[8*i:]))
			}
			return Value{a}, nil
		}
	}
	if et == TypeString {
		a := make([]string, n)
		for i := range a {
			s, err := r.str(fmt.Sprintf("%s element %d", what, i))
			if err != nil {
				return Value{}, err
			}
			a[i] = s
		}
		return Value{a}, nil
	}
	// Array of arrays: every element carries its own element type and count.
	a := make([]Value, n)
	for i := range a {
		v, err := r.value(TypeArray, eAt, fmt.Sprintf("%s[%d]", key, i), depth+1)
		if err != nil {
			return Value{}, err
		}
		a[i] = v
	}
	return Value{a}, nil
}
