package host_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/oracle"
)

// skipUnavailable skips t when host execution cannot run here (no C++ compiler).
func skipUnavailable(t testing.TB, opts host.Options) {
	t.Helper()
	if err := host.Available(opts); err != nil {
		t.Skipf("host execution (H) %v", err)
	}
}

func f32s(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func toF32(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

func u32s(x []uint32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func toU32(b []byte) []uint32 {
	x := make([]uint32, len(b)/4)
	for i := range x {
		x[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return x
}

func run(t *testing.T, src string, lang host.Lang, kernel string, bufs [][]byte, params []uint32, groups, wg [3]uint32, opts host.Options) [][]byte {
	t.Helper()
	skipUnavailable(t, opts)
	out, err := host.Run(src, lang, kernel, bufs, params, groups, wg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var orders = []struct {
	name  string
	order host.Order
}{{"ascending", host.Ascending}, {"descending", host.Descending}, {"shuffled", host.Shuffled}}

// A shared-memory tree reduction with a barrier per level: 256 lanes, 8 barriers + 1.
const cudaReduce = `
extern "C" __global__ void __launch_bounds__(256) block_sum(const float* x, float* out, unsigned int n) {
  __shared__ float sh[256];
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sh[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s <<= 1) {
    float v = sh[threadIdx.x];
    if ((threadIdx.x & (2 * s - 1)) == 0) v = __fadd_rn(v, sh[threadIdx.x + s]);
    __syncthreads();
    sh[threadIdx.x] = v;
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}
`

func treeSum(v []float32) float32 {
	v = append([]float32(nil), v...)
	for len(v) > 1 {
		next := make([]float32, len(v)/2)
		for i := range next {
			next[i] = v[2*i] + v[2*i+1]
		}
		v = next
	}
	return v[0]
}

// TestReductionBarriers is host execution (H) of a CUDA shared-memory tree reduction: barriers
// must separate the levels in every lane order, and results equal the plain-Go tree bit for bit.
func TestReductionBarriers(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const n, wg = 1000, 256
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(5)-2)))
	}
	groups := (n + wg - 1) / wg
	want := make([]float32, groups)
	for b := range want {
		blk := make([]float32, wg)
		for j := range blk {
			if i := b*wg + j; i < n {
				blk[j] = x[i]
			}
		}
		want[b] = treeSum(blk)
	}
	for _, o := range orders {
		out := run(t, cudaReduce, host.CUDA, "block_sum", [][]byte{f32s(x), make([]byte, 4*groups)}, []uint32{n},
			[3]uint32{uint32(groups), 1, 1}, [3]uint32{wg, 1, 1}, host.Options{Order: o.order, Seed: 7})
		got := toF32(out[1])
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("host execution (H), %s order: block %d = %g, want %g", o.name, i, got[i], want[i])
			}
		}
	}
	t.Logf("host execution (H): %d blocks of %d lanes match the plain-Go tree in ascending, descending and shuffled lane order", groups, wg)
}

// TestUcontextFallback is host execution (H) through the portable ucontext fibers (what hosts
// other than x86-64 ELF use): same kernel, same bits.
func TestUcontextFallback(t *testing.T) {
	x := make([]float32, 512)
	for i := range x {
		x[i] = float32(i%17) * 0.25
	}
	opts := host.Options{Flags: []string{"-DOSHOST_UCONTEXT"}}
	out := run(t, cudaReduce, host.CUDA, "block_sum", [][]byte{f32s(x), make([]byte, 8)}, []uint32{512},
		[3]uint32{2, 1, 1}, [3]uint32{256, 1, 1}, opts)
	got := toF32(out[1])
	for b := 0; b < 2; b++ {
		if want := treeSum(x[256*b : 256*(b+1)]); got[b] != want {
			t.Fatalf("host execution (H) with ucontext fibers: block %d = %g, want %g", b, got[b], want)
		}
	}
	t.Logf("host execution (H) through ucontext fibers: both blocks match the plain-Go tree")
}

const cudaButterfly = `
extern "C" __global__ void __launch_bounds__(64) butterfly(const float* x, float* out, unsigned int* info) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int s = 1; s < warpSize; s <<= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, s);
    v = __fadd_rn(v, o);
  }
  out[i] = v;
  if (i == 0) info[0] = warpSize;
}
`

const hipButterfly = `
#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(64) butterfly(const float* x, float* out, unsigned int* info) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int s = 1; s < warpSize; s <<= 1) {
    const float o = __shfl_xor(v, s);
    v = v + o;
  }
  out[i] = v;
  if (i == 0) info[0] = warpSize;
}
`

const mslButterfly = `
#include <metal_stdlib>
using namespace metal;
kernel void butterfly(const device float* x [[buffer(0)]], device float* out [[buffer(1)]], device uint* info [[buffer(2)]],
    uint3 gid [[thread_position_in_grid]], uint3 lid [[thread_position_in_threadgroup]], uint3 wgid [[threadgroup_position_in_grid]],
    uint3 nwg [[threadgroups_per_grid]], uint lidx [[thread_index_in_threadgroup]], uint sgsize [[threads_per_simdgroup]],
    uint lane [[thread_index_in_simdgroup]], uint sgid [[simdgroup_index_in_threadgroup]]) {
  const uint i = gid.x;
  float v = x[i];
  for (uint s = 1; s < sgsize; s <<= 1) {
    const float o = simd_shuffle_xor(v, ushort(s));
    v = v + o;
  }
  out[i] = v;
  if (i == 0) info[0] = sgsize;
  if (lane != lidx % sgsize || sgid != lidx / sgsize || wgid.x * 64 + lid.x != gid.x || nwg.x != 2) info[1] = 1;
}
`

// butterflyRef is the xor-butterfly over subgroups of sg lanes, combining op(self, partner).
func butterflyRef(x []float32, sg int) []float32 {
	v := append([]float32(nil), x...)
	for s := 1; s < sg; s <<= 1 {
		next := make([]float32, len(v))
		for i := range v {
			next[i] = v[i] + v[i^s]
		}
		v = next
	}
	return v
}

// TestShuffleButterfly is host execution (H) of a shuffle-xor butterfly in CUDA, HIP and MSL at
// subgroup sizes 8, 32 and 64: lockstep exchanges give exactly the plain-Go butterfly.
func TestShuffleButterfly(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	x := make([]float32, 128)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, c := range []struct {
		lang host.Lang
		src  string
	}{{host.CUDA, cudaButterfly}, {host.HIP, hipButterfly}, {host.MSL, mslButterfly}} {
		for _, sg := range []int{8, 32, 64} {
			for _, o := range orders {
				out := run(t, c.src, c.lang, "butterfly", [][]byte{f32s(x), make([]byte, 4*len(x)), make([]byte, 8)}, nil,
					[3]uint32{2, 1, 1}, [3]uint32{64, 1, 1}, host.Options{SubgroupSize: sg, Order: o.order, Seed: 3})
				got, want := toF32(out[1]), butterflyRef(x, sg)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("host execution (H) %s, subgroup %d, %s order: lane %d = %g, want %g", c.lang, sg, o.name, i, got[i], want[i])
					}
				}
				if info := toU32(out[2]); info[0] != uint32(sg) || info[1] != 0 {
					t.Fatalf("host execution (H) %s, subgroup %d: builtins wrong: %v", c.lang, sg, info)
				}
			}
		}
	}
	t.Logf("host execution (H): CUDA, HIP and MSL butterflies match at subgroup sizes 8, 32 and 64 in three lane orders")
}

// TestShuffleOutsideSubgroup is host execution (H) of a shuffle whose partner lane does not
// exist (xor 32 in an 8-lane subgroup): reported as an error, not a silent value.
func TestShuffleOutsideSubgroup(t *testing.T) {
	src := `
extern "C" __global__ void __launch_bounds__(64) bad(float* x) {
  x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 32);
}
`
	opts := host.Options{SubgroupSize: 8}
	skipUnavailable(t, opts)
	_, err := host.Run(src, host.CUDA, "bad", [][]byte{make([]byte, 256)}, nil, [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, opts)
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("host execution (H): want an outside-the-subgroup error, got %v", err)
	}
	t.Logf("host execution (H) reports: %v", err)
}

const cudaAtomics = `
extern "C" __global__ void __launch_bounds__(128) atomics(const int* x, int* out, unsigned int* cnt) {
  __shared__ int local_max;
  if (threadIdx.x == 0) local_max = -2147483647 - 1;
  __syncthreads();
  const int v = x[blockIdx.x * blockDim.x + threadIdx.x];
  atomicAdd(&out[0], v);
  atomicMin(&out[1], v);
  atomicMax(&local_max, v);
  const unsigned int ticket = atomicAdd(&cnt[0], 1u);
  atomicExch(&out[3], 42);
  // compare-exchange loop: out[4] = out[4] * 3 + v, wrapping, once per lane
  int old = out[4];
  for (;;) {
    const int seen = atomicCAS(&out[4], old, old * 3 + v);
    if (seen == old) break;
    old = seen;
  }
  atomicMax(&cnt[1], ticket);
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&out[2], local_max);
}
`

const mslAtomics = `
#include <metal_stdlib>
using namespace metal;
kernel void atomics(const device int* x [[buffer(0)]], device int* out [[buffer(1)]], device uint* cnt [[buffer(2)]],
    uint3 gid [[thread_position_in_grid]], uint lidx [[thread_index_in_threadgroup]]) {
  threadgroup int local_max[1];
  if (lidx == 0) atomic_store_explicit((threadgroup atomic_int*)&local_max[0], -2147483647 - 1, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
  const int v = x[gid.x];
  atomic_fetch_add_explicit((device atomic_int*)&out[0], v, memory_order_relaxed);
  atomic_fetch_min_explicit((device atomic_int*)&out[1], v, memory_order_relaxed);
  atomic_fetch_max_explicit((threadgroup atomic_int*)&local_max[0], v, memory_order_relaxed);
  const uint ticket = atomic_fetch_add_explicit((device atomic_uint*)&cnt[0], 1u, memory_order_relaxed);
  atomic_exchange_explicit((device atomic_int*)&out[3], 42, memory_order_relaxed);
  int old = atomic_load_explicit((device atomic_int*)&out[4], memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit((device atomic_int*)&out[4], &old, old * 3 + v, memory_order_relaxed, memory_order_relaxed)) {
  }
  atomic_fetch_max_explicit((device atomic_uint*)&cnt[1], ticket, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
  if (lidx == 0) atomic_fetch_max_explicit((device atomic_int*)&out[2], local_max[0], memory_order_relaxed);
}
`

// TestAtomics is host execution (H) of add/min/max/exchange/compare-exchange on buffer and
// shared memory, in CUDA and MSL: the totals are order-independent and must be exact; the
// compare-exchange chain depends on the lane order and is checked for that order.
func TestAtomics(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	const groups, wg = 3, 128
	x := make([]int32, groups*wg)
	for i := range x {
		x[i] = int32(rng.Uint32())
	}
	var sum, mn, mx int32 = 0, math.MaxInt32, math.MinInt32
	for _, v := range x {
		sum += v
		mn = min(mn, v)
		mx = max(mx, v)
	}
	xb := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(xb[4*i:], uint32(v))
	}
	for _, c := range []struct {
		lang host.Lang
		src  string
	}{{host.CUDA, cudaAtomics}, {host.MSL, mslAtomics}} {
		init := u32s([]uint32{0, math.MaxInt32, 1 << 31, 0, 5})
		out := run(t, c.src, c.lang, "atomics", [][]byte{xb, init, make([]byte, 8)}, nil,
			[3]uint32{groups, 1, 1}, [3]uint32{wg, 1, 1}, host.Options{})
		o := toU32(out[1])
		cnt := toU32(out[2])
		// Ascending order: lanes run in index order within a group, groups in order.
		chain := int32(5)
		for _, v := range x {
			chain = chain*3 + v
		}
		if int32(o[0]) != sum || int32(o[1]) != mn || int32(o[2]) != mx || o[3] != 42 || int32(o[4]) != chain {
			t.Fatalf("host execution (H) %s atomics: got %d %d %d %d %d, want %d %d %d 42 %d", c.lang,
				int32(o[0]), int32(o[1]), int32(o[2]), o[3], int32(o[4]), sum, mn, mx, chain)
		}
		if cnt[0] != groups*wg || cnt[1] != groups*wg-1 {
			t.Fatalf("host execution (H) %s atomics: counter %v, want %d and %d", c.lang, cnt, groups*wg, groups*wg-1)
		}
	}
	t.Logf("host execution (H): CUDA and MSL atomics give the exact totals")
}

const cudaDot = `
extern "C" __global__ void __launch_bounds__(64) dots(const unsigned int* a, const unsigned int* b, int* out, unsigned int n) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[3 * i] = __dp4a((int)a[i], (int)b[i], (int)i * 1000003);
  out[3 * i + 1] = (int)__dp4a(a[i], b[i], 0u);
  out[3 * i + 2] = __dp4a((int)a[i], (int)b[i], 2147483647);
}
`

const hipDot = `
extern "C" __global__ void __launch_bounds__(64) dots(const unsigned int* a, const unsigned int* b, int* out, unsigned int n) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[3 * i] = __builtin_amdgcn_sdot4((int)a[i], (int)b[i], (int)i * 1000003, false);
  out[3 * i + 1] = __builtin_amdgcn_sudot4(true, (int)a[i], true, (int)b[i], 2147483647, false);
  out[3 * i + 2] = __builtin_amdgcn_sdot4((int)a[i], (int)b[i], 2147483647, true);
}
`

func dot4(a, b uint32, as, bs bool) int64 {
	var s int64
	for i := 0; i < 4; i++ {
		x, y := int64(uint8(a>>(8*i))), int64(uint8(b>>(8*i)))
		if as {
			x = int64(int8(a >> (8 * i)))
		}
		if bs {
			y = int64(int8(b >> (8 * i)))
		}
		s += x * y
	}
	return s
}

// TestPackedDot is host execution (H) of __dp4a (CUDA) and sdot4/sudot4 (HIP) with negative
// bytes (-128 included): signed, unsigned, wrapping, and the AMD clamp when asked for.
func TestPackedDot(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const n = 200
	a, b := make([]uint32, n), make([]uint32, n)
	for i := range a {
		a[i], b[i] = rng.Uint32(), rng.Uint32()
	}
	a[0], b[0] = 0x80808080, 0x80808080
	a[1], b[1] = 0x7f7f7f7f, 0x80808080
	a[2], b[2] = 0xffffffff, 0x01010101
	for _, lang := range []host.Lang{host.CUDA, host.HIP} {
		src := cudaDot
		if lang == host.HIP {
			src = hipDot
		}
		out := run(t, src, lang, "dots", [][]byte{u32s(a), u32s(b), make([]byte, 12*n)}, []uint32{n},
			[3]uint32{(n + 63) / 64, 1, 1}, [3]uint32{64, 1, 1}, host.Options{})
		got := toU32(out[2])
		for i := 0; i < n; i++ {
			s := dot4(a[i], b[i], true, true)
			want := []int32{int32(s + int64(int32(i*1000003))), int32(dot4(a[i], b[i], false, false)), int32(s + math.MaxInt32)}
			if lang == host.HIP {
				want[1] = int32(s + math.MaxInt32) // sudot4 signed x signed, no clamp: wraps
				sat := s + math.MaxInt32
				if sat > math.MaxInt32 {
					sat = math.MaxInt32
				}
				want[2] = int32(sat)
			}
			for k := 0; k < 3; k++ {
				if int32(got[3*i+k]) != want[k] {
					t.Fatalf("host execution (H) %s: dot %d form %d: a=%08x b=%08x got %d want %d", lang, i, k, a[i], b[i], int32(got[3*i+k]), want[k])
				}
			}
		}
	}
	t.Logf("host execution (H): __dp4a, sdot4 and sudot4 match the plain-Go dot on %d word pairs", n)
}

const cudaHalf = `
extern "C" __global__ void __launch_bounds__(64) halves(const float* x, unsigned short* h, float* back, unsigned short* sum, unsigned int n) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const _Float16 v = (_Float16)x[i];
  h[i] = __half_as_ushort(v);
  back[i] = (float)v;
  const _Float16 w = (_Float16)x[n - 1 - i];
  const _Float16 p = v * w;
  const _Float16 s = p + v;
  sum[i] = __half_as_ushort(s);
}
`

const mslHalf = `
#include <metal_stdlib>
using namespace metal;
struct halves_params { uint n; };
kernel void halves(const device float* x [[buffer(0)]], device ushort* h [[buffer(1)]], device float* back [[buffer(2)]],
    device ushort* sum [[buffer(3)]], constant halves_params& params [[buffer(4)]], uint3 gid [[thread_position_in_grid]]) {
  const uint i = gid.x;
  if (i >= params.n) return;
  const half v = half(x[i]);
  h[i] = as_type<ushort>(v);
  back[i] = float(v);
  const half w = half(x[params.n - 1 - i]);
  const half p = v * w;
  const half s = p + v;
  sum[i] = as_type<ushort>(s);
}
`

// TestHalfRoundTrip is host execution (H) of f32 -> f16 -> f32 conversions and f16 arithmetic
// (each operation rounded to nearest even in f16) in CUDA and MSL, with g++ and, where present,
// clang++-16, against the oracle's conversions: ties, subnormals, overflow, signed zeros, NaN.
func TestHalfRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	var x []float32
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, -65520, 1e-8, 5.96e-8, 2.98e-8, 2.9802322e-8,
		6.1035156e-05, 6.097555e-05, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1.00048828125, 1.00146484375, 2049} {
		x = append(x, v)
	}
	for len(x) < 1000 {
		switch rng.Intn(3) {
		case 0:
			x = append(x, math.Float32frombits(rng.Uint32()))
		case 1: // exact ties between two f16 values
			h := uint16(rng.Intn(0x7bff))
			lo := oracle.F16ToF32(h)
			hi := oracle.F16ToF32(h + 1)
			x = append(x, float32((float64(lo)+float64(hi))/2))
		default:
			x = append(x, float32(rng.NormFloat64()*math.Pow(2, float64(rng.Intn(40)-25))))
		}
	}
	n := len(x)
	isNaN16 := func(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
	compilers := []string{"g++"}
	if host.Available(host.Options{Compiler: "clang++-16"}) == nil {
		compilers = append(compilers, "clang++-16")
	}
	for _, cxx := range compilers {
		for _, c := range []struct {
			lang host.Lang
			src  string
		}{{host.CUDA, cudaHalf}, {host.MSL, mslHalf}} {
			out := run(t, c.src, c.lang, "halves", [][]byte{f32s(x), make([]byte, 2*n), make([]byte, 4*n), make([]byte, 2*n)}, []uint32{uint32(n)},
				[3]uint32{uint32((n + 63) / 64), 1, 1}, [3]uint32{64, 1, 1}, host.Options{Compiler: cxx})
			for i := 0; i < n; i++ {
				h := binary.LittleEndian.Uint16(out[1][2*i:])
				want := oracle.F32ToF16(x[i])
				if h != want && !(isNaN16(h) && isNaN16(want)) {
					t.Fatalf("host execution (H) %s with %s: f16(%g = %08x) = %04x, want %04x", c.lang, cxx, x[i], math.Float32bits(x[i]), h, want)
				}
				back := math.Float32frombits(binary.LittleEndian.Uint32(out[2][4*i:]))
				if wb := oracle.F16ToF32(want); math.Float32bits(back) != math.Float32bits(wb) && !(back != back && wb != wb) {
					t.Fatalf("host execution (H) %s with %s: f32(f16(%g)) = %g, want %g", c.lang, cxx, x[i], back, wb)
				}
				v, w := oracle.F16ToF32(want), oracle.F16ToF32(oracle.F32ToF16(x[n-1-i]))
				p := oracle.F16ToF32(oracle.F32ToF16(v * w)) // f32 product of two f16 is exact
				s := oracle.F32ToF16(p + v)                  // and the f32 sum of two f16 rounds innocuously
				if got := binary.LittleEndian.Uint16(out[3][2*i:]); got != s && !(isNaN16(got) && isNaN16(s)) {
					t.Fatalf("host execution (H) %s with %s: f16 %04x*%04x+%04x = %04x, want %04x (an f16 operation was not rounded)", c.lang, cxx,
						want, oracle.F32ToF16(x[n-1-i]), want, got, s)
				}
			}
		}
	}
	t.Logf("host execution (H): %d f16 conversions and multiply-then-add chains match the oracle with %v", n, compilers)
}

// TestDeadlock is host execution (H) of kernels that would hang a GPU: a barrier after a
// divergent return, and a shuffle some lanes of the subgroup never reach. Both are reported as
// deadlocks naming the lanes.
func TestDeadlock(t *testing.T) {
	for _, c := range []struct {
		name, src string
	}{
		{"barrier after divergent return", `
extern "C" __global__ void __launch_bounds__(64) stuck(float* x) {
  if (threadIdx.x == 63) return;
  __syncthreads();
  x[threadIdx.x] = 1.0f;
}
`},
		{"shuffle after divergent return", `
extern "C" __global__ void __launch_bounds__(64) stuck(float* x) {
  if (threadIdx.x >= 4 && threadIdx.x < 8) return;
  x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1);
}
`},
		{"barrier against shuffle", `
extern "C" __global__ void __launch_bounds__(64) stuck(float* x) {
  if (threadIdx.x < 16) __syncthreads();
  else x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1);
}
`},
	} {
		skipUnavailable(t, host.Options{})
		_, err := host.Run(c.src, host.CUDA, "stuck", [][]byte{make([]byte, 256)}, nil, [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, host.Options{})
		var ee *host.ExecError
		if !errors.As(err, &ee) || !ee.Deadlock() {
			t.Fatalf("host execution (H), %s: want a deadlock error, got %v", c.name, err)
		}
		t.Logf("host execution (H), %s: %v", c.name, err)
	}
}

// TestOutOfBounds is host execution (H) of a kernel that writes one element past its buffer:
// the guard page stops it with a message naming the buffer.
func TestOutOfBounds(t *testing.T) {
	src := `
extern "C" __global__ void __launch_bounds__(64) oob(float* x, unsigned int n) {
  x[blockIdx.x * blockDim.x + threadIdx.x + n] = 1.0f;
}
`
	skipUnavailable(t, host.Options{})
	_, err := host.Run(src, host.CUDA, "oob", [][]byte{make([]byte, 4096)}, []uint32{1024}, [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, host.Options{})
	if err == nil || !strings.Contains(err.Error(), "buffer 0") {
		t.Fatalf("host execution (H): want an out-of-bounds report on buffer 0, got %v", err)
	}
	t.Logf("host execution (H) reports: %v", err)
}

// TestMissingBarrierShowsUp is host execution (H) of a kernel with a race (it reads a
// neighbour's shared-memory slot without a barrier): the lane order changes its result, which
// is how a missing barrier shows up under emulation.
func TestMissingBarrierShowsUp(t *testing.T) {
	src := `
extern "C" __global__ void __launch_bounds__(64) racy(float* x) {
  __shared__ float sh[64];
  sh[threadIdx.x] = x[threadIdx.x];
  x[threadIdx.x] = sh[(threadIdx.x + 1) & 63];
}
`
	in := make([]float32, 64)
	for i := range in {
		in[i] = float32(i + 1)
	}
	var res [2][]float32
	for k, o := range []host.Order{host.Ascending, host.Descending} {
		out := run(t, src, host.CUDA, "racy", [][]byte{f32s(in)}, nil, [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, host.Options{Order: o})
		res[k] = toF32(out[0])
	}
	same := true
	for i := range res[0] {
		same = same && res[0][i] == res[1][i]
	}
	if same {
		t.Fatal("host execution (H): the racy kernel gave the same result in both lane orders")
	}
	t.Logf("host execution (H): the racy kernel differs between ascending and descending lane order, as it should")
}

// TestCompileError: a kernel that does not compile comes back with the compiler's message and
// the generated files' names.
func TestCompileError(t *testing.T) {
	src := `
extern "C" __global__ void __launch_bounds__(64) broken(float* x) {
  x[threadIdx.x] = undeclared_thing;
	t.Logf("host execution (H) compile error reported as: %.200s...", err)
}
`
	skipUnavailable(t, host.Options{})
	_, err := host.Run(src, host.CUDA, "broken", [][]byte{make([]byte, 256)}, nil, [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, host.Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "undeclared_thing") || !strings.Contains(err.Error(), "kernel.cu") || !strings.Contains(err.Error(), "harness.cpp") {
		t.Fatalf("host execution (H): want the compiler's message and file names, got %v", err)
	}
}

// TestSignatureMismatch: the harness checks the kernel's arguments against the buffers and
// parameters it is given before compiling.
func TestSignatureMismatch(t *testing.T) {
	skipUnavailable(t, host.Options{})
	_, err := host.Run(cudaReduce, host.CUDA, "block_sum", [][]byte{make([]byte, 4)}, []uint32{1}, [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, host.Options{})
	if err == nil || !strings.Contains(err.Error(), "declares 3 arguments") {
		t.Fatalf("host execution (H): want an argument-count error, got %v", err)
	}
	_, err = host.Run(cudaReduce, host.CUDA, "no_such_kernel", nil, nil, [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, host.Options{})
	if err == nil || !strings.Contains(err.Error(), "no CUDA kernel definition") {
		t.Fatalf("host execution (H): want a missing-kernel error, got %v", err)
	}
	t.Logf("host execution (H) reports: %v", err)
}

// TestUnavailable: without a compiler, host execution reports "unavailable: ..." (tests skip).
func TestUnavailable(t *testing.T) {
	opts := host.Options{Compiler: "no-such-c++-compiler"}
	err := host.Available(opts)
	if !errors.Is(err, host.ErrUnavailable) || !strings.HasPrefix(err.Error(), "unavailable: ") {
		t.Fatalf("want an unavailable error, got %v", err)
	}
	_, err = host.Run(cudaReduce, host.CUDA, "block_sum", nil, nil, [3]uint32{}, [3]uint32{}, opts)
	if !errors.Is(err, host.ErrUnavailable) {
		t.Fatalf("want an unavailable error from Run, got %v", err)
	}
	t.Logf("host execution (H) reports: %v", err)
}

// TestTimeout: a kernel that never ends is stopped by Options.Timeout.
func TestTimeout(t *testing.T) {
	src := `
extern "C" __global__ void __launch_bounds__(1) spin(unsigned int* x) {
  while (*(volatile unsigned int*)x == 0) { }
}
`
	skipUnavailable(t, host.Options{})
	_, err := host.Run(src, host.CUDA, "spin", [][]byte{make([]byte, 4)}, nil, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, host.Options{Timeout: 1500 * time.Millisecond})
	var ee *host.ExecError
	if !errors.As(err, &ee) || ee.ExitCode != -1 {
		t.Fatalf("host execution (H): want a timeout, got %v", err)
	}
	t.Logf("host execution (H) reports: %v", err)
}

// BenchmarkBlock256x8Barriers measures the emulation's scheduling cost: host execution (H) of a
// 256-lane block that passes 8 barriers (a shared-memory tree reduction with a barrier per
// level). The program is compiled once; the grid of b.N blocks runs inside one process, timed
// by the program itself, and the figure is reported as ns/block.
func BenchmarkBlock256x8Barriers(b *testing.B) {
	src := `
extern "C" __global__ void __launch_bounds__(256) bar8(float* x) {
  __shared__ float sh[2][256];
  float v = x[threadIdx.x];
  unsigned int k = 0;
  for (unsigned int s = 1; s < 256; s <<= 1, k ^= 1) {
    sh[k][threadIdx.x] = v;
    __syncthreads();
    v = __fadd_rn(v, sh[k][threadIdx.x ^ s]);
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) x[0] = v;
}
`
	opts := host.Options{}
	skipUnavailable(b, opts)
	p, err := host.Compile(src, host.CUDA, "bar8", 1, 0, opts)
	if err != nil {
		b.Fatal(err)
	}
	x := make([]float32, 256)
	for i := range x {
		x[i] = 1
	}
	b.ResetTimer()
	r, err := p.Run([][]byte{f32s(x)}, nil, [3]uint32{uint32(b.N), 1, 1}, [3]uint32{256, 1, 1}, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(r.Elapsed.Nanoseconds())/float64(r.Workgroups), "ns/block")
	if got := toF32(r.Buffers[0])[0]; got != 256 {
		b.Fatalf("host execution (H): sum %g, want 256", got)
	}
}

const msl2D = `
#include <metal_stdlib>
using namespace metal;
struct grid2d_params { uint width; float scale; };
kernel void grid2d(device float4* out [[buffer(0)]], device uint2* ids [[buffer(1)]], constant grid2d_params& params [[buffer(2)]],
    uint3 gid [[thread_position_in_grid]], uint3 lid [[thread_position_in_threadgroup]], uint lidx [[thread_index_in_threadgroup]],
    uint sgsize [[threads_per_simdgroup]], uint sgid [[simdgroup_index_in_threadgroup]]) {
	threadgroup float tile[32];
	threadgroup uint counter[1];
	if (lidx == 0) counter[0] = 0u;
	tile[lidx] = float(lidx) * params.scale;
	threadgroup_barrier(mem_flags::mem_threadgroup);
	atomic_fetch_add_explicit((threadgroup atomic_uint*)&counter[0], 1u, memory_order_relaxed);
	const uint i = gid.y * params.width + gid.x;
	const float4 a = float4(tile[31 - lidx], tile[lidx], float(lid.x), float(lid.y));
	const float4 b = a * 2.0f + float4(1.0f);
	const float4 c = select(b, -b, a < float4(4.0f));
	threadgroup_barrier(mem_flags::mem_threadgroup);
	out[i] = float4(c.x, c.y, max(c.z, 3.0f), as_type<float>(counter[0] + sgid * 1000u));
	ids[i] = uint2(lidx, sgsize);
}
`

// TestMSL2D is host execution (H) of MSL with a 2-D workgroup (8x4), kernel-scope threadgroup
// arrays (rewritten to statics), a threadgroup atomic, the parameter block, float4/uint2 vectors,
// select and as_type, against the same computation in Go.
func TestMSL2D(t *testing.T) {
	const width, height = 16, 8
	scale := float32(0.5)
	out := run(t, msl2D, host.MSL, "grid2d", [][]byte{make([]byte, 16*width*height), make([]byte, 8*width*height)},
		[]uint32{width, math.Float32bits(scale)}, [3]uint32{2, 2, 1}, [3]uint32{8, 4, 1}, host.Options{SubgroupSize: 8})
	got, ids := toF32(out[0]), toU32(out[1])
	for gy := 0; gy < height; gy++ {
		for gx := 0; gx < width; gx++ {
			lx, ly := gx%8, gy%4
			lidx := ly*8 + lx
			a := [4]float32{float32(31-lidx) * scale, float32(lidx) * scale, float32(lx), float32(ly)}
			var c [4]float32
			for k := range a {
				b := a[k]*2 + 1
				c[k] = b
				if a[k] < 4 {
					c[k] = -b
				}
			}
			want := [4]float32{c[0], c[1], max(c[2], 3), math.Float32frombits(32 + uint32(lidx/8)*1000)}
			i := gy*width + gx
			for k := 0; k < 4; k++ {
				if math.Float32bits(got[4*i+k]) != math.Float32bits(want[k]) {
					t.Fatalf("host execution (H) MSL: (%d,%d) component %d = %g, want %g", gx, gy, k, got[4*i+k], want[k])
				}
			}
			if ids[2*i] != uint32(lidx) || ids[2*i+1] != 8 {
				t.Fatalf("host execution (H) MSL: (%d,%d) ids %v, want %d 8", gx, gy, ids[2*i:2*i+2], lidx)
			}
		}
	}
	t.Logf("host execution (H): MSL 2-D workgroups, threadgroup memory and vectors match Go")
}
