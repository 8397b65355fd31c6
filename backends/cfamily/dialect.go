package cfamily

import (
	"sort"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Family is the language family of a dialect: the shape of the kernel signature, the
// address-space spelling, builtins, atomics, casts and vector types.
type Family uint8

// The families.
const (
	// FamilyCUDA is CUDA C++ and HIP C++: `extern "C" __global__` kernels, threadIdx-style
	// builtins, atomicAdd-style atomics, C casts, vectors as small structs.
	FamilyCUDA Family = iota
	// FamilyMetal is the Metal Shading Language: `kernel void` with [[...]] argument
	// attributes, device/constant/threadgroup address spaces, functional casts, native vectors.
	FamilyMetal
)

// Dialect is the table of what differs between the C-family targets. The backend packages
// define one per target (cuda.Dialect, hip.DialectFor, metal.Dialect). Format strings take
// their operands as %[1]s, %[2]s, ...; a function name at the start of a format (the text
// before its first parenthesis) is recorded in Uses.Names when printed, so a prelude can
// declare exactly what the kernel calls.
type Dialect struct {
	// Name is the backend's name, written in the header ("cuda", "hip", "metal").
	Name string
	// Target describes the lowering target in the header, e.g. "sm_80 and newer".
	Target string
	// Family selects the signature shape, builtins, atomics, casts and vectors.
	Family Family
	// Caps are the capabilities the kernel was lowered with (written in the header). Caps.DotI8x4
	// must agree with Dot: a dialect without a Dot spelling needs kernels lowered without the
	// packed dot.
	Caps lower.Caps
	// Notes are header lines after the target line: the build flags the numeric contract needs.
	Notes []string
	// Prelude returns the text after the header and before the helpers: includes and the
	// declarations a bare compiler lacks. It may be nil.
	Prelude func(u *Uses) string
	// F16 is the name of the f16 type ("__half", "_Float16", "half").
	F16 string
	// HelperQual qualifies the os_* helper functions ("static __device__ __forceinline__").
	HelperQual string

	// F32 and F64 spell float arithmetic; F16 arithmetic is done in F32 (see the package doc).
	F32, F64 FloatOps
	// F16Div, when not empty, spells f16 division on the f16 operands %[1]s and %[2]s instead
	// of the f32 division rounded to f16 (HIP: an f32 division the optimizer cannot narrow).
	F16Div string

	// Barrier is the workgroup barrier statement, without the semicolon.
	Barrier string
	// ShuffleXor spells OpShuffleXor: %[1]s the value, %[2]s the lane mask (already an int in
	// FamilyCUDA, a ushort in FamilyMetal), %[3]s (FamilyCUDA) the member mask of the lanes of
	// this warp that run the kernel.
	ShuffleXor string
	// Shuffle spells OpShuffle: %[1]s the value, %[2]s the source lane (an int in FamilyCUDA,
	// a ushort in FamilyMetal), %[3]s (FamilyCUDA) the member mask as for ShuffleXor.
	Shuffle string
	// Native spells OpNative per function (ir.NativeFunc): the device's own, inexact function
	// of %[1]s (and %[2]s for ir.NativePow), e.g. "__expf(%[1]s)"; "" means the dialect has none
	// (printing it is an error).
	Native [ir.NativeCount]string
	// Dot spells OpDotI8x4 on the two packed u32 operands %[1]s and %[2]s, giving an int; ""
	// means the target has none (lower with Caps.DotI8x4 false).
	Dot string
	// Islands spell the native bodies of the intrinsic islands (package ir, island.go) the
	// dialect's Caps.Islands holds, as a statement without the semicolon, usually a call of a
	// helper the Prelude defines when Uses names it. An ir.IslandMMAI8 takes %[1]s the A shared
	// array, %[2]s its tile index, %[3]s and %[4]s B's, %[5]s and %[6]s D's, %[7]s true or false
	// (accumulate) and %[8]s the invocation's subgroup lane. "" means no native body (lower
	// without the island in Caps.Islands: printing one is an error).
	Islands [ir.IslandCount]string
	// Reserved lists identifiers the dialect's text uses (builtins, intrinsics, type names);
	// printed names never take them.
	Reserved []string
}

// FloatOps spells the float operations of one width. An empty Add, Sub, Mul or Div means the C
// operator.
type FloatOps struct {
	Add, Sub, Mul, Div string // binary: %[1]s, %[2]s
	Sqrt, Floor, Abs   string // unary: %[1]s
	// Fma spells OpFma, %[1]s*%[2]s+%[3]s rounded once; it must be the target's single-rounding
	// fused multiply-add (lower with Caps.ExactFma false when there is none: OpFma never
	// reaches the printer then). Empty: printing an OpFma is an error.
	Fma string
}

// Uses records what a printed kernel uses, for the dialect's prelude.
type Uses struct {
	// Names holds every function or intrinsic name the kernel text calls (from the dialect's
	// formats, the atomics and the bitcast intrinsics) and every os_* helper it needs.
	Names map[string]bool
	// F16 and F64 report whether the kernel has f16 or f64 values or elements.
	F16, F64 bool
	// Vectors lists the vector struct types the kernel uses (FamilyCUDA), in a fixed order.
	Vectors []string
}

// Has reports whether the kernel uses name.
func (u *Uses) Has(name string) bool { return u.Names[name] }

// Sorted returns the used names in sorted order.
func (u *Uses) Sorted() []string {
	var s []string
	for n := range u.Names {
		s = append(s, n)
	}
	sort.Strings(s)
	return s
}
