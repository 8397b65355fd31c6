package incumbent

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/hip"
)

// TestCFamilyLaunch instantiates the example CUDA and HIP incumbents (examples/incumbents/
// cuda.json) at a shape: the source and entry, the operands in binding order, the scalar
// argument, the block and the grid; defines and include folders become options; what a CUDA
// kernel cannot take is refused.
func TestCFamilyLaunch(t *testing.T) {
	m, err := Load(filepath.Join("..", "examples", "incumbents", "cuda.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"cuda", "hip"} {
		e := m.Entry("add", "f32", backend)
		l, err := e.CFamily(map[string]float64{"rows": 4, "n": 300})
		if err != nil {
			t.Fatal(err)
		}
		k := l.Kernel
		if k == nil || k.Backend != backend || k.Entry != "hand_add_f32" || !strings.Contains(k.Text, "y[i] = a[i] + b[i]") ||
			k.Block != [3]uint32{256, 1, 1} || len(k.Options) != 0 || l.Module != nil {
			t.Fatalf("%s: kernel %+v", backend, k)
		}
		if strings.Join(l.Operands, ",") != "a,b,y" || len(l.Push) != 4 || binary.LittleEndian.Uint32(l.Push) != 1200 ||
			l.Groups != [3]uint32{5, 1, 1} || len(l.Hash) != 64 {
			t.Fatalf("%s: launch %+v", backend, l)
		}
		if _, err := e.Vulkan(nil); err == nil || !strings.Contains(err.Error(), "not vulkan") {
			t.Errorf("%s: Vulkan of a %s entry: %v", backend, backend, err)
		}
	}
	if _, err := m.Incumbents[0].CFamily(map[string]float64{"rows": 4}); err == nil || !strings.Contains(err.Error(), `"n"`) {
		t.Errorf("a shape without n: %v", err)
	}

	dir := t.TempDir()
	src, _ := os.ReadFile(filepath.Join("..", "examples", "incumbents", "add.cu"))
	os.WriteFile(filepath.Join(dir, "add.cu"), src, 0o644)
	entry := func(extra string) *Entry {
		t.Helper()
		text := `{"version": 1, "incumbents": [{"op": "add", "type": "f32", "backend": "cuda", "entry": "hand_add_f32",
		  "source": {"cuda": "add.cu", "defines": {"B": "2", "A": "1"}, "include_dirs": ["inc"]},
		  "bindings": [{"binding": 0, "operand": "a"}, {"binding": 1, "operand": "b"}, {"binding": 2, "operand": "y"}],
		  "push_constants": [{"name": "n", "type": "u32", "value": "n"}],
		  "workgroup_size": [64, 1, 1], "grid": ["n/64", 1, 1]` + extra + `}]}`
		m, err := Parse([]byte(text), "m.json", dir)
		if err != nil {
			t.Fatal(err)
		}
		return m.Incumbents[0]
	}
	l, err := entry("").CFamily(map[string]float64{"n": 128})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Kernel.Options, " "); got != "-DA=1 -DB=2 -I "+filepath.Join(dir, "inc") {
		t.Errorf("options %q", got)
	}
	for extra, want := range map[string]string{
		`, "spec_constants": [{"id": 0, "type": "u32", "value": 1}]`: "no specialization constants",
		`, "features": ["float16"]`:                                  "apply to Vulkan incumbents",
		`, "entry": "nothing"`:                                       "no CUDA kernel definition",
	} {
		if _, err := entry(extra).CFamily(map[string]float64{"n": 128}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", extra, err, want)
		}
	}
}

// TestCFamilyExampleCompiles compiles the example add.cu with hipcc for gfx90a (HIP compiles the
// CUDA text unchanged), as the hip incumbent uses it; skipped without hipcc.
func TestCFamilyExampleCompiles(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "incumbents", "add.cu"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hip.CompileHIPCC(string(src), "gfx90a"); errors.Is(err, cfamily.ErrNoTool) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}
