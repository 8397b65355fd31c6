package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/registry"
)

func init() {
	register("gate", "gate twins against hand-written incumbents and write the registry", runGate)
}

// runGate is `onesource gate`: for every selected cell with an incumbent in the manifest, the
// correctness gate (the twin bit-exact against the oracle) and the performance gate (the
// kernel-only A/B benchmark against the incumbent) on Vulkan; the verdicts and their evidence
// go to the registry file, and a scoreboard is printed.
func runGate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifest := fs.String("manifest", "examples/incumbents/manifest.json", "incumbents manifest (JSON, see package incumbent)")
	regPath := fs.String("registry", "cells.json", "registry file to update (created when missing)")
	ops := fs.String("op", "", "comma-separated ops (default all with an incumbent)")
	types := fs.String("type", "", "comma-separated types (default all)")
	threshold := fs.Float64("threshold", 0, "minimum median twin/incumbent ratio for a flip (default: the registry's, 0.97)")
	all := fs.Bool("all", false, "also gate cells without an incumbent (they become fallback or failing)")
	pairs := fs.Int("pairs", 9, "A/B pairs per cell")
	n := fs.Int("n", 10, "dispatches per measurement")
	dryRun := fs.Bool("dry-run", false, "do not write the registry")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource gate [-manifest FILE] [-registry FILE] [-op ..] [-type ..] [-threshold 0.97] [-all] [-pairs N] [-n N] [-dry-run]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if *threshold < 0 || *threshold > 10 {
		fmt.Fprintf(stderr, "onesource gate: -threshold %g out of range\n", *threshold)
		return 2
	}
	f := conformance.Filter{Ops: splitList(*ops), Types: splitList(*types)}
	if len(f.Cells()) == 0 {
		fmt.Fprintln(stderr, "onesource gate: no cell matches the filters")
		return 2
	}
	m, err := incumbent.Load(*manifest)
	if err != nil {
		fmt.Fprintf(stderr, "onesource gate: %v\n", err)
		return 1
	}
	reg, err := registry.Open(*regPath)
	if err != nil {
		fmt.Fprintf(stderr, "onesource gate: %v\n", err)
		return 1
	}
	v := &conformance.Vulkan{}
	if err := v.Open(); err != nil {
		fmt.Fprintf(stderr, "onesource gate: Vulkan unavailable: %v\n", err)
		return 1
	}
	defer v.Close()
	o := conformance.GateOptions{
		Filter:    f,
		AB:        conformance.ABOptions{Pairs: *pairs, N: *n},
		Threshold: *threshold,
		All:       *all,
		Progress: func(r conformance.GateRow) {
			fmt.Fprintf(stderr, "%s: %s -> %s\n", r.Key, r.Verdict, r.State)
		},
	}
	rows, err := conformance.Gate(v, m, reg, o)
	if err != nil {
		fmt.Fprintf(stderr, "onesource gate: %v\n", err)
		return 1
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "onesource gate: no selected cell has an incumbent in %s (use -all to gate them anyway)\n", *manifest)
		return 2
	}
	conformance.WriteScoreboard(stdout, rows)
	if !*dryRun {
		if err := reg.Save(""); err != nil {
			fmt.Fprintf(stderr, "onesource gate: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "registry: %s\n", *regPath)
	}
	status := 0
	for _, r := range rows {
		if r.Err != "" || r.Verdict == registry.Fail {
			status = 1
		}
	}
	return status
}
