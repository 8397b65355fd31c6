package kernels

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The math cells exercise package dsl's math library on every backend:
//
//   - "math": one kernel writes every exact function (oracle.MathOps: exp, exp2, log, log2,
//     tanh, sin, cos, pow, erf, sqrt, rsqrt, floor, ceil, round, trunc, abs, copysign, min, max,
//     min_num, max_num, clamp, fma) of the same inputs into consecutive output segments, judged
//     bit for bit against the oracle. The inputs are the element-wise ops' values (special values
//     first, then normal and whole-range ones) plus pairs and triples aimed at the functions'
//     special cases (pow's IEEE cases, round's ties, fma's cancellations and ties, signed zeros
//     and NaN for min_num/max_num).
//   - "math_native": dsl.Value.Native, the device's own functions (oracle.NativeOps), one output
//     per function, each declared inexact with a ULP bound (Case.Tol): the suite reports
//     "inexact, max ULP N" with the measured N, never bit-exact. The inputs lie in the domains
//     where the weakest target's precision (Vulkan's, in its specification's terms) bounds the
//     error in ULPs: where a result is bounded away from zero for sin and cos (Vulkan promises
//     them an absolute error of 2^-11 only) and outside [0.5, 2] for log and log2 (an absolute
//     error of 2^-21 inside). nativeSpecs gives each domain and bound.
//
// Neither cell has a reduction: the bits do not depend on the schedule.

func init() {
	for _, op := range oracle.MathOps {
		if mathDSL[op.Name] == nil {
			panic(fmt.Sprintf("kernels: the math cell has no DSL twin for oracle.MathOps %q", op.Name))
		}
	}
	if len(nativeSpecs) != len(oracle.NativeOps) {
		panic("kernels: nativeSpecs and oracle.NativeOps differ in length")
	}
	for i, s := range nativeSpecs {
		if s.f.String() != oracle.NativeOps[i].Name {
			panic(fmt.Sprintf("kernels: native output %d is %s, oracle.NativeOps has %s", i, s.f, oracle.NativeOps[i].Name))
		}
	}
	Register(Cell{Op: "math", Type: oracle.F32, Build: MathKernel, Cases: mathCases,
		Feature: "the dsl math library (exact functions)"})
	Register(Cell{Op: "math_native", Type: oracle.F32, Build: MathNativeKernel, Cases: mathNativeCases,
		Feature: "dsl Native: the device's own math functions (declared inexact)"})
}

// mathDSL is the DSL twin of every oracle.MathOps entry, by name.
var mathDSL = map[string]func(x, y, z dsl.Value) dsl.Value{
	"exp":      func(x, _, _ dsl.Value) dsl.Value { return x.Exp() },
	"exp2":     func(x, _, _ dsl.Value) dsl.Value { return x.Exp2() },
	"log":      func(x, _, _ dsl.Value) dsl.Value { return x.Log() },
	"log2":     func(x, _, _ dsl.Value) dsl.Value { return x.Log2() },
	"tanh":     func(x, _, _ dsl.Value) dsl.Value { return x.Tanh() },
	"sin":      func(x, _, _ dsl.Value) dsl.Value { return x.Sin() },
	"cos":      func(x, _, _ dsl.Value) dsl.Value { return x.Cos() },
	"pow":      func(x, y, _ dsl.Value) dsl.Value { return x.Pow(y) },
	"erf":      func(x, _, _ dsl.Value) dsl.Value { return x.Erf() },
	"sqrt":     func(x, _, _ dsl.Value) dsl.Value { return x.Sqrt() },
	"rsqrt":    func(x, _, _ dsl.Value) dsl.Value { return x.Rsqrt() },
	"floor":    func(x, _, _ dsl.Value) dsl.Value { return x.Floor() },
	"ceil":     func(x, _, _ dsl.Value) dsl.Value { return x.Ceil() },
	"round":    func(x, _, _ dsl.Value) dsl.Value { return x.Round() },
	"trunc":    func(x, _, _ dsl.Value) dsl.Value { return x.Trunc() },
	"abs":      func(x, _, _ dsl.Value) dsl.Value { return x.Abs() },
	"copysign": func(x, y, _ dsl.Value) dsl.Value { return x.Copysign(y) },
	"min":      func(x, y, _ dsl.Value) dsl.Value { return x.Min(y) },
	"max":      func(x, y, _ dsl.Value) dsl.Value { return x.Max(y) },
	"min_num":  func(x, y, _ dsl.Value) dsl.Value { return x.MinNum(y) },
	"max_num":  func(x, y, _ dsl.Value) dsl.Value { return x.MaxNum(y) },
	"clamp":    func(x, y, z dsl.Value) dsl.Value { return x.Clamp(y, z) },
	"fma":      func(x, y, z dsl.Value) dsl.Value { return x.Fma(y, z) },
}

// MathKernel builds the math cell: out[j*n + i] = oracle.MathOps[j] of x[i], y[i], z[i].
// Bindings: 0 x, 1 y, 2 z (f32, n), 3 out (f32, len(oracle.MathOps)*n). Parameters: n (u32).
// Dispatch ElemGroups(n, T).
func MathKernel(s Schedule) *dsl.Kernel {
	k := dsl.New("math", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Read)
	z := k.Buffer("z", dsl.F32, dsl.Read)
	out := k.Buffer("out", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	eachElement(k, n, s.Lanes, func(i dsl.Value) {
		xv, yv, zv := x.Load(i), y.Load(i), z.Load(i)
		for j, op := range oracle.MathOps {
			out.Store(n.Mul(uint32(j)).Add(i), mathDSL[op.Name](xv, yv, zv).Named("r_"+op.Name))
		}
	})
	return k
}

// mathTriples are (x, y, z) inputs aimed at the special cases of the binary and ternary
// functions; mathCases places them right after elemValues' special values.
func mathTriples() [][3]float32 {
	inf := posInf
	maxF := maxFinite
	return [][3]float32{
		// pow's IEEE cases
		{nanF, 0, 1}, {nanF, negZero, 1}, {1, nanF, 1}, {-1, inf, 1}, {-1, -inf, 1}, {0.5, inf, 1},
		{0.5, -inf, 1}, {2, -inf, 1}, {-2, inf, 1}, {0, -3, 1}, {negZero, -3, 1}, {negZero, -2, 1},
		{negZero, -0.5, 1}, {negZero, 3, 1}, {negZero, 2, 1}, {-inf, -3, 1}, {-inf, -2, 1}, {-inf, 3, 1},
		{-inf, 2.5, 1}, {inf, -1, 1}, {-8, 1.0 / 3, 1}, {-2, 3, 1}, {-2, 0x1p24, 1}, {-0.5, 0x1p25 + 2, 1},
		{2, 128, 1}, {2, -149, 1}, {2, -150, 1}, {3, 1e30, 1}, {3, -1e30, 1}, {10, 0.5, 1}, {1.0001, 80000, 1},
		{7, 9, 1}, {0x1p-140, -0.9, 1},
		// round's ties and the integer threshold; ceil, trunc of signed halves
		{0.5, 1, 0}, {1.5, 1, 0}, {2.5, 1, 0}, {-2.5, 1, 0}, {-0.5, 1, 0}, {8388607.5, 1, 0}, {0x1p23, 1, 0},
		// min/max and min_num/max_num: NaN on either side, signed zeros in either order
		{nanF, 1, 2}, {1, nanF, 2}, {0, negZero, 1}, {negZero, 0, 1}, {nanF, nanF, 1},
		// clamp: NaN, an inverted range
		{nanF, -1, 1}, {5, 3, 1},
		// fma: exact cancellation, a product that overflows float32, 0*Inf, signed zero sums,
		// a tie decided by c, a subnormal result
		{1 + 0x1p-12, 1 + 0x1p-12, -(1 + 0x1p-11)}, {maxF, 2, -maxF}, {1e30, 1e30, -inf}, {0, inf, 1},
		{negZero, 1, 0}, {negZero, 1, negZero}, {1, 1, -1}, {-0x1p-100, 0x1p-100, 0},
		{8388609, 3, 0x1p-30}, {8388609, 3, -0x1p-30}, {0x1p-74, 0x1p-75, 0}, {0x1p-75, 0x1p-75, 0},
		// erf's cuts
		{0.875, 1, 1}, {math.Nextafter32(0.875, 0), 1, 1}, {4, 1, 1}, {math.Nextafter32(4, 0), 1, 1}, {-3.9, 1, 1},
		// exp2 and log2 edges
		{160, 1, 1}, {-160, 1, 1}, {-149.5, 1, 1}, {127.9, 1, 1}, {1.41421354, 1, 1}, {0.70710677, 1, 1},
	}
}

// mathSecond returns n second operands: special values first, then moderate ones (pow's
// exponents: normal values, small integers and halves) mixed with values over the whole range.
func mathSecond(rng *rand.Rand, n int) []float32 {
	special := []float32{0, negZero, posInf, negInfF, nanF, 1, -1, 2, 0.5, 3, -3, 2.5, -0.5, 1e30, -1e30,
		0x1p24, 0x1p24 + 2, 7, -149, 128}
	y := make([]float32, n)
	for i := range y {
		switch {
		case i < len(special):
			y[i] = special[i]
		case i%4 == 0:
			y[i] = float32(rng.NormFloat64() * 3)
		case i%4 == 1:
			y[i] = float32(rng.Intn(21) - 10)
		case i%4 == 2:
			y[i] = float32(rng.Intn(41)-20) / 2
		default:
			y[i] = randRow(rng, 1, "wide")[0]
		}
	}
	return y
}

// mathInputs returns the math cell's x, y and z for n elements.
func mathInputs(rng *rand.Rand, n int) (x, y, z []float32) {
	x = elemValues(rng, n)
	y = mathSecond(rng, n)
	z = elemValues(rng, n+7)[7:]
	for i := range z {
		if i%5 == 3 { // fma: the rounding error of the product
			z[i] = -(x[i] * y[i])
		}
	}
	const after = 27 // elemValues' special values come first
	for j, t := range mathTriples() {
		if i := after + j; i < n {
			x[i], y[i], z[i] = t[0], t[1], t[2]
		}
	}
	return x, y, z
}

// mathCases runs oracle.MathF32 over mathInputs for every elemSizes length.
func mathCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(116))
	nf := len(oracle.MathOps)
	var out []Case
	for _, sz := range elemSizes() {
		x, y, z := mathInputs(rng, sz.n)
		want := make([]float32, nf*sz.n)
		if err := oracle.MathF32(want, x, y, z); err != nil {
			return nil, err
		}
		groups := sz.grid(s.Lanes)
		out = append(out, Case{
			Name:    sz.name(fmt.Sprintf("n%d", sz.n)),
			Buffers: [][]byte{f32Bytes(x), f32Bytes(y), f32Bytes(z), make([]byte, 4*nf*sz.n)},
			Params:  []uint32{uint32(sz.n)},
			Groups:  groups,
			Outputs: []int{3},
			Want:    [][]byte{f32Bytes(want)},
			Elem:    []string{"f32"},
		})
	}
	return out, nil
}

// nativeSpec is one output of the math_native cell: the device function, the domain its inputs
// are drawn from and the ULP bound it is held to.
type nativeSpec struct {
	f dsl.NativeFunc
	// x is drawn uniformly from [lo, hi] (both signs when signed), or as 2^e with e uniform in
	// [lo, hi] when pow2, skipping |e| < skip.
	lo, hi float64
	signed bool
	pow2   bool
	skip   float64
	// bound is the declared maximum distance from the oracle in ULPs: the weakest target's
	// documented precision over the domain (Vulkan's, in every case), with room for the oracle's
	// own error of 1 to 2.5 ULP.
	bound float64
}

// nativeSpecs are the math_native outputs, in oracle.NativeOps order. Bounds, from the Vulkan
// specification's precision table (CUDA's and HIP's fast intrinsics and MSL's fast:: functions
// document tighter ones over these domains):
//
//	exp, exp2   3 + 2|x| ULP           |x| <= 10 (exp), <= 14 (exp2)      bound 32
//	log, log2   3 ULP outside [0.5, 2]  x = 2^e, 1 <= |e| <= 20            bound 8
//	sin, cos    absolute 2^-11          results >= 0.25 (ULP 2^-26)        bound 2^15
//	tanh        from sinh/cosh          0.5 <= |x| <= 5                    bound 64
//	pow         from exp2(y*log2 x)     0.1 <= x <= 10, |y| <= 4           bound 64
//	rsqrt       2 ULP                   x = 2^e, |e| <= 30                 bound 4
var nativeSpecs = []nativeSpec{
	{f: dsl.NativeExp, lo: -10, hi: 10, bound: 32},
	{f: dsl.NativeExp2, lo: -14, hi: 14, bound: 32},
	{f: dsl.NativeLog, lo: -20, hi: 20, pow2: true, skip: 1, bound: 8},
	{f: dsl.NativeLog2, lo: -20, hi: 20, pow2: true, skip: 1, bound: 8},
	{f: dsl.NativeSin, lo: 0.26, hi: 1.5, signed: true, bound: 1 << 15},
	{f: dsl.NativeCos, lo: -1.3, hi: 1.3, bound: 1 << 15},
	{f: dsl.NativeTanh, lo: 0.5, hi: 5, signed: true, bound: 64},
	{f: dsl.NativePow, lo: -3.3219, hi: 3.3219, pow2: true, bound: 64},
	{f: dsl.NativeRsqrt, lo: -30, hi: 30, pow2: true, bound: 4},
}

// nativeY is pow's exponent domain: uniform in [-4, 4].
const nativeY = 4

// MathNativeKernel builds the math_native cell: out_f[i] = the device's own f of x[j*n + i]
// (and y[i] for pow), f the j-th of nativeSpecs. Bindings: 0 x (f32, len(nativeSpecs)*n), 1 y
// (f32, n), then one output per function (f32, n) named out_<function>. Parameters: n (u32).
// Dispatch ElemGroups(n, T).
func MathNativeKernel(s Schedule) *dsl.Kernel {
	k := dsl.New("math_native", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Read)
	outs := make([]dsl.Array, len(nativeSpecs))
	for j, sp := range nativeSpecs {
		outs[j] = k.Buffer("out_"+sp.f.String(), dsl.F32, dsl.Write)
	}
	n := k.Param("n", dsl.U32)
	eachElement(k, n, s.Lanes, func(i dsl.Value) {
		yv := y.Load(i)
		for j, sp := range nativeSpecs {
			xv := x.Load(n.Mul(uint32(j)).Add(i))
			var r dsl.Value
			if sp.f == dsl.NativePow {
				r = xv.Native(sp.f, yv)
			} else {
				r = xv.Native(sp.f)
			}
			outs[j].Store(i, r)
		}
	})
	return k
}

// nativeInputs returns x (every function's segment) and y for n elements.
func nativeInputs(rng *rand.Rand, n int) (x, y []float32) {
	x = make([]float32, len(nativeSpecs)*n)
	for j, sp := range nativeSpecs {
		for i := 0; i < n; i++ {
			u := sp.lo + rng.Float64()*(sp.hi-sp.lo)
			if sp.pow2 {
				for math.Abs(u) < sp.skip {
					u = sp.lo + rng.Float64()*(sp.hi-sp.lo)
				}
				u = math.Exp2(u)
			}
			if sp.signed && rng.Intn(2) == 1 {
				u = -u
			}
			x[j*n+i] = float32(u)
		}
	}
	y = make([]float32, n)
	for i := range y {
		y[i] = float32((rng.Float64()*2 - 1) * nativeY)
	}
	return x, y
}

// mathNativeCases measures every native function against its oracle function over
// nativeInputs, for every elemSizes length; every output carries its Tolerance.
func mathNativeCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(117))
	var out []Case
	for _, sz := range elemSizes() {
		n := sz.n
		x, y := nativeInputs(rng, n)
		bufs := [][]byte{f32Bytes(x), f32Bytes(y)}
		c := Case{
			Name:   sz.name(fmt.Sprintf("n%d", n)),
			Params: []uint32{uint32(n)},
			Groups: sz.grid(s.Lanes),
		}
		for j, sp := range nativeSpecs {
			want := make([]float32, n)
			for i := range want {
				want[i] = oracle.NativeOps[j].F(x[j*n+i], y[i], 0)
			}
			bufs = append(bufs, make([]byte, 4*n))
			c.Outputs = append(c.Outputs, 2+j)
			c.Want = append(c.Want, f32Bytes(want))
			c.Elem = append(c.Elem, "f32")
			c.Tol = append(c.Tol, &Tolerance{Name: sp.f.String(), MaxULP: sp.bound})
		}
		c.Buffers = bufs
		out = append(out, c)
	}
	return out, nil
}
