package conformance_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/kernels"
)

// TestConformance runs every cell on every backend available here at the backend's default
// schedule, as subtests named backend/op/type so -run filters work; the backends run in parallel
// (each its own device or toolchain), and one that is unavailable skips with its reason. With
// -short only the first type of each op runs (the main job and `onesource conform` run
// everything).
// sharedPrinter are the backends TestConformance runs one type per op on: HIP and MSL print the
// same kernels as CUDA through the same C-family printer with other spellings, and compiling
// every cell with hipcc and the MSL check doubled the test command's time on two cores. CUDA
// runs every cell (and TestConformanceSchedules every cell at two schedules); the main job
// (`onesource conform -schedules sample`) runs every cell on every backend.
var sharedPrinter = map[string]bool{"hip": true, "metal": true}

func TestConformance(t *testing.T) {
	cells := kernels.Cells()
	if len(cells) == 0 {
		t.Fatal("no cells registered")
	}
	for _, tg := range conformance.Targets() {
		t.Run(tg.Name(), func(t *testing.T) {
			t.Parallel()
			if err := tg.Open(); err != nil {
				t.Skipf("%s: %v", tg.Name(), err)
			}
			defer tg.Close()
			firstOfOp := map[string]bool{}
			for _, c := range cells {
				short := !firstOfOp[c.Op]
				firstOfOp[c.Op] = true
				t.Run(c.Op+"/"+c.Type.String(), func(t *testing.T) {
					if testing.Short() && !short {
						t.Skip("-short runs one type per op")
					}
					if sharedPrinter[tg.Name()] && !short {
						t.Skip("one type per op on " + tg.Name() + " (the CUDA column runs every type through the same printer; the main job runs all)")
					}
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
