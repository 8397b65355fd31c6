package webgpu

import (
	"fmt"
	"strings"
)

// helpers are the os_* WGSL functions the emitter may call, in the order they are printed. Each
// keeps one rule of the numeric contract (see the package documentation); a module contains
// only those its kernel uses.
var helpers = []struct{ name, text string }{
	{"os_div_i32", `// x/0 = -1 and INT_MIN/-1 = INT_MIN (WGSL's own i32 division gives x in both cases).
fn os_div_i32(a: i32, b: i32) -> i32 {
	if (b == 0i) {
		return -1i;
	}
	if (b == -1i) {
		return 0i - a;
	}
	return a / b;
}`},
	{"os_rem_i32", `// x%0 = x and INT_MIN%-1 = 0.
fn os_rem_i32(a: i32, b: i32) -> i32 {
	if (b == 0i) {
		return a;
	}
	if (b == -1i) {
		return 0i;
	}
	return a % b;
}`},
	{"os_div_u32", `// x/0 = 0xffffffff.
fn os_div_u32(a: u32, b: u32) -> u32 {
	if (b == 0u) {
		return 0xffffffffu;
	}
	return a / b;
}`},
	{"os_rem_u32", `// x%0 = x.
fn os_rem_u32(a: u32, b: u32) -> u32 {
	if (b == 0u) {
		return a;
	}
	return a % b;
}`},
	{"os_f32_to_i32", `// Truncates toward zero; NaN and out-of-range values give INT_MIN (0x80000000).
fn os_f32_to_i32(x: f32) -> i32 {
	if (x >= -2147483648.0f && x < 2147483648.0f) {
		return i32(x);
	}
	return -2147483647i - 1i;
}`},
	{"os_f32_to_u32", `// Truncates toward zero; NaN and out-of-range values give 0x80000000.
fn os_f32_to_u32(x: f32) -> u32 {
	if (x > -1.0f && x < 4294967296.0f) {
		return u32(x);
	}
	return 0x80000000u;
}`},
	{"os_f32_bits", `// The f32 with bits b: NaNs and infinities, which WGSL has no literal for (a function call, so
// never a const-expression).
fn os_f32_bits(b: u32) -> f32 {
	return bitcast<f32>(b);
}`},
	{"os_f16_bits", `// The f16 with bits b (low half): NaNs and infinities (unpack2x16float is exact, and so is
// the conversion of an f16 value back to f16).
fn os_f16_bits(b: u32) -> f16 {
	return f16(unpack2x16float(b).x);
}`},
	{"os_f16_to_f32", `// The f16 whose bits are the low 16 bits of h, as the f32 of the same value: exact, with
// integer operations only (subnormals are their significand times 2^-24, a normal f32; NaNs come
// out quiet with their payload).
fn os_f16_to_f32(h: u32) -> f32 {
	let sign = (h & 0x8000u) << 16u;
	let e = (h >> 10u) & 0x1fu;
	let m = h & 0x3ffu;
	if (e == 0u) {
		return bitcast<f32>(bitcast<u32>(f32(m) * 5.9604645e-08f) | sign);
	}
	if (e == 31u) {
		return bitcast<f32>(sign | 0x7f800000u | (m << 13u) | select(0u, 0x400000u, m != 0u));
	}
	return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}`},
	{"os_f32_to_f16", `// The bits of x rounded to the nearest f16, ties to even, with integer operations only:
// overflow gives infinity, tiny values round into the subnormals or to zero, NaN is
// sign|0x7e00 (package oracle's F32ToF16).
fn os_f32_to_f16(x: f32) -> u32 {
	let b = bitcast<u32>(x);
	let sign = (b >> 16u) & 0x8000u;
	let a = b & 0x7fffffffu;
	if (a > 0x7f800000u) {
		return sign | 0x7e00u;
	}
	let e = i32(a >> 23u) - 112i;
	let m = a & 0x7fffffu;
	if (e >= 31i) {
		return sign | 0x7c00u;
	}
	if (e >= 1i) {
		var h = (u32(e) << 10u) | (m >> 13u);
		let r = m & 0x1fffu;
		if (r > 0x1000u || (r == 0x1000u && (h & 1u) == 1u)) {
			h = h + 1u;
		}
		return sign | h;
	}
	if (e < -10i) {
		return sign;
	}
	let full = m | 0x800000u;
	let shift = u32(14i - e);
	var hs = full >> shift;
	let rem = full - (hs << shift);
	let half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (hs & 1u) == 1u)) {
		hs = hs + 1u;
	}
	return sign | hs;
}`},
	{"os_round_f16", `// x rounded to the nearest f16 value (ties to even), as an f32.
fn os_round_f16(x: f32) -> f32 {
	return os_f16_to_f32(os_f32_to_f16(x));
}`},
}

// helperDeps lists the helpers a helper calls.
var helperDeps = map[string][]string{
	"os_round_f16": {"os_f16_to_f32", "os_f32_to_f16"},
}

// HelperNames lists the os_* helper functions the emitter may write, in printing order.
func HelperNames() []string {
	var s []string
	for _, h := range helpers {
		s = append(s, h.name)
	}
	return s
}

// writeHelpers writes the helpers used (and those they call).
func writeHelpers(out *strings.Builder, used map[string]bool) {
	for name := range used {
		for _, d := range helperDeps[name] {
			used[d] = true
		}
	}
	for _, h := range helpers {
		if used[h.name] {
			fmt.Fprintf(out, "%s\n\n", h.text)
		}
	}
}
