package conformance_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// exampleManifest loads examples/incumbents/manifest.json, skipping without glslc.
func exampleManifest(t testing.TB) *incumbent.Manifest {
	t.Helper()
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the example incumbents (GLSL) cannot be compiled")
	}
	m, err := incumbent.Load(filepath.Join("..", "examples", "incumbents", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSummarize(t *testing.T) {
	s := conformance.Summarize([]float64{5, 1, 3, 2, 4})
	if s.Median != 3 || s.Min != 1 || s.Max != 5 || s.Q1 != 2 || s.Q3 != 4 || s.IQR != 2 {
		t.Fatalf("Summarize = %+v", s)
	}
	if s := conformance.Summarize([]float64{1, 2}); s.Median != 1.5 {
		t.Fatalf("median of 1, 2 = %v", s.Median)
	}
}

// TestABExamples runs the A/B benchmark of every example incumbent on the Vulkan device and
// prints the figures; it asserts no speed, only that the benchmark ran and the twin is
// bit-exact at the benchmark shape.
func TestABExamples(t *testing.T) {
	d := vktest.Device(t)
	m := exampleManifest(t)
	for _, e := range m.Incumbents {
		c, ok := kernels.Lookup(e.Op, mustType(t, e.Type))
		if !ok {
			t.Fatalf("%s: no cell", e.Cell())
		}
		shape := map[string]float64(nil)
		if testing.Short() {
			shape = map[string]float64{"rows": 64}
			if e.Op == "add" {
				shape = map[string]float64{"n": 1 << 16}
			}
		}
		r, err := conformance.RunAB(d, c, e, conformance.ABOptions{Pairs: 5, N: 5, Shape: shape})
		if err != nil {
			t.Fatalf("%s: %v", e.Cell(), err)
		}
		t.Log(conformance.WriteAB(r))
		if !r.TwinExact {
			t.Errorf("%s: twin not bit-exact at the benchmark shape", e.Cell())
		}
		if len(r.Ratios) != 5 || r.Ratio.Median <= 0 || math.IsInf(r.Ratio.Median, 0) {
			t.Errorf("%s: ratios %v", e.Cell(), r.Ratios)
		}
	}
}

func mustType(t testing.TB, name string) oracle.Type {
	t.Helper()
	for _, c := range kernels.Cells() {
		if c.Type.String() == name {
			return c.Type
		}
	}
	t.Fatalf("unknown type %q", name)
	return 0
}

// selfIncumbent registers the twin of c as its own incumbent: its SPIR-V written to a .spv in a
// temporary directory, with a manifest entry that binds the twin's operands, passes its
// parameters (by name, as the case workload's shape variables) and dispatches its grid.
func selfIncumbent(t *testing.T, d *vulkan.Device, c kernels.Cell) (*incumbent.Entry, *ir.Kernel) {
	t.Helper()
	k, err := c.Build(c.DefaultScheduleFor("vulkan", d.Caps().SubgroupSize)).Build()
	if err != nil {
		t.Fatalf("%s: %v", c.Name(), err)
	}
	m, err := vulkan.Compile(k, d.Caps())
	if err != nil {
		t.Fatalf("%s: %v", c.Name(), err)
	}
	dir := t.TempDir()
	spv := make([]byte, 4*len(m.Words))
	for i, w := range m.Words {
		binary.LittleEndian.PutUint32(spv[4*i:], w)
	}
	if err := os.WriteFile(filepath.Join(dir, "twin.spv"), spv, 0o644); err != nil {
		t.Fatal(err)
	}
	type binding struct {
		Binding  int    `json:"binding"`
		Operand  string `json:"operand"`
		ElemSize int    `json:"elem_size,omitempty"`
		ReadOnly bool   `json:"readonly,omitempty"`
	}
	type field struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Value string `json:"value"`
	}
	var bindings []binding
	for i, b := range m.Bindings {
		bindings = append(bindings, binding{Binding: i, Operand: b.Name, ElemSize: b.ElemSize, ReadOnly: b.ReadOnly})
	}
	var push []field
	for _, p := range k.Params {
		typ := map[ir.Type]string{ir.TU32: "u32", ir.TI32: "i32", ir.TF32: "f32"}[p.Type]
		if typ == "" {
			t.Fatalf("%s: parameter %s has type %s", c.Name(), p.Name, p.Type)
		}
		push = append(push, field{Name: p.Name, Type: typ, Value: p.Name})
	}
	var features []string
	f := m.Features
	for _, x := range []struct {
		name string
		on   bool
	}{
		{"int8", f.Int8}, {"int16", f.Int16}, {"float16", f.Float16}, {"float64", f.Float64},
		{"storage_buffer8", f.StorageBuffer8}, {"storage_buffer16", f.StorageBuffer16},
		{"integer_dot_product", f.IntegerDotProduct}, {"subgroup_shuffle", f.SubgroupShuffle},
		{"subgroup_basic", f.SubgroupBasic},
	} {
		if x.on {
			features = append(features, x.name)
		}
	}
	entry := map[string]any{
		"name": "self_" + c.Op + "_" + c.Type.String(), "op": c.Op, "type": c.Type.String(), "backend": "vulkan",
		"source":         map[string]any{"spirv": "twin.spv"},
		"entry":          m.Name,
		"bindings":       bindings,
		"push_constants": push,
		"workgroup_size": m.WorkgroupSize,
		"grid":           []string{"grid_x", "grid_y", "grid_z"},
		"features":       features,
	}
	if m.PushConstantSize > 0 {
		entry["push_constant_size"] = m.PushConstantSize
	}
	data, err := json.MarshalIndent(map[string]any{"version": incumbent.Version, "incumbents": []any{entry}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	man, err := incumbent.Load(path)
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.Name(), err, data)
	}
	return man.Incumbents[0], k
}

// TestABSelf benchmarks the twins of cells without a hand-made workload (fed their largest
// conformance case) against themselves registered as the incumbent: the benchmark must run, the
// ratio be finite and positive, and the "incumbent" (the same kernel) bit-exact. No speed is
// asserted.
func TestABSelf(t *testing.T) {
	d := vktest.Device(t)
	for _, name := range []string{"softmax/f32", "get_rows/q4_0", "quantize_q8_1/f32"} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			op, typ, _ := strings.Cut(name, "/")
			c, ok := kernels.Lookup(op, mustType(t, typ))
			if !ok {
				t.Fatalf("no cell %s", name)
			}
			e, k := selfIncumbent(t, d, c)
			r, err := conformance.RunAB(d, c, e, conformance.ABOptions{Pairs: 5, N: 5, Twin: k})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			t.Log(conformance.WriteAB(r))
			if !r.TwinExact || !r.IncumbentExact || r.IncumbentMaxULP != 0 {
				t.Errorf("%s: twin exact %v, incumbent exact %v (max ULP %g), want both bit-exact", name, r.TwinExact, r.IncumbentExact, r.IncumbentMaxULP)
			}
			if r.TwinHash != r.IncumbentHash {
				t.Errorf("%s: twin hash %s, incumbent hash %s: not the same kernel", name, r.TwinHash, r.IncumbentHash)
			}
			if len(r.Ratios) != 5 {
				t.Errorf("%s: %d ratios, want 5", name, len(r.Ratios))
			}
			for _, x := range append(r.Ratios, r.Ratio.Median) {
				if !(x > 0) || math.IsInf(x, 0) {
					t.Errorf("%s: ratio %v not finite and positive (ratios %v)", name, x, r.Ratios)
				}
			}
			if r.Bytes <= 0 || r.TwinGBs <= 0 || r.IncumbentGBs <= 0 {
				t.Errorf("%s: bytes %d, twin %v GB/s, incumbent %v GB/s", name, r.Bytes, r.TwinGBs, r.IncumbentGBs)
			}
		})
	}
}

// TestFastMatvecIncumbents runs the hand-written matvecs of examples/incumbents/fast.json (what
// `onesource bench -manifest` measures the matvec twins against) at a small shape on the Vulkan
// device: each runs, and computes the matvec to within a normwise error of 1e-5 of the oracle's
// (not bit-exact: their dot products and order are the device's). It asserts no speed.
func TestFastMatvecIncumbents(t *testing.T) {
	d := vktest.Device(t)
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the example incumbents (GLSL) cannot be compiled")
	}
	m, err := incumbent.Load(filepath.Join("..", "examples", "incumbents", "fast.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Incumbents) != 5 {
		t.Fatalf("%d entries, want the five matvecs", len(m.Incumbents))
	}
	for _, e := range m.Incumbents {
		if err := e.Check(d.Info()); err != nil {
			t.Logf("%s: the device cannot run it: %v", e.Name, err)
			continue
		}
		c, ok := kernels.Lookup(e.Op, mustType(t, e.Type))
		if !ok {
			t.Fatalf("%s: no cell", e.Cell())
		}
		r, err := conformance.RunAB(d, c, e, conformance.ABOptions{Pairs: 1, N: 1, Shape: map[string]float64{"rows": 37, "n": 1024}})
		if err != nil {
			t.Fatalf("%s: %v", e.Cell(), err)
		}
		if !(r.IncumbentErr < 1e-5) {
			t.Errorf("%s: normwise error %g against the oracle", e.Name, r.IncumbentErr)
		}
	}
}
