package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
)

// emulatedSaxpy is a hand-written CUDA kernel in the emitted kernels' calling convention.
const emulatedSaxpy = `
extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
}
`

// openEmulated opens the emulated device or skips with the reason (no C++ compiler).
func openEmulated(t *testing.T) *Device {
	t.Helper()
	d, err := OpenEmulated()
	if errors.Is(err, host.ErrUnavailable) || errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestEmulatedDevice runs saxpy on the emulated device through the shared device's Stream: two
// launches on views of one buffer, one submission, the results bit for bit (two roundings), each
// launch timed by the emulation; and a source the host compiler refuses is a CompileError.
func TestEmulatedDevice(t *testing.T) {
	d := openEmulated(t)
	if d.Info().Name != "host emulation (H) of CUDA" || d.Info().WarpSize != 32 || d.DriverVersion() != 0 {
		t.Fatalf("info %+v", d.Info())
	}
	k, err := d.Compile(emulatedSaxpy, "saxpy")
	if err != nil {
		t.Fatal(err)
	}
	if img := k.Image(); img.Format != "host" || k.ParamSizes() == nil || len(k.ParamSizes()) != 4 {
		t.Fatalf("image %q, parameters %v", img.Format, k.ParamSizes())
	}
	const n = 64
	x, y := make([]byte, 4*n), make([]byte, 8*n)
	want := make([]float32, 2*n)
	for i := 0; i < 2*n; i++ {
		xi, yi := float32(i)*0.37-3, float32(i)*1.1
		if i < n {
			binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(xi))
		}
		binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(yi))
		want[i] = float32(float32(2.5)*float32(float32(i%n)*0.37-3)) + yi
	}
	yb, err := d.NewBuffer(len(y))
	if err != nil {
		t.Fatal(err)
	}
	xb, _ := d.NewBuffer(len(x))
	if err := yb.Write(0, y); err != nil {
		t.Fatal(err)
	}
	if err := xb.Write(0, x); err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	for half := 0; half < 2; half++ {
		if err := s.Launch(k, []View{yb.Range(4*n*half, 4*n), xb.Whole()}, []uint32{math.Float32bits(2.5), n}, [3]uint32{2, 1, 1}, [3]uint32{32, 1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(y))
	if err := yb.Read(0, got); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); math.Float32bits(g) != math.Float32bits(w) {
			t.Fatalf("y[%d] = %v, want %v", i, g, w)
		}
	}
	st := d.Stats()
	if st.Submits-before.Submits != 1 || st.Syncs-before.Syncs != 1 || st.Launches-before.Launches != 2 {
		t.Errorf("stats %+v -> %+v: want one submission and one wait for two launches", before, st)
	}
	if ts := s.Times(); len(ts) != 2 || ts[0] <= 0 {
		t.Errorf("times %v", ts)
	}
	_, err = d.Compile(`extern "C" __global__ void bad(float* y) { y[0] = undeclared; }`, "bad")
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "undeclared") {
		t.Fatalf("a bad source: %v", err)
	}
	if err := d.Launch(k, []*Buffer{yb, xb}, []uint32{0}, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}); err == nil || !strings.Contains(err.Error(), "takes 4 parameters") {
		t.Fatalf("a launch with a parameter missing: %v", err)
	}
}
