package conformance

import (
	"fmt"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
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
	return runDevice(cases, lens, k.WorkgroupSize, func(size int) (devBuffer, error) { return d.NewBuffer(size) },
		func(bufs []devBuffer, params []uint32, grid, block [3]uint32) error {
			bs := make([]*cuda.Buffer, len(bufs))
			for i, b := range bufs {
				bs[i] = b.(*cuda.Buffer)
			}
			return d.Launch(kern, bs, params, grid, block)
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
	return runDevice(cases, lens, k.WorkgroupSize, func(size int) (devBuffer, error) { return d.NewBuffer(size) },
		func(bufs []devBuffer, params []uint32, grid, block [3]uint32) error {
			bs := make([]*hip.Buffer, len(bufs))
			for i, b := range bufs {
				bs[i] = b.(*hip.Buffer)
			}
			return d.Launch(kern, bs, params, grid, block)
		})
}

// devBuffer is what the CUDA and HIP runtimes' buffers have in common.
type devBuffer interface {
	Write(offset int, data []byte) error
	Read(offset int, dst []byte) error
	Release()
}

func runDevice(cases []kernels.Case, lens func(kernels.Case) []uint32, block [3]uint32,
	alloc func(int) (devBuffer, error), launch func([]devBuffer, []uint32, [3]uint32, [3]uint32) error) ([][][]byte, error) {
	var all [][][]byte
	for _, c := range cases {
		bufs := make([]devBuffer, len(c.Buffers))
		release := func() {
			for _, b := range bufs {
				if b != nil {
					b.Release()
				}
			}
		}
		for i, data := range c.Buffers {
			size := len(data)
			if size == 0 {
				size = 4
			}
			b, err := alloc(size)
			if err != nil {
				release()
				return nil, err
			}
			bufs[i] = b
			if err := b.Write(0, data); err != nil {
				release()
				return nil, err
			}
		}
		params := append(append([]uint32(nil), c.Params...), lens(c)...)
		if err := launch(bufs, params, c.Groups, block); err != nil {
			release()
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		outs := make([][]byte, len(c.Outputs))
		for i, idx := range c.Outputs {
			outs[i] = make([]byte, len(c.Buffers[idx]))
			if err := bufs[idx].Read(0, outs[i]); err != nil {
				release()
				return nil, err
			}
		}
		release()
		all = append(all, outs)
	}
	return all, nil
}
