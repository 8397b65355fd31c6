// Package nagacheck runs WGSL through github.com/gogpu/naga, a second, independent WGSL compiler
// written in Go: its parser and validator judge every module package webgpu emits, its SPIR-V
// backend turns the module into words a Vulkan device runs (so the WGSL executes, on Mesa's
// lavapipe here, and its outputs can be compared byte for byte with onesource's own SPIR-V of the
// same kernel), and its MSL backend gives a second opinion on the MSL printer.
//
// The naga version is pinned (Version, in go.mod). SPIRV applies a fixed list of workarounds
// for naga defects that change what a module means on lavapipe, each recorded in Result.Fixes
// and each shown by a test (naga_test.go) that fails once naga no longer has the defect:
//
//   - atomicLoad and atomicStore come out as plain OpLoad and OpStore (a data race with the
//     atomics on the same memory): they are rewritten to relaxed OpAtomicLoad and
//     OpAtomicStore. The atomic variables are found from the WGSL: storage buffers by binding,
//     workgroup variables by declaration order, and any variable an atomic read-modify-write
//     touches.
//   - every atomic gets Device scope and AcquireRelease|UniformMemory semantics, also on
//     workgroup memory, whose storage class those semantics do not even name. WGSL's atomics
//     are relaxed. On lavapipe, a compare-exchange loop on workgroup memory with naga's words
//     loses adds (a workgroup of 64 adding 1.0 sums to 8), and a storage-buffer atomic with
//     those semantics in a branch that never runs (a bounds-checked kernel's report) is enough
//     to lose a workgroup reduction's result. Every atomic is made relaxed, and atomics on
//     workgroup memory get Workgroup scope (as onesource's own SPIR-V has them).
//   - WGSL has no NoContraction, so naga's SPIR-V has none, and Mesa rewrites the undecorated
//     float operations: lavapipe turns (x + C) - C into x, the rounding step of the portable
//     exp, so transcendental cells differ by far more than an ulp, and folds u32(f32(x)) into x.
//     Every float operation and conversion of naga's words is decorated NoContraction, so the
//     driver computes the operations the WGSL text writes. (This is the contract's caveat for WGSL itself: a WebGPU implementation
//     whose compiler treats WGSL's float operations as reassociable does not keep it.)
//   - the default SPIR-V options declare StorageInputOutput16 whenever f16 is used, though a
//     compute shader has no f16 inputs or outputs; lavapipe does not have it. SPIRV turns the
//     option off (VulkanModule refuses a module that still declares it).
//
// Defects that need no workaround here, each shown by a test too: a workgroup size given by
// an override becomes LocalSize 1x1x1 (package webgpu writes literal sizes; VulkanModule checks
// LocalSize against the module's workgroup size); WGSL's float != is written as an ordered
// compare (package webgpu writes !(a == b)); bitcast<f32>(vec2<f16>) gets the result type
// vec2<f16>, which spirv-val rejects (package webgpu moves halves through the exact integer
// helpers instead); hex float literals and the requires directive do
// not parse (package webgpu writes decimal literals and puts requires in a comment). naga does
// not run WGSL's uniformity analysis either: a module it accepts may still be rejected by
// Dawn/Tint for a barrier in control flow WGSL cannot prove uniform.
//
// naga's MSL (MSL) does not pass the project's MSL host check (backends/metal.HostCheck): its
// shim metal_stdlib declares what onesource's own printer uses (see TestMSLSecondOpinion).
package nagacheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/gogpu/naga"
	nir "github.com/gogpu/naga/ir"
	"github.com/gogpu/naga/msl"
	"github.com/gogpu/naga/spirv"
)

// Version is the github.com/gogpu/naga version this package is built and tested against.
const Version = "v0.19.0"

// Label says what naga is, for reports.
const Label = "github.com/gogpu/naga " + Version

// ErrNoValidator is wrapped by SPIRVVal's error when spirv-val is not installed.
var ErrNoValidator = errors.New("spirv-val not found on PATH")

// Parse parses, lowers and validates WGSL source with naga. f16 is allowed when the source
// enables it; naga's validator takes no other capability.
func Parse(src string) (*nir.Module, error) {
	ast, err := naga.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("naga %s: %w", Version, err)
	}
	mod, err := naga.LowerWithSource(ast, src)
	if err != nil {
		return nil, fmt.Errorf("naga %s: lowering: %w", Version, err)
	}
	caps := nir.Capabilities(0)
	if enables(src, "f16") {
		caps |= nir.CapShaderFloat16
	}
	verrs, err := nir.ValidateWithCapabilities(mod, caps)
	if err != nil {
		return nil, fmt.Errorf("naga %s: validation: %w", Version, err)
	}
	if len(verrs) > 0 {
		var msgs []string
		for _, e := range verrs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("naga %s: validation: %s", Version, strings.Join(msgs, "; "))
	}
	return mod, nil
}

// enables reports whether src has the directive `enable name;`.
func enables(src, name string) bool {
	return regexp.MustCompile(`(?m)^\s*enable\s+[^;]*\b` + regexp.QuoteMeta(name) + `\b[^;]*;`).MatchString(src)
}

// Options configures SPIRV.
type Options struct {
	// Raw skips the workarounds: the words are exactly naga's (tests of the defects use it).
	Raw bool
	// NagaDefaults uses naga's default SPIR-V options unchanged (StorageInputOutput16 on).
	NagaDefaults bool
}

// Fix is one workaround SPIRV applied: what it changed and how many instructions.
type Fix struct {
	Name  string
	Count int
}

// String describes the fix.
func (f Fix) String() string { return fmt.Sprintf("%s (%d)", f.Name, f.Count) }

// Result is naga's SPIR-V for one module.
type Result struct {
	Words []uint32 // the module, with the workarounds applied unless Options.Raw
	Raw   []uint32 // naga's words as it wrote them
	Fixes []Fix    // the workarounds that changed something
	// Capabilities are the module's OpCapability operands, sorted.
	Capabilities []uint32
	// LocalSize is the entry point's LocalSize.
	LocalSize [3]uint32
}

// SPIRV compiles WGSL source to SPIR-V 1.3 (for Vulkan 1.1) with naga, after Parse, and
// applies the workarounds of the package documentation.
func SPIRV(src string, o Options) (*Result, error) {
	mod, err := Parse(src)
	if err != nil {
		return nil, err
	}
	opts := spirv.DefaultOptions()
	opts.Version = spirv.Version1_3
	opts.Debug = true
	if !o.NagaDefaults {
		opts.UseStorageInputOutput16 = false
	}
	b, err := naga.GenerateSPIRV(mod, opts)
	if err != nil {
		return nil, fmt.Errorf("naga %s: %w", Version, err)
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("naga %s: SPIR-V of %d bytes, not whole words", Version, len(b))
	}
	raw := make([]uint32, len(b)/4)
	for i := range raw {
		raw[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	m, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("naga %s: %w", Version, err)
	}
	r := &Result{Raw: raw}
	if !o.Raw {
		if n := fixAtomicAccess(m, atomicBindings(src), atomicWorkgroupVars(src)); n > 0 {
			r.Fixes = append(r.Fixes, Fix{"atomicLoad/atomicStore written as plain OpLoad/OpStore: made OpAtomicLoad/OpAtomicStore", n})
		}
		if n := addNoContraction(m); n > 0 {
			r.Fixes = append(r.Fixes, Fix{"no NoContraction (WGSL has none): every float operation and conversion decorated NoContraction", n})
		}
		if n := fixAtomicOrder(m); n > 0 {
			r.Fixes = append(r.Fixes, Fix{"atomics with AcquireRelease|UniformMemory semantics and Device scope: made relaxed, with Workgroup scope on workgroup memory", n})
		}
	}
	r.Words = m.words()
	r.Capabilities = m.capabilities()
	r.LocalSize = m.localSize()
	return r, nil
}

var atomicBindingRE = regexp.MustCompile(`@binding\((\d+)\)\s*var<storage[^>]*>\s*[A-Za-z_][A-Za-z0-9_]*\s*:\s*array<atomic<`)

// atomicBindings returns the binding numbers of the storage buffers src declares as arrays of
// atomics.
func atomicBindings(src string) map[uint32]bool {
	out := map[uint32]bool{}
	for _, m := range atomicBindingRE.FindAllStringSubmatch(src, -1) {
		if n, err := strconv.ParseUint(m[1], 10, 32); err == nil {
			out[uint32(n)] = true
		}
	}
	return out
}

var workgroupVarRE = regexp.MustCompile(`(?m)^\s*var<workgroup>\s*[A-Za-z_][A-Za-z0-9_]*\s*:\s*([^;]*);`)

// atomicWorkgroupVars reports, for each module-scope var<workgroup> of src in declaration order,
// whether its type holds atomics.
func atomicWorkgroupVars(src string) []bool {
	var out []bool
	for _, m := range workgroupVarRE.FindAllStringSubmatch(src, -1) {
		out = append(out, strings.Contains(m[1], "atomic<"))
	}
	return out
}

// atomicRoots returns the variables m accesses atomically: those any atomic instruction's
// pointer points into, the storage buffers bound at the given bindings, and the workgroup
// variables wg marks (by declaration order, which naga keeps; used only when m has exactly as
// many workgroup variables as the source declares).
func atomicRoots(m *module, p *pointers, bindings map[uint32]bool, wg []bool) map[uint32]bool {
	roots := map[uint32]bool{}
	for _, in := range m.insts {
		if ptr, _, _, ok := atomicOperands(in); ok {
			roots[p.root[in.args[ptr]]] = true
		}
	}
	_, byBinding := m.globals()
	for b := range bindings {
		if v, ok := byBinding[b]; ok {
			roots[v] = true
		}
	}
	var wgVars []uint32
	for _, in := range m.insts {
		if in.op == opFunction {
			break
		}
		if in.op == opVariable && in.args[2] == storageClassWorkgroup {
			wgVars = append(wgVars, in.args[1])
		}
	}
	if len(wgVars) == len(wg) {
		for i, atomic := range wg {
			if atomic {
				roots[wgVars[i]] = true
			}
		}
	}
	return roots
}

// fixAtomicAccess rewrites the plain loads and stores of 32-bit integers in atomically accessed
// variables (what naga makes of atomicLoad and atomicStore) into relaxed atomic loads and
// stores: Device scope in storage buffers, Workgroup scope in workgroup memory. It returns how
// many it rewrote.
func fixAtomicAccess(m *module, bindings map[uint32]bool, wg []bool) int {
	p := m.pointers()
	roots := atomicRoots(m, p, bindings, wg)
	c := m.constants()
	n := 0
	scopeOf := func(ptr uint32) uint32 {
		if p.storageClass(ptr) == storageClassWorkgroup {
			return c.id(scopeWorkgroup)
		}
		return c.id(scopeDevice)
	}
	for i, in := range m.insts {
		switch in.op {
		case opLoad:
			ptr := in.args[2]
			if roots[p.root[ptr]] && p.toInt(ptr) {
				m.insts[i] = inst{op: opAtomicLoad, args: []uint32{in.args[0], in.args[1], ptr, scopeOf(ptr), c.id(semanticsRelaxed)}}
				n++
			}
		case opStore:
			ptr := in.args[0]
			if roots[p.root[ptr]] && p.toInt(ptr) {
				m.insts[i] = inst{op: opAtomicStore, args: []uint32{ptr, scopeOf(ptr), c.id(semanticsRelaxed), in.args[1]}}
				n++
			}
		}
	}
	c.flush()
	return n
}

// fixAtomicOrder gives every atomic relaxed semantics, as WGSL defines its atomics, and every
// atomic on workgroup memory Workgroup scope. It returns how many atomics it changed.
func fixAtomicOrder(m *module) int {
	p := m.pointers()
	c := m.constants()
	wg, relaxed := c.id(scopeWorkgroup), c.id(semanticsRelaxed)
	n := 0
	for i, in := range m.insts {
		ptr, scope, sem, ok := atomicOperands(in)
		if !ok {
			continue
		}
		args := append([]uint32(nil), in.args...)
		if p.storageClass(in.args[ptr]) == storageClassWorkgroup {
			args[scope] = wg
		}
		args[sem] = relaxed
		if in.op == opAtomicCompareExchange {
			args[sem+1] = relaxed
		}
		if !equal(args, in.args) {
			m.insts[i].args = args
			n++
		}
	}
	c.flush()
	return n
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// HasNoContraction reports whether words carry any NoContraction decoration.
func HasNoContraction(words []uint32) (bool, error) {
	m, err := parse(words)
	if err != nil {
		return false, err
	}
	return m.hasDecoration(decorationNoContraction), nil
}

// SPIRVVal runs `spirv-val --target-env vulkan1.1` (the environment of SPIR-V 1.3, what SPIRV
// writes) on words. The error wraps ErrNoValidator when spirv-val is not installed.
func SPIRVVal(words []uint32) error {
	path, err := exec.LookPath("spirv-val")
	if err != nil {
		return ErrNoValidator
	}
	f, err := os.CreateTemp("", "nagacheck-*.spv")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	b := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if out, err := exec.Command(path, "--target-env", "vulkan1.1", f.Name()).CombinedOutput(); err != nil {
		return fmt.Errorf("spirv-val --target-env vulkan1.1 rejects naga's SPIR-V: %v\n%s", err, out)
	}
	return nil
}

// MSL compiles WGSL source to the Metal Shading Language with naga (MSL 2.1, naga's defaults:
// buffer sizes in a _mslBufferSizes argument, workgroup memory declared in the kernel).
func MSL(src string) (string, msl.TranslationInfo, error) {
	mod, err := Parse(src)
	if err != nil {
		return "", msl.TranslationInfo{}, err
	}
	out, info, err := msl.Compile(mod, msl.DefaultOptions())
	if err != nil {
		return "", info, fmt.Errorf("naga %s: MSL: %w", Version, err)
	}
	return out, info, nil
}

// SPIR-V capability numbers (the operands of Result.Capabilities) a runner maps to device
// features.
const (
	CapabilityFloat16                            = 9
	CapabilityFloat64                            = 10
	CapabilityInt16                              = 22
	CapabilityInt8                               = 39
	CapabilityGroupNonUniform                    = 61
	CapabilityGroupNonUniformShuffle             = 65
	CapabilityStorageBuffer16BitAccess           = 4433
	CapabilityUniformAndStorageBuffer16BitAccess = 4434
	CapabilityStorageInputOutput16               = 4436
	CapabilityStorageBuffer8BitAccess            = 4448
	CapabilityDotProductInput4x8BitPacked        = 6018
	CapabilityDotProduct                         = 6019
)
