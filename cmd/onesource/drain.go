package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/onesource-go/onesource/drain"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/ledger"
	"github.com/onesource-go/onesource/registry"
)

func init() {
	register("drain", "which hand-written kernel files the flipped cells let go (-apply removes them, keeping every cell served)", runDrain)
}

func runDrain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manPath := fs.String("manifest", "", "incumbents manifest")
	regPath := fs.String("registry", cellsDefaultRegistry, "registry file")
	jsonOut := fs.String("json", "", "write the plan as JSON to this file")
	patchOut := fs.String("patch", "", "write the plan as a unified diff to this file")
	apply := fs.Bool("apply", false, "carry the plan out (only if every cell keeps a server)")
	trustPath := fs.String("trust", "", "trust file of public keys (default $"+registry.TrustEnv+"): only flips signed by one of them let a file go")
	recoverOnly := fs.Bool("recover", false, "only finish or roll back a drain -apply that was interrupted (killed) in the manifest's directory")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource drain -manifest FILE [-registry FILE] [-trust KEYS] [-json OUT] [-patch OUT] [-apply] [DIR...] [PACKAGE...]")
		fmt.Fprintln(stderr, "       onesource drain -recover -manifest FILE")
		fmt.Fprintln(stderr, "  DIR...: trees whose hand-written lines (the ledger) are shown before and after (directories without Go files)")
		fmt.Fprintln(stderr, "  PACKAGE...: packages whose cells (func Cells() []kernels.Cell) join the library's: their twins let files go")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *manPath == "" {
		fs.Usage()
		return 2
	}
	patterns, dirs := splitArgs(fs.Args())
	if rc, done := withCells("drain", args, patterns, stdout, stderr); done {
		return rc
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "onesource drain:", err)
		return 1
	}
	// An interrupted -apply is finished or rolled back before anything else reads the tree (as
	// incumbent.Load would do silently), and said.
	msg, err := drain.Recover(filepath.Dir(*manPath))
	if err != nil {
		return fail(err)
	}
	if msg != "" {
		fmt.Fprintln(stdout, msg)
	}
	if *recoverOnly {
		if msg == "" {
			fmt.Fprintf(stdout, "no interrupted drain in %s\n", filepath.Dir(*manPath))
		}
		return 0
	}
	m, err := incumbent.Load(*manPath)
	if err != nil {
		return fail(err)
	}
	trust, err := trustFile(*trustPath)
	if err != nil {
		return fail(err)
	}
	reg, err := registry.LoadTrusted(*regPath, trust)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, "signatures:", trustSummary(reg, trust))
	p, err := drain.Make(m, reg)
	if err != nil {
		return fail(err)
	}
	inputs := append(append(m.Inputs(), *regPath), ledgerInputs(dirs)...)
	for _, out := range []string{*jsonOut, *patchOut} {
		if out == "" {
			continue
		}
		if err := atomicfile.CheckOutput(out, inputs...); err != nil {
			return fail(err)
		}
	}
	p.Write(stdout)
	if note := noTwinNote("drain", p); note != "" {
		fmt.Fprintln(stdout, note)
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(p, "", "  ")
		if err == nil {
			err = atomicfile.WriteOutput(*jsonOut, append(b, '\n'), inputs...)
		}
		if err != nil {
			return fail(err)
		}
	}
	if *patchOut != "" {
		b, err := p.Patch()
		if err == nil {
			err = atomicfile.WriteOutput(*patchOut, b, append(inputs, *jsonOut)...)
		}
		if err != nil {
			return fail(err)
		}
	}
	ledgerLine := func(when string) {
		if len(dirs) == 0 {
			return
		}
		r, err := ledger.Count(dirs...)
		if err != nil {
			fmt.Fprintf(stdout, "ledger %s: %v\n", when, err)
			return
		}
		for _, t := range r.Trees {
			fmt.Fprintf(stdout, "ledger %s: %s: %d hand-written lines\n", when, t.Path, t.Total)
		}
	}
	if !*apply {
		if err := p.Check(); err != nil {
			fmt.Fprintln(stdout, "the plan cannot be applied:", err)
		} else if len(p.Deletable()) > 0 || len(p.NewManifest()) != 0 {
			fmt.Fprintln(stdout, "nothing was changed; -apply carries the plan out")
		}
		ledgerLine("now")
		return 0
	}
	ledgerLine("before")
	if err := p.Apply(); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "drained: %d files deleted, %d manifest entries removed\n", len(p.Deletable()), removed(p))
	ledgerLine("after")
	return 0
}

// ledgerInputs lists the files the ledger counts in dirs (the kernel sources a command reads):
// an output may not be one of them. A tree that cannot be counted adds nothing (the command's
// own count reports it).
func ledgerInputs(dirs []string) []string {
	if len(dirs) == 0 {
		return nil
	}
	r, err := ledger.Count(dirs...)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range r.Trees {
		for _, f := range t.Files {
			out = append(out, filepath.FromSlash(f.Path))
		}
	}
	return out
}

func removed(p *drain.Plan) int {
	n := 0
	for _, e := range p.Entries {
		if e.Remove {
			n++
		}
	}
	return n
}
