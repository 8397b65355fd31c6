package metal_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cfamily/host/hosttest"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// hostEmitFor lowers k for caps and prints it with the MSL dialect (its header naming caps).
func hostEmitFor(k *ir.Kernel, caps lower.Caps) (string, error) {
	if caps == metal.Caps {
		return metal.Emit(k)
	}
	low, err := lower.Run(k, caps)
	if err != nil {
		return "", err
	}
	d := *metal.Dialect
	d.Caps = caps
	return cfamily.Print(low, &d)
}

// TestHostExecutionH is host execution (H) of the emitted MSL text of every example kernel: the
// .metal text compiled as C++ against the emulation header (standing in for <metal_stdlib>)
// and run on the CPU (package cfamily/host; EMULATION, not a GPU run and not Apple's compiler,
// never reported as X). Every launch of the examples' lavapipe tests runs lowered for Metal
// (32-lane SIMD groups, unpacked int8 dot), for 8-lane SIMD groups and portably, at emulated
// SIMD-group sizes 8, 32 and 64 where the lowering allows, in three lane orders; every output
// must be byte-identical to the example's plain-Go reference (the lavapipe tests' expectation).
func TestHostExecutionH(t *testing.T) {
	b := hosttest.Backend{Lang: host.MSL, Emit: hostEmitFor, Caps: metal.Caps}
	n := hosttest.Run(t, b, hosttest.Cases())
	t.Logf("host execution (H) of MSL text: %d runs of saxpy, rms_norm and q8_dot byte-identical to the plain-Go references", n)
}
