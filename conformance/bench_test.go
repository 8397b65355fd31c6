package conformance_test

import (
	"encoding/binary"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/kernels"
)

// BenchmarkCells reports every twin's throughput on the Vulkan device (lavapipe here) with the
// kernel-only method of docs/contracts.md (buffers made once, warm-up, N dispatches in one submission,
// device timestamps), on the cell's largest conformance case. GB/s counts the bytes of every
// buffer the case binds, read or written once: the op's minimal traffic for these ops. The
// weight ops at model sizes are in kernels' BenchmarkWeights.
func BenchmarkCells(b *testing.B) {
	d := vktest.Device(b)
	for _, c := range kernels.Cells() {
		c := c
		b.Run(c.Name(), func(b *testing.B) {
			s := c.DefaultScheduleFor("vulkan", d.Caps().SubgroupSize)
			k, err := c.Build(s).Build()
			if err != nil {
				b.Fatal(err)
			}
			cases, err := c.Cases(s)
			if err != nil || len(cases) == 0 {
				b.Fatalf("cases: %v", err)
			}
			big, size := cases[0], 0
			for _, cs := range cases {
				n := 0
				for _, buf := range cs.Buffers {
					n += len(buf)
				}
				if n > size {
					big, size = cs, n
				}
			}
			m, err := vulkan.Compile(k, d.Caps())
			if err != nil {
				b.Fatal(err)
			}
			p, err := d.Pipeline(m)
			if err != nil {
				b.Fatal(err)
			}
			bufs := make([]*vulkan.Buffer, len(big.Buffers))
			for i, data := range big.Buffers {
				n := len(data)
				if n == 0 {
					n = 4
				}
				if bufs[i], err = d.NewBuffer(n); err != nil {
					b.Fatal(err)
				}
				defer bufs[i].Release()
				if err := bufs[i].Write(0, data); err != nil {
					b.Fatal(err)
				}
			}
			push := make([]byte, 4*len(big.Params))
			for i, v := range big.Params {
				binary.LittleEndian.PutUint32(push[4*i:], v)
			}
			b.ResetTimer()
			r, err := d.Bench(p, bufs, push, big.Groups, 3, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(r.PerDispatch.Nanoseconds()), "ns/dispatch")
			b.ReportMetric(float64(size)/float64(r.PerDispatch.Nanoseconds()), "GB/s")
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
