#version 450
// Hand-written matvec (f32 weights): y[r] = dot(w[r, :], x), one workgroup of BLOCK invocations
// per row, a strided partial dot per invocation and a shared-memory tree reduction.
// BLOCK is a specialization constant (the manifest sets it), as ggml's shaders do.
layout(constant_id = 0) const uint BLOCK = 128;
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer W { float w[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint ncols;
    uint nrows;
} p;

shared float partial[BLOCK];

void main() {
    const uint row = gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    if (row >= p.nrows) {
        return;
    }
    const uint base = row * p.ncols;
    float sum = 0.0;
    for (uint c = tid; c < p.ncols; c += BLOCK) {
        sum += w[base + c] * x[c];
    }
    partial[tid] = sum;
    barrier();
    for (uint s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            partial[tid] += partial[tid + s];
        }
        barrier();
    }
    if (tid == 0) {
        y[row] = partial[0];
    }
}
