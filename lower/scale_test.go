package lower_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// deadChain is n additions in a chain whose result is never used: dead-code removal that
// removes only the unused instructions of the moment, pass after pass, takes n passes.
func deadChain(t *testing.T, n int) *ir.Kernel {
	b := irtest.New("dead_chain", 64)
	out := b.Buffer("out", ir.TU32, ir.WriteOnly)
	g := b.GID()
	x := g
	for i := range n {
		x = b.Bin(ir.OpAdd, x, b.U32(uint32(i+1)))
	}
	b.St(out, g, g)
	return done(t, b)
}

// constIfs nests ifs on constant conditions depth deep, each with a store: folding inlines them
// all, which must not copy the inlined code once per level.
func constIfs(t *testing.T, depth int) *ir.Kernel {
	b := irtest.New("const_ifs", 64)
	out := b.Buffer("out", ir.TU32, ir.WriteOnly)
	g := b.GID()
	var level func(i int)
	level = func(i int) {
		if i == depth {
			return
		}
		b.If(b.Bin(ir.OpLt, b.U32(1), b.U32(2)), func() {
			b.St(out, b.Bin(ir.OpAdd, g, b.U32(uint32(i))), g)
			level(i + 1)
		}, nil)
	}
	level(0)
	return done(t, b)
}

// repeatIfs nests ifs on invocation-dependent conditions depth deep, each computing the same
// pure expression again: common-subexpression elimination must not search every enclosing
// scope per instruction.
func repeatIfs(t *testing.T, depth int) *ir.Kernel {
	b := irtest.New("repeat_ifs", 64)
	out := b.Buffer("out", ir.TU32, ir.WriteOnly)
	g := b.GID()
	var level func(i int)
	level = func(i int) {
		if i == depth {
			return
		}
		b.If(b.Bin(ir.OpLt, g, b.U32(uint32(i))), func() {
			b.St(out, b.Bin(ir.OpMul, g, b.U32(3)), b.Bin(ir.OpXor, g, b.U32(uint32(i))))
			level(i + 1)
		}, nil)
	}
	level(0)
	return done(t, b)
}

func done(t *testing.T, b *irtest.Builder) *ir.Kernel {
	t.Helper()
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestPassesScale runs the passes that used to be quadratic on kernels of 1k and 10k
// instructions of the shape that made them so, logging the time per instruction (never
// asserted) and checking that the memory a pass allocates per instruction stays within a
// constant factor (it grew with the size: a map per removal pass, a copy of the inlined code per
// level), and that each pass does its job.
func TestPassesScale(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(*testing.T, int) *ir.Kernel
		pass  func(*ir.Kernel)
		left  func(n int) int // instructions the pass leaves of a kernel of n instructions
	}{
		{"dead code, a dead chain", func(t *testing.T, n int) *ir.Kernel { return deadChain(t, n/2) }, lower.DeadCode, func(int) int { return 2 }},
		{"fold, nested constant ifs", func(t *testing.T, n int) *ir.Kernel { return constIfs(t, n/6) }, lower.Fold, nil},
		{"cse, nested ifs", func(t *testing.T, n int) *ir.Kernel { return repeatIfs(t, n/8) }, lower.CSE, nil},
	} {
		var base float64
		for _, n := range []int{1000, 10000} {
			k := c.build(t, n)
			size := irtest.Count(k)
			work := k.Clone()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			c.pass(work)
			d := time.Since(start)
			runtime.ReadMemStats(&after)
			if err := ir.Verify(work); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if c.left != nil && irtest.Count(work) != c.left(size) {
				t.Errorf("%s: %d instructions left of %d, want %d", c.name, irtest.Count(work), size, c.left(size))
			}
			bytes := float64(after.TotalAlloc-before.TotalAlloc) / float64(size)
			t.Logf("%s: %d instructions: %.0f ns/inst, %.0f B/inst allocated", c.name, size, float64(d.Nanoseconds())/float64(size), bytes)
			if base == 0 {
				base = bytes
			} else if bytes > 3*base+64 {
				t.Errorf("%s: %.0f bytes allocated per instruction at %d instructions, %.0f at 1000: not linear", c.name, bytes, size, base)
			}
		}
	}
}
