package kernels

import (
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// TestAddRefuses: Add refuses, with an error naming the cell and what is wrong (never a panic),
// an incomplete cell, a cell already registered, and a workload whose variables are not well
// formed; none of them is registered.
func TestAddRefuses(t *testing.T) {
	build := func(s Schedule) *dsl.Kernel { return dsl.New("x", s.Lanes) }
	cases := func(Schedule) ([]Case, error) { return nil, nil }
	wl := func(vars ...ShapeVar) *Workload {
		return &Workload{Vars: vars, Case: func(map[string]float64, Schedule) (Case, error) { return Case{}, nil }}
	}
	rows := ShapeVar{Name: "rows", Kind: Size, Default: 64}
	before := len(Cells())
	for _, tc := range []struct {
		c    Cell
		says string
	}{
		{Cell{Op: "", Type: oracle.F32, Build: build, Cases: cases}, "op \"\" is empty"},
		{Cell{Op: "a/b", Type: oracle.F32, Build: build, Cases: cases}, "holds '/'"},
		{Cell{Op: "user_op", Type: oracle.F32, Cases: cases}, "no Build"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build}, "no Cases"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Width: 96}, "not 0 or a power of two"},
		{Cell{Op: "rms_norm", Type: oracle.F32, Build: build, Cases: cases}, "registered twice"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Workload: &Workload{Vars: []ShapeVar{rows}}}, "no Case"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Workload: wl(ShapeVar{Name: "eps", Kind: Real, Default: 1e-5})}, "no variable of kind Size"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Workload: wl(rows, rows)}, "rows declared twice"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Workload: wl(rows, ShapeVar{Name: "seed", Kind: Index})}, "seed is reserved"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Workload: wl(rows, ShapeVar{Name: "bytes_x", Kind: Size, Default: 4})}, "bytes_x is reserved"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Workload: wl(ShapeVar{Name: "rows", Kind: Size, Default: 0})}, "must be a positive integer"},
		{Cell{Op: "user_op", Type: oracle.F32, Build: build, Cases: cases, Workload: wl(ShapeVar{Name: "2x", Kind: Size, Default: 1})}, "not an identifier"},
	} {
		err := Add(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Add(%s): %v; want an error saying %q", tc.c.Name(), err, tc.says)
		}
	}
	if n := len(Cells()); n != before {
		t.Errorf("%d cells after the refused Adds, %d before", n, before)
	}
	if got := wl(rows, ShapeVar{Name: "eps", Kind: Real}, ShapeVar{Name: "n", Kind: Size, Default: 8}).Sizes(); strings.Join(got, ",") != "rows,n" {
		t.Errorf("Sizes() = %v, want the sizes in order: rows,n", got)
	}
}
