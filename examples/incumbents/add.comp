#version 450
// Hand-written add (f32): y[i] = a[i] + b[i], one invocation per element.
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint n;
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = a[i] + b[i];
    }
}
