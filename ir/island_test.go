package ir_test

import (
	"strings"
	"testing"

	"github.com/onesource-go/onesource/ir"
)

// islandKernel is a kernel with shared arrays a, b (u32) and d (i32) whose body is one island
// with the given immediates, operands and portable body, after the instructions pre.
func islandKernel(aux uint64, args []*ir.Inst, body []*ir.Inst, pre ...*ir.Inst) *ir.Kernel {
	k := &ir.Kernel{Name: "isl", WorkgroupSize: [3]uint32{64, 1, 1}, Body: &ir.Block{}}
	k.Shared = []*ir.Shared{{Name: "a", Elem: ir.TU32, Len: ir.MMATileWords}, {Name: "b", Elem: ir.TU32, Len: ir.MMATileWords}, {Name: "d", Elem: ir.TI32, Len: ir.MMATileD}}
	k.Body.Append(pre...)
	k.Body.Append(&ir.Inst{Op: ir.OpIsland, Aux: aux, Args: args, Blocks: []*ir.Block{{Insts: body}}})
	return k
}

// TestVerifyIsland checks the verifier's view of an island: a well-formed one passes, and each
// broken part is named.
func TestVerifyIsland(t *testing.T) {
	call := ir.IslandCall{Island: ir.IslandMMAI8, A: 0, B: 1, D: 2}
	zero := func() *ir.Inst { return &ir.Inst{Op: ir.OpConst, Type: ir.TU32} }
	three := func() (*ir.Inst, *ir.Inst, *ir.Inst, []*ir.Inst) {
		x, y, z := zero(), zero(), zero()
		return x, y, z, []*ir.Inst{x, y, z}
	}
	x, y, z, args := three()
	if err := ir.Verify(islandKernel(call.Aux(), args, nil, x, y, z)); err != nil {
		t.Fatalf("a well-formed island: %v", err)
	}
	if got := ir.DecodeIsland(ir.IslandCall{Island: ir.IslandMMAI8, A: 3, B: 65535, D: 7, Accumulate: true}.Aux()); got != (ir.IslandCall{Island: ir.IslandMMAI8, A: 3, B: 65535, D: 7, Accumulate: true}) {
		t.Errorf("Aux round trip: %+v", got)
	}
	swapped := call
	swapped.B, swapped.D = 2, 1
	i32 := &ir.Inst{Op: ir.OpConst, Type: ir.TI32}
	for _, c := range []struct {
		name string
		k    func() *ir.Kernel
		want string
	}{
		{"unknown island", func() *ir.Kernel { x, y, z, a := three(); return islandKernel(0x7f, a, nil, x, y, z) }, "unknown island 127"},
		{"operands", func() *ir.Kernel { x, y, _, a := three(); return islandKernel(call.Aux(), a[:2], nil, x, y) }, "takes 3 operands, has 2"},
		{"i32 tile", func() *ir.Kernel {
			x, y := zero(), zero()
			return islandKernel(call.Aux(), []*ir.Inst{x, y, i32}, nil, x, y, i32)
		}, "tile index 2 is i32, want u32"},
		{"result array", func() *ir.Kernel { x, y, z, a := three(); return islandKernel(swapped.Aux(), a, nil, x, y, z) }, "B is shared d of i32, want u32"},
		{"tile past the end", func() *ir.Kernel {
			x, y := zero(), zero()
			one := &ir.Inst{Op: ir.OpConst, Type: ir.TU32, Aux: 1}
			return islandKernel(call.Aux(), []*ir.Inst{x, one, y}, nil, x, one, y)
		}, "B tile 1 is past the 1 tiles of shared b"},
		{"return in the body", func() *ir.Kernel {
			x, y, z, a := three()
			return islandKernel(call.Aux(), a, []*ir.Inst{{Op: ir.OpReturn}}, x, y, z)
		}, "return inside the portable body of island mma_i8_16x16x32"},
		{"break out of the body", func() *ir.Kernel {
			x, y, z, a := three()
			return islandKernel(call.Aux(), a, []*ir.Inst{{Op: ir.OpBreak}}, x, y, z)
		}, "break outside a loop"},
		{"nested island", func() *ir.Kernel {
			x, y, z, a := three()
			inner := &ir.Inst{Op: ir.OpIsland, Aux: call.Aux(), Args: a, Blocks: []*ir.Block{{}}}
			return islandKernel(call.Aux(), a, []*ir.Inst{inner}, x, y, z)
		}, "island inside the portable body"},
		{"lane tile", func() *ir.Kernel {
			x, y := zero(), zero()
			lane := &ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.SubgroupLane)}
			return islandKernel(call.Aux(), []*ir.Inst{x, y, lane}, nil, x, y, lane)
		}, "tile index 2 differs between the invocations of a subgroup"},
	} {
		err := ir.Verify(c.k())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
