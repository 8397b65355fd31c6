package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

// Vulkan runs cells through the SPIR-V emitter on the first Vulkan device (Mesa lavapipe on a
// machine without a GPU): E emitted (for the device's environment, or Env), V spirv-val accepts
// it for that environment (when spirv-val is installed), X run on the device.
//
// The zero Vulkan runs in checked mode (see the package documentation): each cell's kernel is
// bounds-checked (lower.RunChecked) and a run whose kernel records an out-of-bounds access fails.
type Vulkan struct {
	// Unchecked turns checked mode off: the kernel runs as production emits it.
	Unchecked bool
	// Robust opens the device with robustBufferAccess, where it has it, when checked. The
	// suite's targets (Targets) set it; a Vulkan opened to measure speed (bench, tune, gate)
	// leaves it off, so its device is configured as production's.
	Robust bool
	// Env is the environment the modules are emitted for. The zero value takes the device's
	// (its Vulkan version, up to 1.3); vulkan.Vulkan1_1 or Vulkan1_2 also opens the device at
	// that version, as an older driver would be used (features through their extensions), so
	// the suite runs SPIR-V 1.3 or 1.5 modules on it (`onesource conform -vulkan-env 1.1`).
	Env vulkan.Env

	dev       *vulkan.Device
	closed    vulkan.Stats // the device's counters when Close closed it
	cacheFile string
}

// SetChecked implements Checker; call it before Open.
func (v *Vulkan) SetChecked(on bool) { v.Unchecked = !on }

// Name implements Target.
func (v *Vulkan) Name() string { return "vulkan" }

// Open implements Target.
func (v *Vulkan) Open() error {
	if err := vulkan.Available(); err != nil {
		return err
	}
	opts := vulkan.Options{RobustBufferAccess: v.Robust && !v.Unchecked}
	if v.Env != vulkan.EnvDefault {
		opts.APIVersion = v.Env.API()
	}
	d, err := vulkan.Open(opts)
	if err != nil {
		return err
	}
	if v.Env != vulkan.EnvDefault && d.Env() != v.Env {
		d.Close()
		return fmt.Errorf("vulkan: the device runs %v, not %v", d.Env(), v.Env)
	}
	v.dev = d
	return nil
}

// Close implements Target.
func (v *Vulkan) Close() {
	if v.dev != nil {
		v.dev.Close()
		v.closed = v.dev.Stats()
		v.cacheFile = v.dev.PipelineCacheFile()
		v.dev = nil
	}
}

// Stats are the counters of the open device, or of the last one Close closed: pipelines created
// and found in the driver's pipeline cache, the pipeline cache bytes loaded and saved.
func (v *Vulkan) Stats() (vulkan.Stats, string) {
	if v.dev != nil {
		return v.dev.Stats(), v.dev.PipelineCacheFile()
	}
	return v.closed, v.cacheFile
}

// SubgroupSize is the subgroup size the lowering uses on the open device (0 before Open).
func (v *Vulkan) SubgroupSize() int {
	if v.dev == nil {
		return 0
	}
	return v.dev.Caps().SubgroupSize
}

// Device returns the open device (for benchmarks).
func (v *Vulkan) Device() *vulkan.Device { return v.dev }

// Run implements Target.
func (v *Vulkan) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) Outcome {
	var o Outcome
	var chk *checkedRun
	caps := v.dev.Caps()
	env := v.dev.Env()
	if v.Env != vulkan.EnvDefault {
		o.Notes = append(o.Notes, fmt.Sprintf("SPIR-V %s for %v", env.SPIRV(), env))
	}
	clk := newClock()
	var low *ir.Kernel
	var err error
	if v.Unchecked {
		low, err = lower.Run(k, caps)
	} else if chk, err = instrument(k, caps, cases); err == nil {
		// Checked mode: the lowered kernel, instrumented, emitted as vulkan.Compile emits.
		low, cases = chk.lowered, chk.cases
		o.Checked = true
		if v.Robust && !v.dev.Info().RobustBufferAccessEnabled {
			o.Notes = append(o.Notes, "the device has no robustBufferAccess")
		}
	}
	o.Phases.Lower = clk.lap()
	var m *vulkan.Module
	if err == nil {
		sg := 0
		if caps.SubgroupSize > 1 {
			sg = caps.SubgroupSize
		}
		shape, _ := vulkan.IslandShape(v.dev.Info().CoopMatrixI8)
		m, err = vulkan.Emit(low, vulkan.EmitOptions{SubgroupSize: uint32(sg), Env: env, CoopMatrix: shape})
		o.noteIslands(k, low, func(ir.Island) string { return vulkan.IslandBody(v.dev.Info()) })
	}
	o.Phases.Emit = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("emit: %w", err)
		return o
	}
	o.Levels = "E"
	err = vulkan.Validate(m.Words)
	o.Phases.Validate = clk.lap()
	switch {
	case errors.Is(err, vulkan.ErrNoValidator):
		o.Notes = append(o.Notes, "spirv-val not installed: V not checked")
	case err != nil:
		o.Err = err
		return o
	default:
		o.Levels += "V"
	}
	p, err := v.dev.Pipeline(m)
	o.Phases.Driver = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("pipeline: %w", err)
		return o
	}
	start := time.Now()
	outs, err := runCases(cases, nil, v.dev.NewBuffer, func(bufs []*vulkan.Buffer, params []uint32, groups [3]uint32) error {
		push := make([]byte, 4*len(params))
		for i, p := range params {
			binary.LittleEndian.PutUint32(push[4*i:], p)
		}
		return v.dev.Run(p, bufs, push, groups)
	})
	o.Phases.Run = clk.lap()
	if err != nil {
		o.Err = err
		return o
	}
	o.Timing = time.Since(start)
	if chk != nil {
		if outs, o.OutOfBounds, err = chk.finish(outs); err != nil {
			o.Err = err
			return o
		}
	}
	o.Outputs = outs
	o.Levels += "X"
	return o
}
