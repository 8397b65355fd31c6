package cfamily_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/metal"
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
