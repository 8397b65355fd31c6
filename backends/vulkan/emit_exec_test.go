package vulkan_test

// Execution tests: emitted kernels run on the Vulkan device (lavapipe here) and their outputs
// are compared bit for bit with plain Go. They skip when Vulkan is unavailable.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

// execDevs are the devices of the execution tests, one per environment, opened on first use
// and left open until the test binary exits.
var execDevs struct {
	sync.Mutex
	devs map[vulkan.Env]*vulkan.Device
}

// execDeviceEnv returns the device used at env's Vulkan version (Options.APIVersion: below 1.3
// it reads and enables its features through the extensions that carried them), or skips the
// test with the reason Vulkan is unavailable or the device is older than env.
func execDeviceEnv(t testing.TB, env vulkan.Env) *vulkan.Device {
	t.Helper()
	if env == vulkan.EnvDefault {
		env = vulkan.Vulkan1_3
	}
	if err := vulkan.Available(); err != nil {
		t.Skipf("Vulkan device unavailable: %v", err)
	}
	execDevs.Lock()
	defer execDevs.Unlock()
	if d, ok := execDevs.devs[env]; ok {
		if d.Env() != env {
			t.Skipf("the device runs %v, not %v", d.Env(), env)
		}
		return d
	}
	d, err := vulkan.Open(vulkan.Options{APIVersion: env.API()})
	if err != nil {
		t.Fatalf("Open at Vulkan %v: %v", env.API(), err)
	}
	if execDevs.devs == nil {
		execDevs.devs = map[vulkan.Env]*vulkan.Device{}
	}
	execDevs.devs[env] = d
	if d.Env() != env {
		t.Skipf("the device runs %v, not %v", d.Env(), env)
	}
	return d
}

// supports reports whether every feature set in need is set in have.
func supports(have, need vulkan.Features) bool {
	h, n := reflect.ValueOf(have), reflect.ValueOf(need)
	for i := range n.NumField() {
		if n.Field(i).Bool() && !h.Field(i).Bool() {
			return false
		}
	}
	return true
}

// runOnDevice emits k with opts, validates it when spirv-val is present, runs it on the device
// of opts.Env over groups workgroups with the given buffer contents and push constants, and
// returns the buffers' contents after. It skips when the device lacks a feature the module
// needs, and fails when a device that has them all refuses the module.
func runOnDevice(t testing.TB, k *ir.Kernel, opts vulkan.EmitOptions, bufs [][]byte, push []byte, groups [3]uint32) [][]byte {
	t.Helper()
	d := execDeviceEnv(t, opts.Env)
	mod, err := vulkan.Emit(k, opts)
	if err != nil {
		t.Fatalf("Emit: %v", err)
	}
	if spirvTools() == nil {
		if err := spirvVal(t, mod.Words); err != nil {
			t.Fatal(err)
		}
	}
	p, err := d.Pipeline(mod)
	if err != nil {
		info := d.Info()
		if supports(info.EnabledFeatures, mod.Features) && (mod.SubgroupSize == 0 || info.SubgroupSizeControl) {
			t.Fatalf("a device with every feature %s needs refuses it: %v", k.Name, err)
		}
		t.Skipf("device cannot run %s: %v", k.Name, err)
	}
	var bs []*vulkan.Buffer
	for i, data := range bufs {
		size := (len(data) + 3) &^ 3
		if size == 0 {
			size = 4
		}
		b, err := d.NewBuffer(size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		padded := make([]byte, size)
		copy(padded, data)
		if err := b.Write(0, padded); err != nil {
			t.Fatalf("buffer %d: %v", i, err)
		}
		bs = append(bs, b)
	}
	if err := d.Run(p, bs, push, groups); err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := make([][]byte, len(bufs))
	for i, b := range bs {
		out[i] = make([]byte, len(bufs[i]))
		if err := b.Read(0, out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func le32(b []byte, i int) uint32     { return binary.LittleEndian.Uint32(b[4*i:]) }
func put32(b []byte, i int, v uint32) { binary.LittleEndian.PutUint32(b[4*i:], v) }

func u32s(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		put32(b, i, x)
	}
	return b
}

// sameBits compares 32-bit results; any NaN equals any NaN when float.
func sameBits(a, b uint32, float bool) bool {
	if a == b {
		return true
	}
	fa, fb := math.Float32frombits(a), math.Float32frombits(b)
	return float && fa != fa && fb != fb
}

// TestExecNoContraction: a*b+c with inputs where the fused result differs from two roundings;
// the kernel must give the two-rounding result bit for bit (scalar and vec4).
func TestExecNoContraction(t *testing.T) {
	const n = 256
	r := rand.New(rand.NewPCG(7, 7))
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	differ := 0
	for i := range n {
		a[i] = float32(r.Float64()*2-1) * 1000
		b[i] = float32(r.Float64()*2-1) * 1000
		p := float32(a[i] * b[i])
		c[i] = -p * float32(1+float32(i%3)*0x1p-20) // cancels most of the product
		if float32(math.FMA(float64(a[i]), float64(b[i]), float64(c[i]))) != float32(p+c[i]) {
			differ++
		}
	}
	if differ < n/2 {
		t.Fatalf("only %d of %d inputs tell fused from unfused", differ, n)
	}
	for _, lanes := range []int{1, 4} {
		t.Run(fmt.Sprintf("lanes%d", lanes), func(t *testing.T) {
			typ := ir.Vec(ir.F32, lanes)
			kb := irtest.New(fmt.Sprintf("fma_free_%d", lanes), 64)
			ba := kb.Buffer("a", typ, ir.ReadOnly)
			bb := kb.Buffer("b", typ, ir.ReadOnly)
			bc := kb.Buffer("c", typ, ir.ReadOnly)
			out := kb.Buffer("out", typ, ir.WriteOnly)
			g := kb.GID()
			kb.St(out, g, kb.Bin(ir.OpAdd, kb.Bin(ir.OpMul, kb.Ld(ba, g), kb.Ld(bb, g)), kb.Ld(bc, g)))
			k := done(t, kb)
			f := func(v []float32) []byte {
				o := make([]byte, 4*len(v))
				for i, x := range v {
					put32(o, i, math.Float32bits(x))
				}
				return o
			}
			res := runOnDevice(t, k, vulkan.EmitOptions{}, [][]byte{f(a), f(b), f(c), make([]byte, 4*n)}, nil, [3]uint32{uint32(n / lanes / 64), 1, 1})
			bad := 0
			for i := range n {
				want := float32(float32(a[i]*b[i]) + c[i])
				if got := math.Float32frombits(le32(res[3], i)); got != want {
					if bad++; bad < 5 {
						t.Errorf("%d: %g*%g%+g = %g (%#08x), want unfused %g (%#08x); fused is %g", i, a[i], b[i], c[i], got, math.Float32bits(got), want, math.Float32bits(want), math.FMA(float64(a[i]), float64(b[i]), float64(c[i])))
					}
				}
			}
		})
	}
}

// TestExecDotI8x4: packed signed 8-bit dot products with negative bytes, then a wrapping add
// (an OpSDotAccSat would saturate instead).
func TestExecDotI8x4(t *testing.T) {
	const n = 128
	r := rand.New(rand.NewPCG(1, 9))
	a, b := make([]uint32, n), make([]uint32, n)
	for i := range n {
		a[i], b[i] = r.Uint32(), r.Uint32()
	}
	a[0], b[0] = 0x80808080, 0x80808080 // 4 * 16384: wraps when added to MaxInt32
	a[1], b[1] = 0x7f7f7f7f, 0x80808080
	a[2], b[2] = 0xffffffff, 0x01ff01ff
	kb := irtest.New("dot_i8x4", 64)
	ba := kb.Buffer("a", u32, ir.ReadOnly)
	bb := kb.Buffer("b", u32, ir.ReadOnly)
	out := kb.Buffer("out", i32, ir.WriteOnly)
	pc := kb.Param("c", i32)
	g := kb.GID()
	d := kb.Op(ir.OpDotI8x4, i32, kb.Ld(ba, g), kb.Ld(bb, g))
	kb.St(out, g, kb.Bin(ir.OpAdd, d, kb.P(pc)))
	k := done(t, kb)
	const c = math.MaxInt32
	forEachEnv(t, func(t *testing.T, env vulkan.Env) {
		res := runOnDevice(t, k, vulkan.EmitOptions{Env: env}, [][]byte{u32s(a...), u32s(b...), make([]byte, 4*n)}, u32s(c), [3]uint32{n / 64, 1, 1})
		for i := range n {
			var dot int32
			for j := range 4 {
				dot += int32(int8(a[i]>>(8*j))) * int32(int8(b[i]>>(8*j)))
			}
			want := dot + c // wraps
			if got := int32(le32(res[2], i)); got != want {
				t.Errorf("%d: dot(%#08x, %#08x)+c = %d, want %d", i, a[i], b[i], got, want)
			}
		}
	})
}

// forEachEnv runs f as a subtest per environment, oldest first: the execution tests that use
// features Vulkan 1.1 and 1.2 reach through extensions run on a device used at each version.
func forEachEnv(t *testing.T, f func(t *testing.T, env vulkan.Env)) {
	for _, env := range vulkan.Envs {
		t.Run(env.String(), func(t *testing.T) { f(t, env) })
	}
}

// TestExecShuffleXor: subgroup size 8; lane i reads lane i^mask; the subgroup builtins agree.
func TestExecShuffleXor(t *testing.T) {
	const n = 128
	masks := []uint32{1, 2, 4, 7}
	kb := irtest.New("shuffle_xor", 64)
	in := kb.Buffer("in", f32, ir.ReadOnly)
	out := kb.Buffer("out", u32, ir.WriteOnly)
	g := kb.GID()
	x := kb.Ld(in, g)
	base := kb.Bin(ir.OpMul, g, kb.U32(8))
	for j, m := range masks {
		kb.St(out, kb.Bin(ir.OpAdd, base, kb.U32(uint32(j))), kb.Bitcast(u32, kb.Op(ir.OpShuffleXor, f32, x, kb.U32(m))))
	}
	kb.St(out, kb.Bin(ir.OpAdd, base, kb.U32(4)), kb.Op(ir.OpShuffleXor, u32, g, kb.Builtin(ir.SubgroupLane, 0)))
	kb.St(out, kb.Bin(ir.OpAdd, base, kb.U32(5)), kb.Builtin(ir.SubgroupSize, 0))
	kb.St(out, kb.Bin(ir.OpAdd, base, kb.U32(6)), kb.Builtin(ir.SubgroupLane, 0))
	kb.St(out, kb.Bin(ir.OpAdd, base, kb.U32(7)), kb.Builtin(ir.SubgroupID, 0))
	k := done(t, kb)
	vals := make([]uint32, n)
	for i := range vals {
		vals[i] = math.Float32bits(float32(i)*1.5 - 7)
	}
	forEachEnv(t, func(t *testing.T, env vulkan.Env) {
		res := runOnDevice(t, k, vulkan.EmitOptions{SubgroupSize: 8, Env: env}, [][]byte{u32s(vals...), make([]byte, 4*8*n)}, nil, [3]uint32{n / 64, 1, 1})
		for i := range n {
			lane := uint32(i % 8)
			want := []uint32{vals[i^1], vals[i^2], vals[i^4], vals[i^7], uint32(i) &^ 7, 8, lane, uint32(i%64) / 8}
			for j, w := range want {
				if got := le32(res[1], 8*i+j); got != w {
					t.Errorf("invocation %d, output %d: got %#x, want %#x", i, j, got, w)
				}
			}
		}
	})
}

// f16 helpers (the IR's own RNE conversion is the reference here).
func toF16(f float32) uint16   { return uint16(ir.ConstBits(ir.TF16, float64(f))) }
func fromF16(h uint16) float32 { return float32(ir.ConstFloat(ir.TF16, uint64(h))) }

// TestExecNarrow: i8/u8/i16/u16/f16 buffers: loads widen (sign- or zero-extended), stores
// narrow (wrapping); f32 -> f16 rounds to nearest even; f16 -> f32 is exact.
func TestExecNarrow(t *testing.T) {
	const n = 64
	kb := irtest.New("narrow_exec", 64)
	type nb struct {
		s       ir.Scalar
		in, out int
	}
	var ns []nb
	for _, s := range []ir.Scalar{ir.I8, ir.U8, ir.I16, ir.U16} {
		ns = append(ns, nb{s, kb.Buffer("in_"+s.String(), ir.S(s), ir.ReadOnly), kb.Buffer("out_"+s.String(), ir.S(s), ir.WriteOnly)})
	}
	wide := kb.Buffer("wide", i32, ir.WriteOnly) // the widened values, as i32 bits
	inF32 := kb.Buffer("in_f32", f32, ir.ReadOnly)
	outF16 := kb.Buffer("out_f16", f16, ir.WriteOnly)
	inF16 := kb.Buffer("in_f16", f16, ir.ReadOnly)
	outF32 := kb.Buffer("out_f32", f32, ir.WriteOnly)
	g := kb.GID()
	for j, x := range ns {
		v := kb.Ld(x.in, g)
		kb.St(x.out, g, kb.Bin(ir.OpMul, v, kb.C(v.Type, 3))) // wraps when narrowed
		if v.Type == u32 {
			v = kb.Bitcast(i32, v)
		}
		kb.St(wide, kb.Bin(ir.OpAdd, kb.Bin(ir.OpMul, g, kb.U32(4)), kb.U32(uint32(j))), v)
	}
	kb.St(outF16, g, kb.Conv(f16, kb.Ld(inF32, g)))
	kb.St(outF32, g, kb.Conv(f32, kb.Ld(inF16, g)))
	k := done(t, kb)

	r := rand.New(rand.NewPCG(5, 5))
	bufs := make([][]byte, 0, 13)
	var inputs [][]byte
	for _, x := range ns {
		w := x.s.Bits() / 8
		in := make([]byte, n*w)
		for i := range in {
			in[i] = byte(r.Uint32())
		}
		in[0], in[w] = 0x80, 0xff // most negative / -1 low bytes
		inputs = append(inputs, in)
		bufs = append(bufs, in, make([]byte, n*w))
	}
	bufs = append(bufs, make([]byte, 4*4*n))
	f32in := []float32{
		1 + 0x1p-11, 1 + 3*0x1p-11, -(1 + 3*0x1p-11), 65504, 65520, 65519.99, 1e9, -1e9,
		0x1p-14, 0x1p-24, 0x1p-25, 0x1.8p-25, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()),
	}
	for len(f32in) < n {
		f32in = append(f32in, float32(r.NormFloat64()*100))
	}
	fb := make([]byte, 4*n)
	for i, v := range f32in {
		put32(fb, i, math.Float32bits(v))
	}
	hb := make([]byte, 2*n)
	for i := range n {
		h := uint16(r.Uint32())
		if i < 4 {
			h = []uint16{0x0001, 0x8001, 0x7c00, 0x7bff}[i]
		}
		binary.LittleEndian.PutUint16(hb[2*i:], h)
	}
	bufs = append(bufs, fb, make([]byte, 2*n), hb, make([]byte, 4*n))
	forEachEnv(t, func(t *testing.T, env vulkan.Env) {
		res := runOnDevice(t, k, vulkan.EmitOptions{Env: env}, bufs, nil, [3]uint32{1, 1, 1})

		for j, x := range ns {
			w := x.s.Bits() / 8
			for i := range n {
				var raw uint32
				for b := range w {
					raw |= uint32(inputs[j][i*w+b]) << (8 * b)
				}
				var widened int32
				switch x.s {
				case ir.I8:
					widened = int32(int8(raw))
				case ir.U8:
					widened = int32(uint8(raw))
				case ir.I16:
					widened = int32(int16(raw))
				case ir.U16:
					widened = int32(uint16(raw))
				}
				if got := int32(le32(res[8], 4*i+j)); got != widened {
					t.Errorf("%s[%d] = %#x loads as %d, want %d", x.s, i, raw, got, widened)
				}
				want := uint32(widened*3) & (1<<(8*w) - 1)
				var got uint32
				for b := range w {
					got |= uint32(res[2*j+1][i*w+b]) << (8 * b)
				}
				if got != want {
					t.Errorf("%s[%d]: %d*3 stored as %#x, want %#x", x.s, i, widened, got, want)
				}
			}
		}
		for i, v := range f32in {
			want := toF16(v)
			got := binary.LittleEndian.Uint16(res[10][2*i:])
			if got != want && !(v != v && got&0x7c00 == 0x7c00 && got&0x3ff != 0) {
				t.Errorf("f16(%g) = %#04x, want %#04x (round to nearest even)", v, got, want)
			}
		}
		for i := range n {
			h := binary.LittleEndian.Uint16(hb[2*i:])
			want := math.Float32bits(fromF16(h))
			if got := le32(res[12], i); !sameBits(got, want, true) {
				t.Errorf("f32(f16 %#04x) = %#08x, want %#08x", h, got, want)
			}
		}
	})
}

// evalScalar runs a straight-line kernel of 32-bit scalar ops for one invocation, in plain Go:
// the reference the arith kernels are checked against. It defines each op as the IR does.
func evalScalar(t testing.TB, k *ir.Kernel, bufs [][]byte, gid uint32) {
	vals := map[*ir.Inst]uint32{}
	f := math.Float32frombits
	fb := math.Float32bits
	b2u := func(b bool) uint32 {
		if b {
			return 1
		}
		return 0
	}
	for _, in := range k.Body.Insts {
		a := func(i int) uint32 { return vals[in.Args[i]] }
		s := in.Type.Scalar
		if len(in.Args) > 0 && in.Op != ir.OpStore && in.Op != ir.OpLoad && in.Op != ir.OpSelect {
			s = in.Args[0].Type.Scalar
		}
		var r uint32
		switch in.Op {
		case ir.OpConst:
			r = uint32(in.Aux)
		case ir.OpBuiltin:
			r = gid
		case ir.OpLoad:
			r = le32(bufs[in.Ref], int(a(0)))
		case ir.OpStore:
			put32(bufs[in.Ref], int(a(0)), a(1))
			continue
		case ir.OpSelect:
			r = a(2)
			if a(0) != 0 {
				r = a(1)
			}
		default:
			x, y := a(0), uint32(0)
			if len(in.Args) > 1 {
				y = a(1)
			}
			switch s {
			case ir.F32:
				r = evalF32(t, in.Op, f(x), f(y), fb, b2u)
			case ir.I32:
				r = evalI32(t, in.Op, int32(x), int32(y), b2u)
			case ir.U32:
				r = evalU32(t, in.Op, x, y, b2u)
			default:
				t.Fatalf("evalScalar: %s on %s", in.Op, s)
			}
		}
		vals[in] = r
	}
}

func evalF32(t testing.TB, op ir.Op, x, y float32, fb func(float32) uint32, b2u func(bool) uint32) uint32 {
	switch op {
	case ir.OpNeg:
		return fb(-x)
	case ir.OpAbs:
		return fb(float32(math.Abs(float64(x))))
	case ir.OpSqrt:
		return fb(float32(math.Sqrt(float64(x))))
	case ir.OpFloor:
		return fb(float32(math.Floor(float64(x))))
	case ir.OpAdd:
		return fb(float32(x + y))
	case ir.OpSub:
		return fb(float32(x - y))
	case ir.OpMul:
		return fb(float32(x * y))
	case ir.OpDiv:
		return fb(float32(x / y))
	case ir.OpMin:
		if y < x {
			return fb(y)
		}
		return fb(x)
	case ir.OpMax:
		if x > y {
			return fb(x)
		}
		return fb(y)
	case ir.OpEq:
		return b2u(x == y)
	case ir.OpNe:
		return b2u(x != y)
	case ir.OpLt:
		return b2u(x < y)
	case ir.OpLe:
		return b2u(x <= y)
	case ir.OpGt:
		return b2u(x > y)
	case ir.OpGe:
		return b2u(x >= y)
	}
	t.Fatalf("evalF32: %s", op)
	return 0
}

func evalI32(t testing.TB, op ir.Op, x, y int32, b2u func(bool) uint32) uint32 {
	switch op {
	case ir.OpNeg:
		return uint32(-x)
	case ir.OpAbs:
		if x < 0 {
			return uint32(-x)
		}
		return uint32(x)
	case ir.OpNot:
		return uint32(^x)
	case ir.OpAdd:
		return uint32(x + y)
	case ir.OpSub:
		return uint32(x - y)
	case ir.OpMul:
		return uint32(x * y)
	case ir.OpDiv:
		return uint32(x / y)
	case ir.OpRem:
		return uint32(x % y)
	case ir.OpMin:
		return uint32(min(x, y))
	case ir.OpMax:
		return uint32(max(x, y))
	case ir.OpAnd:
		return uint32(x & y)
	case ir.OpOr:
		return uint32(x | y)
	case ir.OpXor:
		return uint32(x ^ y)
	case ir.OpShl:
		return uint32(x << (uint32(y) & 31))
	case ir.OpShr:
		return uint32(x >> (uint32(y) & 31))
	case ir.OpEq:
		return b2u(x == y)
	case ir.OpNe:
		return b2u(x != y)
	case ir.OpLt:
		return b2u(x < y)
	case ir.OpLe:
		return b2u(x <= y)
	case ir.OpGt:
		return b2u(x > y)
	case ir.OpGe:
		return b2u(x >= y)
	}
	t.Fatalf("evalI32: %s", op)
	return 0
}

func evalU32(t testing.TB, op ir.Op, x, y uint32, b2u func(bool) uint32) uint32 {
	switch op {
	case ir.OpNeg:
		return -x
	case ir.OpAbs:
		return x
	case ir.OpNot:
		return ^x
	case ir.OpAdd:
		return x + y
	case ir.OpSub:
		return x - y
	case ir.OpMul:
		return x * y
	case ir.OpDiv:
		return x / y
	case ir.OpRem:
		return x % y
	case ir.OpMin:
		return min(x, y)
	case ir.OpMax:
		return max(x, y)
	case ir.OpAnd:
		return x & y
	case ir.OpOr:
		return x | y
	case ir.OpXor:
		return x ^ y
	case ir.OpShl:
		return x << (y & 31)
	case ir.OpShr:
		return x >> (y & 31)
	case ir.OpEq:
		return b2u(x == y)
	case ir.OpNe:
		return b2u(x != y)
	case ir.OpLt:
		return b2u(x < y)
	case ir.OpLe:
		return b2u(x <= y)
	case ir.OpGt:
		return b2u(x > y)
	case ir.OpGe:
		return b2u(x >= y)
	}
	t.Fatalf("evalU32: %s", op)
	return 0
}

// TestExecArith runs the scalar arith kernels of the emit table and compares every output with
// the plain-Go evaluation of the same IR.
func TestExecArith(t *testing.T) {
	const n = 128
	for _, name := range []string{"arith_f32", "arith_i32", "arith_u32"} {
		t.Run(name, func(t *testing.T) {
			var c emitCase
			for _, x := range emitCases {
				if x.name == name {
					c = x
				}
			}
			k := buildCase(t, c)
			r := rand.New(rand.NewPCG(11, uint64(len(name))))
			in := make([]byte, 4*(n+1))
			for i := range n + 1 {
				var v uint32
				switch name {
				case "arith_f32":
					v = math.Float32bits(float32(r.NormFloat64() * 100))
					switch i % 16 {
					case 3:
						v = 0x7fc00000 // NaN
					case 5:
						v = 0xff800000 // -inf
					case 7:
						v = 0x80000000 // -0
					case 9:
						v = math.Float32bits(float32(int(r.IntN(20)) - 10)) // small integers: ties in min/max
					}
				case "arith_i32":
					v = uint32(int32(r.NormFloat64() * 1000))
					if i%5 == 0 {
						v = r.Uint32() | 1
					}
				default:
					v = uint32(r.IntN(5000)) + 1
					if i%5 == 0 {
						v = r.Uint32() | 1
					}
				}
				if name != "arith_f32" && (v == 0 || v == 0x80000000) {
					v = 3 // no division by zero or MinInt32 / -1 (undefined)
				}
				put32(in, i, v)
			}
			out := make([]byte, 4*64*n)
			res := runOnDevice(t, k, vulkan.EmitOptions{}, [][]byte{in, out}, nil, [3]uint32{n / 64, 1, 1})
			want := [][]byte{append([]byte(nil), in...), make([]byte, len(out))}
			for g := range uint32(n) {
				evalScalar(t, k, want, g)
			}
			var stores []*ir.Inst
			for _, x := range k.Body.Insts {
				if x.Op == ir.OpStore {
					stores = append(stores, x.Args[1])
				}
			}
			bad := 0
			for g := range n {
				for j, v := range stores {
					i := 64*g + j
					got, w := le32(res[1], i), le32(want[1], i)
					if !sameBits(got, w, v.Type.Scalar == ir.F32) {
						if bad++; bad <= 8 {
							t.Errorf("invocation %d, %s (output %d): got %#08x, want %#08x (x=%#08x y=%#08x)", g, v.Op, j, got, w, le32(in, g), le32(in, g+1))
						}
					}
				}
			}
		})
	}
}

// TestExecControlFlow runs kernels whose control flow is the point: nested ifs, loops with
// break and continue, returns inside loops and inside continuing blocks.
func TestExecControlFlow(t *testing.T) {
	const n = 64
	t.Run("nested_if", func(t *testing.T) {
		var c emitCase
		for _, x := range emitCases {
			if x.name == "cf_nested_if" {
				c = x
			}
		}
		k := buildCase(t, c)
		in := make([]byte, 4*n)
		for i := range n {
			put32(in, i, uint32(int32(i-32)))
		}
		res := runOnDevice(t, k, vulkan.EmitOptions{}, [][]byte{in, make([]byte, 4*n)}, nil, [3]uint32{1, 1, 1})
		for i := range n {
			x := int32(i - 32)
			var r int32
			if x < 0 {
				if x < -10 {
					r = 1
				} else {
					r = 2
				}
			} else {
				if x > 10 {
					r = 3
				}
				if x != 5 {
					r += 4
				}
			}
			if got := int32(le32(res[1], i)); got != r {
				t.Errorf("x=%d: got %d, want %d", x, got, r)
			}
		}
	})
	t.Run("loops", func(t *testing.T) {
		// s = sum over i < len(in) of: skip negatives, stop at the first value > 1000, each
		// value counted twice (j = 0, 2 of 0..2); then +5 from the do-while loop.
		var c emitCase
		for _, x := range emitCases {
			if x.name == "cf_loops" {
				c = x
			}
		}
		k := buildCase(t, c)
		vals := []int32{3, -4, 10, 7, -1, 2000, 50}
		in := make([]byte, 4*len(vals))
		for i, v := range vals {
			put32(in, i, uint32(v))
		}
		res := runOnDevice(t, k, vulkan.EmitOptions{}, [][]byte{in, make([]byte, 4*n)}, nil, [3]uint32{1, 1, 1})
		want := int32(2*(3+10+7) + 5)
		for i := range n {
			if got := int32(le32(res[1], i)); got != want {
				t.Fatalf("invocation %d: got %d, want %d", i, got, want)
			}
		}
	})
	t.Run("return_in_continuing", func(t *testing.T) {
		// i := 0; loop { if i > 100 { break } } continuing { i++; if i == g%7+1 { out[g] = 10*i;
		// return } }; out[g] = 999 -- and for odd g the return (of 10*target+1) comes from a loop
		// nested in the continuing block.
		kb := irtest.New("return_in_continuing", 64)
		out := kb.Buffer("out", u32, ir.ReadWrite)
		i := kb.Local("i", u32)
		j := kb.Local("j", u32)
		g := kb.GID()
		target := kb.Bin(ir.OpAdd, kb.Bin(ir.OpRem, g, kb.U32(7)), kb.U32(1))
		odd := kb.Bin(ir.OpEq, kb.Bin(ir.OpAnd, g, kb.U32(1)), kb.U32(1))
		kb.SetV(i, kb.U32(0))
		kb.Loop(func() {
			kb.If(kb.Bin(ir.OpGt, kb.GetV(i), kb.U32(100)), func() { kb.Break() }, nil)
		}, func() {
			kb.SetV(i, kb.Bin(ir.OpAdd, kb.GetV(i), kb.U32(1)))
			kb.If(odd, func() {
				// a loop inside the continuing block cannot break: it leaves by returning
				kb.SetV(j, kb.U32(0))
				kb.Loop(func() {
					kb.SetV(j, kb.Bin(ir.OpAdd, kb.GetV(j), kb.U32(1)))
					kb.If(kb.Bin(ir.OpEq, kb.GetV(j), target), func() {
						kb.St(out, g, kb.Bin(ir.OpAdd, kb.Bin(ir.OpMul, kb.GetV(j), kb.U32(10)), kb.U32(1)))
						kb.Return()
					}, nil)
				}, nil)
			}, func() {
				kb.If(kb.Bin(ir.OpEq, kb.GetV(i), target), func() {
					kb.St(out, g, kb.Bin(ir.OpMul, kb.GetV(i), kb.U32(10)))
					kb.Return()
				}, nil)
			})
			kb.St(out, g, kb.U32(555)) // overwritten before any return
		})
		kb.St(out, g, kb.U32(999))
		k := done(t, kb)
		res := runOnDevice(t, k, vulkan.EmitOptions{}, [][]byte{make([]byte, 4*n)}, nil, [3]uint32{1, 1, 1})
		for x := range uint32(n) {
			want := (x%7 + 1) * 10
			if x&1 == 1 {
				want++
			}
			if got := le32(res[0], int(x)); got != want {
				t.Errorf("invocation %d: got %d, want %d", x, got, want)
			}
		}
	})
}

// TestExecVectorSelect: a select of vec4 values on a scalar condition (before SPIR-V 1.4 the
// emitter splats the condition) picks whole vectors, in every environment.
func TestExecVectorSelect(t *testing.T) {
	const n = 64
	kb := irtest.New("vector_select", 64)
	a := kb.Buffer("a", vec(ir.U32, 4), ir.ReadOnly)
	b := kb.Buffer("b", vec(ir.U32, 4), ir.ReadOnly)
	out := kb.Buffer("out", vec(ir.U32, 4), ir.WriteOnly)
	g := kb.GID()
	odd := kb.Bin(ir.OpEq, kb.Bin(ir.OpAnd, g, kb.U32(1)), kb.U32(1))
	kb.St(out, g, kb.Op(ir.OpSelect, vec(ir.U32, 4), odd, kb.Ld(a, g), kb.Ld(b, g)))
	k := done(t, kb)
	av, bv := make([]uint32, 4*n), make([]uint32, 4*n)
	for i := range av {
		av[i], bv[i] = uint32(i)*3+1, 0x80000000|uint32(i)
	}
	forEachEnv(t, func(t *testing.T, env vulkan.Env) {
		res := runOnDevice(t, k, vulkan.EmitOptions{Env: env}, [][]byte{u32s(av...), u32s(bv...), make([]byte, 16*n)}, nil, [3]uint32{1, 1, 1})
		for i := range 4 * n {
			want := bv[i]
			if (i/4)%2 == 1 {
				want = av[i]
			}
			if got := le32(res[2], i); got != want {
				t.Errorf("lane %d of invocation %d: got %#x, want %#x", i%4, i/4, got, want)
			}
		}
	})
}

// TestExecConversionRoundTrip: u32 -> f32 -> u32 and i32 -> f32 -> i32 must round at the float
// step (24 significand bits). Undecorated, Mesa folds the round trip away (f2u(u2f(x)) -> x) and
// returns x itself; the emitter decorates conversions NoContraction, which keeps them exact.
func TestExecConversionRoundTrip(t *testing.T) {
	const n = 64
	in := make([]uint32, n)
	for i := range in {
		in[i] = 0x43dcbda5 + uint32(i)*0x01010101 // above 2^24: the float step rounds
	}
	kb := irtest.New("convert_round_trip", 64)
	bx := kb.Buffer("x", ir.TU32, ir.ReadOnly)
	bu := kb.Buffer("u", ir.TU32, ir.WriteOnly)
	bs := kb.Buffer("s", ir.TI32, ir.WriteOnly)
	g := kb.GID()
	x := kb.Ld(bx, g)
	kb.St(bu, g, kb.Op(ir.OpConvert, ir.TU32, kb.Op(ir.OpConvert, ir.TF32, x)))
	xs := kb.Op(ir.OpBitcast, ir.TI32, kb.Bin(ir.OpShr, x, kb.U32(1)))
	kb.St(bs, g, kb.Op(ir.OpConvert, ir.TI32, kb.Op(ir.OpConvert, ir.TF32, xs)))
	k := done(t, kb)
	for _, env := range vulkan.Envs {
		res := runOnDevice(t, k, vulkan.EmitOptions{Env: env}, [][]byte{u32s(in...), make([]byte, 4*n), make([]byte, 4*n)}, nil, [3]uint32{1, 1, 1})
		for i, x := range in {
			wantU := uint32(float32(x))
			wantS := int32(float32(int32(x >> 1)))
			if got := le32(res[1], i); got != wantU {
				t.Fatalf("%s: u32(f32(%#08x)) = %#08x, want %#08x", env, x, got, wantU)
			}
			if got := int32(le32(res[2], i)); got != wantS {
				t.Fatalf("%s: i32(f32(%d)) = %d, want %d", env, int32(x>>1), got, wantS)
			}
		}
	}
}
