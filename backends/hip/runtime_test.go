package hip

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/internal/cachedir"
	"github.com/onesource-go/onesource/internal/dynlib"
	"github.com/onesource-go/onesource/internal/gpudrv"
)

// rtSaxpySource is a hand-written HIP kernel in the emitted kernels' calling convention: buffers
// first, then 32-bit scalars.
const rtSaxpySource = `
#include <hip/hip_runtime.h>
// y[i] = a*x[i] + y[i]: two roundings (no contraction) is the contract.
extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}
`

// rtRowsumSource sums each row of x (one block of 256 threads per row) in the canonical order:
// strided ascending per lane, then xor-butterfly strides 1..128, below 32 with __shfl_xor (the
// same on 32- and 64-wide wavefronts), above through shared memory.
const rtRowsumSource = `
#include <hip/hip_runtime.h>
#define T 256
extern "C" __global__ void rowsum(float* out, const float* x, unsigned n) {
	__shared__ float sh[T];
	unsigned t = threadIdx.x;
	const float* row = x + (unsigned long long)blockIdx.x * n;
	float v = 0.0f;
	for (unsigned i = t; i < n; i += T) v += row[i];
	for (int s = 1; s < 32; s <<= 1) v += __shfl_xor(v, s);
	for (unsigned s = 32; s < T; s <<= 1) {
		sh[t] = v;
		__syncthreads();
		v += sh[t ^ s];
		__syncthreads();
	}
	if (t == 0) out[blockIdx.x] = v;
}
`

// rtLibrary loads the HIP runtime library or skips the test with the reason.
func rtLibrary(t *testing.T) Library {
	t.Helper()
	lib, err := Libraries()
	if err != nil {
		if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), "unavailable: hip: ") {
			t.Fatalf("Libraries() = %v: want an unavailable error", err)
		}
		t.Skip(err)
	}
	return lib
}

// TestRuntimeLibraryLoads loads libamdhip64 and checks the symbols resolved at run time:
// hipGetDeviceProperties is hipGetDevicePropertiesR0600 exactly when the loaded library exports
// that name.
func TestRuntimeLibraryLoads(t *testing.T) {
	lib := rtLibrary(t)
	t.Logf("HIP runtime %s (%s), driver %d, hipInit: %v", lib.Path, FormatVersion(lib.RuntimeVersion), lib.DriverVersion, lib.InitError)
	t.Logf("HIPRTC %s %v (%v), comgr %s", lib.HIPRTCPath, lib.HIPRTCVersion, lib.HIPRTCError, lib.ComgrPath)
	l, err := hipRuntime.Load()
	if err != nil {
		t.Fatal(err)
	}
	if lib.Path == "" || !l.Has(gpudrv.CallInit) || !l.Has(gpudrv.CallLaunch) {
		t.Fatalf("library %+v without its functions", lib)
	}
	got := lib.Symbols["hipGetDeviceProperties"]
	want := "hipGetDeviceProperties"
	if dynlib.Symbol(l.Handle, "hipGetDevicePropertiesR0600") != 0 {
		want = "hipGetDevicePropertiesR0600"
	}
	if dynlib.Symbol(l.Handle, want) != 0 && got != want {
		t.Fatalf("hipGetDeviceProperties resolved to %q; the library exports %q", got, want)
	}
	t.Logf("hipGetDeviceProperties -> %s", got)
	if lib.Symbols["hipModuleLaunchKernel"] != "hipModuleLaunchKernel" {
		t.Fatalf("symbols: %v", lib.Symbols)
	}
}

// rtFakeSymbols is a symbol table standing in for a library: name -> address.
type rtFakeSymbols map[string]uintptr

func (f rtFakeSymbols) lookup(name string) uintptr { return f[name] }

// TestRuntimeResolveVersioned checks the run-time choice of hipGetDeviceProperties against fake
// libraries: the R0600 name when present (ROCm 6+, which exports both), the plain one otherwise
// (ROCm 5), and nothing (no error: the function is optional) when neither is there.
func TestRuntimeResolveVersioned(t *testing.T) {
	cases := []struct {
		table    rtFakeSymbols
		wantAddr uintptr
		wantName string
	}{
		{rtFakeSymbols{"hipGetDevicePropertiesR0600": 1, "hipGetDeviceProperties": 2}, 1, "hipGetDevicePropertiesR0600"},
		{rtFakeSymbols{"hipGetDeviceProperties": 2}, 2, "hipGetDeviceProperties"},
		{rtFakeSymbols{"hipGetDevicePropertiesR0600": 1}, 1, "hipGetDevicePropertiesR0600"},
		{rtFakeSymbols{"hipInit": 3}, 0, ""},
	}
	for _, c := range cases {
		addr, name := dynlib.Resolve(c.table.lookup, hipPropertiesNames...)
		if addr != c.wantAddr || name != c.wantName {
			t.Errorf("%v: got %d %q, want %d %q", c.table, addr, name, c.wantAddr, c.wantName)
		}
		// The same through the library's whole table.
		l := &gpudrv.Library{}
		full := rtFakeSymbols{}
		for i, s := range l.Table(hipSymbols) {
			if s.Names == nil {
				full[s.Fn] = uintptr(100 + i)
			} else if s.Fn != "hipGetDeviceProperties" {
				full[s.Names[len(s.Names)-1]] = uintptr(100 + i)
			}
		}
		for k, v := range c.table {
			full[k] = v
		}
		syms, err := dynlib.ResolveAll("fake", l.Table(hipSymbols), full.lookup)
		if err != nil {
			t.Fatal(err)
		}
		if syms["hipGetDeviceProperties"] != c.wantName || l.Calls[hipGetDeviceProperties] != c.wantAddr {
			t.Errorf("%v: table resolved %q at %d", c.table, syms["hipGetDeviceProperties"], l.Calls[hipGetDeviceProperties])
		}
	}
	l := &gpudrv.Library{}
	_, err := dynlib.ResolveAll(`"libfake.so"`, l.Table(hipSymbols), rtFakeSymbols{"hipGetDeviceCount": 1}.lookup)
	if err == nil || !strings.Contains(err.Error(), "hipInit") || strings.Contains(err.Error(), "hipGetDeviceCount") ||
		strings.Contains(err.Error(), "hipGetDeviceProperties") {
		t.Fatalf("missing functions: %v", err)
	}
}

// TestRuntimeNoDevice checks that, with the library present and no AMD GPU, every entry point
// answers "unavailable: hip: no HIP device ..." and nothing crashes.
func TestRuntimeNoDevice(t *testing.T) {
	lib := rtLibrary(t)
	err := Available()
	if err == nil {
		t.Skip("this machine has a HIP device")
	}
	t.Logf("Available: %v", err)
	if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), "unavailable: hip: ") {
		t.Fatalf("Available() = %v", err)
	}
	if lib.InitError == nil {
		if _, derr := Devices(); derr == nil {
			t.Skip("HIP lists devices; Available failed for another reason")
		}
	}
	if !strings.Contains(err.Error(), "no HIP device") {
		t.Fatalf("Available() = %q: want it to say there is no HIP device", err)
	}
	if _, err := Devices(); err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no HIP device") {
		t.Fatalf("Devices() = %v", err)
	}
	if _, err := Open(0); err == nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open(0) = %v", err)
	}
}

// TestRuntimeMissingLibrary points ONESOURCE_HIP_LIBRARY at a path that does not exist.
func TestRuntimeMissingLibrary(t *testing.T) {
	const path = "/nonexistent/onesource/libamdhip64.so"
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
		if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(msg, "unavailable: hip: ") || !strings.Contains(msg, path) || !strings.Contains(msg, LibraryEnv) {
			t.Errorf("%s: %q: want an unavailable error naming %s and %s", what, msg, path, LibraryEnv)
		}
	}
	t.Logf("Available: %v", checks["Available"])
	t.Setenv(HIPRTCLibraryEnv, "/nonexistent/onesource/libhiprtc.so")
	if _, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", "gfx90a"); err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), HIPRTCLibraryEnv) {
		t.Fatalf("CompileHIPRTC with %s missing: %v", HIPRTCLibraryEnv, err)
	}
}

// TestRuntimeNotAHIPLibrary points ONESOURCE_HIP_LIBRARY at the C library.
func TestRuntimeNotAHIPLibrary(t *testing.T) {
	if runtime.GOOS != "linux" || !dynlib.CanLoad {
		t.Skip("needs Linux's libc.so.6")
	}
	t.Setenv(LibraryEnv, "libc.so.6")
	err := Available()
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "is not a usable HIP runtime library") || !strings.Contains(err.Error(), "hipInit") {
		t.Fatalf("Available() = %v", err)
	}
}

// rtHIPRTC loads HIPRTC or skips the test with the reason.
func rtHIPRTC(t *testing.T) *hiprtcLib {
	t.Helper()
	n, err := hiprtc.Load()
	if err != nil {
		t.Skip(err)
	}
	return n
}

// rtFMA matches AMDGPU fused multiply-add instructions.
var rtFMA = regexp.MustCompile(`\bv_(fma|fmac|mad|mac|pk_fma)\w*_f32`)

// TestRuntimeHIPRTCCompile compiles saxpy with HIPRTC (no GPU needed) for CDNA2 and RDNA2 and,
// where llvm-objdump can disassemble the code objects, checks that a*x+y stays a multiply and an
// add (-ffp-contract=off) while the same source with contraction allowed becomes an FMA: the
// check bites.
func TestRuntimeHIPRTCCompile(t *testing.T) {
	n := rtHIPRTC(t)
	objdump, _ := exec.LookPath("llvm-objdump-16")
	if objdump == "" {
		objdump, _ = exec.LookPath("llvm-objdump")
	}
	disasm := func(target string, code []byte) string {
		if objdump == "" {
			return ""
		}
		f := t.TempDir() + "/k.co"
		if err := os.WriteFile(f, code, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(objdump, "-d", "--mcpu="+strings.SplitN(target, ":", 2)[0], f).CombinedOutput()
		if err != nil {
			t.Logf("%s cannot disassemble: %v", objdump, err)
			return ""
		}
		return string(out)
	}
	for _, target := range []string{"gfx90a", "gfx1030"} {
		co, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", target)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if co.Target != target || !slices.Contains(co.Options, "-ffp-contract=off") || !slices.Contains(co.Options, "--offload-arch="+target) {
			t.Fatalf("%s: %+v", target, co.Options)
		}
		t.Logf("%s: %d-byte code object from %s", target, len(co.Code), n.Path)
		asm := disasm(target, co.Code)
		if asm == "" {
			continue
		}
		if rtFMA.MatchString(asm) || !strings.Contains(asm, "v_mul_f32") || !strings.Contains(asm, "v_add_f32") {
			t.Fatalf("%s: saxpy with -ffp-contract=off is not a multiply and an add:\n%s", target, asm)
		}
		fused, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", target, "-ffp-contract=fast")
		if err != nil {
			t.Fatal(err)
		}
		fasm := disasm(target, fused.Code)
		if !rtFMA.MatchString(fasm) {
			t.Fatalf("%s: with -ffp-contract=fast saxpy has no FMA, so the check above proves nothing:\n%s", target, fasm)
		}
		t.Logf("%s: -ffp-contract=off gives v_mul_f32 + v_add_f32; -ffp-contract=fast gives %s", target, rtFMA.FindString(fasm))
	}
	co, err := CompileHIPRTC(rtRowsumSource, "rowsum.hip", "gfx90a")
	if err != nil {
		t.Fatalf("rowsum: %v", err)
	}
	t.Logf("rowsum: %d bytes", len(co.Code))
}

// TestRuntimeHIPRTCCompileError checks that a failed compile carries HIPRTC's log.
func TestRuntimeHIPRTCCompileError(t *testing.T) {
	rtHIPRTC(t)
	_, err := CompileHIPRTC(`extern "C" __global__ void broken(float* y) { y[0] = undeclared_thing; }`, "broken.hip", "gfx90a")
	var ce *CompileError
	var re *ResultError
	if !errors.As(err, &ce) || !errors.As(err, &re) || re.Code != 6 || !strings.Contains(ce.Log, "undeclared_thing") {
		t.Fatalf("got %v: want a *CompileError (HIPRTC_ERROR_COMPILATION) whose log names undeclared_thing", err)
	}
	t.Logf("%v", err)
}

// TestRuntimeHIPRTCBadTarget checks that targets HIPRTC cannot build for are refused before
// HIPRTC sees them (ROCm 5.2's HIPRTC aborts the process on them).
func TestRuntimeHIPRTCBadTarget(t *testing.T) {
	n := rtHIPRTC(t)
	if _, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", "sm_90"); err == nil || !strings.Contains(err.Error(), "not an AMDGPU target ID") {
		t.Fatalf("sm_90: %v", err)
	}
	if n.comgr == nil {
		t.Skip("libamd_comgr cannot be loaded: unsupported targets cannot be checked safely")
	}
	procs := n.comgr.processors()
	t.Logf("%s supports %v", n.comgr.path, procs)
	if !slices.Contains(procs, "gfx90a") {
		t.Fatalf("processors %v lack gfx90a", procs)
	}
	for _, target := range []string{"gfx9999", "gfx1030:xnack-", "gfx90a:nosuchfeature+"} {
		_, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", target)
		if err == nil || !strings.Contains(err.Error(), "does not support the target") {
			t.Errorf("%s: %v", target, err)
		}
	}
	if !n.comgr.valid("gfx90a:sramecc+:xnack-") {
		t.Error("gfx90a:sramecc+:xnack- refused")
	}
}

// TestRuntimeFindArch checks the layout-free search for gcnArchName in hipDeviceProp_t bytes.
func TestRuntimeFindArch(t *testing.T) {
	props := func(name string, at int, arch string) []byte {
		b := make([]byte, rtPropsSize)
		copy(b, name)
		copy(b[at:], arch)
		b[300] = 0x40 // stray non-zero bytes of other fields
		b[301] = 'g'
		return b
	}
	cases := []struct {
		props []byte
		want  string
	}{
		{props("AMD Instinct MI210", 396, "gfx90a:sramecc+:xnack-"), "gfx90a:sramecc+:xnack-"}, // ROCm 5 offset
		{props("AMD Radeon RX 6800", 1160, "gfx1030"), "gfx1030"},                              // an R0600-like offset
		{props("gfx1035 APU", 1200, "gfx1035"), "gfx1035"},
		{props("AMD Radeon", 396, "gfx11"), ""}, // too short to be a processor
		{make([]byte, rtPropsSize), ""},
	}
	for _, c := range cases {
		if got := rtFindArch(c.props); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if (DeviceInfo{Arch: "gfx90a:sramecc+:xnack-"}).Processor() != "gfx90a" {
		t.Error("Processor")
	}
}

// TestRuntimeResultNames checks that results become errors naming the call and the code.
func TestRuntimeResultNames(t *testing.T) {
	var l *hipLib
	if err := gpudrv.Check("hipInit", 0, l.errorName); err != nil {
		t.Fatal(err)
	}
	if got := gpudrv.Check("hipGetDeviceCount", 100, l.errorName).Error(); got != "hipGetDeviceCount: hipErrorNoDevice (100)" {
		t.Fatalf("got %q", got)
	}
	if got := gpudrv.Check("hipInit", 4242, l.errorName).Error(); got != "hipInit: hipError_t(4242) (4242)" {
		t.Fatalf("got %q", got)
	}
	n := &hiprtcLib{}
	if got := gpudrv.Check("hiprtcCompileProgram", 6, n.resultName).Error(); got != "hiprtcCompileProgram: HIPRTC_ERROR_COMPILATION (6)" {
		t.Fatalf("got %q", got)
	}
	if FormatVersion(50221153) != "5.2.21153" || FormatVersion(60443483) != "6.4.43483" {
		t.Errorf("FormatVersion: %s %s", FormatVersion(50221153), FormatVersion(60443483))
	}
	if lib, err := hipRuntime.Load(); err == nil && lib.Has(hipGetErrorName) {
		// The library names codes the table lacks.
		if got := lib.errorName(1053); got != "hipErrorRuntimeOther" {
			t.Logf("1053 -> %q", got)
		}
	}
}

// TestRuntimeCandidates checks the library search lists.
func TestRuntimeCandidates(t *testing.T) {
	if !dynlib.CanLoad {
		t.Skip("no library loading on this platform")
	}
	t.Setenv(LibraryEnv, "/x/libamdhip64.so.9")
	if got, src := dynlib.Candidates(LibraryEnv, rtHIPNames, rtROCmLibDirs); !slices.Equal(got, []string{"/x/libamdhip64.so.9"}) || src != LibraryEnv {
		t.Fatalf("%v %s", got, src)
	}
	t.Setenv(LibraryEnv, "")
	t.Setenv("ROCM_PATH", "")
	t.Setenv("HIP_PATH", "")
	got, _ := dynlib.Candidates(LibraryEnv, rtHIPNames, rtROCmLibDirs)
	if !slices.Equal(got[:len(rtHIPNames)], rtHIPNames) {
		t.Fatalf("%v", got)
	}
	if runtime.GOOS == "linux" {
		for _, n := range []string{"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"} {
			if !slices.Contains(got, n) {
				t.Errorf("candidates lack %s", n)
			}
		}
		rtc, _ := dynlib.Candidates(HIPRTCLibraryEnv, rtHIPRTCNames, rtROCmLibDirs)
		for _, n := range []string{"libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5"} {
			if !slices.Contains(rtc, n) {
				t.Errorf("HIPRTC candidates lack %s", n)
			}
		}
	}
}

// The launch checks are the shared device's (internal/gpudrv): its tests cover them with a fake
// driver, and TestRuntimeFakeRuntime runs them through this package's runtime calls.

// TestRuntimeHIPRTCCompileCached: a second compile of the same source, target and options is
// read back from the rtc cache, byte for byte, without compiling; another target compiles; with
// the caches off every compile runs.
func TestRuntimeHIPRTCCompileCached(t *testing.T) {
	rtHIPRTC(t)
	t.Setenv(cachedir.Env, t.TempDir())
	built0, cached0 := gpudrv.CompileStats()
	first, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", "gfx90a")
	if err != nil {
		t.Fatal(err)
	}
	again, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", "gfx90a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", "gfx1030"); err != nil {
		t.Fatal(err)
	}
	built, cached := gpudrv.CompileStats()
	if built-built0 != 2 || cached-cached0 != 1 || !bytes.Equal(first.Code, again.Code) {
		t.Errorf("three compiles, two inputs: %d compiled, %d from the cache (want 2 and 1); same code %v", built-built0, cached-cached0, bytes.Equal(first.Code, again.Code))
	}
	t.Setenv(cachedir.Env, cachedir.Off)
	if _, err := CompileHIPRTC(rtSaxpySource, "saxpy.hip", "gfx90a"); err != nil {
		t.Fatal(err)
	}
	if b, c := gpudrv.CompileStats(); b-built != 1 || c != cached {
		t.Errorf("caches off: %d compiled, %d from the cache, want 1 and 0", b-built, c-cached)
	}
}
