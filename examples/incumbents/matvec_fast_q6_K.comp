#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
// Hand-written matvec (q6_K weights): one subgroup per workgroup, NUM_ROWS rows sharing each
// activation load, one 256-value super-block per invocation and step: four low bits from ql and
// two high bits from qh per value, one int8 scale per 16 values, a subgroup reduction.
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint NUM_ROWS = 2;

struct block_q6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; float16_t d; };
layout(binding = 0) readonly buffer W { block_q6_K w[]; };
layout(binding = 1) readonly buffer X { vec4 x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

void main() {
    const uint row0 = gl_WorkGroupID.x * NUM_ROWS;
    const uint tid = gl_LocalInvocationID.x;
    const uint nb = p.ncols / 256;
    float acc[NUM_ROWS];
    for (uint r = 0; r < NUM_ROWS; r++) { acc[r] = 0.0; }
    for (uint b = tid; b < nb; b += gl_WorkGroupSize.x) {
        for (uint r = 0; r < NUM_ROWS; r++) {
            const uint row = min(row0 + r, p.nrows - 1);
            const uint i = row * nb + b;
            float s = 0.0;
            for (uint sb = 0; sb < 16; sb++) { // 16 values a scale
                const uint c = sb / 8, g = (sb % 8) / 2, l0 = (sb % 2) * 16;
                float qx = 0.0;
                for (uint q = 0; q < 4; q++) {
                    const vec4 xv = x[b * 64 + sb * 4 + q];
                    vec4 qv;
                    for (uint e = 0; e < 4; e++) {
                        const uint l = l0 + 4 * q + e;
                        uint lo = uint(w[i].ql[c * 64 + (g & 1u) * 32 + l]);
                        lo = (g >= 2 ? lo >> 4 : lo) & 15u;
                        const uint hi = (uint(w[i].qh[c * 32 + l]) >> (2 * g)) & 3u;
                        qv[e] = float(int(lo | (hi << 4)) - 32);
                    }
                    qx += dot(qv, xv);
                }
                s += float(w[i].scales[sb]) * qx;
            }
            acc[r] += float(w[i].d) * s;
        }
    }
    for (uint r = 0; r < NUM_ROWS; r++) { acc[r] = subgroupAdd(acc[r]); }
    if (tid == 0) {
        for (uint r = 0; r < NUM_ROWS && row0 + r < p.nrows; r++) { y[row0 + r] = acc[r]; }
    }
}
