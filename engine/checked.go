package engine

import (
	"fmt"

	"github.com/onesource-go/onesource/lower"
)

// Checked mode (Options.Checked, or ONESOURCE_CHECKED=1): every twin runs bounds-checked, as the
// conformance suite runs it (lower.RunChecked: each access whose index may be out of bounds is
// compared with its buffer's run-time length, skipped when outside it, and the first violation
// recorded in a report buffer bound after the twin's own bindings). After each flush the engine
// reads the reports of the flush's dispatches and fails the flush with the first violation,
// naming the kernel's Go line: "engine: rms_norm/f32/vulkan: out of bounds at
// kernels/ops_norm.go:57: store y[4096] outside its 4096 elements". The checked twin computes
// the same bytes as the unchecked one.
//
// On Vulkan, CUDA and HIP the twins are instrumented; the cpu executor checks every access
// itself (a violation fails the dispatch with its line) whether or not Checked is set.
// Incumbents are hand-written and run as they are. The reports of one flush share buffers
// (one report slot per dispatch, read back with one read per arena of reportSlots slots).

// boundsChecker is a device that runs bounds-checked twins: the capabilities its twins are
// lowered for, which lower.RunChecked instruments; instrument false for a device that checks
// every access itself (the cpu executor).
type boundsChecker interface {
	checkedCaps() (caps lower.Caps, instrument bool)
}

func (v *vulkanDevice) checkedCaps() (lower.Caps, bool) { return v.dev.Caps(), true }
func (g *gpuDevice) checkedCaps() (lower.Caps, bool)    { return g.lcaps, true }
func (d *cpuDevice) checkedCaps() (lower.Caps, bool)    { return lower.Caps{}, false }

// Native code checks every access itself (backends/native), as the cpu executor does.
func (d *nativeDevice) checkedCaps() (lower.Caps, bool) { return lower.Caps{}, false }

// reportSlots is how many dispatches' reports one arena holds.
const reportSlots = 256

// reportArena is a device buffer of report slots, one per checked dispatch of a flush.
type reportArena struct {
	buf    buffer
	stride int // bytes per slot: the report, padded to the device's view offset alignment
	used   int // slots handed out since the last flush
}

// pendingReport is a queued checked dispatch's report slot, read after the flush.
type pendingReport struct {
	arena *reportArena
	slot  int
	diag  *lower.Diagnostics
	cell  string
}

// reportSlot hands out the next report slot of this flush, allocating an arena when all are
// full. e.mu is held.
func (e *Engine) reportSlot() (*reportArena, int, error) {
	for _, a := range e.arenas {
		if a.used < reportSlots {
			a.used++
			return a, a.used - 1, nil
		}
	}
	stride := lower.ReportBytes
	if al := int(e.dev.info().MinStorageBufferOffsetAlignment); al > stride {
		stride = (al + lower.ReportBytes - 1) / lower.ReportBytes * lower.ReportBytes
	}
	b, err := e.dev.newBuffer(stride * reportSlots)
	if err != nil {
		return nil, 0, fmt.Errorf("engine: checked mode: report buffer: %w", err)
	}
	a := &reportArena{buf: b, stride: stride, used: 1}
	e.arenas = append(e.arenas, a)
	return a, 0, nil
}

// readReports reads the reports of a finished flush and returns the first violation as an error;
// every arena is zeroed for the next flush. e.mu is held.
func (e *Engine) readReports(reports []pendingReport) error {
	var first error
	data := map[*reportArena][]byte{}
	for _, a := range e.arenas {
		if a.used == 0 {
			continue
		}
		b := make([]byte, a.stride*a.used)
		if err := a.buf.Read(0, b); err != nil {
			return fmt.Errorf("engine: checked mode: reading the reports: %w", err)
		}
		data[a] = b
	}
	for _, r := range reports {
		b := data[r.arena]
		if b == nil {
			continue
		}
		v, err := r.diag.Violation(b[r.slot*r.arena.stride : r.slot*r.arena.stride+lower.ReportBytes])
		if err == nil && v != nil {
			err = fmt.Errorf("engine: %s: out of bounds at %v", r.cell, v)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	for a, b := range data {
		clear(b)
		if err := a.buf.Write(0, b); err != nil && first == nil {
			first = fmt.Errorf("engine: checked mode: clearing the reports: %w", err)
		}
		a.used = 0
	}
	return first
}
