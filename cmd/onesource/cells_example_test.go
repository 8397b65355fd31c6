package main

import (
	"os"
	"os/exec"
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

// TestUserCellMistakes copies examples/cells into a temporary module with three broken packages
// and runs the command on each: a package without Cells, a Cells of another signature (named by
// its file and line), and a cell whose Cases panics (an error naming the package's line, not a
// crash of the command).
func TestUserCellMistakes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a module and the onesource command with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cells")
	copyTree(t, filepath.Join(root, "examples", "cells"), dir)
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	data = regexp.MustCompile(`(?m)^replace github.com/onesource-go/onesource => .*$`).ReplaceAll(data, []byte("replace github.com/onesource-go/onesource => "+filepath.ToSlash(root)))
	if err := os.WriteFile(gomod, data, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nocells/nocells.go", "package nocells\n\n// Two is not a cell.\nfunc Two() int { return 2 }\n")
	write("wrongsig/wrongsig.go", "package wrongsig\n\nimport \"github.com/onesource-go/onesource/kernels\"\n\n// Cells takes an argument.\nfunc Cells(n int) []kernels.Cell { return nil }\n")
	write("panics/panics.go", `package panics

import (
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// Cells has one cell whose conformance inputs index past a slice.
func Cells() []kernels.Cell {
	return []kernels.Cell{{Op: "boom", Type: oracle.F32,
		Build: func(s kernels.Schedule) *dsl.Kernel { return dsl.New("boom", s.Lanes) },
		Cases: func(s kernels.Schedule) ([]kernels.Case, error) {
			var none []kernels.Case
			return none[:1], nil
		}}}
}
`)
	bin := filepath.Join(t.TempDir(), "onesource")
	if out, err := goCmd(t, dir, "build", "-o", bin, onesourceCmd); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		pkg  string
		code int
		says []string
	}{
		{"./nocells", 2, []string{"no package among ./nocells declares func Cells() []kernels.Cell"}},
		{"./wrongsig", 1, []string{"wrongsig.go:6:", "wrongsig.Cells is (n int) []github.com/onesource-go/onesource/kernels.Cell; want func Cells() []kernels.Cell"}},
		{"./panics", 1, []string{"example.com/onesource-cells/panics: cell boom/f32: Cases panicked: runtime error: slice bounds out of range", "panics.go:15)"}},
		{"./nosuch", 2, []string{"the arguments after the flags are packages"}},
	} {
		cmd := exec.Command(bin, "conform", "-backend", "cpu", tc.pkg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		for _, s := range tc.says {
			if code != tc.code || !strings.Contains(string(out), s) {
				t.Errorf("conform %s: exit %d, want %d and %q:\n%s", tc.pkg, code, tc.code, s, out)
			}
		}
		if strings.Contains(string(out), "goroutine ") {
			t.Errorf("conform %s crashed:\n%s", tc.pkg, out)
		}
	}
}
