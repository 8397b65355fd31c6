package hip

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// rtOpenDevice opens device 0, or skips the test when HIP is unavailable (with the reason).
func rtOpenDevice(t testing.TB) *Device {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := Open(0)
	if err != nil {
		t.Fatalf("Open(0): %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func rtF32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func rtBytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func rtDeviceBuffer(t testing.TB, d *Device, data []byte) *Buffer {
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

func rtReadAll(t testing.TB, b *Buffer) []byte {
	t.Helper()
	out := make([]byte, b.Size())
	if err := b.Read(0, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRuntimeDeviceSaxpy runs saxpy on a HIP device and checks it bit for bit against Go's
// unfused a*x+y on inputs where a fused multiply-add would differ.
func TestRuntimeDeviceSaxpy(t *testing.T) {
	d := rtOpenDevice(t)
	t.Logf("%+v", d.Info())
	k, err := d.Compile(rtSaxpySource, "saxpy")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1<<20 + 3
	a := float32(1.0000001)
	x, y, want := make([]float32, n), make([]float32, n), make([]float32, n)
	s := uint32(12345)
	fusedDiffers := 0
	for i := range x {
		s = s*1664525 + 1013904223
		x[i] = 1 + float32(s>>8)/float32(1<<24)
		s = s*1664525 + 1013904223
		y[i] = -x[i] + float32(int32(s>>16)-32768)*1e-7
		want[i] = float32(a*x[i]) + y[i]
		if float32(math.FMA(float64(a), float64(x[i]), float64(y[i]))) != want[i] {
			fusedDiffers++
		}
	}
	if fusedDiffers < n/100 {
		t.Fatalf("only %d inputs tell fused from unfused", fusedDiffers)
	}
	yb, xb := rtDeviceBuffer(t, d, rtF32Bytes(y)), rtDeviceBuffer(t, d, rtF32Bytes(x))
	if err := d.Launch(k, []*Buffer{yb, xb}, []uint32{math.Float32bits(a), n}, [3]uint32{(n + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}); err != nil {
		t.Fatal(err)
	}
	got := rtBytesF32(rtReadAll(t, yb))
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	res, err := d.Bench(k, []*Buffer{yb, xb}, []uint32{0, n}, [3]uint32{(n + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}, 3, 20)
	if err != nil || res.PerDispatch <= 0 {
		t.Fatalf("Bench: %+v %v", res, err)
	}
	t.Logf("saxpy: %v per launch", res.PerDispatch)
}

// TestRuntimeDeviceRowsum runs the shared-memory + __shfl_xor reduction and checks it bit for
// bit against the same order in Go.
func TestRuntimeDeviceRowsum(t *testing.T) {
	d := rtOpenDevice(t)
	k, err := d.Compile(rtRowsumSource, "rowsum")
	if err != nil {
		t.Fatal(err)
	}
	const rows, n, T = 37, 1000, 256
	x := make([]float32, rows*n)
	s := uint32(7)
	for i := range x {
		s = s*1664525 + 1013904223
		x[i] = float32(int32(s)) / (1 << 27)
	}
	want := make([]float32, rows)
	for r := range want {
		var lanes [T]float32
		for t := 0; t < T; t++ {
			for i := t; i < n; i += T {
				lanes[t] += x[r*n+i]
			}
		}
		for s := 1; s < T; s <<= 1 {
			var next [T]float32
			for t := range next {
				next[t] = lanes[t] + lanes[t^s]
			}
			lanes = next
		}
		want[r] = lanes[0]
	}
	xb := rtDeviceBuffer(t, d, rtF32Bytes(x))
	out, err := d.NewBuffer(4 * rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(k, []*Buffer{out, xb}, []uint32{n}, [3]uint32{rows, 1, 1}, [3]uint32{T, 1, 1}); err != nil {
		t.Fatal(err)
	}
	got := rtBytesF32(rtReadAll(t, out))
	for r := range want {
		if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
			t.Errorf("row %d: %v, want %v", r, got[r], want[r])
		}
	}
}

// TestRuntimeDeviceBuffers checks zero-fill, ranges, release and use after Close.
func TestRuntimeDeviceBuffers(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.NewBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	got := rtReadAll(t, b)
	for i, v := range got {
		if v != 0 {
			t.Fatalf("byte %d of a new buffer is %d", i, v)
		}
	}
	if err := b.Write(60, []byte{1, 2, 3, 4, 5}); err == nil {
		t.Fatal("a write past the end succeeded")
	}
	b.Release()
	b.Release()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.NewBuffer(8); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("NewBuffer after Close: %v", err)
	}
}

// TestRuntimeDeviceStream runs a chain of dependent saxpy launches on views of one buffer (y1
// reads y0, y2 reads y1) in one Stream: one submission and one wait for all three, each launch
// given the buffer's address plus its view's offset, and the results bit for bit those of
// running them one after another. Then the same chain timed, and the errors a Stream reports.
func TestRuntimeDeviceStream(t *testing.T) {
	d := rtOpenDevice(t)
	k, err := d.Compile(rtSaxpySource, "saxpy")
	if err != nil {
		t.Fatal(err)
	}
	const n = 4099
	const slot = (4*n + ViewAlignment - 1) / ViewAlignment * ViewAlignment
	a := float32(1.0000001)
	x, ys := make([]float32, n), make([]float32, 3*slot/4)
	for i := range x {
		x[i] = 1 + float32(i%97)/128
		for j := 0; j < 3; j++ {
			ys[j*slot/4+i] = -x[i] * float32(j+1)
		}
	}
	want := append([]float32(nil), ys...)
	prev := x
	for j := 0; j < 3; j++ {
		yj := want[j*slot/4 : j*slot/4+n]
		for i := range yj {
			yj[i] = float32(a*prev[i]) + yj[i]
		}
		prev = yj
	}
	yb, xb := rtDeviceBuffer(t, d, rtF32Bytes(ys)), rtDeviceBuffer(t, d, rtF32Bytes(x))
	chain := func(s *Stream) {
		t.Helper()
		src := xb.Whole()
		for j := 0; j < 3; j++ {
			dst := yb.Range(j*slot, 4*n)
			if err := s.Launch(k, []View{dst, src}, []uint32{math.Float32bits(a), n}, [3]uint32{(n + 127) / 128, 1, 1}, [3]uint32{128, 1, 1}); err != nil {
				t.Fatal(err)
			}
			src = dst
		}
	}
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	chain(s)
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	after := d.Stats()
	if after.Submits-before.Submits != 1 || after.Syncs-before.Syncs != 1 || after.Launches-before.Launches != 3 {
		t.Errorf("a chain of 3 launches moved the counters from %+v to %+v: want 1 submission, 1 wait, 3 launches", before, after)
	}
	got := rtBytesF32(rtReadAll(t, yb))
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("y[%d] (slot %d) = %v, want %v", i, i/(slot/4), got[i], want[i])
		}
	}

	timed, err := d.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	chain(timed)
	if err := timed.Submit(); err != nil {
		t.Fatal(err)
	}
	if ts := timed.Times(); len(ts) != 3 || ts[0] <= 0 || ts[2] <= 0 {
		t.Fatalf("timed stream: %v", ts)
	}
	t.Logf("3 chained saxpy launches of %d: %v", n, timed.Times())

	if err := s.Launch(k, []View{yb.Range(2*slot, 2*slot), xb.Whole()}, []uint32{0, n}, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}); err == nil ||
		!strings.Contains(err.Error(), "buffer 0: view") {
		t.Fatalf("a view past the end: %v", err)
	}
	tmp, err := d.NewBuffer(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(k, []View{tmp.Whole(), xb.Whole()}, []uint32{0, n}, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}); err != nil {
		t.Fatal(err)
	}
	tmp.Release()
	if err := s.Submit(); err == nil || !strings.Contains(err.Error(), "buffer 0 was released") {
		t.Fatalf("Submit after a release: %v", err)
	}
}
