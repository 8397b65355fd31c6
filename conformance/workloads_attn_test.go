package conformance_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/kernels"
)

// TestAttnDecodeShapes checks attn_decode's shape variables: the positional form n_kv x heads x
// head_dim, ShortShape and ShapeString reading back through ParseShape, and the shapes
// NewWorkload refuses.
func TestAttnDecodeShapes(t *testing.T) {
	if got, want := conformance.ShapeVars("attn_decode"), []string{"n_kv", "heads", "head_dim"}; !slices.Equal(got, want) {
		t.Errorf("ShapeVars(attn_decode) = %v, want %v", got, want)
	}
	def, ok := conformance.DefaultShape("attn_decode", "f32")
	if !ok {
		t.Fatal("attn_decode/f32 has no default shape")
	}
	for _, c := range []struct {
		text string
		want map[string]float64
	}{
		{"4096x32x128", map[string]float64{"n_kv": 4096, "heads": 32, "head_dim": 128}},
		{"1x8x64,kv_heads=2,scale=0.125", map[string]float64{"n_kv": 1, "heads": 8, "head_dim": 64, "kv_heads": 2, "scale": 0.125}},
		{"kv_heads=4,n_kv=100000", map[string]float64{"kv_heads": 4, "n_kv": 100000}},
		{conformance.ShortShape("attn_decode", def), def},
		{conformance.ShapeString(def), def},
	} {
		got, err := conformance.ParseShape("attn_decode", c.text)
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("ParseShape(attn_decode, %q) = %v, %v; want %v", c.text, got, err, c.want)
			continue
		}
		for _, form := range []string{conformance.ShortShape("attn_decode", got), conformance.ShapeString(got)} {
			if back, err := conformance.ParseShape("attn_decode", form); err != nil || !maps.Equal(back, got) {
				t.Errorf("ParseShape(attn_decode, %q) = %v, %v: does not read back %v", form, back, err, got)
			}
		}
	}
	if got := conformance.ShortShape("attn_decode", def); !strings.HasPrefix(got, "4096x32x128,") {
		t.Errorf("ShortShape of the default = %q, want it to start 4096x32x128,", got)
	}
	for _, b := range []struct{ text, says string }{
		{"4096x32", "n_kv x heads x head_dim"},
		{"n_kv=0", "positive integer"},
		{"rows=2", `no shape variable "rows"`},
		{"scale=inf", "finite"},
	} {
		if _, err := conformance.ParseShape("attn_decode", b.text); err == nil || !strings.Contains(err.Error(), b.says) {
			t.Errorf("ParseShape(attn_decode, %q): %v; want an error saying %q", b.text, err, b.says)
		}
	}
	s := kernels.Schedule{Lanes: 64}
	for _, c := range []struct {
		shape map[string]float64
		says  string
	}{
		{map[string]float64{"heads": 6, "kv_heads": 4}, "multiple"},
		{map[string]float64{"heads": 70000, "kv_heads": 1, "head_dim": 1, "n_kv": 1}, "workgroups"},
		{map[string]float64{"n_kv": 1 << 20, "kv_heads": 8, "head_dim": 128}, "values in one operand"},
	} {
		if _, err := conformance.NewWorkload("attn_decode", "f32", c.shape, s); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("NewWorkload(attn_decode/f32, %v): %v; want an error saying %q", c.shape, err, c.says)
		}
	}
	// The default shape builds (no device): the twin's parameters and grid, and out as the output.
	w, err := conformance.NewWorkload("attn_decode", "f32", nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if w.TwinGroups != [3]uint32{32, 1, 1} || w.Derived["kv_stride"] != 8*128 || w.Derived["scores_stride"] != 4096 {
		t.Errorf("default workload: grid %v, derived %s", w.TwinGroups, conformance.ShapeString(w.Derived))
	}
}
