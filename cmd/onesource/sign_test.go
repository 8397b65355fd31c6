package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/registry"
)

// TestSignedRegistryRefusedWhenForged: a registry written with a signing key (`onesource key`,
// as gate -sign writes it) verifies against the trust file; a flip forged into it by someone with
// the code but not the key (a declined cell flipped by appended evidence, the chain recomputed
// as the code computes it) still loads without a trust file, as unsigned registries do, but is
// refused by `cells -verify -trust`, by $ONESOURCE_TRUST, by `drain -apply` (which would have
// deleted the hand-written file of a cell whose incumbent still served) and by the engine.
func TestSignedRegistryRefusedWhenForged(t *testing.T) {
	t.Setenv(registry.TrustEnv, "")
	dir, man, _ := outputFixture(t)
	keyPath, trustPath := filepath.Join(t.TempDir(), "gate.pem"), filepath.Join(t.TempDir(), "trust.keys")
	var out, errb bytes.Buffer
	if rc := runMain([]string{"key", "-o", keyPath, "-name", "ci-gate"}, &out, &errb); rc != 0 {
		t.Fatalf("key: exit %d: %s", rc, errb.String())
	}
	if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the key file: %v %v", st, err)
	}
	if rc := runMain([]string{"key", "-o", keyPath}, &bytes.Buffer{}, &bytes.Buffer{}); rc != 1 {
		t.Errorf("key over an existing key: exit %d", rc)
	}
	os.WriteFile(trustPath, out.Bytes(), 0o644)
	key, err := registry.LoadKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(dir, "signed.json")
	r, _ := registry.Open(reg)
	r.SetSigner(key)
	evidence := func(ratio float64, date time.Time) registry.Evidence {
		return registry.Evidence{Device: "d", Driver: "v", Toolchain: "t", BitExact: true, TwinGBps: ratio, IncumbentGBps: 1,
			Ratio: registry.SpreadOf([]float64{ratio}), TwinHash: "x", IncumbentHash: "h", Date: date}
	}
	for op, ratio := range map[string]float64{"add": 1.1, "rms_norm": 0.5} {
		k := registry.Key{Op: op, Type: "f32", Backend: "vulkan"}
		if err := r.Register(k, "h", "manifest"); err != nil {
			t.Fatal(err)
		}
		ev := evidence(ratio, time.Unix(1e9, 0).UTC())
		v, _ := registry.Judge(ev, r.Threshold())
		if err := r.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		var o, e bytes.Buffer
		rc := runMain(args, &o, &e)
		return rc, o.String() + e.String()
	}
	if rc, msg := run("cells", "-registry", reg, "-verify", "-trust", trustPath); rc != 0 || !strings.Contains(msg, "4 of 4 entries signed, by ci-gate (4)") {
		t.Fatalf("cells -verify -trust of the signed registry: exit %d\n%s", rc, msg)
	}
	// The forgery: rms_norm, declined, flipped by an appended, unsigned record.
	f, err := registry.Load(reg)
	if err != nil {
		t.Fatal(err)
	}
	k := registry.Key{Op: "rms_norm", Type: "f32", Backend: "vulkan"}
	if err := f.Apply(registry.GateResult{Key: k, Evidence: evidence(1.6, time.Unix(2e9, 0).UTC()), Verdict: registry.Flip}); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(""); err != nil {
		t.Fatal(err)
	}
	if rc, msg := run("cells", "-registry", reg, "-verify"); rc != 0 {
		t.Fatalf("without a trust file the forged registry is an unsigned one and loads: exit %d\n%s", rc, msg)
	}
	const refusal = "cell rms_norm/f32/vulkan: the flip on d rests on evidence no key of"
	if rc, msg := run("cells", "-registry", reg, "-verify", "-trust", trustPath); rc != 1 || !strings.Contains(msg, refusal) {
		t.Errorf("cells -verify -trust: exit %d\n%s", rc, msg)
	}
	comp := filepath.Join(dir, "rms_norm.comp")
	if rc, msg := run("drain", "-manifest", man, "-registry", reg, "-trust", trustPath, "-apply"); rc != 1 || !strings.Contains(msg, refusal) {
		t.Errorf("drain -apply -trust: exit %d\n%s", rc, msg)
	}
	t.Setenv(registry.TrustEnv, trustPath)
	if rc, msg := run("cells", "-registry", reg, "-verify"); rc != 1 || !strings.Contains(msg, refusal) {
		t.Errorf("cells -verify with %s: exit %d\n%s", registry.TrustEnv, rc, msg)
	}
	if rc, msg := run("drain", "-manifest", man, "-registry", reg, "-apply"); rc != 1 || !strings.Contains(msg, refusal) {
		t.Errorf("drain -apply with %s: exit %d\n%s", registry.TrustEnv, rc, msg)
	}
	if _, err := os.Stat(comp); err != nil {
		t.Fatalf("the refused drain deleted rms_norm.comp: %v", err)
	}
	if e, err := engine.Open(engine.Options{Backend: engine.CPU, Registry: f}); err == nil || !strings.Contains(err.Error(), refusal) {
		if e != nil {
			e.Close()
		}
		t.Errorf("engine.Open with %s: %v", registry.TrustEnv, err)
	}
	trust, _ := registry.LoadTrust(trustPath)
	t.Setenv(registry.TrustEnv, "")
	if e, err := engine.Open(engine.Options{Backend: engine.CPU, Registry: f, Trust: trust}); err == nil || !strings.Contains(err.Error(), refusal) {
		if e != nil {
			e.Close()
		}
		t.Errorf("engine.Open with Options.Trust: %v", err)
	}
	e, err := engine.Open(engine.Options{Backend: engine.CPU, Registry: r, Trust: trust})
	if err != nil {
		t.Fatalf("engine.Open of the signed registry: %v", err)
	}
	e.Close()
	// Without a trust file the forgery works: the drain deletes the declined cell's file.
	if rc, msg := run("drain", "-manifest", man, "-registry", reg, "-apply"); rc != 0 || !strings.Contains(msg, "no trust file") {
		t.Fatalf("drain -apply without a trust file: exit %d\n%s", rc, msg)
	}
	if _, err := os.Stat(comp); err == nil {
		t.Error("without a trust file the forged flip did not let rms_norm.comp go: the test forged nothing")
	}
}
