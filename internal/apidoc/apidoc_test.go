package apidoc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot finds the directory holding go.mod, starting from the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// sourceFile is one parsed non-test Go file of a package, with the path reports name it by.
type sourceFile struct {
	name string
	file *ast.File
}

// checkPackage reports the undocumented exported identifiers of one package's files (all of
// the same package; build constraints are ignored, so every platform's files are checked).
// dir names the package in the "no package doc comment" report.
func checkPackage(fset *token.FileSet, dir string, files []sourceFile) []string {
	var problems []string
	if len(files) == 0 {
		return nil
	}
	hasPkgDoc := false
	for _, f := range files {
		if f.file.Doc != nil {
			hasPkgDoc = true
		}
	}
	if !hasPkgDoc {
		problems = append(problems, dir+": package "+files[0].file.Name.Name+" has no doc comment")
	}
	for _, f := range files {
		report := func(pos token.Pos, what string) {
			problems = append(problems, f.name+":"+strconv.Itoa(fset.Position(pos).Line)+": exported "+what+" has no doc comment")
		}
		for _, decl := range f.file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Doc != nil {
					continue
				}
				if d.Recv == nil {
					report(d.Name.Pos(), "func "+d.Name.Name)
					continue
				}
				if len(d.Recv.List) == 0 {
					continue
				}
				recv := receiverName(d.Recv.List[0].Type)
				if recv != "" && ast.IsExported(recv) {
					report(d.Name.Pos(), "method "+recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
							report(s.Name.Pos(), "type "+s.Name.Name)
						}
					case *ast.ValueSpec:
						if s.Doc != nil || d.Doc != nil || s.Comment != nil {
							continue
						}
						for _, n := range s.Names {
							if n.IsExported() {
								report(n.Pos(), d.Tok.String()+" "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	return problems
}

// receiverName returns the base type name of a method receiver: T for T, *T, T[P] and *T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// publicPackages parses every public package directory under root: it skips directories named
// internal or testdata (and hidden or underscore-prefixed ones, which the go tool ignores),
// _test.go files, and packages named main. The map is keyed by slash-separated directory
// relative to root.
func publicPackages(t *testing.T, fset *token.FileSet, root string) map[string][]sourceFile {
	t.Helper()
	pkgs := map[string][]sourceFile{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "internal" || name == "testdata" || name == "vendor" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module is not part of this one
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Error(err) // report it and check the rest of the module
			return nil
		}
		if f.Name.Name == "main" {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		dir := "."
		if i := strings.LastIndex(rel, "/"); i >= 0 {
			dir = rel[:i]
		}
		pkgs[dir] = append(pkgs[dir], sourceFile{name: rel, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestExportedIdentifiersDocumented fails for every exported identifier of a public package of
// the module that has no doc comment, and for every public package without a package comment.
func TestExportedIdentifiersDocumented(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	pkgs := publicPackages(t, fset, root)
	if len(pkgs) == 0 {
		t.Fatalf("no public packages found under %s", root)
	}
	dirs := make([]string, 0, len(pkgs))
	for dir := range pkgs {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		for _, p := range checkPackage(fset, dir, pkgs[dir]) {
			t.Error(p)
		}
	}
	t.Logf("checked %d public packages", len(dirs))
}

// TestCheckerReportsUndocumented proves the checker bites: an in-memory package with one
// undocumented exported func (and documented or unexported everything else) yields exactly that
// func, and the same source without a package comment also yields the package report.
func TestCheckerReportsUndocumented(t *testing.T) {
	const src = `// Package p is documented.
package p

// Documented is documented.
func Documented() {}

func Undocumented() {}

func unexported() {}

// T is documented.
type T struct{ Field int }

// M is documented.
func (T) M() {}

func (t *T) unexportedMethod() {}

type hidden struct{}

func (hidden) Exported() {}

// Group doc covers every spec.
const (
	A = 1
	B = 2
)

var (
	// C has its own doc.
	C = 3
	D = 4 // D has a trailing line comment.
)
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p/p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := checkPackage(fset, "p", []sourceFile{{name: "p/p.go", file: f}})
	want := []string{"p/p.go:7: exported func Undocumented has no doc comment"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("checker reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	const bad = `package q

type Exported int

func (e *Exported) Method() {}

func (g G[T]) Get() T { var z T; return z }

// G is documented.
type G[T any] struct{}

const Limit = 3

var (
	X, y = 1, 2
)
`
	f, err = parser.ParseFile(fset, "q/q.go", bad, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got = checkPackage(fset, "q", []sourceFile{{name: "q/q.go", file: f}})
	want = []string{
		"q: package q has no doc comment",
		"q/q.go:3: exported type Exported has no doc comment",
		"q/q.go:5: exported method Exported.Method has no doc comment",
		"q/q.go:7: exported method G.Get has no doc comment",
		"q/q.go:12: exported const Limit has no doc comment",
		"q/q.go:15: exported var X has no doc comment",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("checker reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
