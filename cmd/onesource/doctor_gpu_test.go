package main

import (
	"strings"
	"testing"
)

// TestGPURuntimes checks that the doctor's GPU sections are there and say, for each runtime,
// either devices or why not, without failing on a machine that has neither.
func TestGPURuntimes(t *testing.T) {
	var b strings.Builder
	gpuRuntimes(&b)
	out := b.String()
	t.Logf("\n%s", out)
	for _, section := range []string{"\ncuda:\n", "\nhip:\n"} {
		i := strings.Index(out, section)
		if i < 0 {
			t.Fatalf("no %q section", strings.TrimSpace(section))
		}
		body := out[i+len(section):]
		if j := strings.Index(body, "\n\n"); j >= 0 {
			body = body[:j]
		}
		if !strings.Contains(body, "unavailable: ") && !strings.Contains(body, "[0] ") {
			t.Errorf("%s section lists no device and gives no reason:\n%s", strings.TrimSpace(section), body)
		}
	}
}
