package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/onesource-go/onesource/registry"
)

func init() {
	register("key", "make an ed25519 key for gate -sign; prints its trust-file line", runKey)
}

// runKey is `onesource key -o KEY.pem [-name NAME]`: a new ed25519 private key, written 0600 as
// PEM PKCS#8 (what gate -sign reads; `openssl genpkey -algorithm ed25519` makes the same), to a
// file that must not exist yet (a key is never overwritten); its public half is printed as a
// line of a trust file (what -trust and ONESOURCE_TRUST read).
func runKey(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "the private key file to create")
	name := fs.String("name", "", "the key's name in the trust-file line")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource key -o KEY.pem [-name NAME]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err == nil {
		err = writeKey(*out, priv)
	}
	if err != nil {
		fmt.Fprintln(stderr, "onesource key:", err)
		return 1
	}
	fmt.Fprintln(stdout, registry.TrustLine(pub, *name))
	return 0
}

func writeKey(path string, priv ed25519.PrivateKey) error {
	b, err := registry.KeyPEM(priv)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: a key is never overwritten", path)
		}
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
