package engine

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
)

// cfamilyIncumbents loads the example CUDA and HIP incumbents (examples/incumbents/cuda.json).
func cfamilyIncumbents(t *testing.T) *incumbent.Manifest {
	t.Helper()
	m, err := incumbent.Load(filepath.Join("..", "examples", "incumbents", "cuda.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCFamilyIncumbentServes: with a registry that sends add/f32 to the hand-written add.cu of
// examples/incumbents, CUDA and HIP (a GPU's, and the emulated devices) serve the add with that
// incumbent, compiled at run time and launched with the manifest's grid, block and arguments,
// and the scale after it with its twin, in one submission; the trace says who served each, and
// the result is the oracle's (an element-wise add is exact whoever computes it). A manifest that
// disagrees with the kernel's declared signature is refused with both counts.
func TestCFamilyIncumbentServes(t *testing.T) {
	for _, b := range []string{CUDA, HIP, emulatedCUDA, emulatedHIP} {
		t.Run(b, func(t *testing.T) {
			m := cfamilyIncumbents(t)
			probe := openEngine(t, Options{Backend: b})
			name := "hand_add_f32_" + probe.Backend()
			reg := registry.New()
			if err := reg.Register(registry.Key{Op: "add", Type: "f32", Backend: probe.Backend()}, name, "test"); err != nil {
				t.Fatal(err)
			}
			e := openEngine(t, Options{Backend: b, Registry: reg, Manifest: m})
			rng := rand.New(rand.NewSource(3))
			const rows, n = 4, 300 // 1200 elements: a partial last block of the naive grid
			a, bv := randF32(rng, rows*n, 1), randF32(rng, rows*n, 1)
			at, bt := upload(t, e, a, rows, n), upload(t, e, bv, rows, n)
			want := make([]float32, rows*n)
			if err := oracle.AddF32(want, a, bv); err != nil {
				t.Fatal(err)
			}
			y := zeros(t, e, rows, n)
			before := e.Stats()
			if err := e.Add(y, at, bt); err != nil {
				t.Fatal(err)
			}
			if err := e.Scale(y, y, 1); err != nil { // a twin cell, reading what the add wrote
				t.Fatal(err)
			}
			sameBits(t, "add by the incumbent, then scale by 1", y, want)
			if d := e.Stats().Submits - before.Submits; d != 1 {
				t.Errorf("%d submissions for the two calls, want 1", d)
			}
			tr := e.Trace()
			if len(tr) != 2 {
				t.Fatalf("trace has %d calls, want 2: %+v", len(tr), tr)
			}
			if c := tr[0]; c.Cell != "add/f32/"+e.Backend() || c.Impl != registry.Incumbent || c.Kernel != name || c.State != registry.Hand ||
				!c.Flushed || c.Groups != [3]uint32{5, 1, 1} {
				t.Errorf("add: %+v, want the incumbent %s in state hand over 5 blocks", c, name)
			}
			if c := tr[1]; c.Cell != "scale/f32/"+e.Backend() || c.Impl != registry.Twin || !strings.HasPrefix(c.Kernel, "lanes=") {
				t.Errorf("scale: %+v, want the twin", c)
			}

			// The manifest binds two buffers; add.cu declares three pointers.
			dir := t.TempDir()
			src, err := os.ReadFile(filepath.Join("..", "examples", "incumbents", "add.cu"))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "add.cu"), src, 0o644)
			man := `{"version": 1, "incumbents": [{"name": "bad", "op": "add", "type": "f32", "backend": "` + e.Backend() + `",
			  "source": {"` + e.Backend() + `": "add.cu"}, "entry": "hand_add_f32",
			  "bindings": [{"binding": 0, "operand": "a"}, {"binding": 1, "operand": "y"}],
			  "push_constants": [{"name": "n", "type": "u32", "value": "rows*n"}],
			  "workgroup_size": [256, 1, 1], "grid": ["cdiv(rows*n, 256)", 1, 1]}]}`
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(man), 0o644)
			bad, err := incumbent.Load(filepath.Join(dir, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			e2 := openEngine(t, Options{Backend: b, Registry: reg, Manifest: bad})
			err = e2.Add(zeros(t, e2, rows, n), upload(t, e2, a, rows, n), upload(t, e2, bv, rows, n))
			if err == nil || !strings.Contains(err.Error(), "3 pointer and 1 scalar") || !strings.Contains(err.Error(), "binds 2 buffers") {
				t.Errorf("a manifest that disagrees with the signature: %v", err)
			}
		})
	}
}
