package incumbent

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: Parse never panics, and every expression of a manifest it accepts evaluates (to a
// value or an error) without panicking, whatever the variables.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "examples", "incumbents", "manifest.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"version": 1, "incumbents": [{"op": "add", "type": "f32", "backend": "vulkan", "source": {"spirv": "k.spv"},
		"bindings": [{"binding": 0, "operand": "a"}], "push_constants": [{"name": "n", "type": "u32", "value": "n > 4 ? n % 3 : -n"}],
		"workgroup_size": [64, 1, 1], "grid": ["cdiv(n, 64)", 1, 1],
		"variants": [{"when": "n == 0 || !(n < 8) && rows", "grid": [1, 1, 1]}]}]}`))
	f.Add([]byte(`{"version": 1, "incumbents": []}`))
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "k.spv"), []byte{3, 2, 35, 7}, 0o644)
	os.WriteFile(filepath.Join(dir, "add.comp"), []byte("#version 450\nvoid main(){}\n"), 0o644)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b, "fuzz.json", dir)
		if err != nil {
			return
		}
		for _, e := range m.Incumbents {
			_ = e.Cell()
			_ = e.Operands()
			for _, vars := range []map[string]float64{{}, {"n": 0, "rows": 0}, {"n": 1e300, "rows": -1}} {
				for _, v := range e.Vars() {
					if _, ok := vars[v]; !ok {
						vars[v] = 7
					}
				}
				for _, x := range e.exprs {
					x.EvalInt(vars)
					x.EvalFloat(vars)
				}
			}
		}
	})
}
