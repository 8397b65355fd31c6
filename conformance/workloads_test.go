package conformance_test

import (
	"encoding/binary"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/kernels"
)

// defaultShapes are the realistic decoding shapes every op's workload defaults to.
var defaultShapes = map[string]map[string]float64{
	"rms_norm":      {"rows": 64, "n": 4096},
	"add_rmsnorm":   {"rows": 64, "n": 4096},
	"softmax":       {"rows": 64, "n": 4096},
	"add":           {"rows": 64, "n": 4096},
	"mul":           {"rows": 64, "n": 4096},
	"swiglu":        {"rows": 64, "n": 4096},
	"silu":          {"rows": 64, "n": 4096},
	"gelu":          {"rows": 64, "n": 4096},
	"scale":         {"rows": 64, "n": 4096},
	"quantize_q8_1": {"rows": 64, "n": 4096},
	"get_rows":      {"rows": 64, "n": 4096, "src_rows": 1024},
	"matvec":        {"rows": 1024, "n": 4096},
	"matvec_q8":     {"rows": 1024, "n": 4096},
	"rope_norm":     {"tokens": 64, "heads": 32, "head_dim": 128},
	"rope_neox":     {"tokens": 64, "heads": 32, "head_dim": 128},
	"rms_norm_rope": {"tokens": 64, "heads": 32, "head_dim": 128},
	"attn_decode":   {"n_kv": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128},
	"argmax":        {"n": 32000, "chunk": 32000},
	"argmin":        {"n": 32000, "chunk": 32000},
	"topk":          {"n": 32000, "chunk": 32000, "k": 40},
	"sample":        {"k": 40},
}

// smallShape is a small shape of op for the tests: rows=2, n=256 (tokens=2, heads=2,
// head_dim=64 for the rope ops; 4 rows to gather from for get_rows; 300 positions of 2 kv
// heads for 4 heads of 64 for attn_decode; 1000 values in chunks of 256 for argmax, argmin and
// topk (5 best); a draw among 5 for sample).
func smallShape(op string) map[string]float64 {
	switch op {
	case "rope_norm", "rope_neox", "rms_norm_rope":
		return map[string]float64{"tokens": 2, "heads": 2, "head_dim": 64}
	case "get_rows":
		return map[string]float64{"rows": 2, "n": 256, "src_rows": 4}
	case "attn_decode":
		return map[string]float64{"n_kv": 300, "heads": 4, "kv_heads": 2, "head_dim": 64}
	case "argmax", "argmin":
		return map[string]float64{"n": 1000, "chunk": 256}
	case "topk":
		return map[string]float64{"n": 1000, "chunk": 256, "k": 5}
	case "sample":
		return map[string]float64{"k": 5}
	}
	return map[string]float64{"rows": 2, "n": 256}
}

// TestWorkloadOpsCoverEveryCell checks that every registered cell has a realistic workload (none
// falls back to its largest conformance case) at its op's default decoding shape.
func TestWorkloadOpsCoverEveryCell(t *testing.T) {
	have := map[string]bool{}
	for _, key := range conformance.WorkloadOps() {
		have[key] = true
	}
	for _, c := range kernels.Cells() {
		key := strings.ToLower(c.Name())
		if c.Feature != "" {
			if have[key] {
				t.Errorf("%s is a feature cell (%s) but has a realistic workload", key, c.Feature)
			}
			continue
		}
		if !have[key] {
			t.Errorf("%s has no realistic workload: it falls back to its largest conformance case", key)
		}
		want, known := defaultShapes[c.Op]
		if !known {
			t.Errorf("%s: op %s is not in this test's table of default shapes", key, c.Op)
			continue
		}
		def, ok := conformance.DefaultShape(c.Op, c.Type.String())
		if !ok {
			t.Errorf("%s: no default shape", key)
			continue
		}
		for k, v := range want {
			if def[k] != v {
				t.Errorf("%s: default %s = %v, want %v (default shape %s)", key, k, def[k], v, conformance.ShapeString(def))
			}
		}
		vars := conformance.ShapeVars(c.Op)
		if len(vars) == 0 {
			t.Errorf("%s: no shape variables", key)
		}
		for _, v := range vars {
			if _, ok := def[v]; !ok {
				t.Errorf("%s: primary variable %s has no default", key, v)
			}
		}
	}
	if _, ok := conformance.DefaultShape("no_such_op", "f32"); ok {
		t.Errorf("DefaultShape of an unknown cell is ok")
	}
}

// TestWorkloadSmallShapes builds every cell's workload at a small shape on the narrowest and the
// widest sample schedule (no device): the shape is the default overridden, every output has the
// oracle's bytes at its size, and Derived names the twin's grid and lanes. Feature cells have no
// shape to set (their workload is their largest case) and are left out.
func TestWorkloadSmallShapes(t *testing.T) {
	for _, c := range kernels.Cells() {
		if c.Feature != "" {
			continue
		}
		ss := c.SampleSchedules()
		for _, s := range []kernels.Schedule{ss[0], ss[len(ss)-1]} {
			small := smallShape(c.Op)
			w, err := conformance.NewWorkload(c.Op, c.Type.String(), small, s)
			if err != nil {
				t.Errorf("%s at %s: %v", c.Name(), s, err)
				continue
			}
			def, _ := conformance.DefaultShape(c.Op, c.Type.String())
			maps.Copy(def, small)
			if !maps.Equal(w.Shape, def) {
				t.Errorf("%s at %s: shape %s, want %s", c.Name(), s, conformance.ShapeString(w.Shape), conformance.ShapeString(def))
			}
			if w.Derived["lanes"] != float64(s.Lanes) || w.Derived["grid_x"] != float64(w.TwinGroups[0]) || w.Derived["grid_y"] != float64(w.TwinGroups[1]) {
				t.Errorf("%s at %s: derived %s, grid %v", c.Name(), s, conformance.ShapeString(w.Derived), w.TwinGroups)
			}
			want, err := w.Want()
			if err != nil {
				t.Errorf("%s at %s: oracle: %v", c.Name(), s, err)
				continue
			}
			outs := 0
			for _, o := range w.Operands {
				if !o.Output {
					continue
				}
				outs++
				if len(want[o.Name]) != len(o.Data) {
					t.Errorf("%s at %s: output %s: oracle gives %d bytes, operand has %d", c.Name(), s, o.Name, len(want[o.Name]), len(o.Data))
				}
			}
			if outs == 0 {
				t.Errorf("%s at %s: no output operand", c.Name(), s)
			}
		}
	}
}

// twinCells are one type of every op whose workload TestWorkloadsOnTwin runs (and a second type
// for the weight ops).
var twinCells = []string{
	"rms_norm/f32", "add_rmsnorm/f32", "softmax/f32", "add/f32", "mul/f32", "swiglu/f32", "silu/f32",
	"gelu/f32", "scale/f32", "quantize_q8_1/f32", "get_rows/q4_0", "get_rows/f16", "matvec/q4_0",
	"matvec/f32", "matvec_q8/q4_0", "rope_norm/f32", "rope_neox/f32", "rms_norm_rope/f32",
	"attn_decode/f32", "argmax/f32", "argmin/f32", "topk/f32", "sample/f32",
}

// TestWorkloadsOnTwin runs every op's workload at a small shape on its twin on the Vulkan
// device, at the device's default schedule and the narrowest and widest sample schedules, and
// compares every output bit for bit with the workload's Want: the builders' operands,
// parameters and grids are the twin's.
func TestWorkloadsOnTwin(t *testing.T) {
	d := vktest.Device(t)
	ops := map[string]bool{}
	for _, name := range twinCells {
		op, typ, _ := strings.Cut(name, "/")
		ops[op] = true
		c, ok := kernels.Lookup(op, mustType(t, typ))
		if !ok {
			t.Fatalf("no cell %s", name)
		}
		ss := c.SampleSchedules()
		scheds := []kernels.Schedule{c.DefaultScheduleFor("vulkan", d.Caps().SubgroupSize)}
		for _, s := range []kernels.Schedule{ss[0], ss[len(ss)-1]} {
			if !slices.Contains(scheds, s) {
				scheds = append(scheds, s)
			}
		}
		shapes := []map[string]float64{smallShape(op)}
		if op == "softmax" { // a causal mask, one row per row
			shapes = append(shapes, map[string]float64{"rows": 3, "n": 256, "mask_rows": 3})
		}
		if op == "rms_norm_rope" { // normal mode
			shapes = append(shapes, map[string]float64{"tokens": 2, "heads": 2, "head_dim": 64, "mode": 0})
		}
		for _, s := range scheds {
			for _, sh := range shapes {
				w, err := conformance.NewWorkload(op, typ, sh, s)
				if err != nil {
					t.Errorf("%s at %s: %v", name, s, err)
					continue
				}
				runWorkload(t, d, c, s, w)
			}
		}
	}
	for _, c := range kernels.Cells() {
		if !ops[c.Op] && c.Feature == "" { // feature cells have no workload shapes
			t.Errorf("op %s is not run by this test", c.Op)
		}
	}
}

// runWorkload runs w on the twin of c at s and compares its outputs with w.Want.
func runWorkload(t *testing.T, d *vulkan.Device, c kernels.Cell, s kernels.Schedule, w *conformance.Workload) {
	t.Helper()
	m := vktest.Compile(t, c.Build(s), d.Caps())
	bufs := make([][]byte, len(m.Bindings))
	outs := map[string]int{}
	for i, b := range m.Bindings {
		var found *conformance.Operand
		for j := range w.Operands {
			if w.Operands[j].Name == b.Name {
				found = &w.Operands[j]
			}
		}
		if found == nil {
			t.Fatalf("%s at %s: binding %s is not an operand", c.Name(), s, b.Name)
		}
		bufs[i] = found.Data
		if found.Output {
			outs[b.Name] = i
		}
	}
	push := make([]byte, 4*len(w.TwinParams))
	for i, v := range w.TwinParams {
		binary.LittleEndian.PutUint32(push[4*i:], v)
	}
	got := vktest.RunModule(t, d, m, bufs, push, w.TwinGroups)
	want, err := w.Want()
	if err != nil {
		t.Fatalf("%s: oracle: %v", c.Name(), err)
	}
	if len(outs) == 0 {
		t.Errorf("%s: no output", c.Name())
	}
	for name, i := range outs {
		elem := "f32"
		for _, o := range w.Operands {
			if o.Name == name {
				elem = o.Elem
			}
		}
		if df := conformance.Compare(got[i], want[name], elem); !df.Exact {
			t.Errorf("%s at %s, shape %s: output %s differs from the oracle: %s", c.Name(), s, conformance.ShapeString(w.Shape), name, df.First)
		}
	}
}

func TestShapeVars(t *testing.T) {
	for op, want := range map[string][]string{
		"rms_norm": {"rows", "n"}, "matvec": {"rows", "n"}, "get_rows": {"rows", "n"}, "add": {"rows", "n"},
		"rope_norm": {"tokens", "heads", "head_dim"}, "rms_norm_rope": {"tokens", "heads", "head_dim"},
	} {
		if got := conformance.ShapeVars(op); !slices.Equal(got, want) {
			t.Errorf("ShapeVars(%s) = %v, want %v", op, got, want)
		}
	}
	if got := conformance.ShapeVars("no_such_op"); got != nil {
		t.Errorf("ShapeVars of an unknown op = %v", got)
	}
}

func TestParseShape(t *testing.T) {
	good := []struct {
		op, text string
		want     map[string]float64
	}{
		{"rms_norm", "rows=64,n=4096", map[string]float64{"rows": 64, "n": 4096}},
		{"rms_norm", "64x4096", map[string]float64{"rows": 64, "n": 4096}},
		{"rms_norm", " rows = 2 , n = 8 , eps = 1e-5 ", map[string]float64{"rows": 2, "n": 8, "eps": 1e-5}},
		{"matvec", "4096x14336", map[string]float64{"rows": 4096, "n": 14336}},
		{"get_rows", "src_rows=32000,rows=8", map[string]float64{"src_rows": 32000, "rows": 8}},
		{"rope_norm", "64x32x128", map[string]float64{"tokens": 64, "heads": 32, "head_dim": 128}},
		{"rms_norm_rope", "1x8x64,mode=0,base=500000", map[string]float64{"tokens": 1, "heads": 8, "head_dim": 64, "mode": 0, "base": 500000}},
		{"softmax", "64x4096,scale=0.125,mask_rows=0", map[string]float64{"rows": 64, "n": 4096, "scale": 0.125, "mask_rows": 0}},
		{"scale", "n=10,scale=-3", map[string]float64{"n": 10, "scale": -3}},
	}
	for _, g := range good {
		got, err := conformance.ParseShape(g.op, g.text)
		if err != nil {
			t.Errorf("ParseShape(%s, %q): %v", g.op, g.text, err)
			continue
		}
		if !maps.Equal(got, g.want) {
			t.Errorf("ParseShape(%s, %q) = %v, want %v", g.op, g.text, got, g.want)
		}
		back, err := conformance.ParseShape(g.op, conformance.ShapeString(got))
		if err != nil || !maps.Equal(back, got) {
			t.Errorf("ParseShape(%s, ShapeString = %q) = %v, %v: does not read back", g.op, conformance.ShapeString(got), back, err)
		}
	}
	bad := []struct {
		op, text, says string
	}{
		{"rms_norm", "", "rows, n, eps"},
		{"rms_norm", "64x32x128", "rows x n"},
		{"rope_norm", "64x4096", "tokens x heads x head_dim"},
		{"add", "64x", "is not a number"},
		{"rms_norm", "rows=0", "positive integer"},
		{"rms_norm", "rows=1.5", "positive integer"},
		{"rms_norm", "rows=abc", "is not a number"},
		{"rms_norm", "4096", "neither NAME=VALUE"},
		{"rms_norm", "heads=2", `no shape variable "heads"`},
		{"rms_norm", "rows=2,rows=3", "twice"},
		{"rms_norm", "n=2,64x4096", "positional"},
		{"rms_norm", "rows=2,,n=3", "empty item"},
		{"rms_norm", "eps=nan", "finite"},
		{"rms_norm_rope", "mode=1", "neox"},
		{"softmax", "mask_rows=-1", "non-negative"},
		{"matvec", "rows=1e10", "positive integer"},
		{"no_such_op", "64x4096", "rms_norm"},
	}
	for _, b := range bad {
		_, err := conformance.ParseShape(b.op, b.text)
		if err == nil {
			t.Errorf("ParseShape(%s, %q) accepted", b.op, b.text)
			continue
		}
		if !strings.Contains(err.Error(), b.says) {
			t.Errorf("ParseShape(%s, %q): %v; want it to say %q", b.op, b.text, err, b.says)
		}
		if b.op != "no_such_op" && !strings.Contains(err.Error(), b.op+"'s shape variables are ") {
			t.Errorf("ParseShape(%s, %q): %v; want it to name the op's variables", b.op, b.text, err)
		}
	}
}

func TestShapeString(t *testing.T) {
	for _, c := range []struct {
		sh   map[string]float64
		want string
	}{
		{map[string]float64{"n": 4096, "rows": 64}, "rows=64,n=4096"},
		{map[string]float64{"eps": 1e-6, "n": 4096, "rows": 64}, "rows=64,n=4096,eps=1e-06"},
		{map[string]float64{"head_dim": 128, "tokens": 64, "heads": 32, "base": 1e6}, "tokens=64,heads=32,head_dim=128,base=1e+06"},
		{map[string]float64{"src_rows": 1024, "n": 4096, "rows": 64, "zz": 1, "grid_x": 2}, "rows=64,n=4096,src_rows=1024,grid_x=2,zz=1"},
		{nil, ""},
	} {
		if got := conformance.ShapeString(c.sh); got != c.want {
			t.Errorf("ShapeString(%v) = %q, want %q", c.sh, got, c.want)
		}
	}
}

// TestWorkloadShapeErrors checks the shapes NewWorkload refuses for a cell.
func TestWorkloadShapeErrors(t *testing.T) {
	s := kernels.Schedule{Lanes: 64}
	for _, c := range []struct {
		op, typ string
		shape   map[string]float64
		says    string
	}{
		{"add", "f32", map[string]float64{"heads": 2}, `no shape variable "heads"`},
		{"softmax", "f32", map[string]float64{"rows": 3, "n": 8, "mask_rows": 2}, "mask_rows"},
		{"get_rows", "q4_0", map[string]float64{"rows": 2, "n": 100, "src_rows": 4}, "32-value blocks"},
		{"quantize_q8_1", "f32", map[string]float64{"rows": 2, "n": 100}, "32-value"},
		{"rms_norm", "f32", map[string]float64{"rows": 70000, "n": 8}, "workgroups"},
		{"add", "f32", map[string]float64{"rows": 1 << 20, "n": 1 << 20}, "values in one operand"},
		{"no_such_op", "f32", nil, "no cell"},
	} {
		_, err := conformance.NewWorkload(c.op, c.typ, c.shape, s)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("NewWorkload(%s/%s, %v): %v; want an error saying %q", c.op, c.typ, c.shape, err, c.says)
		}
	}
}

// TestABCallerWorkload runs RunAB with a caller's workload at a small shape against the twin
// registered as its own incumbent: the workload is used as it is (o.Shape does not apply), and
// the incumbent's expressions see its derived variables (the twin's parameters and grid).
func TestABCallerWorkload(t *testing.T) {
	d := vktest.Device(t)
	for _, name := range []string{"rms_norm/f32", "rope_neox/f32", "get_rows/q4_0"} {
		op, typ, _ := strings.Cut(name, "/")
		c, ok := kernels.Lookup(op, mustType(t, typ))
		if !ok {
			t.Fatalf("no cell %s", name)
		}
		s := c.DefaultScheduleFor("vulkan", d.Caps().SubgroupSize)
		w, err := conformance.NewWorkload(op, typ, smallShape(op), s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		e, _ := selfIncumbent(t, d, c)
		r, err := conformance.RunAB(d, c, e, conformance.ABOptions{Pairs: 2, N: 2, Workload: w, Shape: map[string]float64{"rows": 999}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Log(conformance.WriteAB(r))
		if !maps.Equal(r.Shape, w.Shape) || r.Bytes != w.Bytes() {
			t.Errorf("%s: ran shape %s (%d bytes), want the caller's %s (%d bytes)", name, conformance.ShapeString(r.Shape), r.Bytes, conformance.ShapeString(w.Shape), w.Bytes())
		}
		if !r.TwinExact || !r.IncumbentExact {
			t.Errorf("%s: twin exact %v, incumbent (the twin) exact %v: want both", name, r.TwinExact, r.IncumbentExact)
		}
		if len(r.Ratios) != 2 {
			t.Errorf("%s: %d ratios, want 2", name, len(r.Ratios))
		}
	}
}

// TestWorkloadTooLarge: a shape whose workload cannot fit in the memory this machine has free
// is refused with the sizes, before anything is allocated (it died with "out of memory").
func TestWorkloadTooLarge(t *testing.T) {
	restore := conformance.SetAvailableMemory(64 << 20)
	defer restore()
	_, err := conformance.NewWorkload("matvec", "f32", map[string]float64{"rows": 16384, "n": 4096}, kernels.Schedule{Lanes: 64})
	if err == nil || !strings.Contains(err.Error(), "GiB available") || !strings.Contains(err.Error(), "rows x n = 67108864 values") {
		t.Fatalf("a 256 MiB matvec with 64 MiB free: %v", err)
	}
	if _, err := conformance.NewWorkload("matvec", "f32", map[string]float64{"rows": 64, "n": 256}, kernels.Schedule{Lanes: 64}); err != nil {
		t.Fatalf("a small workload: %v", err)
	}
}
