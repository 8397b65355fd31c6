package conformance

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

func init() {
	hipDialect, _ := hip.DialectFor(hipArch)
	cudaDialect, _ := cuda.DialectFor(cudaArch)
	extraTargets = append(extraTargets,
		&CFamily{name: "cuda", lang: host.CUDA, dialect: cudaDialect, caps: cudaDialect.Caps,
			validate:   func(src string) (*cfamily.Result, error) { return cuda.CompileClang(src, cudaArch) },
			device:     cudaDevice,
			islandBody: func(i ir.Island) string { return cuda.IslandBody(i, cudaArch) }},
		&CFamily{name: "hip", lang: host.HIP, dialect: hipDialect, caps: hipDialect.Caps,
			validate: func(src string) (*cfamily.Result, error) { return hip.CompileHIPCC(src, hipArch) },
			device:   hipDevice},
		&CFamily{name: "metal", lang: host.MSL, dialect: metal.Dialect, caps: metal.Caps,
			validate: metal.HostCheck,
			vnote:    "V is " + metal.HostLabel},
	)
}

// hipArch is the AMD target the HIP column is emitted and validated for (CDNA2, with sdot4).
const hipArch = "gfx90a"

// cudaArch is the NVIDIA architecture the CUDA column is emitted and validated for: sm_80, the
// first with the mma island's native body (kernels without islands print the same text for
// every architecture).
const cudaArch = "sm_80"

// CFamily runs cells through one C-family backend: E emitted text, V the vendor compiler accepts
// it (clang-16 to PTX for CUDA, hipcc to an AMDGPU code object for HIP, the labelled host
// syntax-and-type check for MSL), H the emitted text executed by host emulation on the CPU, and
// X on a real device where the backend's runtime finds one (CUDA, HIP). It runs in checked mode
// unless SetChecked turns it off (see the package documentation).
type CFamily struct {
	name     string
	lang     host.Lang
	dialect  *cfamily.Dialect
	caps     lower.Caps
	validate func(src string) (*cfamily.Result, error)
	vnote    string
	device   func(src string, k *ir.Kernel, cases []kernels.Case, lens func(kernels.Case) []uint32) ([][][]byte, error)
	opts     host.Options
	// islandBody names the dialect's native body of an island (nil: none is native).
	islandBody func(ir.Island) string
	// unchecked turns checked mode off: the kernel runs as production emits it.
	unchecked bool
}

// SetChecked implements Checker.
func (c *CFamily) SetChecked(on bool) { c.unchecked = !on }

// Name implements Target.
func (c *CFamily) Name() string { return c.name }

// Open implements Target: host execution needs a C++ compiler.
func (c *CFamily) Open() error {
	if c.dialect == nil {
		return fmt.Errorf("unavailable: %s: no dialect", c.name)
	}
	c.opts = host.Options{SubgroupSize: 32, Timeout: 2 * time.Minute}
	return host.Available(c.opts)
}

// Close implements Target.
func (c *CFamily) Close() {}

// SubgroupSize is the subgroup size the dialect's lowering uses.
func (c *CFamily) SubgroupSize() int { return c.caps.SubgroupSize }

// Run implements Target.
func (c *CFamily) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) Outcome {
	var o Outcome
	var chk *checkedRun
	var low *ir.Kernel
	var err error
	clk := newClock()
	if c.unchecked {
		low, err = lower.Run(k, c.caps)
	} else if chk, err = instrument(k, c.caps, cases); err == nil {
		low, cases = chk.lowered, chk.cases
		o.Checked = true
	}
	o.Phases.Lower = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("lower: %w", err)
		return o
	}
	o.noteIslands(k, low, c.islandBody)
	src, err := cfamily.Print(low, c.dialect)
	o.Phases.Emit = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("emit: %w", err)
		return o
	}
	o.Levels = "E"
	if c.validate != nil {
		_, err := c.validate(src)
		o.Phases.Validate = clk.lap()
		switch {
		case errors.Is(err, cfamily.ErrNoTool):
			o.Notes = append(o.Notes, "V not checked: "+err.Error())
		case err != nil:
			o.Err = fmt.Errorf("validate: %w", err)
			return o
		default:
			o.Levels += "V"
			if c.vnote != "" {
				o.Notes = append(o.Notes, c.vnote)
			}
		}
	}
	lens := lengthParams(low)
	if c.device != nil {
		outs, err := c.device(src, low, cases, lens)
		switch {
		case err == nil:
			o.Levels += "X"
			o.Outputs = outs
		case strings.HasPrefix(err.Error(), "unavailable"):
			// no device here: host execution below
		default:
			o.Err = fmt.Errorf("device: %w", err)
			return o
		}
	}
	clk.lap() // a device's run (above) is not the host compile
	prog, err := host.Compile(src, c.lang, k.Name, len(low.Buffers), len(low.Params)+len(lens(kernels.Case{})), c.opts)
	o.Phases.Driver = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("host execution: %w", err)
		return o
	}
	start := time.Now()
	var hostOuts [][][]byte
	for _, cs := range cases {
		res, err := prog.Run(cs.Buffers, append(append([]uint32(nil), cs.Params...), lens(cs)...), cs.Groups, k.WorkgroupSize, c.opts)
		if err != nil {
			o.Err = fmt.Errorf("host execution: case %s: %w", cs.Name, err)
			return o
		}
		outs := make([][]byte, len(cs.Outputs))
		for i, idx := range cs.Outputs {
			if idx < 0 || idx >= len(res.Buffers) {
				o.Err = fmt.Errorf("case %s: output binding %d out of range", cs.Name, idx)
				return o
			}
			outs[i] = res.Buffers[idx]
		}
		hostOuts = append(hostOuts, outs)
	}
	o.Timing = time.Since(start)
	o.Phases.Run = clk.lap()
	o.Levels += "H"
	if o.Outputs != nil {
		// Both ran: a difference between the device and the emulation is a failure too, but for
		// outputs declared inexact, which the judge measures against the oracle.
		for i := range hostOuts {
			for j := range hostOuts[i] {
				if j < len(cases[i].Tol) && cases[i].Tol[j] != nil {
					continue // declared inexact (the device's own functions): the oracle judges it
				}
				elem := "f32"
				if j < len(cases[i].Elem) {
					elem = cases[i].Elem[j]
				}
				if d := Compare(hostOuts[i][j], o.Outputs[i][j], elem); !d.Exact {
					o.Err = fmt.Errorf("case %s: host emulation and device differ: %s", cases[i].Name, d.First)
					return o
				}
			}
		}
	} else {
		o.Outputs = hostOuts
	}
	if chk != nil {
		if o.Outputs, o.OutOfBounds, err = chk.finish(o.Outputs); err != nil {
			o.Err = err
			return o
		}
	}
	o.Notes = append(o.Notes, "H is host emulation of the emitted "+c.lang.String()+" text on the CPU, not a GPU run")
	return o
}

// lengthParams returns the function giving the trailing parameters the printer adds for
// buffers whose length the kernel reads (OpLen): each such buffer's element count, in binding
// order.
func lengthParams(k *ir.Kernel) func(kernels.Case) []uint32 {
	refs := k.LenRefs()
	return func(c kernels.Case) []uint32 {
		var out []uint32
		for _, i := range refs {
			n := uint32(0)
			if i < len(c.Buffers) {
				n = uint32(len(c.Buffers[i]) / k.Buffers[i].Elem.Stride())
			}
			out = append(out, n)
		}
		return out
	}
}
