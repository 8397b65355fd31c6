package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/internal/dynlib"
	"github.com/onesource-go/onesource/internal/gpudrv"
)

// TestRuntimeAvailability checks the answer Available gives on this machine: nil, or an error
// that wraps ErrUnavailable and reads "unavailable: cuda: <reason>"; Devices and Open agree.
func TestRuntimeAvailability(t *testing.T) {
	err := Available()
	if err == nil {
		devs, err := Devices()
		if err != nil || len(devs) == 0 {
			t.Fatalf("Available() == nil but Devices() = %v, %v", devs, err)
		}
		for _, d := range devs {
			t.Logf("device %d: %s (%s), %d MiB", d.Index, d.Name, d.Arch, d.TotalMemory>>20)
		}
		return
	}
	t.Logf("Available: %v", err)
	if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), "unavailable: cuda: ") {
		t.Fatalf("Available() = %q: want an error wrapping ErrUnavailable starting %q", err, "unavailable: cuda: ")
	}
	if _, derr := Devices(); derr == nil {
		// The driver may list devices while NVRTC is missing; then Open must work too.
		d, oerr := Open(0)
		if oerr != nil {
			t.Fatalf("Devices() ok but Open(0): %v", oerr)
		}
		d.Close()
		return
	}
	if _, err := Open(0); err == nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open(0) = %v: want an unavailable error", err)
	}
}

// TestMissingDriverLibrary points ONESOURCE_CUDA_LIBRARY at a path that does not exist: every
// entry point reports unavailable, naming the path and the variable, and nothing panics.
func TestRuntimeMissingDriverLibrary(t *testing.T) {
	const path = "/nonexistent/onesource/libcuda.so.1"
	t.Setenv(LibraryEnv, path)
	checks := map[string]error{}
	checks["Available"] = Available()
	_, checks["Devices"] = Devices()
	_, checks["Open"] = Open(0)
	_, checks["Libraries"] = Libraries()
	for what, err := range checks {
		if err == nil {
			t.Fatalf("%s: no error with %s=%s", what, LibraryEnv, path)
		}
		msg := err.Error()
		if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(msg, "unavailable: cuda: ") ||
			!strings.Contains(msg, path) || !strings.Contains(msg, LibraryEnv) {
			t.Errorf("%s: %q: want an unavailable error naming %s and %s", what, msg, path, LibraryEnv)
		}
	}
	t.Logf("Available: %v", checks["Available"])
}

// TestNotADriverLibrary points ONESOURCE_CUDA_LIBRARY at a library that loads but is not a CUDA
// driver (the C library): the error names the missing functions.
func TestRuntimeNotADriverLibrary(t *testing.T) {
	if runtime.GOOS != "linux" || !dynlib.CanLoad {
		t.Skip("needs Linux's libc.so.6")
	}
	t.Setenv(LibraryEnv, "libc.so.6")
	err := Available()
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "is not a usable CUDA driver library") ||
		!strings.Contains(err.Error(), "cuInit") {
		t.Fatalf("Available() = %v: want an unavailable error saying libc.so.6 lacks cuInit", err)
	}
	t.Logf("%v", err)
}

// TestMissingNVRTC points ONESOURCE_NVRTC_LIBRARY at a missing path: CompileNVRTC reports
// unavailable, naming the path and the variable.
func TestRuntimeMissingNVRTC(t *testing.T) {
	const path = "/nonexistent/onesource/libnvrtc.so.12"
	t.Setenv(NVRTCLibraryEnv, path)
	_, err := CompileNVRTC(rtSaxpySource, "saxpy.cu", 90)
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), NVRTCLibraryEnv) {
		t.Fatalf("CompileNVRTC = %v: want an unavailable error naming %s and %s", err, path, NVRTCLibraryEnv)
	}
	if lib, lerr := Libraries(); lerr == nil && (lib.NVRTCError == nil || lib.NVRTCPath != "") {
		t.Fatalf("Libraries() = %+v: want NVRTCError set", lib)
	}
	t.Logf("%v", err)
}

// TestNVRTCCandidates checks the NVRTC search list: the environment variable alone when set,
// else the versioned sonames, newest first, then the toolkit folders that exist.
func TestRuntimeNVRTCCandidates(t *testing.T) {
	if !dynlib.CanLoad {
		t.Skip("no library loading on this platform")
	}
	t.Setenv(NVRTCLibraryEnv, "/x/libnvrtc.so.99")
	if got, src := nvrtcCandidates(); !slices.Equal(got, []string{"/x/libnvrtc.so.99"}) || src != NVRTCLibraryEnv {
		t.Fatalf("with %s set: %v (%s)", NVRTCLibraryEnv, got, src)
	}
	t.Setenv(NVRTCLibraryEnv, "")
	home := t.TempDir()
	dir := "lib64"
	if runtime.GOOS == "windows" {
		dir = "bin"
	}
	if err := os.Mkdir(filepath.Join(home, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_HOME", home)
	t.Setenv("CUDA_PATH", home)
	got, src := nvrtcCandidates()
	if src != "default" || !slices.Equal(got[:len(rtNVRTCNames)], rtNVRTCNames) {
		t.Fatalf("default candidates %v (%s): want %v first", got, src, rtNVRTCNames)
	}
	want := filepath.Join(home, dir, rtNVRTCNames[0])
	if !slices.Contains(got, want) {
		t.Fatalf("candidates %v lack %s", got, want)
	}
	if runtime.GOOS == "linux" {
		for _, n := range []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"} {
			if !slices.Contains(got, n) {
				t.Errorf("candidates lack %s", n)
			}
		}
	}
}

// rtFakeSymbols is a symbol table standing in for a library: name -> address.
type rtFakeSymbols map[string]uintptr

func (f rtFakeSymbols) lookup(name string) uintptr { return f[name] }

// TestResolveVersioned checks the run-time choice of versioned symbols: the _v2 name when the
// library has it, the plain name otherwise.
func TestRuntimeResolveVersioned(t *testing.T) {
	cases := []struct {
		table    rtFakeSymbols
		wantAddr uintptr
		wantName string
	}{
		{rtFakeSymbols{"cuMemAlloc_v2": 1, "cuMemAlloc": 2}, 1, "cuMemAlloc_v2"},
		{rtFakeSymbols{"cuMemAlloc": 2}, 2, "cuMemAlloc"},
		{rtFakeSymbols{"cuMemAlloc_v2": 1}, 1, "cuMemAlloc_v2"},
		{rtFakeSymbols{"cuMemFree": 3}, 0, ""},
	}
	for _, c := range cases {
		addr, name := dynlib.Resolve(c.table.lookup, "cuMemAlloc_v2", "cuMemAlloc")
		if addr != c.wantAddr || name != c.wantName {
			t.Errorf("%v: got %d %q, want %d %q", c.table, addr, name, c.wantAddr, c.wantName)
		}
	}
}

// TestDriverTable resolves the whole driver table against fake libraries: one with the _v2
// symbols (CUDA 4 and later) and one without, and one that lacks functions.
func TestRuntimeDriverTable(t *testing.T) {
	l := &gpudrv.Library{}
	plain, versioned := rtFakeSymbols{}, rtFakeSymbols{}
	addr := uintptr(1)
	for _, s := range l.Table(cudaSymbols) {
		names := s.Names
		if names == nil {
			names = []string{s.Fn}
		}
		plain[names[len(names)-1]] = addr
		for _, n := range names {
			versioned[n] = addr
		}
		addr++
	}
	got, err := dynlib.ResolveAll("fake", l.Table(cudaSymbols), versioned.lookup)
	if err != nil {
		t.Fatal(err)
	}
	for fn, want := range map[string]string{
		"cuMemAlloc": "cuMemAlloc_v2", "cuMemcpyHtoD": "cuMemcpyHtoD_v2", "cuDeviceTotalMem": "cuDeviceTotalMem_v2",
		"cuDevicePrimaryCtxRelease": "cuDevicePrimaryCtxRelease_v2", "cuLaunchKernel": "cuLaunchKernel",
		"cuCtxSynchronize": "cuCtxSynchronize", // cuCtxSynchronize_v2 takes a context: never chosen
	} {
		if got[fn] != want {
			t.Errorf("versioned library: %s resolved to %q, want %q", fn, got[fn], want)
		}
	}
	got, err = dynlib.ResolveAll("fake", l.Table(cudaSymbols), plain.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if got["cuMemAlloc"] != "cuMemAlloc" || l.Calls[gpudrv.CallAlloc] == 0 {
		t.Errorf("plain library: cuMemAlloc resolved to %q", got["cuMemAlloc"])
	}
	delete(plain, "cuInit")
	delete(plain, "cuFuncGetParamInfo") // optional
	delete(plain, "cuMemAlloc")
	_, err = dynlib.ResolveAll(`"libfake.so"`, l.Table(cudaSymbols), plain.lookup)
	if err == nil || !strings.Contains(err.Error(), "cuInit") || !strings.Contains(err.Error(), "cuMemAlloc_v2|cuMemAlloc") ||
		strings.Contains(err.Error(), "cuFuncGetParamInfo") {
		t.Fatalf("missing functions: %v", err)
	}
}

// TestResultNames checks that results become errors naming the call and the code.
func TestRuntimeResultNames(t *testing.T) {
	var l *cuDriver
	if err := l.check("cuInit", 0); err != nil {
		t.Fatalf("CUDA_SUCCESS: %v", err)
	}
	err := l.check("cuMemAlloc_v2", 2)
	var re *ResultError
	if !errors.As(err, &re) || re.Code != 2 || err.Error() != "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)" {
		t.Fatalf("got %v", err)
	}
	if got := l.check("cuInit", uintptr(uint32(4242))).Error(); got != "cuInit: CUresult(4242) (4242)" {
		t.Fatalf("unknown code: %q", got)
	}
	if got := l.check("cuLaunchKernel", 719).Error(); got != "cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED (719)" {
		t.Fatalf("got %q", got)
	}
	n := &nvrtcLib{}
	if got := n.check("nvrtcCompileProgram", 6).Error(); got != "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)" {
		t.Fatalf("got %q", got)
	}
	for code, name := range cuResultNames {
		if !strings.HasPrefix(name, "CUDA_") || (code == 0) != (name == "CUDA_SUCCESS") {
			t.Errorf("cuResultNames[%d] = %q", code, name)
		}
	}
	if FormatVersion(12080) != "12.8" || FormatVersion(13000) != "13.0" {
		t.Errorf("FormatVersion: %s %s", FormatVersion(12080), FormatVersion(13000))
	}
}

// TestNVRTCTarget checks what NVRTC is asked to build for a device.
func TestRuntimeNVRTCTarget(t *testing.T) {
	archs := []int{75, 80, 86, 87, 89, 90, 100, 120}
	cases := []struct {
		archs          []int
		sm             int
		cubin          bool
		target, format string
	}{
		{archs, 90, true, "sm_90", "cubin"},
		{archs, 90, false, "compute_90", "ptx"},
		{archs, 103, true, "compute_100", "ptx"}, // newer than NVRTC knows: PTX the driver compiles
		{nil, 90, true, "compute_90", "ptx"},     // NVRTC before 11.2 cannot list its architectures
	}
	for _, c := range cases {
		target, format, err := nvrtcTarget(c.archs, c.sm, c.cubin)
		if err != nil || target != c.target || format != c.format {
			t.Errorf("nvrtcTarget(%v, %d, %v) = %q %q %v, want %q %q", c.archs, c.sm, c.cubin, target, format, err, c.target, c.format)
		}
	}
	if _, _, err := nvrtcTarget(archs, 61, true); err == nil || !strings.Contains(err.Error(), "sm_75") {
		t.Errorf("a device older than NVRTC supports: %v", err)
	}
}

// The launch checks, the kernelParams layout and the buffer range checks are the shared
// device's (internal/gpudrv): its tests cover them with a fake driver, and TestRuntimeFakeDriver
// runs them through this package's driver calls.
