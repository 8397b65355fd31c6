#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// Hand-written matvec (q4_0 weights), written the way the fast ones are on this class of device:
// a workgroup of one subgroup, NUM_ROWS rows sharing each activation load, one 32-value block per
// invocation and step (its 16 bytes unpacked with bit operations), a subgroup reduction.
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint NUM_ROWS = 2;

struct block_q4_0 { float16_t d; uint8_t qs[16]; };
layout(binding = 0) readonly buffer W { block_q4_0 w[]; };
layout(binding = 1) readonly buffer X { vec4 x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

void main() {
    const uint row0 = gl_WorkGroupID.x * NUM_ROWS;
    const uint tid = gl_LocalInvocationID.x;
    const uint nb = p.ncols / 32;
    float acc[NUM_ROWS];
    for (uint r = 0; r < NUM_ROWS; r++) { acc[r] = 0.0; }
    for (uint b = tid; b < nb; b += gl_WorkGroupSize.x) {
        vec4 xl[4], xh[4];
        for (uint q = 0; q < 4; q++) { xl[q] = x[b * 8 + q]; xh[q] = x[b * 8 + 4 + q]; }
        for (uint r = 0; r < NUM_ROWS; r++) {
            const uint row = min(row0 + r, p.nrows - 1);
            const uint i = row * nb + b;
            float s = 0.0;
            for (uint q = 0; q < 4; q++) {
                const uint b0 = uint(w[i].qs[4 * q]), b1 = uint(w[i].qs[4 * q + 1]), b2 = uint(w[i].qs[4 * q + 2]), b3 = uint(w[i].qs[4 * q + 3]);
                s += dot(vec4(b0 & 15u, b1 & 15u, b2 & 15u, b3 & 15u) - 8.0, xl[q]);
                s += dot(vec4(b0 >> 4, b1 >> 4, b2 >> 4, b3 >> 4) - 8.0, xh[q]);
            }
            acc[r] += float(w[i].d) * s;
        }
    }
    for (uint r = 0; r < NUM_ROWS; r++) { acc[r] = subgroupAdd(acc[r]); }
    if (tid == 0) {
        for (uint r = 0; r < NUM_ROWS && row0 + r < p.nrows; r++) { y[row0 + r] = acc[r]; }
    }
}
