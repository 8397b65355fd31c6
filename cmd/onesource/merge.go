package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/registry"
)

func init() {
	register("merge", "combine registry files written on several machines into one (conflicts reported by cell and device)", runMerge)
}

// runMerge folds every input registry into the output one (created when absent; an output that is
// not a regular file, a FIFO or /dev/stdout, is never read: the inputs' merge is written to it):
// evidence is kept per (device, driver, toolchain), so files from many CI runners combine; two
// measurements from the same machine are a conflict, reported by cell and device (the newer kept in
// the cell, the other in the history). It exits 3 when there were conflicts (the merged file is
// written), 1 when an input cannot be merged (nothing is written).
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "the merged registry file (merged into when it exists)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onesource merge -o OUT.json IN.json...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "onesource merge:", err)
		return 1
	}
	// An output that is not a regular file (a FIFO, /dev/stdout) is never read, so never merged
	// into: the merge of the inputs is written to it (the output rule, package atomicfile).
	special := false
	if st, err := os.Stat(*out); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return fail(fmt.Errorf("-o %s is a directory: name a registry file", *out))
		}
		special = true
	}
	dst := registry.New()
	if !special {
		var err error
		if dst, err = registry.Open(*out); err != nil {
			return fail(err)
		}
	}
	var all []registry.Conflict
	for _, in := range fs.Args() {
		src, err := registry.Load(in)
		if err != nil {
			return fail(err)
		}
		if len(dst.Cells()) == 0 && len(dst.History()) == 0 && dst.Threshold() != src.Threshold() {
			// An empty output takes the threshold of the first input.
			if err := dst.SetThreshold(src.Threshold(), "onesource merge: the threshold of "+in); err != nil {
				return fail(err)
			}
		}
		cs, err := dst.Merge(src)
		if err != nil {
			return fail(fmt.Errorf("%s: %w (nothing written)", in, err))
		}
		for _, c := range cs {
			fmt.Fprintf(stdout, "conflict: %s on %s (from %s): %s\n", c.Key, c.Device, in, c.Reason)
		}
		all = append(all, cs...)
	}
	if special {
		b, err := dst.Marshal()
		if err == nil {
			err = atomicfile.WriteOutput(*out, b, fs.Args()...)
		}
		if err != nil {
			return fail(err)
		}
	} else if err := dst.Save(*out); err != nil {
		return fail(err)
	}
	states := map[registry.State]int{}
	for _, c := range dst.Cells() {
		states[c.State]++
	}
	fmt.Fprintf(stdout, "merged %d file(s) into %s: %d cells (dsl %d, declined %d, fallback %d, failing %d, hand %d), %d conflict(s)\n",
		fs.NArg(), *out, len(dst.Cells()), states[registry.DSL], states[registry.Declined], states[registry.Fallback],
		states[registry.Failing], states[registry.Hand], len(all))
	if len(all) > 0 {
		return 3
	}
	return 0
}
