package prebuilt_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/generate"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/prebuilt"
	"github.com/onesource-go/onesource/registry"
)

// TestCPURunsGeneratedKernel builds saxpy for the cpu backend into a Set in memory (the value a
// generated file declares) and runs it with the CPU executor, against saxpy's reference: no
// driver and no compiler take part. Placed with the default order and no GPU backend generated,
// the kernel lands on cpu.
func TestCPURunsGeneratedKernel(t *testing.T) {
	set, err := generate.NewSet("example.com/saxpy", saxpy.Kernels(), []string{"cpu"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := set.Kernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	if a := k.Artifact("cpu"); a == nil || !strings.HasSuffix(a.File, cpu.FileExt) {
		t.Fatalf("cpu artifact: %+v", a)
	}
	rt, err := prebuilt.NewRuntime(prebuilt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pl, err := rt.Place(k)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Placement().Backend != "cpu" {
		t.Fatalf("placed on %s, want cpu: %q", pl.Placement().Backend, pl.Placement().Considered)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = rng.Float32()*4-2, rng.Float32()*4-2
	}
	a := float32(-1.25)
	want := saxpy.Reference(a, x, y)
	bufs := [][]byte{vktest.F32s(x), vktest.F32s(y)}
	if err := pl.Run([3]uint32{(n + 63) / 64, 1, 1}, bufs, a, n); err != nil {
		t.Fatal(err)
	}
	got := vktest.ToF32(bufs[1])
	for i, w := range want {
		if math.Float32bits(got[i]) != math.Float32bits(w) {
			t.Fatalf("y[%d] = %g, want %g", i, got[i], w)
		}
	}
	if vktest.ToF32(bufs[0])[0] != x[0] {
		t.Error("the read-only buffer x was overwritten")
	}
	// The program's own check becomes registry evidence for this file: the next placement is
	// verified.
	if _, err := rt.Record(pl, true, 0, 1); err != nil {
		t.Fatal(err)
	}
	rt2, err := prebuilt.NewRuntime(prebuilt.Options{Registry: rt.Registry(), Backends: []string{"cpu"}, RequireVerified: true})
	if err != nil {
		t.Fatal(err)
	}
	pl2, err := rt2.Place(k)
	if err != nil || !pl2.Placement().Verified || pl2.Placement().State != registry.Fallback {
		t.Fatalf("after Record: %v %+v", err, pl2)
	}
}

// TestCPUOutOfBounds: a kernel that indexes past its buffer fails the run with the kernel's
// source line, through prebuilt as directly.
func TestCPUOutOfBounds(t *testing.T) {
	k := dsl.New("overrun", 64)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	y.Store(k.GlobalID(dsl.X), float32(1)) // no bound check in the kernel
	set, err := generate.NewSet("example.com/overrun", []*dsl.Kernel{k}, []string{"cpu"})
	if err != nil {
		t.Fatal(err)
	}
	pk, err := set.Kernel("overrun")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := prebuilt.NewRuntime(prebuilt.Options{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := rt.Place(pk)
	if err != nil {
		t.Fatal(err)
	}
	err = pl.Run([3]uint32{2, 1, 1}, [][]byte{make([]byte, 4*100)})
	var oob *cpu.OutOfBoundsError
	if !errors.As(err, &oob) || oob.Index != 100 || !strings.Contains(err.Error(), "prebuilt/cpu_test.go:") {
		t.Fatalf("error %v, want y[100] out of bounds at this file's line", err)
	}
}

// TestCPUFileChecked: a kernel file edited after generation is refused before anything runs it,
// and one whose kernel does not match the generated description is refused at load.
func TestCPUFileChecked(t *testing.T) {
	built, err := generate.Build(saxpy.Kernels(), []string{"cpu"})
	if err != nil {
		t.Fatal(err)
	}
	b := built[0]
	files := fstest.MapFS{}
	for _, f := range b.Files {
		files[f.Name] = &fstest.MapFile{Data: append([]byte(nil), f.Data...)}
	}
	name := b.Files[0].Name
	files[name].Data = []byte(strings.Replace(string(files[name].Data), `"op":"mul"`, `"op":"add"`, 1))
	set := prebuilt.NewSet("example.com/saxpy", files, []prebuilt.Kernel{b.Meta})
	if _, err := set.Kernel("saxpy"); err == nil || !strings.Contains(err.Error(), "changed after generation") {
		t.Fatalf("edited file: %v", err)
	}
	meta := b.Meta
	meta.Workgroup = [3]uint32{32, 1, 1}
	files[name].Data = b.Files[0].Data
	set = prebuilt.NewSet("example.com/saxpy", files, []prebuilt.Kernel{meta})
	k, err := set.Kernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := prebuilt.NewRuntime(prebuilt.Options{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Place(k); err == nil || !strings.Contains(err.Error(), "regenerate") {
		t.Fatalf("mismatched description: %v", err)
	}
}
