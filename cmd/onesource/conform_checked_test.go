package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/conformance"
)

// TestConformChecked: `onesource conform` runs checked by default (the JSON records say so and
// the matrix counts the checked runs); -checked=false runs the kernels unchecked.
func TestConformChecked(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	for _, c := range []struct {
		flag    []string
		checked bool
	}{{nil, true}, {[]string{"-checked=false"}, false}} {
		file := filepath.Join(t.TempDir(), "conform.json")
		args := append([]string{"conform", "-op", "add", "-type", "f32", "-backend", "vulkan", "-json", file}, c.flag...)
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", c.flag, code, stdout, stderr)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var recs []conformance.Result
		if err := json.Unmarshal(data, &recs); err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || !recs[0].BitExact || recs[0].Checked != c.checked {
			t.Errorf("%v: records %+v, want one bit-exact with checked %v", c.flag, recs, c.checked)
		}
		if got := strings.Contains(stdout, "checked mode: 1 of 1 runs bounds-checked"); got != c.checked {
			t.Errorf("%v: the matrix says checked %v:\n%s", c.flag, got, stdout)
		}
	}
}
