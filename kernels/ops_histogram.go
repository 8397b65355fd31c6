package kernels

import (
	"fmt"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The histogram cell is a weighted histogram, the classic use of f32 atomics: each workgroup adds
// its elements' weights into a shared-memory histogram (f32 AtomicAdd on shared memory), then
// adds that into the global one (f32 AtomicAdd on a buffer); alongside, u32 AtomicOr and AtomicXor
// fold each element's bits and index into per-bin masks in a buffer, and AtomicAnd clears each
// element's bit in a per-workgroup shared mask (all ones at first) whose complement is then or-ed
// into the buffer. The weights are multiples of 1/4
// with small totals, so every partial sum is exact and the result does not depend on the order
// the device applies the adds in (the AtomicAdd contract); or, xor and and are order-free.

// atomicBins is the histogram's bin count.
const atomicBins = 64

func init() {
	Register(Cell{Op: "histogram", Type: oracle.F32, Build: AtomicKernel, Cases: atomicCases,
		Feature: "f32, and, or and xor atomics"})
}

// AtomicKernel builds the histogram. Bindings: 0 key (u32, n: bin index, taken modulo 64),
// 1 w (f32, n), 2 hist (f32, 64, read-write, zeroed), 3 bits (u32, 3*64, read-write, zeroed:
// per bin the or, the xor and the complement of the and). Parameters: n (u32). Dispatch
// ElemGroups(n, T).
func AtomicKernel(s Schedule) *dsl.Kernel {
	k := dsl.New("histogram", s.Lanes)
	key := k.Buffer("key", dsl.U32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	hist := k.Buffer("hist", dsl.F32, dsl.ReadWrite)
	bits := k.Buffer("bits", dsl.U32, dsl.ReadWrite)
	n := k.Param("n", dsl.U32)
	tally := k.Shared("tally", dsl.F32, atomicBins)
	clear := k.Shared("clear", dsl.U32, atomicBins)
	lid := k.LocalIndex()
	k.For("b", lid, atomicBins, s.Lanes, func(b dsl.Value) {
		tally.Store(b, float32(0))
		clear.Store(b, uint32(0xffffffff))
	})
	k.Barrier()
	eachElement(k, n, s.Lanes, func(i dsl.Value) {
		b := key.Load(i).And(atomicBins - 1)
		tally.AtomicAdd(b, w.Load(i))
		bit := k.U32(1).Shl(i.And(31))
		bits.AtomicOr(b, bit)
		bits.AtomicXor(b.Add(atomicBins), i)
		clear.AtomicAnd(b, bit.Not())
	})
	k.Barrier()
	k.For("b", lid, atomicBins, s.Lanes, func(b dsl.Value) {
		v := tally.Load(b)
		k.If(v.Ne(float32(0)), func() { hist.AtomicAdd(b, v) })
		bits.AtomicOr(b.Add(2*atomicBins), clear.Load(b).Not())
	})
	return k
}

func atomicCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(117))
	var out []Case
	for _, sz := range []elemSize{{1, 0}, {100, 0}, {1000, 0}, {5000, 3}} {
		keys := make([]uint32, sz.n)
		ws := make([]float32, sz.n)
		for i := range keys {
			keys[i] = rng.Uint32()
			if i%7 == 0 {
				keys[i] = 5 // a hot bin
			}
			ws[i] = float32(rng.Intn(33)-16) / 4
		}
		want := atomicWant(keys, ws)
		groups := sz.grid(s.Lanes)
		out = append(out, Case{
			Name:    sz.name(fmt.Sprintf("n%d", sz.n)),
			Buffers: [][]byte{u32Bytes(keys), f32Bytes(ws), f32Bytes(make([]float32, atomicBins)), u32Bytes(make([]uint32, 3*atomicBins))},
			Params:  []uint32{uint32(sz.n)},
			Groups:  groups,
			Outputs: []int{2, 3},
			Want:    [][]byte{f32Bytes(want.hist), u32Bytes(want.masks)},
			Elem:    []string{"f32", "u32"},
		})
	}
	return out, nil
}

type atomicResult struct {
	hist  []float32
	masks []uint32
}

// atomicWant is the histogram's meaning: per bin, the sum of its weights (exact, so in any
// order), the or of 1<<(i%32) over its elements, the xor of their indices, and again the or of
// their bits (the complement of the and of the complements: every workgroup's cleared bits).
func atomicWant(keys []uint32, ws []float32) atomicResult {
	hist := make([]float32, atomicBins)
	masks := make([]uint32, 3*atomicBins)
	for i, key := range keys {
		b := key % atomicBins
		hist[b] += ws[i]
		bit := uint32(1) << (uint(i) % 32)
		masks[b] |= bit
		masks[atomicBins+b] ^= uint32(i)
		masks[2*atomicBins+b] |= bit
	}
	return atomicResult{hist, masks}
}
