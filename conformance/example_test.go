package conformance_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// plainGo is a toy Target: it "executes" the add cell in plain Go (float32 addition rounds to
// nearest even, as the numeric contract asks). With flushSubnormals it behaves like a device that
// flushes subnormal results to zero, which the conformance judge must catch.
type plainGo struct{ flushSubnormals bool }

func (p *plainGo) Name() string { return "plain-go" }
func (p *plainGo) Open() error  { return nil }
func (p *plainGo) Close()       {}

// Run computes y[i] = a[i] + b[i % nb] for every case, from the case's bindings (0 a, 1 b, 2 y)
// and parameters (n, nb), as kernels.AddKernel documents them.
func (p *plainGo) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) conformance.Outcome {
	if k.Name != "add" {
		return conformance.Outcome{Err: errors.New("plain-go runs only add")}
	}
	var o conformance.Outcome
	for _, c := range cases {
		a, b := c.Buffers[0], c.Buffers[1]
		n, nb := c.Params[0], c.Params[1]
		y := make([]byte, 4*n)
		for i := range n {
			x := math.Float32frombits(binary.LittleEndian.Uint32(a[4*i:]))
			z := math.Float32frombits(binary.LittleEndian.Uint32(b[4*(i%nb):]))
			sum := x + z
			if p.flushSubnormals && sum != 0 && math.Abs(float64(sum)) < 0x1p-126 {
				sum = float32(math.Copysign(0, float64(sum)))
			}
			binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(sum))
		}
		o.Outputs = append(o.Outputs, [][]byte{y}) // the one output binding, 2
	}
	return o
}

// Judge builds a cell's kernel and conformance cases for a schedule, runs them on a target and
// compares every output with the oracle's bytes. Here the target is a plain-Go stand-in for a
// device, once correct and once flushing subnormals to zero.
func ExampleJudge() {
	cell, ok := kernels.Lookup("add", oracle.F32)
	if !ok {
		fmt.Println("no add/f32 cell")
		return
	}
	s := kernels.Schedule{Lanes: 64}

	r := conformance.Judge(&plainGo{}, cell, s)
	fmt.Printf("%s/%s on %s: bit-exact %v over %d cases, levels %q\n", r.Op, r.Type, r.Backend, r.BitExact, r.Cases, r.Levels)

	r = conformance.Judge(&plainGo{flushSubnormals: true}, cell, s)
	fmt.Printf("flushing subnormals: bit-exact %v, max %g ULP\n", r.BitExact, r.MaxULP)
	first, _, _ := strings.Cut(r.Reason, "; ") // the reason names up to three differing cases
	fmt.Println(first)
	// Output:
	// add/f32 on plain-go: bit-exact true over 7 cases, levels "B"
	// flushing subnormals: bit-exact false, max 8.388606e+06 ULP
	// not bit-exact: case n255_nb51 output 2: element 5 = -0 (80000000), want -1.1754941e-38 (807ffffe)
}

// Compare is byte for byte, except that any NaN equals any NaN; for f32 outputs it also measures
// the difference in ULP.
func ExampleCompare() {
	f32 := func(xs ...float32) []byte {
		b := make([]byte, 4*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	quietNaN := math.Float32frombits(0x7fc00000)
	otherNaN := math.Float32frombits(0x7fc00001)
	one := float32(1)
	next := math.Nextafter32(one, 2)

	fmt.Printf("%+v\n", conformance.Compare(f32(one, quietNaN), f32(one, otherNaN), "f32"))
	fmt.Printf("%+v\n", conformance.Compare(f32(one, next), f32(one, one), "f32"))
	fmt.Printf("%+v\n", conformance.Compare([]byte{1, 2}, []byte{1, 3}, "u8"))
	// Output:
	// {Exact:true ULP:0 Rel:0 First:}
	// {Exact:false ULP:1 Rel:1.1920928955078125e-07 First:element 1 = 1.0000001 (3f800001), want 1 (3f800000)}
	// {Exact:false ULP:+Inf Rel:+Inf First:byte 1 = 0x02, want 0x03}
}

// Run judges the selected cells on every backend this machine has and WriteMatrix prints the
// matrix; a backend without its device or toolchain is listed as unavailable with the reason.
// (No Output: what it prints depends on the machine.)
func ExampleRun() {
	f := conformance.Filter{Ops: []string{"rms_norm"}, Types: []string{"f32"}}
	results := conformance.Run(f, conformance.Targets(), nil, nil)
	conformance.WriteMatrix(os.Stdout, results)
	fmt.Println("any failure:", conformance.Failed(results))
}
