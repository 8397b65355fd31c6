package main

import (
	"flag"
	"fmt"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/onesource-go/onesource/generate"
)

const dslImport = "github.com/onesource-go/onesource/dsl"

func init() {
	register("gen", "write every kernel of Go packages for the chosen backends", runGen)
}

func runGen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write every kernel's files into `DIR` (no Go file); default: package mode")
	backends := fs.String("backends", "vulkan", "comma-separated backends ("+strings.Join(generate.BackendNames(), ", ")+") or all")
	check := fs.Bool("check", false, "write nothing: exit 1 listing the generated files that differ from what generation would write now (for CI); without -backends, for the backends each generated file records")
	checked := fs.Bool("checked", false, "also write each kernel's bounds-checked build for vulkan, cuda and hip (<kernel>.checked<ext>), which prebuilt.Options.Checked and ONESOURCE_CHECKED=1 run")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource gen [-backends vulkan,...|all] [-checked] [-o DIR] [-check] [PACKAGE...]")
		fmt.Fprintln(stderr, "")
		fmt.Fprintln(stderr, "Builds the kernels of the Go packages (default: the package in the current directory):")
		fmt.Fprintln(stderr, "those `func Kernels() []*dsl.Kernel` returns or, without it, every exported function")
		fmt.Fprintln(stderr, "with no parameters that returns a *dsl.Kernel.")
		fmt.Fprintln(stderr, "")
		fmt.Fprintln(stderr, "Package mode (no -o; the //go:generate step): writes onesource/<kernel>.<ext> and")
		fmt.Fprintln(stderr, generate.GoFileName+" (embeds the files, registers them with package prebuilt) in each package.")
		fmt.Fprintln(stderr, "  //go:generate go tool onesource gen -backends all")
		fmt.Fprintln(stderr, "Directory mode (-o DIR): <kernel>.<ext> for every kernel of every package into DIR.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		if *out != "" {
			fs.Usage()
			return 2
		}
		patterns = []string{"."}
	}
	if *backends == "all" {
		*backends = strings.Join(generate.BackendNames(), ",")
	}
	for _, b := range strings.Split(*backends, ",") {
		if _, ok := generate.Backends[b]; !ok {
			fmt.Fprintf(stderr, "onesource gen: unknown backend %q (known: %s)\n", b, strings.Join(generate.BackendNames(), ", "))
			return 2
		}
	}
	withKernels, err := findKernels(patterns)
	if err != nil {
		fmt.Fprintf(stderr, "onesource gen: %v\n", err)
		return 1
	}
	for _, kp := range withKernels {
		for _, n := range kp.skipped {
			fmt.Fprintf(stderr, "onesource gen: note: %s\n", n)
		}
	}
	if len(withKernels) == 0 {
		fmt.Fprintf(stderr, "onesource gen: no package among %s declares func Kernels() []*dsl.Kernel or an exported func() *dsl.Kernel\n", strings.Join(patterns, " "))
		return 1
	}
	// -backends goes to the driver only when given: -check without it compares each package
	// with the backends its generated file records.
	var dargs []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "backends":
			dargs = append(dargs, "-backends", *backends)
		case "checked":
			dargs = append(dargs, fmt.Sprintf("-checked=%v", *checked))
		}
	})
	if *check {
		dargs = append(dargs, "-check")
	}
	if *out != "" {
		absOut, err := filepath.Abs(*out)
		if err != nil {
			fmt.Fprintf(stderr, "onesource gen: %v\n", err)
			return 1
		}
		dargs = append(dargs, "-o", absOut)
	}
	return runDriver(withKernels, dargs, stdout, stderr)
}

// kernelPackage is a package with its kernel functions.
type kernelPackage struct {
	path, name, dir string
	funcs           []kernelFunc
	skipped         []string // exported kernel functions gen cannot call, and why
}

// kernelFunc is one function that returns kernels: many (Kernels) or one.
type kernelFunc struct {
	name string
	many bool
}

// findKernels loads the packages matching patterns with go/packages (type-checked, with the
// onesource_gen build tag so a stale generated file is not in the way) and returns those that
// have kernel functions, found by type: the convention of package generate.
func findKernels(patterns []string) ([]kernelPackage, error) {
	cfg := &packages.Config{
		Mode:       packages.NeedName | packages.NeedFiles | packages.NeedTypes | packages.NeedSyntax,
		BuildFlags: []string{"-tags=" + generate.BuildTag},
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	var errs, ignored []string
	var out []kernelPackage
	var notes []string // kernel functions skipped in packages without any other kernel
	for _, p := range pkgs {
		var perrs []string
		for _, e := range p.Errors {
			perrs = append(perrs, e.Error())
		}
		if p.Types == nil {
			errs = append(errs, perrs...)
			continue
		}
		kp := kernelPackage{path: p.PkgPath, name: p.Name}
		if len(p.GoFiles) > 0 {
			kp.dir = filepath.Dir(p.GoFiles[0])
		}
		scope := p.Types.Scope()
		var singles []kernelFunc
		var skipped []string
		for _, name := range scope.Names() {
			fn, ok := scope.Lookup(name).(*types.Func)
			if !ok || !fn.Exported() {
				continue
			}
			sig := fn.Type().(*types.Signature)
			if sig.Params().Len() != 0 || sig.Results().Len() != 1 || sig.TypeParams().Len() != 0 {
				if sig.Results().Len() == 1 && (isKernelPtr(sig.Results().At(0).Type()) || isSliceOfKernel(sig.Results().At(0).Type())) {
					why := "has parameters"
					if sig.Params().Len() == 0 {
						why = "has type parameters"
					}
					skipped = append(skipped, fmt.Sprintf("%s: %s.%s%s is not generated: it %s, so onesource gen cannot call it; list the kernels it makes in func Kernels() []*dsl.Kernel (e.g. return []*dsl.Kernel{%s(...)})",
						p.Fset.Position(fn.Pos()), p.Name, name, strings.TrimPrefix(sig.String(), "func"), why, name))
				}
				continue
			}
			res := sig.Results().At(0).Type()
			switch {
			case name == "Kernels" && isSliceOfKernel(res):
				kp.funcs = []kernelFunc{{name: name, many: true}}
			case isKernelPtr(res):
				singles = append(singles, kernelFunc{name: name})
			}
		}
		if len(kp.funcs) == 0 {
			kp.funcs = singles
			kp.skipped = skipped // with Kernels(), the package lists its kernels itself
		}
		if len(kp.funcs) == 0 {
			notes = append(notes, skipped...)
			// Not a kernel package. Its errors do not matter here: a program's main package that
			// uses a generated Generated variable does not type-check under the onesource_gen tag.
			ignored = append(ignored, perrs...)
			continue
		}
		if p.Name == "main" {
			errs = append(errs, fmt.Sprintf("%s: package main declares kernels, but a driver program cannot import it: move them to a package the program imports", p.PkgPath))
			continue
		}
		if len(perrs) == 0 {
			for _, name := range []string{"Generated", "onesourceFiles"} {
				if obj := scope.Lookup(name); obj != nil {
					perrs = append(perrs, fmt.Sprintf("%s: package %s declares %s, which the generated %s declares: rename it", p.Fset.Position(obj.Pos()), p.Name, name, generate.GoFileName))
				}
			}
		}
		if len(perrs) > 0 {
			for _, e := range perrs {
				if strings.Contains(e, "undefined: Generated") {
					e += " (code of a kernel package must not use Generated: onesource gen builds the package without its generated file, under the " + generate.BuildTag + " build tag)"
				}
				errs = append(errs, e)
			}
			continue
		}
		out = append(out, kp)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if len(out) == 0 && len(notes) > 0 {
		return nil, fmt.Errorf("no kernel to generate:\n%s", strings.Join(notes, "\n"))
	}
	if len(out) == 0 && len(ignored) > 0 {
		return nil, fmt.Errorf("no kernel package found; these packages did not type-check:\n%s", strings.Join(ignored, "\n"))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

func isKernelPtr(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := types.Unalias(p.Elem()).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == dslImport && n.Obj().Name() == "Kernel"
}

func isSliceOfKernel(t types.Type) bool {
	s, ok := types.Unalias(t).(*types.Slice)
	return ok && isKernelPtr(s.Elem())
}

// runDriver writes a main program importing the packages and runs it with `go run` (and the
// onesource_gen build tag) from the current directory, so the packages resolve in the user's
// module.
func runDriver(pkgs []kernelPackage, args []string, stdout, stderr io.Writer) int {
	tmp, err := os.MkdirTemp("", "onesource-gen-")
	if err != nil {
		fmt.Fprintf(stderr, "onesource gen: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	var src strings.Builder
	src.WriteString("// Code generated by onesource gen. DO NOT EDIT.\n\npackage main\n\nimport (\n\t\"os\"\n\n\t\"github.com/onesource-go/onesource/generate\"\n")
	for i, p := range pkgs {
		fmt.Fprintf(&src, "\tk%d %q\n", i, p.path)
	}
	src.WriteString(")\n\nfunc main() {\n\tos.Exit(generate.Main(os.Args[1:], os.Stdout, os.Stderr")
	for i, p := range pkgs {
		fmt.Fprintf(&src, ",\n\t\tgenerate.Source{Path: %q, Name: %q, Dir: %q, Funcs: []generate.Func{", p.path, p.name, p.dir)
		for _, f := range p.funcs {
			call := fmt.Sprintf("k%d.%s", i, f.name)
			if !f.many {
				call = "generate.One(" + call + ")"
			}
			fmt.Fprintf(&src, "{Name: %q, Kernels: %s}, ", p.name+"."+f.name, call)
		}
		src.WriteString("}}")
	}
	src.WriteString("))\n}\n")
	main := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(main, []byte(src.String()), 0o644); err != nil {
		fmt.Fprintf(stderr, "onesource gen: %v\n", err)
		return 1
	}
	cmd := exec.Command("go", append([]string{"run", "-tags=" + generate.BuildTag, main}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "onesource gen: go run: %v\n", err)
		return 1
	}
	return 0
}
