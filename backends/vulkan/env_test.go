package vulkan

import (
	"errors"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/ir"
)

// TestEnvErrorNamesLine: a capability an environment cannot express gives an error that names
// the environment it needs, why, and the line of the instruction that first needed it. No
// capability the emitter writes today needs more than Vulkan 1.1, so the test gives envFinish a
// table where subgroup shuffles need Vulkan 1.2.
func TestEnvErrorNamesLine(t *testing.T) {
	shufflePos := ir.Pos{File: "/src/kern/scan.go", Line: 42}
	k := &ir.Kernel{Name: "scan", Pos: ir.Pos{File: "/src/kern/scan.go", Line: 10}, WorkgroupSize: [3]uint32{64, 1, 1}}
	out := &ir.Buffer{Name: "out", Elem: ir.TU32, Access: ir.WriteOnly, Pos: ir.Pos{File: "/src/kern/scan.go", Line: 11}}
	k.Buffers = []*ir.Buffer{out}
	lane := &ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(ir.SubgroupLane), Pos: ir.Pos{File: "/src/kern/scan.go", Line: 40}}
	one := &ir.Inst{Op: ir.OpConst, Type: ir.TU32, Aux: 1, Pos: ir.Pos{File: "/src/kern/scan.go", Line: 41}}
	sh := &ir.Inst{Op: ir.OpShuffleXor, Type: ir.TU32, Args: []*ir.Inst{lane, one}, Pos: shufflePos}
	st := &ir.Inst{Op: ir.OpStore, Type: ir.TVoid, Mem: ir.MemBuffer, Ref: 0, Args: []*ir.Inst{lane, sh}, Pos: ir.Pos{File: "/src/kern/scan.go", Line: 43}}
	k.Body = &ir.Block{Insts: []*ir.Inst{lane, one, sh, st}}

	needs := map[spvCap]spvNeed{}
	for c, n := range spvCapNeeds {
		needs[c] = n
	}
	needs[spvCapGroupNonUniformShuffle] = spvNeed{min: Vulkan1_2, why: "subgroup shuffles need the test's Vulkan 1.2"}
	emit := func(env Env) error {
		e := &spvEmitter{k: k, m: newSPVModule(), opts: EmitOptions{Env: env}, vals: map[*ir.Inst]uint32{}, bi: map[ir.Builtin]uint32{}}
		if err := e.kernel(); err != nil {
			t.Fatalf("kernel: %v", err)
		}
		return e.envFinish(env, needs)
	}
	err := emit(Vulkan1_1)
	var ie *ir.Error
	if !errors.As(err, &ie) {
		t.Fatalf("Vulkan 1.1: got %v, want an *ir.Error", err)
	}
	if ie.Pos != shufflePos || ie.Kernel != "scan" {
		t.Errorf("error at %v in %q, want %v in scan", ie.Pos, ie.Kernel, shufflePos)
	}
	for _, want := range []string{"needs vulkan1.2", "SPIR-V 1.5", "not vulkan1.1", "subgroup shuffles need"} {
		if !strings.Contains(ie.Msg, want) {
			t.Errorf("message %q lacks %q", ie.Msg, want)
		}
	}
	if !strings.Contains(err.Error(), "scan.go:42") {
		t.Errorf("error %q does not name scan.go:42", err)
	}
	if err := emit(Vulkan1_2); err != nil {
		t.Errorf("Vulkan 1.2: %v", err)
	}
}

// TestCapNeedsTable keeps the capability table honest: every entry with an extension names a
// SPV_ extension, and the versions it gives are SPIR-V versions.
func TestCapNeedsTable(t *testing.T) {
	for c, n := range spvCapNeeds {
		if n.ext != "" && !strings.HasPrefix(n.ext, "SPV_") {
			t.Errorf("capability %d: extension %q", c, n.ext)
		}
		if n.core != 0 && (n.core < spv10 || n.core > spv16 || n.core&0xff != 0) {
			t.Errorf("capability %d: core version %#x", c, n.core)
		}
		if n.min != EnvDefault && n.why == "" {
			t.Errorf("capability %d needs %v without saying why", c, n.min)
		}
	}
}
