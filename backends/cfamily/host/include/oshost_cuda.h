// oshost_cuda.h: host emulation (level H) of the CUDA and HIP device dialects onesource emits.
// EMULATION ON THE CPU, not a GPU run: the emitted .cu/.hip text compiles as plain C++17 against
// this header (no CUDA or ROCm headers), and oshost_runtime.h runs its lanes as fibers.
//
// What it provides: the function qualifiers (erased), __shared__ (one static per workgroup:
// workgroups run one after another), threadIdx/blockIdx/blockDim/gridDim/warpSize, barriers,
// warp shuffles with lockstep semantics, atomics (plain read-modify-write: one OS thread),
// __dp4a and the AMD sdot4/sudot4/udot4 builtins (wrapping; clamp honoured when asked), the
// matrix instructions of the islands (PTX mma.sync m16n8k32 s8, AMD MFMA i32_16x16x32_i8 and
// WMMA i32_16x16x16_iu8 wave32, with their documented lane layouts),
// the IEEE round-to-nearest intrinsics (__fadd_rn, ...), bit casts and the usual math names.
#ifndef ONESOURCE_HOST_CUDA_H
#define ONESOURCE_HOST_CUDA_H

#include "oshost_runtime.h"

typedef oshost::u3 uint3;
typedef oshost::u3 dim3;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__ static
#define __managed__

#define threadIdx (static_cast<const ::oshost::u3&>(::oshost::cur->tid))
#define blockIdx (static_cast<const ::oshost::u3&>(::oshost::g.block))
#define blockDim (static_cast<const ::oshost::u3&>(::oshost::g.wgdim))
#define gridDim (static_cast<const ::oshost::u3&>(::oshost::g.grid))
#define warpSize ((int)::oshost::g.warp)

// ---- barriers and fences ------------------------------------------------------------------

static inline void __syncthreads(void) { ::oshost::barrier(); }
static inline void __syncwarp(unsigned int = 0xffffffffu) { ::oshost::warpsync(); }
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}
static inline void __threadfence_system(void) {}

// ---- shuffles (lockstep: a subgroup-wide exchange) ----------------------------------------

template <class T>
static inline T __shfl_xor_sync(unsigned int, T v, int laneMask, int width = warpSize) {
  return ::oshost::shuffle_xor(v, (unsigned int)laneMask, (unsigned int)width, "__shfl_xor_sync");
}
template <class T>
static inline T __shfl_sync(unsigned int, T v, int src, int width = warpSize) {
  unsigned int seg = ::oshost::cur->sgl & ~((unsigned int)width - 1);
  return ::oshost::shuffle_idx(v, seg + ((unsigned int)src & ((unsigned int)width - 1)), "__shfl_sync");
}
template <class T>
static inline T __shfl_down_sync(unsigned int, T v, unsigned int delta, int width = warpSize) {
  return ::oshost::shuffle_down(v, delta, (unsigned int)width, "__shfl_down_sync");
}
template <class T>
static inline T __shfl_up_sync(unsigned int, T v, unsigned int delta, int width = warpSize) {
  return ::oshost::shuffle_up(v, delta, (unsigned int)width, "__shfl_up_sync");
}
// HIP spellings.
template <class T>
static inline T __shfl_xor(T v, int laneMask, int width = warpSize) {
  return ::oshost::shuffle_xor(v, (unsigned int)laneMask, (unsigned int)width, "__shfl_xor");
}
template <class T>
static inline T __shfl(T v, int src, int width = warpSize) {
  unsigned int seg = ::oshost::cur->sgl & ~((unsigned int)width - 1);
  return ::oshost::shuffle_idx(v, seg + ((unsigned int)src & ((unsigned int)width - 1)), "__shfl");
}
template <class T>
static inline T __shfl_down(T v, unsigned int delta, int width = warpSize) {
  return ::oshost::shuffle_down(v, delta, (unsigned int)width, "__shfl_down");
}
template <class T>
static inline T __shfl_up(T v, unsigned int delta, int width = warpSize) {
  return ::oshost::shuffle_up(v, delta, (unsigned int)width, "__shfl_up");
}
static inline unsigned int __lane_id(void) { return ::oshost::cur->sgl; }

// ---- atomics: one OS thread runs every lane, so a plain read-modify-write is atomic --------

template <class T, class U>
static inline T atomicAdd(T* p, U v) {
  T o = *p;
  *p = (T)(o + (T)v);
  return o;
}
template <class T, class U>
static inline T atomicSub(T* p, U v) {
  T o = *p;
  *p = (T)(o - (T)v);
  return o;
}
template <class T, class U>
static inline T atomicMin(T* p, U v) {
  T o = *p, w = (T)v;
  *p = w < o ? w : o;
  return o;
}
template <class T, class U>
static inline T atomicMax(T* p, U v) {
  T o = *p, w = (T)v;
  *p = w > o ? w : o;
  return o;
}
template <class T, class U>
static inline T atomicExch(T* p, U v) {
  T o = *p;
  *p = (T)v;
  return o;
}
template <class T, class U, class V>
static inline T atomicCAS(T* p, U cmp, V v) {
  T o = *p;
  if (o == (T)cmp) *p = (T)v;
  return o;
}
template <class T, class U>
static inline T atomicAnd(T* p, U v) {
  T o = *p;
  *p = (T)(o & (T)v);
  return o;
}
template <class T, class U>
static inline T atomicOr(T* p, U v) {
  T o = *p;
  *p = (T)(o | (T)v);
  return o;
}
template <class T, class U>
static inline T atomicXor(T* p, U v) {
  T o = *p;
  *p = (T)(o ^ (T)v);
  return o;
}

// ---- packed int8 dot products -------------------------------------------------------------

// CUDA: the int form treats bytes as signed, the unsigned form as unsigned; both wrap.
static inline int __dp4a(int a, int b, int c) {
  return (int)::oshost::dot4((uint32_t)a, true, (uint32_t)b, true, (uint32_t)c);
}
static inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
  return ::oshost::dot4(a, false, b, false, c);
}

namespace oshost {
inline int amd_sdot4(int a, int b, int c, bool clamp) {
  return clamp ? dot4_sat((uint32_t)a, true, (uint32_t)b, true, c)
               : (int)dot4((uint32_t)a, true, (uint32_t)b, true, (uint32_t)c);
}
inline int amd_sudot4(bool as, int a, bool bs, int b, int c, bool clamp) {
  return clamp ? dot4_sat((uint32_t)a, as, (uint32_t)b, bs, c)
               : (int)dot4((uint32_t)a, as, (uint32_t)b, bs, (uint32_t)c);
}
inline unsigned int amd_udot4(unsigned int a, unsigned int b, unsigned int c, bool clamp) {
  if (!clamp) return dot4(a, false, b, false, c);
  uint64_t s = (uint64_t)dot4_wide(a, false, b, false) + c;
  return s > 0xffffffffull ? 0xffffffffu : (unsigned int)s;
}
}  // namespace oshost

#define __builtin_amdgcn_sdot4(a, b, c, clamp) ::oshost::amd_sdot4((a), (b), (c), (clamp))
#define __builtin_amdgcn_sudot4(as, a, bs, b, c, clamp) ::oshost::amd_sudot4((as), (a), (bs), (b), (c), (clamp))
#define __builtin_amdgcn_udot4(a, b, c, clamp) ::oshost::amd_udot4((a), (b), (c), (clamp))

// ---- matrix instructions of the intrinsic islands ----------------------------------------
// Each is emulated from its ISA's documented semantics, fragment layout included: every lane
// offers its operand registers at one subgroup exchange (gather), the emulation rebuilds the
// matrices from the layout the vendor documents (written here in the documentation's own terms,
// element by element, not as the emitted code's address arithmetic), multiplies exactly and
// hands each lane the result elements the layout gives it. The whole subgroup must take part
// with the instruction's own subgroup size; anything else is an emulation error.

typedef int oshost_v4i __attribute__((vector_size(16)));
typedef int oshost_v8i __attribute__((vector_size(32)));

namespace oshost {

inline int32_t elem8(uint32_t w, unsigned int i, bool sgn) {
  uint32_t b = (w >> (8 * i)) & 0xffu;
  return sgn ? (int32_t)(int8_t)b : (int32_t)b;
}
inline int32_t wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

inline void need_full(unsigned int lanes, const char* what) {
  if (g.warp != lanes || sg_size(cur->sg) != lanes)
    fail("%s needs a full subgroup of %u lanes: this run has subgroups of %u (subgroup %u holds %u lanes)", what,
         lanes, g.warp, cur->sg, sg_size(cur->sg));
}

// PTX mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 d, a, b, c (sm_80 and newer), from the PTX
// ISA's "Matrix Fragments for mma.m16n8k32" with .s8 multiplicands: with groupID = %laneid >> 2
// and threadID_in_group = %laneid % 4, a lane holds A elements a0..a15 (bytes of its four a
// registers, low to high), element ai at
//   row = groupID for 0 <= i < 4 or 8 <= i < 12, groupID + 8 otherwise,
//   col = threadID_in_group * 4 + (i & 3), plus 16 for i >= 8;
// B elements b0..b7 (bytes of its two b registers) at
//   row = threadID_in_group * 4 + (i & 3), plus 16 for i >= 4, col = groupID;
// and C/D elements c0..c3 at
//   row = groupID for i < 2, groupID + 8 otherwise, col = threadID_in_group * 2 + (i & 1).
// D = A (16x32) * B (32x8) + C in wrapping int32 arithmetic.
inline void ptx_mma_m16n8k32_s8(int* d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1,
                                int c0, int c1, int c2, int c3) {
  const char* what = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32";
  need_full(32, what);
  struct AB {
    uint32_t a[4], b[2];
  };
  struct C {
    int32_t c[4];
  };
  AB mine = {{a0, a1, a2, a3}, {b0, b1}};
  C cm = {{c0, c1, c2, c3}};
  AB ab[32];
  C cc[32];
  gather(mine, ab, what);
  gather(cm, cc, what);
  int32_t A[16][32], B[32][8], Cm[16][8];
  for (unsigned int l = 0; l < 32; l++) {
    unsigned int gid = l >> 2, tig = l % 4;
    for (unsigned int i = 0; i < 16; i++) {
      unsigned int row = (i < 4 || (i >= 8 && i < 12)) ? gid : gid + 8;
      unsigned int col = tig * 4 + (i & 3) + (i >= 8 ? 16 : 0);
      A[row][col] = elem8(ab[l].a[i / 4], i % 4, true);
    }
    for (unsigned int i = 0; i < 8; i++) {
      unsigned int row = tig * 4 + (i & 3) + (i >= 4 ? 16 : 0);
      B[row][gid] = elem8(ab[l].b[i / 4], i % 4, true);
    }
    for (unsigned int i = 0; i < 4; i++) Cm[i < 2 ? gid : gid + 8][tig * 2 + (i & 1)] = cc[l].c[i];
  }
  unsigned int gid = cur->sgl >> 2, tig = cur->sgl % 4;
  for (unsigned int i = 0; i < 4; i++) {
    unsigned int row = i < 2 ? gid : gid + 8, col = tig * 2 + (i & 1);
    int32_t s = Cm[row][col];
    for (unsigned int k = 0; k < 32; k++) s = wrap_add(s, A[row][k] * B[k][col]);
    d[i] = s;
  }
}

// AMD v_mfma_i32_16x16x32_i8 (CDNA3: gfx940, gfx941, gfx942), one block, on a wave64, from the
// register layout of AMD's matrix instruction calculator: with K_L = 32 / (64 / 16) = 8 values
// per lane, A[i][k] is byte k % 8 of the 64-bit a operand of lane i + 16 * (k / 8); B[k][j] is
// byte k % 8 of the b operand of lane j + 16 * (k / 8); C[i][j] and D[i][j] are element i % 4 of
// the c vector of lane j + 16 * (i / 4). D = A (16x32) * B (32x16) + C, wrapping; cbsz, abid and
// blgp (broadcast controls) are not emulated and must be 0.
inline oshost_v4i amd_mfma_i32_16x16x32_i8(long a, long b, oshost_v4i c, int cbsz, int abid, int blgp) {
  const char* what = "__builtin_amdgcn_mfma_i32_16x16x32_i8";
  need_full(64, what);
  if (cbsz != 0 || abid != 0 || blgp != 0) fail("%s: cbsz, abid and blgp other than 0 are not emulated", what);
  struct Op {
    uint64_t a, b;
    int32_t c[4];
  };
  Op mine = {(uint64_t)a, (uint64_t)b, {c[0], c[1], c[2], c[3]}};
  Op all[64];
  gather(mine, all, what);
  auto A = [&](unsigned int i, unsigned int k) { return (int32_t)(int8_t)(all[i + 16 * (k / 8)].a >> (8 * (k % 8))); };
  auto B = [&](unsigned int k, unsigned int j) { return (int32_t)(int8_t)(all[j + 16 * (k / 8)].b >> (8 * (k % 8))); };
  unsigned int l = cur->sgl;
  oshost_v4i d;
  for (unsigned int r = 0; r < 4; r++) {
    unsigned int i = 4 * (l / 16) + r, j = l % 16;  // D[i][j] is element i % 4 = r of lane j + 16 * (i / 4) = l
    int32_t s = all[j + 16 * (i / 4)].c[i % 4];
    for (unsigned int k = 0; k < 32; k++) s = wrap_add(s, A(i, k) * B(k, j));
    d[r] = s;
  }
  return d;
}

// AMD v_wmma_i32_16x16x16_iu8 on a wave32 (RDNA3: gfx1100-gfx1103), from AMD's documentation of
// WMMA on RDNA 3: lane l (l < 16) holds row l of A and column l of B, 16 8-bit values each, in
// the bytes of its four-register vector (value k is byte k % 4 of register k / 4), signed when
// sgn_a (sgn_b) is set; lanes 16-31 must hold the same A and B as lanes 0-15 (the emulation
// checks); C[m][n] and D[m][n] are element m / 2 of the eight-register vector of lane
// n + 16 * (m % 2). D = A (16x16) * B (16x16) + C, wrapping, or saturating when clamp is set.
inline oshost_v8i amd_wmma_i32_16x16x16_iu8_w32(bool sgn_a, oshost_v4i a, bool sgn_b, oshost_v4i b, oshost_v8i c,
                                                bool clamp) {
  const char* what = "__builtin_amdgcn_wmma_i32_16x16x16_iu8_w32";
  need_full(32, what);
  struct AB {
    uint32_t a[4], b[4];
  };
  struct C {
    int32_t c[8];
  };
  AB mine = {{(uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2], (uint32_t)a[3]},
             {(uint32_t)b[0], (uint32_t)b[1], (uint32_t)b[2], (uint32_t)b[3]}};
  C cm;
  for (int v = 0; v < 8; v++) cm.c[v] = c[v];
  AB ab[32];
  C cc[32];
  gather(mine, ab, what);
  gather(cm, cc, what);
  for (unsigned int l = 0; l < 16; l++)
    if (memcmp(&ab[l], &ab[l + 16], sizeof(AB)) != 0)
      fail("%s: lane %u holds other A or B values than lane %u (lanes 16-31 must repeat lanes 0-15)", what, l + 16, l);
  auto A = [&](unsigned int m, unsigned int k) { return elem8(ab[m].a[k / 4], k % 4, sgn_a); };
  auto B = [&](unsigned int k, unsigned int n) { return elem8(ab[n].b[k / 4], k % 4, sgn_b); };
  unsigned int l = cur->sgl;
  oshost_v8i d;
  for (unsigned int v = 0; v < 8; v++) {
    unsigned int m = 2 * v + l / 16, n = l % 16;  // D[m][n] is element m / 2 = v of lane n + 16 * (m % 2) = l
    int64_t s = cc[n + 16 * (m % 2)].c[m / 2];
    for (unsigned int k = 0; k < 16; k++) s += (int64_t)A(m, k) * B(k, n);
    if (clamp) s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
    d[v] = (int32_t)(uint32_t)(uint64_t)s;
  }
  return d;
}

}  // namespace oshost

// The emitted CUDA text calls os_ptx_mma_m16n8k32_s8 for the PTX instruction (its own definition,
// inline PTX, is compiled only for a device: the emitted prelude skips it under ONESOURCE_HOST).
static inline void os_ptx_mma_m16n8k32_s8(int* d, unsigned int a0, unsigned int a1, unsigned int a2, unsigned int a3,
                                          unsigned int b0, unsigned int b1, int c0, int c1, int c2, int c3) {
  ::oshost::ptx_mma_m16n8k32_s8(d, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3);
}
#define __builtin_amdgcn_mfma_i32_16x16x32_i8(a, b, c, cbsz, abid, blgp) \
  ::oshost::amd_mfma_i32_16x16x32_i8((a), (b), (c), (cbsz), (abid), (blgp))
#define __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(sa, a, sb, b, c, clamp) \
  ::oshost::amd_wmma_i32_16x16x16_iu8_w32((sa), (a), (sb), (b), (c), (clamp))

// ---- IEEE round-to-nearest-even arithmetic ------------------------------------------------
// Compiled with -ffp-contract=off -fno-fast-math; x86-64 SSE arithmetic is IEEE binary32.
// When the emitted prelude defines these names itself (for clang without CUDA headers), it
// tests ONESOURCE_HOST (set by oshost_runtime.h) and leaves them to this header.

#ifndef OSHOST_NO_RN_INTRINSICS
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return __builtin_sqrtf(a); }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return __builtin_sqrt(a); }
#endif

// ---- fast (inexact) math intrinsics -------------------------------------------------------
// The emulation evaluates them with the host's libm; it does not model a device's accuracy.

static inline float __expf(float x) { return expf(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __log2f(float x) { return log2f(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __powf(float x, float y) { return powf(x, y); }
static inline float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }

// ---- bit casts and conversions ------------------------------------------------------------

static inline int __float_as_int(float x) { return ::oshost::bitcast<int>(x); }
static inline unsigned int __float_as_uint(float x) { return ::oshost::bitcast<unsigned int>(x); }
static inline float __int_as_float(int x) { return ::oshost::bitcast<float>(x); }
static inline float __uint_as_float(unsigned int x) { return ::oshost::bitcast<float>(x); }
static inline long long __double_as_longlong(double x) { return ::oshost::bitcast<long long>(x); }
static inline double __longlong_as_double(long long x) { return ::oshost::bitcast<double>(x); }
typedef _Float16 __half;
static inline __half __float2half_rn(float x) { return (_Float16)x; }
static inline __half __float2half(float x) { return (_Float16)x; }
static inline float __half2float(__half x) { return (float)x; }
static inline unsigned short __half_as_ushort(__half x) { return ::oshost::bitcast<unsigned short>(x); }
static inline __half __ushort_as_half(unsigned short x) { return ::oshost::bitcast<__half>(x); }
static inline short __half_as_short(__half x) { return ::oshost::bitcast<short>(x); }
static inline __half __short_as_half(short x) { return ::oshost::bitcast<__half>(x); }

// ---- integer intrinsics and min/max -------------------------------------------------------

static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned int __brev(unsigned int x) {
  unsigned int r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
static inline int __mul24(int a, int b) { return (int)((unsigned int)(a << 8 >> 8) * (unsigned int)(b << 8 >> 8)); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return (unsigned int)(((unsigned long long)a * b) >> 32);
}
template <class T>
static inline T __ldg(const T* p) {
  return *p;
}

static inline int min(int a, int b) { return a < b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
static inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
static inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }

#endif  // ONESOURCE_HOST_CUDA_H
