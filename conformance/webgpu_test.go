package conformance_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/onesource-go/onesource/conformance"
)

// TestWebGPUMatchesVulkan is a differential test between two independent compilers over the
// conformance matrix: every cell of the sample runs once through onesource's SPIR-V emitter (the
// Vulkan target, lowered for the device) and once through the WGSL emitter and naga's SPIR-V
// (the webgpu target, lowered for WebGPU), both bounds-checked, on the same Vulkan device
// (lavapipe here), at the webgpu target's default schedule, on the cell's conformance inputs.
// Every output must be the same bytes on both, up to the contract's equality (any NaN equals
// any NaN: the two compilers' SPIR-V may make NaNs of other signs and payloads, which the test
// counts); outputs a cell declares inexact (a device's own functions) are left out.
// TestConformance judges both against the oracle; the webgpu target compiles each module once
// per process. It runs the representatives of each op (conformance_test.go: sampled; with
// -short, one type per op; with ONESOURCE_FULL=1, every cell).
func TestWebGPUMatchesVulkan(t *testing.T) {
	vk := &conformance.Vulkan{}
	if err := vk.Open(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	defer vk.Close()
	wg := &conformance.WebGPU{}
	if err := wg.Open(); err != nil {
		t.Skipf("webgpu: %v", err)
	}
	defer wg.Close()
	start := time.Now()
	var vkTime, wgTime time.Duration
	compared, nanOnly := 0, 0
	for _, c := range sampled(len(representative)) {
		t.Run(c.Name(), func(t *testing.T) {
			s := c.DefaultScheduleFor(wg.Name(), conformance.TargetSubgroup(wg))
			k, err := c.Build(s).Build()
			if err != nil {
				t.Fatal(err)
			}
			cases, err := c.Cases(s)
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			a := vk.Run(k, s, cases)
			t1 := time.Now()
			b := wg.Run(k, s, cases)
			vkTime += t1.Sub(t0)
			wgTime += time.Since(t1)
			if a.Err != nil || b.Err != nil {
				t.Fatalf("vulkan [%s]: %v; webgpu [%s]: %v", a.Levels, a.Err, b.Levels, b.Err)
			}
			if a.OutOfBounds != "" || b.OutOfBounds != "" {
				t.Errorf("out of bounds: vulkan %q, webgpu %q", a.OutOfBounds, b.OutOfBounds)
			}
			for i, cs := range cases {
				for j := range cs.Outputs {
					if j < len(cs.Tol) && cs.Tol[j] != nil {
						continue
					}
					x, y := a.Outputs[i][j], b.Outputs[i][j]
					if bytes.Equal(x, y) {
						compared++
						continue
					}
					elem := "f32"
					if j < len(cs.Elem) {
						elem = cs.Elem[j]
					}
					if conformance.Compare(y, x, elem).Exact {
						nanOnly++ // the contract's equality: any NaN equals any NaN
						continue
					}
					t.Errorf("case %s output %d: webgpu (naga) differs from vulkan: %s", cs.Name, cs.Outputs[j], conformance.Compare(y, x, elem).First)
				}
			}
		})
	}
	t.Logf("%d outputs byte-identical, %d identical but for the sign or payload of NaNs; vulkan %v, webgpu (WGSL, naga, spirv-val, lavapipe) %v; %v in all", compared, nanOnly, vkTime.Round(time.Millisecond), wgTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestWebGPUColumn: the suite's report has a webgpu column whose runs say what X is there
// (naga's SPIR-V on a Vulkan device, not a WebGPU implementation).
func TestWebGPUColumn(t *testing.T) {
	f := conformance.Filter{Ops: []string{"add"}, Types: []string{"f32"}, Backends: []string{"webgpu"}}
	results := conformance.Run(f, conformance.Targets(), nil, nil)
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	if !results[0].Ran {
		t.Skipf("webgpu: %s", results[0].Reason)
	}
	var out bytes.Buffer
	conformance.WriteMatrix(&out, results)
	for _, want := range []string{"cell", "webgpu", "add/f32", "EVXB", "not a WebGPU implementation", "github.com/gogpu/naga"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("the report does not say %q:\n%s", want, out.String())
		}
	}
}
