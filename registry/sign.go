package registry

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Signed evidence (the registry's trust contract). The hash chain shows an edit, but anyone can
// recompute it; a signature needs the key. A registry with a signer (SetSigner; `onesource gate
// -sign KEY`) signs every history entry it appends with ed25519 (Go's crypto/ed25519): the
// signature covers the whole entry (its cell, action, states, reason, time and every evidence
// field) except Seq, Prev and Sig itself, so an entry keeps its signature when a merge appends it
// to another history. Parse checks every signature present against the key the entry names: an
// edited signed entry does not load, whatever the chain says.
//
// A trust file (LoadTrust; `-trust KEYS` or the ONESOURCE_TRUST environment variable) lists the
// public keys whose flips are accepted. With one configured (CheckTrust; Load and Open apply
// ONESOURCE_TRUST themselves), a registry loads only when every evidence that lets a twin serve
// over an incumbent (a verdict of flip, in a cell with an incumbent that was not reverted) is
// exactly the evidence of a history entry of that cell signed by a trusted key: a flip forged
// and re-chained without the key is refused, by whoever loads the file (cells -verify, the
// engine, drain). Without a trust file unsigned registries work as before. What a signature
// cannot stop: a tool without the key can still drop or reorder signed entries and re-chain
// them; every state it can reach then rests on evidence a trusted key signed.

// TrustEnv names the environment variable holding the path of the trust file Load and Open
// apply (unset or empty: no trust file).
const TrustEnv = "ONESOURCE_TRUST"

// Signature is an entry's ed25519 signature: Key is the signer's public key and Sig the
// signature, both in standard base64.
type Signature struct {
	Key string `json:"key"`
	Sig string `json:"sig"`
}

// signedBytes is what an entry's signature covers: a domain string and the entry's JSON without
// Seq, Prev and Sig.
func signedBytes(e Entry) []byte {
	e.Seq, e.Prev, e.Sig = 0, "", nil
	b, _ := json.Marshal(e)
	return append([]byte("onesource-registry-entry-v1\n"), b...)
}

type signer struct {
	priv ed25519.PrivateKey
	pub  string
}

func (s *signer) sign(e Entry) *Signature {
	return &Signature{Key: s.pub, Sig: base64.StdEncoding.EncodeToString(ed25519.Sign(s.priv, signedBytes(e)))}
}

// SetSigner makes r sign every entry it appends from now on with priv (nil: stop signing).
func (r *Registry) SetSigner(priv ed25519.PrivateKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if priv == nil {
		r.signer = nil
		return
	}
	r.signer = &signer{priv: priv, pub: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))}
}

// verifySig reports whether e's signature verifies with the key it names.
func verifySig(e Entry) error {
	pub, err := base64.StdEncoding.DecodeString(e.Sig.Key)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return errors.New("its signature names no ed25519 public key")
	}
	sig, err := base64.StdEncoding.DecodeString(e.Sig.Sig)
	if err != nil || !ed25519.Verify(ed25519.PublicKey(pub), signedBytes(e), sig) {
		return fmt.Errorf("its signature by %s does not verify: the entry was edited after it was signed", Fingerprint(ed25519.PublicKey(pub)))
	}
	return nil
}

// Fingerprint names a public key in messages: "ed25519:" and the first 12 characters of its
// base64.
func Fingerprint(pub ed25519.PublicKey) string {
	s := base64.StdEncoding.EncodeToString(pub)
	return "ed25519:" + s[:12]
}

// LoadKey reads an ed25519 private key: a PEM "PRIVATE KEY" block (PKCS#8, as `openssl genpkey
// -algorithm ed25519` and WriteKey write it).
func LoadKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry: key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("registry: key %s: not a PEM PRIVATE KEY block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("registry: key %s: %v", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("registry: key %s: a %T, not an ed25519 key", path, k)
	}
	return priv, nil
}

// KeyPEM is priv as a PEM "PRIVATE KEY" block (PKCS#8), the form LoadKey reads.
func KeyPEM(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// TrustLine is pub as a line of a trust file: "ed25519 BASE64 NAME".
func TrustLine(pub ed25519.PublicKey, name string) string {
	return strings.TrimSpace("ed25519 " + base64.StdEncoding.EncodeToString(pub) + " " + name)
}

// Trust is a set of trusted public keys (LoadTrust).
type Trust struct {
	Path  string
	keys  map[string]string // base64 public key -> name
	order []string
}

// LoadTrust reads a trust file: lines "ed25519 BASE64 [NAME]" (blank lines and lines starting
// with # are skipped) and PEM "PUBLIC KEY" blocks (PKIX, as `openssl pkey -pubout` writes them).
// A file that names no key is an error (it would trust nothing and refuse every flip; say so
// rather than surprise).
func LoadTrust(path string) (*Trust, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry: trust file: %w", err)
	}
	return ParseTrust(path, b)
}

// ParseTrust reads a trust file's content (see LoadTrust); path names it in errors.
func ParseTrust(path string, b []byte) (*Trust, error) {
	t := &Trust{Path: path, keys: map[string]string{}}
	add := func(pub []byte, name string) {
		k := base64.StdEncoding.EncodeToString(pub)
		if _, dup := t.keys[k]; !dup {
			t.order = append(t.order, k)
		}
		if name == "" {
			name = Fingerprint(ed25519.PublicKey(pub))
		}
		t.keys[k] = name
	}
	rest := b
	for {
		blk, after := pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "PUBLIC KEY" {
			k, err := x509.ParsePKIXPublicKey(blk.Bytes)
			pub, ok := k.(ed25519.PublicKey)
			if err != nil || !ok {
				return nil, fmt.Errorf("registry: trust file %s: a PUBLIC KEY block that is not an ed25519 key (%v)", path, err)
			}
			add(pub, blk.Headers["Name"])
		}
		rest = after
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	inPEM := false
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(s, "-----BEGIN "):
			inPEM = true
			continue
		case strings.HasPrefix(s, "-----END "):
			inPEM = false
			continue
		case inPEM || s == "" || strings.HasPrefix(s, "#"):
			continue
		}
		f := strings.Fields(s)
		if len(f) < 2 || f[0] != "ed25519" {
			return nil, fmt.Errorf("registry: trust file %s:%d: want \"ed25519 BASE64 [NAME]\"", path, line)
		}
		pub, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("registry: trust file %s:%d: %q is not a base64 ed25519 public key", path, line, f[1])
		}
		add(pub, strings.Join(f[2:], " "))
	}
	if len(t.keys) == 0 {
		return nil, fmt.Errorf("registry: trust file %s names no key", path)
	}
	return t, nil
}

// TrustFromEnv loads the trust file ONESOURCE_TRUST names; nil when it is unset or empty.
func TrustFromEnv() (*Trust, error) {
	p := os.Getenv(TrustEnv)
	if p == "" {
		return nil, nil
	}
	t, err := LoadTrust(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TrustEnv, err)
	}
	return t, nil
}

// Names lists the trusted keys' names, in file order.
func (t *Trust) Names() []string {
	var out []string
	for _, k := range t.order {
		out = append(out, t.keys[k])
	}
	return out
}

// CheckTrust checks r against t (see the trust contract) and describes the result: how many
// entries are signed, by which trusted keys, and that every flip rests on them. A nil t checks
// nothing.
func (r *Registry) CheckTrust(t *Trust) (string, error) {
	if t == nil {
		return "no trust file: signatures not required", nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkTrust(t)
}

func (r *Registry) checkTrust(t *Trust) (string, error) {
	// Every (cell, evidence) a trusted key signed.
	type signedEv struct {
		key Key
		ev  string
	}
	signedBy := map[signedEv]string{}
	signers := map[string]int{}
	nsigned := 0
	for _, e := range r.history {
		if e.Sig == nil {
			continue
		}
		nsigned++
		name, ok := t.keys[e.Sig.Key]
		if !ok {
			continue
		}
		signers[name]++
		// A conflict entry's evidence is a copy (the dropped or the kept one): the entry that
		// recorded it vouches for it, not the merge.
		if e.Evidence != nil && e.Action != "conflict" {
			b, _ := json.Marshal(*e.Evidence)
			signedBy[signedEv{e.Key, string(b)}] = name
		}
	}
	flips := 0
	for _, k := range r.sortedKeys() {
		c := r.cells[k]
		if c.Incumbent == "" || c.State == Hand && len(c.Evidence) > 0 {
			continue // no incumbent to displace, or reverted: the incumbent serves everywhere
		}
		for _, e := range c.Evidence {
			if v, _ := Judge(e, r.threshold); v != Flip || !e.HasIncumbent() {
				continue
			}
			b, _ := json.Marshal(e)
			if _, ok := signedBy[signedEv{k, string(b)}]; !ok {
				return "", fmt.Errorf("cell %s: the flip on %s rests on evidence no key of %s signed (%d trusted keys): refusing the registry", k, e.Device, t.Path, len(t.keys))
			}
			flips++
		}
	}
	var names []string
	for n, c := range signers {
		names = append(names, fmt.Sprintf("%s (%d)", n, c))
	}
	sort.Strings(names)
	by := "none by a trusted key"
	if len(names) > 0 {
		by = "by " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("%d of %d entries signed, %s; every one of the %d flips rests on evidence a key of %s signed", nsigned, len(r.history), by, flips, t.Path), nil
}
