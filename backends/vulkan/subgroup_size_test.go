package vulkan_test

import (
	"encoding/binary"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/lower"
)

// TestNarrowWorkgroup: a kernel that uses no subgroup operation records no subgroup size, so a
// workgroup narrower than the device's subgroups (one invocation, a row each) makes a pipeline
// and runs; a kernel that uses subgroups still records the size the lowering assumed. The
// narrow kernel was refused ("requires full subgroups of 8 but its workgroup width 1 is not a
// multiple of it") on lavapipe.
func TestNarrowWorkgroup(t *testing.T) {
	narrow := dsl.New("narrow", 1)
	x := narrow.Buffer("x", dsl.U32, dsl.Read)
	y := narrow.Buffer("y", dsl.U32, dsl.Write)
	g := narrow.WorkgroupID(dsl.X)
	y.Store(g, x.Load(g).Add(uint32(7)))
	nk, err := narrow.Build()
	if err != nil {
		t.Fatal(err)
	}
	caps := lower.Caps{SubgroupSize: 8}
	m, err := vulkan.Compile(nk, caps)
	if err != nil {
		t.Fatal(err)
	}
	if m.SubgroupSize != 0 {
		t.Errorf("a kernel without subgroup operations records subgroup size %d, want 0", m.SubgroupSize)
	}
	wide := dsl.New("wide", 8)
	z := wide.Buffer("z", dsl.U32, dsl.Write)
	z.Store(wide.GlobalID(dsl.X), wide.LaneID())
	wk, err := wide.Build()
	if err != nil {
		t.Fatal(err)
	}
	if wm, err := vulkan.Compile(wk, caps); err != nil || wm.SubgroupSize != 8 {
		t.Errorf("a kernel reading its subgroup lane: subgroup size %v (%v), want 8", wm.SubgroupSize, err)
	}
	if err := vulkan.Available(); err != nil {
		t.Skipf("emission checked; not run: %v", err)
	}
	d, err := vulkan.Open(vulkan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dm, err := d.Compile(nk)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Pipeline(dm)
	if err != nil {
		t.Fatalf("a one-invocation workgroup on %s (subgroups of %d): %v", d.Info().Name, d.Caps().SubgroupSize, err)
	}
	const n = 5
	in := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(in[4*i:], uint32(100*i))
	}
	bx, err := d.NewBuffer(len(in))
	if err != nil {
		t.Fatal(err)
	}
	defer bx.Release()
	by, err := d.NewBuffer(len(in))
	if err != nil {
		t.Fatal(err)
	}
	defer by.Release()
	if err := bx.Write(0, in); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(p, []*vulkan.Buffer{bx, by}, nil, [3]uint32{n, 1, 1}); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(in))
	if err := by.Read(0, out); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := binary.LittleEndian.Uint32(out[4*i:]); got != uint32(100*i+7) {
			t.Errorf("y[%d] = %d, want %d", i, got, 100*i+7)
		}
	}
}
