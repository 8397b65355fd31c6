// Package incumbentstest writes a tree of hand-written incumbents for tests: the kernels of
// examples/incumbents plus two that share a GLSL header, with their manifest.
package incumbentstest

import (
	"os"
	"path/filepath"
	"strings"
)

// The fixture's extra kernels: mul and swiglu share a header; mul's cell flips, swiglu's
// declines, so the header stays.
const (
	commonGLSL = `// Shared by the element-wise incumbents: bindings and push constants.
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; } p;
`
	mulComp = `#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = a[i] * b[i];
    }
}
`
	swigluComp = `#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        float x = a[i];
        y[i] = x / (1.0 + exp(-x)) * b[i];
    }
}
`
	extraEntries = `,
    {
      "name": "hand_mul_f32", "op": "mul", "type": "f32", "backend": "vulkan",
      "source": {"glsl": "mul.comp"},
      "bindings": [{"binding": 0, "operand": "a", "readonly": true}, {"binding": 1, "operand": "b", "readonly": true}, {"binding": 2, "operand": "y"}],
      "push_constants": [{"name": "n", "type": "u32", "value": "rows*n"}],
      "workgroup_size": [256, 1, 1], "grid": ["cdiv(rows*n, 256)", 1, 1]
    },
    {
      "name": "hand_swiglu_f32", "op": "swiglu", "type": "f32", "backend": "vulkan",
      "source": {"glsl": "swiglu.comp"},
      "bindings": [{"binding": 0, "operand": "x", "readonly": true}, {"binding": 1, "operand": "g", "readonly": true}, {"binding": 2, "operand": "y"}],
      "push_constants": [{"name": "n", "type": "u32", "value": "rows*n"}],
      "workgroup_size": [256, 1, 1], "grid": ["cdiv(rows*n, 256)", 1, 1]
    }
  ]`
)

// Write copies the incumbents of examples/incumbents (src) into dir, adds mul and swiglu
// (sharing a header) to the tree and its manifest, and returns the manifest's path.
func Write(dir, src string) (string, error) {
	ents, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return "", err
		}
		if e.Name() == "manifest.json" {
			s := string(b)
			i := strings.LastIndex(s, "]")
			j := strings.LastIndex(s[:i], "}")
			b = []byte(s[:j+1] + extraEntries + s[i+1:])
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return "", err
		}
	}
	for name, text := range map[string]string{"common.glsl": commonGLSL, "mul.comp": mulComp, "swiglu.comp": swigluComp} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "manifest.json"), nil
}
