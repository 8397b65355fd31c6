package kernels

import (
	"testing"

	"github.com/onesource-go/onesource/oracle"
)

// TestKFormatsRandom runs the cells of the K-quant formats on random blocks (every code, every
// scale class) against the oracle.
func TestKFormatsRandom(t *testing.T) {
	for _, typ := range []oracle.Type{oracle.Q2_K, oracle.Q3_K, oracle.Q4_K, oracle.Q5_K, oracle.Q6_K, oracle.Q8_K} {
		t.Run(typ.String(), func(t *testing.T) { stressFormat(t, typ) })
	}
}
