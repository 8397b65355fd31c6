#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
// Hand-written matvec (f32 weights), written the way the fast ones are on this class of device:
// a workgroup of one subgroup, NUM_ROWS rows per workgroup sharing each activation load, vec4
// loads (four consecutive values per invocation and step), a subgroup reduction: no shared
// memory, no barrier.
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint NUM_ROWS = 2;

layout(binding = 0) readonly buffer W { vec4 w[]; };
layout(binding = 1) readonly buffer X { vec4 x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint ncols; // a multiple of 4
    uint nrows;
} p;

void main() {
    const uint row0 = gl_WorkGroupID.x * NUM_ROWS;
    const uint tid = gl_LocalInvocationID.x;
    const uint n4 = p.ncols / 4;
    float acc[NUM_ROWS];
    for (uint r = 0; r < NUM_ROWS; r++) {
        acc[r] = 0.0;
    }
    for (uint c = tid; c < n4; c += gl_WorkGroupSize.x) {
        const vec4 xv = x[c];
        for (uint r = 0; r < NUM_ROWS; r++) {
            const uint row = min(row0 + r, p.nrows - 1);
            acc[r] += dot(w[row * n4 + c], xv);
        }
    }
    for (uint r = 0; r < NUM_ROWS; r++) {
        acc[r] = subgroupAdd(acc[r]);
    }
    if (tid == 0) {
        for (uint r = 0; r < NUM_ROWS && row0 + r < p.nrows; r++) {
            y[row0 + r] = acc[r];
        }
    }
}
