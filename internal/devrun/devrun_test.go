package devrun

import (
	"errors"
	"strings"
	"testing"
)

type fakeBuf struct {
	data     []byte
	released *int
	failRead bool
}

func (b *fakeBuf) Write(off int, d []byte) error { copy(b.data[off:], d); return nil }
func (b *fakeBuf) Read(off int, d []byte) error {
	if b.failRead {
		return errors.New("read failed")
	}
	copy(d, b.data[off:])
	return nil
}
func (b *fakeBuf) Release() { *b.released++ }

func TestOnce(t *testing.T) {
	released := 0
	var sizes []int
	alloc := func(n int) (*fakeBuf, error) {
		sizes = append(sizes, n)
		return &fakeBuf{data: make([]byte, n), released: &released}, nil
	}
	host := [][]byte{{1, 2, 3, 4, 5, 6, 7, 8}, {}, make([]byte, 8)}
	err := Once(alloc, host, []int{2}, func(bufs []*fakeBuf) error {
		for i := range 8 {
			bufs[2].data[i] = bufs[0].data[i] * 2
		}
		bufs[0].data[0] = 99 // not read back: host[0] keeps its bytes
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if host[2][7] != 16 || host[0][0] != 1 {
		t.Errorf("host after the run: %v", host)
	}
	if len(sizes) != 3 || sizes[1] != MinSize {
		t.Errorf("allocated %v, want the empty binding at %d bytes", sizes, MinSize)
	}
	if released != 3 {
		t.Errorf("%d buffers released, want 3", released)
	}

	released = 0
	calls := 0
	failing := func(n int) (*fakeBuf, error) {
		calls++
		if calls == 2 {
			return nil, errors.New("out of device memory")
		}
		return &fakeBuf{data: make([]byte, n), released: &released}, nil
	}
	if err := Once(failing, host, nil, func([]*fakeBuf) error { t.Error("launched after a failed allocation"); return nil }); err == nil || !strings.Contains(err.Error(), "binding 1: out of device memory") {
		t.Errorf("allocation failure: %v", err)
	}
	if released != 1 {
		t.Errorf("after a failed allocation %d buffers released, want 1", released)
	}
	released = 0
	if err := Once(alloc, host, []int{5}, func([]*fakeBuf) error { return nil }); err == nil || !strings.Contains(err.Error(), "read back binding 5: there are 3 bindings") {
		t.Errorf("bad read back: %v", err)
	}
	if err := Once(alloc, host, nil, func([]*fakeBuf) error { return errors.New("launch failed") }); err == nil || err.Error() != "launch failed" {
		t.Errorf("launch error: %v", err)
	}
	if released != 6 {
		t.Errorf("%d buffers released over two runs, want 6", released)
	}
}
