// oshost_cuda.h: host emulation (level H) of the CUDA and HIP device dialects onesource emits.
// EMULATION ON THE CPU, not a GPU run: the emitted .cu/.hip text compiles as plain C++17 against
// this header (no CUDA or ROCm headers), and oshost_runtime.h runs its lanes as fibers.
//
// What it provides: the function qualifiers (erased), __shared__ (one static per workgroup:
// workgroups run one after another), threadIdx/blockIdx/blockDim/gridDim/warpSize, barriers,
// warp shuffles with lockstep semantics, atomics (plain read-modify-write: one OS thread),
// __dp4a and the AMD sdot4/sudot4/udot4 builtins (wrapping; clamp honoured when asked),
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
