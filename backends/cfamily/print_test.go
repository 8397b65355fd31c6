package cfamily_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

func dialects(t *testing.T) []*cfamily.Dialect {
	t.Helper()
	h, err := hip.DialectFor("gfx1100")
	if err != nil {
		t.Fatal(err)
	}
	return []*cfamily.Dialect{cuda.Dialect, h, metal.Dialect}
}

func lowerPrint(k *ir.Kernel, d *cfamily.Dialect) (string, error) {
	low, err := lower.Run(k, d.Caps)
	if err != nil {
		return "", err
	}
	return cfamily.Print(low, d)
}

func TestPrintErrors(t *testing.T) {
	b := irtest.New("reduce_left", 64)
	out := b.Buffer("out", ir.TF32, ir.WriteOnly)
	g := b.GID()
	r := b.Add(&ir.Inst{Op: ir.OpReduce, Type: ir.TF32, Aux: uint64(ir.ReduceSum), Args: []*ir.Inst{b.Conv(ir.TF32, g)}})
	b.St(out, g, r)
	reduce, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	b = irtest.New("dot", 64)
	out = b.Buffer("out", ir.TI32, ir.WriteOnly)
	g = b.GID()
	dot := b.Op(ir.OpDotI8x4, ir.TI32, g, g)
	b.St(out, g, dot)
	dotK, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	b = irtest.New("wide", 64)
	out = b.Buffer("out", ir.TF32, ir.WriteOnly)
	g = b.GID()
	wide := b.Conv(ir.TF64, b.Conv(ir.TF32, g))
	b.St(out, g, b.Conv(ir.TF32, wide))
	f64K, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dialects(t) {
		var ie *ir.Error
		_, err := cfamily.Print(reduce, d)
		if err == nil || !errors.As(err, &ie) || ie.Pos != r.Pos || !strings.Contains(err.Error(), "package lower") || !strings.Contains(err.Error(), reduce.Pos.String()) {
			t.Errorf("%s: unexpanded reduction: %v, want an error at %s naming package lower and the kernel's %s", d.Name, err, r.Pos, reduce.Pos)
		}
		_, err = cfamily.Print(dotK, d)
		if d.Dot == "" && (err == nil || !errors.As(err, &ie) || ie.Pos != dot.Pos) {
			t.Errorf("%s: packed dot without a spelling: %v, want an error at %s", d.Name, err, dot.Pos)
		}
		if d.Dot != "" && err != nil {
			t.Errorf("%s: packed dot: %v", d.Name, err)
		}
		_, err = cfamily.Print(f64K, d)
		if d.Family == cfamily.FamilyMetal && (err == nil || !errors.As(err, &ie) || ie.Pos != wide.Pos || !strings.Contains(err.Error(), "f64")) {
			t.Errorf("%s: f64: %v, want an error at %s", d.Name, err, wide.Pos)
		}
		if d.Family == cfamily.FamilyCUDA && err != nil {
			t.Errorf("%s: f64: %v", d.Name, err)
		}
		// Malformed and unverified kernels: errors, never a panic.
		bad := []*ir.Kernel{
			nil,
			{Name: "nobody", WorkgroupSize: [3]uint32{1, 1, 1}},
			{Name: "zero_wg", Body: &ir.Block{}},
			{Name: "bad_ref", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpLen, Type: ir.TU32, Ref: 3}}}},
			{Name: "bad_arg", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpNeg, Type: ir.TF32, Args: []*ir.Inst{{Op: ir.OpConst, Type: ir.TF32}}}}}},
			{Name: "break_outside", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpBreak}}}},
			{Name: "bad_op", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.Op(200)}}}},
			{Name: "nil_args", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{Insts: []*ir.Inst{{Op: ir.OpAdd, Type: ir.TF32, Args: []*ir.Inst{nil, nil}}}}},
			{Name: "float", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{}},
		}
		for _, k := range bad {
			if _, err := cfamily.Print(k, d); err == nil {
				t.Errorf("%s: kernel %v: no error", d.Name, k)
			}
		}
	}
	if _, err := cfamily.Print(reduce, nil); err == nil {
		t.Error("nil dialect: no error")
	}
}

// TestNames checks that every printed name is a valid identifier distinct from the language's
// words and from every other name, and that DSL names survive where they can.
func TestNames(t *testing.T) {
	var c irtest.Case
	for _, x := range irtest.Cases {
		if x.Name == "names_and_consts" {
			c = x
		}
	}
	k, err := c.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dialects(t) {
		src, err := lowerPrint(k, d)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"unsigned int* float_", "const unsigned int* threadIdx_", "unsigned int uloop0_first;", "int uos_div_i32;", "= 4294967295u;"}
		if d.Family == cfamily.FamilyMetal {
			want = []string{"device uint* float_ [[buffer(1)]]", "const device uint* threadIdx [[buffer(2)]]", "\tuint params_;", "threadgroup uint lane_[64];",
				"const uint gid_ = gid.x;", "params.params_", "uint uloop0_first;"}
		}
		for _, w := range want {
			if !strings.Contains(src, w) {
				t.Errorf("%s: missing %q in:\n%s", d.Name, w, src)
			}
		}
	}
	// Names that collide or are not identifiers, unlowered (the lowering folds most of them).
	raw, err := cfamily.Print(k, cuda.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"const float int_ = ", "const float a_b_c = ", "const float a_b_c_2 = ", "const float x = ", "const float v3 = "} {
		if strings.Count(raw, w) != 1 {
			t.Errorf("want exactly one %q in:\n%s", w, raw)
		}
	}
}

// TestRandomKernels prints random verified kernels for every dialect, lowered and as they are:
// never an error (except the documented ones) and never a panic. A few are compiled with the
// real toolchains.
func TestRandomKernels(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	compiled := 0
	for seed := int64(0); seed < int64(n); seed++ {
		k, err := irtest.Random(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, d := range dialects(t) {
			src, err := lowerPrint(k, d)
			if err != nil {
				t.Fatalf("seed %d %s: %v\n%s", seed, d.Name, err, k)
			}
			if _, err := cfamily.Print(k, d); err != nil && !strings.Contains(err.Error(), "dot_i8x4") {
				t.Fatalf("seed %d %s unlowered: %v\n%s", seed, d.Name, err, k)
			}
			if seed%25 != 0 {
				continue
			}
			compiled++
			switch d.Name {
			case "cuda":
				_, err = cuda.CompileClang(src, "sm_80")
			case "hip":
				_, err = hip.AssembleClang(src, "gfx1100")
			case "metal":
				_, err = metal.HostCheck(src)
			}
			if errors.Is(err, cfamily.ErrNoTool) {
				continue
			}
			if err != nil {
				t.Fatalf("seed %d %s: %v\n%s", seed, d.Name, err, cfamily.Numbered(src))
			}
		}
	}
	t.Logf("%d random kernels printed for %d dialects; %d texts compiled", n, len(dialects(t)), compiled)
}

func TestDeterministic(t *testing.T) {
	for seed := int64(1000); seed < 1010; seed++ {
		k, err := irtest.Random(seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dialects(t) {
			a, err1 := lowerPrint(k, d)
			b, err2 := lowerPrint(k, d)
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("seed %d %s: two prints differ (%v, %v)", seed, d.Name, err1, err2)
			}
		}
	}
}

// loopCase is a kernel whose loops or folds the printer must write a certain way.
type loopCase struct {
	name  string
	build func() (*ir.Kernel, error)
	// cuda and metal are lines (trimmed) the lowered kernel's text must hold; not are
	// substrings it must not hold, in every dialect.
	cuda, metal, not []string
}

func dslKernel(k *dsl.Kernel) func() (*ir.Kernel, error) { return k.Build }

var loopCases = []loopCase{
	{
		name: "for_u32",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("for_u32", 64)
			in := k.Buffer("in", dsl.U32, dsl.Read)
			out := k.Buffer("out", dsl.U32, dsl.Write)
			n := k.Param("n", dsl.U32)
			g := k.GlobalID(dsl.X)
			acc := k.Var("acc", g)
			k.For("i", 0, n, 1, func(i dsl.Value) { acc.Set(acc.Get().Xor(in.Load(i))) })
			out.Store(g, acc.Get())
			return k.Build()
		},
		// The counter is the For's variable, declared by the for; the body reads it by name.
		cuda:  []string{"for (unsigned int i = 0u; i < n; i += 1u) {", "acc = acc ^ in[i];"},
		metal: []string{"for (uint i = 0u; i < params.n; i += 1u) {", "acc = acc ^ in[i];"},
		not:   []string{"_first"},
	},
	{
		name: "for_i32_step_continue",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("for_i32_step_continue", 64)
			in := k.Buffer("in", dsl.I32, dsl.Read)
			out := k.Buffer("out", dsl.I32, dsl.Write)
			n := k.Param("n", dsl.I32)
			g := k.GlobalID(dsl.X)
			acc := k.Var("acc", k.I32(0))
			k.For("j", k.I32(-3), n, 3, func(j dsl.Value) {
				x := in.Load(j.Add(3))
				k.If(x.Lt(0), func() { k.Continue() })
				acc.Set(acc.Get().Add(x))
			})
			out.Store(g, acc.Get())
			return k.Build()
		},
		// Signed counters wrap through unsigned arithmetic, so no `+=` on an int; continue
		// goes to the update as the IR's continue goes to the continuing block.
		cuda:  []string{"for (int j = -3; j < n; j = (int)((unsigned int)j + (unsigned int)3)) {", "continue;"},
		metal: []string{"for (int j = -3; j < params.n; j = int(uint(j) + uint(3))) {", "continue;"},
		not:   []string{"_first"},
	},
	{
		name: "while_loop",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("while_loop", 64)
			out := k.Buffer("out", dsl.U32, dsl.Write)
			n := k.Param("n", dsl.U32)
			g := k.GlobalID(dsl.X)
			x := k.Var("x", g)
			steps := k.Var("steps", k.U32(0))
			k.While(func() dsl.Value { return x.Get().Gt(n) }, func() {
				x.Set(x.Get().Shr(1))
				steps.Set(steps.Get().Add(1))
			})
			out.Store(g, steps.Get())
			return k.Build()
		},
		cuda:  []string{"while (x > n) {", "x = x >> 1u;", "steps += 1u;"},
		metal: []string{"while (x > params.n) {"},
		not:   []string{"_first", "for ("},
	},
	{
		name: "float_break_not_inverted",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("float_break_not_inverted", 64)
			in := k.Buffer("in", dsl.F32, dsl.Read)
			out := k.Buffer("out", dsl.F32, dsl.Write)
			cnt := k.Buffer("cnt", dsl.U32, dsl.Write)
			g := k.GlobalID(dsl.X)
			x := k.Var("x", in.Load(g))
			lim := k.Param("lim", dsl.F32)
			n := k.Var("n", k.U32(0))
			k.Loop(func() {
				k.If(x.Get().Ge(lim), func() { k.Break() })
				x.Set(x.Get().Mul(2))
				n.Set(n.Get().Add(1))
				k.If(n.Get().Ge(20), func() { k.Break() })
			})
			out.Store(g, x.Get())
			cnt.Store(g, n.Get())
			return k.Build()
		},
		// !(x >= lim) is not x < lim when x is NaN: the negation stays.
		cuda: []string{"while (!(x >= lim)) {"},
		not:  []string{"x < lim"},
	},
	{
		name: "loop_without_condition",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("loop_without_condition", 64)
			out := k.Buffer("out", dsl.U32, dsl.Write)
			g := k.GlobalID(dsl.X)
			x := k.Var("x", g)
			k.Loop(func() {
				x.Set(x.Get().Add(7))
				k.If(x.Get().Rem(5).Eq(0), func() { k.Break() })
			})
			out.Store(g, x.Get())
			return k.Build()
		},
		cuda: []string{"for (;;) {", "x += 7u;"},
	},
	{
		name: "continuing_at_end_of_body",
		build: func() (*ir.Kernel, error) {
			b := irtest.New("continuing_at_end_of_body", 64)
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			i := b.Local("i", ir.TU32)
			s := b.Local("s", ir.TU32)
			g := b.GID()
			b.SetV(i, b.U32(0))
			b.SetV(s, g)
			b.Loop(func() {
				b.If(b.Bin(ir.OpGe, b.GetV(i), b.U32(10)), func() { b.Break() }, nil)
				b.SetV(s, b.Bin(ir.OpMul, b.GetV(s), b.U32(3)))
			}, func() {
				// Not one expression: an if. No continue reaches it, so it ends the body.
				b.If(b.Bin(ir.OpEq, b.Bin(ir.OpAnd, b.GetV(s), b.U32(1)), b.U32(0)), func() {
					b.SetV(s, b.Bin(ir.OpAdd, b.GetV(s), b.U32(1)))
				}, nil)
				b.SetV(i, b.Bin(ir.OpAdd, b.GetV(i), b.U32(1)))
			})
			b.St(out, g, b.GetV(s))
			return b.Done()
		},
		cuda: []string{"while (i < 10u) {", "s = s * 3u;", "if ((s & 1u) == 0u) {", "i += 1u;"},
		not:  []string{"_first"},
	},
	{
		name: "general_form",
		build: func() (*ir.Kernel, error) {
			b := irtest.New("general_form", 64)
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			i := b.Local("i", ir.TU32)
			s := b.Local("s", ir.TU32)
			g := b.GID()
			b.SetV(i, b.U32(0))
			b.SetV(s, g)
			b.Loop(func() {
				b.If(b.Bin(ir.OpGe, b.GetV(i), b.U32(10)), func() { b.Break() }, nil)
				b.If(b.Bin(ir.OpEq, b.Bin(ir.OpAnd, b.GetV(i), b.U32(3)), b.U32(1)), func() { b.Continue() }, nil)
				b.SetV(s, b.Bin(ir.OpMul, b.GetV(s), b.U32(3)))
			}, func() {
				// Not one expression, and a continue reaches it: the general form.
				b.If(b.Bin(ir.OpEq, b.Bin(ir.OpAnd, b.GetV(s), b.U32(1)), b.U32(0)), func() {
					b.SetV(s, b.Bin(ir.OpAdd, b.GetV(s), b.U32(1)))
				}, nil)
				b.SetV(i, b.Bin(ir.OpAdd, b.GetV(i), b.U32(1)))
			})
			b.St(out, g, b.GetV(s))
			return b.Done()
		},
		cuda: []string{"for (bool loop0_first = true;; loop0_first = false) {", "if (!loop0_first) {", "continue;"},
	},
	{
		name: "loads_stay_before_stores",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("loads_stay_before_stores", 64)
			a := k.Buffer("a", dsl.U32, dsl.ReadWrite)
			out := k.Buffer("out", dsl.U32, dsl.Write)
			sh := k.Shared("sh", dsl.U32, 64)
			g := k.GlobalID(dsl.X)
			l := k.LocalIndex()
			old := a.Load(g)
			a.Store(g, g.Mul(3))
			sh.Store(l, old.Add(1))
			k.Barrier()
			v := sh.Load(l.Xor(1))
			k.Barrier()
			sh.Store(l.Xor(1), 0)
			out.Store(g, old.Add(v))
			return k.Build()
		},
		// The loads run before the store and the barrier that follow them, as in the IR.
		cuda: []string{"const unsigned int v5 = a[v0];", "a[v0] = v0 * 3u;", "const unsigned int v9 = sh[v8];"},
		not:  []string{"a[v0] + ", "v5 + sh["},
	},
	{
		name: "float_ops_unnested_with_c_operators",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("float_ops_unnested_with_c_operators", 64)
			x := k.Buffer("x", dsl.F32, dsl.Read)
			out := k.Buffer("out", dsl.F32, dsl.Write)
			c := k.Param("c", dsl.F32)
			g := k.GlobalID(dsl.X)
			out.Store(g, x.Load(g).Mul(c).Add(c).Sub(x.Load(g.Add(1))))
			return k.Build()
		},
		// CUDA's explicitly rounded calls nest; MSL keeps one statement per float operation,
		// so no a*b+c forms within one expression.
		cuda:  []string{"const float v5 = __fadd_rn(__fmul_rn(x[v1], c), c);", "out[v1] = __fsub_rn(v5, x[v1 + 1u]);"},
		metal: []string{"const float v4 = x[v1] * params.c;", "const float v5 = v4 + params.c;", "out[v1] = v5 - x[v1 + 1u];"},
	},
	{
		name: "no_loads_into_select_arms",
		build: func() (*ir.Kernel, error) {
			k := dsl.New("no_loads_into_select_arms", 64)
			x := k.Buffer("x", dsl.U32, dsl.Read)
			out := k.Buffer("out", dsl.U32, dsl.Write)
			g := k.GlobalID(dsl.X)
			out.Store(g, k.Select(g.Lt(9), x.Load(g), g.Add(5)))
			return k.Build()
		},
		cuda: []string{"const unsigned int v4 = x[v0];", "out[v0] = (v0 < 9u) ? v4 : (v0 + 5u);"},
	},
}

// TestLoopsAndFolds checks how the printer writes loops and single-use values: each case's
// lines appear in the CUDA and MSL texts (its Go reading: a counted For as a for statement, a
// While as while, a float condition never inverted, loads never moved past stores or barriers).
// TestPrintedTextRuns runs the same kernels.
func TestLoopsAndFolds(t *testing.T) {
	for _, c := range loopCases {
		t.Run(c.name, func(t *testing.T) {
			k, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dialects(t) {
				src, err := lowerPrint(k, d)
				if err != nil {
					t.Fatalf("%s: %v", d.Name, err)
				}
				want := c.cuda
				if d.Family == cfamily.FamilyMetal {
					want = c.metal
				}
				if d.Name == "hip" {
					want = nil // HIP's text is CUDA's with other float spellings: the not list only
				}
				lines := map[string]bool{}
				for _, l := range strings.Split(src, "\n") {
					lines[strings.TrimSpace(l)] = true
				}
				for _, w := range want {
					if !lines[w] {
						t.Errorf("%s: no line %q in:\n%s", d.Name, w, cfamily.Numbered(src))
					}
				}
				for _, w := range c.not {
					if strings.Contains(src, w) {
						t.Errorf("%s: %q in:\n%s", d.Name, w, cfamily.Numbered(src))
					}
				}
			}
		})
	}
}

// racyOutputs lists the hand-built kernels whose outputs depend on the order invocations run
// in (several write one element, atomics return old values): only the listed buffers are
// compared.
var racyOutputs = map[string][]string{
	"atomics":                 {},
	"cf_return_in_continuing": {},
	"names_and_consts":        {"out"},
	"memory_spaces":           {"ro", "wo", "rw", "v4"},
}

// smallInputs lists the hand-built kernels whose loops run as many times as an input value:
// their inputs are small integers.
var smallInputs = map[string]bool{"cf_terminating_branches": true}

// fillBytes returns n random elements of type t, special float values among them (small
// integers only when small is set).
func fillBytes(r *rand.Rand, t ir.Type, n int, small bool) []byte {
	b := make([]byte, n*t.Stride())
	specials := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 1, 0x00800000, 0x7f7fffff, 0x4f800000, 0xbf800000, 0x3f000000, 0x4b000000}
	for i := 0; i < len(b); i += 4 {
		var v uint32
		switch k := r.IntN(4); {
		case small:
			v = uint32(int32(r.IntN(41) - 20))
		case k == 0:
			v = specials[r.IntN(len(specials))]
		case k == 1:
			v = math.Float32bits(float32(r.NormFloat64() * 1e3))
		case k == 2:
			v = uint32(int32(r.IntN(41) - 20))
		default:
			v = r.Uint32()
		}
		var w [4]byte
		binary.LittleEndian.PutUint32(w[:], v)
		copy(b[i:], w[:])
	}
	return b
}

// sameElems returns the first element where a and b differ (-1: none); f32 NaNs are equal.
func sameElems(a, b []byte, t ir.Type) int {
	s := t.Stride()
	for e := 0; e*s < len(a); e++ {
		x, y := a[e*s:min(len(a), e*s+s)], b[e*s:min(len(b), e*s+s)]
		if string(x) == string(y) {
			continue
		}
		if t.Scalar == ir.F32 {
			same := true
			for i := 0; i+4 <= len(x); i += 4 {
				u, v := math.Float32frombits(binary.LittleEndian.Uint32(x[i:])), math.Float32frombits(binary.LittleEndian.Uint32(y[i:]))
				same = same && (u == v || (u != u && v != v))
			}
			if same {
				continue
			}
		}
		return e
	}
	return -1
}

// notJudgedByVulkan lists the hand-built kernels whose outputs the Vulkan device and the host
// emulation do not agree on for reasons outside the printer (the printer's first, plainest
// output disagrees the same way): integer division by zero, which the IR leaves undefined and
// the printed helpers define, and stores of several invocations to one element, which the
// emulation and the device order differently. TestPrintedTextRuns still runs them against the
// plainest output.
var notJudgedByVulkan = map[string]bool{
	"arith_i32": true, "arith_u32": true, "arith_vec2_i32": true, "arith_vec3_u32": true,
	"arith_vec4_i32": true, "arith_vec4_u32": true, "arith_f16": true, "f64": true,
	"convert_bitcast": true, "bool_ops": true, "narrow_storage": true, "names_and_consts": true,
}

// TestPrintedTextRuns is the printer's meaning check. The hand-built kernels of internal/irtest
// (every op, memory space and control-flow shape) and the loop and fold cases above are lowered
// once and printed as CUDA twice: as the printer writes them, and with the plan off (every value
// declared, every loop in the general form: the printer's plainest output). Both texts run by
// host emulation (package host: the text compiled as C++ and run on the CPU) on the same random
// inputs and must write the same bytes; where the result is defined, the SPIR-V of package
// vulkan run on the Vulkan device (lavapipe here) must write them too (any f32 NaN equals any
// NaN). The SPIR-V emitter shares no code with the printer, so a fold or a loop form that
// changed what a kernel computes shows up as a difference.
func TestPrintedTextRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two C++ programs per kernel")
	}
	if err := vulkan.Available(); err != nil {
		t.Skipf("Vulkan unavailable: %v", err)
	}
	dev, err := vulkan.Open(vulkan.Options{})
	if err != nil {
		t.Skipf("Vulkan unavailable: %v", err)
	}
	defer dev.Close()
	caps := dev.Caps()
	sg := caps.SubgroupSize
	if sg <= 1 {
		t.Skipf("the device has no subgroup size to pin (%+v)", caps)
	}
	opts := host.Options{SubgroupSize: sg, Timeout: time.Minute}
	if err := host.Available(opts); err != nil {
		t.Skip(err)
	}
	type kernel struct {
		name  string
		f64   bool
		build func() (*ir.Kernel, error)
	}
	var ks []kernel
	for _, c := range irtest.Cases {
		if c.Name == "cf_endless" {
			continue // never ends
		}
		ks = append(ks, kernel{c.Name, c.F64, c.Kernel})
	}
	for _, c := range loopCases {
		ks = append(ks, kernel{c.name, false, c.build})
	}
	d := *cuda.Dialect
	d.Caps = caps
	for _, kc := range ks {
		t.Run(kc.name, func(t *testing.T) {
			k, err := kc.build()
			if err != nil {
				t.Fatal(err)
			}
			low, err := lower.Run(k, caps)
			if err != nil {
				t.Fatal(err)
			}
			src, err := cfamily.Print(low, &d)
			if err != nil {
				t.Fatal(err)
			}
			restore := cfamily.SetPlanOff()
			plain, err := cfamily.Print(low, &d)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			if plain == src {
				t.Logf("the plan changes nothing in %s", kc.name)
			}
			r := rand.New(rand.NewPCG(11, uint64(len(kc.name))))
			var bufs [][]byte
			for _, b := range low.Buffers {
				bufs = append(bufs, fillBytes(r, b.Elem, 8192, smallInputs[kc.name]))
			}
			params := make([]uint32, len(low.Params))
			for i := range params {
				params[i] = uint32(r.IntN(7) + 12)
				if low.Params[i].Type == ir.TF32 {
					params[i] = math.Float32bits(float32(r.IntN(7)) - 2.5)
				}
			}
			groups := [3]uint32{2, 1, 1}
			args := params // the printed text takes the lengths the kernel reads as parameters
			lens := make([]bool, len(low.Buffers))
			ir.Walk(low.Body, func(in *ir.Inst) bool {
				if in.Op == ir.OpLen {
					lens[in.Ref] = true
				}
				return true
			})
			for i, read := range lens {
				if read {
					args = append(slices.Clip(args), uint32(len(bufs[i])/low.Buffers[i].Elem.Stride()))
				}
			}
			got, err := host.Run(src, host.CUDA, low.Name, bufs, args, groups, low.WorkgroupSize, opts)
			if err != nil {
				t.Fatalf("host: %v\n%s", err, cfamily.Numbered(src))
			}
			base, err := host.Run(plain, host.CUDA, low.Name, bufs, args, groups, low.WorkgroupSize, opts)
			if err != nil {
				t.Fatalf("host, plan off: %v\n%s", err, cfamily.Numbered(plain))
			}
			for i, b := range low.Buffers {
				if e := sameElems(got[i], base[i], ir.TU32); e >= 0 {
					t.Errorf("buffer %s word %d: printed text %x, plan off %x\n%s\nplan off:\n%s", b.Name, e, got[i][4*e:min(len(got[i]), 4*e+4)], base[i][4*e:min(len(base[i]), 4*e+4)], cfamily.Numbered(src), cfamily.Numbered(plain))
				}
			}
			if notJudgedByVulkan[kc.name] {
				return
			}
			if kc.f64 && !dev.Info().Features.Float64 {
				t.Log("the device has no f64")
				return
			}
			want := runVulkan(t, dev, low, sg, bufs, params, groups)
			only, racy := racyOutputs[kc.name]
			for i, b := range low.Buffers {
				if racy && !slices.Contains(only, b.Name) {
					continue
				}
				if e := sameElems(got[i], want[i], b.Elem); e >= 0 {
					s := b.Elem.Stride()
					t.Errorf("buffer %s element %d: printed text %x, SPIR-V %x\n%s", b.Name, e, got[i][e*s:min(len(got[i]), e*s+s)], want[i][e*s:min(len(want[i]), e*s+s)], cfamily.Numbered(src))
				}
			}
		})
	}
}

// runVulkan runs the lowered kernel low on the device and returns every buffer after.
func runVulkan(t *testing.T, d *vulkan.Device, low *ir.Kernel, sg int, bufs [][]byte, params []uint32, groups [3]uint32) [][]byte {
	t.Helper()
	m, err := vulkan.Emit(low, vulkan.EmitOptions{SubgroupSize: uint32(sg)})
	if err != nil {
		t.Fatalf("vulkan emit: %v", err)
	}
	p, err := d.Pipeline(m)
	if err != nil {
		t.Skipf("the device cannot run %s: %v", low.Name, err)
	}
	var bs []*vulkan.Buffer
	for _, data := range bufs {
		b, err := d.NewBuffer(max(len(data), 4))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		if err := b.Write(0, data); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	push := make([]byte, 4*len(params))
	for i, v := range params {
		binary.LittleEndian.PutUint32(push[4*i:], v)
	}
	if err := d.Run(p, bs, push, groups); err != nil {
		t.Fatalf("vulkan run: %v", err)
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
