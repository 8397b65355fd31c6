package main

import (
	"flag"
	"fmt"
	"io"
	"maps"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/registry"
	"github.com/onesource-go/onesource/tuning"
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
	ops := fs.String("op", "", "comma-separated ops (default all with an incumbent; with PACKAGE arguments, the ops of their cells)")
	types := fs.String("type", "", "comma-separated types (default all)")
	threshold := fs.Float64("threshold", 0, "minimum median twin/incumbent ratio for a flip (default: the registry's, 0.97)")
	all := fs.Bool("all", false, "also gate cells without an incumbent (they become fallback or failing)")
	pairs := fs.Int("pairs", 9, "A/B pairs per cell")
	n := fs.Int("n", 10, "dispatches per measurement")
	dryRun := fs.Bool("dry-run", false, "do not write the registry")
	seed := fs.Int64("seed", 0, "base seed of the seeded checks (the A/B's second inputs, the extra shapes); 0: from the clock; the evidence records it, so -seed replays a failure")
	timeout := fs.Duration("timeout", conformance.DefaultGateTimeout, "the most one cell's runs on the device may take (a runaway incumbent stops there)")
	tuningPath := fs.String("tuning", "", "tuning cache file: each cell runs at the schedule tuned for this device (see onesource tune), else its default")
	signKey := fs.String("sign", "", "ed25519 private key (PEM PKCS#8, see onesource key) to sign every history entry this run writes")
	shapeText := fs.String("shape", "", "benchmark shape of every gated cell: NAME=VALUE,... of its op's shape variables (rows=64,n=4096) or the positional ROWSxN (TOKENSxHEADSxHEAD_DIM for rope ops); default: each op's realistic default")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource gate [-manifest FILE] [-registry FILE] [-sign KEY] [-tuning FILE] [-op ..] [-type ..] [-threshold 0.97] [-all] [-pairs N] [-n N] [-shape rows=64,n=4096|64x4096] [-timeout 5m] [-seed N] [-dry-run] [PACKAGE...]")
		fmt.Fprintln(stderr, "  PACKAGE...: packages whose cells (func Cells() []kernels.Cell) join the library's")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if rc, done := withCells("gate", args, fs.Args(), stdout, stderr); done {
		return rc
	}
	if *threshold < 0 || *threshold > 10 {
		fmt.Fprintf(stderr, "onesource gate: -threshold %g out of range\n", *threshold)
		return 2
	}
	f := conformance.Filter{Ops: opsOr(*ops), Types: splitList(*types)}
	if len(f.Cells()) == 0 {
		fmt.Fprintln(stderr, noCells("gate", f))
		return 2
	}
	m, err := incumbent.Load(*manifest)
	if err != nil {
		fmt.Fprintf(stderr, "onesource gate: %v\n", err)
		return 1
	}
	if err := unregistered("gate", m); err != nil {
		fmt.Fprintf(stderr, "onesource gate: %v\n", err)
		return 2
	}
	shape, err := gateShape(f, m, *all, *shapeText)
	if err != nil {
		fmt.Fprintf(stderr, "onesource gate: %v\n", err)
		return 2
	}
	var cache *tuning.Cache
	if *tuningPath != "" {
		var tw []string
		if cache, tw, err = kernels.LoadTuning(*tuningPath); err != nil {
			fmt.Fprintf(stderr, "onesource gate: %v\n", err)
			return 1
		}
		for _, w := range tw {
			fmt.Fprintln(stderr, w)
		}
	}
	reg, err := registry.Open(*regPath)
	if err != nil {
		fmt.Fprintf(stderr, "onesource gate: %v\n", err)
		return 1
	}
	if *signKey != "" {
		key, err := registry.LoadKey(*signKey)
		if err != nil {
			fmt.Fprintf(stderr, "onesource gate: -sign: %v\n", err)
			return 1
		}
		reg.SetSigner(key)
	}
	v := &conformance.Vulkan{}
	if err := v.Open(); err != nil {
		fmt.Fprintf(stderr, "onesource gate: Vulkan unavailable: %v\n", err)
		return 1
	}
	timedOut := false
	defer func() {
		// Closing waits for the device to be idle: after a runaway dispatch, that would be the
		// hang the timeout stopped. The process exits instead, and the system reclaims it.
		if !timedOut {
			v.Close()
		}
	}()
	if w := conformance.BusyWarning(); w != "" {
		fmt.Fprintln(stderr, w)
	}
	o := conformance.GateOptions{
		Filter:    f,
		AB:        conformance.ABOptions{Pairs: *pairs, N: *n, Shape: shape},
		Threshold: *threshold,
		All:       *all,
		Tuning:    cache,
		Timeout:   *timeout,
		Seed:      *seed,
		Progress: func(r conformance.GateRow) {
			timedOut = timedOut || r.TimedOut
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

// gateShape reads -shape for every cell the gate will benchmark (those of f with an incumbent in
// m, or all of f's with -all): conformance.ParseShape for the cell's op. The A/B benchmark takes
// one set of shape overrides, so every gated op must read text to the same variables. An empty
// text gives nil (each op's default shape).
func gateShape(f conformance.Filter, m *incumbent.Manifest, all bool, text string) (map[string]float64, error) {
	if text == "" {
		return nil, nil
	}
	var shape map[string]float64
	var first string
	for _, c := range f.Cells() {
		if !all && m.Entry(c.Op, c.Type.String(), "vulkan") == nil {
			continue
		}
		sh, err := conformance.ParseShape(c.Op, text)
		if err != nil {
			return nil, fmt.Errorf("-shape: cell %s: %v", c.Name(), err)
		}
		if shape == nil {
			shape, first = sh, c.Name()
		} else if !maps.Equal(shape, sh) {
			return nil, fmt.Errorf("-shape %q: cell %s reads it as %s, cell %s as %s: gate them separately", text,
				first, conformance.ShapeString(shape), c.Name(), conformance.ShapeString(sh))
		}
	}
	return shape, nil
}
