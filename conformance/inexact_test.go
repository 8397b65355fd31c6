package conformance_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// cannedTarget is a Target that "runs" a kernel by returning fixed output bytes: it lets the
// judging of declared-inexact outputs be tested without a device.
type cannedTarget struct{ out [][][]byte }

func (c *cannedTarget) Name() string { return "canned" }
func (c *cannedTarget) Open() error  { return nil }
func (c *cannedTarget) Close()       {}
func (c *cannedTarget) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) conformance.Outcome {
	return conformance.Outcome{Levels: "EVX", Outputs: c.out}
}

// inexactCell has one case with two outputs: binding 1 exact, binding 2 declared inexact with a
// bound of 4 ULP.
func inexactCell(want1, want2 []byte) kernels.Cell {
	return kernels.Cell{Op: "inexact_test", Type: oracle.F32,
		Build: func(s kernels.Schedule) *dsl.Kernel {
			k := dsl.New("inexact_test", s.Lanes)
			k.Buffer("x", dsl.F32, dsl.Read)
			k.Buffer("a", dsl.F32, dsl.Write)
			k.Buffer("b", dsl.F32, dsl.Write)
			return k
		},
		Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
			return []kernels.Case{{Name: "c", Buffers: [][]byte{want1, want1, want2}, Groups: [3]uint32{1, 1, 1},
				Outputs: []int{1, 2}, Want: [][]byte{want1, want2}, Elem: []string{"f32", "f32"},
				Tol: []*kernels.Tolerance{nil, {Name: "exp", MaxULP: 4}}}}, nil
		}}
}

// TestInexactJudging checks that a declared-inexact output is measured in ULPs and never called
// bit-exact: within the bound the run passes as "inexact, max ULP N" (no B, no entry among the
// bit-exact runs), over it or with a NaN or infinity where the oracle has a number it fails, and
// an exact output next to it must still be bit-exact.
func TestInexactJudging(t *testing.T) {
	one := float32(1)
	up := func(x float32, n int) float32 {
		for ; n > 0; n-- {
			x = math.Nextafter32(x, 2*x+1)
		}
		return x
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	want1 := f32bytes(1, 2, 3)
	want2 := f32bytes(one, 10, nan)
	cases := []struct {
		name     string
		out1     []byte
		out2     []byte
		passed   bool
		maxULP   float64
		inReason string
	}{
		{"same bytes", want1, want2, true, 0, "inexact, max ULP 0"},
		{"within", want1, f32bytes(up(one, 3), 10, nan), true, 3, "inexact, max ULP 3 (exp 3 <= 4)"},
		{"over", want1, f32bytes(up(one, 5), 10, nan), false, 5, "over the declared bound"},
		{"nan for a number", want1, f32bytes(nan, 10, nan), false, math.Inf(1), "over the declared bound"},
		{"inf for max", want1, f32bytes(one, 10, nan), true, 0, ""},
		{"number for nan", want1, f32bytes(one, 10, 3), false, math.Inf(1), "over the declared bound"},
		{"exact output wrong", f32bytes(1, 2, math.Nextafter32(3, 4)), want2, false, 1, "not bit-exact"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w2 := want2
			if c.name == "inf for max" { // an infinity must meet the same infinity
				w2 = f32bytes(one, math.MaxFloat32, nan)
				c.out2 = f32bytes(one, inf, nan)
				c.passed, c.maxULP, c.inReason = false, math.Inf(1), "over the declared bound"
			}
			tg := &cannedTarget{out: [][][]byte{{c.out1, c.out2}}}
			r := conformance.Judge(tg, inexactCell(want1, w2), kernels.Schedule{Lanes: 8})
			if r.BitExact || strings.Contains(r.Levels, "B") {
				t.Errorf("an inexact cell was called bit-exact: %+v", r)
			}
			if !r.Inexact || r.Passed() != c.passed || r.MaxULP != c.maxULP || !strings.Contains(r.Reason, c.inReason) {
				t.Errorf("inexact %v passed %v max ULP %g reason %q; want passed %v, %g ULP, reason with %q", r.Inexact, r.Passed(), r.MaxULP, r.Reason, c.passed, c.maxULP, c.inReason)
			}
			if conformance.Failed([]conformance.Result{r}) == c.passed {
				t.Errorf("Failed = %v for a run that passed = %v", !c.passed, c.passed)
			}
			var m bytes.Buffer
			conformance.WriteMatrix(&m, []conformance.Result{r})
			ms := m.String()
			if c.passed && (!strings.Contains(ms, "canned\n") || !strings.Contains(ms, "EVX inexact, max ULP") ||
				!strings.Contains(ms, "inexact by declaration (a device's own functions; never bit-exact), within their bounds (1):\n  inexact_test/f32 on canned") ||
				!strings.Contains(ms, "0 of 1 (cell, backend, schedule) runs are bit-exact, 1 inexact") || strings.Contains(ms, "not bit-exact (")) {
				t.Errorf("matrix does not report the inexact pass:\n%s", ms)
			}
			if !c.passed && (!strings.Contains(ms, "not bit-exact (1):") || strings.Contains(ms, "within their bounds (")) {
				t.Errorf("matrix does not list the failing run:\n%s", ms)
			}
			if c.passed == false && r.Inexact && r.OutOfBounds == "" && c.inReason == "over the declared bound" && !strings.Contains(ms, "OVER-ULP-BOUND") {
				t.Errorf("matrix column does not say the run went over its bound:\n%s", ms)
			}
		})
	}
	// Inexact runs differ between backends by design: not an inconsistency.
	a := conformance.Result{Op: "m", Type: "f32", Backend: "vulkan", Ran: true, Inexact: true, Within: true, Digest: "aa"}
	b := a
	b.Backend, b.Digest = "cuda", "bb"
	if inc := conformance.Inconsistent([]conformance.Result{a, b}); len(inc) != 0 {
		t.Errorf("inexact runs reported inconsistent: %v", inc)
	}
}

func TestCompareULP(t *testing.T) {
	one := float32(1)
	for _, c := range []struct {
		name      string
		got, want []byte
		ulp       float64
	}{
		{"equal", f32bytes(1, 2), f32bytes(1, 2), 0},
		{"two ulp", f32bytes(math.Nextafter32(math.Nextafter32(one, 2), 2)), f32bytes(one), 2},
		{"signed zeros", f32bytes(float32(math.Copysign(0, -1))), f32bytes(0), 1},
		{"nan payloads", f32bytes(math.Float32frombits(0x7fc00001)), f32bytes(float32(math.NaN())), 0},
		{"inf vs max", f32bytes(float32(math.Inf(1))), f32bytes(math.MaxFloat32), math.Inf(1)},
		{"-inf vs inf", f32bytes(float32(math.Inf(-1))), f32bytes(float32(math.Inf(1))), math.Inf(1)},
		{"length", f32bytes(1), f32bytes(1, 2), math.Inf(1)},
	} {
		if u, _ := conformance.CompareULP(c.got, c.want); u != c.ulp {
			t.Errorf("%s: %g ULP, want %g", c.name, u, c.ulp)
		}
	}
}
