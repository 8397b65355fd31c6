#version 450
// cumsum, hand-written for SIMD devices: 64 rows in a workgroup, one invocation per row, each
// adding its row in order (the same additions as the oracle: bit-exact).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; uint rows; } p;

void main() {
    const uint r = gl_GlobalInvocationID.x;
    if (r >= p.rows) {
        return;
    }
    const uint base = r * p.n;
    float acc = x[base];
    y[base] = acc;
    for (uint i = 1; i < p.n; i++) {
        acc += x[base + i];
        y[base + i] = acc;
    }
}
