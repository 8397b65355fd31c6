package incumbent

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/vktest"
)

// scaleShader copies x to y times SCALE (a define), BLOCK (spec constant 0) wide.
const scaleShader = `#version 450
layout (push_constant) uniform P { uint n; } p;
layout (binding = 0) readonly buffer A { float x[]; };
layout (binding = 1) buffer D { float y[]; };
layout (constant_id = 0) const uint BLOCK = 64;
layout (local_size_x_id = 0) in;
#ifndef SCALE
#define SCALE 1.0
#endif
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = x[i] * SCALE; }
`

// sgShader sums x over each subgroup into y[subgroup]: it needs subgroup arithmetic, and full
// subgroups of a known size to be right.
const sgShader = `#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout (push_constant) uniform P { uint n; } p;
layout (binding = 0) readonly buffer A { float x[]; };
layout (binding = 1) buffer D { float y[]; };
layout (constant_id = 0) const uint BLOCK = 32;
layout (local_size_x_id = 0) in;
void main() {
    uint i = gl_GlobalInvocationID.x;
    float s = subgroupAdd(i < p.n ? x[i] : 0.0);
    if (gl_SubgroupInvocationID == 0) { y[i / gl_SubgroupSize] = s; }
}
`

// parseWith writes files into a temporary directory and parses manifest there.
func parseWith(t *testing.T, manifest string, files map[string]string) *Manifest {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Parse([]byte(manifest), "m.json", dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func needGLSLC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the entry is parsed but not instantiated")
	}
}

const variantsManifest = `{"version": 1, "incumbents": [{
  "name": "scale", "op": "scale", "type": "f32", "backend": "vulkan",
  "source": {"glsl": "scale.comp"},
  "bindings": [{"binding": 0, "operand": "x"}, {"binding": 1, "operand": "y"}],
  "push_constants": [{"name": "n", "type": "u32", "value": "n"}],
  "spec_constants": [{"id": 0, "type": "u32", "value": 64}],
  "workgroup_size": [64, 1, 1], "grid": ["cdiv(n, 64)", 1, 1],
  "variants": [
    {"name": "wide", "when": "n % 256 == 0 && n >= 4096",
     "spec_constants": [{"id": 0, "type": "u32", "value": 256}],
     "workgroup_size": [256, 1, 1], "grid": ["n / 256", 1, 1]},
    {"name": "doubled", "when": "n < 100", "defines": {"SCALE": "2.0"}},
    {"when": "n == 1000", "grid": ["n <= 4096 ? 16 : 32", 1, 1]}
  ]}]}`

func TestVariants(t *testing.T) {
	m := parseWith(t, variantsManifest, map[string]string{"scale.comp": scaleShader})
	e := m.Incumbents[0]
	if got := strings.Join(e.Vars(), ","); got != "n" {
		t.Fatalf("vars %s", got)
	}
	if e.NeedsDevice() {
		t.Fatal("NeedsDevice: the entry uses no device variable and has no requirement")
	}
	needGLSLC(t)
	hashes := map[string]string{}
	for _, c := range []struct {
		n       float64
		variant string
		index   int
		wg      uint32
		groups  uint32
	}{
		{n: 8192, variant: "wide", index: 0, wg: 256, groups: 32},
		{n: 4096, variant: "wide", index: 0, wg: 256, groups: 16},
		{n: 4000, variant: "", index: -1, wg: 64, groups: 63}, // 4000 % 256 != 0: the entry's own fields
		{n: 2048, variant: "", index: -1, wg: 64, groups: 32}, // a multiple of 256, but below 4096
		{n: 50, variant: "doubled", index: 1, wg: 64, groups: 1},
		{n: 1000, variant: "variants[2]", index: 2, wg: 64, groups: 16},
	} {
		l, err := e.Vulkan(map[string]float64{"n": c.n})
		if err != nil {
			t.Fatalf("n=%v: %v", c.n, err)
		}
		if l.Variant != c.variant || l.VariantIndex != c.index || l.Module.WorkgroupSize[0] != c.wg || l.Groups[0] != c.groups {
			t.Errorf("n=%v: variant %q (%d), workgroup %v, groups %v; want %q (%d), %d, %d",
				c.n, l.Variant, l.VariantIndex, l.Module.WorkgroupSize, l.Groups, c.variant, c.index, c.wg, c.groups)
		}
		if prev, ok := hashes[l.Variant]; ok && prev != l.Hash {
			t.Errorf("variant %q: two hashes for one SPIR-V", l.Variant)
		}
		hashes[l.Variant] = l.Hash
	}
	// The entry's own fields, wide (other spec constants) and doubled (another define) run three
	// different SPIR-V modules; variants[2] changes only the grid and runs the entry's module.
	if hashes[""] == hashes["wide"] || hashes[""] == hashes["doubled"] || hashes["wide"] == hashes["doubled"] {
		t.Errorf("hashes do not tell the SPIR-V apart: %v", hashes)
	}
	if hashes["variants[2]"] != hashes[""] {
		t.Errorf("variants[2] runs the entry's module, hash %s vs %s", hashes["variants[2]"], hashes[""])
	}
	base, _ := e.SPIRV()
	doubled, err := e.VariantSPIRV(1)
	if err != nil || HashWords(base) == HashWords(doubled) {
		t.Errorf("the doubled variant's defines did not recompile the shader: %v", err)
	}
	if _, err := e.VariantSPIRV(3); err == nil {
		t.Error("VariantSPIRV(3): no error")
	}
	if err := e.CheckInterface(); err != nil {
		t.Fatal(err)
	}
	// A condition that cannot be evaluated is an error naming it.
	if _, err := e.Vulkan(map[string]float64{}); err == nil || !strings.Contains(err.Error(), `incumbents[0].variants[0].when: expression "n % 256 == 0 && n >= 4096": unknown shape variable "n"`) {
		t.Errorf("missing variable: %v", err)
	}
}

func TestBufferViews(t *testing.T) {
	const manifest = `{"version": 1, "incumbents": [{
  "op": "scale", "type": "f32", "backend": "vulkan", "source": {"glsl": "scale.comp"},
  "bindings": [{"binding": 0, "operand": "x", "offset": "4*off", "size": "4*n"}, {"binding": 1, "operand": "y"}],
  "push_constants": [{"name": "n", "type": "u32", "value": "n"}],
  "spec_constants": [{"id": 0, "type": "u32", "value": 64}],
  "workgroup_size": [64, 1, 1], "grid": ["cdiv(n, 64)", 1, 1]}]}`
	m := parseWith(t, manifest, map[string]string{"scale.comp": scaleShader})
	e := m.Incumbents[0]
	needGLSLC(t)
	for _, c := range []struct {
		off, n    float64
		offsets   []int
		sizes     []int
		wantError string
	}{
		{off: 16, n: 256, offsets: []int{64, 0}, sizes: []int{1024, 0}},
		{off: 0, n: 4, offsets: []int{0, 0}, sizes: []int{16, 0}},
		{off: -1, n: 4, wantError: "incumbents[0].bindings[0].offset = -4, want a non-negative multiple of 4"},
		{off: 0.5, n: 4, wantError: "incumbents[0].bindings[0].offset: expression \"4*off\": shape variable off = 0.5 is not an integer"},
		{off: 0, n: 0, wantError: "incumbents[0].bindings[0].size = 0, want a positive multiple of 4"},
	} {
		l, err := e.Vulkan(map[string]float64{"off": c.off, "n": c.n})
		if c.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantError) {
				t.Errorf("off=%v n=%v: %v, want an error containing %q", c.off, c.n, err, c.wantError)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.Offsets, c.offsets) || !slices.Equal(l.Sizes, c.sizes) || l.Whole() != (c.off == 0 && c.n == 0) {
			t.Errorf("off=%v n=%v: offsets %v sizes %v whole %v; want %v %v", c.off, c.n, l.Offsets, l.Sizes, l.Whole(), c.offsets, c.sizes)
		}
		v := l.Views([]*vulkan.Buffer{nil, nil})
		if v[0].Offset != c.offsets[0] || v[0].Size != c.sizes[0] || v[1].Offset != 0 || v[1].Size != 0 {
			t.Errorf("views %+v", v)
		}
	}
	// The device's offset alignment is checked by VulkanFor.
	info := fakeDevice(16)
	if _, err := e.VulkanFor(info, map[string]float64{"off": 3, "n": 4}); err == nil || !strings.Contains(err.Error(), "incumbents[0].bindings[0].offset: 12 is not a multiple of the device's minStorageBufferOffsetAlignment 16") {
		t.Errorf("misaligned offset: %v", err)
	}
	if _, err := e.VulkanFor(info, map[string]float64{"off": 4, "n": 4}); err != nil {
		t.Errorf("aligned offset: %v", err)
	}
}

// fakeDevice describes a device like lavapipe: subgroups of 8 that pipelines can require.
func fakeDevice(align uint64) vulkan.DeviceInfo {
	return vulkan.DeviceInfo{
		Name: "fake8", SubgroupSize: 8, MinSubgroupSize: 8, MaxSubgroupSize: 8, SubgroupSizeControl: true,
		MaxWorkgroupSize: [3]uint32{1024, 1024, 64}, MaxWorkgroupInvocations: 1024,
		MaxWorkgroupCount: [3]uint32{65535, 65535, 65535}, MaxPushConstantsSize: 128,
		MinStorageBufferOffsetAlignment: align,
		Features:                        vulkan.Features{StorageBuffer16: true, StorageBuffer8: true, Int8: true, SubgroupBasic: true, SubgroupShuffle: true, SubgroupArithmetic: true},
	}
}

func TestRequirements(t *testing.T) {
	fake8 := fakeDevice(4)
	wide := fakeDevice(4)
	wide.Name, wide.SubgroupSize, wide.MinSubgroupSize, wide.MaxSubgroupSize = "wide", 32, 16, 64
	wide.Features.Float16 = true
	fixed := fakeDevice(4)
	fixed.Name, fixed.SubgroupSize, fixed.SubgroupSizeControl, fixed.MinSubgroupSize, fixed.MaxSubgroupSize = "fixed", 32, false, 0, 0
	entry := func(extra string) string {
		return `{"version": 1, "incumbents": [{
  "name": "sg", "op": "sum8", "type": "f32", "backend": "vulkan", "source": {"glsl": "sg.comp"},
  "bindings": [{"binding": 0, "operand": "x"}, {"binding": 1, "operand": "y"}],
  "push_constants": [{"name": "n", "type": "u32", "value": "n"}],
  "spec_constants": [{"id": 0, "type": "u32", "value": "subgroup_size*4"}],
  "workgroup_size": ["subgroup_size*4", 1, 1], "grid": ["cdiv(n, subgroup_size*4)", 1, 1]` + extra + `}]}`
	}
	vars := map[string]float64{"n": 100}
	for _, c := range []struct {
		name       string
		extra      string
		device     vulkan.DeviceInfo
		checkErr   string // Check(device)
		forErr     string // VulkanFor(device, vars)
		sg         uint32 // Module.SubgroupSize
		requires   string // Launch.Requires
		unverified string
		features   vulkan.Features
	}{
		{
			name: "subgroup size of the device", extra: `, "subgroup_size": "subgroup_size"`, device: fake8, sg: 8,
			// Derived from the SPIR-V: GroupNonUniform (subgroup_basic), GroupNonUniformArithmetic
			// (subgroup_arithmetic: a feature DeviceInfo reports, so verified).
			requires: "subgroup_arithmetic,subgroup_basic",
			features: vulkan.Features{SubgroupBasic: true, SubgroupArithmetic: true},
		},
		{
			name: "full subgroups of the default size", extra: `, "full_subgroups": true, "requires": ["subgroup_arithmetic"]`, device: wide, sg: 32,
			requires: "subgroup_arithmetic,subgroup_basic", features: vulkan.Features{SubgroupBasic: true, SubgroupArithmetic: true},
		},
		{
			name: "a constant size the device cannot require", extra: `, "subgroup_size": 16`, device: fake8,
			checkErr: `incumbents[0].subgroup_size: requires subgroup size 16; the device "fake8" offers 8..8`,
			forErr:   `incumbents[0].subgroup_size: requires subgroup size 16; the device "fake8" offers 8..8`,
		},
		{
			name: "a device without subgroup size control", extra: `, "subgroup_size": "subgroup_size"`, device: fixed,
			checkErr: `incumbents[0].subgroup_size: the device "fixed" cannot require a subgroup size in compute shaders`,
			forErr:   `incumbents[0].subgroup_size: requires subgroup size 32, but the device "fixed" cannot require a subgroup size`,
		},
		{
			name: "features and requires map onto Module.Features", extra: `, "features": ["float16"], "requires": ["int8_dot", "subgroup_size_control"]`, device: fake8,
			checkErr: `incumbent sg: needs float16, int8_dot, which the device "fake8" does not support`,
			forErr:   `incumbent sg: needs float16, integer_dot_product, which the device "fake8" does not support`,
		},
		{
			name: "features the device has", extra: `, "features": ["float16"]`, device: wide,
			requires: "float16,subgroup_arithmetic,subgroup_basic",
			features: vulkan.Features{Float16: true, SubgroupBasic: true, SubgroupArithmetic: true},
		},
		{
			name: "a variant the device variables rule out is not checked", device: fake8,
			extra:    `, "variants": [{"when": "subgroup_size >= 32", "subgroup_size": 32, "features": ["float64"]}]`,
			requires: "subgroup_arithmetic,subgroup_basic", features: vulkan.Features{SubgroupBasic: true, SubgroupArithmetic: true},
		},
		{
			name: "a variant the device variables select is", device: wide,
			extra:    `, "variants": [{"when": "subgroup_size >= 32", "subgroup_size": 32, "features": ["float64"]}]`,
			checkErr: `incumbent sg variant variants[0]: needs float64`, forErr: `incumbent sg variant variants[0]: needs float64`,
		},
		{
			name: "a size that is not a power of two", extra: `, "subgroup_size": 24`, device: fake8,
			checkErr: "requires subgroup size 24", forErr: "incumbents[0].subgroup_size = 24, want a power of two",
		},
		{
			name: "full subgroups need a workgroup width that is a multiple", device: fake8,
			extra:  `, "variants": [{"when": 1, "subgroup_size": 8, "spec_constants": [{"id": 0, "type": "u32", "value": 12}], "workgroup_size": [12, 1, 1]}]`,
			forErr: "incumbents[0].variants[0].subgroup_size = 8: full subgroups of 8 need a workgroup width that is a multiple of it, got 12",
		},
		{
			name: "a variant drops full subgroups", device: wide, sg: 0,
			extra:    `, "full_subgroups": true, "variants": [{"when": "n < 1000", "full_subgroups": false}]`,
			requires: "subgroup_arithmetic,subgroup_basic", features: vulkan.Features{SubgroupBasic: true, SubgroupArithmetic: true},
		},
		{
			name: "a variant adds a size", device: wide, sg: 64,
			extra:    `, "variants": [{"when": "n < 1000", "subgroup_size": "max_subgroup_size"}]`,
			requires: "subgroup_arithmetic,subgroup_basic", features: vulkan.Features{SubgroupBasic: true, SubgroupArithmetic: true},
		},
		{
			name: "no subgroup size for a shape", extra: `, "subgroup_size": "n > 1000 ? subgroup_size : 0"`, device: fake8, sg: 0,
			requires: "subgroup_arithmetic,subgroup_basic", features: vulkan.Features{SubgroupBasic: true, SubgroupArithmetic: true},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := parseWith(t, entry(c.extra), map[string]string{"sg.comp": sgShader})
			e := m.Incumbents[0]
			if !e.NeedsDevice() {
				t.Error("NeedsDevice false for an entry sized by subgroup_size")
			}
			err := e.Check(c.device)
			if c.checkErr == "" && err != nil || c.checkErr != "" && (err == nil || !strings.Contains(err.Error(), c.checkErr)) {
				t.Errorf("Check: %v, want %q", err, c.checkErr)
			}
			needGLSLC(t)
			l, err := e.VulkanFor(c.device, vars)
			if c.forErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.forErr) {
					t.Fatalf("VulkanFor: %v, want an error containing %q", err, c.forErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("VulkanFor: %v", err)
			}
			sg := c.device.SubgroupSize
			if l.Module.SubgroupSize != c.sg || l.Module.WorkgroupSize[0] != 4*sg || l.Groups[0] != uint32(math.Ceil(100/float64(4*sg))) {
				t.Errorf("subgroup size %d, workgroup %v, groups %v; want %d, %d", l.Module.SubgroupSize, l.Module.WorkgroupSize, l.Groups, c.sg, 4*sg)
			}
			if got := strings.Join(l.Requires, ","); got != c.requires {
				t.Errorf("requires %s, want %s", got, c.requires)
			}
			if got := strings.Join(l.Unverified, ","); got != c.unverified {
				t.Errorf("unverified %s, want %s", got, c.unverified)
			}
			if l.Module.Features != c.features {
				t.Errorf("features %+v, want %+v", l.Module.Features, c.features)
			}
		})
	}
}

func TestDeviceVars(t *testing.T) {
	m := parseWith(t, `{"version": 1, "incumbents": [{
  "name": "sg", "op": "sum8", "type": "f32", "backend": "vulkan", "source": {"glsl": "sg.comp"},
  "bindings": [{"binding": 0, "operand": "x"}, {"binding": 1, "operand": "y"}],
  "push_constants": [{"name": "n", "type": "u32", "value": "n"}],
  "spec_constants": [{"id": 0, "type": "u32", "value": "subgroup_size*4"}],
  "workgroup_size": ["subgroup_size*4", 1, 1], "grid": ["min(cdiv(n, subgroup_size*4), max_workgroup_count_x)", 1, 1]}]}`,
		map[string]string{"sg.comp": sgShader})
	e := m.Incumbents[0]
	dv := DeviceVars(fakeDevice(4))
	if dv["subgroup_size"] != 8 || dv["min_subgroup_size"] != 8 || dv["max_subgroup_size"] != 8 || dv["max_workgroup_count_y"] != 65535 {
		t.Fatalf("DeviceVars %v", dv)
	}
	fixed := fakeDevice(4)
	fixed.SubgroupSize, fixed.MinSubgroupSize, fixed.MaxSubgroupSize = 32, 0, 0
	if dv := DeviceVars(fixed); dv["min_subgroup_size"] != 32 || dv["max_subgroup_size"] != 32 {
		t.Fatalf("DeviceVars without a range: %v", dv)
	}
	needGLSLC(t)
	// Vulkan knows no device: the error names the variable and what to do.
	if _, err := e.Vulkan(map[string]float64{"n": 100}); err == nil || !strings.Contains(err.Error(), `unknown shape variable "subgroup_size" (a device variable: instantiate with VulkanFor, or pass DeviceVars(info) in vars)`) {
		t.Errorf("Vulkan without device variables: %v", err)
	}
	// Passing them works as VulkanFor does.
	vars := DeviceVars(fakeDevice(4))
	vars["n"] = 1e6
	l, err := e.Vulkan(vars)
	if err != nil || l.Groups[0] != 31250 || l.Module.WorkgroupSize[0] != 32 {
		t.Fatalf("Vulkan with device variables: %v %+v", err, l)
	}
	// 312500 workgroups, clamped to the device's 65535.
	if l, err := e.VulkanFor(fakeDevice(4), map[string]float64{"n": 1e7}); err != nil || l.Groups[0] != 65535 {
		t.Fatalf("VulkanFor: %v", err)
	}
	// A value vars holds must agree with the device.
	if _, err := e.VulkanFor(fakeDevice(4), map[string]float64{"n": 1, "subgroup_size": 32}); err == nil || !strings.Contains(err.Error(), `vars has subgroup_size = 32, the device "fake8" has 8`) {
		t.Errorf("conflicting variable: %v", err)
	}
	// VulkanFor refuses a grid beyond the device's limit.
	small := fakeDevice(4)
	small.MaxWorkgroupCount[0] = 100
	e.exprs["incumbents[0].grid[0]"] = mustExpr(t, "cdiv(n, subgroup_size*4)")
	if _, err := e.VulkanFor(small, map[string]float64{"n": 1e6}); err == nil || !strings.Contains(err.Error(), "incumbents[0].grid[0]: 31250 workgroups; the device \"fake8\" allows 100") {
		t.Errorf("grid beyond the device: %v", err)
	}
}

// TestRequirementsOnDevice runs entries with a required subgroup size and a buffer view on the
// Vulkan device, when there is one: the launch's module must be accepted where the device can
// honour it and refused by the device's own checks where it cannot.
func TestRequirementsOnDevice(t *testing.T) {
	needGLSLC(t)
	d := vktest.Device(t)
	info := d.Info()
	m := parseWith(t, `{"version": 1, "incumbents": [{
  "name": "sg", "op": "sum8", "type": "f32", "backend": "vulkan", "source": {"glsl": "sg.comp"},
  "bindings": [{"binding": 0, "operand": "x", "offset": "4*off"}, {"binding": 1, "operand": "y"}],
  "push_constants": [{"name": "n", "type": "u32", "value": "n"}],
  "spec_constants": [{"id": 0, "type": "u32", "value": "subgroup_size*4"}],
  "workgroup_size": ["subgroup_size*4", 1, 1], "grid": ["cdiv(n, subgroup_size*4)", 1, 1],
  "subgroup_size": "subgroup_size", "requires": ["subgroup_arithmetic"]}]}`, map[string]string{"sg.comp": sgShader})
	e := m.Incumbents[0]
	if err := e.Check(info); err != nil {
		t.Skipf("device %q: %v", info.Name, err)
	}
	off := 64 // elements: 256 bytes, a multiple of any offset alignment up to 256
	if info.MinStorageBufferOffsetAlignment > 256 {
		t.Skipf("device %q: minStorageBufferOffsetAlignment %d", info.Name, info.MinStorageBufferOffsetAlignment)
	}
	const n = 100
	l, err := e.VulkanFor(info, map[string]float64{"n": n, "off": float64(off)})
	if err != nil {
		t.Fatal(err)
	}
	sg := int(info.SubgroupSize)
	if l.Module.SubgroupSize != uint32(sg) || l.Offsets[0] != 4*off {
		t.Fatalf("subgroup size %d, offsets %v", l.Module.SubgroupSize, l.Offsets)
	}
	p, err := d.Pipeline(l.Module)
	if err != nil {
		t.Fatal(err)
	}
	x, err := d.NewBuffer(4 * (off + n))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	groups := int(l.Groups[0]) * int(l.Module.WorkgroupSize[0]) / sg
	y, err := d.NewBuffer(4 * groups)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	data := make([]byte, 4*(off+n))
	for i := 0; i < off+n; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)))
	}
	if err := x.Write(0, data); err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Dispatch(p, l.Views([]*vulkan.Buffer{x, y}), l.Push, l.Groups); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*groups)
	if err := y.Read(0, out); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < groups; k++ {
		want := float32(0)
		for i := k * sg; i < min((k+1)*sg, n); i++ {
			want += float32(off + i)
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*k:])); got != want {
			t.Fatalf("subgroup %d: sum %v, want %v (the view starts at element %d)", k, got, want, off)
		}
	}
	// A size the device cannot require, forced past VulkanFor through Vulkan and the vars, is
	// refused by the device's own pipeline check.
	bad := DeviceVars(info)
	bad["subgroup_size"] = float64(2 * info.MaxSubgroupSize)
	if info.MaxSubgroupSize == 0 {
		bad["subgroup_size"] = float64(2 * info.SubgroupSize)
	}
	bad["n"], bad["off"] = n, 0
	lb, err := e.Vulkan(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pipeline(lb.Module); err == nil || !strings.Contains(err.Error(), "subgroup size") {
		t.Fatalf("device pipeline check: %v, want a subgroup size refusal", err)
	}
	if _, err := e.VulkanFor(info, map[string]float64{"n": n, "off": 0, "subgroup_size": bad["subgroup_size"]}); err == nil {
		t.Fatal("VulkanFor with a contradicting subgroup_size: no error")
	}
}

// TestExampleManifest checks every entry of examples/incumbents against its shader's interface
// and instantiates it at its cell's usual shape.
func TestExampleManifest(t *testing.T) {
	m, err := Load(filepath.Join("..", "examples", "incumbents", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	needGLSLC(t)
	for _, e := range m.Incumbents {
		if err := e.CheckInterface(); err != nil {
			t.Error(err)
			continue
		}
		if e.NeedsDevice() {
			t.Errorf("%s: NeedsDevice, but the examples run through Vulkan(vars)", e.Name)
		}
		l, err := e.Vulkan(map[string]float64{"rows": 64, "n": 1024, "eps": 1e-6})
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if l.Variant != "" || l.VariantIndex != -1 || !l.Whole() {
			t.Errorf("%s: variant %q (%d), offsets %v sizes %v", e.Name, l.Variant, l.VariantIndex, l.Offsets, l.Sizes)
		}
	}
}
