package drain

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Patch writes the plan as a unified diff relative to the manifest's directory: the manifest's
// removed entries and the deleted files, as `git apply` and `patch -p1` read it.
func (p *Plan) Patch() ([]byte, error) {
	var b bytes.Buffer
	man, err := filepath.Rel(p.dir, p.manifest)
	if err != nil {
		return nil, fmt.Errorf("drain: patch: %v", err)
	}
	man = filepath.ToSlash(man)
	if !bytes.Equal(p.oldManifest, p.newManifest) {
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", man, man, man, man)
		hunk(&b, lines(p.oldManifest), lines(p.newManifest))
	}
	for _, rel := range p.Deletable() {
		data, err := os.ReadFile(filepath.Join(p.dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("drain: patch: %v", err)
		}
		fmt.Fprintf(&b, "diff --git a/%s b/%s\ndeleted file mode 100644\n--- a/%s\n+++ /dev/null\n", rel, rel, rel)
		hunk(&b, lines(data), nil)
	}
	return b.Bytes(), nil
}

func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := strings.SplitAfter(string(b), "\n")
	if s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	return s
}

// hunk writes one hunk turning a into b: the common prefix and suffix as context (at most three
// lines each), the rest as removed and added lines.
func hunk(w io.Writer, a, b []string) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ctxPre, ctxSuf := min(pre, 3), min(suf, 3)
	from := pre - ctxPre
	aLen := len(a) - from - suf + ctxSuf
	bLen := len(b) - from - suf + ctxSuf
	aStart, bStart := from+1, from+1
	if aLen == 0 {
		aStart = from
	}
	if bLen == 0 {
		bStart = from
	}
	fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", aStart, aLen, bStart, bLen)
	emit := func(prefix, line string) {
		io.WriteString(w, prefix+line)
		if !strings.HasSuffix(line, "\n") {
			io.WriteString(w, "\n\\ No newline at end of file\n")
		}
	}
	for _, l := range a[from:pre] {
		emit(" ", l)
	}
	for _, l := range a[pre : len(a)-suf] {
		emit("-", l)
	}
	for _, l := range b[pre : len(b)-suf] {
		emit("+", l)
	}
	for _, l := range a[len(a)-suf : len(a)-suf+ctxSuf] {
		emit(" ", l)
	}
}

// Write prints the plan as tables: the files (path, cells and states, ledger lines, delete or
// keep and why), the manifest entries, and the lines the drain removes.
func (p *Plan) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tLINES\tCELLS\tVERDICT\tWHY")
	for _, f := range p.Files {
		cells := make([]string, len(f.Cells))
		for i := range f.Cells {
			cells[i] = f.Cells[i] + " " + f.States[i]
		}
		v := "keep"
		if f.Delete {
			v = "delete"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", f.Path, f.Lines, strings.Join(cells, ", "), v, f.Why)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tCELL\tSTATE\tVERDICT\tWHY")
	for _, e := range p.Entries {
		v := "keep"
		if e.Remove {
			v = "remove"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, e.Cell, e.State, v, e.Why)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d of %d hand-written lines can go (%d files of %d)\n", p.LinesRemoved, p.LinesBefore, len(p.Deletable()), len(p.Files))
}
