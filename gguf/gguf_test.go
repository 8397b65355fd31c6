package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/oracle"
)

// testRand is a splitmix64 generator.
type testRand uint64

func (s *testRand) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// testTensorBytes returns the bytes of n values of type t: the oracle's quantizer applied to
// Gaussian-ish values where it has one, random block bytes otherwise.
func testTensorBytes(tb testing.TB, t oracle.Type, n int, seed uint64) []byte {
	tb.Helper()
	size, err := oracle.RowSize(t, n)
	if err != nil {
		tb.Fatal(err)
	}
	r := testRand(seed)
	out := make([]byte, size)
	if ref, _ := oracle.HasQuantizer(t); ref {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(int64(r.next()>>40)-1<<23) / (1 << 22)
		}
		if err := oracle.Quantize(t, src, out); err == nil {
			return out
		}
	}
	for i := range out {
		out[i] = byte(r.next())
	}
	return out
}

// testModel builds metadata with every value type and one tensor of every oracle type.
func testModel(tb testing.TB, align uint32) ([]KV, []WriteTensor) {
	md := []KV{
		{"general.architecture", Value{"test"}},
		{"general.name", Value{""}},
		{"u8", Value{uint8(200)}},
		{"i8", Value{int8(-100)}},
		{"u16", Value{uint16(60000)}},
		{"i16", Value{int16(-30000)}},
		{"u32", Value{uint32(4000000000)}},
		{"i32", Value{int32(-2000000000)}},
		{"f32", Value{float32(3.25)}},
		{"bool.true", Value{true}},
		{"bool.false", Value{false}},
		{"u64", Value{uint64(1) << 63}},
		{"i64", Value{int64(-1) << 62}},
		{"f64", Value{math.Pi}},
		{"arr.u8", Value{[]uint8{1, 2, 3}}},
		{"arr.i8", Value{[]int8{-1, 2}}},
		{"arr.u16", Value{[]uint16{1, 65535}}},
		{"arr.i16", Value{[]int16{-5}}},
		{"arr.u32", Value{[]uint32{7, 8, 9}}},
		{"arr.i32", Value{[]int32{-7}}},
		{"arr.f32", Value{[]float32{0.5, -1.5, float32(math.Inf(1))}}},
		{"arr.bool", Value{[]bool{true, false, true}}},
		{"tokenizer.ggml.tokens", Value{[]string{"<s>", "</s>", "", "héllo"}}},
		{"arr.u64", Value{[]uint64{1 << 40}}},
		{"arr.i64", Value{[]int64{-1 << 40, 3}}},
		{"arr.f64", Value{[]float64{1e300}}},
		{"arr.empty", Value{[]float32{}}},
		{"arr.nested", Value{[]Value{{[]uint32{1, 2}}, {[]string{"a"}}, {[]Value{{[]bool{true}}}}}}},
	}
	if align != 0 {
		md = append(md, KV{AlignmentKey, Value{align}})
	}
	var ts []WriteTensor
	for i, t := range oracle.Types() {
		ti, _ := t.Info()
		dims := [][]uint64{{uint64(ti.BlockSize) * 2}, {uint64(ti.BlockSize), 3}, {uint64(ti.BlockSize), 2, 2}, {uint64(ti.BlockSize), 1, 2, 1}}[i%4]
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		ts = append(ts, WriteTensor{Name: "blk." + t.String() + ".weight", Type: t, Dims: dims, Data: testTensorBytes(tb, t, int(n), uint64(i)+1)})
	}
	ts = append(ts, WriteTensor{Name: "empty", Type: oracle.F32, Dims: []uint64{0, 5}, Data: []byte{}})
	ts = append(ts, WriteTensor{Name: "scalar", Type: oracle.F32, Dims: []uint64{}, Data: []byte{0, 0, 0x80, 0x3f}})
	return md, ts
}

func encode(tb testing.TB, md []KV, ts []WriteTensor) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, md, ts); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 32, 64, 1, 4096} {
		md, ts := testModel(t, align)
		raw := encode(t, md, ts)
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatalf("align %d: %v", align, err)
		}
		wantAlign := uint64(align)
		if align == 0 {
			wantAlign = DefaultAlignment
		}
		if f.Version != 3 || f.Alignment != wantAlign || uint64(f.DataOffset)%wantAlign != 0 {
			t.Errorf("align %d: version %d alignment %d data offset %d", align, f.Version, f.Alignment, f.DataOffset)
		}
		if !reflect.DeepEqual(f.Metadata, md) {
			t.Errorf("align %d: metadata differs:\n got %v\nwant %v", align, f.Metadata, md)
		}
		if v, ok := f.Lookup("general.architecture"); !ok || v.V != "test" {
			t.Errorf("Lookup: %v %v", v, ok)
		}
		if _, ok := f.Lookup("missing"); ok {
			t.Error("Lookup of a missing key succeeded")
		}
		if len(f.Tensors) != len(ts) {
			t.Fatalf("%d tensors, want %d", len(f.Tensors), len(ts))
		}
		for i, w := range ts {
			g, ok := f.Tensor(w.Name)
			if !ok || g != &f.Tensors[i] {
				t.Fatalf("Tensor(%q) not found in order", w.Name)
			}
			if g.Type != w.Type || !reflect.DeepEqual(g.Dims, w.Dims) || g.Size != uint64(len(w.Data)) || g.Offset%wantAlign != 0 {
				t.Errorf("%s: info %v %v size %d offset %d", w.Name, g.Type, g.Dims, g.Size, g.Offset)
			}
			if !bytes.Equal(g.Data(), w.Data) {
				t.Errorf("%s: data differs", w.Name)
			}
			got, err := g.Dequantize()
			if err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			want := make([]float32, g.NumElements())
			if err := oracle.Dequantize(w.Type, w.Data, want); err != nil {
				t.Fatal(err)
			}
			for j := range want {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("%s: value %d: %g != %g", w.Name, j, got[j], want[j])
				}
			}
		}
		// Parse of the same bytes gives the same file; re-encoding it gives the same bytes.
		p, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if again := reencode(t, p); !bytes.Equal(again, raw) {
			t.Errorf("align %d: re-encoding a parsed file changes its bytes", align)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		if f.Tensors[0].Data() != nil {
			t.Error("Data after Close is not nil")
		}
		if err := f.Close(); err != nil {
			t.Error("second Close:", err)
		}
	}
}

// reencode writes a parsed file back with Write.
func reencode(tb testing.TB, f *File) []byte {
	ts := make([]WriteTensor, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		ts[i] = WriteTensor{Name: t.Name, Type: t.Type, Dims: t.Dims, Data: t.Data()}
	}
	return encode(tb, f.Metadata, ts)
}

func TestTensorLayoutMatchesGGML(t *testing.T) {
	// Two tensors, default alignment: offsets are the running sum of sizes padded to 32, and the
	// data section starts at the first multiple of 32 after the infos.
	ts := []WriteTensor{
		{Name: "a", Type: oracle.F32, Dims: []uint64{3}, Data: make([]byte, 12)},
		{Name: "b", Type: oracle.Q8_0, Dims: []uint64{32, 2}, Data: make([]byte, 68)},
	}
	raw := encode(t, nil, ts)
	f, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	// header 24 + info a (8+1 +4 +8 +4 +8 = 33) + info b (8+1 +4 +16 +4 +8 = 41) = 98 -> 128
	if f.DataOffset != 128 || f.Tensors[0].Offset != 0 || f.Tensors[1].Offset != 32 {
		t.Errorf("data offset %d, offsets %d %d", f.DataOffset, f.Tensors[0].Offset, f.Tensors[1].Offset)
	}
	if len(raw) != 128+32+96 {
		t.Errorf("file is %d bytes, want %d (last tensor padded)", len(raw), 128+32+96)
	}
}

// patch returns a copy of b with p written at off.
func patch(b []byte, off int, p ...byte) []byte {
	c := append([]byte(nil), b...)
	copy(c[off:], p)
	return c
}

func u64le(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// hdr builds a header with the given counts followed by body.
func hdr(nt, nkv uint64, body ...[]byte) []byte {
	b := append([]byte("GGUF"), u32le(3)...)
	b = append(b, u64le(nt)...)
	b = append(b, u64le(nkv)...)
	for _, p := range body {
		b = append(b, p...)
	}
	return b
}

func str(s string) []byte { return append(u64le(uint64(len(s))), s...) }

func TestMalformed(t *testing.T) {
	good := encode(t, []KV{{"k", Value{uint32(1)}}}, []WriteTensor{{Name: "t", Type: oracle.F32, Dims: []uint64{2}, Data: make([]byte, 8)}})
	info := func(name string, nd uint32, dims []uint64, typ uint32, off uint64) []byte {
		b := str(name)
		b = append(b, u32le(nd)...)
		for _, d := range dims {
			b = append(b, u64le(d)...)
		}
		b = append(b, u32le(typ)...)
		return append(b, u64le(off)...)
	}
	kv := func(key string, typ uint32, v ...byte) []byte {
		return append(append(str(key), u32le(typ)...), v...)
	}
	cases := []struct {
		name string
		data []byte
		want string // substring of the error
	}{
		{"empty", nil, "truncated magic"},
		{"bad magic", patch(good, 0, 'G', 'G', 'M', 'L'), "not a GGUF file"},
		{"version 1", patch(good, 4, 1, 0, 0, 0), "version 1"},
		{"big-endian", patch(good, 4, 0, 0, 0, 3), "big-endian"},
		{"version 9", patch(good, 4, 9, 0, 0, 0), "unsupported GGUF version 9"},
		{"huge tensor count", patch(good, 8, u64le(1<<62)...), "tensor count"},
		{"huge kv count", patch(good, 16, u64le(1<<40)...), "metadata count"},
		{"huge key length", hdr(0, 1, u64le(1<<60), make([]byte, 16)), "exceeds"},
		{"unknown value type", hdr(0, 1, kv("k", 13, 0, 0, 0, 0)), "unknown value type 13"},
		{"unknown array element type", hdr(0, 1, kv("k", 9, append(u32le(99), u64le(0)...)...)), "unknown array element type 99"},
		{"huge array count", hdr(0, 1, kv("k", 9, append(u32le(uint32(TypeUint32)), u64le(1<<61)...)...)), "element count"},
		{"huge string array", hdr(0, 1, kv("k", 9, append(u32le(uint32(TypeString)), u64le(1<<50)...)...)), "element count"},
		{"truncated array", hdr(0, 1, kv("k", 9, append(append(u32le(uint32(TypeUint16)), u64le(3)...), 1, 2, 3)...)), "cannot fit"},
		{"truncated string", hdr(0, 1, kv("k", 8, append(u64le(10), "abc"...)...)), "exceeds the 3 bytes left"},
		{"truncated scalar", hdr(0, 1, kv("k", 11, 1, 2, 3)), "truncated value"},
		{"bool 2", hdr(0, 1, kv("k", 7, 2)), "want 0 or 1"},
		{"bool array 5", hdr(0, 1, kv("k", 9, append(append(u32le(uint32(TypeBool)), u64le(2)...), 1, 5)...)), "want 0 or 1"},
		{"duplicate key", hdr(0, 2, kv("k", 0, 1), kv("k", 0, 2)), "duplicate metadata key"},
		{"alignment not u32", hdr(0, 1, kv(AlignmentKey, 10, u64le(32)...)), "must be a u32"},
		{"alignment 0", hdr(0, 1, kv(AlignmentKey, 4, u32le(0)...)), "not a power of two"},
		{"alignment 48", hdr(0, 1, kv(AlignmentKey, 4, u32le(48)...)), "not a power of two"},
		{"five dims", hdr(1, 0, info("t", 5, []uint64{1, 1, 1, 1, 1}, 0, 0)), "5 dimensions"},
		{"unknown tensor type", hdr(1, 0, info("t", 1, []uint64{1}, 5, 0), make([]byte, 64)), "unknown type 5"},
		{"partial block", hdr(1, 0, info("t", 1, []uint64{33}, uint32(oracle.Q4_0), 0), make([]byte, 64)), "not a multiple of the q4_0 block size"},
		{"dim above int64", hdr(1, 0, info("t", 1, []uint64{1 << 63}, 0, 0)), "above the int64 range"},
		{"element count overflow", hdr(1, 0, info("t", 2, []uint64{1 << 32, 1 << 32}, 0, 0)), "overflows"},
		{"byte size overflow", hdr(1, 0, info("t", 1, []uint64{1 << 62}, 0, 0)), "byte size overflows"},
		{"misaligned offset", hdr(1, 0, info("t", 1, []uint64{1}, 0, 4), make([]byte, 64)), "not a multiple of the alignment"},
		{"data past end", hdr(1, 0, info("t", 1, []uint64{64}, 0, 0), make([]byte, 64)), "past the end of the file"},
		{"offset past end", hdr(1, 0, info("t", 1, []uint64{1}, 0, 1<<63), make([]byte, 64)), "past the end of the file"},
		{"duplicate tensor", hdr(2, 0, info("t", 1, []uint64{1}, 0, 0), info("t", 1, []uint64{1}, 0, 32), make([]byte, 96)), "duplicate tensor name"},
		{"truncated tensor data", good[:len(good)-25], "past the end of the file"},
	}
	var deep []byte // an array of arrays of ... 10 levels, the innermost an empty u8 array
	for i := 0; i < 10; i++ {
		deep = append(append(deep, u32le(uint32(TypeArray))...), u64le(1)...)
	}
	deep = append(append(deep, u32le(uint32(TypeUint8))...), u64le(0)...)
	cases = append(cases, struct {
		name string
		data []byte
		want string
	}{"arrays nested too deep", hdr(0, 1, kv("k", 9, deep...)), "nested deeper"})
	for _, c := range cases {
		_, err := Parse(c.data)
		var fe *FormatError
		if err == nil || !errors.As(err, &fe) {
			t.Errorf("%s: error %v, want a *FormatError", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "at byte") {
			t.Errorf("%s: error %q, want it to mention %q and the byte offset", c.name, err, c.want)
		}
		if fe.Offset < 0 || fe.Offset > int64(len(c.data)) {
			t.Errorf("%s: offset %d outside the file (%d bytes)", c.name, fe.Offset, len(c.data))
		}
	}
}

// TestEveryTruncation parses every prefix of a valid file: each must fail cleanly (or, for the
// prefixes that only cut padding after the last tensor, which are not there, succeed).
func TestEveryTruncation(t *testing.T) {
	md, ts := testModel(t, 0)
	raw := encode(t, md, ts[:6])
	for n := 0; n < len(raw); n++ {
		f, err := Parse(raw[:n])
		if err == nil {
			// Only the zero padding after the last tensor's data may be cut.
			last := f.Tensors[len(f.Tensors)-1]
			if uint64(f.DataOffset)+last.Offset+last.Size > uint64(n) {
				t.Fatalf("prefix %d parsed but the last tensor does not fit", n)
			}
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("prefix %d: %v is not a *FormatError", n, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Error("missing file opened")
	}
	if _, err := Open(dir); err == nil {
		t.Error("directory opened")
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "empty.gguf") {
		t.Errorf("empty file: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	ok := WriteTensor{Name: "t", Type: oracle.F32, Dims: []uint64{2}, Data: make([]byte, 8)}
	cases := []struct {
		name string
		md   []KV
		ts   []WriteTensor
	}{
		{"duplicate key", []KV{{"a", Value{uint8(1)}}, {"a", Value{uint8(1)}}}, nil},
		{"unsupported value", []KV{{"a", Value{3}}}, nil},
		{"nil value", []KV{{"a", Value{}}}, nil},
		{"array of non-arrays", []KV{{"a", Value{[]Value{{uint8(1)}}}}}, nil},
		{"bad alignment", []KV{{AlignmentKey, Value{uint32(3)}}}, nil},
		{"alignment type", []KV{{AlignmentKey, Value{uint64(32)}}}, nil},
		{"duplicate tensor", nil, []WriteTensor{ok, ok}},
		{"unknown type", nil, []WriteTensor{{Name: "x", Type: 5, Dims: []uint64{1}, Data: make([]byte, 4)}}},
		{"five dims", nil, []WriteTensor{{Name: "x", Type: oracle.F32, Dims: []uint64{1, 1, 1, 1, 1}, Data: make([]byte, 4)}}},
		{"partial block", nil, []WriteTensor{{Name: "x", Type: oracle.Q8_0, Dims: []uint64{16}, Data: make([]byte, 17)}}},
		{"wrong size", nil, []WriteTensor{{Name: "x", Type: oracle.F32, Dims: []uint64{2}, Data: make([]byte, 4)}}},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := Write(&buf, c.md, c.ts); err == nil {
			t.Errorf("%s: no error", c.name)
		} else if buf.Len() != 0 {
			t.Errorf("%s: %d bytes written before the error", c.name, buf.Len())
		}
	}
	if err := Write(failWriter{}, nil, []WriteTensor{ok}); err == nil {
		t.Error("write error not reported")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestValueAccessors(t *testing.T) {
	cases := []struct {
		v      Value
		typ    ValueType
		elem   ValueType
		isArr  bool
		length int
		str    string
	}{
		{Value{uint32(7)}, TypeUint32, 0, false, 0, "7"},
		{Value{"x\n"}, TypeString, 0, false, 0, `"x\n"`},
		{Value{[]string{"a", "b"}}, TypeArray, TypeString, true, 2, `[2]string["a" "b"]`},
		{Value{make([]int32, 20)}, TypeArray, TypeInt32, true, 20, "[20]i32[0 0 0 0 0 0 0 0 ...]"},
		{Value{[]Value{{[]bool{true}}}}, TypeArray, TypeArray, true, 1, "[1]array{[1]bool[true]}"},
	}
	for _, c := range cases {
		typ, ok := c.v.Type()
		elem, isArr := c.v.ElemType()
		if !ok || typ != c.typ || isArr != c.isArr || (isArr && elem != c.elem) || c.v.Len() != c.length || c.v.String() != c.str {
			t.Errorf("%#v: type %v elem %v/%v len %d string %q", c.v, typ, elem, isArr, c.v.Len(), c.v.String())
		}
	}
	if i, ok := (Value{uint64(1 << 63)}).Int(); ok {
		t.Errorf("Int of 2^63 = %d, ok", i)
	}
	if i, ok := (Value{int16(-3)}).Int(); !ok || i != -3 {
		t.Errorf("Int(int16 -3) = %d %v", i, ok)
	}
	if f, ok := (Value{float32(0.5)}).Float(); !ok || f != 0.5 {
		t.Errorf("Float = %g %v", f, ok)
	}
	if s, ok := (Value{"s"}).Str(); !ok || s != "s" {
		t.Errorf("Str = %q %v", s, ok)
	}
	if _, ok := (Value{3}).Type(); ok {
		t.Error("int accepted as a GGUF type")
	}
	if TypeFloat64.String() != "f64" || ValueType(77).String() != "type(77)" {
		t.Error("ValueType.String")
	}
}
