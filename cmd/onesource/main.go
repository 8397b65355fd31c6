// Command onesource builds DSL kernels for every backend, runs the conformance suite and reports
// what this machine can do.
//
//	onesource gen [-backends vulkan,cuda,hip,metal,cpu|all] [-checked] -o DIR PACKAGE... write every kernel
//	onesource conform [-op ..] [-type ..] [-backend ..] [-json FILE] [PACKAGE...]  the conformance matrix
//	onesource gate [-manifest FILE] [-registry FILE] [-sign KEY] [filters] [PACKAGE...]  verify, then flip cells
//	onesource key -o KEY.pem                                                 an ed25519 key for gate -sign
//	onesource tune [-op ..] [-type ..] [-shape S] [-tuning FILE] [PACKAGE...]  search schedules for speed
//	onesource bench [-op ..] [-type ..] [-shape S] [-json FILE] [PACKAGE...]   GB/s and % of the roofline
//	onesource profile [-steps N] [-registry FILE] MODEL.gguf                 where a decode step's time goes
//	onesource cells [-registry FILE] [-html OUT] [-verify [-trust KEYS]] [-vars OP/TYPE] [PACKAGE...]  the registry as a report
//	onesource merge -o OUT.json IN.json...                                   registries of many machines in one
//	onesource drain -manifest FILE [-registry FILE] [-apply|-recover] [DIR...] [PACKAGE...]  delete what the flips let go
//	onesource report [-registry FILE] [-manifest FILE] [-html OUT] [DIR...] [PACKAGE...]  ledger, flips, declines, burn-down
//	onesource ledger [-v] [-json] DIR...                                     hand-written kernel lines
//	onesource doctor                                                         CPU, devices, toolchains
//	onesource gguf ls FILE | dump FILE TENSOR -o OUT.f32                     inspect GGUF files
//	onesource tokenize [-bos] [-special] [-decode] MODEL.gguf TEXT|IDS       a model's tokenizer
//
// PACKAGE... are packages whose cells (func Cells() []kernels.Cell) join the library's: see
// cellpkgs.go. Each subcommand lives in its own file and registers itself in init.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand: run gets the arguments after the subcommand's name and returns the
// process exit status.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "onesource: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: onesource COMMAND [ARGS]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}
