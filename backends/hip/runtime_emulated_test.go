package hip

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
)

// TestEmulatedDevice runs a HIP kernel that reads warpSize on the emulated device (64-lane
// wavefronts): its buffers, launch and counters are the shared device's.
func TestEmulatedDevice(t *testing.T) {
	d, err := OpenEmulated()
	if errors.Is(err, host.ErrUnavailable) || errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Info().Name != "host emulation (H) of HIP" || d.Info().WarpSize != 64 || d.RuntimeVersion() != 0 {
		t.Fatalf("info %+v", d.Info())
	}
	k, err := d.Compile(`
#pragma clang fp contract(off)
extern "C" __global__ void lanes(unsigned* out, float* y, float a, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) { out[i] = i % warpSize; y[i] = a * y[i] + 1.0f; }
}`, "lanes")
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	out, _ := d.NewBuffer(4 * n)
	y, _ := d.NewBuffer(4 * n)
	in := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(i)/3))
	}
	if err := y.Write(0, in); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(k, []*Buffer{out, y}, []uint32{math.Float32bits(0.1), n}, [3]uint32{4, 1, 1}, [3]uint32{64, 1, 1}); err != nil {
		t.Fatal(err)
	}
	got, gy := make([]byte, 4*n), make([]byte, 4*n)
	if err := out.Read(0, got); err != nil {
		t.Fatal(err)
	}
	if err := y.Read(0, gy); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		want := float32(float32(0.1)*(float32(i)/3)) + 1
		if l := binary.LittleEndian.Uint32(got[4*i:]); l != uint32(i%64) {
			t.Fatalf("lane of thread %d: %d", i, l)
		}
		if g := binary.LittleEndian.Uint32(gy[4*i:]); g != math.Float32bits(want) {
			t.Fatalf("y[%d] = %v, want %v", i, math.Float32frombits(g), want)
		}
	}
	if st := d.Stats(); st.Launches != 1 || st.HostReads != 2 || st.HostWrites != 1 {
		t.Errorf("stats %+v", st)
	}
}
