package kernels_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// attnSchedules are the schedules the attn_decode tests run: the cell's sample (both layouts,
// 8 to 256 lanes) and 32, 64 and 256 blocked, as TestActivationCells runs the other cells.
func attnSchedules(c kernels.Cell) []kernels.Schedule {
	out := c.SampleSchedules()
	for _, lanes := range []int{32, 64, 256} {
		if s := (kernels.Schedule{Lanes: lanes}); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestAttnDecodeCell runs the attn_decode cell on the Vulkan device, lowered for the device's
// capabilities and for vulkan.PortableCaps, on every case at every schedule of attnSchedules,
// and requires the oracle's bytes in out (the scores scratch is not compared).
func TestAttnDecodeCell(t *testing.T) {
	d := vktest.Device(t)
	c, ok := kernels.Lookup("attn_decode", oracle.F32)
	if !ok {
		t.Fatal("cell attn_decode/f32 is not registered")
	}
	for _, s := range attnSchedules(c) {
		cases, err := c.Cases(s)
		if err != nil {
			t.Fatalf("%s %s: cases: %v", c.Name(), s, err)
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
					if diff := compareOutput(out[o], cs.Want[j], cs.Elem[j]); diff != "" {
						t.Errorf("%s %s %s case %s output %d (binding %d): %s", c.Name(), s, target.name, cs.Name, j, o, diff)
					}
				}
			}
		}
	}
}

// TestAttnDecodeCellBuild checks, without a device, that the attn_decode cell builds at every
// schedule of its space and that its cases are well formed: one buffer per binding, one word
// per parameter, the scores scratch large enough for its stride, one workgroup per head.
func TestAttnDecodeCellBuild(t *testing.T) {
	c, ok := kernels.Lookup("attn_decode", oracle.F32)
	if !ok {
		t.Fatal("cell attn_decode/f32 is not registered")
	}
	for _, s := range append(c.Schedules(), kernels.Schedule{Lanes: 1}, kernels.Schedule{Lanes: 2, Layout: dsl.Strided}) {
		ik, err := c.Build(s).Build()
		if err != nil {
			t.Errorf("%s %s: %v", c.Name(), s, err)
			continue
		}
		cases, err := c.Cases(s)
		if err != nil {
			t.Fatalf("%s %s: cases: %v", c.Name(), s, err)
		}
		if len(cases) < 10 {
			t.Errorf("%s %s: %d cases", c.Name(), s, len(cases))
		}
		for _, cs := range cases {
			var errs []string
			if len(cs.Buffers) != len(ik.Buffers) || len(cs.Buffers) != 5 {
				errs = append(errs, fmt.Sprintf("%d buffers for %d bindings", len(cs.Buffers), len(ik.Buffers)))
			}
			if len(cs.Params) != len(ik.Params) || len(cs.Params) != 7 {
				errs = append(errs, fmt.Sprintf("%d params for %d", len(cs.Params), len(ik.Params)))
			}
			if len(errs) == 0 {
				headDim, heads, kvHeads, nKV, kvStride, sStride := int(cs.Params[0]), int(cs.Params[1]), int(cs.Params[2]), int(cs.Params[3]), int(cs.Params[4]), int(cs.Params[5])
				if heads%kvHeads != 0 || kvStride < kvHeads*headDim || sStride < nKV {
					errs = append(errs, fmt.Sprintf("parameters %v", cs.Params))
				}
				need := (nKV-1)*kvStride + kvHeads*headDim
				if len(cs.Buffers[0]) != 4*heads*headDim || len(cs.Buffers[1]) < 4*need || len(cs.Buffers[2]) < 4*need ||
					len(cs.Buffers[3]) != 4*heads*headDim || len(cs.Buffers[4]) < 4*((heads-1)*sStride+nKV) {
					errs = append(errs, "a binding is too small")
				}
				if cs.Groups != [3]uint32{uint32(heads), 1, 1} {
					errs = append(errs, fmt.Sprintf("groups %v for %d heads", cs.Groups, heads))
				}
			}
			if !slices.Equal(cs.Outputs, []int{3}) || len(cs.Want) != 1 || len(cs.Want[0]) != len(cs.Buffers[3]) || !slices.Equal(cs.Elem, []string{"f32"}) {
				errs = append(errs, "the output is not out alone, at its size")
			}
			if len(errs) > 0 {
				t.Errorf("%s %s case %s: %s", c.Name(), s, cs.Name, strings.Join(errs, "; "))
			}
		}
	}
}
