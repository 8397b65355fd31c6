package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crashAt runs t with StepHook panicking at step n (a crash: nothing after it runs, not even
// the undo) and reports whether it crashed.
func crashAt(t Transaction, n int) (crashed bool) {
	defer func() {
		StepHook = nil
		if r := recover(); r != nil {
			crashed = true
		}
	}()
	StepHook = func(s int, _ string) {
		if s == n {
			panic(fmt.Sprint("crash at ", s))
		}
	}
	if err := t.Run(); err != nil {
		panic(err)
	}
	return false
}

func txTree(t *testing.T) (Transaction, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"manifest.json": "old manifest", "a.comp": "a", "b.comp": "b", "keep.comp": "keep"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Transaction{Dir: dir, Replace: filepath.Join(dir, "manifest.json"), Old: []byte("old manifest"), Data: []byte("new manifest"),
		Remove: []string{filepath.Join(dir, "a.comp"), filepath.Join(dir, "b.comp")}, What: "test"}, files
}

func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}

// TestTransactionCrashes: a crash at every step, recovered (twice: Recover is idempotent), leaves
// exactly the old tree before the commit and exactly the new one after it.
func TestTransactionCrashes(t *testing.T) {
	for n := 1; ; n++ {
		tx, old := txTree(t)
		if !crashAt(tx, n) {
			if n < 7 {
				t.Fatalf("only %d steps", n-1)
			}
			break
		}
		for i := 0; i < 2; i++ {
			if _, err := Recover(tx.Dir); err != nil {
				t.Fatalf("crash at %d: recover %d: %v", n, i, err)
			}
		}
		want := old
		if n >= 6 { // journal, stage, staged, a, b: then the commit
			want = map[string]string{"manifest.json": "new manifest", "keep.comp": "keep"}
		}
		if got := dirFiles(t, tx.Dir); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("crash at step %d, recovered: %v, want %v", n, got, want)
		}
	}
}

// TestRecoverRefusesAnEditedFile: when the replaced file holds neither the old nor the new content
// (edited after the crash), Recover changes nothing and says where the moved files are; a stale
// journal temporary file (a crash while writing the journal) is removed.
func TestRecoverRefusesAnEditedFile(t *testing.T) {
	tx, _ := txTree(t)
	if !crashAt(tx, 4) { // a.comp moved aside
		t.Fatal("no crash")
	}
	os.WriteFile(tx.Replace, []byte("someone's edit"), 0o644)
	before := dirFiles(t, tx.Dir)
	if _, err := Recover(tx.Dir); err == nil || !strings.Contains(err.Error(), "neither its old nor its new content") {
		t.Fatalf("Recover: %v", err)
	}
	if got := dirFiles(t, tx.Dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("a refused recovery changed the tree: %v", got)
	}
	if err := tx.Run(); err == nil {
		t.Error("Run over an unrecoverable journal succeeded")
	}
	tx2, _ := txTree(t)
	stale := filepath.Join(tx2.Dir, "."+JournalName+".tmp-123")
	os.WriteFile(stale, []byte("{"), 0o644)
	os.WriteFile(filepath.Join(tx2.Dir, JournalName), []byte(`{"format":"onesource-journal","what":"test","replace":"`+tx2.Replace+`","old_hash":"`+Hash(tx2.Old)+`","new_hash":"x","stage":"`+filepath.Join(tx2.Dir, ".onesource-stage-x")+`"}`), 0o644)
	if msg, err := Recover(tx2.Dir); err != nil || !strings.Contains(msg, "rolled back") {
		t.Fatalf("Recover: %q %v", msg, err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the stale journal temporary file is still there")
	}
}

// FuzzRecover: whatever the journal holds, Recover does not panic, touches nothing outside its
// directory (a file beside it keeps its bytes) and removes no directory but a stage of its own.
func FuzzRecover(f *testing.F) {
	f.Add([]byte(`{"format":"onesource-journal","what":"x","replace":"REPLACE","old_hash":"OLD","new_hash":"NEW","stage":"DIR/.onesource-stage-1","staged":"DIR/.onesource-stage-1/r","moves":[{"from":"DIR/a.comp","to":"DIR/.onesource-stage-1/0-a.comp"}]}`))
	f.Add([]byte(`{"format":"onesource-journal","replace":"REPLACE","old_hash":"OLD","stage":"DIR/.onesource-stage-1","moves":[{"from":"OUTSIDE","to":"DIR/.onesource-stage-1/x"}]}`))
	f.Add([]byte(`{"format":"onesource-journal","replace":"REPLACE","old_hash":"OLD","stage":"DIR/.onesource-stage-1","moves":[{"from":"DIR/b","to":"OUTSIDE"}]}`))
	f.Add([]byte(`{"format":"onesource-journal","replace":"REPLACE","old_hash":"OLD","stage":"DIR/..","moves":[]}`))
	f.Add([]byte(`{"format":"onesource-journal","replace":"REPLACE","old_hash":"OLD","stage":"DIR/keep","moves":[]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "tree")
		os.Mkdir(dir, 0o755)
		outside := filepath.Join(root, "outside.txt")
		os.WriteFile(outside, []byte("keep"), 0o644)
		replace := filepath.Join(dir, "manifest.json")
		os.WriteFile(replace, []byte("old"), 0o644)
		os.WriteFile(filepath.Join(dir, "a.comp"), []byte("a"), 0o644)
		os.Mkdir(filepath.Join(dir, "keep"), 0o755)
		os.WriteFile(filepath.Join(dir, "keep", "x"), []byte("x"), 0o644)
		text := strings.NewReplacer("DIR", dir, "REPLACE", replace, "OUTSIDE", outside, "OLD", Hash([]byte("old")), "NEW", Hash([]byte("new"))).Replace(string(b))
		os.WriteFile(filepath.Join(dir, JournalName), []byte(text), 0o644)
		Recover(dir)
		if got, err := os.ReadFile(outside); err != nil || string(got) != "keep" {
			t.Fatalf("Recover changed a file outside its directory: %q %v", got, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "keep", "x")); err != nil {
			t.Fatalf("Recover removed a directory that is not its stage: %v", err)
		}
	})
}

// TestTransactionRelativePaths: a transaction journals absolute paths, and is recovered from its
// directory named relatively (drain runs on absolute paths; incumbent.Load of
// "dir/manifest.json" recovers "dir"), and one named relatively is recovered from its absolute
// directory.
func TestTransactionRelativePaths(t *testing.T) {
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	for _, runRelative := range []bool{false, true} {
		tx, _ := txTree(t)
		abs := tx.Dir
		if err := os.Chdir(filepath.Dir(abs)); err != nil {
			t.Fatal(err)
		}
		rel := filepath.Base(abs)
		recoverFrom := rel
		if runRelative {
			tx.Dir, tx.Replace = rel, filepath.Join(rel, "manifest.json")
			tx.Remove = []string{filepath.Join(rel, "a.comp"), filepath.Join(rel, "b.comp")}
			recoverFrom = abs
		}
		if !crashAt(tx, 4) {
			t.Fatal("no crash")
		}
		msg, err := Recover(recoverFrom)
		if err != nil || !strings.Contains(msg, "rolled back") {
			t.Fatalf("Recover(%q): %q %v", recoverFrom, msg, err)
		}
		if got := dirFiles(t, abs); len(got) != 4 || got["a.comp"] != "a" {
			t.Errorf("after the rollback: %v", got)
		}
	}
}
