package main

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/llama"
	"github.com/onesource-go/onesource/registry"
)

// TestRunSynthetic runs the command on the synthetic model and checks its tokens and logits file
// against the oracle's composition.
func TestRunSynthetic(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	testRunSynthetic(t, []string{"-backend", "vulkan"})
}

// TestRunSyntheticCPU is TestRunSynthetic with -backend cpu and no Vulkan library
// (ONESOURCE_VULKAN_LIBRARY names a file that does not exist): the same tokens and the oracle's
// logits, byte for byte.
func TestRunSyntheticCPU(t *testing.T) {
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	if err := vulkan.Available(); err == nil {
		t.Fatal("vulkan.Available with no library: no error")
	}
	testRunSynthetic(t, []string{"-backend", "cpu"})
}

// TestRunSyntheticNative is TestRunSyntheticCPU with -backend native: every op as native CPU
// code, the oracle's logits byte for byte. Skips, saying why, without a C compiler.
func TestRunSyntheticNative(t *testing.T) {
	if err := native.Available(); err != nil {
		t.Skipf("native CPU code unavailable: %v", err)
	}
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	testRunSynthetic(t, []string{"-backend", "native"})
}

// TestRunSyntheticDefault: without -backend the command serves on engine.DefaultBackend's
// choice and says which; with no Vulkan library that is native CPU code where a C compiler is
// there, else the Go executor.
func TestRunSyntheticDefault(t *testing.T) {
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	want := engine.Native
	if native.Available() != nil {
		want = engine.CPU
	}
	if b, why := engine.DefaultBackend(); b != want {
		t.Fatalf("DefaultBackend: %s (%s), want %s", b, why, want)
	}
	testRunSynthetic(t, nil)
}

// testRunSynthetic runs the command with the extra arguments (the backend; none: the default).
func testRunSynthetic(t *testing.T, extra []string) {
	backend, _ := engine.DefaultBackend()
	if len(extra) == 2 {
		backend = extra[1]
	}
	dir := t.TempDir()
	model, logits := filepath.Join(dir, "m.gguf"), filepath.Join(dir, "logits.f32")
	var out, errb bytes.Buffer
	if rc := run([]string{"-write-synthetic", model}, &out, &errb); rc != 0 {
		t.Fatalf("write-synthetic: %d\n%s", rc, errb.String())
	}
	out.Reset()
	args := append([]string{"-model", model, "-tokens", "3,1,4", "-steps", "3", "-logits", logits, "-ctx", "32", "-trace"}, extra...)
	if rc := run(args, &out, &errb); rc != 0 {
		t.Fatalf("run: %d\n%s", rc, errb.String())
	}
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := llama.ConfigOf(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.ReadWeights(f, c)
	if err != nil {
		t.Fatal(err)
	}
	toks, last, err := llama.Generate(llama.NewReference(c, w, 32), []int32{3, 1, 4}, 3)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(toks))
	for i, tk := range toks {
		ids[i] = strconv.Itoa(int(tk))
	}
	want := "generated: " + strings.Join(ids, ",")
	if !strings.Contains(out.String(), want+"\n") {
		t.Errorf("output does not contain %q:\n%s", want, out.String())
	}
	if len(extra) == 0 && !strings.Contains(out.String(), "backend "+backend+": ") {
		t.Errorf("the output does not say which backend it chose:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "matvec/q4_K/"+backend) || !strings.Contains(out.String(), "twin") ||
		!strings.Contains(out.String(), "; "+backend+" device ") {
		t.Errorf("the trace does not show the cells:\n%s", out.String())
	}
	got, err := os.ReadFile(logits)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, engine.F32Bytes(last)) {
		t.Error("the logits file differs from the oracle's last logits")
	}
	for _, bad := range [][]string{{}, {"-model", model, "-tokens", "x"}, {"-model", filepath.Join(dir, "none.gguf")}, {"-model", model, "-tokens", "99999"},
		{"-model", model, "-backend", "metal"}} {
		bad = append(append([]string(nil), extra...), bad...) // a backend given in bad comes last and wins
		errb.Reset()
		if rc := run(bad, &out, &errb); rc == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}

// TestOutputsAndLimits runs on the cpu backend with no Vulkan library: -logits onto the model
// (by name, through a symbolic link, as a hard link) is refused before the model is read and the
// model keeps its bytes (it used to become 2048 bytes of logits); -steps near the largest int is
// refused at once by the fit check (the sum overflowed, passed, and the run failed seconds later
// at position 256).
func TestOutputsAndLimits(t *testing.T) {
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"-write-synthetic", model}, &out, &errb); rc != 0 {
		t.Fatalf("write-synthetic: %d\n%s", rc, errb.String())
	}
	orig, _ := os.ReadFile(model)
	link, hard := filepath.Join(dir, "link.gguf"), filepath.Join(dir, "hard.gguf")
	if err := os.Symlink(model, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(model, hard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ model, logits string }{{model, model}, {model, link}, {link, model}, {model, hard}} {
		errb.Reset()
		rc := run([]string{"-backend", "cpu", "-model", tc.model, "-tokens", "1", "-steps", "1", "-ctx", "8", "-logits", tc.logits}, &out, &errb)
		if rc != 1 || !strings.Contains(errb.String(), "refusing to overwrite it") {
			t.Errorf("-model %s -logits %s: exit %d, %q", filepath.Base(tc.model), filepath.Base(tc.logits), rc, errb.String())
		}
		if b, _ := os.ReadFile(model); !bytes.Equal(b, orig) {
			t.Fatalf("-logits %s changed the model (%d bytes now)", filepath.Base(tc.logits), len(b))
		}
	}
	errb.Reset()
	start := time.Now()
	rc := run([]string{"-backend", "cpu", "-model", model, "-tokens", "1", "-steps", "9223372036854775807", "-ctx", "8"}, &out, &errb)
	if rc != 1 || !strings.Contains(errb.String(), "do not fit the KV cache") {
		t.Errorf("-steps 9223372036854775807: exit %d after %v, %q; want the fit check's refusal", rc, time.Since(start), errb.String())
	}
}

// TestTrustFlag: with -trust, a registry whose flip no trusted key signed is refused before the
// model is read.
func TestTrustFlag(t *testing.T) {
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	t.Setenv(registry.TrustEnv, "")
	dir := t.TempDir()
	reg := filepath.Join(dir, "cells.json")
	r, _ := registry.Open(reg)
	k := registry.Key{Op: "rms_norm", Type: "f32", Backend: "cpu"}
	if err := r.Register(k, "h", "test"); err != nil {
		t.Fatal(err)
	}
	ev := registry.Evidence{Device: "d", Driver: "v", Toolchain: "t", BitExact: true, TwinGBps: 2, IncumbentGBps: 1,
		Ratio: registry.SpreadOf([]float64{2}), TwinHash: "x", IncumbentHash: "h", Date: time.Unix(1e9, 0).UTC()}
	if err := r.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: registry.Flip}); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	pub, _, _ := ed25519.GenerateKey(nil)
	trust := filepath.Join(dir, "trust.keys")
	os.WriteFile(trust, []byte(registry.TrustLine(pub, "ci")+"\n"), 0o644)
	var out, errb bytes.Buffer
	rc := run([]string{"-backend", "cpu", "-model", filepath.Join(dir, "none.gguf"), "-registry", reg, "-trust", trust}, &out, &errb)
	if rc != 1 || !strings.Contains(errb.String(), "rests on evidence no key of") {
		t.Errorf("-trust with an unsigned flip: exit %d, %q", rc, errb.String())
	}
}
