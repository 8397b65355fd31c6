package apidoc

import (
	"os/exec"
	"testing"
)

// TestGoVet runs `go vet ./...` over the module: the public API's other guard (the examples'
// own module is vetted by cmd/onesource's go generate test).
func TestGoVet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go vet type-checks the whole module")
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = moduleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet ./...: %v\n%s", err, out)
	}
}
