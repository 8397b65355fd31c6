package cuda_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cfamily/host/hosttest"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// hostEmitFor lowers k for caps and prints it with the CUDA dialect (its header naming caps).
func hostEmitFor(k *ir.Kernel, caps lower.Caps) (string, error) {
	if caps == cuda.Caps {
		return cuda.Emit(k)
	}
	low, err := lower.Run(k, caps)
	if err != nil {
		return "", err
	}
	d := *cuda.Dialect
	d.Caps = caps
	return cfamily.Print(low, &d)
}

// TestHostExecutionH is host execution (H) of the emitted CUDA text of every example kernel:
// the .cu text compiled as C++ against the emulation header and run on the CPU (package
// cfamily/host; EMULATION, not a GPU run, never reported as X). Every launch of the examples'
// lavapipe tests runs lowered for CUDA (32-lane warps, __dp4a), for 8-lane subgroups and
// portably, at emulated warp sizes 8, 32 and 64 where the lowering allows, in three lane orders;
// every output must be byte-identical to the example's plain-Go reference (the lavapipe tests'
// expectation).
func TestHostExecutionH(t *testing.T) {
	b := hosttest.Backend{Lang: host.CUDA, Emit: hostEmitFor, Caps: cuda.Caps}
	n := hosttest.Run(t, b, hosttest.Cases())
	t.Logf("host execution (H) of CUDA text: %d runs of saxpy, rms_norm and q8_dot byte-identical to the plain-Go references", n)
}
