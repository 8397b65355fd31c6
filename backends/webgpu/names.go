package webgpu

import (
	"strconv"
	"strings"
)

// wgslReserved are WGSL's keywords, its reserved words, the predeclared type and function names
// the emitted text uses or a reader would mistake, and the names the emitter itself declares
// (entry-point builtins, the parameter struct). Printed identifiers never take them.
var wgslReserved = strings.Fields(`
	alias break case const const_assert continue continuing default diagnostic discard else enable
	false fn for if let loop override requires return struct switch true var while

	NULL Self abstract active alignas alignof as asm asm_fragment async attribute auto await become
	binding_array cast catch class co_await co_return co_yield coherent column_major common compile
	compile_fragment concept const_cast consteval constexpr constinit crate debugger decltype delete
	demote demote_to_helper do dynamic_cast enum explicit export extends extern external fallthrough
	filter final finally friend from fxgroup get goto groupshared highp impl implements import inline
	instanceof interface layout lowp macro macro_rules match mediump meta mod module move mut mutable
	namespace new nil noexcept noinline nointerpolation non_coherent noncoherent noperspective null
	nullptr of operator package packoffset partition pass patch pixelfragment precise precision
	premerge priv protected pub public readonly ref regardless register reinterpret_cast require
	resource restrict self set shared sizeof smooth snorm static static_assert static_cast std
	subroutine super target template this thread_local throw trait try type typedef typeid typename
	typeof union unless unorm unsafe unsized use using varying virtual volatile wgsl where with
	writeonly yield

	bool f16 f32 f64 i32 u32 i64 u64 vec2 vec3 vec4 mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2
	mat4x3 mat4x4 array atomic ptr sampler sampler_comparison
	vec2f vec3f vec4f vec2i vec3i vec4i vec2u vec3u vec4u vec2h vec3h vec4h

	function private workgroup uniform storage read write read_write

	abs acos all any arrayLength asin atan atan2 bitcast ceil clamp cos countOneBits cross degrees
	distance dot dot4I8Packed dot4U8Packed exp exp2 floor fma fract frexp inverseSqrt ldexp length
	log log2 max min mix modf normalize pow radians round select sign sin sqrt step tan tanh trunc
	pack2x16float unpack2x16float pack4x8snorm unpack4x8snorm extractBits insertBits reverseBits
	firstLeadingBit firstTrailingBit countLeadingZeros countTrailingZeros
	atomicLoad atomicStore atomicAdd atomicSub atomicMax atomicMin atomicAnd atomicOr atomicXor
	atomicExchange atomicCompareExchangeWeak workgroupBarrier storageBarrier textureBarrier
	workgroupUniformLoad subgroupShuffle subgroupShuffleXor subgroupShuffleUp subgroupShuffleDown
	subgroupAdd subgroupMax subgroupMin subgroupBroadcast subgroupBallot

	gid lid wgid nwg lidx sg_size sg_lane params
`)

// namer hands out unique, valid WGSL identifiers for one kernel.
type namer struct {
	used     map[string]bool
	reserved map[string]bool
	next     map[string]int // per sanitized base: the first suffix fresh may find free
}

func newNamer(extra ...string) *namer {
	n := &namer{used: map[string]bool{}, reserved: map[string]bool{}, next: map[string]int{}}
	for _, r := range wgslReserved {
		n.reserved[r] = true
	}
	for _, r := range extra {
		n.reserved[r] = true
	}
	return n
}

// sanitize turns s into an identifier that is not reserved: characters other than ASCII letters,
// digits and '_' become '_', runs of '_' collapse (WGSL reserves a leading "__"), leading and
// trailing underscores go, a leading digit gets a letter prefix, a reserved word or a name in the
// emitter's os_ and loopN_first namespaces gets a mark. An empty result is "v".
func (n *namer) sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			r = '_'
		}
		if r == '_' && strings.HasSuffix(b.String(), "_") {
			continue
		}
		b.WriteRune(r)
	}
	out := strings.Trim(b.String(), "_")
	if out == "" {
		return "v"
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "v" + out
	}
	if strings.HasPrefix(out, "os_") || strings.HasPrefix(out, "loop") && strings.HasSuffix(out, "_first") || strings.HasPrefix(out, "cas") && strings.HasSuffix(out, "_r") {
		out = "u" + out
	}
	if n.reserved[out] {
		out += "_"
	}
	return out
}

// fresh returns a new unique identifier based on base (sanitized): base itself, or else base_2,
// base_3, ..., the first that is free.
func (n *namer) fresh(base string) string {
	base = n.sanitize(base)
	name := base
	if n.used[name] || n.reserved[name] {
		stem := strings.TrimRight(base, "_") + "_"
		i := max(n.next[base], 2)
		for {
			name = stem + strconv.Itoa(i)
			if !n.used[name] && !n.reserved[name] {
				break
			}
			i++
		}
		n.next[base] = i + 1
	}
	n.used[name] = true
	return name
}

// exact claims name as it is (the emitter's own names, such as loop flags); it returns false if
// the name is taken.
func (n *namer) exact(name string) bool {
	if n.used[name] || n.reserved[name] {
		return false
	}
	n.used[name] = true
	return true
}

// isIdent reports whether s is a WGSL identifier the emitter may use as the entry point's name.
func isIdent(s string) bool {
	if s == "" || s == "_" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}
