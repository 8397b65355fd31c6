// Command onesource-example runs the kernels of package gpu, generated ahead of time by
// `go generate ./...`, on the best backend this machine has, chosen through a onesource registry,
// and checks every result bit for bit against onesource's CPU oracle.
//
//	go generate ./...   # rebuild gpu/onesource/* and gpu/onesource_gen.go (needs no GPU)
//	go run .            # place, run, compare; exit status 1 on any difference
//	go run . -registry cells.json   # keep the verdicts: the next run finds the cells verified
//
// No kernel compiler runs here for Vulkan: the SPIR-V was written by `go generate` and is
// embedded in the binary. CUDA and HIP compile the embedded source with the driver's run-time
// compiler.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/prebuilt"
	"github.com/onesource-go/onesource/registry"

	"example.com/onesource-example/gpu"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("onesource-example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	regPath := fs.String("registry", "", "registry `file` to consult and update (default: an empty in-memory registry)")
	order := fs.String("backends", "", "backend preference, comma-separated (default "+strings.Join(prebuilt.DefaultBackends, ",")+")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	reg := registry.New()
	if *regPath != "" {
		var err error
		if reg, err = registry.Open(*regPath); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	opts := prebuilt.Options{Registry: reg}
	if *order != "" {
		opts.Backends = strings.Split(*order, ",")
	}
	rt, err := prebuilt.NewRuntime(opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer rt.Close()

	status := 0
	for _, c := range checks {
		if err := check(rt, c, stdout); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.kernel, err)
			status = 1
		}
	}
	if *regPath != "" {
		if err := reg.Save(""); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "registry saved to %s\n", *regPath)
	}
	return status
}

// A testCase is one dispatch of a kernel and the oracle's answer for it.
type testCase struct {
	name    string
	groups  [3]uint32
	bufs    [][]byte // inputs, in binding order; outputs zero-filled at their size
	params  []any
	outputs []int       // bindings compared with want
	want    [][]float32 // the oracle's values, one slice per output
}

// A kernelCheck is a kernel of package gpu with the cases that check it.
type kernelCheck struct {
	kernel string
	cases  func() ([]testCase, error)
}

var checks = []kernelCheck{
	{"axpy", axpyCases},
	{"rms_norm", rmsNormCases},
}

// check places one kernel, runs its cases, compares every output bit with the oracle's and
// records the verdict in the registry.
func check(rt *prebuilt.Runtime, c kernelCheck, out io.Writer) error {
	k, err := gpu.Generated.Kernel(c.kernel)
	if err != nil {
		return err
	}
	pl, err := rt.Place(k)
	if err != nil {
		return err
	}
	p := pl.Placement()
	fmt.Fprintf(out, "%s (%s): %s\n", k.Name, k.Source, p)
	for _, why := range p.Considered {
		fmt.Fprintf(out, "    %s\n", why)
	}
	cases, err := c.cases()
	if err != nil {
		return err
	}
	values, diffs, maxULP := 0, 0, 0.0
	var first string
	for _, tc := range cases {
		if err := pl.Run(tc.groups, tc.bufs, tc.params...); err != nil {
			return err
		}
		for i, b := range tc.outputs {
			got := floats(tc.bufs[b])
			for j, w := range tc.want[i] {
				values++
				if math.Float32bits(got[j]) == math.Float32bits(w) {
					continue
				}
				diffs++
				maxULP = math.Max(maxULP, ulps(got[j], w))
				if first == "" {
					first = fmt.Sprintf("case %s, %s[%d] = %g (%08x), oracle %g (%08x)", tc.name, k.Buffers[b].Name, j, got[j], math.Float32bits(got[j]), w, math.Float32bits(w))
				}
			}
		}
	}
	state, err := rt.Record(pl, diffs == 0, maxULP, len(cases))
	if err != nil {
		return err
	}
	if diffs > 0 {
		return fmt.Errorf("%d of %d values differ from the oracle (max %g ULP), first: %s; registry cell %s is now %s", diffs, values, maxULP, first, p.Cell, state)
	}
	fmt.Fprintf(out, "    %d cases, %d values bit-exact vs the oracle; registry cell %s: %s -> %s\n", len(cases), values, p.Cell, p.State, state)
	return nil
}

func axpyCases() ([]testCase, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	var cases []testCase
	for _, n := range []int{1, 63, 1000, 4099} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = rng.Float32()*8 - 4
			y[i] = rng.Float32()*8 - 4
		}
		if n >= 8 { // IEEE special values: the kernel must not flush or reorder them
			copy(x, []float32{float32(math.Inf(1)), -0.0, 1e-40, float32(math.NaN()), 3e38, -3e38, 1, 0})
			copy(y, []float32{1, 0, 1e-40, 2, 3e38, -3e38, float32(math.Inf(-1)), -0.0})
		}
		a := float32(1.5)
		if n == 63 {
			a = -0.1
		}
		ax := make([]float32, n)
		want := make([]float32, n)
		if err := oracle.ScaleF32(ax, x, a); err != nil {
			return nil, err
		}
		if err := oracle.AddF32(want, ax, y); err != nil {
			return nil, err
		}
		groups := uint32((n + gpu.AxpyLanes - 1) / gpu.AxpyLanes)
		cases = append(cases, testCase{
			name: fmt.Sprintf("n%d", n), groups: [3]uint32{groups, 1, 1},
			bufs: [][]byte{bytesOf(x), bytesOf(y)}, params: []any{a, n},
			outputs: []int{1}, want: [][]float32{want},
		})
	}
	return cases, nil
}

func rmsNormCases() ([]testCase, error) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cases []testCase
	for _, sh := range []struct {
		rows, n  int
		weighted bool
	}{{1, 64, false}, {3, 300, true}, {2, 4096, false}, {4, 1, true}} {
		x := make([]float32, sh.rows*sh.n)
		for i := range x {
			x[i] = rng.Float32()*2 - 1
		}
		w := make([]float32, sh.n)
		for i := range w {
			w[i] = rng.Float32() + 0.5
		}
		const eps = 1e-6
		want := make([]float32, len(x))
		var ow []float32
		if sh.weighted {
			ow = w
		}
		if err := oracle.RMSNormF32(want, x, ow, sh.n, eps); err != nil {
			return nil, err
		}
		weighted := 0
		if sh.weighted {
			weighted = 1
		}
		cases = append(cases, testCase{
			name: fmt.Sprintf("rows%d_n%d_w%d", sh.rows, sh.n, weighted), groups: [3]uint32{uint32(sh.rows), 1, 1},
			bufs:    [][]byte{bytesOf(x), bytesOf(w), make([]byte, 4*len(x))},
			params:  []any{sh.n, float32(eps), weighted},
			outputs: []int{2}, want: [][]float32{want},
		})
	}
	return cases, nil
}

func bytesOf(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		u := math.Float32bits(x)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

func floats(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return xs
}

// ulps is the distance between a and b in units in the last place (+Inf for a NaN against a
// number).
func ulps(a, b float32) float64 {
	if a != a || b != b {
		return math.Inf(1)
	}
	ord := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&0x80000000 != 0 {
			return -(u & 0x7fffffff)
		}
		return u
	}
	return math.Abs(float64(ord(a) - ord(b)))
}
