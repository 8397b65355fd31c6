package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/llama"
	"github.com/onesource-go/onesource/registry"
)

func init() {
	register("profile", "decode steps of a llama GGUF model on the engine: time per cell and op, GB/s, who served each cell", runProfile)
}

func runProfile(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	steps := fs.Int("steps", 8, "decode steps measured (after one warm-up step)")
	regPath := fs.String("registry", "", "registry file deciding who serves each cell (default: the twins)")
	manPath := fs.String("manifest", "", "incumbents manifest for the cells the registry sends to hand-written kernels")
	tunePath := fs.String("tuning", "", "tuning cache (see onesource tune)")
	ctx := fs.Int("ctx", 0, "KV cache positions (default: steps+1)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource profile [-steps N] [-registry FILE] [-manifest FILE] [-tuning FILE] [-ctx N] MODEL.gguf")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "onesource profile:", err)
		return 1
	}
	opts := engine.Options{Timed: true}
	var err error
	if *regPath != "" {
		if opts.Registry, err = registry.Load(*regPath); err != nil {
			return fail(err)
		}
	}
	if *manPath != "" {
		if opts.Manifest, err = incumbent.Load(*manPath); err != nil {
			return fail(err)
		}
	}
	if *tunePath != "" {
		var tw []string
		if opts.Tuning, tw, err = kernels.LoadTuning(*tunePath); err != nil {
			return fail(err)
		}
		for _, w := range tw {
			fmt.Fprintln(stderr, w)
		}
	}
	if *ctx <= 0 {
		*ctx = *steps + 1
	}
	f, err := gguf.Open(fs.Arg(0))
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	if msg := conformance.BusyWarning(); msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	e, err := engine.Open(opts)
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	m, err := llama.Load(e, f, *ctx)
	if err != nil {
		return fail(err)
	}
	defer m.Release()
	p, err := llama.ProfileModel(m, *steps)
	if err != nil {
		return fail(err)
	}
	p.Write(stdout)
	return 0
}
