package incumbent

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
)

// glslc compiles GLSL compute source with glslc (skipping t with the reason when it is missing)
// and returns the SPIR-V words.
func glslc(t *testing.T, src string, args ...string) []uint32 {
	t.Helper()
	path, err := exec.LookPath("glslc")
	if err != nil {
		t.Skip("glslc is not installed: no SPIR-V to reflect on")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "k.comp"), filepath.Join(dir, "k.spv")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"-fshader-stage=compute"}, args...)
	if msg, err := exec.Command(path, append(args, "-o", out, in)...).CombinedOutput(); err != nil {
		t.Fatalf("glslc: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	w, err := vulkan.Words(b)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestReflect(t *testing.T) {
	const o12 = "--target-env=vulkan1.2"
	for _, c := range []struct {
		name   string
		src    string
		args   []string
		push   int
		binds  []DescriptorBinding
		spec   map[uint32]string
		caps   []uint32 // capabilities that must be declared
		entry  string
		noPush bool
	}{
		{
			name: "scalars and storage buffers",
			src: `#version 450
layout (push_constant) uniform P { uint a; float b; int c; } p;
layout (binding = 0) readonly buffer A { float x[]; };
layout (binding = 2) buffer D { float y[]; };
layout (constant_id = 0) const uint BLOCK = 64;
layout (constant_id = 3) const bool FLAG = false;
layout (constant_id = 5) const float SCALE = 1.0;
layout (constant_id = 6) const int OFF = 0;
layout (local_size_x_id = 0) in;
void main() { uint i = gl_GlobalInvocationID.x; if (FLAG) return; y[i] = x[i] * p.b * SCALE + float(p.a + uint(p.c) + BLOCK + uint(OFF)); }`,
			args:  []string{o12, "-O"},
			push:  12,
			binds: []DescriptorBinding{{0, 0, "storage"}, {0, 2, "storage"}},
			spec:  map[uint32]string{0: "uint32", 3: "bool", 5: "float32", 6: "int32"},
			entry: "main",
		},
		{
			name: "vector, array and 16-bit members; unused buffer and spec constant stripped by -O",
			src: `#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout (push_constant) uniform P { uvec2 a; float b[3]; float16_t h; } p;
layout (binding = 0) readonly buffer A { float16_t x[]; };
layout (binding = 1) readonly buffer B { float unused_b[]; };
layout (binding = 2) buffer D { float y[]; };
layout (constant_id = 0) const bool norepeat = false;
layout (local_size_x = 32) in;
void main() { uint i = gl_GlobalInvocationID.x; y[i] = float(x[i]) + p.b[2] + float(p.a.y); }`,
			args:  []string{o12, "-O"},
			push:  22, // std430: a 0..8, b 8..20 (stride 4), h 20..22
			binds: []DescriptorBinding{{0, 0, "storage"}, {0, 2, "storage"}},
			spec:  map[uint32]string{},
			caps:  []uint32{4433}, // StorageBuffer16BitAccess
			entry: "main",
		},
		{
			name: "uniform buffer, vulkan1.0 BufferBlock storage buffer, image, another set",
			src: `#version 450
layout (set = 0, binding = 0) uniform U { vec4 k; };
layout (set = 0, binding = 1) buffer S { float y[]; };
layout (set = 1, binding = 0, r32f) uniform image2D img;
layout (local_size_x = 1) in;
void main() { y[0] = k.x + imageLoad(img, ivec2(0)).x; }`,
			binds:  []DescriptorBinding{{0, 0, "uniform"}, {0, 1, "storage"}, {1, 0, "other"}},
			spec:   map[uint32]string{},
			entry:  "main",
			noPush: true,
		},
		{
			name: "subgroup arithmetic, aliased binding, no push block",
			src: `#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout (binding = 0) buffer A { float x[]; };
layout (binding = 0) buffer A4 { vec4 x4[]; };
layout (local_size_x = 8) in;
void main() { x[0] = subgroupAdd(x4[gl_LocalInvocationID.x].y); }`,
			args:   []string{o12, "-O"},
			binds:  []DescriptorBinding{{0, 0, "storage"}},
			spec:   map[uint32]string{},
			caps:   []uint32{61, 63},
			entry:  "main",
			noPush: true,
		},
		{
			name: "struct member and matrix in the push block, entry point name",
			src: `#version 450
struct S { uint a; vec3 v; };
layout (push_constant) uniform P { S s; mat2 m; uint tail; } p;
layout (binding = 0) buffer A { float x[]; };
layout (local_size_x = 1) in;
void main() { x[0] = p.s.v.z + p.m[1][1] + float(p.tail + p.s.a); }`,
			args:  []string{o12, "-O", "-fentry-point=main"},
			push:  52, // s: 0..28 (v at 16), m at 32 (std430: 2 columns of 8 bytes), tail at 48
			binds: []DescriptorBinding{{0, 0, "storage"}},
			spec:  map[uint32]string{},
			entry: "main",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := Reflect(glslc(t, c.src, c.args...))
			if err != nil {
				t.Fatal(err)
			}
			if c.noPush && in.PushConstantSize != 0 || !c.noPush && in.PushConstantSize != c.push {
				t.Errorf("push-constant block %d bytes, want %d", in.PushConstantSize, c.push)
			}
			if !reflect.DeepEqual(in.Bindings, c.binds) {
				t.Errorf("bindings %+v, want %+v", in.Bindings, c.binds)
			}
			if !reflect.DeepEqual(in.SpecConstants, c.spec) {
				t.Errorf("spec constants %v, want %v", in.SpecConstants, c.spec)
			}
			for _, cp := range c.caps {
				if !in.hasCapability(cp) {
					t.Errorf("capability %d not reported (have %v)", cp, in.Capabilities)
				}
			}
			if len(in.EntryPoints) != 1 || in.EntryPoints[0] != c.entry {
				t.Errorf("entry points %q, want [%q]", in.EntryPoints, c.entry)
			}
		})
	}
	if _, err := Reflect([]uint32{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "not a SPIR-V module") {
		t.Errorf("Reflect of garbage: %v", err)
	}
}

// TestInterfaceMismatch checks that an entry disagreeing with its shader's declared interface
// is refused, with the manifest path and what the shader declares.
func TestInterfaceMismatch(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the shader's interface cannot be read")
	}
	const shader = `#version 450
layout (push_constant) uniform P { uint n; float scale; } p;
layout (binding = 0) readonly buffer A { float x[]; };
layout (binding = 1) readonly buffer B { float unused_here[]; };
layout (binding = 2) buffer D { float y[]; };
layout (constant_id = 0) const uint BLOCK = 64;
layout (constant_id = 1) const bool UNUSED_FLAG = false;
layout (local_size_x_id = 0) in;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = x[i] * p.scale + float(BLOCK); }
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.comp"), []byte(shader), 0o644); err != nil {
		t.Fatal(err)
	}
	const good = `{"version": 1, "incumbents": [{"op": "scale", "type": "f32", "backend": "vulkan",
  "source": {"glsl": "k.comp"},
  "bindings": [{"binding": 0, "operand": "x"}, {"binding": 1, "scratch_bytes": 4, "unused": true}, {"binding": 2, "operand": "y"}],
  "push_constants": [{"name": "n", "type": "u32", "value": "n"}, {"name": "scale", "type": "f32", "value": 2}],
  "spec_constants": [{"id": 0, "type": "u32", "value": 64}],
  "workgroup_size": [64, 1, 1], "grid": ["cdiv(n, 64)", 1, 1]}]}`
	vars := map[string]float64{"n": 1000}
	for _, c := range []struct{ name, old, new, want string }{
		{"valid", "", "", ""},
		{"binding the shader lacks", `"scratch_bytes": 4, "unused": true`, `"scratch_bytes": 4`,
			"incumbents[0].bindings[1]: binding 1 is not declared by the shader (it declares 0, 2); glslc -O removes buffers"},
		{"unused binding the shader declares", `{"binding": 0, "operand": "x"}`, `{"binding": 0, "operand": "x", "unused": true}`,
			"incumbents[0].bindings[0]: binding 0 is marked unused, but the shader declares it"},
		{"binding the manifest omits", `, {"binding": 2, "operand": "y"}]`, `]`,
			"incumbents[0].bindings: the shader declares binding 2, the manifest does not bind it"},
		{"spec constant stripped by -O", `[{"id": 0, "type": "u32", "value": 64}]`, `[{"id": 0, "type": "u32", "value": 64}, {"id": 1, "type": "bool", "value": 1}]`,
			"incumbents[0].spec_constants[1].id: the shader declares no spec constant 1 (it declares 0); glslc -O removes spec constants"},
		{"spec constant never declared", `"id": 0,`, `"id": 7,`,
			"incumbents[0].spec_constants[0].id: the shader declares no spec constant 7"},
		{"spec constant of another type", `"type": "u32", "value": 64`, `"type": "f32", "value": 64`,
			"incumbents[0].spec_constants[0].type: f32, but the shader's spec constant 0 is uint32"},
		{"push constants short of the block", `, {"name": "scale", "type": "f32", "value": 2}]`, `]`,
			"incumbents[0].push_constants: the fields end at byte 4, short of the shader's 8-byte push-constant block"},
		{"push constants beyond the block", `"value": 2}]`, `"value": 2}, {"name": "extra", "type": "u32", "value": 0}]`,
			"incumbents[0].push_constants: the fields end at byte 12, beyond the shader's 8-byte push-constant block"},
		{"wrong entry point", `"source": {"glsl": "k.comp"},`, `"source": {"glsl": "k.comp"}, "entry": "kernel",`,
			`incumbents[0].entry: the shader has no GLCompute entry point "kernel" (it has ["main"])`},
		{"a variant's own mismatch", `"grid": ["cdiv(n, 64)", 1, 1]`, `"grid": ["cdiv(n, 64)", 1, 1],
  "variants": [{"when": "n > 500", "spec_constants": [{"id": 2, "type": "u32", "value": 1}]}]`,
			"incumbent scale/f32/vulkan variant variants[0]: incumbents[0].variants[0].spec_constants[0].id: the shader declares no spec constant 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(good, c.old, c.new, 1)
			if data == good && c.old != "" {
				t.Fatalf("replacement %q not found", c.old)
			}
			m, err := Parse([]byte(data), "m.json", dir)
			if err != nil {
				t.Fatal(err)
			}
			e := m.Incumbents[0]
			errI := e.CheckInterface()
			_, errV := e.Vulkan(vars)
			for _, err := range []error{errI, errV} {
				switch {
				case c.want == "" && err != nil:
					t.Fatalf("valid entry: %v", err)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
					t.Fatalf("got %v, want an error containing %q", err, c.want)
				}
			}
		})
	}
}
