package cuda

import (
	"math"
	"testing"
)

// BenchmarkRuntimeLaunchOverhead launches an empty kernel (1 block of 32 threads) b.N times back
// to back on one stream with one final wait (Device.Bench). ns/op is the host's cost per launch;
// device-ns/launch is the device's time per launch between the events.
func BenchmarkRuntimeLaunchOverhead(b *testing.B) {
	d := rtOpenDevice(b)
	k := rtCompile(b, d, rtEmptySource, "empty")
	b.ResetTimer()
	res, err := d.Bench(k, nil, nil, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 10, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(res.Total.Nanoseconds())/float64(b.N), "device-ns/launch")
}

// BenchmarkRuntimeLaunchSync launches an empty kernel and waits for it, b.N times: the round trip
// of Device.Launch.
func BenchmarkRuntimeLaunchSync(b *testing.B) {
	d := rtOpenDevice(b)
	k := rtCompile(b, d, rtEmptySource, "empty")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Launch(k, nil, nil, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRuntimeSaxpy16M runs saxpy over 16Mi floats b.N times back to back (Device.Bench) and
// reports the device time per launch and the bandwidth of its 12 bytes per element.
func BenchmarkRuntimeSaxpy16M(b *testing.B) {
	d := rtOpenDevice(b)
	k := rtCompile(b, d, rtSaxpySource, "saxpy")
	const n = 16 << 20
	y, err := d.NewBuffer(4 * n)
	if err != nil {
		b.Fatal(err)
	}
	x, err := d.NewBuffer(4 * n)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(12 * n)
	b.ResetTimer()
	res, err := d.Bench(k, []*Buffer{y, x}, []uint32{math.Float32bits(0.5), n}, [3]uint32{n / 256, 1, 1}, [3]uint32{256, 1, 1}, 5, b.N)
	if err != nil {
		b.Fatal(err)
	}
	per := float64(res.Total.Nanoseconds()) / float64(b.N)
	b.ReportMetric(per, "device-ns/launch")
	b.ReportMetric(12*n/per, "device-GB/s")
}
