package dsl_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
)

// line returns the line of its caller, so tests can name the line a mistake is made on.
func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}

func wantErrAt(t *testing.T, err error, wantLine int, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Build succeeded, want an error containing %q at line %d", substr, wantLine)
	}
	var e *ir.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *ir.Error", err)
	}
	if filepath.Base(e.Pos.File) != "dsl_test.go" || e.Pos.Line != wantLine {
		t.Errorf("error at %s, want dsl_test.go:%d (%v)", e.Pos, wantLine, err)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Errorf("error %q does not mention %q", err, substr)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("dsl_test.go:%d", wantLine)) {
		t.Errorf("error text %q does not name dsl_test.go:%d", err, wantLine)
	}
}

func TestTypeMismatchNamesLine(t *testing.T) {
	k := dsl.New("bad", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	i := k.GlobalID(dsl.X)
	v := x.Load(i)
	bad := line() + 1
	_ = v.Add(i) // f32 + u32
	_, err := k.Build()
	wantErrAt(t, err, bad, "mismatched types f32 and u32")
}

func TestStoreToReadOnly(t *testing.T) {
	k := dsl.New("ro", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	bad := line() + 1
	x.Store(k.GlobalID(dsl.X), 1.0)
	_, err := k.Build()
	wantErrAt(t, err, bad, "read-only buffer x")
}

func TestSharedOverLimit(t *testing.T) {
	k := dsl.New("big", 64)
	k.Shared("a", dsl.F32, 4096)
	bad := line() + 1
	k.Shared("b", dsl.F32, 4096) // 2 x 16 KiB: exactly the 32 KiB limit
	if _, err := k.Build(); err != nil {
		t.Fatalf("32 KiB should fit: %v", err)
	}
	k.Shared("c", dsl.F32, 1)
	_, err := k.Build()
	wantErrAt(t, err, bad+4, "over the limit")
}

func TestBarrierUnderDivergentControl(t *testing.T) {
	k := dsl.New("div", 64)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	i := k.LocalID(dsl.X)
	k.If(i.Lt(32), func() {
		k.Barrier()
	})
	wantLine := line() - 2
	out.Store(i, i)
	_, err := k.Build()
	wantErrAt(t, err, wantLine, "not reached by every invocation")
}

func TestBarrierAfterDivergentReturn(t *testing.T) {
	k := dsl.New("ret", 64)
	out := k.Buffer("out", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Ge(n), func() { k.Return() })
	bad := line() + 1
	s := k.ReduceSum(k.F32(1))
	out.Store(i, s)
	_, err := k.Build()
	wantErrAt(t, err, bad, "not reached by every invocation")
}

func TestUniformBarrierIsFine(t *testing.T) {
	k := dsl.New("ok", 64)
	out := k.Buffer("out", dsl.U32, dsl.ReadWrite)
	n := k.Param("n", dsl.U32)
	sh := k.Shared("sh", dsl.U32, 64)
	k.For("j", 0, n, 1, func(j dsl.Value) {
		sh.Store(k.LocalIndex(), j)
		k.Barrier()
		out.Store(k.GlobalID(dsl.X), sh.Load(0))
	})
	k.If(n.Gt(3), func() { k.Barrier() })
	if _, err := k.Build(); err != nil {
		t.Fatal(err)
	}
}

func TestBarrierInLoopWithDivergentBreak(t *testing.T) {
	k := dsl.New("brk", 64)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	i := k.LocalIndex()
	k.Loop(func() {
		k.If(i.Gt(5), func() { k.Break() })
		k.Barrier()
	})
	wantLine := line() - 2
	out.Store(i, i)
	_, err := k.Build()
	wantErrAt(t, err, wantLine, "not reached")
}

func TestMisuse(t *testing.T) {
	cases := []struct {
		name  string
		build func(k *dsl.Kernel) int
		want  string
	}{
		{"break outside loop", func(k *dsl.Kernel) int { l := line(); k.Break(); return l }, "outside a loop"},
		{"const out of range", func(k *dsl.Kernel) int { l := line(); k.GlobalID(dsl.X).Add(-1); return l }, "cannot use -1"},
		{"fraction to int", func(k *dsl.Kernel) int { l := line(); k.I32(3).Mul(1.5); return l }, "cannot use 1.5"},
		{"if on int", func(k *dsl.Kernel) int { l := line(); k.If(k.U32(1), func() {}); return l }, "want bool"},
		{"atomic max on f32", func(k *dsl.Kernel) int {
			b := k.Buffer("b", dsl.F32, dsl.ReadWrite)
			l := line() + 1
			b.AtomicMax(0, 1.0)
			return l
		}, "atomics need i32 or u32 elements (AtomicAdd also f32)"},
		{"load write-only", func(k *dsl.Kernel) int {
			b := k.Buffer("b", dsl.F32, dsl.Write)
			l := line() + 1
			b.Load(0)
			return l
		}, "write-only"},
		{"sqrt of int", func(k *dsl.Kernel) int { l := line(); k.U32(4).Sqrt(); return l }, "needs a float"},
		{"param type", func(k *dsl.Kernel) int { l := line(); k.Param("p", dsl.F16); return l }, "want f32, i32 or u32"},
		{"dot types", func(k *dsl.Kernel) int { l := line(); k.DotI8x4(k.I32(1), k.U32(1)); return l }, "packed i8x4"},
		{"shuffle f16", func(k *dsl.Kernel) int { l := line(); k.Const(dsl.F16, 1).ShuffleXor(1); return l }, "32-bit scalar"},
		{"var type", func(k *dsl.Kernel) int {
			v := k.Var("v", 0.0)
			l := line() + 1
			v.Set(k.U32(3))
			return l
		}, "assigning u32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := dsl.New("misuse", 32)
			l := c.build(k)
			_, err := k.Build()
			wantErrAt(t, err, l, c.want)
		})
	}
}

func TestSpecializationBySchedule(t *testing.T) {
	build := func(wg int) *ir.Kernel {
		k := dsl.New("sum", wg)
		x := k.Buffer("x", dsl.F32, dsl.Read)
		out := k.Buffer("out", dsl.F32, dsl.Write)
		acc := k.Var("acc", 0.0)
		k.For("j", k.LocalIndex(), 1024, wg, func(j dsl.Value) { acc.Set(acc.Get().Add(x.Load(j))) })
		out.Store(0, k.ReduceSum(acc.Get()))
		return k.MustBuild()
	}
	a, b := build(64), build(128)
	if a.WorkgroupSize[0] != 64 || b.WorkgroupSize[0] != 128 {
		t.Fatalf("workgroup sizes %v %v", a.WorkgroupSize, b.WorkgroupSize)
	}
	if !strings.Contains(a.String(), "const 64") || !strings.Contains(b.String(), "const 128") {
		t.Errorf("schedule constant not specialized:\n%s\n%s", a, b)
	}
}

// TestNoPanics feeds the builder nil closures, zero values and values of another kernel: each
// is an error (or ignored), never a panic.
func TestNoPanics(t *testing.T) {
	other := dsl.New("other", 1)
	ov := other.F32(1)
	k := dsl.New("k", 8)
	var zero dsl.Value
	var za dsl.Array
	var zv dsl.Var
	k.If(k.Const(dsl.Bool, true), nil).Else(nil)
	k.For("i", 0, 4, 1, nil)
	k.While(nil, nil)
	k.Loop(nil)
	_ = zero.Add(1)
	_ = za.Load(0)
	za.Store(0, 1)
	_ = zv.Get()
	zv.Set(1)
	_ = k.F32(1).Add(ov)
	_ = k.F32(1).Add(zero)
	_ = k.Vec(k.F32(1))
	_ = k.Select(zero, 1, 2)
	_ = k.ReduceSum(zero)
	_ = k.DotI8x4(zero, zero)
	if _, err := k.Build(); err == nil {
		t.Fatal("misuse accepted")
	}
	if _, err := dsl.New("", 0).Build(); err == nil {
		t.Fatal("empty kernel name and zero workgroup accepted")
	}
}
