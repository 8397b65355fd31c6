package vulkan_test

// Native f32 atomic adds (OpAtomicFAddEXT, SPV_EXT_shader_atomic_float_add) against the
// compare-exchange loops package lower writes without them: both emitted for every environment
// and validated, both run on the device and compared bit for bit with plain Go.

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// SPIR-V numbers of the float atomic add (SPV_EXT_shader_atomic_float_add).
const (
	opAtomicFAddEXT  = 6035
	opAtomicCmpXchg  = 230
	atomicFloatExt   = "SPV_EXT_shader_atomic_float_add"
	atomicFloatBins  = 16
	atomicFloatLanes = 64
)

// atomicFloatKernel is a weighted histogram with f32 atomic adds on shared memory and on
// buffers. Bindings: 0 key (u32, n), 1 w (f32, n), 2 hist (f32, bins: each workgroup adds its
// shared tally), 3 direct (f32, bins: every element adds its weight directly), 4 ticket (f32, 1:
// every element adds 1), 5 olds (f32, n: the value each element's ticket add replaced).
// Parameter n (u32). Grid-stride over any number of workgroups.
func atomicFloatKernel(t testing.TB) *ir.Kernel {
	t.Helper()
	k := dsl.New("hist_f32", atomicFloatLanes)
	key := k.Buffer("key", dsl.U32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	hist := k.Buffer("hist", dsl.F32, dsl.ReadWrite)
	direct := k.Buffer("direct", dsl.F32, dsl.ReadWrite)
	ticket := k.Buffer("ticket", dsl.F32, dsl.ReadWrite)
	olds := k.Buffer("olds", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	tally := k.Shared("tally", dsl.F32, atomicFloatBins)
	lid := k.LocalIndex()
	k.If(lid.Lt(uint32(atomicFloatBins)), func() { tally.Store(lid, float32(0)) })
	k.Barrier()
	stride := k.NumWorkgroups(dsl.X).Mul(uint32(atomicFloatLanes))
	k.For("i", k.GlobalID(dsl.X), n, stride, func(i dsl.Value) {
		b := key.Load(i).And(atomicFloatBins - 1)
		x := w.Load(i)
		tally.AtomicAdd(b, x)
		direct.AtomicAdd(b, x)
		olds.Store(i, ticket.AtomicAdd(uint32(0), float32(1)))
	})
	k.Barrier()
	k.If(lid.Lt(uint32(atomicFloatBins)), func() { hist.AtomicAdd(lid, tally.Load(lid)) })
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	return ik
}

// countOps counts the instructions of opcode op in a module.
func countOps(words []uint32, op uint32) int {
	n := 0
	for i := 5; i < len(words); {
		l := int(words[i] >> 16)
		if l == 0 {
			break
		}
		if words[i]&0xffff == op {
			n++
		}
		i += l
	}
	return n
}

// TestEmitAtomicFloat lowers the histogram with and without native float atomics and checks
// each module in every environment: spirv-val accepts it; natively it declares the
// AtomicFloat32AddEXT capability and its extension, has one OpAtomicFAddEXT per f32 atomic add of
// the kernel (4) and needs the AtomicFloat32Add feature; through the compare-exchange loop it
// has none of these.
func TestEmitAtomicFloat(t *testing.T) {
	needSPIRVTools(t)
	k := atomicFloatKernel(t)
	for _, native := range []bool{true, false} {
		for _, env := range vulkan.Envs {
			name := "cas/" + env.String()
			if native {
				name = "native/" + env.String()
			}
			t.Run(name, func(t *testing.T) {
				mod, err := vulkan.CompileWith(k, lower.Caps{AtomicFloatAdd: native}, vulkan.EmitOptions{Env: env})
				if err != nil {
					t.Fatal(err)
				}
				if err := spirvValEnv(t, mod.Words, env); err != nil {
					t.Fatal(err)
				}
				f := readSPV(t, mod.Words)
				hasCap := slices.Contains(f.caps, capAtomicFloat32)
				hasExt := slices.Contains(f.exts, atomicFloatExt)
				fadds := countOps(mod.Words, opAtomicFAddEXT)
				cas := countOps(mod.Words, opAtomicCmpXchg)
				if native {
					if !hasCap || !hasExt || fadds != 4 || cas != 0 || !mod.Features.AtomicFloat32Add {
						t.Errorf("native: capability %v, extension %v, %d OpAtomicFAddEXT (want 4), %d compare-exchanges, features %s", hasCap, hasExt, fadds, cas, featureNames(mod.Features))
					}
				} else if hasCap || hasExt || fadds != 0 || cas != 4 || mod.Features.AtomicFloat32Add {
					t.Errorf("compare-exchange: capability %v, extension %v, %d OpAtomicFAddEXT, %d compare-exchanges (want 4), features %s", hasCap, hasExt, fadds, cas, featureNames(mod.Features))
				}
			})
		}
	}
}

// TestExecAtomicFloat runs the histogram on the device at every environment, lowered with the
// device's capabilities (native float atomics where it has AtomicFloat32Add) and with
// AtomicFloatAdd forced off (compare-exchange loops), and compares both bit for bit with plain
// Go. The weights are quarters and the totals small, so every partial sum is exact and the
// results do not depend on the order the adds land in; the values the ticket adds replaced are
// exactly 0..n-1 in some order.
func TestExecAtomicFloat(t *testing.T) {
	k := atomicFloatKernel(t)
	rng := rand.New(rand.NewPCG(16, 2))
	const n = 5000
	keys := make([]uint32, n)
	ws := make([]float32, n)
	hist := make([]float32, atomicFloatBins)
	direct := make([]float32, atomicFloatBins)
	directInit := make([]float32, atomicFloatBins)
	for b := range directInit {
		directInit[b] = float32(b) / 4
		direct[b] = directInit[b]
	}
	for i := range keys {
		keys[i] = rng.Uint32()
		if i%3 == 0 {
			keys[i] = 5 // a hot bin
		}
		ws[i] = float32(rng.IntN(33)-16) / 4
		b := keys[i] % atomicFloatBins
		hist[b] += ws[i]
		direct[b] += ws[i]
	}
	f32b := func(v []float32) []byte {
		out := make([]byte, 4*len(v))
		for i, x := range v {
			put32(out, i, math.Float32bits(x))
		}
		return out
	}
	forEachEnv(t, func(t *testing.T, env vulkan.Env) {
		d := execDeviceEnv(t, env)
		for _, native := range []bool{true, false} {
			name := "cas"
			if native {
				name = "native"
			}
			t.Run(name, func(t *testing.T) {
				caps := d.Caps()
				if native && !caps.AtomicFloatAdd {
					t.Skipf("the device at %v has no AtomicFloat32Add (VK_EXT_shader_atomic_float's shaderBufferFloat32AtomicAdd and shaderSharedFloat32AtomicAdd): features %s", env, featureNames(d.Info().Features))
				}
				if native && !slices.Contains(d.Extensions(), "VK_EXT_shader_atomic_float") {
					t.Errorf("AtomicFloat32Add enabled at %v without VK_EXT_shader_atomic_float (extensions %v)", env, d.Extensions())
				}
				caps.AtomicFloatAdd = native
				l, err := lower.Run(k, caps)
				if err != nil {
					t.Fatal(err)
				}
				if got := l.Buffers[2].Elem; (got == ir.TF32) != native {
					t.Fatalf("lowered hist holds %s with AtomicFloatAdd %v", got, native)
				}
				sg := uint32(0)
				if caps.SubgroupSize > 1 {
					sg = uint32(caps.SubgroupSize)
				}
				for _, groups := range []uint32{1, 7, (n + atomicFloatLanes - 1) / atomicFloatLanes} {
					bufs := [][]byte{u32s(keys...), f32b(ws), make([]byte, 4*atomicFloatBins), f32b(directInit), make([]byte, 4), make([]byte, 4*n)}
					res := runOnDevice(t, l, vulkan.EmitOptions{SubgroupSize: sg, Env: env}, bufs, u32s(n), [3]uint32{groups, 1, 1})
					for b := range atomicFloatBins {
						if got, want := le32(res[2], b), math.Float32bits(hist[b]); got != want {
							t.Errorf("%d groups: hist[%d] = %v, want %v", groups, b, math.Float32frombits(got), hist[b])
						}
						if got, want := le32(res[3], b), math.Float32bits(direct[b]); got != want {
							t.Errorf("%d groups: direct[%d] = %v, want %v", groups, b, math.Float32frombits(got), direct[b])
						}
					}
					if got := math.Float32frombits(le32(res[4], 0)); got != n {
						t.Errorf("%d groups: ticket = %v, want %d", groups, got, n)
					}
					seen := make([]bool, n)
					for i := range n {
						o := math.Float32frombits(le32(res[5], i))
						j := int(o)
						if float32(j) != o || j < 0 || j >= n || seen[j] {
							t.Errorf("%d groups: element %d replaced ticket %v: not a fresh integer in [0, %d)", groups, i, o, n)
							break
						}
						seen[j] = true
					}
				}
			})
		}
	})
}
