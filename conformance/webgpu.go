package conformance

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/backends/webgpu"
	"github.com/onesource-go/onesource/backends/webgpu/nagacheck"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

func init() {
	extraTargets = append(extraTargets, &WebGPU{})
}

// WebGPU runs cells through the WGSL emitter (package backends/webgpu) and a second,
// independent compiler: E the WGSL module is emitted, V naga (github.com/gogpu/naga, package
// backends/webgpu/nagacheck) parses and validates it and spirv-val accepts naga's SPIR-V of it,
// X naga's SPIR-V runs on the first Vulkan device (Mesa lavapipe on a machine without a GPU).
// That X is not a WebGPU implementation: it is the WGSL text, compiled by another compiler than
// onesource's, executed; every result says so.
//
// The WebGPU targets of a process share one Vulkan device while any is open (its pipelines are
// cached per module), and a module's naga SPIR-V and spirv-val verdict are made once per WGSL
// text for the life of the process: a second run of a cell (the differential test after the
// conformance test, say) compiles nothing but the device's pipeline.
//
// The zero WebGPU emits each kernel with webgpu.OptionsFor (core WGSL, or WGSL with the
// subgroups extension for a kernel that uses subgroups itself), unchecked: checked mode records
// the first out-of-bounds access with storage compare-exchanges, and through naga v0.19.0 on
// lavapipe the checked attn_decode at 8 lanes, strided, gives wrong outputs in 2 of its 12 cases
// (its unchecked kernel, and the same checked kernel through onesource's own SPIR-V and the CPU
// executor, are bit-exact; the cause is not found: naga's atomics are a suspect, see nagacheck's
// TestStorageAtomicSemantics). Set Checked to run checked anyway: the kernel is bounds-checked
// (lower.RunChecked) and a run whose kernel records an out-of-bounds access fails. A kernel WGSL cannot express under the options fails with the emitter's capability
// error, which names the kernel's Go line.
type WebGPU struct {
	// Options choose the WGSL extensions (zero: core WGSL).
	Options webgpu.Options
	// Unchecked turns checked mode off: the kernel runs as production emits it.
	Unchecked bool
	// Checked runs checked mode through naga anyway (see the type's doc); without it, a target
	// in checked mode runs unchecked and says so in each result.
	Checked bool

	dev *vulkan.Device
}

// SetChecked implements Checker; call it before Open.
// Checked mode through naga needs WebGPU.Checked as well (see the type's doc).
func (w *WebGPU) SetChecked(on bool) { w.Unchecked = !on }

// Name implements Target.
func (w *WebGPU) Name() string { return "webgpu" }

// webgpuShared is the Vulkan device every open WebGPU target uses, and the WGSL texts naga has
// compiled.
var webgpuShared struct {
	mu      sync.Mutex
	dev     *vulkan.Device
	users   int
	modules map[[32]byte]*nagaModule
}

// maxNagaModules bounds the modules kept compiled.
const maxNagaModules = 256

// nagaModule is one WGSL text compiled by naga and validated.
type nagaModule struct {
	once  sync.Once
	r     *nagacheck.Result
	noVal bool  // spirv-val is not installed
	err   error // the failure, if any
}

// Open implements Target: it opens (or shares) a Vulkan device to run naga's SPIR-V on.
func (w *WebGPU) Open() error {
	sh := &webgpuShared
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.dev == nil {
		if err := vulkan.Available(); err != nil {
			return fmt.Errorf("unavailable: webgpu runs naga's SPIR-V on Vulkan: %w", err)
		}
		d, err := vulkan.Open(vulkan.Options{})
		if err != nil {
			return fmt.Errorf("unavailable: webgpu runs naga's SPIR-V on Vulkan: %w", err)
		}
		sh.dev = d
	}
	if sh.modules == nil {
		sh.modules = map[[32]byte]*nagaModule{}
	}
	sh.users++
	w.dev = sh.dev
	return nil
}

// Close implements Target: the shared device closes with its last user.
func (w *WebGPU) Close() {
	if w.dev == nil {
		return
	}
	w.dev = nil
	sh := &webgpuShared
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.users--; sh.users == 0 {
		sh.dev.Close()
		sh.dev = nil
	}
}

// compiled returns naga's SPIR-V of m and its spirv-val verdict, made on first use.
func compiled(m *webgpu.Module) *nagaModule {
	sh := &webgpuShared
	key := sha256.Sum256([]byte(m.Source))
	sh.mu.Lock()
	if sh.modules == nil {
		sh.modules = map[[32]byte]*nagaModule{}
	}
	nm := sh.modules[key]
	if nm == nil {
		if len(sh.modules) >= maxNagaModules {
			clear(sh.modules) // a bound on memory: a matrix at one schedule fits
		}
		nm = &nagaModule{}
		sh.modules[key] = nm
	}
	sh.mu.Unlock()
	nm.once.Do(func() {
		r, err := nagacheck.SPIRV(m.Source, nagacheck.Options{})
		if err != nil {
			nm.err = err
			return
		}
		r.Raw = nil
		nm.r = r
		switch err := nagacheck.SPIRVVal(r.Words); {
		case errors.Is(err, nagacheck.ErrNoValidator):
			nm.noVal = true
		case err != nil:
			nm.err = err
		}
	})
	return nm
}

// Run implements Target.
func (w *WebGPU) Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) Outcome {
	var o Outcome
	var chk *checkedRun
	var low *ir.Kernel
	var err error
	clk := newClock()
	opts := w.Options
	if opts == (webgpu.Options{}) {
		opts = webgpu.OptionsFor(k)
	}
	if opts.SubgroupSize > 1 {
		o.Notes = append(o.Notes, fmt.Sprintf("WGSL with `enable subgroups;` (the kernel uses subgroups; lowered for subgroups of at least %d lanes)", opts.SubgroupSize))
	}
	if w.Unchecked || !w.Checked {
		if !w.Unchecked {
			o.Notes = append(o.Notes, "unchecked: checked mode through naga miscompiles (see conformance.WebGPU; WebGPU.Checked forces it)")
		}
		low, err = lower.Run(k, opts.Caps())
	} else if chk, err = instrument(k, opts.Caps(), cases); err == nil {
		low, cases = chk.lowered, chk.cases
		o.Checked = true
	}
	o.Phases.Lower = clk.lap()
	o.noteIslands(k, low, nil)
	if err != nil {
		o.Err = fmt.Errorf("lower: %w", err)
		return o
	}
	m, err := webgpu.Emit(low, opts)
	o.Phases.Emit = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("emit: %w", err)
		return o
	}
	o.Levels = "E"
	nm := compiled(m) // naga's parse, validation, SPIR-V and spirv-val on it
	o.Phases.Validate = clk.lap()
	if nm.err != nil {
		o.Err = fmt.Errorf("validate: %w", nm.err)
		return o
	}
	if nm.noVal {
		o.Notes = append(o.Notes, "V is naga's validator only (spirv-val not installed)")
	} else {
		o.Notes = append(o.Notes, "V is "+nagacheck.Label+"'s validator on the WGSL and spirv-val on its SPIR-V")
	}
	o.Levels += "V"
	for _, f := range nm.r.Fixes {
		o.Notes = append(o.Notes, "naga workaround: "+f.Name)
	}
	vm, err := nagacheck.VulkanModule(m, nm.r, low.SharedBytes())
	if err != nil {
		o.Err = err
		return o
	}
	p, err := w.dev.Pipeline(vm)
	o.Phases.Driver = clk.lap()
	if err != nil {
		o.Err = fmt.Errorf("pipeline: %w", err)
		return o
	}
	start := time.Now()
	var outs [][][]byte
	for _, c := range cases {
		got, err := nagacheck.Run(w.dev, p, m, c.Buffers, c.Outputs, c.Params, c.Groups)
		if err != nil {
			o.Err = fmt.Errorf("case %s: %w", c.Name, err)
			return o
		}
		outs = append(outs, got)
	}
	o.Timing = time.Since(start)
	o.Phases.Run = clk.lap()
	if chk != nil {
		if outs, o.OutOfBounds, err = chk.finish(outs); err != nil {
			o.Err = err
			return o
		}
	}
	o.Outputs = outs
	o.Levels += "X"
	o.Notes = append(o.Notes, fmt.Sprintf("X is the WGSL compiled to SPIR-V by %s and run on %s (Vulkan), not a WebGPU implementation", nagacheck.Label, strings.TrimSpace(w.dev.Info().Name)))
	return o
}
