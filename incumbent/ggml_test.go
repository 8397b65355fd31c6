package incumbent

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The entries below register three more of ggml's Vulkan shaders
// (ggml/src/ggml-vulkan/vulkan-shaders in ggml-org/llama.cpp) as manifest data, the way
// ggmlRMSNorm registers rms_norm.comp. Only layout facts are taken from ggml: binding numbers,
// push-constant field order and types, spec-constant ids, workgroup sizes and the dispatch grid
// that ggml-vulkan.cpp computes (elements divided by the pipeline's wg_denoms, rounded up).
// Each is instantiated against a stub with the same declared interface.

// ggmlSoftMax follows soft_max.comp and vk_op_soft_max_push_constants (ggml-vulkan.cpp):
// bindings X (0, src0), Y (1, the mask), Z (2, the attention sinks), D (3, dst); the push block
// KX, KY, ne00, ne01, ne02, ne12, ne13, nb11, nb12, nb13 (u32), scale, max_bias, m0, m1 (f32),
// n_head_log2, nrows_x, has_sinks (u32); BLOCK_SIZE is constant_id 0 and local_size_x_id 0; the
// pipeline's wg_denoms are {1, 1, 1} over the elements {ne01, ne02, ne03}, one workgroup per
// row. The cell has no mask and no sinks: ggml binds a placeholder buffer there, scratch here,
// and KY, ne12, ne13 and the mask strides are 0. The ALiBi slopes are computed as the host
// does: n_head_log2 = 2^floor(log2(n_head)), m0 = 2^(-max_bias/n_head_log2),
// m1 = 2^(-(max_bias/2)/n_head_log2) (n_head = ne02 = heads). BLOCK_SIZE is 512, ggml's
// wide-row variant (its default variant takes the device's subgroup size).
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
    "spec_constants": [{"id": 0, "type": "u32", "value": 512}],
    "workgroup_size": [512, 1, 1],
    "grid": ["rows", "heads", 1],
    "shape": {"rows": 512, "n": 4096, "heads": 1, "scale": 1, "max_bias": 0},
    "notes": "ggml soft_max.comp without mask or sinks (placeholder bindings as scratch)"
  }]
}`

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
shared FLOAT_TYPE vals[BLOCK_SIZE];
void main() {
    uint row = gl_WorkGroupID.z * 262144 + gl_WorkGroupID.y * 512 + gl_WorkGroupID.x;
    uint i = row * p.KX + gl_LocalInvocationID.x;
    vals[gl_LocalInvocationID.x] = data_a[i] * p.scale;
    barrier();
    FLOAT_TYPE v = vals[0] + p.m0 + p.m1 * p.max_bias;
    if (p.KY > 0 && p.has_sinks != 0 && p.n_head_log2 > 0) { v += data_b[0] + data_c[0]; }
    data_d[i] = D_TYPE(v);
}
`

// ggmlGetRowsQ4_0 follows get_rows_quant.comp, generic_binary_head.glsl and
// vk_op_binary_push_constants (ggml-vulkan.cpp): bindings A (0, the q4_0 table), B (1, the i32
// row ids), D (2, dst f32); the binary push block (ne; ne00..nb03; ne10..nb13; ne20..nb23;
// misalign_offsets; param1, param2 f32; param3 i32) with strides in elements of each tensor's
// type (a q4_0 block of 32 values for src0); norepeat is constant_id 0; local_size is the
// literal 256 (each invocation writes 2 values); the elements {ne00, ne10, ne11*ne12} are
// divided by the pipeline's wg_denoms {512, 1, 1}, and y and z are clamped to
// maxComputeWorkGroupCount (65535, the shader loops over the rest). The shape gathers k rows
// of a rows x n q4_0 table into a k x n f32 matrix; ne = ggml_nelements(src0).
const ggmlGetRowsQ4_0 = `{
  "version": 1,
  "incumbents": [{
    "name": "ggml_get_rows_q4_0_f32",
    "op": "get_rows", "type": "q4_0", "backend": "vulkan",
    "source": {
      "glsl": "get_rows_quant.comp",
      "defines": {"B_TYPE": "int", "D_TYPE": "float", "QUANT_K": "32", "QUANT_R": "2"},
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
    "spec_constants": [{"id": 0, "type": "bool", "value": 0}],
    "workgroup_size": [256, 1, 1],
    "grid": ["cdiv(n, 512)", "min(k, 65535)", "min(1, 65535)"],
    "features": ["storage_buffer16", "storage_buffer8"],
    "shape": {"rows": 32000, "n": 4096, "k": 512},
    "notes": "ggml get_rows_quant.comp, q4_0 table to f32 rows"
  }]
}`

const ggmlGetRowsStub = `#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
struct block_q4_0 { float16_t d; uint8_t qs[16]; };
layout (push_constant) uniform parameter {
    uint ne;
    uint ne00; uint ne01; uint ne02; uint ne03; uint nb00; uint nb01; uint nb02; uint nb03;
    uint ne10; uint ne11; uint ne12; uint ne13; uint nb10; uint nb11; uint nb12; uint nb13;
    uint ne20; uint ne21; uint ne22; uint ne23; uint nb20; uint nb21; uint nb22; uint nb23;
    uint misalign_offsets;
    float param1; float param2; int param3;
} p;
layout (binding = 0) readonly buffer A {block_q4_0 data_a[];};
layout (binding = 1) readonly buffer B {B_TYPE data_b[];};
layout (binding = 2) writeonly buffer D {D_TYPE data_d[];};
layout (constant_id = 0) const bool norepeat = false;
layout (local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
void main() {
    const uint i00 = gl_GlobalInvocationID.x * 2;
    if (i00 >= p.ne00) { return; }
    const uint i10 = gl_GlobalInvocationID.y;
    const uint i01 = uint(data_b[norepeat ? i10 * p.nb10 : (i10 % p.ne10) * p.nb10]);
    const uint ib = i01 * p.nb01 + i00 / QUANT_K;
    const uint iqs = (i00 % QUANT_K) / QUANT_R;
    float d = float(data_a[ib].d);
    uint q = uint(data_a[ib].qs[iqs]);
    data_d[i10 * p.nb21 + i00 - i00 % QUANT_K + iqs] = D_TYPE(d * (float(q & 15u) - 8.0));
    data_d[i10 * p.nb21 + i00 - i00 % QUANT_K + iqs + 16] = D_TYPE(d * (float(q >> 4) - 8.0));
}
`

// ggmlMatVecQ4_0 follows mul_mat_vec.comp, mul_mat_vec_base.glsl / mul_mat_vec_iface.glsl and
// vk_mat_vec_push_constants (ggml-vulkan.cpp): bindings A (0, q4_0 weights), B (1, f32 x),
// D (2, f32 y), Fuse0 and Fuse1 (3, 4: the fused bias/scale operands, unused here, scratch);
// the push block ncols, stride_a, stride_b, stride_d, batch_stride_a, batch_stride_b,
// batch_stride_d, fusion_flags, base_work_group_y, ne02, ne12, broadcast2, broadcast3 (all u32,
// strides in elements; fusion_flags 0 = nothing fused); spec constants BLOCK_SIZE (0, also
// local_size_x_id), NUM_ROWS (1) and NUM_COLS (2), set as ggml's q4_0 f32 pipeline does:
// {subgroup size, 2*rm_stdq, number of columns} with rm_stdq 1 and a 32-wide subgroup; the
// elements {ne01, ne12*ne13, 1} are divided by wg_denoms {2*rm_stdq, 1, 1}. The shape is a
// rows x n weight times an n-vector.
const ggmlMatVecQ4_0 = `{
  "version": 1,
  "incumbents": [{
    "name": "ggml_mul_mat_vec_q4_0_f32_f32",
    "op": "matvec", "type": "q4_0", "backend": "vulkan",
    "source": {
      "glsl": "mul_mat_vec.comp",
      "defines": {"B_TYPE": "float", "D_TYPE": "float", "FLOAT_TYPE": "float"},
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
      {"id": 0, "type": "u32", "value": 32},
      {"id": 1, "type": "u32", "value": 2},
      {"id": 2, "type": "u32", "value": 1}
    ],
    "workgroup_size": [32, 1, 1],
    "grid": ["cdiv(rows, 2)", 1, 1],
    "features": ["storage_buffer16", "storage_buffer8"],
    "shape": {"rows": 4096, "n": 4096},
    "notes": "ggml mul_mat_vec.comp, q4_0 weights, one f32 column, no fusion"
  }]
}`

const ggmlMatVecStub = `#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
struct block_q4_0 { float16_t d; uint8_t qs[16]; };
layout (binding = 0) readonly buffer A {block_q4_0 data_a[];};
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
shared FLOAT_TYPE tmpsh[NUM_COLS][NUM_ROWS][BLOCK_SIZE];
void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint first_row = gl_WorkGroupID.x * NUM_ROWS;
    for (uint n = 0; n < NUM_ROWS; ++n) {
        FLOAT_TYPE acc = 0.0;
        for (uint ib = tid; ib < p.ncols / 32; ib += BLOCK_SIZE) {
            const uint blk = (first_row + n) * (p.stride_a / 32) + ib;
            acc += float(data_a[blk].d) * float(uint(data_a[blk].qs[0]) & 15u) * data_b[ib * 32];
        }
        tmpsh[0][n][tid] = acc;
    }
    barrier();
    if (tid == 0) {
        for (uint n = 0; n < NUM_ROWS; ++n) {
            FLOAT_TYPE s = 0.0;
            for (uint i = 0; i < BLOCK_SIZE; ++i) { s += tmpsh[0][n][i]; }
            if ((p.fusion_flags & 1u) != 0) { s += data_fuse0[first_row + n]; }
            if ((p.fusion_flags & 4u) != 0) { s *= data_fuse1[first_row + n]; }
            data_d[first_row + n] = D_TYPE(s);
        }
    }
}
`

// ggmlCase instantiates one ggml entry against its stub for a shape and returns the launch and
// a reader of push-constant fields by name.
func ggmlCase(t *testing.T, manifest, file, stub, op, typ string, vars map[string]float64) (*Entry, *Launch, func(string) uint32) {
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
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc is not installed: the entry is parsed but not instantiated")
	}
	l, err := e.Vulkan(vars)
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) uint32 {
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
	return e, l, field
}

func TestGGMLSoftMaxEntry(t *testing.T) {
	vars := map[string]float64{"rows": 512, "n": 4096, "heads": 6, "scale": 0.125, "max_bias": 8}
	e, l, field := ggmlCase(t, ggmlSoftMax, "soft_max.comp", ggmlSoftMaxStub, "soft_max", "f32", vars)
	if got := strings.Join(e.Operands(), ","); got != "x,,,y" {
		t.Fatalf("operands %s", got)
	}
	if len(l.Push) != 68 || l.Groups != [3]uint32{512, 6, 1} || l.Module.WorkgroupSize != [3]uint32{512, 1, 1} {
		t.Fatalf("push %d bytes, groups %v, workgroup %v", len(l.Push), l.Groups, l.Module.WorkgroupSize)
	}
	// Offsets: scale is the 11th field (byte 40), nrows_x the 16th (byte 60).
	if w := binary.LittleEndian.Uint32(l.Push[40:]); math.Float32frombits(w) != 0.125 {
		t.Fatalf("scale at byte 40: %v", math.Float32frombits(w))
	}
	if binary.LittleEndian.Uint32(l.Push[60:]) != 512*6 {
		t.Fatalf("nrows_x at byte 60: %v", l.Push[60:64])
	}
	// n_head_log2 = 2^floor(log2 6) = 4; m0 = 2^(-8/4), m1 = 2^(-4/4), as ggml-vulkan.cpp derives them.
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
}

func TestGGMLGetRowsQ4_0Entry(t *testing.T) {
	vars := map[string]float64{"rows": 32000, "n": 4096, "k": 100000}
	e, l, field := ggmlCase(t, ggmlGetRowsQ4_0, "get_rows_quant.comp", ggmlGetRowsStub, "get_rows", "q4_0", vars)
	if got := strings.Join(e.Operands(), ","); got != "table,ids,y" {
		t.Fatalf("operands %s", got)
	}
	// 4096 values at 512 per workgroup; the 100000 ids clamp to 65535 workgroups in y.
	if len(l.Push) != 116 || l.Groups != [3]uint32{8, 65535, 1} || l.Module.WorkgroupSize != [3]uint32{256, 1, 1} {
		t.Fatalf("push %d bytes, groups %v, workgroup %v", len(l.Push), l.Groups, l.Module.WorkgroupSize)
	}
	if !l.Module.Features.StorageBuffer16 || !l.Module.Features.StorageBuffer8 {
		t.Fatalf("features %+v", l.Module.Features)
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(l.Push[4*i:]) }
	// Field offsets: nb01 (blocks per row) is word 6, ne10 word 9, nb21 word 22, misalign word 25.
	if word(0) != 4096*32000 || word(6) != 128 || word(7) != 128*32000 || word(9) != 100000 ||
		word(22) != 4096 || word(23) != 4096*100000 || word(25) != 0 || field("param3") != 0 {
		t.Fatalf("push words %v", l.Push)
	}
	if base, _ := e.SPIRV(); HashWords(base) != l.Hash {
		t.Fatal("norepeat = false is the shader's default: the module should be unchanged")
	}
}

func TestGGMLMatVecQ4_0Entry(t *testing.T) {
	vars := map[string]float64{"rows": 4097, "n": 4096}
	e, l, field := ggmlCase(t, ggmlMatVecQ4_0, "mul_mat_vec.comp", ggmlMatVecStub, "matvec", "q4_0", vars)
	if got := strings.Join(e.Operands(), ","); got != "w,x,y,," {
		t.Fatalf("operands %s", got)
	}
	// Two rows per workgroup (NUM_ROWS = 2*rm_stdq), rounded up.
	if len(l.Push) != 52 || l.Groups != [3]uint32{2049, 1, 1} || l.Module.WorkgroupSize != [3]uint32{32, 1, 1} {
		t.Fatalf("push %d bytes, groups %v, workgroup %v", len(l.Push), l.Groups, l.Module.WorkgroupSize)
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(l.Push[4*i:]) }
	if word(0) != 4096 || word(3) != 4097 || word(4) != 4096*4097 || word(6) != 4097 || word(7) != 0 ||
		word(8) != 0 || word(12) != 1 || field("broadcast2") != 1 {
		t.Fatalf("push words %v", l.Push)
	}
	if l.Module.Bindings[0].ElemSize != 18 || l.Scratch[3] != 4 || l.Scratch[4] != 4 {
		t.Fatalf("bindings %+v, scratch %v", l.Module.Bindings, l.Scratch)
	}
	// NUM_ROWS = 2 differs from the default 1: the patched module differs from the compiled one.
	if base, _ := e.SPIRV(); HashWords(base) == l.Hash {
		t.Fatal("spec constants did not change the module")
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
