package kernels_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// TestCellSchedules checks every cell's schedule space: the widths come from the oracle's table,
// every schedule fits the cell and builds, the sample has at least four lane counts from 8 up to
// the widest (W, for a cell with a reduction) and both layouts where a lane holds several
// virtual lanes, and each backend's default fits.
func TestCellSchedules(t *testing.T) {
	for _, c := range kernels.Cells() {
		if w, ok := oracle.Width(c.Op, c.Type); ok != (c.Width > 0) || ok && w != c.Width {
			t.Errorf("%s: Width %d, the oracle's table says %d (%v)", c.Name(), c.Width, w, ok)
		}
		space := c.Schedules()
		if len(space) == 0 {
			t.Errorf("%s: empty schedule space", c.Name())
		}
		for _, s := range space {
			if !c.Fits(s) {
				t.Errorf("%s: %s is in its space but does not fit", c.Name(), s)
			}
		}
		sample := c.SampleSchedules()
		var lanes []int
		layouts := map[dsl.Layout]bool{}
		for _, s := range sample {
			if !slices.Contains(space, s) {
				t.Errorf("%s: sample schedule %s is not in the space", c.Name(), s)
			}
			if !slices.Contains(lanes, s.Lanes) {
				lanes = append(lanes, s.Lanes)
			}
			layouts[s.Layout] = true
		}
		widest := space[len(space)-1].Lanes
		if len(lanes) < 4 || lanes[0] != 8 || lanes[len(lanes)-1] != widest {
			t.Errorf("%s: sample lane counts %v: want at least 4 from 8 to %d", c.Name(), lanes, widest)
		}
		if c.Width > 8 && (!layouts[dsl.Blocked] || !layouts[dsl.Strided]) {
			t.Errorf("%s: the sample %v does not cover both layouts", c.Name(), sample)
		}
		rows := map[int]bool{}
		for _, s := range sample {
			rows[s.RowsPerGroup()] = true
		}
		for r := 1; r <= c.MaxRows; r *= 2 {
			if !rows[r] {
				t.Errorf("%s: the sample %v has no schedule with %d rows per workgroup", c.Name(), sample, r)
			}
		}
		if c.Fits(kernels.Schedule{Lanes: 8, Rows: 2 * max(1, c.MaxRows)}) {
			t.Errorf("%s: more rows per workgroup than MaxRows %d fit", c.Name(), c.MaxRows)
		}
		for _, b := range []string{"vulkan", "cuda", "hip", "metal"} {
			if s := c.DefaultSchedule(b); !c.Fits(s) {
				t.Errorf("%s: default schedule %s on %s does not fit", c.Name(), s, b)
			}
		}
		if c.Width > 0 && c.Fits(kernels.Schedule{Lanes: 2 * c.Width}) {
			t.Errorf("%s: a workgroup wider than W = %d fits", c.Name(), c.Width)
		}
	}
}

// TestCasesSameAtEverySchedule checks the rule that makes "the same bytes at every schedule" a
// checkable claim: a cell's conformance inputs and the oracle's bytes do not depend on the
// schedule (only the dispatch may), at every sample schedule and every backend's default.
func TestCasesSameAtEverySchedule(t *testing.T) {
	for _, c := range kernels.Cells() {
		scheds := c.SampleSchedules()
		for _, b := range []string{"vulkan", "cuda"} {
			scheds = append(scheds, c.DefaultSchedule(b))
		}
		var ref []kernels.Case
		for i, s := range scheds {
			cases, err := c.Cases(s)
			if err != nil {
				t.Fatalf("%s at %s: %v", c.Name(), s, err)
			}
			if i == 0 {
				ref = cases
				continue
			}
			if d := caseDiff(ref, cases); d != "" {
				t.Errorf("%s: the cases at %s differ from those at %s: %s", c.Name(), s, scheds[0], d)
			}
		}
	}
}

func caseDiff(a, b []kernels.Case) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d cases, then %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		switch {
		case x.Name != y.Name:
			return fmt.Sprintf("case %d named %q, then %q", i, x.Name, y.Name)
		case !slices.Equal(x.Params, y.Params):
			return fmt.Sprintf("case %s: parameters differ", x.Name)
		case !slices.Equal(x.Outputs, y.Outputs) || !slices.Equal(x.Elem, y.Elem):
			return fmt.Sprintf("case %s: outputs differ", x.Name)
		case !slices.EqualFunc(x.Buffers, y.Buffers, bytes.Equal):
			return fmt.Sprintf("case %s: inputs differ", x.Name)
		case !slices.EqualFunc(x.Want, y.Want, bytes.Equal):
			return fmt.Sprintf("case %s: the oracle's bytes differ", x.Name)
		}
	}
	return ""
}

func TestParseSchedule(t *testing.T) {
	for _, s := range []kernels.Schedule{{Lanes: 8}, {Lanes: 64, Layout: dsl.Strided}, {Lanes: 256}, {Lanes: 32, Rows: 2}, {Lanes: 16, Layout: dsl.Strided, Rows: 4}} {
		got, err := kernels.ParseSchedule(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSchedule(%q) = %v, %v", s.String(), got, err)
		}
	}
	for text, want := range map[string]kernels.Schedule{
		"lanes=32":                {Lanes: 32},
		"lanes=8,rows=4":          {Lanes: 8, Rows: 4},
		"lanes=8,strided,rows=1":  {Lanes: 8, Layout: dsl.Strided},
		"lanes=16,blocked,rows=2": {Lanes: 16, Rows: 2},
	} {
		if s, err := kernels.ParseSchedule(text); err != nil || s != want {
			t.Errorf("%s: %v, %v; want %v", text, s, err, want)
		}
	}
	for _, bad := range []string{"", "lanes=0", "lanes=12", "lanes=8,diagonal", "threads=8", "lanes=8,blocked,x",
		"lanes=8,rows=3", "lanes=8,rows=0", "lanes=8,rows=2,blocked", "lanes=8,blocked,rows=2,rows=2"} {
		if _, err := kernels.ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) accepted", bad)
		}
	}
}
