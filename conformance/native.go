package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

func init() {
	extraTargets = append(extraTargets, &Native{})
}

// nativeNote labels the native column's X: what executed the kernel.
const nativeNote = "X is native CPU code (backends/native: the lowered IR as lockstep C, built by the host's C compiler and run on this machine's cores), not a GPU"

// Native runs cells on the native CPU backend (package backends/native): E the kernel lowered
// for native.Caps and emitted as C, V the host's C compiler built it (-Wall -Wextra), X executed
// as machine code on this CPU, which is the native backend's own runtime (a program placed on
// backend native runs exactly this), so its runs are level X, labelled as native CPU runs in the
// report. The emitted code checks the bounds of every buffer and shared-array access itself, so
// every run is checked (Outcome.Checked) whatever SetChecked says: an out-of-bounds access is not
// made and is reported with its Go line (Outcome.OutOfBounds). A machine without a C compiler
// has the column unavailable, saying why.
type Native struct{}

// Name implements Target.
func (n *Native) Name() string { return "native" }

// Open implements Target: the backend needs a C compiler.
func (n *Native) Open() error { return native.Available() }

// Close implements Target.
func (n *Native) Close() {}

// SubgroupSize is the backend's subgroup size (native.VL: one vector of invocations).
func (n *Native) SubgroupSize() int { return native.VL }

// Run implements Target.
func (n *Native) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) Outcome {
	o := Outcome{Checked: true}
	clk := newClock()
	low, err := lower.Run(k, native.Caps)
	o.Phases.Lower = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("lower: %w", err)
		return o
	}
	if _, err := native.EmitLowered(low); err != nil {
		o.Err = fmt.Errorf("emit: %w", err)
		return o
	}
	o.Phases.Emit = clk.lap()
	o.Levels = "E"
	p, err := native.CompileLowered(low) // the C compiler (or the cache) and loading
	o.Phases.Driver = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("build: %w", err)
		return o
	}
	o.Levels += "V"
	start := time.Now()
	for _, cs := range cases {
		bufs := make([][]byte, len(cs.Buffers))
		for i, b := range cs.Buffers {
			bufs[i] = append([]byte(nil), b...)
		}
		err := p.Run(bufs, cs.Params, cs.Groups)
		var oob *native.OutOfBoundsError
		switch {
		case errors.As(err, &oob):
			if o.OutOfBounds == "" {
				o.OutOfBounds = fmt.Sprintf("%s (case %s)", oob.Site(), cs.Name)
			}
		case err != nil:
			o.Err = fmt.Errorf("case %s: %w", cs.Name, err)
			return o
		}
		outs := make([][]byte, len(cs.Outputs))
		for i, idx := range cs.Outputs {
			if idx < 0 || idx >= len(bufs) {
				o.Err = fmt.Errorf("case %s: output binding %d out of range", cs.Name, idx)
				return o
			}
			outs[i] = bufs[idx]
		}
		o.Outputs = append(o.Outputs, outs)
	}
	o.Timing = time.Since(start)
	o.Phases.Run = clk.lap()
	o.Levels += "X"
	o.Notes = append(o.Notes, nativeNote)
	return o
}
