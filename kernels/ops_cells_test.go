package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// activationOps are the cells on f32 activations this package registers (ops_*.go).
var activationOps = []string{
	"rms_norm", "add_rmsnorm", "softmax", "rope_norm", "rope_neox", "rms_norm_rope",
	"silu", "gelu", "swiglu", "add", "mul", "scale", "quantize_q8_1",
}

// compareOutput returns "" when got equals want byte for byte (for "f32" outputs any NaN equals
// any NaN), else the first difference.
func compareOutput(got, want []byte, elem string) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
	}
	if elem == "f32" {
		for i := 0; i+4 <= len(got); i += 4 {
			g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
			gf, wf := math.Float32frombits(g), math.Float32frombits(w)
			if g != w && !(gf != gf && wf != wf) {
				return fmt.Sprintf("element %d = %g (%08x), want %g (%08x)", i/4, gf, g, wf, w)
			}
		}
		return ""
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("byte %d = %#02x, want %#02x", i, got[i], want[i])
		}
	}
	return ""
}

// TestActivationCells runs every f32-activation cell on the Vulkan device at schedules 32, 64
// and 256, lowered for the device's capabilities and for vulkan.PortableCaps, on every one of
// its cases, and requires the oracle's bytes.
func TestActivationCells(t *testing.T) {
	d := vktest.Device(t)
	for _, op := range activationOps {
		c, ok := kernels.Lookup(op, oracle.F32)
		if !ok {
			t.Errorf("cell %s/f32 is not registered", op)
			continue
		}
		t.Run(op, func(t *testing.T) {
			for _, lanes := range []int{32, 64, 256} {
				s := kernels.Schedule{Lanes: lanes}
				cases, err := c.Cases(s)
				if err != nil {
					t.Fatalf("%s T=%d: cases: %v", c.Name(), lanes, err)
				}
				if len(cases) == 0 {
					t.Fatalf("%s T=%d: no cases", c.Name(), lanes)
				}
				for _, target := range []struct {
					name string
					m    *vulkan.Module
				}{
					{"device", vktest.Compile(t, c.Build(s), d.Caps())},
					{"portable", vktest.Compile(t, c.Build(s), vulkan.PortableCaps)},
				} {
					for _, cs := range cases {
						push := make([]byte, 4*len(cs.Params))
						for i, p := range cs.Params {
							binary.LittleEndian.PutUint32(push[4*i:], p)
						}
						bufs := make([][]byte, len(cs.Buffers))
						for i, b := range cs.Buffers {
							bufs[i] = append([]byte(nil), b...)
						}
						out := vktest.RunModule(t, d, target.m, bufs, push, cs.Groups)
						for j, o := range cs.Outputs {
							elem := "u8"
							if j < len(cs.Elem) {
								elem = cs.Elem[j]
							}
							if diff := compareOutput(out[o], cs.Want[j], elem); diff != "" {
								t.Errorf("%s T=%d %s case %s output %d (binding %d): %s", c.Name(), lanes, target.name, cs.Name, j, o, diff)
							}
						}
					}
				}
			}
		})
	}
}

// TestActivationCellsBuild checks, without a device, that every cell builds at the schedules
// the tests use and that its cases are well formed.
func TestActivationCellsBuild(t *testing.T) {
	for _, op := range activationOps {
		c, ok := kernels.Lookup(op, oracle.F32)
		if !ok {
			t.Errorf("cell %s/f32 is not registered", op)
			continue
		}
		for _, lanes := range []int{1, 2, 32, 64, 128, 256} {
			s := kernels.Schedule{Lanes: lanes}
			k := c.Build(s)
			ik, err := k.Build()
			if err != nil {
				t.Errorf("%s T=%d: %v", c.Name(), lanes, err)
				continue
			}
			cases, err := c.Cases(s)
			if err != nil {
				t.Errorf("%s T=%d: cases: %v", c.Name(), lanes, err)
				continue
			}
			for _, cs := range cases {
				var errs []string
				if len(cs.Buffers) != len(ik.Buffers) {
					errs = append(errs, fmt.Sprintf("%d buffers for %d bindings", len(cs.Buffers), len(ik.Buffers)))
				}
				if len(cs.Params) != len(ik.Params) {
					errs = append(errs, fmt.Sprintf("%d params for %d", len(cs.Params), len(ik.Params)))
				}
				if len(cs.Outputs) != len(cs.Want) || len(cs.Outputs) != len(cs.Elem) {
					errs = append(errs, "outputs, want and elem differ in length")
				}
				for j, o := range cs.Outputs {
					if o < 0 || o >= len(cs.Buffers) || j < len(cs.Want) && len(cs.Want[j]) != len(cs.Buffers[o]) {
						errs = append(errs, fmt.Sprintf("output %d (binding %d) has the wrong size", j, o))
					}
				}
				for i, b := range cs.Buffers {
					if len(b) == 0 || len(b)%4 != 0 {
						errs = append(errs, fmt.Sprintf("binding %d has %d bytes", i, len(b)))
					}
				}
				if cs.Groups[0] == 0 || cs.Groups[0] > 65535 {
					errs = append(errs, fmt.Sprintf("groups %v", cs.Groups))
				}
				if len(errs) > 0 {
					t.Errorf("%s T=%d case %s: %s", c.Name(), lanes, cs.Name, strings.Join(errs, "; "))
				}
			}
		}
	}
}
