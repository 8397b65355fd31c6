package lower_test

import (
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// TestCheckedSaxpy instruments saxpy: three checked accesses (x and y loaded, y stored), each
// naming saxpy.go's line, one more binding, the input untouched, and for every target the
// checked lowering emits valid SPIR-V (and lowering it again is harmless).
func TestCheckedSaxpy(t *testing.T) {
	k := saxpy.Saxpy(64).MustBuild()
	before := k.String()
	ck, d, err := lower.RunChecked(k, lower.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	if k.String() != before {
		t.Fatal("RunChecked modified its input kernel")
	}
	if len(ck.Buffers) != len(k.Buffers)+1 || d.Binding != len(k.Buffers) || ck.Buffers[d.Binding].Name != "__oob" || d.Name != "__oob" {
		t.Fatalf("report binding %d %q; buffers %d -> %d", d.Binding, d.Name, len(k.Buffers), len(ck.Buffers))
	}
	var got []string
	for i, s := range d.Sites {
		if s.ID != uint32(i+1) {
			t.Errorf("site %d has id %d", i, s.ID)
		}
		if !strings.HasPrefix(lower.ShortPos(s.Pos), "saxpy/saxpy.go:") {
			t.Errorf("site %d at %s, want saxpy/saxpy.go", s.ID, lower.ShortPos(s.Pos))
		}
		got = append(got, s.Access+" "+s.Buffer)
	}
	if strings.Join(got, ", ") != "load x, load y, store y" {
		t.Errorf("sites: %s", strings.Join(got, ", "))
	}
	if n := count(ck, ir.OpLen); n != 3 {
		t.Errorf("%d len instructions, want 3", n)
	}
	for _, c := range lowerTargets {
		l, _, err := lower.RunChecked(k, c)
		if err != nil {
			t.Fatalf("caps %+v: %v", c, err)
		}
		again, err := lower.Run(l, c)
		if err != nil {
			t.Fatalf("caps %+v: lowering the checked kernel again: %v", c, err)
		}
		for _, x := range []*ir.Kernel{l, again} {
			m, err := vulkan.Emit(x, vulkan.EmitOptions{SubgroupSize: uint32(c.SubgroupSize)})
			if err != nil {
				t.Fatalf("caps %+v: emit: %v", c, err)
			}
			spirvVal(t, m.Words, x)
			if len(m.Bindings) != 3 || m.Bindings[2].ReadOnly {
				t.Errorf("bindings %+v", m.Bindings)
			}
		}
	}
}

// TestCheckedDeadLoad: a load whose value is unused is not made (the lowering drops it), so
// the checked kernel does not check it either: RunChecked checks the production kernel's
// accesses, no more.
func TestCheckedDeadLoad(t *testing.T) {
	k := dsl.New("dead", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	_ = x.Load(i.Add(1000)) // unused
	y.Store(i, x.Load(i))
	_, d, err := lower.RunChecked(k.MustBuild(), lower.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range d.Sites {
		got = append(got, s.Access+" "+s.Buffer)
	}
	if strings.Join(got, ", ") != "load x, store y" {
		t.Errorf("sites: %s", strings.Join(got, ", "))
	}
}

// TestCheckedDefaultUnchanged: lowering without Checked gives the same IR as before (the golden
// files hold it); lowering the checked kernel gives other IR, of course.
func TestCheckedDefaultUnchanged(t *testing.T) {
	k := saxpy.Saxpy(64).MustBuild()
	plain, err := lower.Run(k, lower.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	ck, _, err := lower.Checked(k)
	if err != nil {
		t.Fatal(err)
	}
	again, err := lower.Run(k, lower.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.String() != again.String() {
		t.Fatal("Checked changed what Run makes of the kernel")
	}
	cl, err := lower.Run(ck, lower.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	if cl.String() == plain.String() {
		t.Fatal("the checked kernel lowers to the unchecked one")
	}
}

// TestCheckedGuard: an access under `if i < b.Len()` needs no check, one under a guard on
// another buffer or a parameter does; i32 indices are checked as u32 and reported signed.
func TestCheckedGuard(t *testing.T) {
	k := dsl.New("guarded", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.ReadWrite)
	c := k.Buffer("c", dsl.I32, dsl.ReadWrite)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(x.Len()).And(y.Len().Gt(i)), func() {
		y.Store(i, x.Load(i)) // proven
	})
	k.If(i.Ge(x.Len()), func() {}).Else(func() {
		_ = x.Load(i) // proven (else of >=)
	})
	k.If(i.Lt(n), func() {
		y.Store(i, x.Load(i)) // checked twice
	})
	k.If(i.Lt(x.Len()), func() {
		y.Store(i, k.F32(0)) // checked: the guard is on x
	})
	c.AtomicAdd(i.I32().Sub(1), 1) // checked, signed
	_, d, err := lower.RunChecked(k.MustBuild(), lower.Caps{SubgroupSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range d.Sites {
		got = append(got, s.Access+" "+s.Buffer)
	}
	if want := "load x, store y, store y, atomic add c"; strings.Join(got, ", ") != want {
		t.Errorf("sites: %s, want %s", strings.Join(got, ", "), want)
	}
	if len(d.Sites) == 4 && (!d.Sites[3].Signed || d.Sites[0].Signed) {
		t.Errorf("signedness: %+v", d.Sites)
	}
}

// TestViolationDecode decodes report buffers.
func TestViolationDecode(t *testing.T) {
	d := &lower.Diagnostics{Kernel: "k", Binding: 2, Name: "__oob", Sites: []lower.Site{
		{ID: 1, Pos: ir.Pos{File: "/src/kernels/ops_norm.go", Line: 57}, Buffer: "y", Access: "store"},
		{ID: 2, Pos: ir.Pos{File: "/src/kernels/ops_norm.go", Line: 60}, Buffer: "x", Access: "load", Signed: true},
	}}
	words := func(w ...uint32) []byte {
		var b []byte
		for _, x := range w {
			b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		}
		return b
	}
	if v, err := d.Violation(words(0, 0, 0, 0)); v != nil || err != nil {
		t.Errorf("clean report: %v, %v", v, err)
	}
	v, err := d.Violation(words(1, 1, 4096, 4096))
	if err != nil || v == nil {
		t.Fatalf("%v, %v", v, err)
	}
	if got, want := v.Error(), "kernels/ops_norm.go:57: store y[4096] outside its 4096 elements"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	v, _ = d.Violation(words(5, 2, 0xffffffff, 10))
	if got, want := v.Error(), "kernels/ops_norm.go:60: load x[-1] outside its 10 elements (and 4 more out-of-bounds accesses)"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if _, err := d.Violation(words(1, 3, 0, 0)); err == nil {
		t.Error("a report naming a site the table lacks decoded")
	}
	if _, err := d.Violation(nil); err == nil {
		t.Error("a short report decoded")
	}
}

// TestCheckedName: a kernel that has a buffer called __oob gets another report name.
func TestCheckedName(t *testing.T) {
	k := dsl.New("named", 1)
	b := k.Buffer("__oob", dsl.U32, dsl.ReadWrite)
	b.Store(0, k.U32(1))
	ck, d, err := lower.Checked(k.MustBuild())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "__oob_2" || ck.Buffers[d.Binding].Name != "__oob_2" {
		t.Errorf("report named %q", d.Name)
	}
}

// TestCheckedFuzz instruments the fuzz generator's kernels: each still lowers for every target
// and emits SPIR-V that spirv-val accepts, and prints as CUDA.
func TestCheckedFuzz(t *testing.T) {
	seeds := [][]byte{{1, 2, 3, 4, 5, 6, 7, 8}, {3, 5, 13, 0, 1, 14, 15, 2, 0, 0, 16, 3, 1, 9, 0}, {5, 6, 12, 3, 11, 1, 2, 19, 0, 1, 2, 3, 1, 17, 4, 5, 10, 1, 1, 8, 0},
		{4, 9, 15, 1, 2, 6, 16, 2, 2, 18, 0, 13, 0, 0, 7, 1, 2}}
	for i := 0; i < 40; i++ {
		s := make([]byte, 24)
		for j := range s {
			s[j] = byte((i*131 + j*29 + i*j*7) % 251)
		}
		seeds = append(seeds, s)
	}
	built := 0
	for _, s := range seeds {
		k, err := genKernel(s).Build()
		if err != nil {
			continue
		}
		built++
		for _, c := range lowerTargets {
			if narrowSubgroups(t, k, c) {
				continue
			}
			l, _, err := lower.RunChecked(k, c)
			if err != nil {
				t.Fatalf("seed %v caps %+v: %v\n%s", s, c, err, k)
			}
			m, err := vulkan.Emit(l, vulkan.EmitOptions{SubgroupSize: uint32(c.SubgroupSize)})
			if err != nil {
				t.Fatalf("seed %v caps %+v: emit: %v\n%s", s, c, err, l)
			}
			spirvVal(t, m.Words, l)
		}
		l, _, err := lower.RunChecked(k, cuda.Caps)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfamily.Print(l, cuda.Dialect); err != nil {
			t.Fatalf("seed %v: CUDA: %v", s, err)
		}
	}
	if built == 0 {
		t.Fatal("no seed builds")
	}
}

// TestCheckedHalf: a checked f16 load holds its value in an f32 variable, so the checked kernel
// of a target with f16 storage only (no f16 arithmetic) has no f16 variable or constant; the
// SPIR-V validates for every target.
func TestCheckedHalf(t *testing.T) {
	k := dsl.New("half", 64)
	x := k.Buffer("x", dsl.F16, dsl.Read)
	y := k.Buffer("y", dsl.F16, dsl.Write)
	z := k.Buffer("z", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	v := x.Load(i)
	y.Store(i, v.Add(v))
	z.Store(i, x.Load(i.Add(1)).F32())
	for _, c := range lowerTargets {
		l, d, err := lower.RunChecked(k.MustBuild(), c)
		if err != nil {
			t.Fatalf("caps %+v: %v", c, err)
		}
		if len(d.Sites) != 4 {
			t.Errorf("caps %+v: %d sites, want 4", c, len(d.Sites))
		}
		for _, x := range l.Vars {
			if x.Type.Scalar == ir.F16 {
				t.Errorf("caps %+v: variable %s is f16", c, x.Name)
			}
		}
		m, err := vulkan.Emit(l, vulkan.EmitOptions{SubgroupSize: uint32(c.SubgroupSize)})
		if err != nil {
			t.Fatalf("caps %+v: emit: %v", c, err)
		}
		spirvVal(t, m.Words, l)
	}
}

// TestCheckedLoadsDoNotBranch: a checked load is straight-line code (an if per load made Mesa's
// lavapipe take 116 s over one matvec_q8 pipeline); the ifs Checked adds are one per checked
// store or atomic and two for the report at each place an invocation ends (a return, the end).
func TestCheckedLoadsDoNotBranch(t *testing.T) {
	k := dsl.New("loads", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	acc := k.Var("acc", float32(0))
	k.For("j", uint32(0), n, uint32(1), func(j dsl.Value) {
		acc.Set(acc.Get().Add(x.Load(i.Add(j))).Add(x.Load(i.Add(j).Add(1))).Add(x.Load(j)))
	})
	k.If(acc.Get().Lt(k.F32(0)), func() { k.Return() })
	y.Store(i, acc.Get())
	plain, err := lower.Run(k.MustBuild(), lower.Caps{SubgroupSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	ck, d, err := lower.Checked(plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Sites) != 4 {
		t.Fatalf("%d sites, want 4 (three loads, one store)", len(d.Sites))
	}
	exits := 2 // the return and the end
	if got, want := count(ck, ir.OpIf)-count(plain, ir.OpIf), 1+2*exits; got != want {
		t.Errorf("Checked added %d ifs, want %d (one for the store, two per exit)", got, want)
	}
}
