package metal_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var xcrunOnce sync.Once

// check runs the host check on src (skipping when clang++ is missing) and Apple's compiler
// where installed.
func check(t *testing.T, name, src string) {
	t.Helper()
	r, err := metal.HostCheck(src)
	if errors.Is(err, cfamily.ErrNoTool) {
		t.Skipf("clang++ not installed: %v", err)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, cfamily.Numbered(src))
	}
	if !strings.Contains(r.Label, metal.HostLabel) {
		t.Errorf("host check result not labelled: %q", r.Label)
	}
	if _, err := metal.CompileXcrun(src); errors.Is(err, cfamily.ErrNoTool) {
		xcrunOnce.Do(func() {
			t.Logf("Apple's Metal compiler not available (%v): MSL checked by the %s only", err, metal.HostLabel)
		})
	} else if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, cfamily.Numbered(src))
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		w, g := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		i := 0
		for i < len(w) && i < len(g) && w[i] == g[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Errorf("%s differs from the emitted text at line %d (go test -update rewrites it):\nwant: %s\ngot:  %s", path, i+1, line(w), line(g))
	}
}

func TestEmitExamples(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			src, err := metal.Emit(k)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", k.Name+".metal"), src)
			if again, err := metal.Emit(k); err != nil || again != src {
				t.Fatalf("emitting twice differs (err %v)", err)
			}
			check(t, k.Name, src)
		})
	}
}

func TestEmitCases(t *testing.T) {
	for _, c := range irtest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			k, err := c.Kernel()
			if err != nil {
				t.Fatal(err)
			}
			src, err := metal.Emit(k)
			if c.F64 {
				var ie *ir.Error
				if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "f64") {
					t.Fatalf("f64 kernel: got %v, want an error about f64 at a source position", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Emit: %v\n%s", err, k)
			}
			check(t, c.Name, src)
			// Verified IR the lowering did not touch prints too (the dot needs lowering).
			if raw, err := cfamily.Print(k, metal.Dialect); err == nil {
				if raw != src {
					check(t, c.Name+" (unlowered)", raw)
				}
			} else if !strings.Contains(err.Error(), "dot_i8x4") {
				t.Fatalf("Print: %v", err)
			}
		})
	}
}

func TestEmitReductions(t *testing.T) {
	ks, err := irtest.Reductions()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			src, err := metal.Emit(k)
			if err != nil {
				t.Fatal(err)
			}
			check(t, k.Name, src)
		})
	}
}

// badKernels are hand-written MSL kernels with address-space mistakes the host check must
// reject, each with its corrected twin that must pass (so the failure is the mistake's).
var badKernels = []struct{ name, bad, good string }{
	{"threadgroup pointer passed as device pointer", "put(tile, lidx, 1.0f);", "put(out, lidx, tile[lidx]);"},
	{"device pointer cast to a threadgroup atomic", "atomic_fetch_add_explicit((threadgroup atomic_uint*)&counts[0], 1u, memory_order_relaxed);",
		"atomic_fetch_add_explicit((device atomic_uint*)&counts[0], 1u, memory_order_relaxed);"},
	{"constant pointer as device pointer", "device const uint* q = &params.n; out[0] = float(*q);", "constant uint* q = &params.n; out[0] = float(*q);"},
	{"device pointer into a threadgroup variable", "threadgroup float* t = out; t[0] = 1.0f;", "threadgroup float* t = tile; t[0] = 1.0f;"},
}

func mslWith(body string) string {
	return `#include <metal_stdlib>
using namespace metal;
struct bad_params { uint n; };
static inline void put(device float* p, uint i, float v) { p[i] = v; }
kernel void bad(device float* out [[buffer(0)]], device uint* counts [[buffer(1)]], constant bad_params& params [[buffer(2)]],
	uint lidx [[thread_index_in_threadgroup]]) {
	threadgroup float tile[64];
	tile[lidx] = 0.0f;
	threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
	` + body + `
}
`
}

// TestHostCheckBites proves the host check catches address-space mix-ups.
func TestHostCheckBites(t *testing.T) {
	for _, c := range badKernels {
		t.Run(c.name, func(t *testing.T) {
			_, err := metal.HostCheck(mslWith(c.good))
			if errors.Is(err, cfamily.ErrNoTool) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatalf("the corrected kernel fails: %v", err)
			}
			_, err = metal.HostCheck(mslWith(c.bad))
			if err == nil {
				t.Fatalf("the host check accepts: %s", c.bad)
			}
			msg := err.Error()
			if !strings.Contains(msg, metal.HostLabel) || !strings.Contains(msg, "address space") && !strings.Contains(msg, "no matching function") && !strings.Contains(msg, "__") {
				t.Errorf("error does not name the host check and the mismatch: %v", err)
			}
		})
	}
}

func TestHeader(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	src, err := metal.Emit(ks[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Code generated by onesource from DSL kernel saxpy (saxpy.go:",
		"// Backend: metal. Lowering target: ",
		"fast math off and contraction off",
		"#include <metal_stdlib>\nusing namespace metal;\n",
		"struct saxpy_params {\n\tfloat a;\n\tuint n;\n};",
		"kernel void saxpy(\n\tconst device float* x [[buffer(0)]],\n\tdevice float* y [[buffer(1)]],\n\tconstant saxpy_params& params [[buffer(2)]],\n" +
			"\tuint3 gid [[thread_position_in_grid]],\n\tuint3 lid [[thread_position_in_threadgroup]],\n\tuint3 wgid [[threadgroup_position_in_grid]],\n" +
			"\tuint3 nwg [[threadgroups_per_grid]],\n\tuint lidx [[thread_index_in_threadgroup]],\n\tuint sgsize [[threads_per_simdgroup]],\n" +
			"\tuint lane [[thread_index_in_simdgroup]],\n\tuint sgid [[simdgroup_index_in_threadgroup]]) {",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("missing %q in:\n%s", want, src)
		}
	}
}
