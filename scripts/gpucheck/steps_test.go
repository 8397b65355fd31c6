package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddSteps builds the GPU day's sections from files as the script leaves them: the steps
// file, a conform JSON with an emulated (H) and a device (X) column and one failure, a tuning
// cache, bench records, and two llama runs whose logits agree, then a third that differs.
func TestAddSteps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	steps := write("steps.txt", "conform 0 12.5\ntune 124 30\nllama-cuda 0 1.25\n")
	conform := write("conform.json", `[
	  {"op": "add", "type": "f32", "backend": "cuda", "schedule": "lanes=64", "levels": "EVHB", "bitexact": true},
	  {"op": "matvec", "type": "q4_0", "backend": "cuda", "schedule": "lanes=64", "levels": "EVH", "bitexact": false, "reason": "max ULP 3"},
	  {"op": "exp", "type": "f32", "backend": "vulkan", "schedule": "lanes=64", "levels": "EVX", "bitexact": false, "inexact": true, "within_tolerance": true},
	  {"op": "add", "type": "f32", "backend": "vulkan", "schedule": "lanes=64", "levels": "EVXB", "bitexact": true}]`)
	tuning := write("tuning.json", `{"version": 1, "entries": []}`)
	bench := write("bench.json", `[{"cell": "matvec/f32/vulkan", "gbps": 12.5}]`)
	write("llama-cuda.txt", "generated: 1,2,3\n")
	write("llama-cuda.f32", "\x00\x00\x80\x3f")
	write("llama-vulkan.txt", "generated: 1,2,3\n")
	write("llama-vulkan.f32", "\x00\x00\x80\x3f")
	write("llama-hip.txt", "generated: 1,2,4\n")
	write("llama-hip.f32", "\x00\x00\x00\x40")
	llama := map[string]string{"cuda": filepath.Join(dir, "llama-cuda.txt"), "vulkan": filepath.Join(dir, "llama-vulkan.txt")}

	res := &Results{}
	if err := addSteps(res, steps, conform, tuning, bench, llama); err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 3 || res.Steps[1] != (Step{"tune", 124, 30}) {
		t.Errorf("steps %+v", res.Steps)
	}
	c := res.Conform
	if c == nil || c.Records != 4 {
		t.Fatalf("conform %+v", c)
	}
	if cu := c.ByBackend["cuda"]; cu.Cells != 2 || cu.BitExact != 1 || cu.H != 2 || cu.X != 0 || len(cu.Failed) != 1 || !strings.Contains(cu.Failed[0], "matvec/q4_0/cuda") {
		t.Errorf("cuda column %+v", cu)
	}
	if vk := c.ByBackend["vulkan"]; vk.Cells != 2 || vk.BitExact != 1 || vk.Inexact != 1 || vk.X != 2 || len(vk.Failed) != 0 {
		t.Errorf("vulkan column %+v", vk)
	}
	if string(res.Tuning) != `{"version": 1, "entries": []}` || !strings.Contains(string(res.MatvecBench), "12.5") {
		t.Errorf("tuning %s, bench %s", res.Tuning, res.MatvecBench)
	}
	if res.LlamaLogitsEqual == nil || !*res.LlamaLogitsEqual || res.Llama["cuda"].LogitsSHA256 == "" || !strings.Contains(res.Llama["vulkan"].Output, "1,2,3") {
		t.Errorf("llama %+v, equal %v", res.Llama, res.LlamaLogitsEqual)
	}
	llama["hip"] = filepath.Join(dir, "llama-hip.txt")
	res = &Results{}
	if err := addSteps(res, "", "", "", "", llama); err != nil {
		t.Fatal(err)
	}
	if res.LlamaLogitsEqual == nil || *res.LlamaLogitsEqual {
		t.Errorf("logits of three backends, one different: equal %v", res.LlamaLogitsEqual)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	// Missing outputs (a step that never ran) leave their sections out.
	res = &Results{}
	if err := addSteps(res, filepath.Join(dir, "none"), filepath.Join(dir, "none.json"), "", "", map[string]string{"cuda": filepath.Join(dir, "none.txt")}); err != nil {
		t.Fatal(err)
	}
	if res.Conform != nil || len(res.Llama) != 0 || res.LlamaLogitsEqual != nil {
		t.Errorf("missing files: %+v", res)
	}
}
