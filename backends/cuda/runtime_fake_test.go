package cuda

import (
	"github.com/onesource-go/onesource/internal/dynlib"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// rtFakeLibrary builds testdata/runtime_fakecuda.c, a fake CUDA driver and NVRTC that run
// saxpy on the CPU, and points ONESOURCE_CUDA_LIBRARY and ONESOURCE_NVRTC_LIBRARY at it, or
// skips the test when there is no C compiler.
func rtFakeLibrary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || !dynlib.CanLoad {
		t.Skip("the fake driver is built for Linux")
	}
	var cc string
	for _, c := range []string{"cc", "clang-16", "clang", "gcc"} {
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no C compiler to build the fake driver")
	}
	so := filepath.Join(t.TempDir(), "libfakecuda.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-ffp-contract=off", "-o", so, filepath.Join("testdata", "runtime_fakecuda.c")).CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake driver with %s: %v\n%s", cc, err, out)
	}
	t.Setenv(LibraryEnv, so)
	t.Setenv(NVRTCLibraryEnv, so)
	return so
}

// TestRuntimeFakeDriver runs the device tests against the fake driver: every driver and NVRTC
// call with its real signature (argument order, pointers, the _v2 symbols), the context made
// current on the calling thread, errors, and saxpy's result bit for bit. It does not stand in for
// a GPU: the device tests proper run where one exists.
func TestRuntimeFakeDriver(t *testing.T) {
	so := rtFakeLibrary(t)
	if err := Available(); err != nil {
		t.Fatalf("Available with the fake driver: %v", err)
	}
	lib, err := Libraries()
	if err != nil {
		t.Fatal(err)
	}
	for fn, want := range map[string]string{"cuMemAlloc": "cuMemAlloc_v2", "cuEventElapsedTime": "cuEventElapsedTime_v2", "cuLaunchKernel": "cuLaunchKernel"} {
		if lib.Symbols[fn] != want {
			t.Errorf("%s resolved to %q, want %q", fn, lib.Symbols[fn], want)
		}
	}
	if lib.DriverVersion != 13000 || lib.NVRTCVersion != [2]int{13, 0} || len(lib.NVRTCArchs) != 8 {
		t.Errorf("library %+v", lib)
	}
	devs, err := Devices()
	if err != nil || len(devs) != 1 {
		t.Fatalf("Devices: %v %v", devs, err)
	}
	d := devs[0]
	if d.Name != "Fake CUDA Device" || d.Arch != "sm_90" || d.Multiprocessors != 132 || d.TotalMemory != 141<<30 ||
		d.SharedMemoryPerBlockOptin != 232448 || d.ClockKHz != 0 || d.PCIBusID != "0000:1b:00.0" || d.MaxGrid != [3]uint32{2147483647, 65535, 65535} {
		t.Errorf("device %+v", d)
	}
	for name, test := range map[string]func(*testing.T){
		"DeviceInfo": TestRuntimeDeviceInfo, "Saxpy": TestRuntimeSaxpy, "CompileError": TestRuntimeCompileError,
		"LoadErrors": TestRuntimeLoadErrors, "Buffers": TestRuntimeBuffers, "Bench": TestRuntimeBench,
		"Stream": TestRuntimeStream,
	} {
		t.Run(name, test)
	}
	rtFakeStreamSyncs(t, so)

	// A kernel the fake fails (CUDA_ERROR_LAUNCH_FAILED, sticky) leaves the device unusable.
	dev, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := dev.Compile(`extern "C" __global__ void boom() {}`, "boom")
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Launch(k, nil, nil, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_LAUNCH_FAILED (719)") {
		t.Fatalf("launch of boom: %v", err)
	}
	if _, err := dev.NewBuffer(4); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("NewBuffer after a sticky error: %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Fatalf("Close after a sticky error: %v", err)
	}
	if _, err := Open(1); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("Open(1): %v", err)
	}

	// A code the table lacks is named by the driver's cuGetErrorName.
	if l, err := cudaDriver.Load(); err != nil || l.resultName(4242) != "CUDA_ERROR_FAKE_4242" {
		t.Errorf("cuGetErrorName fallback: %v", err)
	}

	// Everything allocated was freed by Release and Close.
	if n := rtFakeCounter(t, so, "fake_live_allocs"); n != 0 {
		t.Errorf("%d device allocations still live", n)
	}
	if n := rtFakeCounter(t, so, "fake_launches"); n == 0 {
		t.Error("no launch reached the fake driver")
	}
}

// rtFakeStreamSyncs checks, at the driver, that a Stream of several launches waits once: the
// fake counts every cuStreamSynchronize and cuEventSynchronize.
func rtFakeStreamSyncs(t *testing.T, so string) {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	k, err := d.Compile(rtSaxpySource, "saxpy")
	if err != nil {
		t.Fatal(err)
	}
	y, _ := d.NewBuffer(4 * 64)
	x, _ := d.NewBuffer(4 * 64)
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := s.Launch(k, []View{y.Range(64*i, 64), x.Whole()}, []uint32{0, 16}, [3]uint32{1, 1, 1}, [3]uint32{16, 1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	syncs, launches := rtFakeCounter(t, so, "fake_syncs"), rtFakeCounter(t, so, "fake_launches")
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	if got := rtFakeCounter(t, so, "fake_syncs") - syncs; got != 1 {
		t.Errorf("a stream of 4 launches waited %d times, want 1", got)
	}
	if got := rtFakeCounter(t, so, "fake_launches") - launches; got != 4 {
		t.Errorf("a stream of 4 launches made %d cuLaunchKernel calls", got)
	}
}

// rtFakeCounter calls one of the fake driver's counters.
func rtFakeCounter(t *testing.T, so, name string) int64 {
	t.Helper()
	h, err := dynlib.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	fn := dynlib.Symbol(h, name)
	if fn == 0 {
		t.Fatalf("the fake driver lacks %s", name)
	}
	return int64(dynlib.Call(fn))
}
