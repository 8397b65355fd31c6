// Package vktest runs DSL kernels on the Vulkan device for tests: it opens the device once per
// test binary (skipping with the reason when none is available), compiles kernels for the
// device's capabilities, checks every module with spirv-val, and moves data in and out.
package vktest

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/devrun"
	"github.com/onesource-go/onesource/lower"
)

var (
	once    sync.Once
	dev     *vulkan.Device
	devErr  error
	openErr error
)

// Device returns the shared device, or skips t with the reason none is available.
func Device(t testing.TB) *vulkan.Device {
	t.Helper()
	once.Do(func() {
		if devErr = vulkan.Available(); devErr != nil {
			return
		}
		dev, openErr = vulkan.Open(vulkan.Options{})
	})
	if devErr != nil {
		t.Skipf("vulkan: %v", devErr)
	}
	if openErr != nil {
		t.Fatalf("vulkan device did not open: %v", openErr)
	}
	return dev
}

// Validate runs spirv-val on m (vulkan.Validate), failing t when it rejects it and logging that
// the check did not run when spirv-val is not installed.
func Validate(t testing.TB, m *vulkan.Module) {
	t.Helper()
	if err := vulkan.Validate(m.Words); errors.Is(err, vulkan.ErrNoValidator) {
		t.Logf("spirv-val not installed: %s not validated", m.Name)
	} else if err != nil {
		t.Fatalf("%s: %v", m.Name, err)
	}
}

// Words returns SPIR-V words as little-endian bytes.
func Words(w []uint32) []byte { return vulkan.Bytes(w) }

// Compile builds, lowers for caps, emits and validates a kernel. The module is for Vulkan 1.3
// (vulkan.Compile); the lowered kernel is also emitted and validated for Vulkan 1.1 (SPIR-V
// 1.3, the oldest environment, whose rules differ most), so every kernel a test runs is checked
// for the drivers that take the least.
func Compile(t testing.TB, k *dsl.Kernel, caps lower.Caps) *vulkan.Module {
	t.Helper()
	return compile(t, k, caps, vulkan.CoopShape{})
}

// compile is Compile emitting the mma island's cooperative-matrix body for shape.
func compile(t testing.TB, k *dsl.Kernel, caps lower.Caps, shape vulkan.CoopShape) *vulkan.Module {
	t.Helper()
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	l, err := lower.Run(ik, caps)
	if err != nil {
		t.Fatal(err)
	}
	opts := vulkan.EmitOptions{CoopMatrix: shape}
	if caps.SubgroupSize > 1 {
		opts.SubgroupSize = uint32(caps.SubgroupSize)
	}
	m, err := vulkan.Emit(l, opts)
	if err != nil {
		t.Fatal(err)
	}
	Validate(t, m)
	opts.Env = vulkan.Vulkan1_1
	old, err := vulkan.Emit(l, opts)
	if err != nil {
		t.Fatalf("%s for %v: %v", m.Name, opts.Env, err)
	}
	Validate(t, old)
	return m
}

// Run compiles k for d, uploads inputs (one byte slice per buffer binding; a nil entry of
// length 0 is invalid, give the output size with make), dispatches groups and returns every
// buffer's contents afterwards.
func Run(t testing.TB, d *vulkan.Device, k *dsl.Kernel, bufs [][]byte, push []byte, groups [3]uint32) [][]byte {
	t.Helper()
	shape, _ := vulkan.IslandShape(d.Info().CoopMatrixI8)
	return RunModule(t, d, compile(t, k, d.Caps(), shape), bufs, push, groups)
}

// RunModule is Run for an already compiled module.
func RunModule(t testing.TB, d *vulkan.Device, m *vulkan.Module, bufs [][]byte, push []byte, groups [3]uint32) [][]byte {
	t.Helper()
	p, err := d.Pipeline(m)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(bufs))
	all := make([]int, len(bufs))
	for i, data := range bufs {
		out[i] = append([]byte(nil), data...)
		all[i] = i
	}
	if err := devrun.Once(d.NewBuffer, out, all, func(vb []*vulkan.Buffer) error { return d.Run(p, vb, push, groups) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// F32s returns little-endian bytes of x.
func F32s(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// ToF32 decodes little-endian f32 bytes.
func ToF32(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// U32s returns little-endian bytes of x.
func U32s(x []uint32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// U16s returns little-endian bytes of x.
func U16s(x []uint16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

// Push packs 32-bit push-constant values (float32, int32, uint32 or int) in order.
func Push(vals ...any) []byte {
	b := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		var u uint32
		switch v := v.(type) {
		case float32:
			u = math.Float32bits(v)
		case int32:
			u = uint32(v)
		case uint32:
			u = v
		case int:
			u = uint32(v)
		default:
			panic("vktest.Push: unsupported type")
		}
		b = binary.LittleEndian.AppendUint32(b, u)
	}
	return b
}

// DiffF32 returns the index of the first element whose bits differ (any NaN equals any NaN), or -1.
func DiffF32(got, want []float32) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			return i
		}
	}
	return -1
}
