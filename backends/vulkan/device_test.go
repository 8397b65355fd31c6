package vulkan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// openDevice opens the default device with opts, or skips the test when Vulkan is unavailable.
func openDevice(t testing.TB, opts Options) *Device {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// compileGLSL compiles a GLSL compute shader with glslc (no optimisation), or skips the test
// when glslc is missing.
func compileGLSL(t testing.TB, src string) []uint32 {
	t.Helper()
	glslc, err := exec.LookPath("glslc")
	if err != nil {
		t.Skipf("glslc not found: %v", err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "k.comp")
	out := filepath.Join(dir, "k.spv")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(glslc, "-fshader-stage=compute", "--target-env=vulkan1.3", "-O0", "-o", out, in).CombinedOutput(); err != nil {
		t.Fatalf("glslc: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	words := make([]uint32, len(b)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return words
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// sharedGLSL reverses each workgroup's slice of x through a shared array and writes
// y[i] = x[reversed] * pc.scale + lane for i < pc.n.
const sharedGLSL = `#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer In { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform Push { uint n; float scale; } pc;
shared float tile[64];
void main() {
	uint i = gl_GlobalInvocationID.x;
	uint l = gl_LocalInvocationID.x;
	tile[l] = i < pc.n ? x[i] : 0.0;
	barrier();
	float v = tile[63u - l];
	if (i < pc.n) {
		y[i] = v * pc.scale + float(l);
	}
}
`

func sharedModule(t testing.TB) *Module {
	return &Module{
		Name:             "main",
		Words:            compileGLSL(t, sharedGLSL),
		Bindings:         []Binding{{Name: "x", ElemSize: 4, ReadOnly: true}, {Name: "y", ElemSize: 4}},
		PushConstantSize: 8,
		WorkgroupSize:    [3]uint32{64, 1, 1},
		SharedBytes:      64 * 4,
	}
}

func sharedPush(n uint32, scale float32) []byte {
	push := make([]byte, 8)
	binary.LittleEndian.PutUint32(push[0:], n)
	binary.LittleEndian.PutUint32(push[4:], math.Float32bits(scale))
	return push
}

// sharedWant computes what sharedGLSL writes, in Go.
func sharedWant(x []float32, n int, scale float32, size int) []float32 {
	y := make([]float32, size)
	for i := 0; i < n; i++ {
		l := i % 64
		src := i - l + 63 - l
		v := float32(0)
		if src < n {
			v = x[src]
		}
		y[i] = v*scale + float32(l)
	}
	return y
}

func TestDevicesInfo(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) == 0 {
		t.Fatal("Available but no devices")
	}
	for _, d := range devs {
		t.Logf("device %d: %s (%s) vendor %#x device %#x, driver %s %q, Vulkan %v, subgroup %d [%d..%d] control %v, shared %d, workgroup %v/%d, timestamps %v period %gns, features: %s",
			d.Index, d.Name, d.Type, d.VendorID, d.DeviceID, d.DriverName, d.DriverInfo, d.APIVersion,
			d.SubgroupSize, d.MinSubgroupSize, d.MaxSubgroupSize, d.SubgroupSizeControl, d.MaxComputeSharedMemory,
			d.MaxWorkgroupSize, d.MaxWorkgroupInvocations, d.Timestamps, d.TimestampPeriod, featureList(d.Features))
		if d.Name == "" || d.SubgroupSize == 0 || d.MaxWorkgroupInvocations < 128 || d.MaxComputeSharedMemory < 16384 {
			t.Errorf("device %d: implausible info %+v", d.Index, d)
		}
		if d.EnabledFeatures != (Features{}) {
			t.Errorf("device %d: Devices reports enabled features %+v", d.Index, d.EnabledFeatures)
		}
		if !strings.Contains(d.Name, "llvmpipe") {
			continue
		}
		// Mesa lavapipe, as on the reference machine.
		if d.DriverName != "llvmpipe" || !strings.Contains(d.DriverInfo, "Mesa") {
			t.Errorf("lavapipe driver %q %q", d.DriverName, d.DriverInfo)
		}
		if d.APIVersion < version13 || d.Type != "CPU" || d.VendorID != 0x10005 {
			t.Errorf("lavapipe: Vulkan %v, type %q, vendor %#x", d.APIVersion, d.Type, d.VendorID)
		}
		if d.SubgroupSize != 8 || d.MinSubgroupSize != 8 || d.MaxSubgroupSize != 8 || !d.SubgroupSizeControl {
			t.Errorf("lavapipe subgroups: %d [%d..%d] control %v", d.SubgroupSize, d.MinSubgroupSize, d.MaxSubgroupSize, d.SubgroupSizeControl)
		}
		all := Features{Int8: true, Int16: true, Float16: true, Float64: true, StorageBuffer8: true,
			StorageBuffer16: true, IntegerDotProduct: true, SubgroupShuffle: true, SubgroupBasic: true, SubgroupArithmetic: true,
			AtomicFloat32Add: true} // vulkaninfo: shaderBufferFloat32AtomicAdd and shaderSharedFloat32AtomicAdd true
		if d.Features != all {
			t.Errorf("lavapipe features %+v, want all", d.Features)
		}
		if !d.Timestamps || d.TimestampPeriod <= 0 {
			t.Errorf("lavapipe timestamps %v period %g", d.Timestamps, d.TimestampPeriod)
		}
		if d.MaxComputeSharedMemory != 32768 || d.MaxWorkgroupInvocations != 1024 {
			t.Errorf("lavapipe limits: shared %d invocations %d", d.MaxComputeSharedMemory, d.MaxWorkgroupInvocations)
		}
	}
}

func TestOpenFeatures(t *testing.T) {
	d := openDevice(t, Options{})
	info := d.Info()
	if info.EnabledFeatures != info.Features {
		t.Errorf("nil Features enabled %+v, supported %+v", info.EnabledFeatures, info.Features)
	}
	d2 := openDevice(t, Options{Features: &Features{Int8: true}})
	if got := d2.Info().EnabledFeatures; got != (Features{Int8: true}) {
		t.Errorf("enabled %+v, want Int8 only", got)
	}
	if _, err := Open(Options{DeviceIndex: 99}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("DeviceIndex 99: %v", err)
	}
	if _, err := Open(Options{DeviceIndex: -1}); err == nil {
		t.Errorf("DeviceIndex -1 opened")
	}
	if miss := missingFeatures(info.Features, info.Features); len(miss) != 0 {
		t.Errorf("missing %v", describeMissing(miss))
	}
	// A device lacking a requested feature: lavapipe has them all, so ask for one on a copy
	// of its support with the feature removed, through the same check Open makes.
	have := info.Features
	have.IntegerDotProduct = false
	if m := missingFeatures(Features{IntegerDotProduct: true}, have); len(m) != 1 || !strings.Contains(describeMissing(m), "IntegerDotProduct") {
		t.Errorf("missing: %v", describeMissing(m))
	}
}

func TestBufferRoundTrip(t *testing.T) {
	d := openDevice(t, Options{})
	b, err := d.NewBuffer(1000)
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() != 1000 {
		t.Errorf("Size %d", b.Size())
	}
	got := make([]byte, 1000)
	if err := b.Read(0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, make([]byte, 1000)) {
		t.Errorf("new buffer not zero")
	}
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	if err := b.Write(100, data); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, 300)
	if err := b.Read(100, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, data) {
		t.Errorf("read back differs")
	}
	if err := b.Read(0, got); err != nil || got[99] != 0 || got[400] != 0 || got[100] != 1 {
		t.Errorf("neighbours touched: %v", err)
	}
	for _, c := range []struct {
		off, n int
	}{{-1, 1}, {999, 2}, {1000, 1}, {1001, 0}, {0, 1001}, {math.MaxInt, 1}} {
		if err := b.Write(c.off, make([]byte, c.n)); err == nil {
			t.Errorf("Write(%d, %d bytes) succeeded", c.off, c.n)
		}
		if err := b.Read(c.off, make([]byte, c.n)); err == nil {
			t.Errorf("Read(%d, %d bytes) succeeded", c.off, c.n)
		}
	}
	if err := b.Write(1000, nil); err != nil {
		t.Errorf("empty write at the end: %v", err)
	}
	for _, size := range []int{0, -5, int(d.Info().MaxStorageBufferRange) + 1} {
		if _, err := d.NewBuffer(size); err == nil {
			t.Errorf("NewBuffer(%d) succeeded", size)
		}
	}
	b.Release()
	b.Release()
	if err := b.Write(0, data); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("write after release: %v", err)
	}
}

func TestRunSharedPushConstants(t *testing.T) {
	d := openDevice(t, Options{})
	m := sharedModule(t)
	p, err := d.Pipeline(m)
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 1000, 1024
	x := make([]float32, size)
	for i := range x {
		x[i] = float32(i)*0.25 - 100
	}
	in, err := d.NewBuffer(4 * size)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.NewBuffer(4 * size)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Write(0, f32bytes(x)); err != nil {
		t.Fatal(err)
	}
	for _, scale := range []float32{2, -0.5} {
		if err := d.Run(p, []*Buffer{in, out}, sharedPush(n, scale), [3]uint32{(n + 63) / 64, 1, 1}); err != nil {
			t.Fatal(err)
		}
		raw := make([]byte, 4*size)
		if err := out.Read(0, raw); err != nil {
			t.Fatal(err)
		}
		got, want := bytesF32(raw), sharedWant(x, n, scale, size)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("scale %g: y[%d] = %g, want %g", scale, i, got[i], want[i])
			}
		}
	}
	// The same module gives the same cached pipeline.
	if p2, err := d.Pipeline(sharedModule(t)); err != nil || p2 != p {
		t.Errorf("pipeline not cached: %p %p %v", p, p2, err)
	}
}

func TestRunValidation(t *testing.T) {
	d := openDevice(t, Options{})
	p, err := d.Pipeline(sharedModule(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.NewBuffer(256)
	b, _ := d.NewBuffer(256)
	c, _ := d.NewBuffer(256)
	c.Release()
	push := sharedPush(64, 1)
	for _, tc := range []struct {
		name   string
		bufs   []*Buffer
		push   []byte
		groups [3]uint32
		want   string
	}{
		{"one buffer", []*Buffer{a}, push, [3]uint32{1, 1, 1}, "2 buffer bindings, got 1"},
		{"three buffers", []*Buffer{a, b, a}, push, [3]uint32{1, 1, 1}, "2 buffer bindings, got 3"},
		{"nil buffer", []*Buffer{a, nil}, push, [3]uint32{1, 1, 1}, "buffer 1 (y) is nil"},
		{"released", []*Buffer{a, c}, push, [3]uint32{1, 1, 1}, "released"},
		{"short push", []*Buffer{a, b}, push[:4], [3]uint32{1, 1, 1}, "8 bytes of push constants, got 4"},
		{"groups", []*Buffer{a, b}, push, [3]uint32{1, 1 << 31, 1}, "maxComputeWorkGroupCount"},
	} {
		err := d.Run(p, tc.bufs, tc.push, tc.groups)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
		if _, err := d.Bench(p, tc.bufs, tc.push, tc.groups, 1, 1); err == nil {
			t.Errorf("%s: Bench accepted it", tc.name)
		}
	}
	if _, err := d.Bench(p, []*Buffer{a, b}, push, [3]uint32{1, 1, 1}, 0, 0); err == nil {
		t.Errorf("Bench with n=0 accepted")
	}
	if err := d.Run(nil, nil, nil, [3]uint32{1, 1, 1}); err == nil {
		t.Errorf("Run(nil pipeline) accepted")
	}
}

func TestPipelineChecks(t *testing.T) {
	d := openDevice(t, Options{})
	base := sharedModule(t)
	info := d.Info()
	mod := func(f func(m *Module)) *Module {
		m := *base
		f(&m)
		return &m
	}
	for _, tc := range []struct {
		name string
		m    *Module
		want string
	}{
		{"shared", mod(func(m *Module) { m.SharedBytes = info.MaxComputeSharedMemory + 4 }), "maxComputeSharedMemorySize"},
		{"workgroup dim", mod(func(m *Module) { m.WorkgroupSize = [3]uint32{info.MaxWorkgroupSize[0] + 1, 1, 1} }), "maxComputeWorkGroupSize"},
		{"invocations", mod(func(m *Module) { m.WorkgroupSize = [3]uint32{64, 64, 1} }), "maxComputeWorkGroupInvocations"},
		{"zero dim", mod(func(m *Module) { m.WorkgroupSize = [3]uint32{64, 0, 1} }), "zero dimension"},
		{"push", mod(func(m *Module) { m.PushConstantSize = info.MaxPushConstantsSize + 4 }), "maxPushConstantsSize"},
		{"not spirv", mod(func(m *Module) { m.Words = []uint32{1, 2, 3, 4, 5} }), "not SPIR-V"},
		{"no name", mod(func(m *Module) { m.Name = "" }), "entry point"},
		{"bad entry", mod(func(m *Module) { m.Name = "nosuch" }), `no GLCompute entry point "nosuch"`},
		{"malformed", mod(func(m *Module) {
			m.Words = slices.Clone(m.Words)
			m.Words[5] |= 0xFFFF << 16 // first instruction runs past the end
		}), "malformed SPIR-V"},
	} {
		_, err := d.Pipeline(tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestPipelineFeatureNotEnabled opens a device with no optional features and asks for a
// pipeline whose module needs integer dot products: refused, naming the feature.
func TestPipelineFeatureNotEnabled(t *testing.T) {
	d := openDevice(t, Options{Features: &Features{}})
	if d.Info().EnabledFeatures != (Features{}) {
		t.Fatalf("enabled %+v", d.Info().EnabledFeatures)
	}
	m := sharedModule(t)
	m.Features.IntegerDotProduct = true
	_, err := d.Pipeline(m)
	if err == nil || !strings.Contains(err.Error(), "IntegerDotProduct") || !strings.Contains(err.Error(), "not enabled") {
		t.Fatalf("got %v, want an error naming IntegerDotProduct", err)
	}
	t.Log(err)
	// The same module without the feature is fine.
	m.Features = Features{}
	if _, err := d.Pipeline(m); err != nil {
		t.Fatal(err)
	}
}

const subgroupGLSL = `#version 450
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 32) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { uint o[]; };
void main() {
	uint i = gl_LocalInvocationID.x;
	o[3u * i + 0u] = gl_SubgroupSize;
	o[3u * i + 1u] = gl_SubgroupInvocationID;
	o[3u * i + 2u] = gl_SubgroupID;
}
`

func TestRequiredSubgroupSize(t *testing.T) {
	d := openDevice(t, Options{})
	info := d.Info()
	if !info.SubgroupSizeControl {
		t.Skipf("%s cannot require a subgroup size", info.Name)
	}
	size := info.MinSubgroupSize
	m := &Module{
		Name:          "main",
		Words:         compileGLSL(t, subgroupGLSL),
		Bindings:      []Binding{{Name: "o", ElemSize: 4}},
		WorkgroupSize: [3]uint32{32, 1, 1},
		SubgroupSize:  size,
		Features:      Features{SubgroupBasic: true},
	}
	p, err := d.Pipeline(m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.NewBuffer(3 * 4 * 32)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(p, []*Buffer{out}, nil, [3]uint32{1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, out.Size())
	if err := out.Read(0, raw); err != nil {
		t.Fatal(err)
	}
	for i := uint32(0); i < 32; i++ {
		sz := binary.LittleEndian.Uint32(raw[12*i:])
		lane := binary.LittleEndian.Uint32(raw[12*i+4:])
		sg := binary.LittleEndian.Uint32(raw[12*i+8:])
		if sz != size || lane != i%size || sg != i/size {
			t.Fatalf("invocation %d: subgroup size %d lane %d subgroup %d, want %d %d %d", i, sz, lane, sg, size, i%size, i/size)
		}
	}
	if strings.Contains(info.Name, "llvmpipe") && size != 8 {
		t.Errorf("lavapipe subgroup size %d, want 8", size)
	}

	bad := *m
	bad.SubgroupSize = info.MaxSubgroupSize * 2
	if _, err := d.Pipeline(&bad); err == nil || !strings.Contains(err.Error(), "subgroup size") {
		t.Errorf("subgroup size %d: %v", bad.SubgroupSize, err)
	}
	bad = *m
	bad.SubgroupSize = 3
	if _, err := d.Pipeline(&bad); err == nil {
		t.Errorf("subgroup size 3 accepted")
	}
	if size > 1 {
		bad = *m
		bad.WorkgroupSize = [3]uint32{size / 2, 1, 1}
		if _, err := d.Pipeline(&bad); err == nil || !strings.Contains(err.Error(), "multiple") {
			t.Errorf("workgroup %v with subgroup %d: %v", bad.WorkgroupSize, size, err)
		}
	}
}

func TestBench(t *testing.T) {
	d := openDevice(t, Options{})
	p, err := d.Pipeline(sharedModule(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 4096
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i)
	}
	in, _ := d.NewBuffer(4 * n)
	out, _ := d.NewBuffer(4 * n)
	if err := in.Write(0, f32bytes(x)); err != nil {
		t.Fatal(err)
	}
	const dispatches = 50
	res, err := d.Bench(p, []*Buffer{in, out}, sharedPush(n, 1), [3]uint32{n / 64, 1, 1}, 3, dispatches)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Timestamps != d.Info().Timestamps {
		t.Errorf("Timestamps %v, device says %v", res.Timestamps, d.Info().Timestamps)
	}
	if res.PerDispatch <= 0 || res.PerDispatch > time.Second || res.Total < res.PerDispatch*dispatches ||
		res.Total >= res.PerDispatch*(dispatches+1) {
		t.Errorf("implausible %+v", res)
	}
	raw := make([]byte, 4*n)
	if err := out.Read(0, raw); err != nil {
		t.Fatal(err)
	}
	got, want := bytesF32(raw), sharedWant(x, n, 1, n)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after Bench y[%d] = %g, want %g", i, got[i], want[i])
		}
	}
}

func TestBenchCopy(t *testing.T) {
	d := openDevice(t, Options{})
	const size = 1 << 20
	src, err := d.NewBuffer(size + 64)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := d.NewBuffer(size + 64)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size+64)
	for i := range data {
		data[i] = byte(i*7 + i>>8 + 1)
	}
	if err := src.Write(0, data); err != nil {
		t.Fatal(err)
	}
	const copies = 20
	res, err := d.BenchCopy(src, dst, size, 2, copies)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v: %.2f GB/s (read + write)", res, 2*size/res.PerDispatch.Seconds()/1e9)
	if res.Timestamps != d.Info().Timestamps {
		t.Errorf("Timestamps %v, device says %v", res.Timestamps, d.Info().Timestamps)
	}
	if res.PerDispatch <= 0 || res.PerDispatch > time.Second || res.Total < res.PerDispatch*copies ||
		res.Total >= res.PerDispatch*(copies+1) {
		t.Errorf("implausible %+v", res)
	}
	got := make([]byte, size+64)
	if err := dst.Read(0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:size], data[:size]) {
		t.Errorf("dst does not hold a copy of src's first %d bytes", size)
	}
	for i, b := range got[size:] {
		if b != 0 {
			t.Fatalf("dst[%d] = %d past the copied range, want 0", size+i, b)
		}
	}
	other := openDevice(t, Options{})
	foreign, err := other.NewBuffer(size)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		src, dst      *Buffer
		size, warm, n int
	}{
		{"nil src", nil, dst, size, 0, 1},
		{"nil dst", src, nil, size, 0, 1},
		{"same buffer", src, src, size, 0, 1},
		{"too big", src, dst, size + 65, 0, 1},
		{"zero size", src, dst, 0, 0, 1},
		{"zero n", src, dst, size, 0, 0},
		{"negative warmup", src, dst, size, -1, 1},
		{"foreign", foreign, dst, size, 0, 1},
	} {
		if _, err := d.BenchCopy(c.src, c.dst, c.size, c.warm, c.n); err == nil {
			t.Errorf("%s: BenchCopy succeeded", c.name)
		}
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Pipeline(sharedModule(t))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.NewBuffer(64)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := b.Write(0, []byte{1}); err == nil {
		t.Errorf("write after Close")
	}
	b.Release()
	if err := d.Run(p, []*Buffer{b, b}, sharedPush(1, 1), [3]uint32{1, 1, 1}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := d.NewBuffer(4); err == nil {
		t.Errorf("NewBuffer after Close")
	}
	if _, err := d.Pipeline(sharedModule(t)); err == nil {
		t.Errorf("Pipeline after Close")
	}
}

// TestMissingLibrary points ONESOURCE_VULKAN_LIBRARY at a file that does not exist: Available,
// Devices and Open report the reason, nothing panics.
func TestMissingLibrary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libvulkan-missing.so.1")
	t.Setenv(LibraryEnv, path)
	err := Available()
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), "unavailable: ") ||
		!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), LibraryEnv) {
		t.Fatalf("Available: %v", err)
	}
	t.Log(err)
	if _, err := Devices(); err == nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Devices: %v", err)
	}
	if d, err := Open(Options{}); err == nil || d != nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open: %v %v", d, err)
	}
	// A library that exists but is not a Vulkan loader.
	t.Setenv(LibraryEnv, "libc.so.6")
	if err := Available(); err == nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("libc as loader: %v", err)
	} else {
		t.Log(err)
	}
}

// TestMissingLibrarySubprocess runs the package's tests in a child process with the variable
// already set at start-up, as a user would, and expects every device test to skip cleanly.
func TestMissingLibrarySubprocess(t *testing.T) {
	if os.Getenv("ONESOURCE_VULKAN_CHILD") != "" {
		t.Skip("in the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(exe, "-test.run=^(TestDevicesInfo|TestOpenFeatures|TestBufferRoundTrip|TestRunSharedPushConstants)$", "-test.v")
	cmd.Env = append(os.Environ(), LibraryEnv+"=/nonexistent/libvulkan.so.1", "ONESOURCE_VULKAN_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "panic") || !strings.Contains(string(out), "unavailable: vulkan: cannot load \"/nonexistent/libvulkan.so.1\"") {
		t.Fatalf("child output:\n%s", out)
	}
}

const tinyGLSL = `#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer B { uint v[]; };
layout(push_constant) uniform Push { uint k; } pc;
void main() { v[0] += pc.k; }
`

// BenchmarkDispatchOverhead measures what one Run of a one-invocation kernel costs end to end
// (record, submit, wait): the per-dispatch overhead of the runtime and driver.
func BenchmarkDispatchOverhead(b *testing.B) {
	d := openDevice(b, Options{})
	p, err := d.Pipeline(&Module{
		Name:             "main",
		Words:            compileGLSL(b, tinyGLSL),
		Bindings:         []Binding{{Name: "v", ElemSize: 4}},
		PushConstantSize: 4,
		WorkgroupSize:    [3]uint32{1, 1, 1},
	})
	if err != nil {
		b.Fatal(err)
	}
	buf, err := d.NewBuffer(4)
	if err != nil {
		b.Fatal(err)
	}
	bufs := []*Buffer{buf}
	push := []byte{1, 0, 0, 0}
	if err := d.Run(p, bufs, push, [3]uint32{1, 1, 1}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := d.Run(p, bufs, push, [3]uint32{1, 1, 1}); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/dispatch")
	var got [4]byte
	if err := buf.Read(0, got[:]); err != nil {
		b.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(got[:]); v != uint32(b.N+1) {
		b.Fatalf("counter %d, want %d", v, b.N+1)
	}
}

// TestLavapipeLoopLimit records a limit of Mesa's lavapipe that every kernel author meets: an
// invocation's loops stop once it has run 65535 iterations in all (docs/contracts.md). A loop of
// 60000 iterations must run whole on every driver; on lavapipe one of 70000 is logged as cut.
func TestLavapipeLoopLimit(t *testing.T) {
	d := openDevice(t, Options{})
	// A counting loop of n iterations: out[0] = n when the loop ran whole.
	words := compileGLSL(t, `#version 450
layout(local_size_x = 1) in;
layout(binding = 0) buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() { uint c = 0u; for (uint i = 0u; i < p.n; i++) { c++; } o[0] = c; }`)
	p, err := d.Pipeline(&Module{Words: words, Name: "main", WorkgroupSize: [3]uint32{1, 1, 1}, PushConstantSize: 4, Bindings: []Binding{{Name: "o"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.NewBuffer(4)
	if err != nil {
		t.Fatal(err)
	}
	count := func(n uint32) uint32 {
		if err := d.Run(p, []*Buffer{b}, binary.LittleEndian.AppendUint32(nil, n), [3]uint32{1, 1, 1}); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 4)
		if err := b.Read(0, out); err != nil {
			t.Fatal(err)
		}
		return binary.LittleEndian.Uint32(out)
	}
	if got := count(60000); got != 60000 {
		t.Fatalf("a loop of 60000 iterations ran %d", got)
	}
	if got := count(70000); got != 70000 {
		t.Logf("%s: a loop of 70000 iterations ran %d (the driver's loop limit)", d.Info().Name, got)
	}
}
