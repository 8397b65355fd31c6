package kernels

import (
	"testing"

	"github.com/onesource-go/onesource/oracle"
)

// TestLegacyFormatsRandom runs the cells of the legacy, q1_0 and q2_0 formats on random blocks
// (every code, every scale class) against the oracle.
func TestLegacyFormatsRandom(t *testing.T) {
	for _, typ := range []oracle.Type{oracle.Q4_0, oracle.Q4_1, oracle.Q5_0, oracle.Q5_1, oracle.Q8_0, oracle.Q8_1, oracle.Q1_0, oracle.Q2_0} {
		t.Run(typ.String(), func(t *testing.T) { stressFormat(t, typ) })
	}
}
