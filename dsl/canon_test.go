package dsl_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
)

func countOps(k *ir.Kernel, op ir.Op) int {
	n := 0
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op == op && (op != ir.OpLoad || in.Mem == ir.MemBuffer) {
			n++
		}
		return true
	})
	return n
}

// sumKernel sums x with a Canon of width w on a workgroup of t invocations.
func sumKernel(t, w int, layout dsl.Layout) *dsl.Kernel {
	k := dsl.New("canon_sum", t)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	out := k.Buffer("out", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	total := k.Canon(w, layout).Sum(n, func(i dsl.Value) dsl.Value { return x.Load(i) })
	k.If(k.LocalIndex().Eq(0), func() { out.Store(0, total) })
	return k
}

// TestCanonShape checks how a Canon lays out its reduction: blocked combines its slots first and
// crosses invocations once; strided crosses once per slot (up to four slots; with more, once in
// a loop over the slots); the term's code is emitted once in every case.
func TestCanonShape(t *testing.T) {
	for _, c := range []struct {
		t, w    int
		layout  dsl.Layout
		reduces int // OpReduce instructions in the IR
		loads   int // copies of the term's load
	}{
		{64, 64, dsl.Blocked, 1, 1},
		{64, 256, dsl.Blocked, 1, 1},
		{64, 256, dsl.Strided, 4, 1},
		{8, 256, dsl.Blocked, 1, 1},
		{8, 256, dsl.Strided, 1, 1},
		{1, 256, dsl.Blocked, 1, 1},
	} {
		k, err := sumKernel(c.t, c.w, c.layout).Build()
		if err != nil {
			t.Fatalf("T=%d W=%d %s: %v", c.t, c.w, c.layout, err)
		}
		if got := countOps(k, ir.OpReduce); got != c.reduces {
			t.Errorf("T=%d W=%d %s: %d reductions, want %d", c.t, c.w, c.layout, got, c.reduces)
		}
		if got := countOps(k, ir.OpLoad); got != c.loads {
			t.Errorf("T=%d W=%d %s: %d buffer loads, want %d", c.t, c.w, c.layout, got, c.loads)
		}
	}
}

func TestCanonErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(k *dsl.Kernel)
		want string
	}{
		{"width not a power of two", func(k *dsl.Kernel) { k.Canon(100, dsl.Blocked) }, "width 100 is not a power of two"},
		{"workgroup wider than W", func(k *dsl.Kernel) { k.Canon(32, dsl.Blocked) }, "wider than the canonical width 32"},
		{"unknown layout", func(k *dsl.Kernel) { k.Canon(256, dsl.Layout(7)) }, "unknown layout"},
		{"slot count", func(k *dsl.Kernel) { k.Canon(256, dsl.Blocked).ReduceSum([]dsl.Value{k.F32(1)}) }, "1 values for 4 slots"},
		{"term type", func(k *dsl.Kernel) {
			k.Canon(256, dsl.Blocked).Sum(k.U32(9), func(i dsl.Value) dsl.Value { return i })
		}, "a term is u32, want f32"},
		{"count type", func(k *dsl.Kernel) {
			k.Canon(256, dsl.Blocked).Sum(k.F32(9), func(i dsl.Value) dsl.Value { return i.F32() })
		}, "term count is f32, want u32"},
		{"slot index", func(k *dsl.Kernel) { k.Canon(256, dsl.Strided).Lane(4) }, "slot 4 of 4"},
	} {
		k := dsl.New("c", 64)
		c.f(k)
		_, err := k.Build()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "canon_test.go:") {
			t.Errorf("%s: error %v, want one naming canon_test.go and %q", c.name, err, c.want)
		}
	}
}

// A Canon sums with a width that belongs to the computation, not to the workgroup: these two
// kernels, one with 32 invocations and one with 256 in the other layout, give the same bits on
// every device (W = 256 virtual lanes, each folding every 256th term, then a pairwise tree).
func ExampleKernel_Canon() {
	for _, s := range []struct {
		lanes  int
		layout dsl.Layout
	}{{32, dsl.Blocked}, {256, dsl.Strided}} {
		k := dsl.New("row_sum", s.lanes)
		x := k.Buffer("x", dsl.F32, dsl.Read)
		y := k.Buffer("y", dsl.F32, dsl.Write)
		n := k.Param("n", dsl.U32)
		row := k.WorkgroupID(dsl.X).Mul(n)
		c := k.Canon(256, s.layout)
		sum := c.Sum(n, func(i dsl.Value) dsl.Value { return x.Load(row.Add(i)) })
		c.Each(n, func(i dsl.Value) { y.Store(row.Add(i), x.Load(row.Add(i)).Div(sum)) })
		if _, err := k.Build(); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d invocations, %s: %d virtual lanes each\n", s.lanes, c.Layout(), c.Slots())
	}
	// Output:
	// 32 invocations, blocked: 8 virtual lanes each
	// 256 invocations, strided: 1 virtual lanes each
}
