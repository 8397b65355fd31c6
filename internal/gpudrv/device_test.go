package gpudrv

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"unsafe"
)

var (
	one   = [3]uint32{1, 1, 1}
	block = [3]uint32{64, 1, 1}
)

func testConfig() Config {
	return Config{Backend: "cuda", Index: 0, Name: "Fake", MaxThreadsPerBlock: 1024,
		MaxBlock: [3]uint32{1024, 1024, 64}, MaxGrid: [3]uint32{1 << 31, 65535, 65535}, Sticky: map[int]bool{719: true, 700: true}}
}

// openFake opens a device on a fake driver; Close is checked, and so is that it freed
// everything.
func openFake(t *testing.T) (*Device, *fakeDriver) {
	t.Helper()
	f := newFake()
	d, err := Open(f, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if got := f.live(); got != "0 allocations, 0 modules, 0 events, 0 streams, released true" {
			t.Errorf("after Close the driver holds %s", got)
		}
	})
	return d, f
}

func loadFake(t *testing.T, d *Device, entry string) *Kernel {
	t.Helper()
	k, err := d.Load([]byte("fake:add,boom,bad,empty,anon"), entry)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func words(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func readWords(t *testing.T, b *Buffer, offset, n int) []uint32 {
	t.Helper()
	raw := make([]byte, 4*n)
	if err := b.Read(offset, raw); err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return out
}

func newBuffer(t *testing.T, d *Device, data []byte) *Buffer {
	t.Helper()
	b, err := d.NewBuffer(len(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(0, data); err != nil {
		t.Fatal(err)
	}
	return b
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

// TestLaunch runs one launch: zero-filled buffers, the arguments in order, one wait, counters.
func TestLaunch(t *testing.T) {
	d, f := openFake(t)
	k := loadFake(t, d, "add")
	if k.Name() != "add" || k.MaxThreadsPerBlock() != 256 || k.Registers() != 16 || len(k.ParamSizes()) != 4 {
		t.Fatalf("kernel %+v", k)
	}
	in := newBuffer(t, d, words(1, 2, 3, 4))
	out, err := d.NewBuffer(16)
	if err != nil {
		t.Fatal(err)
	}
	if got := readWords(t, out, 0, 4); got[0] != 0 || got[3] != 0 {
		t.Fatalf("a new buffer holds %v", got)
	}
	if err := d.Launch(k, []*Buffer{out, in}, []uint32{10, 4}, one, block); err != nil {
		t.Fatal(err)
	}
	if got := readWords(t, out, 0, 4); got[0] != 11 || got[3] != 14 {
		t.Fatalf("add gave %v", got)
	}
	if c := f.launches[0]; c.ptrs[0] != out.Pointer() || c.ptrs[1] != in.Pointer() || c.scalars[0] != 10 || c.scalars[1] != 4 {
		t.Fatalf("launch %+v", c)
	}
	want := Stats{Submits: 1, Syncs: 1, Launches: 1, HostWrites: 1, HostReads: 2}
	if got := d.Stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	if f.syncs != 1 {
		t.Fatalf("%d waits, want 1", f.syncs)
	}
	// A kernel without parameters gets a nil kernelParams.
	if err := d.Launch(loadFake(t, d, "empty"), nil, nil, one, one); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareValidation checks the launch checks made before any driver call.
func TestPrepareValidation(t *testing.T) {
	d := &Device{cfg: testConfig()}
	other := &Device{cfg: testConfig()}
	k := &Kernel{dev: d, name: "k", maxThreads: 256, params: []int{8, 8, 4}}
	b := &Buffer{dev: d, ptr: 0x1000, size: 16}
	blk := [3]uint32{256, 1, 1}
	prep := func(k *Kernel, bufs []*Buffer, params []uint32, grid, block [3]uint32) error {
		_, err := d.check("Launch", k, whole(bufs), params, grid, block)
		return err
	}
	if err := prep(k, []*Buffer{b, b}, []uint32{1}, one, blk); err != nil {
		t.Fatal(err)
	}
	wantErr(t, prep(nil, nil, nil, one, blk), "cuda: Launch: kernel is nil")
	wantErr(t, prep(&Kernel{dev: other}, nil, nil, one, blk), "another device")
	wantErr(t, prep(k, []*Buffer{b, nil}, []uint32{1}, one, blk), `kernel "k": buffer 1 is nil`)
	wantErr(t, prep(k, []*Buffer{b, {dev: other}}, []uint32{1}, one, blk), "buffer 1 belongs to another device")
	wantErr(t, prep(k, []*Buffer{b, {dev: d, released: true}}, []uint32{1}, one, blk), "buffer 1 was released")
	wantErr(t, prep(k, []*Buffer{b}, []uint32{1}, one, blk), "takes 3 parameters")
	wantErr(t, prep(k, []*Buffer{b, b, b}, nil, one, blk), "parameter 2 is 4 bytes; a buffer pointer is 8")
	wantErr(t, prep(&Kernel{dev: d, name: "k2", maxThreads: 256, params: []int{8, 8}}, []*Buffer{b}, []uint32{1}, one, blk), "parameter 1 is 8 bytes; a 32-bit scalar is 4")
	wantErr(t, prep(k, []*Buffer{b, b}, []uint32{1}, [3]uint32{0, 1, 1}, blk), "at least 1")
	wantErr(t, prep(k, []*Buffer{b, b}, []uint32{1}, [3]uint32{1, 70000, 1}, blk), "exceed")
	wantErr(t, prep(k, []*Buffer{b, b}, []uint32{1}, one, [3]uint32{512, 1, 1}), "the kernel allows 256")
	k.params = nil // the driver cannot say: counts are not checked
	if err := prep(k, []*Buffer{b}, nil, one, blk); err != nil {
		t.Fatal(err)
	}
	k.released = true
	wantErr(t, prep(k, nil, nil, one, blk), "released")
}

// TestPackArgs checks the kernelParams layout: a pointer to each argument, buffers (8 bytes)
// first, then scalars (4 bytes), in order.
func TestPackArgs(t *testing.T) {
	a := packArgs([]uint64{0xdead0000, 0xbeef0000}, []uint32{7, 0x3f800000})
	defer a.unpin()
	p := a.params()
	if len(p) != 4 || unsafe.Pointer(&p[0]) != unsafe.Pointer(&a.args[0]) {
		t.Fatalf("got %d args", len(p))
	}
	if *(*uint64)(p[0]) != 0xdead0000 || *(*uint64)(p[1]) != 0xbeef0000 || *(*uint32)(p[2]) != 7 || *(*uint32)(p[3]) != 0x3f800000 {
		t.Fatal("argument values do not match")
	}
	empty := packArgs(nil, nil)
	defer empty.unpin()
	if empty.params() != nil {
		t.Fatal("a kernel without parameters gets a nil kernelParams")
	}
}

// TestBufferRange checks the range checks of Write and Read, and use after Release and Close.
func TestBufferRange(t *testing.T) {
	b := &Buffer{dev: &Device{cfg: testConfig()}, size: 16}
	for _, c := range []struct{ off, n int }{{0, 16}, {16, 0}, {8, 8}} {
		if err := b.checkRange("Write", c.off, c.n); err != nil {
			t.Errorf("[%d, +%d): %v", c.off, c.n, err)
		}
	}
	for _, c := range []struct{ off, n int }{{-1, 1}, {0, 17}, {17, 0}, {8, 9}} {
		if err := b.checkRange("Read", c.off, c.n); err == nil || !strings.Contains(err.Error(), "cuda: Buffer.Read: range") {
			t.Errorf("[%d, +%d): %v", c.off, c.n, err)
		}
	}
	b.released = true
	wantErr(t, b.checkRange("Read", 0, 1), "released")

	d, _ := openFake(t)
	if _, err := d.NewBuffer(0); err == nil {
		t.Fatal("NewBuffer(0) succeeded")
	}
	c := newBuffer(t, d, words(1, 2, 3))
	wantErr(t, c.Write(8, words(1, 2)), "outside the buffer's 12 bytes")
	c.Release()
	c.Release()
	wantErr(t, c.Read(0, make([]byte, 4)), "buffer released")
	if c.Pointer() != 0 {
		t.Fatal("a released buffer keeps its address")
	}
}

// TestSticky: a launch failing with a sticky result leaves the device unusable, Close still
// frees everything; a non-sticky failure does not.
func TestSticky(t *testing.T) {
	d, _ := openFake(t)
	bad := loadFake(t, d, "bad")
	b := newBuffer(t, d, words(1))
	err := d.Launch(bad, []*Buffer{b, b}, []uint32{0, 1}, one, one)
	var re *ResultError
	if !errors.As(err, &re) || re.Code != 1 || !strings.Contains(err.Error(), `cuda: Launch "bad": Launch: FAKE_1 (1)`) {
		t.Fatalf("bad: %v", err)
	}
	boom := loadFake(t, d, "boom")
	wantErr(t, d.Launch(boom, nil, nil, one, one), "FAKE_719")
	wantErr(t, b.Write(0, words(2)), "device 0 is unusable after an earlier error")
	if _, err := d.NewStream(false); err == nil {
		t.Fatal("NewStream on a broken device")
	}
}

// TestBench checks the benchmark loop: warm-up, the timed launches between two events, two
// waits.
func TestBench(t *testing.T) {
	d, f := openFake(t)
	k := loadFake(t, d, "add")
	b := newBuffer(t, d, words(0, 0))
	res, err := d.Bench(k, []*Buffer{b, b}, []uint32{1, 2}, one, block, 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Timestamps || res.Total != 2500000 || res.PerDispatch != 250000 || res.Wall <= 0 {
		t.Fatalf("bench %+v", res)
	}
	if got := readWords(t, b, 0, 2); got[0] != 13 {
		t.Fatalf("13 launches of +1 gave %v", got)
	}
	if s := d.Stats(); s.Launches != 13 || s.Submits != 1 || s.Syncs != 2 || f.syncs != 2 {
		t.Fatalf("stats %+v, driver waits %d", s, f.syncs)
	}
	if _, err := d.Bench(k, []*Buffer{b, b}, []uint32{1, 2}, one, block, 0, 0); err == nil {
		t.Fatal("Bench with n=0 succeeded")
	}
}

// TestLoadErrors: a bad image, a missing entry and a failing attribute read are errors naming the
// call, and leave nothing loaded.
func TestLoadErrors(t *testing.T) {
	d, f := openFake(t)
	wantErr(t, func() error { _, err := d.Load(nil, "add"); return err }(), `cuda: Load "add": empty image`)
	wantErr(t, func() error { _, err := d.Load([]byte("junk"), "add"); return err }(), "LoadModule: FAKE_200")
	wantErr(t, func() error { _, err := d.Load([]byte("fake:add"), "nosuch"); return err }(), `no kernel "nosuch" in the module`)
	f.fail["FuncInfo"] = fakeErr("cuFuncGetAttribute", 1)
	wantErr(t, func() error { _, err := d.Load([]byte("fake:add"), "add"); return err }(), "cuFuncGetAttribute")
	delete(f.fail, "FuncInfo")
	if len(f.modules) != 0 {
		t.Fatalf("%d modules left loaded", len(f.modules))
	}
	k := loadFake(t, d, "add")
	k.Release()
	k.Release()
	b := newBuffer(t, d, words(1))
	wantErr(t, d.Launch(k, []*Buffer{b, b}, []uint32{0, 1}, one, one), `kernel "add" was released`)
}

// TestOpenFailure: a failed Open frees what it made and releases the driver.
func TestOpenFailure(t *testing.T) {
	f := newFake()
	f.fail["EventCreate"] = fakeErr("cuEventCreate", 2)
	if _, err := Open(f, testConfig()); err == nil || !strings.Contains(err.Error(), "cuEventCreate") {
		t.Fatalf("Open: %v", err)
	}
	if got := f.live(); got != "0 allocations, 0 modules, 0 events, 0 streams, released true" {
		t.Fatalf("after a failed Open the driver holds %s", got)
	}
}

// TestClosed: every call on a closed device says so; Close twice is a no-op.
func TestClosed(t *testing.T) {
	f := newFake()
	d, err := Open(f, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.NewBuffer(4)
	k, _ := d.Load([]byte("fake:add"), "add")
	s, _ := d.NewStream(false)
	if err := s.Launch(k, []View{b.Whole(), b.Whole()}, []uint32{0, 1}, one, one); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantErr(t, b.Write(0, words(1)), "cuda: Buffer.Write: device closed")
	wantErr(t, s.Submit(), "cuda: Stream.Submit: device closed")
	b.Release()
	k.Release()
	if got := f.live(); got != "0 allocations, 0 modules, 0 events, 0 streams, released true" {
		t.Fatalf("after Close the driver holds %s", got)
	}
}
