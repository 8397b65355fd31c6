package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rtSaxpySource is a hand-written CUDA kernel in the emitted kernels' calling convention: buffers
// first, then 32-bit scalars. It builds with NVRTC and with clang (-nocudainc), which has no
// CUDA headers: the #else branch spells out what the headers would give.
const rtSaxpySource = `
#ifdef __CUDACC_RTC__
#define TID_X threadIdx.x
#define BID_X blockIdx.x
#define BDIM_X blockDim.x
#else
#define __global__ __attribute__((global))
#define TID_X __nvvm_read_ptx_sreg_tid_x()
#define BID_X __nvvm_read_ptx_sreg_ctaid_x()
#define BDIM_X __nvvm_read_ptx_sreg_ntid_x()
#endif
// y[i] = a*x[i] + y[i]: two roundings (no contraction) is the contract.
extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned n) {
	unsigned i = BID_X * BDIM_X + TID_X;
	if (i < n) y[i] = a * x[i] + y[i];
}
`

// rtRowsumSource sums each row of x (one block of 256 threads per row) in the canonical order:
// each lane adds its strided elements in ascending index order, then lanes combine by
// xor-butterfly, strides 1, 2, 4, ..., 128: below 32 with __shfl_xor_sync, above through shared
// memory.
const rtRowsumSource = `
#define T 256
extern "C" __global__ void rowsum(float* out, const float* x, unsigned n) {
	__shared__ float sh[T];
	unsigned t = threadIdx.x;
	const float* row = x + (unsigned long long)blockIdx.x * n;
	float v = 0.0f;
	for (unsigned i = t; i < n; i += T) v += row[i];
	for (unsigned s = 1; s < 32; s <<= 1) v += __shfl_xor_sync(0xffffffffu, v, s);
	for (unsigned s = 32; s < T; s <<= 1) {
		sh[t] = v;
		__syncthreads();
		v += sh[t ^ s];
		__syncthreads();
	}
	if (t == 0) out[blockIdx.x] = v;
}
`

const rtEmptySource = `extern "C" __global__ void empty() {}`

// rtOpenDevice opens device 0, or skips the test when CUDA is unavailable (with the reason).
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

func rtCompile(t testing.TB, d *Device, src, entry string) *Kernel {
	t.Helper()
	k, err := d.Compile(src, entry)
	if err != nil {
		t.Fatalf("Compile %s: %v", entry, err)
	}
	return k
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

// buffer makes a device buffer holding data.
func rtBuffer(t testing.TB, d *Device, data []byte) *Buffer {
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

func rtRead(t testing.TB, b *Buffer) []byte {
	t.Helper()
	out := make([]byte, b.Size())
	if err := b.Read(0, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// rtSaxpyInputs returns inputs where a*x+y fused and unfused differ for many elements.
func rtSaxpyInputs(n int) (a float32, x, y []float32) {
	a = 1.0000001
	x, y = make([]float32, n), make([]float32, n)
	s := uint32(12345)
	for i := range x {
		s = s*1664525 + 1013904223
		x[i] = 1 + float32(s>>8)/float32(1<<24)
		s = s*1664525 + 1013904223
		y[i] = -x[i] + float32(int32(s>>16)-32768)*1e-7
	}
	return a, x, y
}

// TestRuntimeDeviceInfo checks what the driver reports about device 0.
func TestRuntimeDeviceInfo(t *testing.T) {
	d := rtOpenDevice(t)
	info := d.Info()
	t.Logf("%+v (driver CUDA %s)", info, FormatVersion(d.DriverVersion()))
	if info.Name == "" || info.WarpSize != 32 || info.MaxThreadsPerBlock < 256 || info.Multiprocessors < 1 ||
		info.TotalMemory == 0 || !strings.HasPrefix(info.Arch, "sm_") {
		t.Fatalf("implausible device info %+v", info)
	}
	lib, err := Libraries()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s (CUDA %s), NVRTC %s %v, symbols %v", lib.DriverPath, FormatVersion(lib.DriverVersion), lib.NVRTCPath, lib.NVRTCVersion, lib.Symbols)
}

// TestSaxpy runs saxpy and checks every output bit for bit against Go's unfused a*x+y, on
// inputs where a fused multiply-add would differ.
func TestRuntimeSaxpy(t *testing.T) {
	d := rtOpenDevice(t)
	k := rtCompile(t, d, rtSaxpySource, "saxpy")
	t.Logf("saxpy: %s %s, %d registers, options %v", k.Image().Format, k.Image().Target, k.Registers(), k.Image().Options)
	const n = 1<<20 + 3
	a, x, y := rtSaxpyInputs(n)
	want := make([]float32, n)
	fusedDiffers := 0
	for i := range want {
		want[i] = float32(a*x[i]) + y[i]
		if math.Float32bits(float32(math.FMA(float64(a), float64(x[i]), float64(y[i])))) != math.Float32bits(want[i]) {
			fusedDiffers++
		}
	}
	if fusedDiffers < n/100 {
		t.Fatalf("only %d inputs tell fused from unfused: the test would not bite", fusedDiffers)
	}
	yb, xb := rtBuffer(t, d, rtF32Bytes(y)), rtBuffer(t, d, rtF32Bytes(x))
	if err := d.Launch(k, []*Buffer{yb, xb}, []uint32{math.Float32bits(a), n}, [3]uint32{(n + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}); err != nil {
		t.Fatal(err)
	}
	got := rtBytesF32(rtRead(t, yb))
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 5 {
				t.Errorf("y[%d] = %v (%#08x), want %v (%#08x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d outputs differ (%d inputs tell fused from unfused)", bad, n, fusedDiffers)
	}
}

// rtRowsumReference is rowsum's canonical order in Go.
func rtRowsumReference(x []float32, rows, n int) []float32 {
	const T = 256
	out := make([]float32, rows)
	for r := 0; r < rows; r++ {
		row := x[r*n : (r+1)*n]
		var lanes [T]float32
		for t := 0; t < T; t++ {
			for i := t; i < n; i += T {
				lanes[t] += row[i]
			}
		}
		for s := 1; s < T; s <<= 1 {
			var next [T]float32
			for t := 0; t < T; t++ {
				next[t] = lanes[t] + lanes[t^s]
			}
			lanes = next
		}
		out[r] = lanes[0]
	}
	return out
}

// TestRowsum runs the shared-memory + __shfl_xor_sync reduction and checks it bit for bit
// against the same order in Go.
func TestRuntimeRowsum(t *testing.T) {
	d := rtOpenDevice(t)
	k := rtCompile(t, d, rtRowsumSource, "rowsum")
	const rows, n = 37, 1000 // n is not a multiple of the 256 lanes
	x := make([]float32, rows*n)
	s := uint32(7)
	for i := range x {
		s = s*1664525 + 1013904223
		x[i] = float32(int32(s)) / (1 << 27) // mixed signs and magnitudes: order matters
	}
	want := rtRowsumReference(x, rows, n)
	xb := rtBuffer(t, d, rtF32Bytes(x))
	out, err := d.NewBuffer(4 * rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(k, []*Buffer{out, xb}, []uint32{n}, [3]uint32{rows, 1, 1}, [3]uint32{256, 1, 1}); err != nil {
		t.Fatal(err)
	}
	got := rtBytesF32(rtRead(t, out))
	for r := range want {
		if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
			t.Errorf("row %d: %v (%#08x), want %v (%#08x)", r, got[r], math.Float32bits(got[r]), want[r], math.Float32bits(want[r]))
		}
	}
}

// TestCompileError checks that a failed compile carries NVRTC's log.
func TestRuntimeCompileError(t *testing.T) {
	d := rtOpenDevice(t)
	_, err := d.Compile(`extern "C" __global__ void broken(float* y) { y[0] = undeclared_thing; }`, "broken")
	var ce *CompileError
	var re *ResultError
	if !errors.As(err, &ce) || !errors.As(err, &re) || re.Code != 6 || !strings.Contains(ce.Log, "undeclared_thing") {
		t.Fatalf("got %v: want a *CompileError (NVRTC_ERROR_COMPILATION) whose log names undeclared_thing", err)
	}
	t.Logf("%v", err)
}

// TestLoadErrors checks a missing entry point, a bad image and launch validation on a device.
func TestRuntimeLoadErrors(t *testing.T) {
	d := rtOpenDevice(t)
	img, err := CompileNVRTC(rtSaxpySource, "saxpy.cu", d.Info().ComputeMajor*10+d.Info().ComputeMinor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Load(img.Code, "nosuchkernel"); err == nil || !strings.Contains(err.Error(), "cuModuleGetFunction") {
		t.Fatalf("missing entry: %v", err)
	}
	if _, err := d.Load([]byte("not a module"), "saxpy"); err == nil || !strings.Contains(err.Error(), "cuModuleLoadData") {
		t.Fatalf("bad image: %v", err)
	}
	k, err := d.Load(img.Code, "saxpy")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("saxpy parameter sizes: %v", k.ParamSizes())
	b, err := d.NewBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(k, []*Buffer{b, b}, []uint32{0, 16}, [3]uint32{1, 1, 1}, [3]uint32{2048, 1, 1}); err == nil {
		t.Fatal("a 2048-thread block launched")
	}
	if k.ParamSizes() != nil {
		if err := d.Launch(k, []*Buffer{b}, []uint32{0, 16}, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}); err == nil || !strings.Contains(err.Error(), "parameters") {
			t.Fatalf("wrong argument count: %v", err)
		}
	}
	if err := d.Launch(k, []*Buffer{b, b}, []uint32{0, 16}, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}); err != nil {
		t.Fatal(err)
	}
	k.Release()
	k.Release()
	if err := d.Launch(k, []*Buffer{b, b}, []uint32{0, 16}, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}); err == nil {
		t.Fatal("a released kernel launched")
	}
}

// TestBuffers checks zero-fill, offsets, range errors, release and use after Close.
func TestRuntimeBuffers(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.NewBuffer(100)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 100)
	for i := range got {
		got[i] = 0xff
	}
	if err := b.Read(0, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 0 {
			t.Fatalf("byte %d of a new buffer is %d", i, v)
		}
	}
	if err := b.Write(10, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	three := make([]byte, 5)
	if err := b.Read(9, three); err != nil || string(three) != "\x00\x01\x02\x03\x00" {
		t.Fatalf("Read(9) = %v, %v", three, err)
	}
	if err := b.Write(98, []byte{1, 2, 3}); err == nil {
		t.Fatal("a write past the end succeeded")
	}
	if _, err := d.NewBuffer(0); err == nil {
		t.Fatal("NewBuffer(0) succeeded")
	}
	b.Release()
	b.Release()
	if err := b.Read(0, three); err == nil {
		t.Fatal("read of a released buffer succeeded")
	}
	c, err := d.NewBuffer(8)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.Write(0, []byte{1}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("write after Close: %v", err)
	}
	c.Release()
}

// TestBench checks that the kernel-only benchmark measures something.
func TestRuntimeBench(t *testing.T) {
	d := rtOpenDevice(t)
	k := rtCompile(t, d, rtSaxpySource, "saxpy")
	const n = 1 << 20
	yb, err := d.NewBuffer(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	xb, err := d.NewBuffer(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Bench(k, []*Buffer{yb, xb}, []uint32{math.Float32bits(1), n}, [3]uint32{n / 256, 1, 1}, [3]uint32{256, 1, 1}, 3, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Timestamps || res.Total <= 0 || res.PerDispatch <= 0 || res.Wall <= 0 {
		t.Fatalf("implausible %+v", res)
	}
	t.Logf("saxpy 1M: %v per launch (%.0f GB/s), wall %v for 20", res.PerDispatch, 12*n/float64(res.PerDispatch.Nanoseconds()), res.Wall)
	if _, err := d.Bench(k, []*Buffer{yb, xb}, []uint32{0, n}, [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, 0, 0); err == nil {
		t.Fatal("Bench with n=0 succeeded")
	}
}

// TestLoadClangPTX loads PTX that clang-16 made from the same saxpy (the level-V artifact of the
// CUDA backend) and checks it computes what NVRTC's build does.
func TestRuntimeLoadClangPTX(t *testing.T) {
	d := rtOpenDevice(t)
	clang, err := exec.LookPath("clang-16")
	if err != nil {
		t.Skipf("clang-16 not found: %v", err)
	}
	dir := t.TempDir()
	src, ptx := filepath.Join(dir, "saxpy.cu"), filepath.Join(dir, "saxpy.ptx")
	if err := os.WriteFile(src, []byte(rtSaxpySource), 0o644); err != nil {
		t.Fatal(err)
	}
	arch := "sm_80" // clang-16 knows up to sm_90; sm_80 PTX runs on any newer device
	out, err := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "--cuda-gpu-arch="+arch,
		"-O2", "-ffp-contract=off", "-S", "-o", ptx, src).CombinedOutput()
	if err != nil {
		t.Skipf("clang-16 cannot build PTX here: %v\n%s", err, out)
	}
	code, err := os.ReadFile(ptx)
	if err != nil {
		t.Fatal(err)
	}
	k, err := d.Load(code, "saxpy")
	if err != nil {
		t.Fatalf("loading clang's PTX: %v", err)
	}
	const n = 4099
	a, x, y := rtSaxpyInputs(n)
	yb, xb := rtBuffer(t, d, rtF32Bytes(y)), rtBuffer(t, d, rtF32Bytes(x))
	if err := d.Launch(k, []*Buffer{yb, xb}, []uint32{math.Float32bits(a), n}, [3]uint32{(n + 127) / 128, 1, 1}, [3]uint32{128, 1, 1}); err != nil {
		t.Fatal(err)
	}
	got := rtBytesF32(rtRead(t, yb))
	for i := range got {
		if want := float32(a*x[i]) + y[i]; math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
}

// TestRuntimeStream runs a chain of dependent saxpy launches on views of one buffer (y1 reads
// y0, y2 reads y1) in one Stream: one submission and one wait for all three, each launch given
// the buffer's address plus its view's offset, and the results bit for bit those of running them
// one after another. Then the same chain timed, and the errors a Stream reports.
func TestRuntimeStream(t *testing.T) {
	d := rtOpenDevice(t)
	k := rtCompile(t, d, rtSaxpySource, "saxpy")
	const n = 4099
	const slot = (4*n + ViewAlignment - 1) / ViewAlignment * ViewAlignment
	a, x, y0 := rtSaxpyInputs(n)
	ys := make([]float32, 3*slot/4)
	for j := 0; j < 3; j++ {
		for i := 0; i < n; i++ {
			ys[j*slot/4+i] = y0[i] * float32(j+1)
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
	yb, xb := rtBuffer(t, d, rtF32Bytes(ys)), rtBuffer(t, d, rtF32Bytes(x))
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
	got := rtBytesF32(rtRead(t, yb))
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
