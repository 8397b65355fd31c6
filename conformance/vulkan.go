package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
)

// Vulkan runs cells through the SPIR-V emitter on the first Vulkan device (Mesa lavapipe on a
// machine without a GPU): E emitted, V spirv-val accepts it (when spirv-val is installed), X run
// on the device.
type Vulkan struct {
	dev *vulkan.Device
}

// Name implements Target.
func (v *Vulkan) Name() string { return "vulkan" }

// Open implements Target.
func (v *Vulkan) Open() error {
	if err := vulkan.Available(); err != nil {
		return err
	}
	d, err := vulkan.Open(vulkan.Options{})
	if err != nil {
		return err
	}
	v.dev = d
	return nil
}

// Close implements Target.
func (v *Vulkan) Close() {
	if v.dev != nil {
		v.dev.Close()
	}
}

// Device returns the open device (for benchmarks).
func (v *Vulkan) Device() *vulkan.Device { return v.dev }

// Run implements Target.
func (v *Vulkan) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) Outcome {
	var o Outcome
	m, err := vulkan.Compile(k, v.dev.Caps())
	if err != nil {
		o.Err = fmt.Errorf("emit: %w", err)
		return o
	}
	o.Levels = "E"
	switch err := vulkan.Validate(m.Words); {
	case errors.Is(err, vulkan.ErrNoValidator):
		o.Notes = append(o.Notes, "spirv-val not installed: V not checked")
	case err != nil:
		o.Err = err
		return o
	default:
		o.Levels += "V"
	}
	p, err := v.dev.Pipeline(m)
	if err != nil {
		o.Err = fmt.Errorf("pipeline: %w", err)
		return o
	}
	start := time.Now()
	for _, c := range cases {
		outs, err := v.runCase(p, c)
		if err != nil {
			o.Err = fmt.Errorf("case %s: %w", c.Name, err)
			return o
		}
		o.Outputs = append(o.Outputs, outs)
	}
	o.Timing = time.Since(start)
	o.Levels += "X"
	return o
}

func (v *Vulkan) runCase(p *vulkan.Pipeline, c kernels.Case) ([][]byte, error) {
	bufs := make([]*vulkan.Buffer, len(c.Buffers))
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
	}()
	for i, data := range c.Buffers {
		size := len(data)
		if size == 0 {
			size = 4
		}
		b, err := v.dev.NewBuffer(size)
		if err != nil {
			return nil, err
		}
		bufs[i] = b
		if err := b.Write(0, data); err != nil {
			return nil, err
		}
	}
	push := make([]byte, 4*len(c.Params))
	for i, p := range c.Params {
		binary.LittleEndian.PutUint32(push[4*i:], p)
	}
	if err := v.dev.Run(p, bufs, push, c.Groups); err != nil {
		return nil, err
	}
	outs := make([][]byte, len(c.Outputs))
	for i, idx := range c.Outputs {
		if idx < 0 || idx >= len(bufs) {
			return nil, fmt.Errorf("output binding %d out of range", idx)
		}
		outs[i] = make([]byte, len(c.Buffers[idx]))
		if err := bufs[idx].Read(0, outs[i]); err != nil {
			return nil, err
		}
	}
	return outs, nil
}
