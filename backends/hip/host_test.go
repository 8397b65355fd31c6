package hip_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cfamily/host/hosttest"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// hostEmitter returns an emitter for arch that lowers for any caps and prints with the HIP
// dialect of arch (its header naming those caps).
func hostEmitter(arch string) func(*ir.Kernel, lower.Caps) (string, error) {
	return func(k *ir.Kernel, caps lower.Caps) (string, error) {
		d, err := hip.DialectFor(arch)
		if err != nil {
			return "", err
		}
		if caps == d.Caps {
			return hip.Emit(k, arch)
		}
		low, err := lower.Run(k, caps)
		if err != nil {
			return "", err
		}
		d.Caps = caps
		return cfamily.Print(low, d)
	}
}

// TestHostExecutionH is host execution (H) of the emitted HIP text of every example kernel: the
// .hip text compiled as C++ against the emulation header and run on the CPU (package
// cfamily/host; EMULATION, not a GPU run, never reported as X). Every launch of the examples'
// lavapipe tests runs for gfx90a (CDNA2, sdot4; gfx1030 prints the same), lowered for the target,
// for 8-lane subgroups and portably, at emulated wavefront sizes 8, 32 and 64 where the lowering
// allows (wave32 and wave64 both), in three lane orders; q8_dot, the only example whose text
// depends on the architecture, runs for gfx1100 (RDNA3, sudot4) and the generic target (unpack)
// too, lowered for the target and for 8-lane subgroups.
// Every output must be byte-identical to the example's plain-Go reference (the lavapipe tests'
// expectation).
func TestHostExecutionH(t *testing.T) {
	total := 0
	for _, c := range []struct {
		arch  string
		cases []hosttest.Case
	}{
		{"gfx90a", hosttest.Cases()},
		{"gfx1100", hosttest.Q8DotCases()},
		{hip.Generic, hosttest.Q8DotCases()},
	} {
		caps, err := hip.CapsFor(c.arch)
		if err != nil {
			t.Fatal(err)
		}
		name := c.arch
		if name == hip.Generic {
			name = "generic"
		}
		t.Run(name, func(t *testing.T) {
			b := hosttest.Backend{Lang: host.HIP, Emit: hostEmitter(c.arch), Caps: caps, SkipPortable: c.arch != "gfx90a"}
			n := hosttest.Run(t, b, c.cases)
			total += n
			t.Logf("host execution (H) of HIP text for %s: %d runs byte-identical to the plain-Go references", name, n)
		})
	}
	t.Logf("host execution (H) of HIP text: %d runs of saxpy, rms_norm and q8_dot byte-identical to the plain-Go references", total)
}
