package cpu_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

func u32s(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func bytesOf(xs []uint32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func compile(t testing.TB, k *dsl.Kernel) *cpu.Program {
	t.Helper()
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	p, err := cpu.Compile(ik)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// markerLine is the line of this file holding marker (a comment), for the errors that must name it.
func markerLine(t *testing.T, marker string) int {
	t.Helper()
	src, err := os.ReadFile("cpu_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "// "+marker) && !strings.Contains(l, "markerLine") {
			return i + 1
		}
	}
	t.Fatalf("no line marked %s", marker)
	return 0
}

// TestBarrierTree sums each workgroup's values by a tree in shared memory: at every level half
// the invocations add a partner's value that another invocation stored before the barrier. Any
// invocation running ahead of the barrier reads a stale value and the sums come out wrong.
func TestBarrierTree(t *testing.T) {
	for _, lanes := range []int{1, 8, 64, 256} {
		k := dsl.New("tree", lanes)
		in := k.Buffer("in", dsl.U32, dsl.Read)
		out := k.Buffer("out", dsl.U32, dsl.Write)
		sh := k.Shared("sh", dsl.U32, lanes)
		l := k.LocalIndex()
		sh.Store(l, in.Load(k.GlobalID(dsl.X)))
		for s := lanes / 2; s >= 1; s /= 2 {
			k.Barrier()
			k.If(l.Lt(uint32(s)), func() { sh.Store(l, sh.Load(l).Add(sh.Load(l.Add(uint32(s))))) })
		}
		k.Barrier()
		out.Store(k.GlobalID(dsl.X), sh.Load(0).Mul(1000).Add(sh.Load(l.Xor(1).Min(uint32(lanes-1)))))
		p := compile(t, k)
		const groups = 37
		vals := make([]uint32, groups*lanes)
		for i := range vals {
			vals[i] = uint32(i*7919) % 1000
		}
		outb := make([]byte, 4*len(vals))
		if err := p.Run([][]byte{bytesOf(vals), outb}, nil, [3]uint32{groups, 1, 1}); err != nil {
			t.Fatal(err)
		}
		got := u32s(outb)
		for g := 0; g < groups; g++ {
			// Independent computation of what the tree leaves in sh: sh[0] the sum, sh[j] for
			// j > 0 the partial sums of the levels it took part in.
			sh := append([]uint32(nil), vals[g*lanes:(g+1)*lanes]...)
			for s := lanes / 2; s >= 1; s /= 2 {
				next := append([]uint32(nil), sh...)
				for j := 0; j < s; j++ {
					next[j] = sh[j] + sh[j+s]
				}
				sh = next
			}
			for j := 0; j < lanes; j++ {
				want := sh[0]*1000 + sh[min(j^1, lanes-1)]
				if got[g*lanes+j] != want {
					t.Fatalf("lanes %d, workgroup %d, invocation %d: %d, want %d", lanes, g, j, got[g*lanes+j], want)
				}
			}
		}
	}
}

// TestShuffles checks OpShuffleXor and OpShuffle against the rule of the package documentation:
// the partner's value within subgroups of cpu.SubgroupSize, one's own value where the partner is
// past the subgroup or the workgroup or is not running the instruction.
func TestShuffles(t *testing.T) {
	const S = cpu.SubgroupSize
	for _, lanes := range []uint32{8, 48, 64} {
		for _, xor := range []bool{true, false} {
			b := irtest.New("shuffles", lanes)
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			li := b.Builtin(ir.LocalIndex, 0)
			g := b.GID()
			v := b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(3)), b.U32(1))
			op := ir.OpShuffle
			if xor {
				op = ir.OpShuffleXor
			}
			masks := []uint32{1, 2, 4, 8, 16, 31, 32, 40, 5}
			for m, mask := range masks {
				arg := b.U32(mask)
				if m == len(masks)-1 { // a varying lane or mask
					arg = b.Bin(ir.OpAnd, b.Bin(ir.OpMul, li, b.U32(7)), b.U32(63))
				}
				r := b.Op(op, ir.TU32, v, arg)
				b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(16)), b.U32(uint32(m))), r)
			}
			// Under divergence: only even invocations run the shuffle.
			b.If(b.Bin(ir.OpEq, b.Bin(ir.OpAnd, li, b.U32(1)), b.U32(0)), func() {
				r := b.Op(op, ir.TU32, v, b.U32(2))
				b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(16)), b.U32(uint32(len(masks)))), r)
				r = b.Op(op, ir.TU32, v, b.U32(1))
				b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(16)), b.U32(uint32(len(masks)+1))), r)
			}, nil)
			k, err := b.Done()
			if err != nil {
				t.Fatal(err)
			}
			p, err := cpu.CompileLowered(k)
			if err != nil {
				t.Fatal(err)
			}
			const groups = 3
			n := int(lanes) * groups
			outb := make([]byte, 4*16*n)
			if err := p.Run([][]byte{outb}, nil, [3]uint32{groups, 1, 1}); err != nil {
				t.Fatal(err)
			}
			got := u32s(outb)
			val := func(gid int) uint32 { return uint32(gid*3 + 1) }
			// want is the rule: partner lane pl of invocation l (local), running set active.
			want := func(gid int, arg uint32, active func(int) bool) uint32 {
				l := gid % int(lanes)
				sl := l % S
				pl := int(arg)
				if xor {
					pl = sl ^ int(arg)
				}
				p := l - sl + pl
				if pl >= S || p >= int(lanes) || !active(p) {
					return val(gid)
				}
				return val(gid - l + p)
			}
			all := func(int) bool { return true }
			even := func(p int) bool { return p%2 == 0 }
			for gid := 0; gid < n; gid++ {
				l := gid % int(lanes)
				for m, mask := range masks {
					if m == len(masks)-1 {
						mask = uint32(l*7) & 63
					}
					if w := want(gid, mask, all); got[gid*16+m] != w {
						t.Fatalf("lanes %d xor=%v invocation %d arg %d: %d, want %d", lanes, xor, gid, mask, got[gid*16+m], w)
					}
				}
				if l%2 == 0 {
					for j, mask := range []uint32{2, 1} {
						if w := want(gid, mask, even); got[gid*16+len(masks)+j] != w {
							t.Fatalf("lanes %d xor=%v invocation %d arg %d under divergence: %d, want %d", lanes, xor, gid, mask, got[gid*16+len(masks)+j], w)
						}
					}
				}
			}
		}
	}
}

// TestAtomics runs every atomic op on buffers (shared by all workgroups, on several workers) and
// on shared arrays, and checks the order-independent results: the final values, and the old
// values of the shared-array atomics, which run in local index order.
func TestAtomics(t *testing.T) {
	const lanes, groups = 64, 50
	k := dsl.New("atomics", lanes)
	cnt := k.Buffer("cnt", dsl.U32, dsl.ReadWrite)
	ext := k.Buffer("ext", dsl.I32, dsl.ReadWrite)
	fs := k.Buffer("fs", dsl.F32, dsl.ReadWrite)
	olds := k.Buffer("olds", dsl.U32, dsl.Write)
	sh := k.Shared("sh", dsl.U32, 2)
	g := k.GlobalID(dsl.X)
	l := k.LocalIndex()
	cnt.AtomicAdd(0, uint32(1))
	cnt.AtomicMax(1, g)
	cnt.AtomicMin(2, g.Add(5))
	cnt.AtomicXor(3, g)
	cnt.AtomicOr(4, k.U32(1).Shl(g.And(31)))
	cnt.AtomicAnd(5, g.Or(0xffff0000))
	ext.AtomicMin(0, g.Bitcast(dsl.I32).Neg())
	ext.AtomicMax(1, g.Bitcast(dsl.I32).Sub(1000))
	fs.AtomicAdd(0, g.F32())
	// An increment by compare-exchange loop.
	k.Loop(func() {
		old := cnt.Load(6)
		k.If(cnt.AtomicCompareExchange(6, old, old.Add(2)).Eq(old), func() { k.Break() })
	})
	cnt.AtomicExchange(7, uint32(9))
	// Shared: in local index order, so the old values are known.
	olds.Store(g, sh.AtomicAdd(0, l.Add(1)))
	k.Barrier()
	k.If(l.Eq(0), func() { cnt.AtomicAdd(8, sh.Load(0)) })
	p := compile(t, k)
	n := lanes * groups
	for _, workers := range []int{1, 4} {
		bufs := [][]byte{bytesOf([]uint32{0, 0, 0xffffffff, 0, 0, 0xffffffff, 0, 0, 0}), make([]byte, 8), make([]byte, 4), make([]byte, 4*n)}
		if err := p.WithWorkers(workers).Run(bufs, nil, [3]uint32{groups, 1, 1}); err != nil {
			t.Fatal(err)
		}
		c := u32s(bufs[0])
		var xor, or uint32
		and := uint32(0xffffffff)
		for i := 0; i < n; i++ {
			xor ^= uint32(i)
			or |= 1 << (i & 31)
			and &= uint32(i) | 0xffff0000
		}
		want := []uint32{uint32(n), uint32(n - 1), 5, xor, or, and, uint32(2 * n), 9, uint32(groups * lanes * (lanes + 1) / 2)}
		for i, w := range want {
			if c[i] != w {
				t.Errorf("workers %d: cnt[%d] = %#x, want %#x", workers, i, c[i], w)
			}
		}
		e := u32s(bufs[1])
		if int32(e[0]) != -int32(n-1) || int32(e[1]) != int32(n-1-1000) {
			t.Errorf("workers %d: i32 min/max = %d, %d; want %d, %d", workers, int32(e[0]), int32(e[1]), -(n - 1), n-1-1000)
		}
		if got, want := math.Float32frombits(u32s(bufs[2])[0]), float32(n*(n-1)/2); got != want {
			t.Errorf("workers %d: f32 atomic add = %g, want %g", workers, got, want) // exact: every partial sum is an integer below 2^24
		}
		o := u32s(bufs[3])
		for i := 0; i < n; i++ {
			l := i % lanes
			if want := uint32(l * (l + 1) / 2); o[i] != want {
				t.Fatalf("workers %d: shared atomic old value of invocation %d = %d, want %d", workers, i, o[i], want)
			}
		}
	}
}

// TestOutOfBounds: an out-of-bounds access is an *OutOfBoundsError naming the kernel's source
// line, the array, the index and the first offending workgroup in dispatch order, whatever the
// number of workers; never a panic.
func TestOutOfBounds(t *testing.T) {
	k := dsl.New("oob", 32)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	idx := k.Buffer("idx", dsl.I32, dsl.Read)
	sh := k.Shared("tile", dsl.F32, 32)
	mode := k.Param("mode", dsl.U32)
	g := k.GlobalID(dsl.X)
	k.If(mode.Eq(0), func() {
		y.Store(g, x.Load(g).Mul(2)) // OOB-STORE
	})
	k.If(mode.Eq(1), func() {
		y.Store(g.Min(7), x.Load(idx.Load(g))) // OOB-LOAD
	})
	k.If(mode.Eq(2), func() {
		sh.Store(k.LocalIndex().Add(1), float32(1)) // OOB-SHARED
	})
	p := compile(t, k)
	file := "cpu/cpu_test.go"
	cases := []struct {
		mode   uint32
		marker string
		op     string
		array  string
		index  int64
		length int
		wg     uint32
	}{
		{0, "OOB-STORE", "store", "y", 10 * 32, 10 * 32, 10},
		{1, "OOB-LOAD", "load", "x", -5, 100 * 32, 3},
		{2, "OOB-SHARED", "store", "tile", 32, 32, 0},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 2, 8} {
			xs := make([]byte, 4*100*32)
			ids := make([]int32, 100*32)
			for i := range ids {
				ids[i] = int32(i)
			}
			ids[3*32+17] = -5
			ids[70*32] = 1 << 20
			ys := make([]byte, 4*c.length)
			if c.mode != 0 {
				ys = make([]byte, 4*8)
			}
			ib := make([]byte, 4*len(ids))
			for i, v := range ids {
				binary.LittleEndian.PutUint32(ib[4*i:], uint32(v))
			}
			err := p.WithWorkers(workers).Run([][]byte{xs, ys, ib}, []uint32{c.mode}, [3]uint32{100, 1, 1})
			var oob *cpu.OutOfBoundsError
			if !errors.As(err, &oob) {
				t.Fatalf("mode %d: error %v, want an *OutOfBoundsError", c.mode, err)
			}
			line := markerLine(t, c.marker)
			if oob.Pos.Line != line || !strings.HasSuffix(oob.Pos.File, "cpu_test.go") {
				t.Errorf("mode %d: position %s, want cpu_test.go:%d", c.mode, oob.Pos, line)
			}
			if oob.Op != c.op || oob.Array != c.array || oob.Index != c.index || oob.Len != c.length || oob.Workgroup != [3]uint32{c.wg, 0, 0} {
				t.Errorf("mode %d workers %d: %+v, want %s %s[%d] of %d in workgroup %d", c.mode, workers, oob, c.op, c.array, c.index, c.length, c.wg)
			}
			if !strings.Contains(err.Error(), file+":") && !strings.Contains(err.Error(), "cpu_test.go:") {
				t.Errorf("message %q does not name the line", err)
			}
		}
	}
}

// TestCapabilityError: an instruction the executor does not implement (a workgroup reduction
// that was not lowered) is an *ir.Error at its line when compiled.
func TestCapabilityError(t *testing.T) {
	b := irtest.New("unlowered", 64)
	out := b.Buffer("out", ir.TF32, ir.WriteOnly)
	r := b.Add(&ir.Inst{Op: ir.OpReduce, Type: ir.TF32, Aux: uint64(ir.ReduceSum), Args: []*ir.Inst{b.F32(1)}})
	b.St(out, b.GID(), r)
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	_, err = cpu.CompileLowered(k)
	var ie *ir.Error
	if !errors.As(err, &ie) || ie.Pos != r.Pos || !strings.Contains(err.Error(), "reduce") {
		t.Fatalf("error %v, want an *ir.Error at %s about the reduction", err, r.Pos)
	}
	if _, err := cpu.Compile(k); err != nil {
		t.Fatalf("Compile lowers the reduction first: %v", err)
	}
}

// TestCancel: a kernel that never ends stops when its context is done.
func TestCancel(t *testing.T) {
	k := dsl.New("endless", 8)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	i := k.Var("i", uint32(0))
	k.Loop(func() { i.Set(i.Get().Add(1)) })
	out.Store(0, i.Get())
	p := compile(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.RunContext(ctx, [][]byte{make([]byte, 4)}, nil, [3]uint32{4, 1, 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to stop", d)
	}
}

// TestDivergentVariables: variables set under divergent control (a loop each invocation leaves
// at its own iteration, a continue some take) hold each invocation's own value, however the
// executor shares what is uniform.
func TestDivergentVariables(t *testing.T) {
	k := dsl.New("divergent", 64)
	in := k.Buffer("in", dsl.U32, dsl.Read)
	out := k.Buffer("out", dsl.U32, dsl.Write)
	n := k.Param("n", dsl.U32)
	g := k.GlobalID(dsl.X)
	x := in.Load(g)
	steps := k.Var("steps", uint32(0))
	sum := k.Var("sum", uint32(0))
	same := k.Var("same", uint32(0)) // set to a uniform value, but only by some invocations
	k.For("i", uint32(0), n, uint32(1), func(i dsl.Value) {
		k.If(i.Eq(x), func() { k.Break() })
		k.If(i.And(1).Eq(1), func() { k.Continue() })
		steps.Set(steps.Get().Add(1))
		sum.Set(sum.Get().Add(i))
		same.Set(n)
	})
	k.If(x.Gt(40), func() { same.Set(7) })
	out.Store(g, steps.Get().Mul(1000000).Add(sum.Get().Mul(100)).Add(same.Get()))
	p := compile(t, k)
	const N = 30
	xs := make([]uint32, 128)
	for i := range xs {
		xs[i] = uint32(i*37) % 50
	}
	outb := make([]byte, 4*len(xs))
	if err := p.Run([][]byte{bytesOf(xs), outb}, []uint32{N}, [3]uint32{2, 1, 1}); err != nil {
		t.Fatal(err)
	}
	for j, got := range u32s(outb) {
		var steps, sum, same uint32
		for i := uint32(0); i < N; i++ {
			if i == xs[j] {
				break
			}
			if i&1 == 1 {
				continue
			}
			steps++
			sum += i
			same = N
		}
		if xs[j] > 40 {
			same = 7
		}
		if want := steps*1000000 + sum*100 + same; got != want {
			t.Fatalf("invocation %d (x=%d): %d, want %d", j, xs[j], got, want)
		}
	}
}

// TestWorkersSameBytes: a kernel's outputs do not depend on the number of workers.
func TestWorkersSameBytes(t *testing.T) {
	k := dsl.New("mix", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	g := k.GlobalID(dsl.X)
	c := k.Canon(64, dsl.Strided)
	s := c.Sum(k.U32(64), func(j dsl.Value) dsl.Value { v := x.Load(k.WorkgroupID(dsl.X).Mul(64).Add(j)); return v.Mul(v) })
	y.Store(g, x.Load(g).Div(s.Sqrt()))
	p := compile(t, k)
	xs := make([]uint32, 64*200)
	for i := range xs {
		xs[i] = math.Float32bits(float32(math.Sin(float64(i))))
	}
	var first []byte
	for _, w := range []int{1, 2, 3, 16} {
		out := make([]byte, 4*len(xs))
		if err := p.WithWorkers(w).Run([][]byte{bytesOf(xs), out}, nil, [3]uint32{200, 1, 1}); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = out
		} else if string(out) != string(first) {
			t.Fatalf("%d workers give other bytes than 1", w)
		}
	}
}

// TestSubgroupReduceNative: the executor's native subgroup reduction gives the bits of the
// butterfly lower.LegalizeSubgroupReduce expands it to, for every cluster width, operation and
// type, on values with NaNs, signed zeros and infinities, with every invocation running it and
// under divergence, in a workgroup of full subgroups and one with a partial subgroup.
func TestSubgroupReduceNative(t *testing.T) {
	for _, lanes := range []uint32{64, 48} {
		b := irtest.New("sgreduce", lanes)
		in := b.Buffer("in", ir.TU32, ir.ReadOnly)
		out := b.Buffer("out", ir.TU32, ir.WriteOnly)
		g := b.GID()
		li := b.Builtin(ir.LocalIndex, 0)
		x := b.Ld(in, g)
		n := uint32(0)
		var isF32 []bool // per result: an f32 (any NaN equals any NaN: payloads are not part of the contract)
		put := func(v *ir.Inst) {
			isF32 = append(isF32, v.Type == ir.TF32)
			if v.Type != ir.TU32 {
				v = b.Bitcast(ir.TU32, v)
			}
			b.St(out, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, g, b.U32(64)), b.U32(n)), v)
			n++
		}
		reduce := func(op ir.ReduceOp, t ir.Type, w int) {
			v := x
			if t != ir.TU32 {
				v = b.Bitcast(t, x)
			}
			put(b.Add(&ir.Inst{Op: ir.OpSubgroupReduce, Type: t, Aux: uint64(op), Ref: w, Args: []*ir.Inst{v}}))
		}
		for _, w := range []int{1, 2, 4, 8, 16, 32} {
			for _, op := range []ir.ReduceOp{ir.ReduceSum, ir.ReduceMax} {
				for _, t := range []ir.Type{ir.TF32, ir.TI32, ir.TU32} {
					reduce(op, t, w)
				}
			}
		}
		b.If(b.Bin(ir.OpNe, b.Bin(ir.OpAnd, b.Bin(ir.OpMul, li, b.U32(7)), b.U32(4)), b.U32(0)), func() {
			reduce(ir.ReduceSum, ir.TF32, 8)
			reduce(ir.ReduceMax, ir.TF32, 32)
		}, nil)
		k, err := b.Done()
		if err != nil {
			t.Fatal(err)
		}
		native, err := cpu.CompileLowered(k)
		if err != nil {
			t.Fatal(err)
		}
		caps := cpu.Caps
		caps.SubgroupArithmetic = false
		low, err := lower.Run(k, caps)
		if err != nil {
			t.Fatal(err)
		}
		expanded, err := cpu.CompileLowered(low)
		if err != nil {
			t.Fatal(err)
		}
		vals := []uint32{0x3f800000, 0xbf800000, 0x80000000, 0, 0x7fc00000, 0xffc00001, 0x7f800000, 0xff800000, 0x00000001, 0x4b000000, 0x33800000, 7, 0xfffffff9}
		r := rand.New(rand.NewPCG(1, uint64(lanes)))
		for trial := 0; trial < 20; trial++ {
			xs := make([]uint32, 2*lanes)
			for i := range xs {
				if r.IntN(2) == 0 {
					xs[i] = vals[r.IntN(len(vals))]
				} else {
					xs[i] = math.Float32bits(float32(r.NormFloat64()))
				}
			}
			run := func(p *cpu.Program) []byte {
				o := make([]byte, 4*64*2*int(lanes))
				if err := p.Run([][]byte{bytesOf(xs), o}, nil, [3]uint32{2, 1, 1}); err != nil {
					t.Fatal(err)
				}
				return o
			}
			a, e := u32s(run(native)), u32s(run(expanded))
			for i := range a {
				j := i % 64
				if j >= len(isF32) || a[i] == e[i] {
					continue
				}
				fa, fe := math.Float32frombits(a[i]), math.Float32frombits(e[i])
				if isF32[j] && fa != fa && fe != fe {
					continue
				}
				t.Fatalf("lanes %d: invocation %d result %d: native %#x, expanded %#x", lanes, i/64, j, a[i], e[i])
			}
		}
	}
}
