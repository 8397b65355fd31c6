package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestWindowExample runs examples/window's own tests (a separate module, so that the root stays
// free of cgo) from the root module's test command: the headless test opens the GLFW window
// under Xvfb on the Vulkan device, runs frames and compares the presented images byte for byte
// with the plain-Go reference. Where that test skips (no cgo toolchain, no X server or Xvfb, no
// Vulkan), this one skips with its reason.
func TestWindowExample(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a cgo module with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := goCmd(t, filepath.Join(root, "examples", "window"), "test", "-count=1", "-v", "-run", "TestWindowFrames", ".")
	if err != nil {
		t.Fatalf("examples/window: go test: %v\n%s", err, out)
	}
	if strings.Contains(out, "--- SKIP: TestWindowFrames") {
		var why []string // the skip message: the test's log lines
		for _, l := range regexp.MustCompile(`(?m)^\s+\S+_test\.go:\d+: .*$`).FindAllString(out, -1) {
			why = append(why, strings.TrimSpace(l))
		}
		t.Skipf("examples/window skipped: %s", strings.Join(why, "; "))
	}
	if !strings.Contains(out, "--- PASS: TestWindowFrames") {
		t.Fatalf("examples/window: TestWindowFrames did not pass:\n%s", out)
	}
	t.Logf("examples/window:\n%s", out)
}
