package conformance

import (
	"fmt"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

// Checker is a Target that can run cells in checked mode (see the package documentation): the
// Vulkan and C-family targets of this package. Checked mode is on unless turned off.
type Checker interface {
	SetChecked(on bool)
}

// SetChecked turns checked mode on or off on every target that has one and returns targets.
// Call it before opening them (on Vulkan, robustBufferAccess is chosen when the device opens).
func SetChecked(targets []Target, on bool) []Target {
	for _, t := range targets {
		if c, ok := t.(Checker); ok {
			c.SetChecked(on)
		}
	}
	return targets
}

// checkedRun is one cell lowered and instrumented (lower.RunChecked): the lowered kernel to
// emit, the cases with the zero-filled report buffer appended as the last binding and as the
// last output of each case.
type checkedRun struct {
	lowered *ir.Kernel
	cases   []kernels.Case
	diag    *lower.Diagnostics
}

// instrument makes the checked run of k lowered for caps over cases; the cases themselves are
// not modified. A lowering error is returned as it is (the unchecked run would give it too).
func instrument(k *ir.Kernel, caps lower.Caps, cases []kernels.Case) (*checkedRun, error) {
	low, err := lower.Run(k, caps)
	if err != nil {
		return nil, err
	}
	ck, d, err := lower.Checked(low)
	if err != nil {
		return nil, fmt.Errorf("checked mode: %w", err)
	}
	out := make([]kernels.Case, len(cases))
	for i, c := range cases {
		c.Buffers = append(append([][]byte(nil), c.Buffers...), make([]byte, lower.ReportBytes))
		c.Outputs = append(append([]int(nil), c.Outputs...), len(c.Buffers)-1)
		out[i] = c
	}
	return &checkedRun{lowered: ck, cases: out, diag: d}, nil
}

// finish removes the report from each case's outputs (outs[i]: the outputs of cases[i], the
// report last) and returns the outputs as the unchecked cases have them, with the first
// violation any case recorded, described: "kernels/ops_norm.go:57: store y[4096] outside its
// 4096 elements (case rows=3)"; "" when none did.
func (r *checkedRun) finish(outs [][][]byte) ([][][]byte, string, error) {
	stripped := make([][][]byte, len(outs))
	oob := ""
	for i, o := range outs {
		if len(o) == 0 {
			return nil, "", fmt.Errorf("checked mode: case %d returned no report buffer", i)
		}
		stripped[i] = o[:len(o)-1]
		if oob != "" {
			continue
		}
		v, err := r.diag.Violation(o[len(o)-1])
		if err != nil {
			return nil, "", err
		}
		if v != nil {
			name := fmt.Sprint(i)
			if i < len(r.cases) {
				name = r.cases[i].Name
			}
			oob = fmt.Sprintf("%s (case %s)", v.Error(), name)
		}
	}
	return stripped, oob, nil
}
