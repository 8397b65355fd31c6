package conformance

import (
	"context"
	"fmt"
	"maps"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/registry"
)

// The gate's extra correctness checks (GateOptions.Seed): besides the conformance cases and the
// benchmark shape, the twin must be bit-exact, and the incumbent is measured, on seeded shapes of
// the cell's op that a benchmark alone never shows:
//
//   - odd: the op's outer size (rows, tokens, n_kv) 3, the benchmark's inner sizes;
//   - smallest: every size at the least the op and type accept (n = 1 for f32, one block for a
//     quantized type, ...);
//   - ragged: the outer size 5 and the inner size the benchmark's plus that least step (n = 4097
//     for f32, 4096 + 256 for q4_K): no multiple of a workgroup's lanes or of a canonical width;
//   - specials: the outer size 2, activations holding subnormals and -0 (one in 16), and a NaN
//     and both infinities in their first quarter (see acts).
//
// Each shape's inputs come from a seed (base+1 ... base+4); the shape string records it (seed=S,
// specials=1), so `onesource bench -op OP -type T -shape SHAPE` replays one. A twin that is not
// bit-exact on any of them fails the gate. The incumbent is run too and its normwise error
// recorded, for information only: a hand-written kernel may have shape preconditions the manifest
// does not state, and need not follow IEEE specials.

// extraShapes returns the shapes of the extra checks for cell c gated at benchmark shape bench
// (nil for a cell without an op workload), seeded from base.
func extraShapes(c kernels.Cell, bench map[string]float64, base int64, s kernels.Schedule) []map[string]float64 {
	ow, ok := opWorkloads[c.Op]
	if !ok || len(ow.vars) == 0 {
		return nil
	}
	sh := maps.Clone(ow.def)
	for k, v := range bench {
		if _, known := ow.kinds[k]; known && k != "seed" && k != "specials" {
			sh[k] = v
		}
	}
	outer, inner := ow.vars[0], ow.vars[len(ow.vars)-1]
	with := func(seed int64, set map[string]float64) map[string]float64 {
		x := maps.Clone(sh)
		for k, v := range set {
			x[k] = v
		}
		if m, ok := x["mask_rows"]; ok && m > 1 {
			x["mask_rows"] = x["rows"] // a mask per row stays one per row
		}
		x["seed"] = float64(base + seed)
		return x
	}
	builds := func(x map[string]float64) bool {
		_, err := NewWorkload(c.Op, c.Type.String(), x, s)
		return err == nil
	}
	// The least inner size the op and type accept, every other size at 1.
	small := map[string]float64{}
	for v, k := range ow.kinds {
		if k == varCount {
			small[v] = 1
		}
	}
	step := 0.0
	for _, n := range []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024} {
		small[inner] = n
		if builds(with(2, small)) {
			step = n
			break
		}
	}
	var out []map[string]float64
	out = append(out, with(1, map[string]float64{outer: 3}))
	if step > 0 {
		out = append(out, with(2, small))
		out = append(out, with(3, map[string]float64{outer: 5, inner: sh[inner] + step}))
	}
	if outer != inner {
		out = append(out, with(4, map[string]float64{outer: 2, "specials": 1}))
	} else {
		// One size variable (argmax's n): the specials need the values of the default size.
		out = append(out, with(4, map[string]float64{"specials": 1}))
	}
	return out
}

// gateChecks runs the extra checks of cell c at schedule s (twin module m) on d, with incumbent
// e where not nil; tol is the incumbent tolerance. It returns one registry.Check per shape, and
// whether the twin was bit-exact on every shape it ran.
func gateChecks(ctx context.Context, d *vulkan.Device, c kernels.Cell, e *incumbent.Entry, m *vulkan.Module, s kernels.Schedule, shapes []map[string]float64) ([]registry.Check, bool, error) {
	p, err := d.Pipeline(m)
	if err != nil {
		return nil, false, fmt.Errorf("twin: %w", err)
	}
	exact := true
	var out []registry.Check
	for _, sh := range shapes {
		ck := registry.Check{Shape: ShapeString(sh)}
		w, err := NewWorkload(c.Op, c.Type.String(), sh, s)
		if err != nil {
			ck.Twin = "not built: " + err.Error()
			out = append(out, ck)
			continue
		}
		want, err := w.Want()
		if err != nil {
			ck.Twin = "no oracle: " + err.Error()
			out = append(out, ck)
			continue
		}
		err = func() error {
			bs := &bufferSet{d: d, byOp: map[string]*vulkan.Buffer{}}
			defer bs.release()
			twin, err := twinSide(c, m, p, w, bs)
			if err != nil {
				return err
			}
			got, err := twin.run(ctx, d, w)
			if err != nil {
				return err
			}
			if tc := compareOutputs(w, got, want); tc.exact {
				ck.Twin = "exact"
			} else {
				exact = false
				ck.Twin = fmt.Sprintf("differs from the oracle: max %g ULP", clampULP(tc.ulp))
			}
			if e == nil {
				return nil
			}
			inc, err := incumbentSide(d, c, e, w, bs)
			if err != nil {
				ck.Incumbent = "not run: " + err.Error()
				return nil
			}
			if got, err = inc.run(ctx, d, w); err != nil {
				return err
			}
			ic := compareOutputs(w, got, want)
			switch {
			case ic.exact:
				ck.Incumbent = "exact"
			default:
				ck.Incumbent = fmt.Sprintf("err %.3g, max %g ULP", clampULP(ic.normErr), clampULP(ic.ulp))
			}
			return nil
		}()
		if err != nil {
			return out, false, fmt.Errorf("check at %s: %w", ck.Shape, err)
		}
		out = append(out, ck)
	}
	return out, exact, nil
}
