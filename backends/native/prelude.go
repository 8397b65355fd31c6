package native

// prelude is the C text every emitted kernel starts with: the lane vector types (GCC and clang
// vector extensions, OS_VL lanes of 32 bits, 64 for f64), the helpers the numeric contract needs
// (the cfamily printer's os_* rules, lane by lane), the memory accesses with their bounds checks
// and the dispatch loop. It is C11 and compiles without warnings under -Wall -Wextra with gcc
// and clang. Helpers the kernel does not call cost nothing (static inline).
const prelude = `#include <stdint.h>
#include <string.h>
#include <math.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define OS_VL 16
/* Every helper: inlined where used, no warning where not. */
#define OS_INLINE static inline __attribute__((unused))
typedef uint32_t os_u32v __attribute__((vector_size(64)));
typedef int32_t os_i32v __attribute__((vector_size(64)));
typedef float os_f32v __attribute__((vector_size(64)));
typedef double os_f64v __attribute__((vector_size(128)));
typedef uint64_t os_u64v __attribute__((vector_size(128)));
typedef int64_t os_i64v __attribute__((vector_size(128)));
typedef os_i32v os_m; /* a mask: -1 in a lane that runs, 0 in one that does not */

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define OS_HAS_SHUFFLEVECTOR 1
#endif
#endif
#ifdef OS_HAS_SHUFFLEVECTOR
#define OS_SHUF32(v, ...) __builtin_shufflevector((v), (v), __VA_ARGS__)
#define OS_SHUF64(v, ...) __builtin_shufflevector((v), (v), __VA_ARGS__)
#else
#define OS_SHUF32(v, ...) __builtin_shuffle((v), (os_i32v){__VA_ARGS__})
#define OS_SHUF64(v, ...) __builtin_shuffle((v), (os_i64v){__VA_ARGS__})
#endif

/* One element range a kernel reads and writes: a buffer binding or a shared array. */
typedef struct { uint8_t* p; uint64_t n; } os_buf; /* n < 2^31 */

/* The worker running a workgroup: the dispatch's words, its report and the workgroup. */
typedef struct {
	const uint64_t* a;
	uint64_t* rep;
	uint32_t wg[3];
	uint32_t lane0;
	uint64_t g;
} os_exec;

OS_INLINE float os_f32(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
OS_INLINE uint32_t os_bits32(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
OS_INLINE double os_f64(uint64_t b) { double f; memcpy(&f, &b, 8); return f; }
OS_INLINE uint64_t os_bits64(double f) { uint64_t b; memcpy(&b, &f, 8); return b; }

OS_INLINE os_u32v os_iota(void) { return (os_u32v){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; }
/* Splats: a vector-scalar operation broadcasts the scalar; integers added to zero, so floats
 * keep every bit (a NaN's payload, the sign of zero). */
OS_INLINE os_u32v os_splat_u32(uint32_t x) { return (os_u32v){0} + x; }
OS_INLINE os_i32v os_splat_i32(int32_t x) { return (os_i32v){0} + x; }
OS_INLINE os_f32v os_splat_f32(float x) { return (os_f32v)os_splat_u32(os_bits32(x)); }
OS_INLINE os_f64v os_splat_f64(double x) { return (os_f64v)((os_u64v){0} + os_bits64(x)); }
OS_INLINE os_m os_mask(int b) { return os_splat_i32(b ? -1 : 0); }
/* bits: lane l's mask bit at bit l. */
OS_INLINE uint32_t os_bits(os_m m) {
#if defined(__AVX512F__)
	return (uint32_t)_mm512_test_epi32_mask((__m512i)m, (__m512i)m);
#else
	uint32_t r = 0;
	for (int l = 0; l < OS_VL; l++) r |= (uint32_t)(m[l] & 1) << l;
	return r;
#endif
}
OS_INLINE int os_any(os_m m) { return os_bits(m) != 0; }
OS_INLINE int os_all(os_m m) { return os_bits(m) == 0xffffu; }
OS_INLINE int os_first(os_m m) {
	uint32_t b = os_bits(m);
	return b ? __builtin_ctz(b) : 0;
}
OS_INLINE os_u32v os_sel_u32(os_m m, os_u32v a, os_u32v b) { return (a & (os_u32v)m) | (b & ~(os_u32v)m); }
OS_INLINE os_i32v os_sel_i32(os_m m, os_i32v a, os_i32v b) { return (a & m) | (b & ~m); }
OS_INLINE os_f32v os_sel_f32(os_m m, os_f32v a, os_f32v b) { return (os_f32v)os_sel_u32(m, (os_u32v)a, (os_u32v)b); }
OS_INLINE os_i64v os_wide_mask(os_m m) { return __builtin_convertvector(m, os_i64v); }
OS_INLINE os_f64v os_sel_f64(os_m m, os_f64v a, os_f64v b) {
	os_u64v w = (os_u64v)os_wide_mask(m);
	return (os_f64v)(((os_u64v)a & w) | ((os_u64v)b & ~w));
}
OS_INLINE os_m os_narrow_mask(os_i64v m) { return __builtin_convertvector(m, os_i32v); }

/* Integer division and remainder never trap: x/0 = -1 (0xffffffff), x%0 = x, INT_MIN/-1 =
 * INT_MIN, INT_MIN%-1 = 0 (the cfamily printer's os_div_i32 etc.). */
OS_INLINE int32_t os_div_i32(int32_t a, int32_t b) { return b == 0 ? -1 : b == -1 ? (int32_t)(0u - (uint32_t)a) : a / b; }
OS_INLINE int32_t os_rem_i32(int32_t a, int32_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
OS_INLINE uint32_t os_div_u32(uint32_t a, uint32_t b) { return b == 0u ? 0xffffffffu : a / b; }
OS_INLINE uint32_t os_rem_u32(uint32_t a, uint32_t b) { return b == 0u ? a : a % b; }
OS_INLINE os_i32v os_div_i32v(os_i32v a, os_i32v b) { os_i32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = os_div_i32(a[l], b[l]); return r; }
OS_INLINE os_i32v os_rem_i32v(os_i32v a, os_i32v b) { os_i32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = os_rem_i32(a[l], b[l]); return r; }
OS_INLINE os_u32v os_div_u32v(os_u32v a, os_u32v b) { os_u32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = os_div_u32(a[l], b[l]); return r; }
OS_INLINE os_u32v os_rem_u32v(os_u32v a, os_u32v b) { os_u32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = os_rem_u32(a[l], b[l]); return r; }

/* Float to integer conversions truncate toward zero; NaN and values out of range give
 * 0x80000000 (os_f32_to_i32 and its twins). */
OS_INLINE int32_t os_f2i(float x) { return x >= -2147483648.0f && x < 2147483648.0f ? (int32_t)x : (int32_t)0x80000000u; }
OS_INLINE uint32_t os_f2u(float x) { return x > -1.0f && x < 4294967296.0f ? (uint32_t)x : 0x80000000u; }
OS_INLINE int32_t os_d2i(double x) { return x > -2147483649.0 && x < 2147483648.0 ? (int32_t)x : (int32_t)0x80000000u; }
OS_INLINE uint32_t os_d2u(double x) { return x > -1.0 && x < 4294967296.0 ? (uint32_t)x : 0x80000000u; }
OS_INLINE os_i32v os_f2i_v(os_f32v x) {
	os_m ok = (x >= -2147483648.0f) & (x < 2147483648.0f);
	os_i32v r = __builtin_convertvector(os_sel_f32(ok, x, os_splat_f32(0.0f)), os_i32v);
	return os_sel_i32(ok, r, os_splat_i32((int32_t)0x80000000u));
}
OS_INLINE os_u32v os_f2u_v(os_f32v x) {
	os_m ok = (x > -1.0f) & (x < 4294967296.0f);
	os_u32v r = __builtin_convertvector(os_sel_f32(ok, x, os_splat_f32(0.0f)), os_u32v);
	return os_sel_u32(ok, r, os_splat_u32(0x80000000u));
}
OS_INLINE os_i32v os_d2i_v(os_f64v x) {
	os_m ok = os_narrow_mask((x > -2147483649.0) & (x < 2147483648.0));
	os_i32v r = __builtin_convertvector(os_sel_f64(ok, x, os_splat_f64(0.0)), os_i32v);
	return os_sel_i32(ok, r, os_splat_i32((int32_t)0x80000000u));
}
OS_INLINE os_u32v os_d2u_v(os_f64v x) {
	os_m ok = os_narrow_mask((x > -1.0) & (x < 4294967296.0));
	os_u32v r = __builtin_convertvector(os_sel_f64(ok, x, os_splat_f64(0.0)), os_u32v);
	return os_sel_u32(ok, r, os_splat_u32(0x80000000u));
}

/* f16 values are their bits in the low half of a 32-bit lane. f16 -> f32 is exact (a NaN made
 * quiet, keeping its payload); f32 -> f16 and f64 -> f16 round to nearest even in one rounding
 * (subnormals rounded, overflow to infinity, a NaN to 0x7e00 with its sign). */
OS_INLINE float os_h2f(uint32_t x) {
	uint32_t sign = (x & 0x8000u) << 16, e = (x >> 10) & 31u, m = x & 0x3ffu;
	if (e == 31u) return os_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
	if (e == 0u) return os_f32(sign | os_bits32((float)m * 0x1p-24f));
	return os_f32(sign | ((e + 112u) << 23) | (m << 13));
}
OS_INLINE os_f32v os_h2f_v(os_u32v x) {
	os_u32v sign = (x & 0x8000u) << 16, e = (x >> 10) & 31u, m = x & 0x3ffu;
	os_u32v norm = sign | ((e + 112u) << 23) | (m << 13);
	os_u32v inf = sign | 0x7f800000u | (m << 13) | os_sel_u32((os_m)(m != 0u), os_splat_u32(0x400000u), os_splat_u32(0u));
	os_u32v sub = sign | (os_u32v)(__builtin_convertvector(m, os_f32v) * 0x1p-24f);
	return (os_f32v)os_sel_u32((os_m)(e == 0u), sub, os_sel_u32((os_m)(e == 31u), inf, norm));
}
OS_INLINE uint32_t os_f2h(float f) {
	uint32_t b = os_bits32(f), sign = (b >> 16) & 0x8000u, man = b & 0x7fffffu;
	int32_t exp = (int32_t)((b >> 23) & 0xffu);
	if (exp == 0xff) return sign | (man ? 0x7e00u : 0x7c00u);
	int32_t e = exp - 127 + 15;
	if (e >= 31) return sign | 0x7c00u;
	if (e <= 0) {
		if (e < -10) return sign;
		uint32_t m = man | 0x800000u, shift = (uint32_t)(14 - e);
		uint32_t h = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (h & 1u))) h++;
		return sign | h;
	}
	uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
	return sign | h;
}
OS_INLINE os_u32v os_f2h_v(os_f32v x) { os_u32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = os_f2h(x[l]); return r; }
OS_INLINE uint32_t os_d2h(double x) {
	uint32_t sign = (uint32_t)(os_bits64(x) >> 48) & 0x8000u;
	double a = fabs(x);
	if (a != a) return sign | 0x7e00u;
	if (a >= 65520.0) return sign | 0x7c00u;
	if (a < 0x1p-14) return sign | (uint32_t)nearbyint(a * 0x1p24);
	int exp;
	double frac = frexp(a, &exp);
	uint32_t m = (uint32_t)nearbyint(frac * 2048.0);
	return sign | (((uint32_t)(exp + 14) << 10) + m - 1024u);
}
OS_INLINE os_u32v os_d2h_v(os_f64v x) { os_u32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = os_d2h(x[l]); return r; }

OS_INLINE os_f32v os_sqrt_f32v(os_f32v x) { os_f32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = __builtin_sqrtf(x[l]); return r; }
OS_INLINE os_f32v os_floor_f32v(os_f32v x) { os_f32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = __builtin_floorf(x[l]); return r; }
OS_INLINE os_f64v os_sqrt_f64v(os_f64v x) { os_f64v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = __builtin_sqrt(x[l]); return r; }
OS_INLINE os_f64v os_floor_f64v(os_f64v x) { os_f64v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = __builtin_floor(x[l]); return r; }
OS_INLINE os_f32v os_fma_f32v(os_f32v a, os_f32v b, os_f32v c) { os_f32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = __builtin_fmaf(a[l], b[l], c[l]); return r; }

/* The device's own functions (ir.NativeFunc, declared inexact): libm in double, rounded. */
OS_INLINE float os_native(int f, float x, float y) {
	double d = x;
	switch (f) {
	case 0: return (float)exp(d);
	case 1: return (float)exp2(d);
	case 2: return (float)log(d);
	case 3: return (float)log2(d);
	case 4: return (float)sin(d);
	case 5: return (float)cos(d);
	case 6: return (float)tanh(d);
	case 7: return (float)pow(d, (double)y);
	case 8: return (float)(1.0 / sqrt(d));
	}
	return x;
}
OS_INLINE os_f32v os_native_v(int f, os_f32v x, os_f32v y) { os_f32v r = {0}; for (int l = 0; l < OS_VL; l++) r[l] = os_native(f, x[l], y[l]); return r; }

/* The signed 4 x i8 packed dot product, exact (it cannot overflow). */
OS_INLINE int32_t os_dot8(uint32_t a, uint32_t b) {
	return (int32_t)(int8_t)a * (int8_t)b + (int32_t)(int8_t)(a >> 8) * (int8_t)(b >> 8) +
		(int32_t)(int8_t)(a >> 16) * (int8_t)(b >> 16) + (int32_t)(int8_t)(a >> 24) * (int8_t)(b >> 24);
}
OS_INLINE os_i32v os_dot8_v(os_u32v a, os_u32v b) {
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
	/* dpbusd multiplies unsigned bytes by signed ones: (a+128)*b summed, less 128 * the sum of b. */
	__m512i ua = _mm512_xor_si512((__m512i)a, _mm512_set1_epi32((int)0x80808080u));
	__m512i t = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ua, (__m512i)b);
	__m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi32(0x01010101), (__m512i)b);
	return (os_i32v)_mm512_sub_epi32(t, _mm512_slli_epi32(s, 7));
#else
	os_i32v r = ((os_i32v)(a << 24) >> 24) * ((os_i32v)(b << 24) >> 24);
	r += ((os_i32v)(a << 16) >> 24) * ((os_i32v)(b << 16) >> 24);
	r += ((os_i32v)(a << 8) >> 24) * ((os_i32v)(b << 8) >> 24);
	r += ((os_i32v)a >> 24) * ((os_i32v)b >> 24);
	return r;
#endif
}

/* Out-of-bounds accesses: the first one of a workgroup is reported (the site, the index, the
 * element count, the invocation); a load gives 0 and a store is not made. */
OS_INLINE void os_oob(os_exec* X, uint32_t site, uint64_t idx, uint64_t n, uint32_t lane) {
	if (X->rep[0]) return;
	X->rep[0] = 1;
	X->rep[1] = site;
	X->rep[2] = idx;
	X->rep[3] = n;
	X->rep[4] = X->lane0 + lane;
	X->rep[5] = X->g;
}
/* The index of lane l as the report holds it: an i32 index sign-extended. */
OS_INLINE uint64_t os_ix(uint32_t i, int sgn) { return sgn ? (uint64_t)(int64_t)(int32_t)i : (uint64_t)i; }
OS_INLINE void os_oob_v(os_exec* X, uint32_t site, os_u32v idx, int sgn, uint64_t n, os_m bad) {
	int l = os_first(bad);
	os_oob(X, site, os_ix(idx[l], sgn), n, (uint32_t)l);
}

/* 32-bit words at byte offsets off of p, where ok is set (0 elsewhere). */
OS_INLINE os_u32v os_gather32(const uint8_t* p, os_u32v off, os_m ok) {
#if defined(__AVX512F__)
	return (os_u32v)_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), _mm512_test_epi32_mask((__m512i)ok, (__m512i)ok), (__m512i)off, (const void*)p, 1);
#elif defined(__AVX2__)
	union { os_u32v v; __m256i h[2]; } o = {off}, k = {(os_u32v)ok}, r;
	r.h[0] = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int*)p, o.h[0], k.h[0], 1);
	r.h[1] = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int*)p, o.h[1], k.h[1], 1);
	return r.v;
#else
	os_u32v r = os_splat_u32(0);
	for (uint32_t bits = os_bits(ok); bits; bits &= bits - 1u) {
		const int l = __builtin_ctz(bits);
		uint32_t w;
		memcpy(&w, p + off[l], 4);
		r[l] = w;
	}
	return r;
#endif
}

/* Loads of element idx (per lane) of b, where m is set: width-bit elements (8, 16: widened,
 * sign-extended when sext) of stride bytes, component comp (32-bit components). */
OS_INLINE os_u32v os_ld_v(os_exec* X, uint32_t site, os_buf b, os_u32v idx, int sgn, os_m m, uint32_t stride, uint32_t comp, int width, int sext) {
	const uint32_t n = (uint32_t)b.n;
	if (width == 32 && stride == 4u && os_all(m) && idx[0] <= n - OS_VL && n >= OS_VL && !os_any((os_m)(idx - idx[0] != os_iota()))) {
		/* Every lane runs and the lanes read consecutive elements inside the array: one load. */
		os_u32v r = {0};
		memcpy(&r, b.p + (uint64_t)idx[0] * 4u, sizeof r);
		return r;
	}
	os_m in = (os_m)(idx < n), ok = m & in, bad = m & ~in;
	if (os_any(bad)) os_oob_v(X, site, idx, sgn, n, bad);
	/* Every offset inside a binding fits in 31 bits (bindings hold at most 2^31-1 bytes). */
	if (width == 32) return os_gather32(b.p, idx * stride + comp * 4u, ok);
	os_u32v r = os_splat_u32(0);
	for (uint32_t bits = os_bits(ok); bits; bits &= bits - 1u) {
		const int l = __builtin_ctz(bits);
		const uint8_t* q = b.p + idx[l] * stride;
		if (width == 8) r[l] = sext ? (uint32_t)(int32_t)(int8_t)q[0] : q[0];
		else { uint16_t h; memcpy(&h, q, 2); r[l] = sext ? (uint32_t)(int32_t)(int16_t)h : h; }
	}
	return r;
}
OS_INLINE uint32_t os_ld_u(os_exec* X, uint32_t site, os_buf b, uint32_t i, int sgn, os_m m, uint32_t stride, uint32_t comp, int width, int sext) {
	if ((uint64_t)i >= b.n) {
		if (os_any(m)) os_oob(X, site, os_ix(i, sgn), b.n, (uint32_t)os_first(m));
		return 0;
	}
	const uint8_t* q = b.p + (uint64_t)i * stride + comp * 4u;
	if (width == 8) return sext ? (uint32_t)(int32_t)(int8_t)q[0] : q[0];
	if (width == 16) { uint16_t h; memcpy(&h, q, 2); return sext ? (uint32_t)(int32_t)(int16_t)h : h; }
	uint32_t w;
	memcpy(&w, q, 4);
	return w;
}
/* Loads and stores of 32-bit elements where the emitter expects the lanes that run to address
 * consecutive elements (a hint it does not prove): checked here, one vector access when true
 * and inside the array, os_ld_v and os_st_v otherwise. */
OS_INLINE os_u32v os_ld_c(os_exec* X, uint32_t site, os_buf b, os_u32v idx, int sgn, os_m m) {
	const uint32_t n = (uint32_t)b.n, bits = os_bits(m);
	if (bits && n >= OS_VL) {
		const uint32_t f = (uint32_t)__builtin_ctz(bits), s0 = idx[f];
		if (s0 <= n - OS_VL && !os_any(m & (os_m)(idx != s0 - f + os_iota()))) {
			const uint8_t* q = b.p + (uint64_t)s0 * 4u; /* lane f's element; lanes below f are not read */
			os_u32v r = {0};
			if (bits == 0xffffu) { memcpy(&r, q, sizeof r); return r; }
#if defined(__AVX512F__)
			/* Lane l reads element s0 - f + l; the lanes that do not run are masked (no access). */
			return (os_u32v)_mm512_maskz_loadu_epi32((__mmask16)bits, (const void*)((uintptr_t)q - 4u * f));
#else
			r = os_splat_u32(0);
			for (uint32_t k = bits; k; k &= k - 1u) {
				const int l = __builtin_ctz(k);
				uint32_t w;
				memcpy(&w, q + 4 * (l - (int)f), 4);
				r[l] = w;
			}
			return r;
#endif
		}
	}
	return os_ld_v(X, site, b, idx, sgn, m, 4u, 0u, 32, 0);
}
/* Stores, lane by lane in local index order (of two lanes storing one element the higher one's
 * value stays), narrow elements wrapping. */
OS_INLINE void os_st_v(os_exec* X, uint32_t site, os_buf b, os_u32v idx, int sgn, os_m m, uint32_t stride, uint32_t comp, int width, os_u32v v) {
	const uint32_t n = (uint32_t)b.n;
	uint32_t bits = os_bits(m);
	if (width == 32 && stride == 4u && bits == 0xffffu && idx[0] <= n - OS_VL && n >= OS_VL && !os_any((os_m)(idx - idx[0] != os_iota()))) {
		memcpy(b.p + (uint64_t)idx[0] * 4u, &v, sizeof v);
		return;
	}
	while (bits) {
		const int l = __builtin_ctz(bits);
		bits &= bits - 1u;
		if (idx[l] >= n) { os_oob(X, site, os_ix(idx[l], sgn), n, (uint32_t)l); continue; }
		uint8_t* q = b.p + (uint64_t)idx[l] * stride + comp * 4u;
		if (width == 8) q[0] = (uint8_t)v[l];
		else if (width == 16) { uint16_t h = (uint16_t)v[l]; memcpy(q, &h, 2); }
		else { uint32_t w = v[l]; memcpy(q, &w, 4); }
	}
}
OS_INLINE void os_st_u(os_exec* X, uint32_t site, os_buf b, uint32_t i, int sgn, os_m m, uint32_t stride, uint32_t comp, int width, uint32_t v) {
	if (!os_any(m)) return;
	if ((uint64_t)i >= b.n) { os_oob(X, site, os_ix(i, sgn), b.n, (uint32_t)os_first(m)); return; }
	uint8_t* q = b.p + (uint64_t)i * stride + comp * 4u;
	if (width == 8) q[0] = (uint8_t)v;
	else if (width == 16) { uint16_t h = (uint16_t)v; memcpy(q, &h, 2); }
	else memcpy(q, &v, 4);
}
OS_INLINE void os_st_c(os_exec* X, uint32_t site, os_buf b, os_u32v idx, int sgn, os_m m, os_u32v v) {
	const uint32_t n = (uint32_t)b.n, bits = os_bits(m);
	if (bits && n >= OS_VL) {
		const uint32_t f = (uint32_t)__builtin_ctz(bits), s0 = idx[f];
		if (s0 <= n - OS_VL && !os_any(m & (os_m)(idx != s0 - f + os_iota()))) {
			uint8_t* q = b.p + (uint64_t)s0 * 4u;
			if (bits == 0xffffu) { memcpy(q, &v, sizeof v); return; }
#if defined(__AVX512F__)
			_mm512_mask_storeu_epi32((void*)((uintptr_t)q - 4u * f), (__mmask16)bits, (__m512i)v);
#else
			for (uint32_t k = bits; k; k &= k - 1u) {
				const int l = __builtin_ctz(k);
				const uint32_t w = v[l];
				memcpy(q + 4 * (l - (int)f), &w, 4);
			}
#endif
			return;
		}
	}
	os_st_v(X, site, b, idx, sgn, m, 4u, 0u, 32, v);
}
/* Plain loads and stores of a buffer the kernel also updates atomically: atomic words. */
OS_INLINE os_u32v os_lda_v(os_exec* X, uint32_t site, os_buf b, os_u32v idx, int sgn, os_m m) {
	os_u32v r = os_splat_u32(0);
	for (uint32_t bits = os_bits(m); bits; bits &= bits - 1u) {
		const int l = __builtin_ctz(bits);
		if ((uint64_t)idx[l] >= b.n) { os_oob(X, site, os_ix(idx[l], sgn), b.n, (uint32_t)l); continue; }
		r[l] = __atomic_load_n((uint32_t*)(void*)(b.p + (uint64_t)idx[l] * 4u), __ATOMIC_RELAXED);
	}
	return r;
}
OS_INLINE uint32_t os_lda_u(os_exec* X, uint32_t site, os_buf b, uint32_t i, int sgn, os_m m) {
	if ((uint64_t)i >= b.n) {
		if (os_any(m)) os_oob(X, site, os_ix(i, sgn), b.n, (uint32_t)os_first(m));
		return 0;
	}
	return __atomic_load_n((uint32_t*)(void*)(b.p + (uint64_t)i * 4u), __ATOMIC_RELAXED);
}
OS_INLINE void os_sta_v(os_exec* X, uint32_t site, os_buf b, os_u32v idx, int sgn, os_m m, os_u32v v) {
	for (uint32_t bits = os_bits(m); bits; bits &= bits - 1u) {
		const int l = __builtin_ctz(bits);
		if ((uint64_t)idx[l] >= b.n) { os_oob(X, site, os_ix(idx[l], sgn), b.n, (uint32_t)l); continue; }
		__atomic_store_n((uint32_t*)(void*)(b.p + (uint64_t)idx[l] * 4u), v[l], __ATOMIC_RELAXED);
	}
}

/* Atomics, lane by lane in local index order; each returns the old value. On a buffer they are
 * real atomic operations (other workgroups run at the same time); on a shared array (one
 * workgroup, one thread) a read-modify-write. op: 0 add, 1 min, 2 max, 3 exchange, 4
 * compare-exchange, 5 and, 6 or, 7 xor; kind: 0 u32, 1 i32, 2 f32. */
OS_INLINE uint32_t os_atomic_new(int op, int kind, uint32_t old, uint32_t v, uint32_t cmp) {
	switch (op) {
	case 0: return kind == 2 ? os_bits32(os_f32(old) + os_f32(v)) : old + v;
	case 1: return kind == 1 ? ((int32_t)v < (int32_t)old ? v : old) : (v < old ? v : old);
	case 2: return kind == 1 ? ((int32_t)old > (int32_t)v ? old : v) : (old > v ? old : v);
	case 3: return v;
	case 4: return old == cmp ? v : old;
	case 5: return old & v;
	case 6: return old | v;
	case 7: return old ^ v;
	}
	return old;
}
OS_INLINE os_u32v os_atomic_v(os_exec* X, uint32_t site, os_buf b, os_u32v idx, int sgn, os_m m, int op, int kind, int shared, os_u32v v, os_u32v cmp) {
	os_u32v r = os_splat_u32(0);
	for (uint32_t bits = os_bits(m); bits; bits &= bits - 1u) {
		const int l = __builtin_ctz(bits);
		if ((uint64_t)idx[l] >= b.n) { os_oob(X, site, os_ix(idx[l], sgn), b.n, (uint32_t)l); continue; }
		uint32_t* q = (uint32_t*)(void*)(b.p + (uint64_t)idx[l] * 4u);
		if (shared) {
			uint32_t old = *q;
			*q = os_atomic_new(op, kind, old, v[l], cmp[l]);
			r[l] = old;
			continue;
		}
		if (op == 0 && kind != 2) { r[l] = __atomic_fetch_add(q, v[l], __ATOMIC_SEQ_CST); continue; }
		if (op == 3) { r[l] = __atomic_exchange_n(q, v[l], __ATOMIC_SEQ_CST); continue; }
		if (op == 5) { r[l] = __atomic_fetch_and(q, v[l], __ATOMIC_SEQ_CST); continue; }
		if (op == 6) { r[l] = __atomic_fetch_or(q, v[l], __ATOMIC_SEQ_CST); continue; }
		if (op == 7) { r[l] = __atomic_fetch_xor(q, v[l], __ATOMIC_SEQ_CST); continue; }
		uint32_t old = __atomic_load_n(q, __ATOMIC_SEQ_CST);
		for (;;) {
			uint32_t nv = os_atomic_new(op, kind, old, v[l], cmp[l]);
			if (nv == old || __atomic_compare_exchange_n(q, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) break;
		}
		r[l] = old;
	}
	return r;
}

/* Shuffles within the subgroup (one vector): lane l reads lane p(l) where p(l) is a lane of the
 * subgroup that runs the instruction, else its own value. */
OS_INLINE os_u32v os_shuffle_u32(os_u32v v, os_m m, os_u32v p) {
	os_u32v r = v;
	for (int l = 0; l < OS_VL; l++) if (p[l] < OS_VL && m[p[l]]) r[l] = v[p[l]];
	return r;
}
OS_INLINE os_f64v os_shuffle_f64(os_f64v v, os_m m, os_u32v p) {
	os_f64v r = v;
	for (int l = 0; l < OS_VL; l++) if (p[l] < OS_VL && m[p[l]]) r[l] = v[p[l]];
	return r;
}

/* The stop checks at loop back edges: a canceled dispatch, an out-of-bounds access. */
OS_INLINE int os_stop(os_exec* X) {
	return X->rep[0] != 0 || __atomic_load_n((const uint32_t*)(uintptr_t)X->a[7], __ATOMIC_RELAXED) != 0;
}
`

// dispatchLoop is the C text after the kernel's workgroup function os_wg: os_run, the entry point
// each worker calls (see run.go for the words of a dispatch), and os_frame_size.
const dispatchLoop = `
uint64_t os_frame_size(void) { return sizeof(os_frame); }

int32_t os_run(const uint64_t* a, uint64_t* rep, void* frame) {
#if defined(__SSE__)
	const unsigned int csr = _mm_getcsr();
	_mm_setcsr(csr & ~0xe040u); /* round to nearest, no flush-to-zero, no denormals-are-zero */
#endif
	os_exec X;
	X.a = a;
	X.rep = rep;
	X.lane0 = 0;
	const uint64_t gx = a[2], gy = a[3], gz = a[4], total = gx * gy * gz;
	uint64_t* next = (uint64_t*)(uintptr_t)a[5];
	uint64_t* fail = (uint64_t*)(uintptr_t)a[6];
	const uint32_t* cancel = (const uint32_t*)(uintptr_t)a[7];
	const uint32_t* params = (const uint32_t*)(uintptr_t)a[8];
	const os_buf* bufs = (const os_buf*)(const void*)(a + 9);
	int32_t status = 0;
	for (;;) {
		uint64_t g = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
		if (g >= total || g > __atomic_load_n(fail, __ATOMIC_RELAXED) || __atomic_load_n(cancel, __ATOMIC_RELAXED)) break;
		X.g = g;
		X.wg[0] = (uint32_t)(g % gx);
		X.wg[1] = (uint32_t)(g / gx % gy);
		X.wg[2] = (uint32_t)(g / (gx * gy));
		int32_t r = os_wg(&X, params, bufs, (os_frame*)frame);
		if (r != 0) {
			status = r;
			if (rep[0]) {
				uint64_t cur = __atomic_load_n(fail, __ATOMIC_RELAXED);
				while (g < cur && !__atomic_compare_exchange_n(fail, &cur, g, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				}
			}
			break;
		}
	}
	(void)gz;
#if defined(__SSE__)
	_mm_setcsr(csr);
#endif
	return status;
}
`
