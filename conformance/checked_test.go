package conformance_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// checkN is the element count of every buffer of the checked-mode test cells: not a multiple of
// their 64-lane workgroups, so the last workgroup is partial.
const checkN = 100

// Lines of this file where the deliberately wrong kernels index out of bounds (set as the
// kernels are built).
var oobStoreLine, oobLoadLine, oobHalfLine, oobReturnLine int

func callerLine() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}

// oobCell is a test cell over checkN elements of elem (f32 or f16): x (read), y (written),
// parameter n. body writes the kernel's work for invocation i < n; the oracle's y is
// y[i] = 2*x[i] (exact in f16 too: x[i] = i/4).
func oobCell(op string, elem dsl.Type, body func(k *dsl.Kernel, x, y dsl.Array, i dsl.Value)) kernels.Cell {
	size := elem.Stride()
	put := func(b []byte, i int, v float32) {
		if size == 2 {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(ir.ConstBits(ir.TF16, float64(v))))
			return
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return kernels.Cell{
		Op: op, Type: oracle.F32,
		Build: func(s kernels.Schedule) *dsl.Kernel {
			k := dsl.New(op, s.Lanes)
			x := k.Buffer("x", elem, dsl.Read)
			y := k.Buffer("y", elem, dsl.Write)
			n := k.Param("n", dsl.U32)
			i := k.GlobalID(dsl.X)
			k.If(i.Lt(n), func() { body(k, x, y, i) })
			return k
		},
		Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
			x := make([]byte, size*checkN)
			want := make([]byte, size*checkN)
			for i := range checkN {
				put(x, i, float32(i)/4)
				put(want, i, 2*float32(i)/4)
			}
			groups := uint32((checkN + s.Lanes - 1) / s.Lanes)
			return []kernels.Case{{
				Name: fmt.Sprintf("n=%d", checkN), Buffers: [][]byte{x, make([]byte, size*checkN)}, Params: []uint32{checkN},
				Groups: [3]uint32{groups, 1, 1}, Outputs: []int{1}, Want: [][]byte{want}, Elem: []string{elem.String()},
			}}, nil
		},
	}
}

var (
	// goodCell: y[i] = x[i] + x[i], every index in bounds.
	goodCell = oobCell("oob_good", dsl.F32, func(k *dsl.Kernel, x, y dsl.Array, i dsl.Value) {
		v := x.Load(i)
		y.Store(i, v.Add(v))
	})
	// storeCell stores y[i+1]: the last invocation stores y[n] into a buffer of n elements.
	storeCell = oobCell("oob_store", dsl.F32, func(k *dsl.Kernel, x, y dsl.Array, i dsl.Value) {
		v := x.Load(i)
		y.Store(i.Add(1), v.Add(v))
		oobStoreLine = callerLine() - 1
	})
	// loadCell loads x[i+1]: the last invocation reads x[n], past the end.
	loadCell = oobCell("oob_load", dsl.F32, func(k *dsl.Kernel, x, y dsl.Array, i dsl.Value) {
		v := x.Load(i.Add(1))
		oobLoadLine = callerLine() - 1
		y.Store(i, v.Add(v))
	})
	// returnCell is loadCell ending with an early return: an invocation reports its violations
	// where it ends, a return as well as the end of the kernel.
	returnCell = oobCell("oob_return", dsl.F32, func(k *dsl.Kernel, x, y dsl.Array, i dsl.Value) {
		v := x.Load(i.Add(1))
		oobReturnLine = callerLine() - 1
		y.Store(i, v.Add(v))
		k.Return()
	})
	// goodHalf and halfCell are goodCell and loadCell over f16 buffers (f16 arithmetic, or f32
	// where the target has f16 storage only).
	goodHalf = oobCell("oob_good_f16", dsl.F16, func(k *dsl.Kernel, x, y dsl.Array, i dsl.Value) {
		v := x.Load(i)
		y.Store(i, v.Add(v))
	})
	halfCell = oobCell("oob_load_f16", dsl.F16, func(k *dsl.Kernel, x, y dsl.Array, i dsl.Value) {
		v := x.Load(i.Add(1))
		oobHalfLine = callerLine() - 1
		y.Store(i, v.Add(v))
	})
)

// checkedTargets opens every target of the suite available here (in checked mode, the default),
// skipping the test when none is.
func checkedTargets(t *testing.T, checked bool) []conformance.Target {
	t.Helper()
	var open []conformance.Target
	for _, tg := range conformance.SetChecked(conformance.Targets(), checked) {
		if w, ok := tg.(*conformance.WebGPU); ok {
			w.Checked = checked // through naga only on request (see conformance.WebGPU)
		}
		if err := tg.Open(); err != nil {
			t.Logf("%s: %v", tg.Name(), err)
			continue
		}
		t.Cleanup(tg.Close)
		open = append(open, tg)
	}
	if len(open) == 0 {
		t.Skip("no target is available")
	}
	return open
}

// TestCheckedMode runs the deliberately wrong kernels in checked mode on every available
// backend (Vulkan on lavapipe, CUDA, HIP and Metal by host emulation): each run fails naming this
// file's line, the buffer, the index and the element count; the correct kernel passes.
func TestCheckedMode(t *testing.T) {
	s := kernels.Schedule{Lanes: 64}
	for _, tg := range checkedTargets(t, true) {
		t.Run(tg.Name(), func(t *testing.T) {
			for _, c := range []kernels.Cell{goodCell, goodHalf} {
				r := conformance.Judge(tg, c, s)
				if !r.BitExact || r.OutOfBounds != "" || !r.Checked {
					t.Errorf("%s: correct kernel: bit-exact %v, checked %v, out of bounds %q: %s", c.Op, r.BitExact, r.Checked, r.OutOfBounds, r.Reason)
				}
			}
			for _, c := range []struct {
				cell kernels.Cell
				line *int
				want string
			}{
				{storeCell, &oobStoreLine, fmt.Sprintf("store y[%d] outside its %d elements", checkN, checkN)},
				{loadCell, &oobLoadLine, fmt.Sprintf("load x[%d] outside its %d elements", checkN, checkN)},
				{halfCell, &oobHalfLine, fmt.Sprintf("load x[%d] outside its %d elements", checkN, checkN)},
				{returnCell, &oobReturnLine, fmt.Sprintf("load x[%d] outside its %d elements", checkN, checkN)},
			} {
				r := conformance.Judge(tg, c.cell, s)
				at := fmt.Sprintf("conformance/checked_test.go:%d: ", *c.line)
				if r.BitExact || !r.Checked || !strings.HasPrefix(r.OutOfBounds, at+c.want) ||
					!strings.HasPrefix(r.Reason, "out of bounds at "+at+c.want) || r.Digest != "" {
					t.Errorf("%s: bit-exact %v, checked %v, out of bounds %q, reason %q; want %q", c.cell.Op, r.BitExact, r.Checked, r.OutOfBounds, r.Reason, "out of bounds at "+at+c.want)
				}
				t.Logf("%s [%s]: %s", c.cell.Op, r.Levels, r.Reason)
			}
		})
	}
}

// TestUncheckedMode: with checked mode off, nothing is instrumented: the correct kernel passes
// and is not marked checked, and a load past the end goes unreported (lavapipe reads something:
// the run is simply not bit-exact, or is by chance). Vulkan only: the host emulation stops an
// unchecked out-of-bounds access with its guard pages.
func TestUncheckedMode(t *testing.T) {
	s := kernels.Schedule{Lanes: 64}
	for _, tg := range checkedTargets(t, false) {
		r := conformance.Judge(tg, goodCell, s)
		// The cpu executor and native CPU code check every access whatever the mode (it is how
		// they run).
		if !r.BitExact || r.Checked != (tg.Name() == "cpu" || tg.Name() == "native") {
			t.Errorf("%s: correct kernel unchecked: bit-exact %v, checked %v: %s", tg.Name(), r.BitExact, r.Checked, r.Reason)
		}
		if tg.Name() != "vulkan" {
			continue
		}
		r = conformance.Judge(tg, loadCell, s)
		if r.OutOfBounds != "" || r.Checked {
			t.Errorf("unchecked run reports %q", r.OutOfBounds)
		}
	}
}
