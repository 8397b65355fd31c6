package cpu_test

import (
	"testing"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/internal/islandtest"
)

// TestIslandMMA runs the mma island's portable body on the cpu executor against the oracle
// (the executor has no native island: every island runs its portable body here).
func TestIslandMMA(t *testing.T) {
	ks, err := islandtest.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range islandtest.Cases() {
		k := ks[0]
		if c.Accumulate {
			k = ks[1]
		}
		p, err := cpu.Compile(k)
		if err != nil {
			t.Fatal(err)
		}
		bufs := c.Bufs()
		if err := p.Run(bufs, nil, [3]uint32{c.Groups, 1, 1}); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if d := islandtest.Diff(bufs[2], c.Want); d != "" {
			t.Errorf("%s: %s", c.Name, d)
		}
	}
}
