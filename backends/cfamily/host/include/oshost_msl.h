// oshost_msl.h: host emulation (level H) of the Metal Shading Language subset onesource emits.
// EMULATION ON THE CPU, not a GPU run: the emitted .metal text compiles as plain C++17 against
// this header (also reachable as <metal_stdlib>), and oshost_runtime.h runs its lanes as fibers.
//
// What it provides: namespace metal with the scalar and vector types (MSL sizes and alignments:
// a 3-vector takes the room of a 4-vector), half (_Float16, round-to-nearest-even), as_type,
// the math and integer functions the printer uses (IEEE, correctly rounded where the operation
// is), threadgroup_barrier/simdgroup_barrier, simd shuffles with lockstep semantics, and the
// atomic functions on atomic_int/atomic_uint (plain read-modify-write: one OS thread). The
// address-space qualifiers device/constant/thread/threadgroup expand to nothing and [[...]]
// attributes are ignored; package host turns a kernel-scope `threadgroup T name[N];`
// declaration into `static T name[N];` (one array per workgroup: workgroups run one after
// another). The harness passes the [[...]] builtins from the kernel's signature.
#ifndef ONESOURCE_HOST_MSL_H
#define ONESOURCE_HOST_MSL_H

#include "oshost_runtime.h"

#include <type_traits>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;

namespace metal {

typedef ::uint uint;
typedef ::ushort ushort;
typedef ::uchar uchar;
typedef _Float16 half;

template <class T, int N>
struct vec;

template <class T>
struct is_vec {
  static constexpr bool value = false;
  static constexpr int lanes = 1;
};
template <class T, int N>
struct is_vec<vec<T, N>> {
  static constexpr bool value = true;
  static constexpr int lanes = N;
};

template <class T, int N>
struct vec_storage;
template <class T>
struct alignas(2 * sizeof(T)) vec_storage<T, 2> {
  T x, y;
};
template <class T>
struct alignas(4 * sizeof(T)) vec_storage<T, 3> {
  T x, y, z;
};
template <class T>
struct alignas(4 * sizeof(T)) vec_storage<T, 4> {
  T x, y, z, w;
};

template <class T, int N>
struct vec : vec_storage<T, N> {
  vec() = default;
  vec(T s) {
    for (int i = 0; i < N; i++) (*this)[i] = s;
  }
  template <class U, class = typename std::enable_if<!std::is_same<U, T>::value>::type>
  explicit vec(const vec<U, N>& o) {
    for (int i = 0; i < N; i++) (*this)[i] = (T)o[i];
  }
  template <class A, class B, class... R>
  vec(A a, B b, R... r) {
    static_assert(is_vec<A>::lanes + is_vec<B>::lanes + (0 + ... + is_vec<R>::lanes) == N,
                  "vector constructor with the wrong number of components");
    int k = 0;
    put(k, a);
    put(k, b);
    (put(k, r), ...);
  }
  T& operator[](int i) { return (&this->x)[i]; }
  const T& operator[](int i) const { return (&this->x)[i]; }

 private:
  template <class U>
  void put(int& k, const U& u) {
    if constexpr (is_vec<U>::value) {
      for (int i = 0; i < is_vec<U>::lanes; i++) (*this)[k++] = (T)u[i];
    } else {
      (*this)[k++] = (T)u;
    }
  }
};

#define OSHOST_VEC_BINOP(op)                                                              \
  template <class T, int N>                                                               \
  inline vec<T, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {                  \
    vec<T, N> r;                                                                          \
    for (int i = 0; i < N; i++) r[i] = (T)(a[i] op b[i]);                                 \
    return r;                                                                             \
  }                                                                                       \
  template <class T, int N, class S, class = typename std::enable_if<!is_vec<S>::value>::type> \
  inline vec<T, N> operator op(const vec<T, N>& a, S b) {                                 \
    return a op vec<T, N>((T)b);                                                          \
  }                                                                                       \
  template <class T, int N, class S, class = typename std::enable_if<!is_vec<S>::value>::type> \
  inline vec<T, N> operator op(S a, const vec<T, N>& b) {                                 \
    return vec<T, N>((T)a) op b;                                                          \
  }                                                                                       \
  template <class T, int N, class S>                                                      \
  inline vec<T, N>& operator op##=(vec<T, N>& a, const S& b) {                            \
    a = a op b;                                                                           \
    return a;                                                                             \
  }
OSHOST_VEC_BINOP(+)
OSHOST_VEC_BINOP(-)
OSHOST_VEC_BINOP(*)
OSHOST_VEC_BINOP(/)
OSHOST_VEC_BINOP(%)
OSHOST_VEC_BINOP(&)
OSHOST_VEC_BINOP(|)
OSHOST_VEC_BINOP(^)
OSHOST_VEC_BINOP(<<)
OSHOST_VEC_BINOP(>>)
#undef OSHOST_VEC_BINOP

#define OSHOST_VEC_CMP(op)                                                                \
  template <class T, int N>                                                               \
  inline vec<bool, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {               \
    vec<bool, N> r;                                                                       \
    for (int i = 0; i < N; i++) r[i] = a[i] op b[i];                                      \
    return r;                                                                             \
  }                                                                                       \
  template <class T, int N, class S, class = typename std::enable_if<!is_vec<S>::value>::type> \
  inline vec<bool, N> operator op(const vec<T, N>& a, S b) {                              \
    return a op vec<T, N>((T)b);                                                          \
  }                                                                                       \
  template <class T, int N, class S, class = typename std::enable_if<!is_vec<S>::value>::type> \
  inline vec<bool, N> operator op(S a, const vec<T, N>& b) {                              \
    return vec<T, N>((T)a) op b;                                                          \
  }
OSHOST_VEC_CMP(==)
OSHOST_VEC_CMP(!=)
OSHOST_VEC_CMP(<)
OSHOST_VEC_CMP(<=)
OSHOST_VEC_CMP(>)
OSHOST_VEC_CMP(>=)
OSHOST_VEC_CMP(&&)
OSHOST_VEC_CMP(||)
#undef OSHOST_VEC_CMP

template <class T, int N>
inline vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = (T)-a[i];
  return r;
}
template <class T, int N>
inline vec<T, N> operator~(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = (T)~a[i];
  return r;
}
template <class T, int N>
inline vec<bool, N> operator!(const vec<T, N>& a) {
  vec<bool, N> r;
  for (int i = 0; i < N; i++) r[i] = !a[i];
  return r;
}

#define OSHOST_VEC_NAMES(T, name) \
  typedef vec<T, 2> name##2;      \
  typedef vec<T, 3> name##3;      \
  typedef vec<T, 4> name##4;
OSHOST_VEC_NAMES(float, float)
OSHOST_VEC_NAMES(half, half)
OSHOST_VEC_NAMES(int, int)
OSHOST_VEC_NAMES(uint, uint)
OSHOST_VEC_NAMES(short, short)
OSHOST_VEC_NAMES(ushort, ushort)
OSHOST_VEC_NAMES(signed char, char)
OSHOST_VEC_NAMES(uchar, uchar)
OSHOST_VEC_NAMES(bool, bool)
#undef OSHOST_VEC_NAMES

// ---- element-wise functions ---------------------------------------------------------------

template <class To, class From>
inline To as_type(const From& f) {
  return ::oshost::bitcast<To>(f);
}

#define OSHOST_MAP1(name, expr)                          \
  template <class T>                                     \
  inline T name(T x) {                                   \
    return (T)(expr);                                    \
  }                                                      \
  template <class T, int N>                              \
  inline vec<T, N> name(const vec<T, N>& v) {            \
    vec<T, N> r;                                         \
    for (int i = 0; i < N; i++) r[i] = name(v[i]);       \
    return r;                                            \
  }
#define OSHOST_MAP2(name, expr)                                        \
  template <class T>                                                   \
  inline T name(T x, T y) {                                            \
    return (T)(expr);                                                  \
  }                                                                    \
  template <class T, int N>                                            \
  inline vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b) {      \
    vec<T, N> r;                                                       \
    for (int i = 0; i < N; i++) r[i] = name(a[i], b[i]);               \
    return r;                                                          \
  }

template <class T>
struct is_float_like {
  static constexpr bool value = std::is_floating_point<T>::value || std::is_same<T, _Float16>::value;
};

template <class T>
inline T oshost_abs(T x) {
  if constexpr (is_float_like<T>::value) return (T)__builtin_fabs((double)x);
  return x < (T)0 ? (T)-x : x;
}
template <class T>
inline T oshost_sqrt(T x) {
  if constexpr (sizeof(T) == 8) return (T)__builtin_sqrt((double)x);
  // f32: sqrtss is correctly rounded; f16: the f32 root of an f16 rounds correctly to f16.
  return (T)__builtin_sqrtf((float)x);
}
template <class T>
inline T oshost_fmin(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  return y < x ? y : x;
}
template <class T>
inline T oshost_fmax(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  return x < y ? y : x;
}

OSHOST_MAP1(sqrt, oshost_sqrt(x))
OSHOST_MAP1(rsqrt, (T)1 / oshost_sqrt(x))
OSHOST_MAP1(abs, oshost_abs(x))
OSHOST_MAP1(fabs, __builtin_fabs((double)x))
OSHOST_MAP1(floor, __builtin_floor((double)x))
OSHOST_MAP1(ceil, __builtin_ceil((double)x))
OSHOST_MAP1(trunc, __builtin_trunc((double)x))
OSHOST_MAP1(rint, __builtin_rint((double)x))
OSHOST_MAP1(round, __builtin_round((double)x))
OSHOST_MAP1(exp, __builtin_expf((float)x))
OSHOST_MAP1(exp2, __builtin_exp2f((float)x))
OSHOST_MAP1(log, __builtin_logf((float)x))
OSHOST_MAP1(log2, __builtin_log2f((float)x))
OSHOST_MAP1(sin, __builtin_sinf((float)x))
OSHOST_MAP1(cos, __builtin_cosf((float)x))
OSHOST_MAP1(tanh, __builtin_tanhf((float)x))
OSHOST_MAP1(popcount, __builtin_popcountll((unsigned long long)x & (~0ull >> (64 - 8 * sizeof(T)))))
OSHOST_MAP2(pow, __builtin_powf((float)x, (float)y))
OSHOST_MAP2(fmin, oshost_fmin(x, y))
OSHOST_MAP2(fmax, oshost_fmax(x, y))
OSHOST_MAP2(min, is_float_like<T>::value ? oshost_fmin(x, y) : (y < x ? y : x))
OSHOST_MAP2(max, is_float_like<T>::value ? oshost_fmax(x, y) : (x < y ? y : x))
#undef OSHOST_MAP1
#undef OSHOST_MAP2

template <class T>
inline T clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}
template <class T>
inline T select(T a, T b, bool c) {
  return c ? b : a;
}
template <class T, int N>
inline vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = c[i] ? b[i] : a[i];
  return r;
}
template <int N>
inline bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; i++)
    if (!v[i]) return false;
  return true;
}
template <int N>
inline bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; i++)
    if (v[i]) return true;
  return false;
}
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline half fma(half a, half b, half c) { return (half)__builtin_fma((double)a, (double)b, (double)c); }
inline uint clz(uint x) { return x == 0 ? 32 : (uint)__builtin_clz(x); }
inline int clz(int x) { return (int)clz((uint)x); }
inline uint ctz(uint x) { return x == 0 ? 32 : (uint)__builtin_ctz(x); }
inline int ctz(int x) { return (int)ctz((uint)x); }
inline uint mulhi(uint a, uint b) { return (uint)(((unsigned long long)a * b) >> 32); }
inline int mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }

namespace precise {
using metal::fabs;
using metal::fmax;
using metal::fmin;
using metal::rsqrt;
using metal::sqrt;
template <class T>
inline T divide(T a, T b) {
  return a / b;
}
}  // namespace precise
namespace fast {
// The emulation evaluates the fast forms with the host's libm (exp, log, ...) and exactly (sqrt,
// divide); it does not model a device's looser accuracy.
using metal::cos;
using metal::exp;
using metal::exp2;
using metal::log;
using metal::log2;
using metal::pow;
using metal::rsqrt;
using metal::sin;
using metal::sqrt;
using metal::tanh;
template <class T>
inline T divide(T a, T b) {
  return a / b;
}
}  // namespace fast

// ---- barriers -----------------------------------------------------------------------------

enum class mem_flags : unsigned int {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 16,
  mem_object_data = 32,
};
inline mem_flags operator|(mem_flags a, mem_flags b) { return (mem_flags)((unsigned int)a | (unsigned int)b); }

inline void threadgroup_barrier(mem_flags) { ::oshost::barrier(); }
inline void simdgroup_barrier(mem_flags) { ::oshost::warpsync(); }

// ---- simd shuffles (lockstep: a subgroup-wide exchange) -----------------------------------

template <class T>
inline T simd_shuffle_xor(T v, ushort mask) {
  return ::oshost::shuffle_xor(v, mask, ::oshost::g.warp, "simd_shuffle_xor");
}
template <class T>
inline T simd_shuffle(T v, ushort lane) {
  return ::oshost::shuffle_idx(v, lane, "simd_shuffle");
}
template <class T>
inline T simd_broadcast(T v, ushort lane) {
  return ::oshost::shuffle_idx(v, lane, "simd_broadcast");
}
template <class T>
inline T simd_shuffle_down(T v, ushort delta) {
  return ::oshost::shuffle_down(v, delta, ::oshost::g.warp, "simd_shuffle_down");
}
template <class T>
inline T simd_shuffle_up(T v, ushort delta) {
  return ::oshost::shuffle_up(v, delta, ::oshost::g.warp, "simd_shuffle_up");
}

// ---- atomics (one OS thread runs every lane: a plain read-modify-write is atomic) ----------

typedef int atomic_int;
typedef uint atomic_uint;
typedef float atomic_float;
template <class T>
using atomic = T;

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

#define OSHOST_ATOMIC_RMW(name, expr)                  \
  template <class T, class U>                          \
  inline T name(T* p, U v, memory_order = memory_order_relaxed) { \
    T o = *p, w = (T)v;                                \
    *p = (T)(expr);                                    \
    return o;                                          \
  }
OSHOST_ATOMIC_RMW(atomic_fetch_add_explicit, o + w)
OSHOST_ATOMIC_RMW(atomic_fetch_sub_explicit, o - w)
OSHOST_ATOMIC_RMW(atomic_fetch_and_explicit, o & w)
OSHOST_ATOMIC_RMW(atomic_fetch_or_explicit, o | w)
OSHOST_ATOMIC_RMW(atomic_fetch_xor_explicit, o ^ w)
OSHOST_ATOMIC_RMW(atomic_fetch_min_explicit, w < o ? w : o)
OSHOST_ATOMIC_RMW(atomic_fetch_max_explicit, w > o ? w : o)
OSHOST_ATOMIC_RMW(atomic_exchange_explicit, w)
#undef OSHOST_ATOMIC_RMW

template <class T>
inline T atomic_load_explicit(T* p, memory_order = memory_order_relaxed) {
  return *p;
}
template <class T, class U>
inline void atomic_store_explicit(T* p, U v, memory_order = memory_order_relaxed) {
  *p = (T)v;
}
template <class T, class U>
inline bool atomic_compare_exchange_weak_explicit(T* p, T* expected, U desired, memory_order = memory_order_relaxed,
                                                  memory_order = memory_order_relaxed) {
  T o = *p;
  if (o == *expected) {
    *p = (T)desired;
    return true;
  }
  *expected = o;
  return false;
}
template <class T, class U>
inline bool atomic_compare_exchange_strong_explicit(T* p, T* expected, U desired,
                                                    memory_order = memory_order_relaxed,
                                                    memory_order = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(p, expected, desired);
}

}  // namespace metal

namespace oshost {
// B3 and B1 carry a builtin argument to whatever type the kernel declares for it.
struct B3 {
  unsigned int x, y, z;
  operator unsigned int() const { return x; }
  operator unsigned short() const { return (unsigned short)x; }
  operator metal::uint2() const { return metal::uint2(x, y); }
  operator metal::uint3() const { return metal::uint3(x, y, z); }
  operator metal::ushort2() const { return metal::ushort2(x, y); }
  operator metal::ushort3() const { return metal::ushort3(x, y, z); }
};
struct B1 {
  unsigned int v;
  operator unsigned int() const { return v; }
  operator unsigned short() const { return (unsigned short)v; }
  operator int() const { return (int)v; }
};
inline B3 msl_gid() {
  u3 v = gid();
  return B3{v.x, v.y, v.z};
}
inline B3 msl_lid() { return B3{cur->tid.x, cur->tid.y, cur->tid.z}; }
inline B3 msl_wgid() { return B3{g.block.x, g.block.y, g.block.z}; }
inline B3 msl_nwg() { return B3{g.grid.x, g.grid.y, g.grid.z}; }
inline B3 msl_tpg() { return B3{g.wgdim.x, g.wgdim.y, g.wgdim.z}; }
inline B3 msl_grid_threads() { return B3{g.grid.x * g.wgdim.x, g.grid.y * g.wgdim.y, g.grid.z * g.wgdim.z}; }
inline B1 msl_lidx() { return B1{cur->idx}; }
inline B1 msl_sgsize() { return B1{g.warp}; }
inline B1 msl_lane() { return B1{cur->sgl}; }
inline B1 msl_sgid() { return B1{cur->sg}; }
inline B1 msl_nsg() { return B1{g.nsg}; }
}  // namespace oshost

// Address spaces and the kernel qualifier are erased (after this header's own code).
#define kernel
#define device
#define constant
#define thread
#define threadgroup
#define threadgroup_imageblock

#endif  // ONESOURCE_HOST_MSL_H
