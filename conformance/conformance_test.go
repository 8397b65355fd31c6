package conformance_test

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/internal/testmode"
	"github.com/onesource-go/onesource/kernels"
)

// representative are the types that stand for the others of an op in the sampled runs (see
// internal/testmode): the float path, the legacy blocks, the K-quants (two scale layouts),
// the codebooks, the ternary and the fp4 formats. Each op also runs its first type.
var representative = []string{"f16", "q4_0", "q8_0", "q4_K", "q6_K", "iq4_xs", "tq2_0", "mxfp4"}

// sampled returns the cells of the sample that takes, of each op, its first type and the types
// among the first n representatives (with -short, the first type alone); with ONESOURCE_FULL=1
// (testmode.Full), every cell.
func sampled(n int) []kernels.Cell {
	all := kernels.Cells()
	if testmode.Full() {
		return all
	}
	if testing.Short() {
		n = 0 // -short: one type per op
	}
	var out []kernels.Cell
	seen := map[string]bool{}
	for _, c := range all {
		if !seen[c.Op] || slices.Contains(representative[:min(n, len(representative))], c.Type.String()) {
			out = append(out, c)
		}
		seen[c.Op] = true
	}
	return out
}

// defaultSample is how many representatives each backend's TestConformance runs per op: every
// cell on Vulkan (lavapipe: the SPIR-V path), on the cpu executor and as native CPU code, so
// every Format's code runs on all three; CUDA's host execution (a C++ compile a cell: the test's long pole) the
// representatives; HIP, MSL and WebGPU, which print the same lowered kernels through the same
// C-family printer or through the WGSL writer, one type per op. ONESOURCE_FULL=1 and the main
// job run every cell on every backend.
var defaultSample = map[string]int{"vulkan": -1, "cpu": -1, "native": -1, "cuda": len(representative), "hip": 0, "metal": 0, "webgpu": 0}

// TestConformance runs the sample of cells (defaultSample) on every backend available here at
// the backend's default schedule, as subtests named backend/op/type so -run filters work; the
// backends run in parallel (each its own device or toolchain), and one that is unavailable skips
// with its reason.
func TestConformance(t *testing.T) {
	if len(kernels.Cells()) == 0 {
		t.Fatal("no cells registered")
	}
	for _, tg := range conformance.Targets() {
		t.Run(tg.Name(), func(t *testing.T) {
			t.Parallel()
			if err := tg.Open(); err != nil {
				t.Skipf("%s: %v", tg.Name(), err)
			}
			defer tg.Close()
			cells := kernels.Cells()
			if n, ok := defaultSample[tg.Name()]; ok && n >= 0 {
				cells = sampled(n)
			}
			if len(cells) < len(kernels.Cells()) {
				t.Logf("%d of %d cells (a sample: ONESOURCE_FULL=1 runs every cell)", len(cells), len(kernels.Cells()))
			}
			for _, c := range cells {
				t.Run(c.Op+"/"+c.Type.String(), func(t *testing.T) {
					r := conformance.Judge(tg, c, c.DefaultScheduleFor(tg.Name(), conformance.TargetSubgroup(tg)))
					if !r.Passed() {
						t.Errorf("%s/%s on %s at %s [%s]: not bit-exact (max %g ULP, max rel %g): %s", r.Op, r.Type, r.Backend, r.Schedule, r.Levels, r.MaxULP, r.MaxRel, r.Reason)
					} else if r.Inexact {
						t.Logf("%s/%s on %s [%s]: %s", r.Op, r.Type, r.Backend, r.Levels, r.Reason)
					}
				})
			}
		})
	}
}

func f32bytes(x ...float32) []byte {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		u := math.Float32bits(v)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return b
}

// q81 is one q8_1 block with scale fields d and s and every quant q.
func q81(d, s uint16, q byte) []byte {
	b := []byte{byte(d), byte(d >> 8), byte(s), byte(s >> 8)}
	for i := 0; i < 32; i++ {
		b = append(b, q)
	}
	return b
}

func TestCompare(t *testing.T) {
	nan1 := math.Float32frombits(0x7fc00000)
	nan2 := math.Float32frombits(0x7fc00001)
	one := float32(1)
	next := math.Nextafter32(one, 2)
	for _, c := range []struct {
		name      string
		got, want []byte
		elem      string
		exact     bool
		ulp       float64
	}{
		{"equal", f32bytes(1, 2), f32bytes(1, 2), "f32", true, 0},
		{"nan payloads", f32bytes(nan1), f32bytes(nan2), "f32", true, 0},
		{"one ulp", f32bytes(next), f32bytes(one), "f32", false, 1},
		{"signed zero", f32bytes(float32(math.Copysign(0, -1))), f32bytes(0), "f32", false, 1},
		{"nan vs number", f32bytes(nan1), f32bytes(1), "f32", false, math.Inf(1)},
		{"bytes", []byte{1, 2, 3}, []byte{1, 2, 4}, "u8", false, math.Inf(1)},
		{"length", []byte{1}, []byte{1, 2}, "u8", false, math.Inf(1)},
		{"q8_1 NaN scales", q81(0x7e00, 0xfe00, 5), q81(0x7e00, 0x7e00, 5), "q8_1", true, 0},
		{"q8_1 quants", q81(0x3c00, 0, 5), q81(0x3c00, 0, 6), "q8_1", false, math.Inf(1)},
		{"q8_1 scale", q81(0x3c00, 0, 5), q81(0x3c01, 0, 5), "q8_1", false, math.Inf(1)},
	} {
		d := conformance.Compare(c.got, c.want, c.elem)
		if d.Exact != c.exact || d.ULP != c.ulp {
			t.Errorf("%s: exact %v ulp %g, want %v %g (%s)", c.name, d.Exact, d.ULP, c.exact, c.ulp, d.First)
		}
	}
}

func TestReports(t *testing.T) {
	results := []conformance.Result{
		{Op: "add", Type: "f32", Backend: "vulkan", Levels: "EVXB", BitExact: true, Ran: true},
		{Op: "add", Type: "f32", Backend: "cuda", Reason: "unavailable: no libcuda"},
		{Op: "softmax", Type: "f32", Backend: "vulkan", Levels: "EVX", Ran: true, MaxULP: 2, Reason: "not bit-exact: case x"},
	}
	var js bytes.Buffer
	if err := conformance.WriteJSON(&js, results); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 3 {
		t.Fatalf("JSON does not read back as 3 records: %v", err)
	}
	for _, key := range []string{"op", "type", "backend", "levels", "bitexact", "max_ulp", "reason"} {
		if _, ok := back[2][key]; !ok {
			t.Errorf("JSON record lacks %q", key)
		}
	}
	var m bytes.Buffer
	conformance.WriteMatrix(&m, results)
	s := m.String()
	for _, want := range []string{"add/f32", "EVXB", "unavailable", "softmax/f32 on vulkan", "1 of 2"} {
		if !strings.Contains(s, want) {
			t.Errorf("matrix lacks %q:\n%s", want, s)
		}
	}
	if !conformance.Failed(results) {
		t.Error("Failed misses the cell that is not bit-exact")
	}
}
