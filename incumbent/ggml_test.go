package incumbent

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/vktest"
)

// The entries below register three more of ggml's Vulkan shaders
// (ggml/src/ggml-vulkan/vulkan-shaders in ggml-org/llama.cpp) as manifest data, the way
// ggmlRMSNorm registers rms_norm.comp. Only layout facts are taken from ggml: defines, binding
// numbers, push-constant field order and types, spec-constant ids and values, workgroup sizes,
// subgroup requirements and the dispatch grid that ggml-vulkan.cpp computes (its "elements"
// divided by the pipeline's wg_denoms, rounded up). ggml's shader sources are not in this
// repository: each entry is instantiated against a stub written here with the same declared
// interface (checked against the manifest by reflection) and the same indexing, which the tests
// run on the Vulkan device when there is one.

// ggmlSoftMax follows soft_max.comp and vk_op_soft_max_push_constants (ggml-vulkan.cpp):
// bindings X (0, src0), Y (1, the mask), Z (2, the attention sinks), D (3, dst); the push block
// KX, KY, ne00, ne01, ne02, ne12, ne13, nb11, nb12, nb13 (u32), scale, max_bias, m0, m1 (f32),
// n_head_log2, nrows_x, has_sinks (u32); BLOCK_SIZE is constant_id 0 and local_size_x_id 0.
// The cell has no mask and no sinks: ggml binds a placeholder buffer there, scratch here, and
// KY, ne12, ne13 and the mask strides are 0. The ALiBi slopes are computed as the host does:
// n_head_log2 = 2^floor(log2(n_head)), m0 = 2^(-max_bias/n_head_log2),
// m1 = 2^(-(max_bias/2)/n_head_log2) (n_head = ne02 = heads).
//
// The grid: the shader finds its row as rowx = z*262144 + y*512 + x (workgroup ids), and
// ggml_vk_op_f32 dispatches the nr = rows*heads rows as {nr, 1, 1} up to 512 rows,
// {512, ceil(nr/512), 1} up to 262144 and {512, 512, ceil(nr/262144)} beyond (wg_denoms
// {1, 1, 1}); the shader returns for rowx >= nrows_x. ([rows, heads, 1] computes the wrong rows
// when heads > 1 and rows != 512.) The pipeline: ggml picks soft_max_f32_wg512 (BLOCK_SIZE 512)
// for rows of more than 1024 values, else soft_max_f32, whose BLOCK_SIZE is the device's
// subgroup size: the entry's own fields, with the wide pipeline as a variant.
const ggmlSoftMax = `{
  "version": 1,
  "incumbents": [{
    "name": "ggml_soft_max_f32",
    "op": "soft_max", "type": "f32", "backend": "vulkan",
    "source": {
      "glsl": "soft_max.comp",
      "defines": {"A_TYPE": "float", "B_TYPE": "float", "D_TYPE": "float", "FLOAT_TYPE": "float"},
      "glslc_args": ["--target-env=vulkan1.2"]
    },
    "bindings": [
      {"binding": 0, "operand": "x", "readonly": true},
      {"binding": 1, "scratch_bytes": 4, "readonly": true},
      {"binding": 2, "scratch_bytes": 4, "readonly": true},
      {"binding": 3, "operand": "y"}
    ],
    "push_constants": [
      {"name": "KX", "type": "u32", "value": "n"},
      {"name": "KY", "type": "u32", "value": 0},
      {"name": "ne00", "type": "u32", "value": "n"},
      {"name": "ne01", "type": "u32", "value": "rows"},
      {"name": "ne02", "type": "u32", "value": "heads"},
      {"name": "ne12", "type": "u32", "value": 0},
      {"name": "ne13", "type": "u32", "value": 0},
      {"name": "nb11", "type": "u32", "value": 0},
      {"name": "nb12", "type": "u32", "value": 0},
      {"name": "nb13", "type": "u32", "value": 0},
      {"name": "scale", "type": "f32", "value": "scale"},
      {"name": "max_bias", "type": "f32", "value": "max_bias"},
      {"name": "m0", "type": "f32", "value": "pow(2, -max_bias / pow(2, floor(log2(heads))))"},
      {"name": "m1", "type": "f32", "value": "pow(2, -(max_bias / 2) / pow(2, floor(log2(heads))))"},
      {"name": "n_head_log2", "type": "u32", "value": "pow(2, floor(log2(heads)))"},
      {"name": "nrows_x", "type": "u32", "value": "rows*heads"},
      {"name": "has_sinks", "type": "u32", "value": 0}
    ],
    "spec_constants": [{"id": 0, "type": "u32", "value": "subgroup_size"}],
    "workgroup_size": ["subgroup_size", 1, 1],
    "grid": [
      "rows*heads > 512 ? 512 : rows*heads",
      "rows*heads > 262144 ? 512 : rows*heads > 512 ? cdiv(rows*heads, 512) : 1",
      "rows*heads > 262144 ? cdiv(rows*heads, 262144) : 1"
    ],
    "variants": [{
      "name": "wg512", "when": "n > 1024",
      "spec_constants": [{"id": 0, "type": "u32", "value": 512}],
      "workgroup_size": [512, 1, 1]
    }],
    "shape": {"rows": 512, "n": 4096, "heads": 1, "scale": 1, "max_bias": 0},
    "notes": "ggml soft_max.comp without mask or sinks (placeholder bindings as scratch)"
  }]
}`

// ggmlSoftMaxStub declares soft_max.comp's interface and finds its row as it does; each row's
// values are written as x*scale + rowx (plus the mask and sinks, when given), so a run shows
// which rows the grid reached.
const ggmlSoftMaxStub = `#version 450
layout (push_constant) uniform parameter {
    uint KX; uint KY; uint ne00; uint ne01; uint ne02; uint ne12; uint ne13;
    uint nb11; uint nb12; uint nb13;
    float scale; float max_bias; float m0; float m1;
    uint n_head_log2; uint nrows_x; uint has_sinks;
} p;
layout (constant_id = 0) const uint BLOCK_SIZE = 32;
layout (local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout (binding = 0) readonly buffer X {A_TYPE data_a[];};
layout (binding = 1) readonly buffer Y {B_TYPE data_b[];};
layout (binding = 2) readonly buffer Z {float data_c[];};
layout (binding = 3) buffer D {D_TYPE data_d[];};
void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint rowx = gl_WorkGroupID.z * 262144 + gl_WorkGroupID.y * 512 + gl_WorkGroupID.x;
    if (rowx >= p.nrows_x) {
        return;
    }
    const uint i02 = (rowx / p.ne01) % p.ne02;
    for (uint col = tid; col < p.KX; col += BLOCK_SIZE) {
        FLOAT_TYPE v = FLOAT_TYPE(data_a[rowx * p.KX + col]) * p.scale + FLOAT_TYPE(rowx);
        if (p.KY > 0) { v += FLOAT_TYPE(data_b[col]) * p.m0; }
        if (p.has_sinks != 0) { v += data_c[i02] * p.m1 * float(p.n_head_log2) * p.max_bias; }
        data_d[rowx * p.KX + col] = D_TYPE(v);
    }
}
`

// ggmlGetRowsQ4_0 follows get_rows_quant.comp, generic_binary_head.glsl and
// vk_op_binary_push_constants (ggml-vulkan.cpp), compiled as ggml's get_rows_q4_0_f32:
// DATA_A_Q4_0 (types.glsl derives the block type, QUANT_K and QUANT_R from it), B_TYPE int,
// D_TYPE float. Bindings A (0, the q4_0 table; A_PACKED16 aliases it), B (1, the i32 row ids),
// D (2, dst f32); the binary push block (ne; ne00..nb03; ne10..nb13; ne20..nb23;
// misalign_offsets; param1, param2 f32; param3 i32) with strides in elements of each tensor's
// type (a q4_0 block of 32 values for src0). local_size is the literal 512 and each invocation
// writes 2 values: the pipeline's wg_denoms are {1024, 1, 1} over the elements
// {ne00, ne10, ne11*ne12}, y and z clamped to maxComputeWorkGroupCount (65535 here, the least
// Vulkan guarantees; the shader loops over the rest). generic_binary_head.glsl declares
// norepeat (constant_id 0), but get_rows never reads it, so glslc -O removes it: the entry sets
// no spec constant. The shape gathers k rows of a rows x n q4_0 table into a k x n f32 matrix;
// ne = ggml_nelements(src0).
const ggmlGetRowsQ4_0 = `{
  "version": 1,
  "incumbents": [{
    "name": "ggml_get_rows_q4_0_f32",
    "op": "get_rows", "type": "q4_0", "backend": "vulkan",
    "source": {
      "glsl": "get_rows_quant.comp",
      "defines": {"DATA_A_Q4_0": "1", "B_TYPE": "int", "D_TYPE": "float", "FLOAT_TYPE": "float"},
      "glslc_args": ["--target-env=vulkan1.2"]
    },
    "bindings": [
      {"binding": 0, "operand": "table", "elem_size": 18, "readonly": true},
      {"binding": 1, "operand": "ids", "readonly": true},
      {"binding": 2, "operand": "y"}
    ],
    "push_constants": [
      {"name": "ne", "type": "u32", "value": "n*rows"},
      {"name": "ne00", "type": "u32", "value": "n"},
      {"name": "ne01", "type": "u32", "value": "rows"},
      {"name": "ne02", "type": "u32", "value": 1},
      {"name": "ne03", "type": "u32", "value": 1},
      {"name": "nb00", "type": "u32", "value": 1},
      {"name": "nb01", "type": "u32", "value": "n/32"},
      {"name": "nb02", "type": "u32", "value": "n/32*rows"},
      {"name": "nb03", "type": "u32", "value": "n/32*rows"},
      {"name": "ne10", "type": "u32", "value": "k"},
      {"name": "ne11", "type": "u32", "value": 1},
      {"name": "ne12", "type": "u32", "value": 1},
      {"name": "ne13", "type": "u32", "value": 1},
      {"name": "nb10", "type": "u32", "value": 1},
      {"name": "nb11", "type": "u32", "value": "k"},
      {"name": "nb12", "type": "u32", "value": "k"},
      {"name": "nb13", "type": "u32", "value": "k"},
      {"name": "ne20", "type": "u32", "value": "n"},
      {"name": "ne21", "type": "u32", "value": "k"},
      {"name": "ne22", "type": "u32", "value": 1},
      {"name": "ne23", "type": "u32", "value": 1},
      {"name": "nb20", "type": "u32", "value": 1},
      {"name": "nb21", "type": "u32", "value": "n"},
      {"name": "nb22", "type": "u32", "value": "n*k"},
      {"name": "nb23", "type": "u32", "value": "n*k"},
      {"name": "misalign_offsets", "type": "u32", "value": 0},
      {"name": "param1", "type": "f32", "value": 0},
      {"name": "param2", "type": "f32", "value": 0},
      {"name": "param3", "type": "i32", "value": 0}
    ],
    "workgroup_size": [512, 1, 1],
    "grid": ["cdiv(n, 1024)", "min(k, 65535)", "min(1, 65535)"],
    "features": ["storage_buffer16", "storage_buffer8"],
    "shape": {"rows": 32000, "n": 4096, "k": 512},
    "notes": "ggml get_rows_quant.comp, q4_0 table to f32 rows"
  }]
}`

// ggmlGetRowsStub declares get_rows_quant.comp's interface (with types.glsl's q4_0 definitions
// and generic_binary_head.glsl's norepeat) and gathers rows as it does: the y and z loops, the
// misalignment offsets, q4_0 dequantization of two values per invocation.
const ggmlGetRowsStub = `#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#if defined(DATA_A_Q4_0)
#define QUANT_K 32
#define QUANT_R 2
struct block_q4_0 { float16_t d; uint8_t qs[16]; };
struct block_q4_0_packed16 { float16_t d; uint16_t qs[8]; };
#define A_TYPE block_q4_0
#define A_TYPE_PACKED16 block_q4_0_packed16
#else
#error "get_rows_quant.comp needs the DATA_A_<type> define of its table's type"
#endif
layout (push_constant) uniform parameter {
    uint ne;
    uint ne00; uint ne01; uint ne02; uint ne03; uint nb00; uint nb01; uint nb02; uint nb03;
    uint ne10; uint ne11; uint ne12; uint ne13; uint nb10; uint nb11; uint nb12; uint nb13;
    uint ne20; uint ne21; uint ne22; uint ne23; uint nb20; uint nb21; uint nb22; uint nb23;
    uint misalign_offsets;
    float param1; float param2; int param3;
} p;
layout (binding = 0) readonly buffer A {A_TYPE data_a[];};
layout (binding = 0) readonly buffer A_PACKED16 {A_TYPE_PACKED16 data_a_packed16[];};
layout (binding = 1) readonly buffer B {B_TYPE data_b[];};
layout (binding = 2) writeonly buffer D {D_TYPE data_d[];};
layout (constant_id = 0) const bool norepeat = false;
layout (local_size_x = 512, local_size_y = 1, local_size_z = 1) in;
void main() {
    const uint i00 = gl_GlobalInvocationID.x * 2;
    if (i00 >= p.ne00) {
        return;
    }
    uint gid_z = gl_GlobalInvocationID.z;
    while (gid_z < p.ne11 * p.ne12) {
        uint gid_y = gl_GlobalInvocationID.y;
        while (gid_y < p.ne10) {
            const uint i10 = gid_y;
            const uint i11 = gid_z / p.ne12;
            const uint i12 = gid_z % p.ne12;
            const uint i01 = uint(data_b[((p.misalign_offsets >> 8) & 0xFF) + i10*p.nb10 + i11*p.nb11 + i12*p.nb12]);
            const uint a_offset = (p.misalign_offsets >> 16) + i01*p.nb01 + i11*p.nb02 + i12*p.nb03;
            const uint d_offset = (p.misalign_offsets & 0xFF) + i10*p.nb21 + i11*p.nb22 + i12*p.nb23;
            const uint ib = a_offset + i00/QUANT_K;
            const uint iqs = (i00%QUANT_K)/QUANT_R;
            const uint iybs = i00 - i00%QUANT_K;
            const uint vui = uint(data_a[ib].qs[iqs]);
            const vec2 v = (vec2(vui & 0xF, vui >> 4) - 8.0f) * float(data_a[ib].d);
            data_d[d_offset + iybs + iqs] = D_TYPE(v.x);
            data_d[d_offset + iybs + iqs + QUANT_K/2] = D_TYPE(v.y);
            gid_y += gl_WorkGroupSize.y * gl_NumWorkGroups.y;
        }
        gid_z += gl_WorkGroupSize.z * gl_NumWorkGroups.z;
    }
}
`

// ggmlMatVecQ4_0 follows mul_mat_vec.comp, mul_mat_vec_base.glsl / mul_mat_vec_iface.glsl and
// vk_mat_vec_push_constants (ggml-vulkan.cpp): bindings A (0, q4_0 weights), B (1, f32 x),
// D (2, f32 y), Fuse0 and Fuse1 (3, 4: the fused bias/scale operands, unused here, scratch);
// the push block ncols, stride_a, stride_b, stride_d, batch_stride_a, batch_stride_b,
// batch_stride_d, fusion_flags, base_work_group_y, ne02, ne12, broadcast2, broadcast3 (all u32,
// strides in elements; fusion_flags 0 = nothing fused); spec constants BLOCK_SIZE (0, also
// local_size_x_id), NUM_ROWS (1) and NUM_COLS (2). ggml's pipeline for one f32 column on a
// device with subgroup arithmetic (all but AMD GCN): the DMMV_WG_SIZE_SUBGROUP variant compiled
// with USE_SUBGROUP_ADD_NO_SHMEM, specialized {subgroup size, 2*rm_stdq, 1} with rm_stdq 1
// (2 on Intel and AMD GCN), created requiring full subgroups of the subgroup size
// (require_full_subgroups, required_subgroup_size): BLOCK_SIZE is the subgroup size (8 on
// lavapipe), the workgroup one subgroup, reduced by subgroupAdd. The elements
// {ne01, ne12*ne13, 1} are divided by wg_denoms {2*rm_stdq, 1, 1}. The shape is a rows x n
// weight times an n-vector.
const ggmlMatVecQ4_0 = `{
  "version": 1,
  "incumbents": [{
    "name": "ggml_mul_mat_vec_q4_0_f32_f32",
    "op": "matvec", "type": "q4_0", "backend": "vulkan",
    "source": {
      "glsl": "mul_mat_vec.comp",
      "defines": {"DATA_A_Q4_0": "1", "B_TYPE": "float", "D_TYPE": "float", "FLOAT_TYPE": "float",
                  "USE_SUBGROUP_ADD_NO_SHMEM": "1"},
      "glslc_args": ["--target-env=vulkan1.2"]
    },
    "bindings": [
      {"binding": 0, "operand": "w", "elem_size": 18, "readonly": true},
      {"binding": 1, "operand": "x", "readonly": true},
      {"binding": 2, "operand": "y"},
      {"binding": 3, "scratch_bytes": 4, "readonly": true},
      {"binding": 4, "scratch_bytes": 4, "readonly": true}
    ],
    "push_constants": [
      {"name": "ncols", "type": "u32", "value": "n"},
      {"name": "stride_a", "type": "u32", "value": "n"},
      {"name": "stride_b", "type": "u32", "value": "n"},
      {"name": "stride_d", "type": "u32", "value": "rows"},
      {"name": "batch_stride_a", "type": "u32", "value": "n*rows"},
      {"name": "batch_stride_b", "type": "u32", "value": "n"},
      {"name": "batch_stride_d", "type": "u32", "value": "rows"},
      {"name": "fusion_flags", "type": "u32", "value": 0},
      {"name": "base_work_group_y", "type": "u32", "value": 0},
      {"name": "ne02", "type": "u32", "value": 1},
      {"name": "ne12", "type": "u32", "value": 1},
      {"name": "broadcast2", "type": "u32", "value": 1},
      {"name": "broadcast3", "type": "u32", "value": 1}
    ],
    "spec_constants": [
      {"id": 0, "type": "u32", "value": "subgroup_size"},
      {"id": 1, "type": "u32", "value": 2},
      {"id": 2, "type": "u32", "value": 1}
    ],
    "workgroup_size": ["subgroup_size", 1, 1],
    "subgroup_size": "subgroup_size",
    "requires": ["subgroup_arithmetic"],
    "grid": ["cdiv(rows, 2)", 1, 1],
    "features": ["storage_buffer16", "storage_buffer8"],
    "shape": {"rows": 4096, "n": 4096},
    "notes": "ggml mul_mat_vec.comp, q4_0 weights, one f32 column, no fusion, subgroup reduction"
  }]
}`

// ggmlMatVecStub declares mul_mat_vec.comp's interface and computes a q4_0 matrix-vector
// product as it does: NUM_ROWS rows per workgroup, BLOCK_SIZE invocations striding over the
// blocks, reduced by subgroupAdd (USE_SUBGROUP_ADD_NO_SHMEM) or through shared memory.
const ggmlMatVecStub = `#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#if USE_SUBGROUP_ADD_NO_SHMEM
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if defined(DATA_A_Q4_0)
#define QUANT_K 32
struct block_q4_0 { float16_t d; uint8_t qs[16]; };
#define A_TYPE block_q4_0
#else
#error "mul_mat_vec.comp needs the DATA_A_<type> define of its weights' type"
#endif
layout (binding = 0) readonly buffer A {A_TYPE data_a[];};
layout (binding = 1) readonly buffer B {B_TYPE data_b[];};
layout (binding = 2) writeonly buffer D {D_TYPE data_d[];};
layout (binding = 3) readonly buffer Fuse0 {D_TYPE data_fuse0[];};
layout (binding = 4) readonly buffer Fuse1 {D_TYPE data_fuse1[];};
layout (push_constant) uniform parameter {
    uint ncols; uint stride_a; uint stride_b; uint stride_d;
    uint batch_stride_a; uint batch_stride_b; uint batch_stride_d;
    uint fusion_flags; uint base_work_group_y;
    uint ne02; uint ne12; uint broadcast2; uint broadcast3;
} p;
layout (constant_id = 0) const uint BLOCK_SIZE = 32;
layout (constant_id = 1) const uint NUM_ROWS = 1;
layout (constant_id = 2) const uint NUM_COLS = 1;
layout (local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
#if !USE_SUBGROUP_ADD_NO_SHMEM
shared FLOAT_TYPE tmpsh[NUM_COLS][NUM_ROWS][BLOCK_SIZE];
#endif
void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint first_row = gl_WorkGroupID.x * NUM_ROWS;
    const uint num_rows = min(NUM_ROWS, p.stride_d - first_row);
    FLOAT_TYPE temp[NUM_COLS][NUM_ROWS];
    for (uint j = 0; j < NUM_COLS; ++j) {
        for (uint n = 0; n < NUM_ROWS; ++n) {
            temp[j][n] = FLOAT_TYPE(0);
            if (n >= num_rows) {
                continue;
            }
            for (uint ib = tid; ib < p.ncols / QUANT_K; ib += BLOCK_SIZE) {
                const uint blk = (first_row + n) * (p.stride_a / QUANT_K) + ib;
                const uint b = j * p.batch_stride_b + ib * QUANT_K;
                const FLOAT_TYPE d = FLOAT_TYPE(data_a[blk].d);
                for (uint i = 0; i < 16; ++i) {
                    const uint q = uint(data_a[blk].qs[i]);
                    temp[j][n] += d * ((FLOAT_TYPE(q & 15u) - 8.0) * data_b[b + i] +
                                       (FLOAT_TYPE(q >> 4) - 8.0) * data_b[b + i + 16]);
                }
            }
        }
    }
#if USE_SUBGROUP_ADD_NO_SHMEM
    for (uint j = 0; j < NUM_COLS; ++j) {
        for (uint n = 0; n < NUM_ROWS; ++n) {
            temp[j][n] = subgroupAdd(temp[j][n]);
        }
    }
#else
    for (uint j = 0; j < NUM_COLS; ++j) {
        for (uint n = 0; n < NUM_ROWS; ++n) {
            tmpsh[j][n][tid] = temp[j][n];
        }
    }
    barrier();
    for (uint s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
        if (tid < s) {
            for (uint j = 0; j < NUM_COLS; ++j) {
                for (uint n = 0; n < NUM_ROWS; ++n) {
                    tmpsh[j][n][tid] += tmpsh[j][n][tid + s];
                }
            }
        }
        barrier();
    }
    for (uint j = 0; j < NUM_COLS; ++j) {
        for (uint n = 0; n < NUM_ROWS; ++n) {
            temp[j][n] = tmpsh[j][n][0];
        }
    }
#endif
    if (tid == 0) {
        for (uint j = 0; j < NUM_COLS; ++j) {
            for (uint n = 0; n < num_rows; ++n) {
                FLOAT_TYPE s = temp[j][n];
                if ((p.fusion_flags & 1u) != 0) { s += data_fuse0[j * p.batch_stride_d + first_row + n]; }
                if ((p.fusion_flags & 4u) != 0) { s *= data_fuse1[j * p.batch_stride_d + first_row + n]; }
                data_d[j * p.batch_stride_d + first_row + n] = D_TYPE(s);
            }
        }
    }
}
`

// ggmlEntry parses one ggml manifest with its stub written next to it.
func ggmlEntry(t *testing.T, manifest, file, stub, op, typ string) *Entry {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(stub), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Parse([]byte(manifest), "ggml.json", dir)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Entry(op, typ, "vulkan")
	if e == nil {
		t.Fatalf("no %s/%s entry", op, typ)
	}
	return e
}

// pushField returns a reader of the launch's push-constant fields by name.
func pushField(t *testing.T, e *Entry, l *Launch) func(string) uint32 {
	return func(name string) uint32 {
		t.Helper()
		off := 0
		for _, f := range e.PushConstants {
			if f.Offset != nil {
				off = *f.Offset
			}
			if f.Name == name {
				return binary.LittleEndian.Uint32(l.Push[off:])
			}
			off += 4
		}
		t.Fatalf("no push-constant field %s", name)
		return 0
	}
}

// runLaunch runs l once on d: binding i gets a buffer holding in[i] (a zeroed one of
// l.Scratch[i] bytes where in[i] is nil), bound through l.Views; it returns binding out's bytes.
func runLaunch(t *testing.T, d *vulkan.Device, l *Launch, in [][]byte, out int) []byte {
	t.Helper()
	p, err := d.Pipeline(l.Module)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]*vulkan.Buffer, len(in))
	for i, data := range in {
		if data == nil {
			data = make([]byte, l.Scratch[i])
		}
		b, err := d.NewBuffer(len(data))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		if err := b.Write(0, data); err != nil {
			t.Fatal(err)
		}
		bufs[i] = b
	}
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Dispatch(p, l.Views(bufs), l.Push, l.Groups); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	res := make([]byte, len(in[out]))
	if err := bufs[out].Read(0, res); err != nil {
		t.Fatal(err)
	}
	return res
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// softMaxRows simulates the stub's row lookup over a grid: how often each row is reached.
func softMaxRows(groups [3]uint32, nrows int) (hits []int, outside int) {
	hits = make([]int, nrows)
	for z := 0; z < int(groups[2]); z++ {
		for y := 0; y < int(groups[1]); y++ {
			for x := 0; x < int(groups[0]); x++ {
				if r := z*262144 + y*512 + x; r < nrows {
					hits[r]++
				} else {
					outside++
				}
			}
		}
	}
	return hits, outside
}

func TestGGMLSoftMaxEntry(t *testing.T) {
	e := ggmlEntry(t, ggmlSoftMax, "soft_max.comp", ggmlSoftMaxStub, "soft_max", "f32")
	if got := strings.Join(e.Operands(), ","); got != "x,,,y" {
		t.Fatalf("operands %s", got)
	}
	// Every row is reached exactly once, whatever rows and heads are; ggml's grid leaves fewer
	// than 512 workgroups idle (fewer than 262144 once it splits over z).
	for _, c := range []struct {
		rows, heads int
		groups      [3]uint32
	}{
		{512, 1, [3]uint32{512, 1, 1}},
		{1, 1, [3]uint32{1, 1, 1}},
		{100, 5, [3]uint32{500, 1, 1}},
		{100, 6, [3]uint32{512, 2, 1}},
		{512, 6, [3]uint32{512, 6, 1}},
		{7, 32, [3]uint32{224, 1, 1}},
		{262144, 1, [3]uint32{512, 512, 1}},
		{70000, 5, [3]uint32{512, 512, 2}},
	} {
		vars := map[string]float64{"rows": float64(c.rows), "n": 4096, "heads": float64(c.heads), "scale": 1, "max_bias": 0}
		if _, err := exec.LookPath("glslc"); err != nil {
			t.Skip("glslc is not installed: the entry is parsed but not instantiated")
		}
		l, err := e.Vulkan(vars)
		if err != nil {
			t.Fatal(err)
		}
		nr := c.rows * c.heads
		hits, outside := softMaxRows(l.Groups, nr)
		for r, h := range hits {
			if h != 1 {
				t.Fatalf("rows=%d heads=%d grid %v: row %d reached %d times", c.rows, c.heads, l.Groups, r, h)
			}
		}
		if idle := 512; l.Groups != c.groups || nr <= 262144 && outside >= idle || outside >= 262144 {
			t.Errorf("rows=%d heads=%d: grid %v (%d idle workgroups), want %v", c.rows, c.heads, l.Groups, outside, c.groups)
		}
		if nr == 600 {
			// The grid the entry used to state, [rows, heads, 1], misses rows of this shape.
			old, _ := softMaxRows([3]uint32{uint32(c.rows), uint32(c.heads), 1}, nr)
			missed := 0
			for _, h := range old {
				if h == 0 {
					missed++
				}
			}
			if missed == 0 {
				t.Errorf("[rows, heads, 1] reaches every row of rows=%d heads=%d", c.rows, c.heads)
			}
		}
	}

	// Rows wider than 1024 values run ggml's wg512 pipeline, without device variables.
	vars := map[string]float64{"rows": 512, "n": 4096, "heads": 6, "scale": 0.125, "max_bias": 8}
	l, err := e.Vulkan(vars)
	if err != nil {
		t.Fatal(err)
	}
	if l.Variant != "wg512" || len(l.Push) != 68 || l.Groups != [3]uint32{512, 6, 1} || l.Module.WorkgroupSize != [3]uint32{512, 1, 1} {
		t.Fatalf("variant %q, push %d bytes, groups %v, workgroup %v", l.Variant, len(l.Push), l.Groups, l.Module.WorkgroupSize)
	}
	// Offsets: scale is the 11th field (byte 40), nrows_x the 16th (byte 60).
	if w := binary.LittleEndian.Uint32(l.Push[40:]); math.Float32frombits(w) != 0.125 {
		t.Fatalf("scale at byte 40: %v", math.Float32frombits(w))
	}
	if binary.LittleEndian.Uint32(l.Push[60:]) != 512*6 {
		t.Fatalf("nrows_x at byte 60: %v", l.Push[60:64])
	}
	// n_head_log2 = 2^floor(log2 6) = 4; m0 = 2^(-8/4), m1 = 2^(-4/4), as ggml-vulkan.cpp derives them.
	field := pushField(t, e, l)
	f := func(name string) float32 { return math.Float32frombits(field(name)) }
	if field("KX") != 4096 || field("ne01") != 512 || field("ne02") != 6 || field("n_head_log2") != 4 ||
		f("m0") != 0.25 || f("m1") != 0.5 || f("max_bias") != 8 || field("has_sinks") != 0 || field("KY") != 0 {
		t.Fatalf("push %v", l.Push)
	}
	if l.Scratch[1] != 4 || l.Scratch[2] != 4 || l.Scratch[0] != 0 || l.Scratch[3] != 0 {
		t.Fatalf("scratch %v", l.Scratch)
	}
	if base, _ := e.SPIRV(); HashWords(base) == l.Hash {
		t.Fatal("BLOCK_SIZE did not change the module")
	}
	// Narrower rows run soft_max_f32, BLOCK_SIZE the device's subgroup size.
	vars["n"] = 1000
	if _, err := e.Vulkan(vars); err == nil || !strings.Contains(err.Error(), `unknown shape variable "subgroup_size" (a device variable`) {
		t.Fatalf("without a device: %v", err)
	}
	for _, sg := range []uint32{8, 32} {
		info := fakeDevice(4)
		info.SubgroupSize, info.MinSubgroupSize, info.MaxSubgroupSize = sg, sg, sg
		l, err := e.VulkanFor(info, vars)
		if err != nil {
			t.Fatal(err)
		}
		if l.Variant != "" || l.Module.WorkgroupSize[0] != sg || l.Module.SubgroupSize != 0 {
			t.Fatalf("subgroup size %d: variant %q, workgroup %v, required subgroup size %d", sg, l.Variant, l.Module.WorkgroupSize, l.Module.SubgroupSize)
		}
	}
}

func TestGGMLSoftMaxOnDevice(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	d := vktest.Device(t)
	e := ggmlEntry(t, ggmlSoftMax, "soft_max.comp", ggmlSoftMaxStub, "soft_max", "f32")
	for _, c := range []struct{ rows, heads, n int }{{100, 6, 64}, {100, 6, 1100}, {3, 1, 8}} {
		t.Run(fmt.Sprintf("rows=%d,heads=%d,n=%d", c.rows, c.heads, c.n), func(t *testing.T) {
			vars := map[string]float64{"rows": float64(c.rows), "n": float64(c.n), "heads": float64(c.heads), "scale": 2, "max_bias": 0}
			l, err := e.VulkanFor(d.Info(), vars)
			if err != nil {
				t.Fatal(err)
			}
			nr := c.rows * c.heads
			x := make([]float32, nr*c.n)
			for i := range x {
				x[i] = float32(i % 7)
			}
			out := f32s(runLaunch(t, d, l, [][]byte{f32bytes(x), nil, nil, make([]byte, 4*len(x))}, 3))
			for i, v := range out {
				if want := x[i]*2 + float32(i/c.n); v != want {
					t.Fatalf("variant %q: y[%d] (row %d) = %v, want %v", l.Variant, i, i/c.n, v, want)
				}
			}
		})
	}
}

// q4_0 block scales used in the device tests: f16 bits of values exact in f32 sums.
var halfs = map[uint16]float32{0x3C00: 1, 0x3800: 0.5, 0x4000: 2}

func q4Table(rows, n int) ([]byte, func(row, i int) float32) {
	const block = 18
	nb := n / 32
	data := make([]byte, rows*nb*block)
	keys := []uint16{0x3C00, 0x3800, 0x4000}
	for r := 0; r < rows; r++ {
		for b := 0; b < nb; b++ {
			o := (r*nb + b) * block
			binary.LittleEndian.PutUint16(data[o:], keys[(r+b)%3])
			for j := 0; j < 16; j++ {
				data[o+2+j] = byte((r*31 + b*7 + j*13) % 256)
			}
		}
	}
	value := func(row, i int) float32 {
		o := (row*nb + i/32) * block
		d := halfs[binary.LittleEndian.Uint16(data[o:])]
		q := data[o+2+i%32%16]
		if i%32 < 16 {
			return d * (float32(q&15) - 8)
		}
		return d * (float32(q>>4) - 8)
	}
	return data, value
}

func TestGGMLGetRowsQ4_0Entry(t *testing.T) {
	e := ggmlEntry(t, ggmlGetRowsQ4_0, "get_rows_quant.comp", ggmlGetRowsStub, "get_rows", "q4_0")
	if got := strings.Join(e.Operands(), ","); got != "table,ids,y" {
		t.Fatalf("operands %s", got)
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the entry is parsed but not instantiated")
	}
	vars := map[string]float64{"rows": 32000, "n": 4096, "k": 100000}
	l, err := e.Vulkan(vars)
	if err != nil {
		t.Fatal(err)
	}
	// 4096 values at 1024 per workgroup (512 invocations of 2); the 100000 ids clamp to 65535
	// workgroups in y.
	if len(l.Push) != 116 || l.Groups != [3]uint32{4, 65535, 1} || l.Module.WorkgroupSize != [3]uint32{512, 1, 1} {
		t.Fatalf("push %d bytes, groups %v, workgroup %v", len(l.Push), l.Groups, l.Module.WorkgroupSize)
	}
	if !l.Module.Features.StorageBuffer16 || !l.Module.Features.StorageBuffer8 || strings.Join(l.Requires, ",") != "storage_buffer16,storage_buffer8" {
		t.Fatalf("features %+v, requires %v", l.Module.Features, l.Requires)
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(l.Push[4*i:]) }
	// Field offsets: nb01 (blocks per row) is word 6, ne10 word 9, nb21 word 22, misalign word 25.
	if word(0) != 4096*32000 || word(6) != 128 || word(7) != 128*32000 || word(9) != 100000 ||
		word(22) != 4096 || word(23) != 4096*100000 || word(25) != 0 || pushField(t, e, l)("param3") != 0 {
		t.Fatalf("push words %v", l.Push)
	}
	if base, _ := e.SPIRV(); HashWords(base) != l.Hash {
		t.Fatal("no spec constant is set: the module should be unchanged")
	}
	// glslc -O removed norepeat (constant_id 0): setting it is refused, saying why.
	in, err := Reflect(mustSPIRV(t, e))
	if err != nil || len(in.SpecConstants) != 0 {
		t.Fatalf("spec constants %v, %v; want none", in, err)
	}
	withSpec := strings.Replace(ggmlGetRowsQ4_0, `"workgroup_size": [512, 1, 1],`, `"spec_constants": [{"id": 0, "type": "bool", "value": 0}], "workgroup_size": [512, 1, 1],`, 1)
	e2 := ggmlEntry(t, withSpec, "get_rows_quant.comp", ggmlGetRowsStub, "get_rows", "q4_0")
	if _, err := e2.Vulkan(vars); err == nil || !strings.Contains(err.Error(), "incumbents[0].spec_constants[0].id: the shader declares no spec constant 0 (it declares none); glslc -O removes") {
		t.Fatalf("stripped spec constant: %v", err)
	}
	// Without its DATA_A_<type> define the shader does not compile.
	noType := strings.Replace(ggmlGetRowsQ4_0, `"DATA_A_Q4_0": "1", `, ``, 1)
	e3 := ggmlEntry(t, noType, "get_rows_quant.comp", ggmlGetRowsStub, "get_rows", "q4_0")
	if _, err := e3.Vulkan(vars); err == nil || !strings.Contains(err.Error(), "DATA_A_<type>") {
		t.Fatalf("no DATA_A_ define: %v", err)
	}
}

func mustSPIRV(t *testing.T, e *Entry) []uint32 {
	t.Helper()
	w, err := e.SPIRV()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestGGMLGetRowsOnDevice(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	d := vktest.Device(t)
	e := ggmlEntry(t, ggmlGetRowsQ4_0, "get_rows_quant.comp", ggmlGetRowsStub, "get_rows", "q4_0")
	const rows, n = 6, 2080 // 65 blocks: three workgroups in x, the last one mostly idle
	ids := []int32{3, 0, 5, 5, 1}
	k := len(ids)
	l, err := e.VulkanFor(d.Info(), map[string]float64{"rows": rows, "n": n, "k": float64(k)})
	if err != nil {
		t.Fatal(err)
	}
	if l.Groups != [3]uint32{3, uint32(k), 1} {
		t.Fatalf("groups %v", l.Groups)
	}
	table, value := q4Table(rows, n)
	idb := make([]byte, 4*k)
	for i, id := range ids {
		binary.LittleEndian.PutUint32(idb[4*i:], uint32(id))
	}
	out := f32s(runLaunch(t, d, l, [][]byte{table, idb, make([]byte, 4*k*n)}, 2))
	for r, id := range ids {
		for i := 0; i < n; i++ {
			if got, want := out[r*n+i], value(int(id), i); got != want {
				t.Fatalf("y[%d][%d] = %v, want table[%d][%d] = %v", r, i, got, id, i, want)
			}
		}
	}
}

func TestGGMLMatVecQ4_0Entry(t *testing.T) {
	e := ggmlEntry(t, ggmlMatVecQ4_0, "mul_mat_vec.comp", ggmlMatVecStub, "matvec", "q4_0")
	if got := strings.Join(e.Operands(), ","); got != "w,x,y,," {
		t.Fatalf("operands %s", got)
	}
	if !e.NeedsDevice() {
		t.Fatal("NeedsDevice: BLOCK_SIZE is the device's subgroup size")
	}
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the entry is parsed but not instantiated")
	}
	vars := map[string]float64{"rows": 4097, "n": 4096}
	if _, err := e.Vulkan(vars); err == nil || !strings.Contains(err.Error(), `unknown shape variable "subgroup_size"`) {
		t.Fatalf("without a device: %v", err)
	}
	for _, sg := range []uint32{8, 16, 32, 64} {
		info := fakeDevice(4)
		info.Name = fmt.Sprintf("sg%d", sg)
		info.SubgroupSize, info.MinSubgroupSize, info.MaxSubgroupSize = sg, 8, 64
		l, err := e.VulkanFor(info, vars)
		if err != nil {
			t.Fatal(err)
		}
		// Two rows per workgroup (NUM_ROWS = 2*rm_stdq), rounded up; one subgroup per workgroup.
		if len(l.Push) != 52 || l.Groups != [3]uint32{2049, 1, 1} || l.Module.WorkgroupSize != [3]uint32{sg, 1, 1} || l.Module.SubgroupSize != sg {
			t.Fatalf("sg %d: push %d bytes, groups %v, workgroup %v, subgroup size %d", sg, len(l.Push), l.Groups, l.Module.WorkgroupSize, l.Module.SubgroupSize)
		}
		word := func(i int) uint32 { return binary.LittleEndian.Uint32(l.Push[4*i:]) }
		if word(0) != 4096 || word(3) != 4097 || word(4) != 4096*4097 || word(6) != 4097 || word(7) != 0 ||
			word(8) != 0 || word(12) != 1 || pushField(t, e, l)("broadcast2") != 1 {
			t.Fatalf("push words %v", l.Push)
		}
		if l.Module.Bindings[0].ElemSize != 18 || l.Scratch[3] != 4 || l.Scratch[4] != 4 {
			t.Fatalf("bindings %+v, scratch %v", l.Module.Bindings, l.Scratch)
		}
		if len(l.Unverified) != 0 || !l.Module.Features.SubgroupBasic || !l.Module.Features.SubgroupArithmetic { // subgroupAdd: a verified feature
			t.Fatalf("requires %v, unverified %v, features %+v", l.Requires, l.Unverified, l.Module.Features)
		}
		// BLOCK_SIZE and NUM_ROWS differ from the defaults: the patched module differs.
		if base, _ := e.SPIRV(); HashWords(base) == l.Hash {
			t.Fatal("spec constants did not change the module")
		}
	}
	// A device that cannot require a subgroup size cannot run ggml's subgroup pipeline.
	fixed := fakeDevice(4)
	fixed.Name, fixed.SubgroupSizeControl = "fixed", false
	if err := e.Check(fixed); err == nil || !strings.Contains(err.Error(), `the device "fixed" cannot require a subgroup size`) {
		t.Fatalf("Check: %v", err)
	}
}

func TestGGMLMatVecOnDevice(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed")
	}
	d := vktest.Device(t)
	e := ggmlEntry(t, ggmlMatVecQ4_0, "mul_mat_vec.comp", ggmlMatVecStub, "matvec", "q4_0")
	if err := e.Check(d.Info()); err != nil {
		t.Skipf("device %q: %v", d.Info().Name, err)
	}
	const rows, n = 37, 1024
	l, err := e.VulkanFor(d.Info(), map[string]float64{"rows": rows, "n": n})
	if err != nil {
		t.Fatal(err)
	}
	if l.Module.SubgroupSize != d.Info().SubgroupSize || l.Module.WorkgroupSize[0] != d.Info().SubgroupSize {
		t.Fatalf("subgroup size %d, workgroup %v on a device of subgroup size %d", l.Module.SubgroupSize, l.Module.WorkgroupSize, d.Info().SubgroupSize)
	}
	w, value := q4Table(rows, n)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%9 - 4)
	}
	out := f32s(runLaunch(t, d, l, [][]byte{w, f32bytes(x), make([]byte, 4*rows), nil, nil}, 2))
	for r := 0; r < rows; r++ {
		want := float32(0)
		for i := 0; i < n; i++ {
			want += value(r, i) * x[i]
		}
		if out[r] != want {
			t.Fatalf("y[%d] = %v, want %v", r, out[r], want)
		}
	}
}

func TestExprHostFunctions(t *testing.T) {
	vars := map[string]float64{"heads": 6, "max_bias": 8}
	for _, c := range []struct {
		src string
		i   int64
		f   float64
	}{
		{"pow(2, floor(log2(heads)))", 4, 4},
		{"floor(7/2)", 3, 3},
		{"pow(2, 10)", 1024, 1024},
		{"log2(1024)", 10, 10},
	} {
		x := mustExpr(t, c.src)
		if i, err := x.EvalInt(vars); err != nil || i != c.i {
			t.Errorf("EvalInt(%s) = %d, %v; want %d", c.src, i, err, c.i)
		}
		if f, err := x.EvalFloat(vars); err != nil || f != c.f {
			t.Errorf("EvalFloat(%s) = %v, %v; want %v", c.src, f, err, c.f)
		}
	}
	if f, err := mustExpr(t, "pow(2, -max_bias / pow(2, floor(log2(heads))))").EvalFloat(vars); err != nil || f != 0.25 {
		t.Errorf("m0 = %v, %v", f, err)
	}
	if _, err := mustExpr(t, "log2(heads)").EvalInt(vars); err == nil || !strings.Contains(err.Error(), "wrap it in floor") {
		t.Errorf("EvalInt(log2(6)): %v, want a not-an-integer error", err)
	}
	for _, bad := range []string{"log2(0)", "pow(0, -1)"} {
		if _, err := mustExpr(t, bad).EvalFloat(vars); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := ParseExpr("floor(1, 2)"); err == nil {
		t.Error("floor with 2 arguments: no error")
	}
}
