package prebuilt

import (
	"fmt"
	"slices"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// Checked mode (Options.Checked, or ONESOURCE_CHECKED=1, lower.CheckedEnv): a placed kernel runs
// its bounds-checked build (Artifact.Checked, written by onesource gen -checked) on Vulkan, CUDA
// and HIP, with a report buffer bound after the kernel's own buffers; after each run the report
// is read, and a run whose kernel indexed a buffer out of bounds fails, naming the kernel's Go
// line: "prebuilt: axpy (gpu.go:30) on vulkan: out of bounds at gpu/gpu.go:34: store y[100]
// outside its 100 elements". The checked build computes the same bytes. The cpu executor checks
// every access of the plain file itself. A backend whose kernel has no checked build is passed
// over in checked mode, with the reason, as a backend without the kernel's file is.

// reportBuffer is the binding a checked build takes after the kernel's own.
var reportBuffer = Buffer{Name: "__oob", Elem: "u32", ElemBytes: 4, Access: ReadWrite}

// checkedDescription is k's description with the report binding of its checked build.
func checkedDescription(k *Kernel) *Kernel {
	c := *k
	c.Buffers = append(slices.Clone(k.Buffers), reportBuffer)
	return &c
}

// diagnostics is the table a checked build's report refers to.
func diagnostics(k *Kernel, a *Artifact) *lower.Diagnostics {
	d := &lower.Diagnostics{Kernel: k.Name, Binding: len(k.Buffers), Name: reportBuffer.Name}
	for i, s := range a.Sites {
		d.Sites = append(d.Sites, lower.Site{ID: uint32(i + 1), Pos: ir.Pos{File: s.File, Line: s.Line}, Buffer: s.Buffer, Access: s.Access, Signed: s.Signed})
	}
	return d
}

// checkedLaunch runs a checked build's launch with a fresh report buffer of d bound last, then
// reads the report: a recorded violation is the run's error.
func checkedLaunch(d device, run launch, diag *lower.Diagnostics) launch {
	return func(bufs []buffer, params []uint32, groups [3]uint32) error {
		rep, err := d.newBuffer(lower.ReportBytes)
		if err != nil {
			return fmt.Errorf("checked mode: report buffer: %w", err)
		}
		defer rep.Release()
		if err := run(append(slices.Clip(bufs), rep), params, groups); err != nil {
			return err
		}
		b := make([]byte, lower.ReportBytes)
		if err := rep.Read(0, b); err != nil {
			return fmt.Errorf("checked mode: reading the report: %w", err)
		}
		v, err := diag.Violation(b)
		if err != nil {
			return err
		}
		if v != nil {
			return fmt.Errorf("out of bounds at %v", v)
		}
		return nil
	}
}
