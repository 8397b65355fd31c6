package conformance_test

import (
	"math"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/vktest"
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
