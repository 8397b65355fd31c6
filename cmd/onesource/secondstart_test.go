package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// BenchmarkSecondStart measures a program's first and second start on empty caches, both in one
// run: `onesource conform -op matvec_q8` (Vulkan and CUDA host execution, the sample schedules)
// and the synthetic llama model through examples/llama, each run twice as its own process with
// one fresh cache directory for onesource ($ONESOURCE_CACHE) and Mesa ($XDG_CACHE_HOME). It
// reports the seconds of each start and the ratio, and logs what the second start found
// compiled (conform -v's counts).
//
//	go test ./cmd/onesource -run '^$' -bench SecondStart -benchtime 1x
func BenchmarkSecondStart(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go command not found")
	}
	bin := b.TempDir()
	for _, pkg := range []string{".", "../../examples/llama"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	model := filepath.Join(bin, "synthetic.gguf")
	if out, err := exec.Command(filepath.Join(bin, "llama"), "-write-synthetic", model).CombinedOutput(); err != nil {
		b.Fatalf("llama -write-synthetic: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"conform_matvec_q8", []string{filepath.Join(bin, "onesource"), "conform", "-v", "-op", "matvec_q8", "-backend", "vulkan,cuda", "-schedules", "sample"}},
		{"llama_synthetic", []string{filepath.Join(bin, "llama"), "-model", model, "-steps", "4", "-trace"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				cache := b.TempDir()
				var secs [2]float64
				var last string
				for i := range secs {
					cmd := exec.Command(c.cmd[0], c.cmd[1:]...)
					cmd.Env = append(os.Environ(), "ONESOURCE_CACHE="+cache, "XDG_CACHE_HOME="+cache, "ONESOURCE_HOST_CACHE=")
					start := time.Now()
					out, err := cmd.CombinedOutput()
					secs[i] = time.Since(start).Seconds()
					if err != nil {
						b.Fatalf("%s: %v\n%s", strings.Join(c.cmd, " "), err, out)
					}
					last = string(out)
				}
				b.ReportMetric(secs[0], "first-s")
				b.ReportMetric(secs[1], "second-s")
				b.ReportMetric(secs[0]/secs[1], "first/second")
				for _, line := range regexp.MustCompile(`(?m)^(vulkan: \d+ pipelines|host execution: |pipelines: ).*$`).FindAllString(last, -1) {
					b.Logf("second start: %s", line)
				}
			}
		})
	}
}
