package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
)

func init() {
	extraTargets = append(extraTargets, &CPU{})
}

// cpuNote labels the cpu column's X: what executed the kernel.
const cpuNote = "X is the Go CPU executor (backends/cpu: the lowered IR compiled to closures, workgroups in lockstep), not a GPU"

// CPU runs cells on the CPU executor (package backends/cpu): E the kernel lowered for cpu.Caps
// and compiled to closures, X executed by the executor, which is the cpu backend's own runtime
// (a program placed on backend cpu runs exactly this), so its runs are level X, labelled as CPU
// runs in the report. The executor checks the bounds of every buffer and shared-array access
// itself, so every run is checked (Outcome.Checked) whatever SetChecked says elsewhere: an
// out-of-bounds access stops the case and is reported with its Go line (Outcome.OutOfBounds).
type CPU struct{}

// Name implements Target.
func (c *CPU) Name() string { return "cpu" }

// Open implements Target: the executor needs nothing from the machine.
func (c *CPU) Open() error { return nil }

// Close implements Target.
func (c *CPU) Close() {}

// SubgroupSize is the executor's subgroup size (cpu.SubgroupSize).
func (c *CPU) SubgroupSize() int { return cpu.SubgroupSize }

// Run implements Target.
func (c *CPU) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) Outcome {
	o := Outcome{Checked: true}
	clk := newClock()
	p, err := cpu.Compile(k) // lowering and compiling to closures: the executor's emit
	o.Phases.Emit = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("compile: %w", err)
		return o
	}
	o.noteIslands(k, p.Kernel(), nil)
	o.Levels = "E"
	start := time.Now()
	for _, cs := range cases {
		bufs := make([][]byte, len(cs.Buffers))
		for i, b := range cs.Buffers {
			bufs[i] = append([]byte(nil), b...)
		}
		err := p.Run(bufs, cs.Params, cs.Groups)
		var oob *cpu.OutOfBoundsError
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
	o.Notes = append(o.Notes, cpuNote)
	return o
}
