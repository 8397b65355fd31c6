package q8dot_test

import (
	"math/rand"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/examples/q8dot"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/oracle"
)

// TestLavapipe runs the packed-dot block product on the Vulkan device, once with the device's
// packed dot (OpSDot) and once legalized to unpack + multiply-add, and compares both with the
// plain-Go reference bit for bit. Quants span the whole int8 range, -128 included.
func TestLavapipe(t *testing.T) {
	d := vktest.Device(t)
	if !d.Caps().DotI8x4 {
		t.Log("device has no packed int8 dot: both runs use the legalized form")
	}
	rng := rand.New(rand.NewSource(3))
	for _, c := range []struct{ rows, nb, wg int }{{1, 1, 64}, {7, 37, 64}, {4, 300, 32}, {3, 128, 128}, {4, 300, 8}} {
		wq := make([]uint32, c.rows*c.nb*q8dot.WordsPerBlock)
		xq := make([]uint32, c.nb*q8dot.WordsPerBlock)
		for i := range wq {
			wq[i] = rng.Uint32()
		}
		for i := range xq {
			xq[i] = rng.Uint32()
		}
		wq[0] = 0x80808080 // -128 in every byte
		xq[0] = 0x80808080
		wd := make([]uint16, c.rows*c.nb)
		xd := make([]uint16, c.nb)
		for i := range wd {
			wd[i] = oracle.F32ToF16(float32(rng.Float64() * 0.01))
		}
		for i := range xd {
			xd[i] = oracle.F32ToF16(float32(rng.Float64() * 0.05))
		}
		want := q8dot.Reference(wq, wd, xq, xd, c.rows, c.nb)
		for _, target := range []struct {
			name string
			m    *vulkan.Module
		}{
			{"device", vktest.Compile(t, q8dot.Dot(c.wg), d.Caps())},
			{"portable", vktest.Compile(t, q8dot.Dot(c.wg), vulkan.PortableCaps)},
		} {
			bufs := [][]byte{vktest.U32s(wq), vktest.U16s(wd), vktest.U32s(xq), vktest.U16s(xd), make([]byte, 4*c.rows)}
			out := vktest.RunModule(t, d, target.m, bufs, vktest.Push(c.nb), [3]uint32{uint32(c.rows), 1, 1})
			got := vktest.ToF32(out[4])
			if i := vktest.DiffF32(got, want); i >= 0 {
				t.Fatalf("%+v %s: row %d = %g, want %g", c, target.name, i, got[i], want[i])
			}
		}
	}
}
