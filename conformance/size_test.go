package conformance_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/testmode"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

// maxSizeRatio bounds the SPIR-V a cell emits at any schedule against its default schedule's,
// and a checked module against the unchecked one at the same schedule. The reasons a module
// grows with the schedule, and why 4x holds them:
//   - rows per workgroup (Schedule.Rows = R): the term's code is emitted once per row (the rows
//     share the loads of the activations, not the decode of their weights): rows=4 is 3.2-3.7x
//     the one-row module;
//   - a strided layout's slots each cross invocations (one butterfly per slot): a few percent.
//   - checked mode adds a fixed sequence per checked access (compare, select, the record: no
//     branch): up to 3.4x for matvec_q8/q4_K, whose loop is mostly loads.
//
// One stated exception (sizeExceptions): the float-path matvec, whose term is one load and one
// product, so that its module is mostly its reductions' butterflies, of which a strided schedule
// has one per slot and row (rows=4 at 64 lanes: 16, against one at its default of 8 lanes): up to
// 4.4x, bounded at 5.
//
// Code that grows past it with the schedule (an unrolled loop, a body copied per slot) shows up
// here as a size, long before it shows up as a pipeline that takes a minute to compile: the
// checked matvec_q8 modules of 116 s were 3.4x, their compile time 170x.
const maxSizeRatio = 4

// sizeExceptions are the cells allowed more than maxSizeRatio against their default schedule,
// with the bound that holds them (the reason is above maxSizeRatio).
var sizeExceptions = map[string]float64{"matvec/f32": 5, "matvec/f16": 5, "matvec/bf16": 5}

// TestEmittedSizeBounded: no cell emits more than maxSizeRatio times the SPIR-V of its default
// schedule at any of its sample schedules (every schedule of its space with ONESOURCE_FULL=1),
// nor, checked, more than maxSizeRatio times its unchecked module. Lowered for lavapipe's
// capabilities (subgroups of 8, packed dot, f16).
func TestEmittedSizeBounded(t *testing.T) {
	caps := lower.Caps{DotI8x4: true, Float16: true, SubgroupSize: 8}
	words := func(c kernels.Cell, s kernels.Schedule, checked bool) int {
		t.Helper()
		k, err := c.Build(s).Build()
		if err != nil {
			t.Fatalf("%s at %s: %v", c.Name(), s, err)
		}
		low, err := lower.Run(k, caps)
		if err == nil && checked {
			low, _, err = lower.Checked(low)
		}
		if err != nil {
			t.Fatalf("%s at %s: lower: %v", c.Name(), s, err)
		}
		m, err := vulkan.Emit(low, vulkan.EmitOptions{SubgroupSize: uint32(caps.SubgroupSize)})
		if err != nil {
			t.Fatalf("%s at %s: emit: %v", c.Name(), s, err)
		}
		return len(m.Words)
	}
	worst, worstChecked := 0.0, 0.0
	var at, atChecked string
	for _, c := range kernels.Cells() {
		def := c.DefaultScheduleFor("vulkan", caps.SubgroupSize)
		base := words(c, def, false)
		scheds := c.SampleSchedules()
		if testmode.Full() {
			scheds = c.Schedules()
		}
		for _, s := range scheds {
			n := words(c, s, false)
			bound := float64(maxSizeRatio)
			if b, ok := sizeExceptions[c.Name()]; ok {
				bound = b
			}
			if r := float64(n) / float64(base); r > bound {
				t.Errorf("%s at %s: %d words, %.1fx its default schedule %s (%d words; the bound is %gx)", c.Name(), s, n, r, def, base, bound)
			} else if r > worst {
				worst, at = r, c.Name()+" "+s.String()
			}
			ck := words(c, s, true)
			if r := float64(ck) / float64(n); r > maxSizeRatio {
				t.Errorf("%s at %s: checked %d words, %.1fx unchecked (%d)", c.Name(), s, ck, r, n)
			} else if r > worstChecked {
				worstChecked, atChecked = r, c.Name()+" "+s.String()
			}
		}
	}
	t.Logf("largest: %.2fx the default schedule (%s); checked %.2fx unchecked (%s)", worst, at, worstChecked, atChecked)
}
