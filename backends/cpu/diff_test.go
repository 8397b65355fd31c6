package cpu

// The differential test: the hand-built kernels of internal/irtest (every op, builtin, memory
// space, element type and control-flow shape of the IR), lowered once, run by the executor and
// by the Vulkan device (lavapipe here) on the same inputs; every output byte must agree (any NaN
// equals any NaN in f32 buffers). Kernels whose result depends on the order in which a GPU runs
// its invocations (races) are compared only where the order cannot matter.

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

var (
	vkOnce sync.Once
	vkDev  *vulkan.Device
	vkErr  error
)

func device(t testing.TB) *vulkan.Device {
	t.Helper()
	vkOnce.Do(func() {
		if vkErr = vulkan.Available(); vkErr != nil {
			return
		}
		vkDev, vkErr = vulkan.Open(vulkan.Options{})
	})
	if vkErr != nil {
		t.Skipf("Vulkan unavailable: %v", vkErr)
	}
	return vkDev
}

// runVulkan runs the lowered kernel low on the device and returns every buffer after.
func runVulkan(t testing.TB, d *vulkan.Device, low *ir.Kernel, sg int, bufs [][]byte, params []uint32, groups [3]uint32) [][]byte {
	t.Helper()
	m, err := vulkan.Emit(low, vulkan.EmitOptions{SubgroupSize: uint32(sg)})
	if err != nil {
		t.Fatalf("vulkan emit: %v", err)
	}
	p, err := d.Pipeline(m)
	if err != nil {
		t.Skipf("device cannot run %s: %v", low.Name, err)
	}
	var bs []*vulkan.Buffer
	for _, data := range bufs {
		b, err := d.NewBuffer(max(len(data), 4))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		if err := b.Write(0, data); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	push := make([]byte, 4*len(params))
	for i, v := range params {
		binary.LittleEndian.PutUint32(push[4*i:], v)
	}
	if err := d.Run(p, bs, push, groups); err != nil {
		t.Fatalf("vulkan run: %v", err)
	}
	out := make([][]byte, len(bufs))
	for i, b := range bs {
		out[i] = make([]byte, len(bufs[i]))
		if err := b.Read(0, out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// fill returns n bytes of random elements of type t, with the special values of its kind.
func fill(r *rand.Rand, t ir.Type, n int, small bool) []byte {
	b := make([]byte, n*t.Stride())
	specials := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 1, 0x00800000, 0x7f7fffff, 0xcf000000, 0x4f000000, 0x4f800000, 0xbf800000, 0x3f000000, 0xbf000000, 0x4b000000}
	for i := 0; i < len(b); i += 4 {
		var v uint32
		switch r.IntN(4) {
		case 0:
			v = specials[r.IntN(len(specials))]
		case 1:
			v = math.Float32bits(float32(r.NormFloat64() * 1e3))
		case 2:
			v = uint32(int32(r.IntN(41) - 20))
		default:
			v = r.Uint32()
		}
		if t.Scalar == ir.I32 && small { // loop counts in the control-flow kernels: keep them short
			v = uint32(int32(r.IntN(2100) - 50))
		}
		if i+4 <= len(b) {
			binary.LittleEndian.PutUint32(b[i:], v)
		} else {
			copy(b[i:], []byte{byte(v), byte(v >> 8)})
		}
	}
	return b
}

// vulkanCases are the kernels of irtest.Cases compared with the device: those whose every
// output is defined by the IR (integer division by zero and out-of-range float to int
// conversions are the C printer's choice, checked against host execution in host_test.go) and
// written by one invocation only; where other buffers race, only the listed ones are compared.
var vulkanCases = map[string][]string{
	"arith_f32": nil, "arith_vec2_f32": nil, "arith_vec3_f32": nil, "arith_vec4_f32": nil,
	"builtins": nil, "builtins_2d": nil,
	"memory_spaces": {"ro", "wo", "rw", "v4"},
	"dot_shuffle":   nil, "dot_shuffle_wg48": nil, "dot_shuffle_wg16": nil,
	"cf_nested_if": nil, "cf_loops": nil, "cf_terminating_branches": nil,
	"cf_return_in_continuing": {}, // races on out; it must run to its end
	"barrier_uniform_loop":    nil,
}

// localIndexed are the vulkanCases whose invocations write the elements of their local index.
var localIndexed = map[string]bool{"builtins": true, "builtins_2d": true, "barrier_uniform_loop": true}

// TestDifferentialVulkan runs vulkanCases and the workgroup reductions of irtest.Reductions
// (lowered into shuffles and shared memory at the device's subgroup size) on the executor and
// on the device, three input sets each, two workgroups, and compares the bytes.
func TestDifferentialVulkan(t *testing.T) {
	d := device(t)
	caps := d.Caps()
	sg := caps.SubgroupSize
	if sg <= 1 {
		t.Skipf("the device has no subgroup size to pin (%+v)", caps)
	}
	var ks []*ir.Kernel
	for _, c := range irtest.Cases {
		if _, ok := vulkanCases[c.Name]; !ok {
			continue
		}
		k, err := c.Kernel()
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	reds, err := irtest.Reductions()
	if err != nil {
		t.Fatal(err)
	}
	ks = append(ks, reds...)
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			low, err := lower.Run(k, caps)
			if err != nil {
				t.Fatal(err)
			}
			code, err := compile(low, sg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, uint64(len(k.Name))))
			for trial := 0; trial < 3; trial++ {
				var bufs [][]byte
				for _, b := range low.Buffers {
					bufs = append(bufs, fill(r, b.Elem, 8192, strings.HasPrefix(k.Name, "cf_")))
				}
				params := make([]uint32, len(low.Params))
				for i := range params {
					params[i] = uint32(r.IntN(7))
					if low.Params[i].Type == ir.TF32 {
						params[i] = math.Float32bits(float32(r.IntN(7)) - 2.5)
					}
				}
				// Two workgroups where invocations write by global id; one where they write by
				// local index (two would race on every element).
				groups := [3]uint32{2, 1, 1}
				if localIndexed[k.Name] {
					groups[0] = 1
				}
				want := runVulkan(t, d, low, sg, bufs, params, groups)
				got := make([][]byte, len(bufs))
				for i, b := range bufs {
					got[i] = append([]byte(nil), b...)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				workers := 2
				if raceDetector && vulkanCases[k.Name] != nil {
					workers = 1 // the kernel races on the buffers not compared
				}
				err := code.run(ctx, workers, got, params, groups)
				cancel()
				if err != nil {
					t.Fatalf("cpu: %v", err)
				}
				only := vulkanCases[k.Name]
				for i, b := range low.Buffers {
					if only != nil && !contains(only, b.Name) {
						continue
					}
					if e := firstDiff(got[i], want[i], b.Elem); e >= 0 {
						t.Errorf("trial %d: buffer %s element %d: cpu %x, vulkan %x", trial, b.Name, e, elemBytes(got[i], b.Elem, e), elemBytes(want[i], b.Elem, e))
					}
				}
			}
		})
	}
}
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func elemBytes(b []byte, t ir.Type, e int) []byte {
	s := t.Stride()
	return b[e*s : min(len(b), e*s+s)]
}

// firstDiff is the first element where a and b differ (-1: none); f32 NaNs are equal.
func firstDiff(a, b []byte, t ir.Type) int {
	s := t.Stride()
	for e := 0; e*s < len(a); e++ {
		x, y := a[e*s:min(len(a), e*s+s)], b[e*s:min(len(b), e*s+s)]
		if string(x) == string(y) {
			continue
		}
		if t.Scalar == ir.F32 {
			same := true
			for i := 0; i+4 <= len(x); i += 4 {
				u, v := binary.LittleEndian.Uint32(x[i:]), binary.LittleEndian.Uint32(y[i:])
				fu, fv := math.Float32frombits(u), math.Float32frombits(v)
				if u != v && !(fu != fu && fv != fv) {
					same = false
				}
			}
			if same {
				continue
			}
		}
		return e
	}
	return -1
}
