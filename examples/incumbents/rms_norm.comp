#version 450
// Hand-written rms_norm (f32): one workgroup of 256 invocations per row, y = x * w / sqrt(mean(x^2) + eps).
// Each invocation sums the squares of a strided slice of the row; a shared-memory tree
// reduction combines the 256 partial sums.
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer W { float w[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint ncols;    // row length
    float eps;
    uint weighted; // 0: no weight
} p;

shared float partial[256];

void main() {
    const uint row = gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    const uint base = row * p.ncols;
    float sum = 0.0;
    for (uint c = tid; c < p.ncols; c += 256) {
        float v = x[base + c];
        sum += v * v;
    }
    partial[tid] = sum;
    barrier();
    for (uint s = 128; s > 0; s >>= 1) {
        if (tid < s) {
            partial[tid] += partial[tid + s];
        }
        barrier();
    }
    const float scale = inversesqrt(partial[0] / float(p.ncols) + p.eps);
    if (p.weighted != 0) {
        for (uint c = tid; c < p.ncols; c += 256) {
            y[base + c] = x[base + c] * scale * w[c];
        }
    } else {
        for (uint c = tid; c < p.ncols; c += 256) {
            y[base + c] = x[base + c] * scale;
        }
    }
}
