package conformance

import (
	"fmt"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/internal/devrun"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
)

// cudaDevice runs the emitted CUDA text on the first NVIDIA GPU through the driver API and NVRTC
// (level X), or returns an "unavailable" error.
func cudaDevice(src string, k *ir.Kernel, cases []kernels.Case, lens func(kernels.Case) []uint32) ([][][]byte, error) {
	if err := cuda.Available(); err != nil {
		return nil, err
	}
	d, err := cuda.Open(0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	kern, err := d.Compile(src, k.Name)
	if err != nil {
		return nil, err
	}
	return runCases(cases, lens, d.NewBuffer, func(bufs []*cuda.Buffer, params []uint32, grid [3]uint32) error {
		return d.Launch(kern, bufs, params, grid, k.WorkgroupSize)
	})
}

// hipDevice is cudaDevice for AMD GPUs through libamdhip64 and hiprtc.
func hipDevice(src string, k *ir.Kernel, cases []kernels.Case, lens func(kernels.Case) []uint32) ([][][]byte, error) {
	if err := hip.Available(); err != nil {
		return nil, err
	}
	d, err := hip.Open(0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	kern, err := d.Compile(src, k.Name)
	if err != nil {
		return nil, err
	}
	return runCases(cases, lens, d.NewBuffer, func(bufs []*hip.Buffer, params []uint32, grid [3]uint32) error {
		return d.Launch(kern, bufs, params, grid, k.WorkgroupSize)
	})
}

// runCases runs every case once on a device: the case's parameters, then the length arguments
// lens gives. It returns each case's output bindings.
func runCases[B devrun.Buffer](cases []kernels.Case, lens func(kernels.Case) []uint32, alloc func(int) (B, error),
	launch func(bufs []B, params []uint32, grid [3]uint32) error) ([][][]byte, error) {
	var all [][][]byte
	for _, c := range cases {
		var extra []uint32
		if lens != nil {
			extra = lens(c)
		}
		params := append(append([]uint32(nil), c.Params...), extra...)
		outs, err := runCase(c, alloc, func(bufs []B) error { return launch(bufs, params, c.Groups) })
		if err != nil {
			return nil, err
		}
		all = append(all, outs)
	}
	return all, nil
}

// runCase runs one case with the case's buffers copied to the device and returns fresh copies of
// its output bindings (the case itself is not modified).
func runCase[B devrun.Buffer](c kernels.Case, alloc func(int) (B, error), launch func([]B) error) ([][]byte, error) {
	host := append([][]byte(nil), c.Buffers...)
	for _, idx := range c.Outputs {
		if idx < 0 || idx >= len(host) {
			return nil, fmt.Errorf("case %s: output binding %d out of range", c.Name, idx)
		}
		host[idx] = make([]byte, len(c.Buffers[idx]))
	}
	if err := devrun.Once(alloc, host, c.Outputs, launch); err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	outs := make([][]byte, len(c.Outputs))
	for i, idx := range c.Outputs {
		outs[i] = host[idx]
	}
	return outs, nil
}
