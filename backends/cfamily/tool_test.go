package cfamily_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/internal/cachedir"
)

// TestRunRemembersSuccess: a compiler run that succeeded is answered from the tools cache the
// next time with the same output and log, without running the compiler; other inputs run it;
// a failing run is never remembered.
func TestRunRemembersSuccess(t *testing.T) {
	t.Setenv(cachedir.Env, t.TempDir())
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	tool := filepath.Join(dir, "cc")
	// The fake compiler copies its source to out, logs a warning, and fails on "bad".
	script := "#!/bin/sh\necho run >> " + runs + "\necho warning: fake\ngrep -q bad \"$1\" && exit 1\ncp \"$1\" out\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	count := func() int { b, _ := os.ReadFile(runs); return strings.Count(string(b), "run") }
	for i := 0; i < 3; i++ {
		r, err := cfamily.Run("fake", tool, []string{"{src}"}, "k.cu", "good text", nil)
		if err != nil || string(r.Output) != "good text" || !strings.Contains(r.Log, "warning: fake") {
			t.Fatalf("run %d: %+v, %v", i, r, err)
		}
	}
	if _, err := cfamily.Run("fake", tool, []string{"{src}"}, "k.cu", "other text", nil); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("the compiler ran %d times for two inputs compiled four times, want 2", n)
	}
	for i := 0; i < 2; i++ {
		if _, err := cfamily.Run("fake", tool, []string{"{src}"}, "k.cu", "bad text", nil); err == nil {
			t.Fatal("a failing compile came back as a success")
		}
	}
	if n := count(); n != 4 {
		t.Errorf("a failing compile ran %d times in two calls, want 2", n-2)
	}
}
