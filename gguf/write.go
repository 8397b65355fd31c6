package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/onesource-go/onesource/oracle"
)

// WriteTensor is a tensor to write: its name, type, dimensions (ggml order, Dims[0] the row
// length) and data (exactly the bytes the type and dimensions need).
type WriteTensor struct {
	Name string
	Type oracle.Type
	Dims []uint64
	Data []byte
}

// Write writes a GGUF version 3 file: the metadata in the order given, then the tensors, each at
// the next multiple of the alignment (general.alignment from the metadata when present, a uint32
// power of two, else DefaultAlignment) and padded with zeros to it, as ggml writes them. It checks
// everything the reader checks (unique keys and names, known types, whole blocks, data sizes) and
// returns an error before writing anything when the input is invalid.
func Write(w io.Writer, metadata []KV, tensors []WriteTensor) error {
	align := uint64(DefaultAlignment)
	keys := map[string]bool{}
	for _, kv := range metadata {
		if keys[kv.Key] {
			return fmt.Errorf("gguf: write: duplicate metadata key %q", kv.Key)
		}
		keys[kv.Key] = true
		if err := checkValue(kv.Value, 0); err != nil {
			return fmt.Errorf("gguf: write: key %q: %w", kv.Key, err)
		}
		if kv.Key == AlignmentKey {
			a, ok := kv.Value.V.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return fmt.Errorf("gguf: write: %s must be a uint32 power of two, got %v", AlignmentKey, kv.Value)
			}
			align = uint64(a)
		}
	}
	names := map[string]bool{}
	offsets := make([]uint64, len(tensors))
	var next uint64
	for i, t := range tensors {
		if names[t.Name] {
			return fmt.Errorf("gguf: write: duplicate tensor name %q", t.Name)
		}
		names[t.Name] = true
		ti, ok := t.Type.Info()
		if !ok {
			return fmt.Errorf("gguf: write: tensor %q: unknown type %d", t.Name, uint32(t.Type))
		}
		if len(t.Dims) > MaxDims {
			return fmt.Errorf("gguf: write: tensor %q: %d dimensions, at most %d", t.Name, len(t.Dims), MaxDims)
		}
		elems := uint64(1)
		for _, d := range t.Dims {
			if d != 0 && elems > math.MaxInt64/d {
				return fmt.Errorf("gguf: write: tensor %q: element count overflows", t.Name)
			}
			elems *= d
		}
		rowLen := uint64(1)
		if len(t.Dims) > 0 {
			rowLen = t.Dims[0]
		}
		if rowLen%uint64(ti.BlockSize) != 0 {
			return fmt.Errorf("gguf: write: tensor %q: row length %d is not a multiple of the %s block size %d", t.Name, rowLen, t.Type, ti.BlockSize)
		}
		size := elems / uint64(ti.BlockSize) * uint64(ti.TypeSize)
		if uint64(len(t.Data)) != size {
			return fmt.Errorf("gguf: write: tensor %q: %s %v needs %d bytes, got %d", t.Name, t.Type, t.Dims, size, len(t.Data))
		}
		offsets[i] = next
		next += pad(size, align)
	}

	bw := bufio.NewWriter(w)
	cw := &countWriter{w: bw}
	le := binary.LittleEndian
	put := func(v any) { binary.Write(cw, le, v) } // errors surface through cw.err
	cw.Write([]byte(Magic))
	put(uint32(3))
	put(uint64(len(tensors)))
	put(uint64(len(metadata)))
	for _, kv := range metadata {
		writeString(cw, kv.Key)
		vt, _ := kv.Value.Type()
		put(uint32(vt))
		writeValue(cw, kv.Value)
	}
	for i, t := range tensors {
		writeString(cw, t.Name)
		put(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			put(d)
		}
		put(uint32(t.Type))
		put(offsets[i])
	}
	zeros := make([]byte, align)
	cw.Write(zeros[:pad(cw.n, align)-cw.n])
	for _, t := range tensors {
		cw.Write(t.Data)
		size := uint64(len(t.Data))
		cw.Write(zeros[:pad(size, align)-size])
	}
	if cw.err != nil {
		return fmt.Errorf("gguf: write: %w", cw.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

// pad rounds n up to a multiple of align.
func pad(n, align uint64) uint64 {
	return (n + align - 1) / align * align
}

// countWriter counts bytes and keeps the first error; later writes are dropped.
type countWriter struct {
	w   io.Writer
	n   uint64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += uint64(n)
	c.err = err
	return n, err
}

func writeString(w io.Writer, s string) {
	binary.Write(w, binary.LittleEndian, uint64(len(s)))
	io.WriteString(w, s)
}

// checkValue reports whether v can be written: a supported Go type, and for arrays of arrays
// elements that are arrays themselves, nested at most maxArrayDepth deep.
func checkValue(v Value, depth int) error {
	if _, ok := v.Type(); !ok {
		return fmt.Errorf("unsupported Go type %T", v.V)
	}
	if a, ok := v.V.([]Value); ok {
		if depth+1 >= maxArrayDepth {
			return fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
		}
		for i, e := range a {
			if t, _ := e.Type(); t != TypeArray {
				return fmt.Errorf("element %d of an array of arrays is a %T, not an array", i, e.V)
			}
			if err := checkValue(e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeValue writes v without its type tag (arrays: element type, count, elements).
func writeValue(w io.Writer, v Value) {
	le := binary.LittleEndian
	switch x := v.V.(type) {
	case string:
		writeString(w, x)
		return
	case bool:
		b := uint8(0)
		if x {
			b = 1
		}
		w.Write([]byte{b})
		return
	case []string:
		binary.Write(w, le, uint32(TypeString))
		binary.Write(w, le, uint64(len(x)))
		for _, s := range x {
			writeString(w, s)
		}
		return
	case []bool:
		binary.Write(w, le, uint32(TypeBool))
		binary.Write(w, le, uint64(len(x)))
		b := make([]byte, len(x))
		for i, e := range x {
			if e {
				b[i] = 1
			}
		}
		w.Write(b)
		return
	case []Value:
		binary.Write(w, le, uint32(TypeArray))
		binary.Write(w, le, uint64(len(x)))
		for _, e := range x {
			writeValue(w, e)
		}
		return
	}
	if et, ok := v.ElemType(); ok {
		binary.Write(w, le, uint32(et))
		binary.Write(w, le, uint64(v.Len()))
	}
	binary.Write(w, le, v.V) // fixed-size scalars and slices of them
}
