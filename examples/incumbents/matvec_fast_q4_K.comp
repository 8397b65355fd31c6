#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// Hand-written matvec (q4_K weights): one subgroup per workgroup, NUM_ROWS rows sharing each
// activation load, one 256-value super-block per invocation and step: its eight 6-bit scales and
// mins decoded once, each 32-value sub-block's 32 nibbles unpacked with bit operations against
// eight vec4 loads of the activations, a subgroup reduction.
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint NUM_ROWS = 2;

struct block_q4_K { float16_t d; float16_t dmin; uint8_t scales[12]; uint8_t qs[128]; };
layout(binding = 0) readonly buffer W { block_q4_K w[]; };
layout(binding = 1) readonly buffer X { vec4 x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

// scaleMin is ggml's get_scale_min_k4: the j-th scale and min of a super-block.
void scaleMin(uint i, uint j, out float sc, out float mn) {
    if (j < 4) {
        sc = float(uint(w[i].scales[j]) & 63u);
        mn = float(uint(w[i].scales[j + 4]) & 63u);
    } else {
        sc = float((uint(w[i].scales[j + 4]) & 15u) | ((uint(w[i].scales[j - 4]) >> 6) << 4));
        mn = float((uint(w[i].scales[j + 4]) >> 4) | ((uint(w[i].scales[j]) >> 6) << 4));
    }
}

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
            const float d = float(w[i].d), dmin = float(w[i].dmin);
            float s = 0.0;
            for (uint sb = 0; sb < 8; sb++) {
                float sc, mn;
                scaleMin(i, sb, sc, mn);
                const uint base = (sb / 2) * 32, shift = 4 * (sb % 2);
                float qx = 0.0, xs = 0.0;
                for (uint q = 0; q < 8; q++) {
                    const vec4 xv = x[b * 64 + sb * 8 + q];
                    const uint o = base + 4 * q;
                    const vec4 qv = vec4((uint(w[i].qs[o]) >> shift) & 15u, (uint(w[i].qs[o + 1]) >> shift) & 15u,
                                         (uint(w[i].qs[o + 2]) >> shift) & 15u, (uint(w[i].qs[o + 3]) >> shift) & 15u);
                    qx += dot(qv, xv);
                    xs += dot(vec4(1.0), xv);
                }
                s += d * sc * qx - dmin * mn * xs;
            }
            acc[r] += s;
        }
    }
    for (uint r = 0; r < NUM_ROWS; r++) { acc[r] = subgroupAdd(acc[r]); }
    if (tid == 0) {
        for (uint r = 0; r < NUM_ROWS && row0 + r < p.nrows; r++) { y[row0 + r] = acc[r]; }
    }
}
