#version 450
// layer_norm_gelu, the naive way: one invocation per row, the mean and the mean of squares in one
// pass, variance = E[x^2] - E[x]^2, GELU with the builtin tanh.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; float eps; uint rows; } p;

void main() {
    const uint r = gl_GlobalInvocationID.x;
    if (r >= p.rows) {
        return;
    }
    const uint base = r * p.n;
    float s = 0.0, s2 = 0.0;
    for (uint i = 0; i < p.n; i++) {
        const float v = x[base + i];
        s += v;
        s2 += v * v;
    }
    const float mean = s / float(p.n);
    const float rstd = inversesqrt(s2 / float(p.n) - mean * mean + p.eps);
    for (uint i = 0; i < p.n; i++) {
        const float v = (x[base + i] - mean) * rstd;
        y[base + i] = 0.5 * v * (1.0 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    }
}
