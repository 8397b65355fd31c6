// Package lower holds the passes that take a verified kernel from what the user wrote to what a
// target can run: constant folding, the expansion of canonical workgroup reductions into subgroup
// shuffles and shared memory, capability legalization (packed int8 dot and f16 arithmetic where a
// device lacks them, an exact integer emulation of fma where the device's may round twice),
// common-subexpression elimination and dead-code removal. The first pass chooses each intrinsic
// island's body: the target's own where Caps.Islands has it, the portable one elsewhere.
//
// Passes are a plain ordered list (Passes); Run clones the kernel, runs them in order and verifies
// the result after each, so a pass that breaks the IR is caught at the pass that did it. Every
// pass preserves the numeric meaning defined by package oracle bit for bit.
//
// Checked (bounds.go) is not one of the Passes: it makes the bounds-checked kernel of checked
// mode (tests, the conformance suite) from a built kernel, which Run then lowers as any other.
package lower

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
)

// Caps describes what the target can do. The zero value is the most conservative target: no
// subgroup operations, no packed dot, no f16 arithmetic.
type Caps struct {
	// SubgroupSize is the number of consecutive invocations (by local index) the lowering may
	// treat as one subgroup for shuffles: a power of two no larger than the device's minimum
	// subgroup size. 0 or 1 means shuffles are not used.
	SubgroupSize int
	DotI8x4      bool // the target has a packed 4 x i8 dot product
	Float16      bool // the target has f16 arithmetic (not only f16 storage)
	// ExactFma: the target's fused multiply-add of f32 rounds once (CUDA __fmaf_rn, HIP fmaf,
	// MSL fma); without it, LegalizeFma emulates OpFma exactly with integer operations.
	ExactFma bool
	// AtomicFloatAdd: the target has a native f32 atomic add on buffers and shared arrays;
	// without it, LegalizeAtomics rewrites f32 atomic adds into compare-exchange loops.
	AtomicFloatAdd bool
	// SubgroupArithmetic: the target has native subgroup reductions over its whole subgroup
	// (SPIR-V GroupNonUniformArithmetic); an OpSubgroupReduce whose cluster is exactly
	// SubgroupSize lanes is then left for the emitter, every other one is expanded into the
	// canonical butterfly (LegalizeSubgroupReduce).
	SubgroupArithmetic bool
	// Islands are the intrinsic islands the target runs natively (package ir, island.go): the
	// backend prints its own body for them; every other island runs its portable body
	// (SelectIslands). IslandLanes is the subgroup the native bodies take (32: a CUDA warp or
	// an AMD wave32, 64: an AMD wave64, the pipeline's subgroup size on Vulkan); a kernel whose
	// workgroup is not a whole number of such subgroups runs the portable bodies.
	Islands     ir.IslandSet
	IslandLanes int
}

// Pass is one step of the lowering.
type Pass struct {
	Name string
	Run  func(k *ir.Kernel, c Caps) error
}

// Passes is the lowering pipeline, in order.
var Passes = []Pass{
	{"islands", SelectIslands},
	{"fold", func(k *ir.Kernel, _ Caps) error { Fold(k); return nil }},
	{"check-shuffles", CheckShuffles},
	{"reduce", ExpandReductions},
	{"legalize-dot", LegalizeDot},
	{"legalize-atomics", LegalizeAtomics},
	{"legalize-subgroup-reduce", LegalizeSubgroupReduce},
	{"legalize-types", LegalizeTypes},
	{"legalize-f16", LegalizeF16},
	{"legalize-fma", LegalizeFma},
	{"fold-late", func(k *ir.Kernel, _ Caps) error { Fold(k); return nil }},
	{"simplify", func(k *ir.Kernel, _ Caps) error { Simplify(k); return nil }},
	{"cse", func(k *ir.Kernel, _ Caps) error { CSE(k); return nil }},
	{"dce", func(k *ir.Kernel, _ Caps) error { DeadCode(k); return nil }},
}

// Run lowers a copy of k for a target with caps c. k itself is not modified.
func Run(k *ir.Kernel, c Caps) (*ir.Kernel, error) {
	if err := ir.Verify(k); err != nil {
		return nil, err
	}
	out := k.Clone()
	for _, p := range Passes {
		if err := p.Run(out, c); err != nil {
			return nil, fmt.Errorf("lower %s: %s: %w", k.Name, p.Name, err)
		}
		if err := ir.Verify(out); err != nil {
			return nil, fmt.Errorf("lower %s: IR invalid after pass %s (a lowering bug): %w", k.Name, p.Name, err)
		}
	}
	return out, nil
}

// rewrite calls f for every block of k (outermost first); f returns the block's new instruction
// list.
func rewrite(b *ir.Block, f func(in *ir.Inst, out []*ir.Inst) []*ir.Inst) {
	out := make([]*ir.Inst, 0, len(b.Insts))
	for _, in := range b.Insts {
		for _, nb := range in.Blocks {
			rewrite(nb, f)
		}
		out = f(in, out)
	}
	b.Insts = out
}

// gen is a small instruction builder used by the passes: it appends to a list.
type gen struct {
	out []*ir.Inst
	pos ir.Pos
}

func (g *gen) add(in *ir.Inst) *ir.Inst {
	in.Pos = g.pos
	g.out = append(g.out, in)
	return in
}

func (g *gen) konst(t ir.Type, v float64) *ir.Inst {
	return g.add(&ir.Inst{Op: ir.OpConst, Type: t, Aux: ir.ConstBits(t.Elem(), v)})
}

func (g *gen) op(op ir.Op, t ir.Type, args ...*ir.Inst) *ir.Inst {
	return g.add(&ir.Inst{Op: op, Type: t, Args: args})
}
