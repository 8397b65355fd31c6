package main

import (
	"strings"
	"testing"
)

// TestIslandsSection checks doctor's islands section names a body for every device it lists,
// counts the native ones and names the cooperative-matrix validator.
func TestIslandsSection(t *testing.T) {
	var b strings.Builder
	islandsSection(&b)
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{"\nislands (", "native here: ", "host emulation (level H, not native): cuda sm_80 mma.sync", "cooperative-matrix spirv-val: "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the islands section", want)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "] ") && !strings.HasSuffix(l, " portable") && !strings.Contains(l, "mma_i8_16x16x32 ") {
			t.Errorf("device line without an island body: %q", l)
		}
	}
}
