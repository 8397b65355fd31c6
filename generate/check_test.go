package generate

import (
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
)

func scaleKernel(lanes int, factor float32) *dsl.Kernel {
	k := dsl.New("scale_it", lanes)
	x := k.Buffer("x", dsl.F32, dsl.ReadWrite)
	i := k.GlobalID(dsl.X)
	x.Store(i, x.Load(i).Mul(factor))
	return k
}

// TestCheck: a set generated from the kernels checks clean; an edited kernel (another body, or
// another schedule) is stale; a kernel with no generated files, one the package dropped, and a
// set generated before the IR hash was recorded are errors that say to run go generate.
func TestCheck(t *testing.T) {
	set, err := NewSet("p", []*dsl.Kernel{scaleKernel(64, 2)}, []string{"vulkan"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(set, []*dsl.Kernel{scaleKernel(64, 2)}); err != nil {
		t.Fatalf("fresh set: %v", err)
	}
	for _, c := range []struct {
		name string
		ks   []*dsl.Kernel
		want string
	}{
		{"edited body", []*dsl.Kernel{scaleKernel(64, 3)}, "are stale"},
		{"edited schedule", []*dsl.Kernel{scaleKernel(128, 2)}, "are stale"},
		{"new kernel", []*dsl.Kernel{scaleKernel(64, 2), dsl.New("other", 64)}, "other has no generated files"},
		{"dropped kernel", nil, "no longer builds"},
	} {
		if err := Check(set, c.ks); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "go generate") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	old := set.Kernels()[0]
	old.IRHash = ""
	if err := Check(set, []*dsl.Kernel{scaleKernel(64, 2)}); err == nil || !strings.Contains(err.Error(), "record no IR hash") {
		t.Errorf("a set without IR hashes: %v", err)
	}
}
