// Command llama decodes with a llama-architecture model read from a GGUF file (as llama.cpp
// writes them), every op served through the onesource engine by the kernel the registry chose:
//
//	go run ./examples/llama -model FILE.gguf -tokens 1,2,3 -steps N [-logits OUT.f32] [-registry FILE] [-trust KEYS] [-backend vulkan|native|cpu|cuda|hip]
//
// It feeds the prompt token ids, decodes N tokens greedily, prints the generated ids, and writes
// the last step's logits as little-endian f32. With -backend native every op runs as native CPU
// code (package backends/native: machine code built by the host's C compiler), with -backend cpu
// on the Go CPU executor (package backends/cpu), both on a machine with no Vulkan driver at all.
// Without -backend it serves on Vulkan where the machine has a Vulkan GPU, else as native CPU
// code where a C compiler is there, else on the Go executor (engine.DefaultBackend), and says
// which and why. Without a model at hand,
//
//	go run ./examples/llama -write-synthetic model.gguf
//
// writes the small random model the tests use (2 layers, dim 256, q4_0/q8_0/q4_K/q6_K weights).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/llama"
	"github.com/onesource-go/onesource/registry"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("llama", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "GGUF model file (llama architecture)")
	tokens := fs.String("tokens", "1", "prompt token ids, comma-separated")
	steps := fs.Int("steps", 8, "tokens to generate")
	logitsOut := fs.String("logits", "", "write the last step's logits here (little-endian f32)")
	regPath := fs.String("registry", "", "registry file deciding who serves each cell (default: the twins)")
	trustPath := fs.String("trust", "", "trust file of public keys (default $"+registry.TrustEnv+"): the registry's flips must rest on evidence one of them signed")
	manPath := fs.String("manifest", "", "incumbents manifest for the cells the registry sends to hand-written kernels")
	tunePath := fs.String("tuning", "", "tuning cache (see onesource tune)")
	ctx := fs.Int("ctx", 0, "KV cache positions (default: the model's context length, at most 2048)")
	trace := fs.Bool("trace", false, "print who served each cell")
	backend := fs.String("backend", "", "backend to run on: vulkan, native (native CPU code), cpu (the Go executor), cuda or hip; default: vulkan with a Vulkan GPU, else native where a C compiler is there, else cpu")
	emulated := fs.Bool("emulated", false, "with -backend cuda or hip: run on the emulated device (host execution of the emitted text, level H), not a GPU")
	synth := fs.String("write-synthetic", "", "write the synthetic test model to this file and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "llama:", err)
		return 1
	}
	if *synth != "" {
		var b bytes.Buffer
		if err := llama.SmallSynthetic.Write(&b); err != nil {
			return fail(err)
		}
		if err := atomicfile.WriteOutput(*synth, b.Bytes()); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", *synth, b.Len())
		return 0
	}
	if *model == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: llama -model FILE.gguf [-tokens 1,2,3] [-steps N] [-logits OUT.f32] [-registry FILE] [-trust KEYS] [-manifest FILE] [-tuning FILE] [-ctx N] [-trace] [-backend vulkan|native|cpu|cuda|hip] [-emulated]")
		fmt.Fprintln(stderr, "       llama -write-synthetic OUT.gguf")
		return 2
	}
	// The logits may not overwrite any input (the model above all: it is memory-mapped), by
	// name, link or inode; checked before the model is even opened.
	var manInputs []string
	inputs := func() []string {
		return append([]string{*model, *regPath, *manPath, *tunePath, *trustPath}, manInputs...)
	}
	if *logitsOut != "" {
		if err := atomicfile.CheckOutput(*logitsOut, inputs()...); err != nil {
			return fail(fmt.Errorf("-logits: %w", err))
		}
	}
	prompt, err := parseTokens(*tokens)
	if err != nil {
		return fail(err)
	}
	if *steps < 1 {
		return fail(errors.New("-steps must be at least 1"))
	}
	if *backend == "" {
		b, why := engine.DefaultBackend()
		*backend = b
		fmt.Fprintf(stdout, "backend %s: %s\n", b, why)
	}
	switch *backend {
	case engine.Vulkan, engine.Native, engine.CPU, engine.CUDA, engine.HIP:
	default:
		return fail(fmt.Errorf("-backend %q: want vulkan, native, cpu, cuda or hip", *backend))
	}
	opts := engine.Options{Backend: *backend, Emulated: *emulated}
	if *trustPath != "" {
		if opts.Trust, err = registry.LoadTrust(*trustPath); err != nil {
			return fail(err)
		}
	} else if opts.Trust, err = registry.TrustFromEnv(); err != nil {
		return fail(err)
	}
	if *regPath != "" {
		if opts.Registry, err = registry.LoadTrusted(*regPath, opts.Trust); err != nil {
			return fail(err)
		}
	}
	if *manPath != "" {
		if opts.Manifest, err = incumbent.Load(*manPath); err != nil {
			return fail(err)
		}
		manInputs = opts.Manifest.Inputs()
		if *logitsOut != "" {
			if err := atomicfile.CheckOutput(*logitsOut, inputs()...); err != nil {
				return fail(fmt.Errorf("-logits: %w", err))
			}
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
	f, err := gguf.Open(*model)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	e, err := engine.Open(opts)
	if err != nil {
		if errors.Is(err, vulkan.ErrUnavailable) {
			err = fmt.Errorf("%w (-backend native or cpu runs without a Vulkan driver)", err)
		}
		return fail(err)
	}
	defer e.Close()
	if fb := e.Fallback(); fb != "" {
		fmt.Fprintln(stdout, fb)
	}
	m, err := llama.Load(e, f, *ctx)
	if err != nil {
		return fail(err)
	}
	defer m.Release()
	// Compared without adding: -steps near the largest int would overflow the sum and pass.
	if *steps > m.Ctx-len(prompt) {
		return fail(fmt.Errorf("%d prompt tokens and %d steps do not fit the KV cache's %d positions (-ctx)", len(prompt), *steps, m.Ctx))
	}
	c := m.Config
	fmt.Fprintf(stdout, "model: %d layers, dim %d, %d heads (%d kv), ffn %d, vocab %d; %s device %s\n", c.Layers, c.Dim, c.Heads, c.KVHeads, c.FF, c.Vocab, e.Backend(), e.Device().Name)
	start := time.Now()
	out, logits, err := llama.Generate(m, prompt, *steps)
	if err != nil {
		return fail(err)
	}
	took := time.Since(start)
	n := len(prompt) + *steps - 1 // the steps Generate ran
	fmt.Fprintf(stdout, "decode: %d steps in %.3f s (%.1f steps/s)\n", n, took.Seconds(), float64(n)/took.Seconds())
	ids := make([]string, len(out))
	for i, t := range out {
		ids[i] = strconv.Itoa(int(t))
	}
	fmt.Fprintf(stdout, "generated: %s\n", strings.Join(ids, ","))
	if *logitsOut != "" {
		if err := atomicfile.WriteOutput(*logitsOut, engine.F32Bytes(logits), inputs()...); err != nil {
			return fail(err)
		}
	}
	if *trace {
		st := e.Stats()
		fmt.Fprintf(stdout, "pipelines: %d created", st.PipelinesCreated)
		if st.Feedback {
			fmt.Fprintf(stdout, ", %d found in the driver's pipeline cache", st.PipelineCacheHits)
		}
		fmt.Fprintf(stdout, "; %d bytes of pipeline cache loaded\n", st.PipelineCacheLoaded)
		type served struct{ cell, who string }
		counts := map[served]int{}
		for _, c := range e.Trace() {
			counts[served{c.Cell, fmt.Sprintf("%s %s (%s)", c.Impl, c.Kernel, c.Why)}]++
		}
		var keys []served
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i].cell < keys[j].cell || keys[i].cell == keys[j].cell && keys[i].who < keys[j].who
		})
		for _, k := range keys {
			fmt.Fprintf(stdout, "  %-24s %5d calls  %s\n", k.cell, counts[k], k.who)
		}
	}
	return 0
}

func parseTokens(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("-tokens: %q is not a token id", f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}
