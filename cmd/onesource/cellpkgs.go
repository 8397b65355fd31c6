package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/drain"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/cachedir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// The cells of a user's package. A package declares its cells the way it declares kernels for
// gen: `func Cells() []kernels.Cell` (each with its twin's builder, its conformance cases and the
// oracle's bytes, its canonical width, and optionally its benchmark workload). Every command of
// the method (conform, gate, bench, tune, cells, drain, report) takes package patterns after its
// flags and works on those cells as on the library's:
//
//	onesource gate -manifest incumbents/manifest.json ./mycells
//
// The user's code never enters this binary. The command finds the packages (go/packages, from
// the working directory: the packages resolve in the user's module), then builds a helper
// program: this very command, github.com/onesource-go/onesource/cmd/onesource as the user's
// module requires it, with one more file laid over its package (go build -overlay) that imports
// the packages and registers their cells (kernels.Add) at init. The helper runs with the same
// arguments; it finds itself built for exactly these patterns and goes on with the user's cells
// registered beside the library's. Building it takes a compile of package main and a link; the
// helper is kept (buildHelper), so only the first command on a set of packages pays the link.
// Measured with examples/cells (2 cores, load average 7-8 from other work): `onesource cells
// -vars layer_norm_gelu/f32 ./cells` took 4.1 s the first time, 0.6 s with the kept helper,
// 3.5 s with the caches off (ONESOURCE_CACHE=off); on a library cell, 0.01 s.

// onesourceCmd is the import path of this command, which the helper is built from.
const onesourceCmd = "github.com/onesource-go/onesource/cmd/onesource"

// kernelsImport is the import path of package kernels, whose Cell a Cells function returns.
const kernelsImport = "github.com/onesource-go/onesource/kernels"

// userPackage is a package whose cells the helper registers: its import path and its Cells.
type userPackage struct {
	Path  string
	Cells func() []kernels.Cell
}

// The helper's state, set at init by the file the command lays over this package (see
// helperSource); nil in the command itself.
var (
	helperPatterns []string              // the patterns the helper was built for
	helperPackages []string              // the import paths of the packages it registered cells of
	helperErr      error                 // what went wrong registering them
	helperCells    = map[string]string{} // cell name ("op/type") -> the package that registered it
)

// addUserCells registers the cells of pkgs (kernels.Add), found by patterns. It runs at init in
// the helper; what goes wrong is kept for the command to report (helperErr).
func addUserCells(patterns []string, pkgs []userPackage) {
	helperPatterns = patterns
	var errs []error
	for _, p := range pkgs {
		helperPackages = append(helperPackages, p.Path)
		cells, err := callCells(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, c := range cells {
			if prev, dup := helperCells[c.Name()]; dup {
				errs = append(errs, fmt.Errorf("%s: Cells()[%d]: cell %s is declared by %s too", p.Path, i, c.Name(), prev))
				continue
			}
			if _, lib := kernels.Lookup(c.Op, c.Type); lib {
				errs = append(errs, fmt.Errorf("%s: Cells()[%d]: cell %s is a cell of the library (package kernels): name the op otherwise", p.Path, i, c.Name()))
				continue
			}
			guard(p.Path, &c)
			if err := kernels.Add(c); err != nil {
				errs = append(errs, fmt.Errorf("%s: Cells()[%d]: %v", p.Path, i, err))
				continue
			}
			helperCells[c.Name()] = p.Path
		}
	}
	helperErr = errors.Join(errs...)
}

// guard wraps the functions of a user's cell that return errors (Cases, Workload.Case) so that a
// panic in them is that error, naming the package's line it came from, not the command's crash.
func guard(pkg string, c *kernels.Cell) {
	name := c.Name()
	if cases := c.Cases; cases != nil {
		c.Cases = func(s kernels.Schedule) (out []kernels.Case, err error) {
			defer recovered(pkg, name+": Cases", &err)
			return cases(s)
		}
	}
	if w := c.Workload; w != nil && w.Case != nil {
		cw := *w
		one := w.Case
		cw.Case = func(sh map[string]float64, s kernels.Schedule) (out kernels.Case, err error) {
			defer recovered(pkg, name+": Workload.Case", &err)
			return one(sh, s)
		}
		c.Workload = &cw
	}
}

// recovered turns a panic into *err: "pkg: what panicked: VALUE (at FILE:LINE)", the line the
// first frame of pkg on the panicking stack.
func recovered(pkg, what string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	at := ""
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, pkg+".") {
			at = fmt.Sprintf(" (at %s:%d)", f.File, f.Line)
			break
		}
		if !more {
			break
		}
	}
	*err = fmt.Errorf("%s: cell %s panicked: %v%s", pkg, what, r, at)
}

// callCells calls a package's Cells, turning a panic into an error naming the package.
func callCells(p userPackage) (cells []kernels.Cell, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: Cells() panicked: %v", p.Path, r)
		}
	}()
	return p.Cells(), nil
}

// searched says which packages a command looked for cells in, for its errors: the library's,
// and the user's packages the helper registered.
func searched(cmd string) string {
	s := "the library's cells (package " + kernelsImport + ")"
	if len(helperPackages) == 0 {
		return s + "; the cells of your own package need the package named after the flags (onesource " + cmd + " [flags] ./mycells)"
	}
	return s + " and those of " + strings.Join(helperPackages, ", ")
}

// unregistered is the error of a manifest whose entries name cells no package registers (the gate
// and the benchmark would pass them over without a word): it names them and the packages
// searched.
func unregistered(cmd string, m *incumbent.Manifest) error {
	var bad []string
	for _, e := range m.Incumbents {
		if !registered(e.Op, e.Type) {
			bad = append(bad, fmt.Sprintf("%s (cell %s)", e.Name, e.Cell()))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s: no package registers the cell of incumbent %s; searched %s", m.Path, strings.Join(bad, ", "), searched(cmd))
}

// registered reports whether some package registers cell op/typ.
func registered(op, typ string) bool {
	t, err := oracle.ParseType(typ)
	if err != nil {
		return false
	}
	_, ok := kernels.Lookup(op, t)
	return ok
}

// noTwinNote is drain's and report's note on the plan's entries kept because this program has no
// twin for their cells (drain.NoTwin): which packages were searched.
func noTwinNote(cmd string, p *drain.Plan) string {
	var cells []string
	for _, e := range p.Entries {
		if e.Why == drain.NoTwin {
			cells = append(cells, e.Cell)
		}
	}
	if len(cells) == 0 {
		return ""
	}
	return fmt.Sprintf("note: %s flipped to dsl, but no package registers the twin of %s, so its incumbent stays; searched %s", plural(len(cells), "cell", "cells"), strings.Join(cells, ", "), searched(cmd))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// opsOr is the -op list of a command: the given one, or without one, in a helper, the ops of the
// user's cells (naming packages selects their cells; -op selects among every cell registered).
func opsOr(given string) []string {
	if ops := splitList(given); ops != nil || len(helperCells) == 0 {
		return ops
	}
	var ops []string
	for name := range helperCells {
		op, _, _ := strings.Cut(name, "/")
		if !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	return ops
}

// noCells is the error of a command whose filters match no cell.
func noCells(cmd string, f conformance.Filter) string {
	var what []string
	if len(f.Ops) > 0 {
		what = append(what, "-op "+strings.Join(f.Ops, ","))
	}
	if len(f.Types) > 0 {
		what = append(what, "-type "+strings.Join(f.Types, ","))
	}
	if len(what) == 0 {
		what = []string{"the filters"}
	}
	return fmt.Sprintf("onesource %s: no cell matches %s; searched %s", cmd, strings.Join(what, " "), searched(cmd))
}

// withCells runs command name (args: its arguments, patterns: the package patterns among them)
// on the cells of the packages patterns match: in the command, by building and running the
// helper (delegated: rc is the helper's exit status); in the helper built for these patterns,
// by doing nothing (not delegated, unless the registration failed: rc 1). Without patterns it
// does nothing: the library's cells are there.
func withCells(name string, args, patterns []string, stdout, stderr io.Writer) (rc int, delegated bool) {
	if len(patterns) == 0 {
		return 0, false
	}
	if helperPatterns != nil {
		if !slices.Equal(helperPatterns, patterns) {
			fmt.Fprintf(stderr, "onesource %s: this helper was built for the cells of %s, not %s\n", name, strings.Join(helperPatterns, " "), strings.Join(patterns, " "))
			return 2, true
		}
		if helperErr != nil {
			fmt.Fprintf(stderr, "onesource %s: %v\n", name, helperErr)
			return 1, true
		}
		return 0, false
	}
	pkgs, cmdDir, err := findCells(patterns)
	var ae *argsError
	if errors.As(err, &ae) {
		fmt.Fprintf(stderr, "onesource %s: %s: the arguments after the flags are packages whose cells (func Cells() []kernels.Cell) join the library's: %v\n", name, strings.Join(patterns, " "), ae.err)
		return 2, true
	}
	if err != nil {
		fmt.Fprintf(stderr, "onesource %s: %v\n", name, err)
		return 1, true
	}
	bin, cleanup, err := buildHelper(patterns, pkgs, cmdDir, stderr)
	defer cleanup()
	if err != nil {
		fmt.Fprintf(stderr, "onesource %s: %v\n", name, err)
		return 1, true
	}
	cmd := exec.Command(bin, append([]string{name}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 {
			return ee.ExitCode(), true
		}
		fmt.Fprintf(stderr, "onesource %s: the helper with the cells of %s: %v\n", name, strings.Join(patterns, " "), err)
		return 1, true
	}
	return 0, true
}

// argsError is findCells' error for patterns that name no package declaring Cells: a mistake
// in the command's arguments (exit status 2), not in a package's code.
type argsError struct{ err error }

func (e *argsError) Error() string { return e.err.Error() }

// cellPackage is a package found to declare Cells.
type cellPackage struct {
	path, dir string
}

// findCells loads the packages patterns match (type-checked, from the working directory) and
// returns those that declare `func Cells() []kernels.Cell`, with the directory of this command's
// package in the same build (the helper's overlay goes there). A pattern that matches no such
// package, a main package, or a Cells of another signature is an error naming it.
func findCells(patterns []string) ([]cellPackage, string, error) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedTypes}
	pkgs, err := packages.Load(cfg, append(slices.Clone(patterns), onesourceCmd)...)
	if err != nil {
		return nil, "", err
	}
	var errs, listErrs []string
	var out []cellPackage
	cmdDir := ""
	var without []string
	for _, p := range pkgs {
		if p.PkgPath == onesourceCmd {
			if len(p.GoFiles) > 0 {
				cmdDir = filepath.Dir(p.GoFiles[0])
			}
			continue
		}
		for _, e := range p.Errors {
			if e.Kind == packages.ListError {
				listErrs = append(listErrs, e.Error())
			} else {
				errs = append(errs, e.Error())
			}
		}
		if p.Types == nil || len(p.Errors) > 0 {
			continue
		}
		obj := p.Types.Scope().Lookup("Cells")
		fn, ok := obj.(*types.Func)
		if !ok {
			without = append(without, p.PkgPath)
			continue
		}
		if !isCellsFunc(fn) {
			errs = append(errs, fmt.Sprintf("%s: %s.Cells is %s; want func Cells() []kernels.Cell", p.Fset.Position(fn.Pos()), p.Name, strings.TrimPrefix(fn.Type().String(), "func")))
			continue
		}
		if p.Name == "main" {
			errs = append(errs, fmt.Sprintf("%s: package main declares Cells, but the helper program cannot import it: move the cells to a package", p.PkgPath))
			continue
		}
		out = append(out, cellPackage{path: p.PkgPath, dir: filepath.Dir(p.GoFiles[0])})
	}
	if len(listErrs) > 0 {
		return nil, "", &argsError{fmt.Errorf("%s", strings.Join(listErrs, "\n"))}
	}
	if len(errs) > 0 {
		return nil, "", fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if cmdDir == "" {
		return nil, "", fmt.Errorf("the module here does not provide %s, which the cells of %s are run with: add it as a tool of the module (go get -tool %s)", onesourceCmd, strings.Join(patterns, " "), onesourceCmd)
	}
	if len(out) == 0 {
		if len(without) == 0 {
			return nil, "", &argsError{fmt.Errorf("no package matches %s", strings.Join(patterns, " "))}
		}
		return nil, "", &argsError{fmt.Errorf("no package among %s declares func Cells() []kernels.Cell (searched %s)", strings.Join(patterns, " "), strings.Join(without, ", "))}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, cmdDir, nil
}

// isCellsFunc reports whether fn is func() []kernels.Cell.
func isCellsFunc(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if sig.Params().Len() != 0 || sig.Results().Len() != 1 || sig.TypeParams().Len() != 0 || sig.Recv() != nil {
		return false
	}
	s, ok := types.Unalias(sig.Results().At(0).Type()).(*types.Slice)
	if !ok {
		return false
	}
	n, ok := types.Unalias(s.Elem()).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == kernelsImport && n.Obj().Name() == "Cell"
}

// helperFile is the name of the file the helper's overlay adds to this command's package.
const helperFile = "zz_onesource_user_cells.go"

// helperSource is that file: it imports the packages and registers their cells at init.
func helperSource(patterns []string, pkgs []cellPackage) []byte {
	var b strings.Builder
	b.WriteString("// Code generated by onesource for the cells of user packages. DO NOT EDIT.\n\npackage main\n\nimport (\n")
	for i, p := range pkgs {
		fmt.Fprintf(&b, "\tc%d %q\n", i, p.path)
	}
	fmt.Fprintf(&b, ")\n\nfunc init() {\n\taddUserCells(%#v, []userPackage{\n", patterns)
	for i, p := range pkgs {
		fmt.Fprintf(&b, "\t\t{Path: %q, Cells: c%d.Cells},\n", p.path, i)
	}
	b.WriteString("\t})\n}\n")
	return []byte(b.String())
}

// buildHelper builds the helper for pkgs (go build -overlay, from the working directory) and
// returns its path, and a function that removes what is temporary. The helper is kept in the
// persistent cache (internal/cachedir, "cells"), by its source and this command's directory:
// the next build of it goes to a link of the kept binary, which the go command leaves as it is
// when nothing changed (its build ID), so a second command skips the link (measured: 0.2 s
// instead of 2.3 s); the result is renamed over the kept one, so a running helper is never
// written. With the caches off it is built in a temporary directory.
func buildHelper(patterns []string, pkgs []cellPackage, cmdDir string, stderr io.Writer) (string, func(), error) {
	tmp, err := os.MkdirTemp("", "onesource-cells-")
	if err != nil {
		return "", func() {}, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	source := helperSource(patterns, pkgs)
	src := filepath.Join(tmp, helperFile)
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", cleanup, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(cmdDir, helperFile): src}})
	if err != nil {
		return "", cleanup, err
	}
	ovPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovPath, overlay, 0o644); err != nil {
		return "", cleanup, err
	}
	bin, kept := filepath.Join(tmp, "onesource"), ""
	if dir := cachedir.Dir("cells"); dir != "" {
		key := cachedir.Key([]byte(cmdDir), source)
		if err := os.MkdirAll(filepath.Join(dir, key[:2]), 0o755); err == nil {
			kept = filepath.Join(dir, key[:2], key)
			next, err := os.CreateTemp(filepath.Dir(kept), "."+key[:8]+".build*")
			if err == nil {
				bin = next.Name()
				next.Close()
				os.Remove(bin)
				if os.Link(kept, bin) != nil {
					bin = next.Name() // no kept helper yet (or no hard links): a plain build
				}
			}
		}
	}
	cmd := exec.Command("go", "build", "-overlay", ovPath, "-o", bin, onesourceCmd)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if kept != "" {
			os.Remove(bin)
		}
		return "", cleanup, fmt.Errorf("building the command with the cells of %s (go build -overlay): %v\n%s", strings.Join(patterns, " "), err, out.String())
	}
	if kept != "" {
		if err := os.Rename(bin, kept); err != nil {
			os.Remove(bin)
			return "", cleanup, fmt.Errorf("keeping the helper: %v", err)
		}
		bin = kept
	}
	return bin, cleanup, nil
}

// splitArgs separates the positional arguments of drain and report: package patterns (an
// argument with "...", a directory that holds Go files, or a path that is not on disk: an
// import path) from the trees the ledger counts (directories without Go files, files).
func splitArgs(args []string) (patterns, dirs []string) {
	for _, a := range args {
		if strings.Contains(a, "...") {
			patterns = append(patterns, a)
			continue
		}
		st, err := os.Stat(a)
		switch {
		case err != nil:
			patterns = append(patterns, a)
		case st.IsDir() && hasGoFiles(a):
			patterns = append(patterns, a)
		default:
			dirs = append(dirs, a)
		}
	}
	return patterns, dirs
}

func hasGoFiles(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			return true
		}
	}
	return false
}
