package hip

import (
	"github.com/onesource-go/onesource/internal/dynlib"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestRuntimeFakeRuntime builds testdata/runtime_fakehip.c, a fake HIP runtime and HIPRTC that
// export hipGetDeviceProperties only as hipGetDevicePropertiesR0600 and run saxpy on the CPU,
// and runs the device tests against it: every call with its real signature, the device made
// current on the calling thread, the ROCm 6 symbol chosen and gcnArchName found where the R0600
// layout puts it, and saxpy's result bit for bit. It does not stand in for a GPU.
func TestRuntimeFakeRuntime(t *testing.T) {
	if runtime.GOOS != "linux" || !dynlib.CanLoad {
		t.Skip("the fake runtime is built for Linux")
	}
	var cc string
	for _, c := range []string{"cc", "clang-16", "clang", "gcc"} {
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no C compiler to build the fake runtime")
	}
	so := filepath.Join(t.TempDir(), "libfakehip.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-ffp-contract=off", "-o", so, filepath.Join("testdata", "runtime_fakehip.c")).CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake runtime with %s: %v\n%s", cc, err, out)
	}
	t.Setenv(LibraryEnv, so)
	t.Setenv(HIPRTCLibraryEnv, so)
	if err := Available(); err != nil {
		t.Fatalf("Available with the fake runtime: %v", err)
	}
	lib, err := Libraries()
	if err != nil {
		t.Fatal(err)
	}
	if got := lib.Symbols["hipGetDeviceProperties"]; got != "hipGetDevicePropertiesR0600" {
		t.Errorf("hipGetDeviceProperties resolved to %q", got)
	}
	if lib.RuntimeVersion != 60443483 || lib.HIPRTCPath != so || lib.HIPRTCVersion != [2]int{6, 4} {
		t.Errorf("library %+v", lib)
	}
	devs, err := Devices()
	if err != nil || len(devs) != 1 {
		t.Fatalf("Devices: %v %v", devs, err)
	}
	d := devs[0]
	if d.Name != "Fake AMD Instinct" || d.Arch != "gfx90a:sramecc+:xnack-" || d.Processor() != "gfx90a" || d.WarpSize != 64 ||
		d.Multiprocessors != 104 || d.TotalMemory != 64<<30 || d.PCIBusID != "0000:2a:00.0" || d.ClockKHz != 0 {
		t.Errorf("device %+v", d)
	}
	t.Run("Saxpy", TestRuntimeDeviceSaxpy)
	t.Run("Buffers", TestRuntimeDeviceBuffers)
	t.Run("Stream", TestRuntimeDeviceStream)
	if l, err := hipRuntime.Load(); err != nil || l.errorName(4242) != "hipErrorFake4242" {
		t.Errorf("hipGetErrorName fallback: %v", err)
	}
	h, err := dynlib.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(dynlib.Call(dynlib.Symbol(h, "fake_live_allocs"))); n != 0 {
		t.Errorf("%d device allocations still live", n)
	}

	// A Stream of several launches waits once, at the runtime: the fake counts every
	// hipStreamSynchronize and hipEventSynchronize.
	dev, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	k, err := dev.Compile(rtSaxpySource, "saxpy")
	if err != nil {
		t.Fatal(err)
	}
	y, _ := dev.NewBuffer(4 * 64)
	x, _ := dev.NewBuffer(4 * 64)
	s, err := dev.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := s.Launch(k, []View{y.Range(64*i, 64), x.Whole()}, []uint32{0, 16}, [3]uint32{1, 1, 1}, [3]uint32{16, 1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	syncs := int64(dynlib.Call(dynlib.Symbol(h, "fake_syncs")))
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	if got := int64(dynlib.Call(dynlib.Symbol(h, "fake_syncs"))) - syncs; got != 1 {
		t.Errorf("a stream of 4 launches waited %d times, want 1", got)
	}
}
