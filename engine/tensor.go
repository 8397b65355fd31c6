package engine

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/wire"
)

// I32 is the type of tensors of 32-bit signed integers (token ids, positions): ggml's
// GGML_TYPE_I32, which package oracle (a judge of float types) does not define.
const I32 oracle.Type = 26

// rowSize is the bytes of a row of n values of typ.
func rowSize(typ oracle.Type, n int) (int, error) {
	if typ == I32 {
		return 4 * n, nil
	}
	return oracle.RowSize(typ, n)
}

func typeName(typ oracle.Type) string {
	if typ == I32 {
		return "i32"
	}
	return typ.String()
}

// Tensor is a typed, row-major array on the device: Shape's last dimension is a row of values of
// Type (whole blocks for a quantized type), the others count rows. It is a byte range of a device
// buffer: its own (NewTensor, Upload) or part of another tensor's (Rows, Reshape).
type Tensor struct {
	e     *Engine
	buf   buffer
	off   int // bytes into buf
	size  int // bytes
	Type  oracle.Type
	Shape []int
	owner bool
	// parts hold a matrix too large for one binding (the device's MaxStorageBufferRange): row
	// ranges in buffers of their own, in order; buf is nil then.
	parts []*Tensor
}

// Split reports whether the tensor is held in several buffers (a matrix larger than one
// binding may be). MatVec takes a split matrix; GetRows takes one of its Parts.
func (t *Tensor) Split() bool { return t.parts != nil }

// PartOf returns the part of a split matrix that holds row, and row's index in it; for a tensor
// that is not split, t itself and row.
func (t *Tensor) PartOf(row int) (*Tensor, int, error) {
	if row < 0 || len(t.Shape) < 2 || row >= t.Shape[0] {
		return nil, 0, fmt.Errorf("engine: PartOf(%d) of %s: no such row", row, t)
	}
	for _, p := range t.parts {
		if row < p.Shape[0] {
			return p, row, nil
		}
		row -= p.Shape[0]
	}
	return t, row, nil
}

// whole returns an error for a split tensor, which op cannot bind.
func (t *Tensor) whole(op string) error {
	if t.parts != nil {
		return fmt.Errorf("engine: %s: %s is split over %d buffers (larger than one binding may be): only MatVec takes it whole; use PartOf", op, t, len(t.parts))
	}
	return nil
}

// Rows is the number of rows: the product of every dimension but the last (1 for a vector).
func (t *Tensor) Rows() int {
	r := 1
	for _, d := range t.Shape[:len(t.Shape)-1] {
		r *= d
	}
	return r
}

// Cols is the length of a row: the last dimension.
func (t *Tensor) Cols() int { return t.Shape[len(t.Shape)-1] }

// Len is the number of values.
func (t *Tensor) Len() int { return t.Rows() * t.Cols() }

// Size is the tensor's size in bytes.
func (t *Tensor) Size() int { return t.size }

func (t *Tensor) rowBytes() int {
	n, _ := rowSize(t.Type, t.Cols())
	return n
}

// String describes the tensor as errors name it: "q4_0[4096x4096]".
func (t *Tensor) String() string {
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s[%s]", typeName(t.Type), strings.Join(dims, "x"))
}

// view is the tensor's binding: its bytes, padded to whole 32-bit words where the buffer has
// room (kernels read words; a row count derived from the binding's length then comes out right).
func (t *Tensor) view() view { return t.rangeView(t.off, t.size) }

func (t *Tensor) rangeView(off, size int) view {
	return view{buf: t.buf, off: off, size: min((size+3)&^3, t.buf.Size()-off)}
}

// tensorSize checks a shape for type typ and returns its bytes.
func tensorSize(typ oracle.Type, shape []int) (int, error) {
	if len(shape) == 0 {
		return 0, errors.New("a tensor needs at least one dimension")
	}
	rows := 1
	for _, d := range shape {
		if d <= 0 {
			return 0, fmt.Errorf("shape %v: every dimension must be positive", shape)
		}
	}
	for _, d := range shape[:len(shape)-1] {
		if rows > math.MaxInt32/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		rows *= d
	}
	rb, err := rowSize(typ, shape[len(shape)-1])
	if err != nil {
		return 0, fmt.Errorf("shape %v of %s: %w", shape, typeName(typ), err)
	}
	if rb > 0 && rows > math.MaxInt32/rb {
		return 0, fmt.Errorf("shape %v is too large", shape)
	}
	return rows * rb, nil
}

// NewTensor allocates a zero-filled tensor. A matrix larger than the device lets one binding
// address (MaxStorageBufferRange) is split by rows over several buffers (Split).
func (e *Engine) NewTensor(typ oracle.Type, shape ...int) (*Tensor, error) {
	size, err := tensorSize(typ, shape)
	if err != nil {
		return nil, fmt.Errorf("engine: NewTensor: %w", err)
	}
	if limit := e.maxBinding(); size > limit && len(shape) >= 2 {
		per := size / shape[0] // bytes per row along the first dimension
		// Parts of a multiple of 64 rows keep every result's offset (4 bytes a row) aligned to
		// 256 bytes, what any device's minStorageBufferOffsetAlignment allows.
		rows := limit / per &^ 63
		if rows == 0 {
			return nil, fmt.Errorf("engine: NewTensor %s%v: 64 rows of %d bytes are more than a binding may address (%d)", typeName(typ), shape, per, limit)
		}
		whole := &Tensor{e: e, size: size, Type: typ, Shape: append([]int(nil), shape...), owner: true}
		for from := 0; from < shape[0]; from += rows {
			p, err := e.NewTensor(typ, append([]int{min(rows, shape[0]-from)}, shape[1:]...)...)
			if err != nil {
				whole.Release()
				return nil, err
			}
			whole.parts = append(whole.parts, p)
		}
		return whole, nil
	}
	// Kernels read 32-bit words: the buffer is padded to a multiple of 4 bytes.
	b, err := e.dev.newBuffer(max(4, (size+3)&^3))
	if err != nil {
		return nil, fmt.Errorf("engine: NewTensor %s%v: %w", typeName(typ), shape, err)
	}
	return &Tensor{e: e, buf: b, size: size, Type: typ, Shape: append([]int(nil), shape...), owner: true}, nil
}

// Upload allocates a tensor holding data (its exact size: the rows of typ of shape).
func (e *Engine) Upload(typ oracle.Type, data []byte, shape ...int) (*Tensor, error) {
	t, err := e.NewTensor(typ, shape...)
	if err != nil {
		return nil, err
	}
	if err := t.Write(data); err != nil {
		t.Release()
		return nil, err
	}
	return t, nil
}

// UploadF32 is Upload of f32 values.
func (e *Engine) UploadF32(x []float32, shape ...int) (*Tensor, error) {
	return e.Upload(oracle.F32, F32Bytes(x), shape...)
}

// UploadI32 is Upload of i32 values (token ids, positions), as a tensor of type I32.
func (e *Engine) UploadI32(x []int32, shape ...int) (*Tensor, error) {
	return e.Upload(I32, wire.I32(x), shape...)
}

// Write replaces the tensor's bytes with data (exactly Size bytes). Queued calls run first, so
// they see the old bytes.
func (t *Tensor) Write(data []byte) error {
	if len(data) != t.size {
		return fmt.Errorf("engine: Write %s: %d bytes, want %d", t, len(data), t.size)
	}
	e := t.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.flushLocked(); err != nil {
		return err
	}
	if t.parts != nil {
		for _, p := range t.parts {
			if err := p.buf.Write(p.off, data[:p.size]); err != nil {
				return err
			}
			data = data[p.size:]
		}
		return nil
	}
	return t.buf.Write(t.off, data)
}

// WriteI32 writes i32 values.
func (t *Tensor) WriteI32(x []int32) error { return t.Write(wire.I32(x)) }

// Read runs the queued calls and returns the tensor's bytes.
func (t *Tensor) Read() ([]byte, error) {
	e := t.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.flushLocked(); err != nil {
		return nil, err
	}
	out := make([]byte, t.size)
	parts := t.parts
	if parts == nil {
		parts = []*Tensor{t}
	}
	at := 0
	for _, p := range parts {
		if err := p.buf.Read(p.off, out[at:at+p.size]); err != nil {
			return nil, fmt.Errorf("engine: Read %s: %w", t, err)
		}
		at += p.size
	}
	return out, nil
}

// F32 is Read of an f32 tensor.
func (t *Tensor) F32() ([]float32, error) {
	if t.Type != oracle.F32 {
		return nil, fmt.Errorf("engine: F32 of a %s tensor", t)
	}
	b, err := t.Read()
	if err != nil {
		return nil, err
	}
	return BytesF32(b), nil
}

// Slice returns a view of rows [from, from+count) along the first dimension. Its offset must
// suit the device (MinStorageBufferOffsetAlignment; checked when a call binds it).
func (t *Tensor) Slice(from, count int) (*Tensor, error) {
	if len(t.Shape) < 2 {
		return nil, fmt.Errorf("engine: Slice of %s: a vector has no rows to slice", t)
	}
	if err := t.whole("Slice"); err != nil {
		return nil, err
	}
	if from < 0 || count <= 0 || from+count > t.Shape[0] {
		return nil, fmt.Errorf("engine: Slice(%d, %d) of %s: outside its %d rows", from, count, t, t.Shape[0])
	}
	per := t.size / t.Shape[0]
	shape := append([]int{count}, t.Shape[1:]...)
	return &Tensor{e: t.e, buf: t.buf, off: t.off + from*per, size: count * per, Type: t.Type, Shape: shape}, nil
}

// Reshape returns a view of the same bytes with another shape of the same size.
func (t *Tensor) Reshape(shape ...int) (*Tensor, error) {
	if err := t.whole("Reshape"); err != nil {
		return nil, err
	}
	size, err := tensorSize(t.Type, shape)
	if err != nil {
		return nil, fmt.Errorf("engine: Reshape %s: %w", t, err)
	}
	if size != t.size {
		return nil, fmt.Errorf("engine: Reshape %s to %v: %d bytes, not %d", t, shape, size, t.size)
	}
	return &Tensor{e: t.e, buf: t.buf, off: t.off, size: t.size, Type: t.Type, Shape: append([]int(nil), shape...)}, nil
}

// Release frees a tensor's buffer (a view releases nothing). Queued calls that use it fail.
func (t *Tensor) Release() {
	for _, p := range t.parts {
		p.Release()
	}
	if t.owner && t.buf != nil {
		t.buf.Release()
	}
}

// F32Bytes is x as little-endian bytes (wire.F32).
func F32Bytes(x []float32) []byte { return wire.F32(x) }

// BytesF32 reads little-endian f32 values (wire.ToF32), ignoring a partial last value.
func BytesF32(b []byte) []float32 {
	x, _ := wire.ToF32(b[:len(b)&^3])
	return x
}
