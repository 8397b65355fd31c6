package webgpu

import (
	"errors"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Caps is the lowering target of core WGSL (what `onesource gen` writes and the conformance
// suite runs): no subgroups (reductions use workgroup memory only), no packed int8 dot (it is
// unpacked into multiply-adds), f16 arithmetic done in f32, no float atomics (f32 atomic adds
// become compare-exchange loops). Options.Caps is the target with extensions.
var Caps = lower.Caps{}

// Options choose the WGSL extensions a module may use. The zero value is core WGSL, which every
// WebGPU implementation accepts.
type Options struct {
	// F16 allows `enable f16;` (the shader-f16 feature): f16 values and f16 storage-buffer
	// elements are WGSL's f16, and f16 arithmetic stays f16. Without it, f16 values live in f32
	// variables and f16 buffer elements are halves of u32 words.
	F16 bool
	// SubgroupSize, when above 1, allows `enable subgroups;` (the subgroups feature) and lowers
	// with subgroup shuffles for subgroups of that many invocations: it must be a power of two no
	// larger than the adapter's subgroupMinSize, and workgroups are assumed to be laid out in
	// subgroups of consecutive local indices.
	SubgroupSize int
	// PackedDot allows WGSL's packed_4x8_integer_dot_product language extension (dot4I8Packed).
	PackedDot bool
}

// Caps returns the lowering target for o.
func (o Options) Caps() lower.Caps {
	c := Caps
	c.Float16 = o.F16
	c.DotI8x4 = o.PackedDot
	if o.SubgroupSize > 1 && o.SubgroupSize&(o.SubgroupSize-1) == 0 {
		c.SubgroupSize = o.SubgroupSize
	}
	return c
}

// MinSubgroupSize is the smallest subgroup WebGPU adapters report (GPUAdapterInfo's
// subgroupMinSize is at least 4): what OptionsFor assumes when a kernel needs subgroups.
const MinSubgroupSize = 4

// OptionsFor returns the options a kernel needs: core WGSL, unless the kernel uses subgroups
// itself (its lane id, subgroup size or id, shuffles, subgroup reductions), which WGSL has only
// with `enable subgroups;`: then SubgroupSize is the fewest lanes the kernel's shuffles need
// (lower.MinSubgroup), at least MinSubgroupSize. Reductions the lowering expands use the
// subgroups too. This is what `onesource gen` and the conformance suite emit.
func OptionsFor(k *ir.Kernel) Options {
	uses := false
	if k != nil && k.Body != nil {
		ir.Walk(k.Body, func(in *ir.Inst) bool {
			switch in.Op {
			case ir.OpShuffleXor, ir.OpShuffle, ir.OpSubgroupReduce:
				uses = true
			case ir.OpBuiltin:
				switch ir.Builtin(in.Aux) {
				case ir.SubgroupSize, ir.SubgroupLane, ir.SubgroupID:
					uses = true
				}
			}
			return !uses
		})
	}
	if !uses {
		return Options{}
	}
	return Options{SubgroupSize: max(MinSubgroupSize, lower.MinSubgroup(k))}
}

// Binding is one storage buffer of a module: @group(0) @binding(i) with i its index in
// Module.Bindings. The kernel's buffers come first, in order; the parameter struct, when the
// kernel has parameters, is the last binding.
type Binding struct {
	Name string
	// Type is the WGSL type of the binding: "array<f32>", "array<atomic<u32>>", or the
	// parameter struct's name.
	Type string
	// ElemBytes is the bytes one element of the kernel's buffer takes (1, 2, 4, 8 or 16; 0 for
	// the parameter struct).
	ElemBytes int
	// Words says the kernel's 8-bit or 16-bit elements are packed into u32 words: bind the bytes
	// padded with zeros to a multiple of 4 (WebGPU requires that of every binding anyway).
	Words bool
	// ReadOnly says the binding is declared var<storage, read>.
	ReadOnly bool
	// Params marks the parameter struct: each parameter takes 4 bytes at offset 4*i, in
	// declaration order (the bytes a Vulkan push-constant block of the same kernel holds).
	Params bool
}

// Module is one emitted WGSL module: its source and what a runtime needs to bind and dispatch
// it.
type Module struct {
	Name          string    // the kernel's name: the @compute entry point
	Source        string    // the WGSL text
	Bindings      []Binding // @group(0) @binding(i)
	WorkgroupSize [3]uint32
	// SubgroupSize is the subgroup size the lowering assumed (0: none): the adapter's
	// subgroupMinSize must be at least this.
	SubgroupSize int
	// Enables lists the extensions the module enables ("f16", "subgroups") and Requires the
	// language extensions it uses ("packed_4x8_integer_dot_product").
	Enables, Requires []string
	// ParamsBytes is the size of the parameter struct (4 bytes per parameter), 0 if none.
	ParamsBytes int
}

// Compile lowers k for the target o describes and emits its WGSL module. k is not modified.
func Compile(k *ir.Kernel, o Options) (*Module, error) {
	if k == nil {
		return nil, errors.New("webgpu: Compile: nil kernel")
	}
	low, err := lower.Run(k, o.Caps())
	if err != nil {
		return nil, err
	}
	return Emit(low, o)
}
