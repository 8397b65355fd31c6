package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The ops on f32 activations (all registered with Type oracle.F32):
//
//	op             builder        file            layout
//	rms_norm       RMSNorm        ops_norm.go     one workgroup per row, canonical sum of squares
//	add_rmsnorm    AddRMSNorm     ops_norm.go     one workgroup per row, stores a+b and the norm
//	softmax        Softmax        ops_softmax.go  one workgroup per row, canonical max and sum
//	attn_decode    AttnDecode     ops_attn.go     one workgroup per query head: scores, canonical
//	                                              max and sum, one invocation per output value
//	rope_norm      Rope(normal)   ops_rope.go     one invocation per pair
//	rope_neox      Rope(neox)     ops_rope.go     one invocation per pair
//	rms_norm_rope  RMSNormRope    ops_rope.go     one workgroup per head: norm, then rotate
//	silu, gelu     SiluKernel,    ops_unary.go    one invocation per element
//	scale          GeluKernel,
//	               ScaleKernel
//	add, mul       AddKernel,     ops_binary.go   one invocation per element, b
//	swiglu         MulKernel,                     broadcast by a remainder only when shorter
//	               SwigluKernel
//	quantize_q8_1  QuantizeQ8_1   ops_quantize.go T/32 blocks per workgroup through shared memory
//
// Every builder takes the Schedule; s.Lanes (a power of two) is the workgroup size. The row ops
// reduce in the canonical order of width oracle.RowWidth (dsl.Canon, laid out as s.Layout says),
// so no schedule changes their bits; the other ops' bits do not depend on any order. Each
// builder's doc comment gives its bindings (in order), parameters (32-bit words in order) and
// dispatch; the cases fill them the same way.
//
// This file holds what these ops share: the row ops' canonical reduction, the one-element-per-invocation
// index of the element-wise ops, and the byte and value helpers of their cases.

// maxGroupsX is the most workgroups an element-wise dispatch has along x (Vulkan guarantees
// 65535); more go along y (ElemGroups).
const maxGroupsX = 65535

// elementSubgroups is the default workgroup of the element-wise cells, in subgroups: 256 lanes
// on lavapipe's subgroups of 8 (capped at 256 where subgroups are wider). One element per
// invocation at 256 lanes ran add/f32 at 1.11-1.13x a plain hand-written shader on lavapipe, at
// 64 lanes 0.77-0.96x (A/B in one run, 64 x 4096, 2 threads, other work running): a workgroup
// costs lavapipe about as much as 64 elements.
const elementSubgroups = 32

// rowCanon is the canonical reduction of the row ops: width oracle.RowWidth laid out as the
// schedule says.
func rowCanon(k *dsl.Kernel, s Schedule) dsl.Canon { return k.Canon(oracle.RowWidth, s.Layout) }

// eachElement runs body(i) for the one element i < n of this invocation of a T-lane workgroup:
// i = (workgroup y * workgroups along x + workgroup x) * T + local index, over the grid
// ElemGroups(n, T) gives. Adjacent invocations take adjacent i (coalesced).
//
// One element per invocation, no loop: a grid-stride loop (for i from the global id by the
// grid's size) made add/f32 0.69-0.85x as fast as a plain hand-written shader on lavapipe, one
// element per invocation 1.03-1.13x (A/B in one run, 64 x 4096, 2 threads, other work running);
// a loop the grid made unnecessary, skipped by a uniform branch, still cost as much (0.72-0.78x).
func eachElement(k *dsl.Kernel, n dsl.Value, T int, body func(i dsl.Value)) {
	i := k.WorkgroupID(dsl.Y).Mul(k.NumWorkgroups(dsl.X)).Add(k.WorkgroupID(dsl.X)).Mul(uint32(T)).Add(k.LocalIndex()).Named("i")
	k.If(i.Lt(n), func() { body(i) })
}

// ElemGroups is the grid of an element-wise twin over n values at T lanes per workgroup: one
// workgroup per T values (at least one), along x up to maxGroupsX, then in rows along y (the
// last row may hold more than n needs: those invocations do nothing).
func ElemGroups(n, T int) [3]uint32 {
	g := max(1, (n+T-1)/T)
	x := min(g, maxGroupsX)
	return [3]uint32{uint32(x), uint32((g + x - 1) / x), 1}
}

// f32Bytes returns x as little-endian bytes, how an f32 buffer is bound. An empty x gives one
// zero value (a binding is never empty).
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return make([]byte, 4)
	}
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// i32Bytes returns x as little-endian bytes.
func i32Bytes(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

// fbits is the parameter word of an f32 parameter.
func fbits(f float32) uint32 { return math.Float32bits(f) }

// b2u is 1 for true, 0 for false (flag parameters).
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Values the cases mix in. Subnormals, the largest finite value and the infinities test that the
// device neither flushes nor saturates; NaN tests propagation where the op defines it.
var (
	posInf    = float32(math.Inf(1))
	negInfF   = float32(math.Inf(-1))
	nanF      = float32(math.NaN())
	negZero   = float32(math.Copysign(0, -1))
	minSub    = math.Float32frombits(1)          // the smallest subnormal
	maxSub    = math.Float32frombits(0x007fffff) // the largest subnormal
	maxFinite = float32(math.MaxFloat32)
)

// randRow returns n values of the given kind, from rng:
//
//	"normal"   N(0,1) scaled by a random power of ten in [1e-3, 1e3]
//	"unit"     N(0,1): many terms of one magnitude, so sums depend on their order (and on T)
//	"wide"     random magnitudes over the whole float32 range (subnormal to huge), both signs
//	"zeros"    +0 and -0
//	"tiny"     subnormal and near-subnormal values
func randRow(rng *rand.Rand, n int, kind string) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch kind {
		case "normal":
			x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3)))
		case "unit":
			x[i] = float32(rng.NormFloat64())
		case "wide":
			x[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(250)-140)))
		case "zeros":
			if rng.Intn(2) == 0 {
				x[i] = negZero
			}
		case "tiny":
			x[i] = math.Float32frombits(uint32(rng.Intn(0x00ffffff))) * float32(1-2*rng.Intn(2))
		default:
			panic(fmt.Sprintf("kernels: randRow kind %q", kind))
		}
	}
	return x
}
