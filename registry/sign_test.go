package registry

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// testKey is a fixed ed25519 key (the seed is the test's, not a secret).
func testKey(seed byte) ed25519.PrivateKey {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed + byte(i)
	}
	return ed25519.NewKeyFromSeed(s)
}

func trustOf(t *testing.T, keys ...ed25519.PrivateKey) *Trust {
	t.Helper()
	var lines []string
	for i, k := range keys {
		lines = append(lines, TrustLine(k.Public().(ed25519.PublicKey), "key"+string(rune('A'+i))))
	}
	tr, err := ParseTrust("trust.keys", []byte(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// signedReg is a registry a signing gate wrote: k1 declined on gpu0 (ratio 0.5), softmax flipped
// (1.2), both signed by key.
func signedReg(t *testing.T, key ed25519.PrivateKey) *Registry {
	r := newReg(t)
	r.SetSigner(key)
	must(t, r.Register(k1, "sha256:hand", "ggml"))
	must(t, r.Apply(GateResult{Key: k1, Evidence: ev("gpu0", true, 0.5), Verdict: Decline}))
	kd := Key{"softmax", "f32", "vulkan"}
	must(t, r.Register(kd, "sha256:hand", "ggml"))
	must(t, r.Apply(GateResult{Key: kd, Evidence: ev("gpu0", true, 1.2), Verdict: Flip}))
	return r
}

// rechain is a forging tool without the key: it edits the file's history with edit, then makes
// every cell the replay of the history and recomputes the chain and the head, as the code does.
func rechain(t *testing.T, b []byte, edit func(h []Entry) []Entry) []byte {
	t.Helper()
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	f.History = edit(f.History)
	for i := range f.History {
		f.History[i].Seq = i + 1
		f.History[i].Prev = ""
		if i > 0 {
			f.History[i].Prev = entryHash(f.History[i-1])
		}
	}
	f.Head = headOf(f.History)
	rp, err := replay(f.History)
	if err != nil {
		t.Fatal(err)
	}
	f.Cells = nil
	keys := make([]Key, 0, len(rp.cells))
	for k := range rp.cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	for _, k := range keys {
		f.Cells = append(f.Cells, rp.cells[k])
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSignedRegistry: a registry a signing gate wrote verifies against a trust file naming its
// key and loads with it; forged flips are refused: a signed entry edited and re-chained does not
// load at all (its signature fails), and a flip appended or re-signed without the key (its
// signature stripped, or by another key) loads only without a trust file.
func TestSignedRegistry(t *testing.T) {
	key, other := testKey(1), testKey(100)
	r := signedReg(t, key)
	good, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	trust := trustOf(t, key)
	g, err := Parse("good", good)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := g.Verify(trust)
	if err != nil || !strings.Contains(msg, "4 of 4 entries signed, by keyA (4)") || !strings.Contains(msg, "every one of the 1 flips") {
		t.Fatalf("Verify with the trust file: %q, %v", msg, err)
	}
	if _, err := g.Verify(trustOf(t, other)); err == nil || !strings.Contains(err.Error(), "cell softmax/f32/vulkan: the flip on gpu0 rests on evidence no key") {
		t.Errorf("Verify with another key's trust file: %v", err)
	}
	flipK1 := func(h []Entry) []Entry {
		for i := range h {
			if h[i].Key == k1 && h[i].Action == "decline" {
				e := *h[i].Evidence
				e.Ratio = Spread{Median: 1.6, Min: 1.5, Max: 1.7, Pairs: 9}
				e.IncumbentGBps = e.TwinGBps / 1.6
				h[i].Evidence, h[i].Action, h[i].To = &e, "flip", DSL
			}
		}
		return h
	}
	stripSig := func(edit func([]Entry) []Entry) func([]Entry) []Entry {
		return func(h []Entry) []Entry {
			h = edit(h)
			for i := range h {
				if h[i].Key == k1 && h[i].Action == "flip" {
					h[i].Sig = nil
				}
			}
			return h
		}
	}
	resign := func(edit func([]Entry) []Entry) func([]Entry) []Entry {
		return func(h []Entry) []Entry {
			h = edit(h)
			s := &signer{priv: other, pub: base64.StdEncoding.EncodeToString(other.Public().(ed25519.PublicKey))}
			for i := range h {
				if h[i].Key == k1 && h[i].Action == "flip" {
					h[i].Sig = s.sign(h[i])
				}
			}
			return h
		}
	}
	appendFlip := func(h []Entry) []Entry {
		e := ev("gpu0", true, 1.6)
		e.Date = e.Date.Add(3600e9)
		return append(h, Entry{Time: e.Date, Key: k1, Action: "flip", From: Declined, To: DSL, Reason: "forged", Evidence: &e})
	}
	for _, tc := range []struct {
		name  string
		edit  func([]Entry) []Entry
		loads string // "" when it does not load even without a trust file
		err   string
	}{
		{"a signed decline edited into a flip", flipK1, "", "its signature by ed25519:"},
		{"the same with its signature stripped", stripSig(flipK1), "loads", "cell matvec/q4_K/vulkan: the flip on gpu0 rests on evidence no key"},
		{"the same signed by another key", resign(flipK1), "loads", "cell matvec/q4_K/vulkan: the flip on gpu0 rests on evidence no key"},
		{"an unsigned flip appended", appendFlip, "loads", "cell matvec/q4_K/vulkan: the flip on gpu0 rests on evidence no key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged := rechain(t, good, tc.edit)
			fr, err := Parse("forged", forged)
			if tc.loads == "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("without a trust file the forged file should load (unsigned registries keep working): %v", err)
			}
			if c, _ := fr.Cell(k1); c.State != DSL {
				t.Fatalf("the forgery did not flip the cell: %s", c.State)
			}
			if _, err := fr.Verify(trust); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Verify(trust): %v, want %q", err, tc.err)
			}
			path := filepath.Join(t.TempDir(), "cells.json")
			os.WriteFile(path, forged, 0o644)
			if _, err := LoadTrusted(path, trust); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("LoadTrusted: %v", err)
			}
			tf := filepath.Join(t.TempDir(), "trust.keys")
			os.WriteFile(tf, []byte(TrustLine(key.Public().(ed25519.PublicKey), "gate")+"\n"), 0o644)
			t.Setenv(TrustEnv, tf)
			if _, err := Load(path); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Load with %s set: %v", TrustEnv, err)
			}
			if _, err := Open(path); err == nil {
				t.Errorf("Open with %s set: no error", TrustEnv)
			}
		})
	}
	// A merge keeps the signatures: the merged file still verifies against the trust file.
	dst := New()
	if _, err := dst.Merge(g); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Verify(trust); err != nil {
		t.Errorf("a merged signed registry: %v", err)
	}
}

// TestTrustFile: the line and PEM forms read; malformed files are refused with their line.
func TestTrustFile(t *testing.T) {
	pub := testKey(7).Public().(ed25519.PublicKey)
	line := TrustLine(pub, "ci runner 1")
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a line with a name", "# the CI key\n\n" + line + "\n", "ci runner 1"},
		{"a line without a name", TrustLine(pub, "") + "\n", "ed25519:"},
		{"not ed25519", "rsa AAAA x\n", "trust.keys:1: want"},
		{"short key", "ed25519 AAAA\n", "not a base64 ed25519 public key"},
		{"empty", "# nothing\n", "names no key"},
	} {
		tr, err := ParseTrust("trust.keys", []byte(tc.text))
		switch {
		case err != nil && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		case err == nil && !strings.Contains(strings.Join(tr.Names(), ","), tc.want):
			t.Errorf("%s: names %v, want %q", tc.name, tr.Names(), tc.want)
		}
	}
	pemText := "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"
	tr, err := ParseTrust("pem.keys", []byte(pemText))
	if err != nil || len(tr.Names()) != 1 {
		t.Errorf("a PEM public key: %v %v", tr, err)
	}
	priv := testKey(9)
	b, err := KeyPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	kp := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(kp, b, 0o600)
	back, err := LoadKey(kp)
	if err != nil || !back.Equal(priv) {
		t.Errorf("LoadKey(KeyPEM): %v", err)
	}
	os.WriteFile(kp, []byte(pemText), 0o600)
	if _, err := LoadKey(kp); err == nil {
		t.Error("LoadKey of a public key: no error")
	}
}

// FuzzParseTrust: ParseTrust never panics and every key it accepts names itself.
func FuzzParseTrust(f *testing.F) {
	f.Add([]byte(TrustLine(testKey(3).Public().(ed25519.PublicKey), "x") + "\n"))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("# c\ned25519 !!!\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ParseTrust("fuzz", b)
		if err != nil {
			return
		}
		if len(tr.Names()) == 0 {
			t.Fatal("accepted a trust file with no key")
		}
	})
}
