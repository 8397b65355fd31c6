package gpudrv

import (
	"errors"
	"strings"
	"testing"
)

// TestAttrs checks the attribute helpers: required ones fail naming the attribute, optional
// ones stay 0, dimensions and the PCI address.
func TestAttrs(t *testing.T) {
	attrs := map[int]int{1: 1024, 2: 1024, 3: 1024, 4: 64, 5: 1 << 30, 6: 65535, 7: 65535, 33: 0x1b, 34: 0, 50: 0}
	get := func(id int) (int, error) {
		if v, ok := attrs[id]; ok {
			return v, nil
		}
		return 0, errors.New("not supported")
	}
	var a, b, c int
	if err := ReadAttrs(get, []Attr{{1, &a}}, []Attr{{13, &b}, {33, &c}}); err != nil || a != 1024 || b != 0 || c != 0x1b {
		t.Fatalf("ReadAttrs: %v %d %d %d", err, a, b, c)
	}
	if err := ReadAttrs(get, []Attr{{99, &a}}, nil); err == nil || !strings.Contains(err.Error(), "attribute 99: not supported") {
		t.Fatalf("missing required attribute: %v", err)
	}
	blk, grid, err := ReadDims(get, 2, 5)
	if err != nil || blk != [3]uint32{1024, 1024, 64} || grid != [3]uint32{1 << 30, 65535, 65535} {
		t.Fatalf("ReadDims: %v %v %v", blk, grid, err)
	}
	if _, _, err := ReadDims(get, 2, 8); err == nil {
		t.Fatal("ReadDims with missing attributes")
	}
	if got := PCIBusID(get, 50, 33, 34); got != "0000:1b:00.0" {
		t.Fatalf("PCIBusID %q", got)
	}
	if got := PCIBusID(get, 51, 33, 34); got != "" {
		t.Fatalf("PCIBusID without a domain: %q", got)
	}
}

// TestList checks that a failing device is named and the ones before it are kept.
func TestList(t *testing.T) {
	got, err := List("hip", func() (int, error) { return 3, nil }, func(i int) (int, error) {
		if i == 2 {
			return 0, errors.New("broken")
		}
		return 10 * i, nil
	})
	if err == nil || err.Error() != "hip: device 2: broken" || len(got) != 2 || got[1] != 10 {
		t.Fatalf("List: %v %v", got, err)
	}
}

// TestMemo checks that a result, error included, is computed once per key.
func TestMemo(t *testing.T) {
	var m Memo[int]
	calls := 0
	load := func() (int, error) { calls++; return calls, errors.New("once") }
	for i := 0; i < 3; i++ {
		if v, err := m.Get("a", load); v != 1 || err == nil {
			t.Fatalf("Get a: %v %v", v, err)
		}
	}
	if v, _ := m.Get("b", load); v != 2 || calls != 2 {
		t.Fatalf("Get b: %v after %d calls", v, calls)
	}
}

// TestCheck checks results becoming errors that name the call and the value.
func TestCheck(t *testing.T) {
	name := func(code int) string { return "CUDA_ERROR_OUT_OF_MEMORY" }
	if err := Check("cuMemAlloc_v2", 0, name); err != nil {
		t.Fatal(err)
	}
	err := Check("cuMemAlloc_v2", 2, name)
	var re *ResultError
	if !errors.As(err, &re) || re.Code != 2 || err.Error() != "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)" {
		t.Fatalf("got %v", err)
	}
	if err := Check("x", uintptr(^uint32(0)), name).(*ResultError); err.Code != -1 {
		t.Fatalf("a negative result: %d", err.Code)
	}
}
