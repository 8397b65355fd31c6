package gguf

import (
	"fmt"
	"strconv"
	"strings"
)

// ValueType is the type tag of a metadata value as stored in a GGUF file.
type ValueType uint32

// The GGUF metadata value types (gguf_type).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

// String returns a short name for t ("u32", "string", "array", ...) or "type(N)".
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// fixedSize is the encoded size of a scalar of type t (0 for string, array and unknown types).
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the smallest encoding of one value of type t (used to bound counts before
// allocating): a string is at least its 8-byte length, an array its 4-byte type and 8-byte count.
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.fixedSize()
}

// Value is one metadata value. V holds it as a Go value whose type determines the GGUF type:
//
//	uint8 int8 uint16 int16 uint32 int32 float32 bool string uint64 int64 float64   scalars
//	[]uint8 []int8 []uint16 []int16 []uint32 []int32 []float32 []bool []string
//	[]uint64 []int64 []float64                                                       arrays of scalars
//	[]Value                                                                          array of arrays
//
// (every element of a []Value must itself be an array, all of the same element type). Reading a
// file produces exactly these Go types; Write accepts exactly these.
type Value struct {
	V any
}

// Type returns the GGUF type of v, or false when V holds a Go type GGUF cannot store.
func (v Value) Type() (ValueType, bool) {
	switch v.V.(type) {
	case uint8:
		return TypeUint8, true
	case int8:
		return TypeInt8, true
	case uint16:
		return TypeUint16, true
	case int16:
		return TypeInt16, true
	case uint32:
		return TypeUint32, true
	case int32:
		return TypeInt32, true
	case float32:
		return TypeFloat32, true
	case bool:
		return TypeBool, true
	case string:
		return TypeString, true
	case uint64:
		return TypeUint64, true
	case int64:
		return TypeInt64, true
	case float64:
		return TypeFloat64, true
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []bool, []string, []uint64, []int64, []float64, []Value:
		return TypeArray, true
	}
	return 0, false
}

// ElemType returns the element type of an array value; ok is false for a scalar or an
// unsupported Go type. A []Value is an array of arrays (TypeArray).
func (v Value) ElemType() (ValueType, bool) {
	switch v.V.(type) {
	case []uint8:
		return TypeUint8, true
	case []int8:
		return TypeInt8, true
	case []uint16:
		return TypeUint16, true
	case []int16:
		return TypeInt16, true
	case []uint32:
		return TypeUint32, true
	case []int32:
		return TypeInt32, true
	case []float32:
		return TypeFloat32, true
	case []bool:
		return TypeBool, true
	case []string:
		return TypeString, true
	case []uint64:
		return TypeUint64, true
	case []int64:
		return TypeInt64, true
	case []float64:
		return TypeFloat64, true
	case []Value:
		return TypeArray, true
	}
	return 0, false
}

// Len returns the number of elements of an array value, 0 for a scalar.
func (v Value) Len() int {
	switch a := v.V.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// Int returns an integer scalar of any width as int64; ok is false for other values and for a
// uint64 above math.MaxInt64.
func (v Value) Int() (int64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > 1<<63-1 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Float returns a float32 or float64 scalar as float64.
func (v Value) Float() (float64, bool) {
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Str returns a string scalar.
func (v Value) Str() (string, bool) {
	s, ok := v.V.(string)
	return s, ok
}

// String formats v for display: scalars as Go formats them (strings quoted), arrays as their
// type and length followed by up to 8 elements.
func (v Value) String() string {
	switch x := v.V.(type) {
	case string:
		return strconv.Quote(x)
	case []Value:
		parts := make([]string, 0, 9)
		for i, e := range x {
			if i == 8 {
				parts = append(parts, "...")
				break
			}
			parts = append(parts, e.String())
		}
		return fmt.Sprintf("[%d]array{%s}", len(x), strings.Join(parts, ", "))
	}
	if et, ok := v.ElemType(); ok {
		s := fmt.Sprintf("%v", firstN(v.V, v.Len()))
		if v.Len() > 8 {
			s = fmt.Sprintf("%v", firstN(v.V, 8))
			s = strings.TrimSuffix(s, "]") + " ...]"
		}
		return fmt.Sprintf("[%d]%s%s", v.Len(), et, s)
	}
	return fmt.Sprintf("%v", v.V)
}

// firstN returns the first n elements of an array value's slice.
func firstN(a any, n int) any {
	switch x := a.(type) {
	case []uint8:
		return x[:n]
	case []int8:
		return x[:n]
	case []uint16:
		return x[:n]
	case []int16:
		return x[:n]
	case []uint32:
		return x[:n]
	case []int32:
		return x[:n]
	case []float32:
		return x[:n]
	case []bool:
		return x[:n]
	case []string:
		q := make([]string, n)
		for i := range q {
			q[i] = strconv.Quote(x[i])
		}
		return q
	case []uint64:
		return x[:n]
	case []int64:
		return x[:n]
	case []float64:
		return x[:n]
	}
	return a
}

// KV is one metadata key/value pair.
type KV struct {
	Key   string
	Value Value
}
