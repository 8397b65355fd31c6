package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCellsExample runs examples/cells' own test (a separate module: a user's package of cells
// with its manifest of hand-written incumbents) from the root module's test command: it runs
// conform, gate (a flip and a decline), drain (a dry run, and -apply on a copy) and report on
// the module's cells with the onesource command, from the command line. Where that test skips
// (no Vulkan or no glslc past conform), this one skips with its reason.
func TestCellsExample(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a module and the onesource command with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := goCmd(t, filepath.Join(root, "examples", "cells"), "test", "-count=1", "-v", "-run", "TestCommands", "./...")
	if err != nil {
		t.Fatalf("examples/cells: go test: %v\n%s", err, out)
	}
	if strings.Contains(out, "--- SKIP: TestCommands") {
		var why []string
		for _, l := range regexp.MustCompile(`(?m)^\s+\S+_test\.go:\d+: .*$`).FindAllString(out, -1) {
			why = append(why, strings.TrimSpace(l))
		}
		t.Skipf("examples/cells skipped: %s", strings.Join(why, "; "))
	}
	if !strings.Contains(out, "--- PASS: TestCommands") {
		t.Fatalf("examples/cells: TestCommands did not pass:\n%s", out)
	}
	t.Logf("examples/cells:\n%s", out)
}
