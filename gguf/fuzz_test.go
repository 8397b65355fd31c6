package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/onesource-go/onesource/oracle"
)

// FuzzOpen feeds arbitrary bytes to the reader. It must never panic and must reject bad input
// with a *FormatError inside the input; whatever it accepts must be fully readable (metadata,
// tensor data, dequantization), must survive a write/read round trip unchanged, and must read the
// same through a file and Open (the memory-mapped path).
func FuzzOpen(f *testing.F) {
	// Small seeds (the fuzzer minimizes every new input; big ones starve it): all value types
	// with two tensors, a custom alignment, and a few tensor types.
	md, ts := testModel(f, 64)
	f.Add(encode(f, md, ts[:2]))
	f.Add(encode(f, md[len(md)-1:], ts[8:10]))
	f.Add(encode(f, md[:3], ts[20:23]))
	f.Add(encode(f, nil, nil))
	f.Add(encode(f, []KV{{"k", Value{[]Value{{[]string{"a"}}}}}}, []WriteTensor{{Name: "q", Type: oracle.Q4_K, Dims: []uint64{256}, Data: make([]byte, 144)}}))
	f.Add([]byte("GGUF\x02\x00\x00\x00"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > int64(len(data)) {
				t.Fatalf("error %v is not a *FormatError inside the input", err)
			}
			return
		}
		for _, kv := range file.Metadata {
			_ = kv.Value.String()
			if v, ok := file.Lookup(kv.Key); !ok || v.Len() != kv.Value.Len() {
				t.Fatalf("Lookup(%q) disagrees with Metadata", kv.Key)
			}
		}
		for i := range file.Tensors {
			tn := &file.Tensors[i]
			if uint64(len(tn.Data())) != tn.Size {
				t.Fatalf("tensor %q: %d data bytes, size %d", tn.Name, len(tn.Data()), tn.Size)
			}
			if tn.NumElements() <= 1<<16 {
				if _, err := tn.Dequantize(); err != nil {
					t.Fatalf("tensor %q accepted but not dequantizable: %v", tn.Name, err)
				}
			}
		}
		once := reencode(t, file)
		again, err := Parse(once)
		if err != nil {
			t.Fatalf("re-encoded file does not parse: %v", err)
		}
		if twice := reencode(t, again); !bytes.Equal(once, twice) {
			t.Fatalf("write/read round trip is not stable")
		}
		// The same bytes through a file and Open (memory-mapped) give the same file.
		path := filepath.Join(dir, "fuzz.gguf")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Skip(err)
		}
		opened, err := Open(path)
		if err != nil {
			t.Fatalf("Parse accepts the bytes but Open fails: %v", err)
		}
		defer opened.Close()
		if !bytes.Equal(reencode(t, opened), once) {
			t.Fatalf("Open and Parse disagree")
		}
	})
}
