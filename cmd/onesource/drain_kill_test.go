//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/internal/incumbentstest"
	"github.com/onesource-go/onesource/registry"
)

const drainKillEnv = "ONESOURCE_DRAIN_KILL_AT" // "STEP MANIFEST REGISTRY"

// TestHelperDrainKill is the child of TestDrainApplyKilledAtEveryStep: it runs `onesource drain
// -apply`, printing every step of the transaction, and kills itself with SIGKILL at the step
// drainKillEnv names.
func TestHelperDrainKill(t *testing.T) {
	spec := os.Getenv(drainKillEnv)
	if spec == "" {
		t.Skip("helper process for TestDrainApplyKilledAtEveryStep")
	}
	f := strings.Fields(spec)
	at, _ := strconv.Atoi(f[0])
	atomicfile.StepHook = func(n int, what string) {
		fmt.Printf("STEP %d %s\n", n, what)
		if n == at {
			os.Stdout.Sync()
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
	}
	var out, errb bytes.Buffer
	rc := runMain([]string{"drain", "-manifest", f[1], "-registry", f[2], "-apply"}, &out, &errb)
	fmt.Printf("EXIT %d\n%s%s", rc, out.String(), errb.String())
	os.Exit(0)
}

// drainTree writes the incumbents fixture with add, mul and matvec flipped (their three files
// go) and rms_norm and swiglu declined, the manifest mode 0640, and returns the manifest and the
// registry paths.
func drainTree(t *testing.T) (man, reg string) {
	t.Helper()
	dir := t.TempDir()
	man, err := incumbentstest.Write(dir, filepath.Join("..", "..", "examples", "incumbents"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(man, 0o640); err != nil {
		t.Fatal(err)
	}
	reg = filepath.Join(t.TempDir(), "registry.json")
	r, _ := registry.Open(reg)
	for op, ratio := range map[string]float64{"add": 1.2, "mul": 1.05, "matvec": 1.5, "rms_norm": 0.8, "swiglu": 0.9} {
		k := registry.Key{Op: op, Type: "f32", Backend: "vulkan"}
		if err := r.Register(k, "h", "manifest"); err != nil {
			t.Fatal(err)
		}
		ev := registry.Evidence{Device: "d", Driver: "v", Toolchain: "t", BitExact: true, TwinGBps: ratio, IncumbentGBps: 1,
			Ratio: registry.SpreadOf([]float64{ratio}), TwinHash: "x", IncumbentHash: "h", Date: time.Unix(1e9, 0).UTC()}
		v, _ := registry.Judge(ev, r.Threshold())
		if err := r.Apply(registry.GateResult{Key: k, Evidence: ev, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Save(""); err != nil {
		t.Fatal(err)
	}
	return man, reg
}

// treeState is every file of a directory (names, bytes and modes, hidden files included).
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, st os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if st.IsDir() {
			out[rel+"/"] = st.Mode().String()
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = st.Mode().String() + " " + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffStates(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "-"+k)
		} else if w != v {
			d = append(d, "~"+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "+"+k)
		}
	}
	return d
}

// runDrainChild runs TestHelperDrainKill killing itself at step at, and returns its step lines
// and whether it was killed.
func runDrainChild(t *testing.T, at int, man, reg string) ([]string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDrainKill$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s %s", drainKillEnv, at, man, reg))
	out, err := cmd.Output()
	var steps []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "STEP ") {
			steps = append(steps, strings.TrimPrefix(sc.Text(), "STEP "))
		}
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return steps, true
		}
	}
	if err != nil {
		t.Fatalf("child (kill at %d): %v\n%s", at, err, out)
	}
	if !strings.Contains(string(out), "EXIT 0") {
		t.Fatalf("child (kill at %d) failed:\n%s", at, out)
	}
	return steps, false
}

// TestDrainApplyKilledAtEveryStep kills `onesource drain -apply` with SIGKILL at every step
// boundary of its transaction (after the journal, the stage, the staged manifest, each file moved
// aside, the commit, the stage's removal) and then lets the next command recover the tree (the
// odd steps `drain -recover`, the even ones a plain `drain`, whose manifest load recovers): the
// tree is then exactly as before the drain (killed before the commit) or exactly as an
// uninterrupted drain leaves it (after), the manifest loads, nothing of the transaction is left,
// and the manifest keeps its mode 0640 (drain used to rewrite it 0600). Before, 4 kills in 30
// left files moved aside while the manifest still named them.
func TestDrainApplyKilledAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a child process per step")
	}
	man, reg := drainTree(t)
	dir := filepath.Dir(man)
	before := treeState(t, dir)
	steps, killed := runDrainChild(t, 1<<30, man, reg)
	if killed {
		t.Fatal("the uninterrupted child was killed")
	}
	after := treeState(t, dir)
	for _, f := range []string{"add.comp", "mul.comp", "matvec.comp"} {
		if _, ok := after[f]; ok {
			t.Errorf("an uninterrupted drain left %s", f)
		}
	}
	if !strings.HasPrefix(after["manifest.json"], "-rw-r----- ") {
		t.Errorf("the drained manifest's mode: %q", after["manifest.json"][:10])
	}
	for k := range after {
		if strings.HasPrefix(k, ".") {
			t.Errorf("an uninterrupted drain left %s", k)
		}
	}
	commit := -1
	for i, s := range steps {
		if strings.HasSuffix(s, " committed") {
			commit = i + 1
		}
	}
	if len(steps) < 8 || commit < 0 {
		t.Fatalf("the transaction's steps: %q", steps)
	}
	t.Logf("%d steps: %s", len(steps), strings.Join(steps, "; "))
	for at := 1; at <= len(steps); at++ {
		man, reg := drainTree(t)
		dir := filepath.Dir(man)
		got, killed := runDrainChild(t, at, man, reg)
		if !killed || len(got) != at {
			t.Fatalf("kill at step %d: killed %v after %d steps", at, killed, len(got))
		}
		var args []string
		if at%2 == 1 {
			args = []string{"drain", "-recover", "-manifest", man}
		} else {
			args = []string{"drain", "-manifest", man, "-registry", reg}
		}
		var out, errb bytes.Buffer
		if rc := runMain(args, &out, &errb); rc != 0 {
			t.Fatalf("kill at step %d (%s): %v: exit %d\n%s%s", at, got[at-1], args[:2], rc, out.String(), errb.String())
		}
		want, which := after, "after"
		if at < commit {
			want, which = before, "before"
		}
		if d := diffStates(want, treeState(t, dir)); len(d) > 0 {
			t.Errorf("kill at step %d (%s), recovered by %v: the tree differs from the one %s the drain: %v\n%s", at, got[at-1], args[:2], which, d, out.String())
		}
		if _, err := incumbent.Load(man); err != nil {
			t.Errorf("kill at step %d: the manifest does not load: %v", at, err)
		}
	}
}
