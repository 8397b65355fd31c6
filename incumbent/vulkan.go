package incumbent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/onesource-go/onesource/backends/vulkan"
)

// featureNames maps the manifest's feature names to vulkan.Features fields.
var featureNames = map[string]func(*vulkan.Features) *bool{
	"int8":                func(f *vulkan.Features) *bool { return &f.Int8 },
	"int16":               func(f *vulkan.Features) *bool { return &f.Int16 },
	"float16":             func(f *vulkan.Features) *bool { return &f.Float16 },
	"float64":             func(f *vulkan.Features) *bool { return &f.Float64 },
	"storage_buffer8":     func(f *vulkan.Features) *bool { return &f.StorageBuffer8 },
	"storage_buffer16":    func(f *vulkan.Features) *bool { return &f.StorageBuffer16 },
	"integer_dot_product": func(f *vulkan.Features) *bool { return &f.IntegerDotProduct },
	"int8_dot":            func(f *vulkan.Features) *bool { return &f.IntegerDotProduct },
	"subgroup_shuffle":    func(f *vulkan.Features) *bool { return &f.SubgroupShuffle },
	"subgroup_basic":      func(f *vulkan.Features) *bool { return &f.SubgroupBasic },
	"subgroup_arithmetic": func(f *vulkan.Features) *bool { return &f.SubgroupArithmetic },
	"atomic_float32_add":  func(f *vulkan.Features) *bool { return &f.AtomicFloat32Add },
}

// requirementNames are the "requires" names beyond featureNames; verified marks the ones a
// vulkan.DeviceInfo reports.
var requirementNames = map[string]bool{
	"subgroup_size_control":     true,
	"subgroup_vote":             false,
	"subgroup_ballot":           false,
	"subgroup_shuffle_relative": false,
	"subgroup_clustered":        false,
	"subgroup_quad":             false,
}

// capabilityRequirements maps SPIR-V capabilities to the requirement they imply.
var capabilityRequirements = map[uint32]string{
	9:    "float16",             // Float16
	10:   "float64",             // Float64
	22:   "int16",               // Int16
	39:   "int8",                // Int8
	4433: "storage_buffer16",    // StorageBuffer16BitAccess
	4448: "storage_buffer8",     // StorageBuffer8BitAccess
	6016: "integer_dot_product", // DotProductInputAll
	6017: "integer_dot_product", // DotProductInput4x8Bit
	6018: "integer_dot_product", // DotProductInput4x8BitPacked
	6019: "integer_dot_product", // DotProduct
	6033: "atomic_float32_add",  // AtomicFloat32AddEXT
	61:   "subgroup_basic",      // GroupNonUniform
	62:   "subgroup_vote",       // GroupNonUniformVote
	63:   "subgroup_arithmetic", // GroupNonUniformArithmetic
	64:   "subgroup_ballot",     // GroupNonUniformBallot
	65:   "subgroup_shuffle",    // GroupNonUniformShuffle
	66:   "subgroup_shuffle_relative",
	67:   "subgroup_clustered",
	68:   "subgroup_quad",
}

// deviceVarNames are the variables DeviceVars sets.
var deviceVarNames = []string{"subgroup_size", "min_subgroup_size", "max_subgroup_size",
	"max_workgroup_count_x", "max_workgroup_count_y", "max_workgroup_count_z"}

func isDeviceVar(name string) bool {
	for _, n := range deviceVarNames {
		if n == name {
			return true
		}
	}
	return false
}

// DeviceVars returns the device variables expressions may use, from a device description:
// subgroup_size (the default subgroup size), min_subgroup_size and max_subgroup_size (the range
// a pipeline can require; the default size where the device reports none) and
// max_workgroup_count_x, _y, _z (maxComputeWorkGroupCount).
func DeviceVars(info vulkan.DeviceInfo) map[string]float64 {
	lo, hi := info.MinSubgroupSize, info.MaxSubgroupSize
	if lo == 0 || hi == 0 {
		lo, hi = info.SubgroupSize, info.SubgroupSize
	}
	return map[string]float64{
		"subgroup_size":         float64(info.SubgroupSize),
		"min_subgroup_size":     float64(lo),
		"max_subgroup_size":     float64(hi),
		"max_workgroup_count_x": float64(info.MaxWorkgroupCount[0]),
		"max_workgroup_count_y": float64(info.MaxWorkgroupCount[1]),
		"max_workgroup_count_z": float64(info.MaxWorkgroupCount[2]),
	}
}

// compiled is the SPIR-V of one source, made once.
type compiled struct {
	once  sync.Once
	words []uint32
	err   error
}

// SPIRV returns the entry's SPIR-V as loaded (before spec constants are applied): the .spv file,
// or the GLSL compiled with glslc (once; glslc must be on PATH). A variant with its own source or
// defines has its own SPIR-V (VariantSPIRV).
func (e *Entry) SPIRV() ([]uint32, error) {
	return e.spirvOf(e.impl(-1))
}

// VariantSPIRV returns the SPIR-V of variant i as loaded (the entry's own for i = -1).
func (e *Entry) VariantSPIRV(i int) ([]uint32, error) {
	if i < -1 || i >= len(e.Variants) {
		return nil, fmt.Errorf("incumbent %s: no variant %d (it has %d)", e.Name, i, len(e.Variants))
	}
	return e.spirvOf(e.impl(i))
}

// impl returns the implementation of variant i (-1: the entry's own fields).
func (e *Entry) impl(i int) *impl {
	if e.impls == nil {
		// An entry not made by Parse: its own fields only.
		e.impls = []*impl{{index: -1, source: e.Source, entry: e.EntryPoint, bindings: e.Bindings,
			push: e.PushConstants, pushSize: e.PushConstantSize, spec: e.SpecConstants,
			features: e.Features, requires: e.Requires, iface: &ifaceCheck{}}}
	}
	return e.impls[i+1]
}

// what names an implementation in errors: "incumbent NAME" or "incumbent NAME variant V".
func (e *Entry) what(im *impl) string {
	if im.index < 0 {
		return "incumbent " + e.Name
	}
	return fmt.Sprintf("incumbent %s variant %s", e.Name, im.name)
}

func (e *Entry) spirvOf(im *impl) ([]uint32, error) {
	key, _ := json.Marshal(im.source)
	e.mu.Lock()
	if e.spv == nil {
		e.spv = map[string]*compiled{}
	}
	c := e.spv[string(key)]
	if c == nil {
		c = &compiled{}
		e.spv[string(key)] = c
	}
	e.mu.Unlock()
	c.once.Do(func() { c.words, c.err = e.loadSPIRV(im) })
	return c.words, c.err
}

func (e *Entry) loadSPIRV(im *impl) ([]uint32, error) {
	src := im.source
	var path string
	switch {
	case src.SPIRV != "":
		path = e.m.resolve(src.SPIRV)
	case src.GLSL != "":
		glslc, err := exec.LookPath("glslc")
		if err != nil {
			return nil, fmt.Errorf("%s: glslc is not installed: cannot compile %s", e.what(im), src.GLSL)
		}
		tmp, err := os.MkdirTemp("", "onesource-incumbent-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "out.spv")
		args := []string{"-fshader-stage=compute", "--target-env=vulkan1.2", "-O"}
		keys := make([]string, 0, len(src.Defines))
		for k := range src.Defines {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, "-D"+k+"="+src.Defines[k])
		}
		for _, d := range src.IncludeDirs {
			args = append(args, "-I", e.m.resolve(d))
		}
		args = append(args, src.GlslcArgs...)
		args = append(args, "-o", path, e.m.resolve(src.GLSL))
		if out, err := exec.Command(glslc, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: glslc %s: %v\n%s", e.what(im), src.GLSL, err, out)
		}
	default:
		return nil, fmt.Errorf("%s: no GLSL or SPIR-V source (backend %s)", e.what(im), e.Backend)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.what(im), err)
	}
	w, err := vulkan.Words(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", e.what(im), path, err)
	}
	return w, nil
}

// Launch is an incumbent instantiated for one shape: on Vulkan (Vulkan, VulkanFor: Module), or
// on CUDA or HIP (CFamily: Kernel, with Push the scalar arguments).
type Launch struct {
	Module   *vulkan.Module // the Vulkan module (nil for a CUDA or HIP incumbent)
	Kernel   *Kernel        // the CUDA or HIP source (nil for a Vulkan incumbent)
	Operands []string       // per binding: the operand bound there, "" for a scratch buffer
	Scratch  []int          // per binding: bytes of its scratch buffer (0 for operands)
	// Offsets and Sizes are, per binding, the byte offset and size of the view of the operand's
	// buffer to bind (0 and 0: the whole buffer; Size 0: to its end). See Views.
	Offsets []int
	Sizes   []int
	Push    []byte // the push-constant block
	Groups  [3]uint32
	Hash    string // sha256 of the SPIR-V words actually run (spec constants applied)
	// Variant is the name of the variant that ran ("" for the entry's own fields) and
	// VariantIndex its index in the entry's variants (-1 for the entry's own fields).
	Variant      string
	VariantIndex int
	// Requires lists, sorted, what the module needs from the device: the implementation's
	// features and requires, and what its SPIR-V capabilities imply. Unverified lists those of
	// them no vulkan.DeviceInfo field reports: neither Check nor the device can confirm them.
	Requires   []string
	Unverified []string
}

// Views returns the views to bind, one per binding: bufs[i] (the buffer of binding i) at the
// launch's offset and size for it.
func (l *Launch) Views(bufs []*vulkan.Buffer) []vulkan.View {
	out := make([]vulkan.View, len(bufs))
	for i, b := range bufs {
		out[i] = vulkan.View{Buffer: b}
		if i < len(l.Offsets) {
			out[i].Offset, out[i].Size = l.Offsets[i], l.Sizes[i]
		}
	}
	return out
}

// Whole reports whether every binding is bound whole (no offset, no size): what a caller that
// binds whole buffers must check.
func (l *Launch) Whole() bool {
	for i := range l.Offsets {
		if l.Offsets[i] != 0 || l.Sizes[i] != 0 {
			return false
		}
	}
	return true
}

func (e *Entry) evalInt(path string, vars map[string]float64) (int64, error) {
	v, err := e.exprs[path].EvalInt(vars)
	if err != nil {
		return 0, fmt.Errorf("incumbent %s: %s: %w%s", e.Name, path, err, deviceHint(err))
	}
	return v, nil
}

func (e *Entry) evalFloat(path string, vars map[string]float64) (float64, error) {
	v, err := e.exprs[path].EvalFloat(vars)
	if err != nil {
		return 0, fmt.Errorf("incumbent %s: %s: %w%s", e.Name, path, err, deviceHint(err))
	}
	return v, nil
}

// deviceHint explains an unknown device variable.
func deviceHint(err error) string {
	for _, n := range deviceVarNames {
		if strings.Contains(err.Error(), fmt.Sprintf("unknown shape variable %q", n)) {
			return " (a device variable: instantiate with VulkanFor, or pass DeviceVars(info) in vars)"
		}
	}
	return ""
}

// choose returns the implementation that runs at vars: the first variant whose condition holds,
// else the entry's own fields.
func (e *Entry) choose(vars map[string]float64) (*impl, error) {
	e.impl(-1)
	for _, im := range e.impls[1:] {
		v, err := e.evalFloat(im.at+".when", vars)
		if err != nil {
			return nil, err
		}
		if v != 0 {
			return im, nil
		}
	}
	return e.impls[0], nil
}

// Vulkan instantiates the entry for the shape variables vars: the implementation chosen by the
// variants' conditions, its SPIR-V with its spec constants applied (checked against the
// shader's interface), the module description, the push-constant bytes, the buffer views and
// the grid. It knows nothing of the device: an entry that uses device variables fails unless
// vars holds them, and requirements are only recorded (see VulkanFor and Check).
func (e *Entry) Vulkan(vars map[string]float64) (*Launch, error) {
	if e.Backend != "vulkan" {
		return nil, fmt.Errorf("incumbent %s: backend %s, not vulkan", e.Name, e.Backend)
	}
	im, err := e.choose(vars)
	if err != nil {
		return nil, err
	}
	return e.instantiate(im, vars)
}

// VulkanFor is Vulkan on the device info describes: vars gains the device variables
// (DeviceVars; a value vars already holds must agree), and the chosen implementation's
// requirements are checked against the device: features, subgroup size and full subgroups,
// subgroup_size_control, buffer-view offsets against minStorageBufferOffsetAlignment, the grid
// against maxComputeWorkGroupCount and the push constants against maxPushConstantsSize.
func (e *Entry) VulkanFor(info vulkan.DeviceInfo, vars map[string]float64) (*Launch, error) {
	all := make(map[string]float64, len(vars)+len(deviceVarNames))
	for k, v := range vars {
		all[k] = v
	}
	for k, v := range DeviceVars(info) {
		if old, ok := vars[k]; ok && old != v {
			return nil, fmt.Errorf("incumbent %s: vars has %s = %v, the device %q has %v", e.Name, k, old, info.Name, v)
		}
		all[k] = v
	}
	l, err := e.Vulkan(all)
	if err != nil {
		return nil, err
	}
	im := e.impl(l.VariantIndex)
	if err := e.checkDevice(im, info, l.Requires); err != nil {
		return nil, err
	}
	m := l.Module
	if s := m.SubgroupSize; s != 0 {
		if !info.SubgroupSizeControl {
			return nil, fmt.Errorf("%s: %s: requires subgroup size %d, but the device %q cannot require a subgroup size in compute shaders (subgroupSizeControl, computeFullSubgroups)", e.what(im), im.subgroup, s, info.Name)
		}
		lo, hi := info.MinSubgroupSize, info.MaxSubgroupSize
		if lo == 0 || hi == 0 {
			lo, hi = info.SubgroupSize, info.SubgroupSize
		}
		if s < lo || s > hi {
			return nil, fmt.Errorf("%s: %s: requires subgroup size %d; the device %q offers %d..%d", e.what(im), im.subgroup, s, info.Name, lo, hi)
		}
	}
	if a := info.MinStorageBufferOffsetAlignment; a > 1 {
		for i, off := range l.Offsets {
			if uint64(off)%a != 0 {
				return nil, fmt.Errorf("%s: %s.bindings[%d].offset: %d is not a multiple of the device's minStorageBufferOffsetAlignment %d (bind the aligned-down offset and pass the rest to the shader, as ggml's misalign_offsets does)", e.what(im), im.bindAt, e.bindingIndex(im, i), off, a)
			}
		}
	}
	for d, g := range l.Groups {
		if mx := info.MaxWorkgroupCount[d]; mx != 0 && g > mx {
			return nil, fmt.Errorf("%s: %s.grid[%d]: %d workgroups; the device %q allows %d (maxComputeWorkGroupCount)", e.what(im), im.gridAt, d, g, info.Name, mx)
		}
	}
	if mx := info.MaxPushConstantsSize; mx != 0 && uint32(len(l.Push)) > mx {
		return nil, fmt.Errorf("%s: %d bytes of push constants; the device %q allows %d (maxPushConstantsSize)", e.what(im), len(l.Push), info.Name, mx)
	}
	return l, nil
}

// The bound on an incumbent dispatch's total work (CheckWork): what its shape implies, the bytes
// of the operands the call binds. The example and ggml manifests launch at most about one
// invocation per operand byte (rms_norm at 256 lanes over rows of 32 f32 values: 256 invocations
// per 256 bytes; element-wise ops 0.08, matvec 0.002); a dispatch may launch
// MaxInvocationsPerByte per byte and MinInvocations whatever the shape (a few workgroups of
// 1024 at a tiny case). A manifest grid of 65535 x 65535 workgroups at rows=4, n=256 (12 KiB of
// operands, a bound of 2^20 invocations) asks for 4.3e9 workgroups: refused, where the gate ran
// it (killed at 70 s; every grid dimension was within the device's limit, their product was not
// checked).
const (
	MaxInvocationsPerByte = 64
	MinInvocations        = 1 << 20
)

// Invocations is the launch's total invocations (grid times workgroup size), saturating at
// math.MaxUint64.
func (l *Launch) Invocations() uint64 {
	n := uint64(1)
	for d := 0; d < 3; d++ {
		for _, f := range []uint32{l.Groups[d], l.Module.WorkgroupSize[d]} {
			hi, lo := bits.Mul64(n, uint64(f))
			if hi != 0 {
				return math.MaxUint64
			}
			n = lo
		}
	}
	return n
}

// CheckWork refuses a launch whose total work is beyond what a call on operandBytes bytes of
// operands implies (see MaxInvocationsPerByte), naming the grid and the bound.
func CheckWork(l *Launch, operandBytes int) error {
	bound := uint64(MinInvocations)
	if b := uint64(max(operandBytes, 0)) * MaxInvocationsPerByte; b > bound {
		bound = b
	}
	if n := l.Invocations(); n > bound {
		return fmt.Errorf("incumbent: a grid of %v workgroups of %v is %d invocations; the call's operands are %d bytes, which bound a dispatch at %d (%d per byte, at least %d): the manifest's grid is not this shape's", l.Groups, l.Module.WorkgroupSize, n, operandBytes, bound, MaxInvocationsPerByte, MinInvocations)
	}
	return nil
}

// bindingIndex is the position in im.bindings of binding number b.
func (e *Entry) bindingIndex(im *impl, b int) int {
	for j, x := range im.bindings {
		if x.Binding == b {
			return j
		}
	}
	return b
}

// Check reports whether a device can run the entry, as far as its requirements go and before
// anything is compiled: the features and requires of its own fields and of every variant that
// the device variables alone do not rule out ("when" false on DeviceVars(info)), and a required
// subgroup size (or full subgroups) where the device cannot require one, or a constant size
// outside the device's range. Requirements that no DeviceInfo field reports (subgroup_arithmetic
// and the like, see the package doc) pass. VulkanFor checks the implementation it instantiates
// more closely (shape-dependent sizes, the capabilities its SPIR-V declares).
func (e *Entry) Check(info vulkan.DeviceInfo) error {
	dv := DeviceVars(info)
	e.impl(-1)
	for _, im := range e.impls {
		if im.index >= 0 {
			if v, err := e.exprs[im.at+".when"].EvalFloat(dv); err == nil && v == 0 {
				continue
			}
		}
		if err := e.checkDevice(im, info, append(append([]string(nil), im.features...), im.requires...)); err != nil {
			return err
		}
		if im.subgroup == "" {
			continue
		}
		if !info.SubgroupSizeControl {
			return fmt.Errorf("%s: %s: the device %q cannot require a subgroup size in compute shaders (subgroupSizeControl, computeFullSubgroups)", e.what(im), im.subgroup, info.Name)
		}
		if s, err := e.exprs[im.subgroup].EvalInt(dv); err == nil && s != 0 {
			lo, hi := int64(dv["min_subgroup_size"]), int64(dv["max_subgroup_size"])
			if s < lo || s > hi {
				return fmt.Errorf("%s: %s: requires subgroup size %d; the device %q offers %d..%d", e.what(im), im.subgroup, s, info.Name, lo, hi)
			}
		}
	}
	return nil
}

// checkDevice checks named requirements against info: features the device supports, and
// subgroup_size_control.
func (e *Entry) checkDevice(im *impl, info vulkan.DeviceInfo, names []string) error {
	var missing []string
	for _, n := range names {
		if f, ok := featureNames[n]; ok {
			if !*f(&info.Features) {
				missing = append(missing, n)
			}
			continue
		}
		if n == "subgroup_size_control" && !info.SubgroupSizeControl {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: needs %s, which the device %q does not support", e.what(im), strings.Join(dedupe(missing), ", "), info.Name)
	}
	return nil
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// CheckInterface compiles every implementation of the entry (its own fields and each variant)
// and checks it against its SPIR-V's declared interface (see the package doc); Vulkan does the
// same for the implementation it instantiates, once.
func (e *Entry) CheckInterface() error {
	if e.Backend != "vulkan" {
		return fmt.Errorf("incumbent %s: backend %s, not vulkan", e.Name, e.Backend)
	}
	e.impl(-1)
	for _, im := range e.impls {
		if _, err := e.checkInterface(im); err != nil {
			return err
		}
	}
	return nil
}

// checkInterface checks im against its SPIR-V's interface, once, and returns the interface.
func (e *Entry) checkInterface(im *impl) (*Interface, error) {
	im.iface.once.Do(func() {
		words, err := e.spirvOf(im)
		if err != nil {
			im.iface.err = err
			return
		}
		in, err := Reflect(words)
		if err != nil {
			im.iface.err = fmt.Errorf("%s: %w", e.what(im), err)
			return
		}
		im.iface.in = in
		if err := e.matchInterface(im, in); err != nil {
			im.iface.err = fmt.Errorf("%s: %w", e.what(im), err)
		}
	})
	return im.iface.in, im.iface.err
}

// matchInterface compares an implementation's manifest fields with the shader's interface.
func (e *Entry) matchInterface(im *impl, in *Interface) error {
	entry := im.entry
	if entry == "" {
		entry = "main"
	}
	found := false
	for _, n := range in.EntryPoints {
		found = found || n == entry
	}
	if !found {
		return fmt.Errorf("%s.entry: the shader has no GLCompute entry point %q (it has %q)", im.entryAt, entry, in.EntryPoints)
	}
	var declared []string
	for _, b := range in.Bindings {
		declared = append(declared, fmt.Sprintf("%d", b.Binding))
		if b.Set != 0 {
			return fmt.Errorf("the shader declares a descriptor in set %d (binding %d); incumbents bind set 0 only", b.Set, b.Binding)
		}
		if b.Kind != "storage" {
			return fmt.Errorf("the shader declares binding %d as a %s descriptor; incumbents bind storage buffers only", b.Binding, b.Kind)
		}
	}
	list := strings.Join(declared, ", ")
	if list == "" {
		list = "none"
	}
	inManifest := map[uint32]bool{}
	for j, b := range im.bindings {
		inManifest[uint32(b.Binding)] = true
		has := in.binding(0, uint32(b.Binding)) != nil
		switch {
		case !has && !b.Unused:
			return fmt.Errorf("%s.bindings[%d]: binding %d is not declared by the shader (it declares %s); glslc -O removes buffers the code never uses: mark it \"unused\": true if so", im.bindAt, j, b.Binding, list)
		case has && b.Unused:
			return fmt.Errorf("%s.bindings[%d]: binding %d is marked unused, but the shader declares it", im.bindAt, j, b.Binding)
		}
	}
	for _, b := range in.Bindings {
		if !inManifest[b.Binding] {
			return fmt.Errorf("%s.bindings: the shader declares binding %d, the manifest does not bind it", im.bindAt, b.Binding)
		}
	}
	ids := in.SpecIDs()
	idList := make([]string, len(ids))
	for i, id := range ids {
		idList[i] = fmt.Sprintf("%d", id)
	}
	if len(idList) == 0 {
		idList = []string{"none"}
	}
	for j, s := range im.spec {
		at := fmt.Sprintf("%s.spec_constants[%d]", im.specAt, j)
		t, ok := in.SpecConstants[s.ID]
		if !ok {
			return fmt.Errorf("%s.id: the shader declares no spec constant %d (it declares %s); glslc -O removes spec constants the code never uses", at, s.ID, strings.Join(idList, ", "))
		}
		want := map[string][]string{"bool": {"bool"}, "u32": {"uint32", "int32"}, "i32": {"int32", "uint32"}, "f32": {"float32"}}[s.Type]
		okType := false
		for _, w := range want {
			okType = okType || t == w
		}
		if !okType {
			return fmt.Errorf("%s.type: %s, but the shader's spec constant %d is %s", at, s.Type, s.ID, t)
		}
	}
	end := 0
	off := 0
	for _, f := range im.push {
		if f.Offset != nil {
			off = *f.Offset
		}
		off += 4
		end = off
	}
	block := (in.PushConstantSize + 3) &^ 3
	switch {
	case block == 0 && end > 0:
		return fmt.Errorf("%s.push_constants: %d bytes of fields, but the shader declares no push-constant block (glslc -O removes one the code never reads)", im.pushAt, end)
	case end > block:
		return fmt.Errorf("%s.push_constants: the fields end at byte %d, beyond the shader's %d-byte push-constant block", im.pushAt, end, in.PushConstantSize)
	case end < block:
		return fmt.Errorf("%s.push_constants: the fields end at byte %d, short of the shader's %d-byte push-constant block (fields missing at the end?)", im.pushAt, end, in.PushConstantSize)
	}
	return nil
}

// instantiate builds the launch of implementation im at vars.
func (e *Entry) instantiate(im *impl, vars map[string]float64) (*Launch, error) {
	in, err := e.checkInterface(im)
	if err != nil {
		return nil, err
	}
	words, err := e.spirvOf(im)
	if err != nil {
		return nil, err
	}
	spec := map[uint32]uint32{}
	bools := map[uint32]bool{}
	for j, s := range im.spec {
		p := fmt.Sprintf("%s.spec_constants[%d].value", im.specAt, j)
		switch s.Type {
		case "f32":
			v, err := e.evalFloat(p, vars)
			if err != nil {
				return nil, err
			}
			spec[s.ID] = math.Float32bits(float32(v))
		default:
			v, err := e.evalInt(p, vars)
			if err != nil {
				return nil, err
			}
			if s.Type == "bool" {
				bools[s.ID] = v != 0
			} else {
				spec[s.ID] = uint32(v)
			}
		}
	}
	words, err = PatchSpecConstants(words, spec, bools)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.what(im), err)
	}
	l, lay, err := e.layout(im, vars)
	if err != nil {
		return nil, err
	}
	m := &vulkan.Module{Name: im.entry, Words: words, Bindings: lay.bindings, PushConstantSize: uint32(len(l.Push)), WorkgroupSize: lay.workgroup}
	if m.Name == "" {
		m.Name = "main"
	}
	if ls, ok := literalLocalSize(words); ok && ls != m.WorkgroupSize {
		return nil, fmt.Errorf("%s: the manifest states workgroup size %v, the shader declares %v", e.what(im), m.WorkgroupSize, ls)
	}
	if im.subgroup != "" {
		s, err := e.evalInt(im.subgroup, vars)
		if err != nil {
			return nil, err
		}
		switch {
		case s == 0:
		case s < 0 || s > 1<<16 || bits.OnesCount64(uint64(s)) != 1:
			return nil, fmt.Errorf("incumbent %s: %s = %d, want a power of two", e.Name, im.subgroup, s)
		case int64(m.WorkgroupSize[0])%s != 0:
			return nil, fmt.Errorf("incumbent %s: %s = %d: full subgroups of %d need a workgroup width that is a multiple of it, got %d", e.Name, im.subgroup, s, s, m.WorkgroupSize[0])
		default:
			m.SubgroupSize = uint32(s)
		}
	}
	reqs := append(append([]string(nil), im.features...), im.requires...)
	for _, c := range in.Capabilities {
		if r, ok := capabilityRequirements[c]; ok {
			reqs = append(reqs, r)
		}
	}
	for _, r := range dedupe(reqs) {
		if r == "int8_dot" {
			r = "integer_dot_product"
		}
		if f, ok := featureNames[r]; ok {
			*f(&m.Features) = true
		} else if !requirementNames[r] {
			l.Unverified = append(l.Unverified, r)
		}
		l.Requires = append(l.Requires, r)
	}
	l.Requires = dedupe(l.Requires)
	l.Module = m
	l.Hash = HashWords(words)
	return l, nil
}

// layout is what instantiating an implementation gives besides its Launch: the bindings as a
// Vulkan module declares them and the workgroup size.
type layout struct {
	bindings  []vulkan.Binding
	workgroup [3]uint32
}

// layout evaluates im's bindings (operands, scratch sizes, views), push constants (in order, at
// their offsets), workgroup size and grid at vars: the part of a launch every backend's
// incumbent has.
func (e *Entry) layout(im *impl, vars map[string]float64) (*Launch, layout, error) {
	n := len(im.bindings)
	l := &Launch{Operands: make([]string, n), Scratch: make([]int, n), Offsets: make([]int, n), Sizes: make([]int, n),
		Variant: im.name, VariantIndex: im.index}
	lay := layout{bindings: make([]vulkan.Binding, n)}
	for j, b := range im.bindings {
		bp := fmt.Sprintf("%s.bindings[%d]", im.bindAt, j)
		es := b.ElemSize
		if es == 0 {
			es = 4
		}
		name := b.Operand
		l.Operands[b.Binding] = b.Operand
		if b.ScratchBytes != "" {
			n, err := e.evalInt(bp+".scratch_bytes", vars)
			if err != nil {
				return nil, lay, err
			}
			l.Scratch[b.Binding] = int(max(n, 4))
			name = fmt.Sprintf("scratch%d", b.Binding)
		}
		for _, x := range []struct {
			key string
			v   Value
			out *int
		}{{"offset", b.Offset, &l.Offsets[b.Binding]}, {"size", b.Size, &l.Sizes[b.Binding]}} {
			if x.v == "" {
				continue
			}
			v, err := e.evalInt(bp+"."+x.key, vars)
			if err != nil {
				return nil, lay, err
			}
			if v < 0 || v%4 != 0 || v > math.MaxInt32 || x.key == "size" && v == 0 {
				return nil, lay, fmt.Errorf("incumbent %s: %s.%s = %d, want a %s multiple of 4 (bytes)", e.Name, bp, x.key, v, map[string]string{"offset": "non-negative", "size": "positive"}[x.key])
			}
			*x.out = int(v)
		}
		lay.bindings[b.Binding] = vulkan.Binding{Name: name, ElemSize: es, ReadOnly: b.ReadOnly}
	}
	size := 0
	off := 0
	type put struct {
		off  int
		bits uint32
	}
	var puts []put
	for j, f := range im.push {
		p := fmt.Sprintf("%s.push_constants[%d].value", im.pushAt, j)
		if f.Offset != nil {
			off = *f.Offset
		}
		var bits uint32
		if f.Type == "f32" {
			v, err := e.evalFloat(p, vars)
			if err != nil {
				return nil, lay, err
			}
			bits = math.Float32bits(float32(v))
		} else {
			v, err := e.evalInt(p, vars)
			if err != nil {
				return nil, lay, err
			}
			if f.Type == "u32" && (v < 0 || v > math.MaxUint32) || f.Type == "i32" && (v < math.MinInt32 || v > math.MaxInt32) {
				return nil, lay, fmt.Errorf("incumbent %s: %s = %d does not fit %s", e.Name, p, v, f.Type)
			}
			bits = uint32(v)
		}
		puts = append(puts, put{off, bits})
		off += 4
		size = off
	}
	if im.pushSize > size {
		size = im.pushSize
	}
	l.Push = make([]byte, size)
	for _, p := range puts {
		binary.LittleEndian.PutUint32(l.Push[p.off:], p.bits)
	}
	for d := 0; d < 3; d++ {
		wg, err := e.evalInt(fmt.Sprintf("%s.workgroup_size[%d]", im.wgAt, d), vars)
		if err != nil {
			return nil, lay, err
		}
		g, err := e.evalInt(fmt.Sprintf("%s.grid[%d]", im.gridAt, d), vars)
		if err != nil {
			return nil, lay, err
		}
		if wg < 1 || wg > math.MaxUint32 || g < 1 || g > math.MaxUint32 {
			return nil, lay, fmt.Errorf("%s: workgroup size %d or grid %d out of range in dimension %d", e.what(im), wg, g, d)
		}
		lay.workgroup[d] = uint32(wg)
		l.Groups[d] = uint32(g)
	}
	return l, lay, nil
}

// HashWords is the hex sha256 of SPIR-V words (little-endian bytes): the code hash recorded as
// evidence for twins and incumbents alike.
func HashWords(w []uint32) string {
	h := sha256.New()
	var b [4]byte
	for _, x := range w {
		binary.LittleEndian.PutUint32(b[:], x)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

const spirvMagic = 0x07230203

// SPIR-V opcodes and enumerants used here.
const (
	opDecorate          = 71
	opExecutionMode     = 16
	opSpecConstantTrue  = 48
	opSpecConstantFalse = 49
	opSpecConstant      = 50
	decorationSpecID    = 1
	decorationBuiltIn   = 11
	builtInWorkgroup    = 25
	execModeLocalSize   = 17
)

// PatchSpecConstants returns a copy of words with the default of every specialization constant
// named in values (SpecId -> 32-bit literal) or bools (SpecId -> value) replaced. A SpecId that
// the module does not declare is an error, so a manifest cannot set a constant silently ignored.
func PatchSpecConstants(words []uint32, values map[uint32]uint32, bools map[uint32]bool) ([]uint32, error) {
	if len(values) == 0 && len(bools) == 0 {
		return words, nil
	}
	out := append([]uint32(nil), words...)
	specOf := map[uint32]uint32{} // result id -> SpecId
	err := walk(out, func(op uint32, inst []uint32) {
		if op == opDecorate && len(inst) >= 4 && inst[2] == decorationSpecID {
			specOf[inst[1]] = inst[3]
		}
	})
	if err != nil {
		return nil, err
	}
	done := map[uint32]bool{}
	var perr error
	walk(out, func(op uint32, inst []uint32) {
		switch op {
		case opSpecConstant:
			if len(inst) < 4 {
				return
			}
			id, ok := specOf[inst[2]]
			if !ok {
				return
			}
			if _, isBool := bools[id]; isBool {
				perr = fmt.Errorf("spec constant %d is numeric in the module, the manifest says bool", id)
				return
			}
			if v, ok := values[id]; ok {
				if len(inst) != 4 {
					perr = fmt.Errorf("spec constant %d is wider than 32 bits", id)
					return
				}
				inst[3] = v
				done[id] = true
			}
		case opSpecConstantTrue, opSpecConstantFalse:
			id, ok := specOf[inst[2]]
			if !ok {
				return
			}
			if _, isNum := values[id]; isNum {
				perr = fmt.Errorf("spec constant %d is a bool in the module, the manifest gives a number", id)
				return
			}
			if v, ok := bools[id]; ok {
				op := uint32(opSpecConstantFalse)
				if v {
					op = opSpecConstantTrue
				}
				inst[0] = inst[0]&0xffff0000 | op
				done[id] = true
			}
		}
	})
	if perr != nil {
		return nil, perr
	}
	for id := range values {
		if !done[id] {
			return nil, fmt.Errorf("the module declares no spec constant with SpecId %d", id)
		}
	}
	for id := range bools {
		if !done[id] {
			return nil, fmt.Errorf("the module declares no spec constant with SpecId %d", id)
		}
	}
	return out, nil
}

// walk calls f on every instruction of the module (inst includes the opcode word; f may modify
// operands in place).
func walk(w []uint32, f func(op uint32, inst []uint32)) error {
	if len(w) < 5 || w[0] != spirvMagic {
		return fmt.Errorf("not a SPIR-V module")
	}
	for i := 5; i < len(w); {
		n := int(w[i] >> 16)
		if n == 0 || i+n > len(w) {
			return fmt.Errorf("malformed SPIR-V instruction at word %d", i)
		}
		f(w[i]&0xffff, w[i:i+n])
		i += n
	}
	return nil
}

// literalLocalSize is the workgroup size a module runs with: its WorkgroupSize built-in (a
// constant or spec-constant composite, resolved with the spec constants' current defaults) where
// it has one, else its LocalSize execution mode; ok false when neither can be resolved.
func literalLocalSize(w []uint32) (ls [3]uint32, ok bool) {
	const opConstant, opConstantComposite, opSpecConstantComposite = 43, 44, 51
	builtinID := uint32(0)
	scalars := map[uint32]uint32{}
	composites := map[uint32][]uint32{}
	var mode [3]uint32
	haveMode := false
	walk(w, func(op uint32, inst []uint32) {
		switch {
		case op == opDecorate && len(inst) >= 4 && inst[2] == decorationBuiltIn && inst[3] == builtInWorkgroup:
			builtinID = inst[1]
		case op == opExecutionMode && len(inst) >= 6 && inst[2] == execModeLocalSize:
			mode = [3]uint32{inst[3], inst[4], inst[5]}
			haveMode = true
		case (op == opConstant || op == opSpecConstant) && len(inst) == 4:
			scalars[inst[2]] = inst[3]
		case (op == opConstantComposite || op == opSpecConstantComposite) && len(inst) == 6:
			composites[inst[2]] = inst[3:6]
		}
	})
	if builtinID == 0 {
		return mode, haveMode
	}
	parts, found := composites[builtinID]
	if !found {
		return ls, false
	}
	for i, id := range parts {
		v, known := scalars[id]
		if !known {
			return ls, false
		}
		ls[i] = v
	}
	return ls, true
}
