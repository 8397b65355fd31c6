package lower_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// progGen turns fuzz bytes into a DSL kernel: a small interpreter whose opcodes pick operations
// over a pool of live values. It builds mostly valid kernels (and some invalid ones on purpose:
// the builder must report those as errors, never panic).
type progGen struct {
	data []byte
	pos  int
	k    *dsl.Kernel
}

func (g *progGen) next() int {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return int(b)
}

func (g *progGen) pick(pool []dsl.Value) dsl.Value { return pool[g.next()%len(pool)] }

func genKernel(data []byte) *dsl.Kernel {
	g := &progGen{data: data}
	wg := []int{1, 2, 8, 32, 64, 256}[g.next()%6]
	k := dsl.New("fuzz", wg)
	g.k = k
	in := k.Buffer("in", dsl.F32, dsl.Read)
	out := k.Buffer("out", dsl.F32, dsl.ReadWrite)
	cnt := k.Buffer("cnt", dsl.U32, dsl.ReadWrite)
	bytes := k.Buffer("bytes", dsl.I8, dsl.ReadWrite)
	sh := k.Shared("sh", dsl.F32, 64)
	n := k.Param("n", dsl.U32)
	acc := k.Var("acc", float32(0))
	f := []dsl.Value{k.F32(1.5), in.Load(k.GlobalID(dsl.X).Rem(n.Max(1)))}
	u := []dsl.Value{n, k.LocalIndex(), k.U32(3)}
	var body func(depth int, uniform bool)
	body = func(depth int, uniform bool) {
		steps := g.next()%6 + 1
		for s := 0; s < steps && g.pos < len(g.data); s++ {
			switch g.next() % 20 {
			case 0:
				f = append(f, g.pick(f).Add(g.pick(f)))
			case 1:
				f = append(f, g.pick(f).Mul(g.pick(f)).Sub(g.pick(f)))
			case 2:
				f = append(f, g.pick(f).Div(g.pick(f)).Max(g.pick(f)).Min(g.pick(f)))
			case 3:
				u = append(u, g.pick(u).Add(g.pick(u)).Xor(g.pick(u)).Shr(g.pick(u)))
			case 4:
				f = append(f, g.pick(u).F32(), g.pick(f).Abs().Sqrt())
				f = append(f, g.pick(f).Fma(g.pick(f), g.pick(f)))
				if nf := dsl.NativeFunc(g.next() % int(dsl.NativeRsqrt+1)); nf == dsl.NativePow {
					f = append(f, g.pick(f).Native(nf, g.pick(f)))
				} else {
					f = append(f, g.pick(f).Native(nf))
				}
			case 5:
				u = append(u, g.pick(f).U32(), g.pick(f).I32().Bitcast(dsl.U32))
			case 6:
				f = append(f, k.Select(g.pick(f).Lt(g.pick(f)), g.pick(f), g.pick(f)))
			case 7:
				out.Store(g.pick(u).Rem(64), g.pick(f))
			case 8:
				acc.Set(acc.Get().Add(g.pick(f)))
				f = append(f, acc.Get())
			case 9:
				sh.Store(g.pick(u).And(63), g.pick(f))
				f = append(f, sh.Load(g.pick(u).And(63)))
			case 10:
				u = append(u, cnt.AtomicAdd(g.pick(u).And(7), g.pick(u)))
			case 11:
				u = append(u, k.DotI8x4(g.pick(u), g.pick(u)).Bitcast(dsl.U32))
			case 12:
				f = append(f, g.pick(f).ShuffleXor(g.next()%8))
			case 13:
				if uniform {
					f = append(f, k.ReduceSum(g.pick(f)), k.ReduceMax(g.pick(f)))
				}
			case 14:
				if uniform {
					k.Barrier()
				}
			case 15:
				if depth < 3 {
					cond := g.pick(u).Lt(g.pick(u))
					k.If(cond, func() { body(depth+1, false) }).Else(func() { body(depth+1, false) })
				}
			case 16:
				if depth < 3 {
					k.For("i", 0, g.next()%5, 1, func(i dsl.Value) {
						u = append(u, i)
						body(depth+1, uniform)
						u = u[:len(u)-1]
					})
				}
			case 17:
				bytes.Store(g.pick(u).And(15), g.pick(u).Bitcast(dsl.I32))
				u = append(u, bytes.Load(g.pick(u).And(15)).Bitcast(dsl.U32))
			case 18:
				if depth > 0 && g.next()%4 == 0 {
					k.Break()
					return
				}
			case 19:
				v := k.Vec(g.pick(f), g.pick(f), g.pick(f), g.pick(f))
				f = append(f, v.Lane(g.next()%4))
			}
		}
	}
	saveF, saveU := len(f), len(u)
	body(0, true)
	f, u = f[:saveF], u[:saveU]
	out.Store(k.GlobalID(dsl.X).Rem(64), acc.Get())
	return k
}

// narrowSubgroups reports whether k's shuffles need wider subgroups than target c has; then
// lowering must refuse k with an error that says so.
func narrowSubgroups(t *testing.T, k *ir.Kernel, c lower.Caps) bool {
	t.Helper()
	need := lower.MinSubgroup(k)
	if c.SubgroupSize <= 1 || need <= c.SubgroupSize {
		return false
	}
	if _, err := lower.Run(k, c); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("needs subgroups of at least %d lanes", need)) {
		t.Fatalf("caps %+v: kernel needs %d-lane subgroups; lowering gave %v, want a refusal", c, need, err)
	}
	return true
}

var lowerTargets = []lower.Caps{{}, {SubgroupSize: 8, DotI8x4: true, Float16: true}, {SubgroupSize: 32}, {SubgroupSize: 4, DotI8x4: true}}

// FuzzLower builds random kernels through the DSL; the builder must never panic, every kernel it
// accepts must lower for every target to IR that still verifies (Run checks after each pass), and
// the SPIR-V emitted for it for every Vulkan version must pass spirv-val for that version.
func FuzzLower(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {1, 2, 3, 4, 5, 6, 7, 8}, {3, 5, 13, 0, 1, 14, 15, 2, 0, 0, 16, 3, 1, 9, 0},
		{5, 6, 12, 3, 11, 1, 2, 19, 0, 1, 2, 3, 1, 17, 4, 5, 10, 1, 1, 8, 0},
		{4, 9, 15, 1, 2, 6, 16, 2, 2, 18, 0, 13, 0, 0, 7, 1, 2},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := genKernel(data).Build()
		if err != nil {
			return // rejected kernels are fine; panics are not
		}
		for _, c := range lowerTargets {
			if narrowSubgroups(t, k, c) {
				continue
			}
			l, err := lower.Run(k, c)
			if err != nil {
				t.Fatalf("caps %+v: %v\n%s", c, err, k)
			}
			ir.Walk(l.Body, func(in *ir.Inst) bool {
				if in.Op == ir.OpReduce {
					t.Fatalf("caps %+v: reduction left after lowering", c)
				}
				if in.Op == ir.OpDotI8x4 && !c.DotI8x4 {
					t.Fatalf("caps %+v: packed dot left for a target without it", c)
				}
				if in.Op == ir.OpFma && !c.ExactFma {
					t.Fatalf("caps %+v: fma left for a target without an exact one", c)
				}
				return true
			})
			for _, env := range vulkan.Envs { // every Vulkan version the emitter targets
				m, err := vulkan.Emit(l, vulkan.EmitOptions{SubgroupSize: uint32(c.SubgroupSize), Env: env})
				if err != nil {
					t.Fatalf("caps %+v, %s: emit: %v\n%s", c, env, err, l)
				}
				spirvVal(t, m.Words, l)
			}
		}
	})
}

func TestFuzzSeedsBuild(t *testing.T) {
	ok := 0
	seeds := [][]byte{{1, 2, 3, 4, 5, 6, 7, 8}, {3, 5, 13, 0, 1, 14, 15, 2, 0, 0, 16, 3, 1, 9, 0}, {5, 6, 12, 3, 11, 1, 2, 19, 0, 1, 2, 3, 1, 17, 4, 5, 10, 1, 1, 8, 0}}
	for _, s := range seeds {
		if _, err := genKernel(s).Build(); err == nil {
			ok++
		} else {
			t.Logf("seed %v: %v", s, err)
		}
	}
	if ok == 0 {
		t.Fatal("the fuzz generator builds no valid kernel from its seeds: it would test nothing")
	}
}

// spirvVal validates words with spirv-val when it is installed.
func spirvVal(t *testing.T, words []uint32, k *ir.Kernel) {
	t.Helper()
	if err := vulkan.Validate(words); err != nil && !errors.Is(err, vulkan.ErrNoValidator) {
		t.Fatalf("%v\n%s", err, k)
	}
}
