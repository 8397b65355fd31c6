package cuda_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/internal/islandtest"
	"github.com/onesource-go/onesource/ir"
)

// islandDevice opens the CUDA GPU (level X) where there is one, else the emulated device (level
// H: host emulation of the text, the PTX instruction included), with the architecture the native
// body is lowered for: the GPU's own, or sm_80 on the emulated device.
func islandDevice(t testing.TB) (d *cuda.Device, arch, level string) {
	t.Helper()
	if err := cuda.Available(); err == nil {
		d, err := cuda.Open(0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d, d.Info().Arch, "X (" + d.Info().Name + ", " + d.Info().Arch + ")"
	}
	d, err := cuda.OpenEmulated()
	if errors.Is(err, host.ErrUnavailable) || errors.Is(err, cuda.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, "sm_80", "H (the emulated device: host emulation, not a GPU)"
}

// runIsland compiles the text of k for arch on d and runs it over bufs (a, b, d) on groups
// workgroups, returning d's bytes.
func runIsland(t testing.TB, dev *cuda.Device, src, name string, bufs [][]byte, groups uint32) []byte {
	t.Helper()
	kern, err := dev.Compile(src, name)
	if err != nil {
		t.Fatal(err)
	}
	var bs []*cuda.Buffer
	for _, b := range bufs {
		buf, err := dev.NewBuffer(len(b))
		if err != nil {
			t.Fatal(err)
		}
		defer buf.Release()
		if err := buf.Write(0, b); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, buf)
	}
	if err := dev.Launch(kern, bs, nil, [3]uint32{groups, 1, 1}, [3]uint32{islandtest.WG, 1, 1}); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(bufs[2]))
	if err := bs[2].Read(0, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIslandDevice runs the mma island on the CUDA device: natively (mma.sync, for the GPU's
// architecture) and as its portable body (sm_61 text), every input pattern, against the oracle.
// On a GPU this is level X, the island on the tensor cores; without one it runs on the emulated
// device (level H), which is how scripts/gpu-check.sh's CUDA tests are tried here.
func TestIslandDevice(t *testing.T) {
	dev, arch, level := islandDevice(t)
	for _, a := range []string{arch, "sm_61"} {
		var srcs [2]string
		for i, acc := range []bool{false, true} {
			k, err := islandtest.Kernel(acc).Build()
			if err != nil {
				t.Fatal(err)
			}
			if srcs[i], err = cuda.EmitFor(k, a); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range islandtest.Cases() {
			i, name := 0, "mma_i8"
			if c.Accumulate {
				i, name = 1, "mma_i8_acc"
			}
			if d := islandtest.Diff(runIsland(t, dev, srcs[i], name, c.Bufs(), c.Groups), c.Want); d != "" {
				t.Errorf("%s, %s body: %s", c.Name, cuda.IslandBody(ir.IslandMMAI8, a), d)
			}
		}
		t.Logf("level %s: the %s body bit-exact against oracle.TileMMAI8 on %d launches", level, cuda.IslandBody(ir.IslandMMAI8, a), len(islandtest.Cases()))
	}
}

// BenchmarkIslandGPU times the mma island natively (mma.sync) against its portable body on the
// GPU: 8192 workgroups, 3 tiles each, 16 products per tile (islandtest.BenchKernel), timed by
// the device's events; both bodies must give the same bytes. It reports each body's time per
// launch and, on the native one, its speed over the portable one (x_portable). Skipped without a
// GPU (the emulated device's timings say nothing about one).
func BenchmarkIslandGPU(b *testing.B) {
	if err := cuda.Available(); err != nil {
		b.Skip(err)
	}
	dev, err := cuda.Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	const groups, repeat = 8192, 16
	k, err := islandtest.BenchKernel(repeat).Build()
	if err != nil {
		b.Fatal(err)
	}
	cs := islandtest.Cases()[1] // random, accumulating
	tiles := groups * islandtest.TilesPerGroup
	grow := func(x []byte) []byte { return bytes.Repeat(x, tiles/(int(cs.Groups)*islandtest.TilesPerGroup)) }
	bufs := [][]byte{grow(cs.A), grow(cs.B), grow(cs.D)}
	var outs [2][]byte
	var per [2]float64
	for i, a := range []string{dev.Info().Arch, "sm_61"} {
		body := cuda.IslandBody(ir.IslandMMAI8, a)
		b.Run(map[int]string{0: "native", 1: "portable"}[i], func(b *testing.B) {
			src, err := cuda.EmitFor(k, a)
			if err != nil {
				b.Fatal(err)
			}
			outs[i] = runIsland(b, dev, src, k.Name, bufs, groups)
			kern, err := dev.Compile(src, k.Name)
			if err != nil {
				b.Fatal(err)
			}
			var bs []*cuda.Buffer
			for _, x := range bufs {
				buf, err := dev.NewBuffer(len(x))
				if err != nil {
					b.Fatal(err)
				}
				defer buf.Release()
				if err := buf.Write(0, x); err != nil {
					b.Fatal(err)
				}
				bs = append(bs, buf)
			}
			r, err := dev.Bench(kern, bs, nil, [3]uint32{groups, 1, 1}, [3]uint32{islandtest.WG, 1, 1}, 3, max(b.N, 10))
			if err != nil {
				b.Fatal(err)
			}
			per[i] = float64(r.PerDispatch.Nanoseconds())
			b.ReportMetric(per[i], "ns/launch")
			macs := float64(tiles) * repeat * 16 * 16 * 32
			b.ReportMetric(macs*2/per[i], "GOPS")
			if i == 1 && per[0] > 0 {
				b.ReportMetric(per[1]/per[0], "x_native_speedup")
			}
			b.Logf("%s body (%s): %.0f ns per launch", body, a, per[i])
		})
	}
	if outs[0] != nil && outs[1] != nil && !bytes.Equal(outs[0], outs[1]) {
		b.Fatalf("the native and portable bodies differ: %s", islandtest.Diff(outs[0], outs[1]))
	}
}
