// Package incumbent registers hand-written kernels ("incumbents") per cell (op, type, backend)
// from a manifest, without editing them, so that the gate (package conformance) can benchmark
// the DSL twin of each cell against them.
//
// # Manifest format
//
// A manifest is a JSON file:
//
//	{
//	  "version": 1,
//	  "incumbents": [
//	    {
//	      "name": "hand_rms_norm",                 // unique in the manifest (default op/type/backend)
//	      "op": "rms_norm", "type": "f32", "backend": "vulkan",
//	      "source": {                              // exactly one of glsl, spirv, cuda, hip, msl
//	        "glsl": "rms_norm.comp",               // path relative to the manifest; compiled with glslc
//	        "defines": {"A_TYPE": "float"},        // -D NAME=VALUE for glslc
//	        "include_dirs": ["."],                 // -I for glslc, relative to the manifest
//	        "glslc_args": ["--target-env=vulkan1.2"]
//	      },
//	      "entry": "main",                         // entry point (default "main")
//	      "bindings": [                            // descriptor set 0, every binding 0..n-1 once
//	        {"binding": 0, "operand": "x"},        // an operand of the op, named as the twin names it
//	        {"binding": 1, "operand": "w", "offset": "4*n", "size": "4*n"},  // a view of the buffer
//	        {"binding": 2, "operand": "y"},
//	        {"binding": 3, "scratch_bytes": "4"},  // a binding the op does not use: a zeroed buffer
//	        {"binding": 4, "scratch_bytes": "4", "unused": true}  // the shader does not declare it
//	      ],
//	      "push_constants": [                      // the push-constant block, in order, 4 bytes each
//	        {"name": "ncols", "type": "u32", "value": "n"},
//	        {"name": "eps",   "type": "f32", "value": "eps"},
//	        {"name": "stride", "type": "u32", "value": "n*rows", "offset": 8}
//	      ],
//	      "push_constant_size": 16,                // optional: the block's size when padded
//	      "spec_constants": [{"id": 0, "type": "u32", "value": "256"}],
//	      "workgroup_size": [256, 1, 1],           // as the shader declares it (numbers or expressions)
//	      "grid": ["rows", 1, 1],                  // workgroups dispatched, expressions of the shape
//	      "features": ["float16"],                 // optional device features the module needs
//	      "requires": ["subgroup_arithmetic"],     // optional: features and other device capabilities
//	      "subgroup_size": "subgroup_size",        // optional: the subgroup size the pipeline requires
//	      "full_subgroups": true,                  // optional: the pipeline requires full subgroups
//	      "variants": [                            // optional: implementations chosen by the shape
//	        {"name": "wide", "when": "n > 1024",   // the first whose condition holds runs
//	         "spec_constants": [{"id": 0, "type": "u32", "value": 512}],
//	         "workgroup_size": [512, 1, 1]}
//	      ],
//	      "shape": {"rows": 512, "n": 4096},       // optional: the benchmark shape for this entry
//	      "notes": "free text"
//	    }
//	  ]
//	}
//
// Values are expressions (see Expr: arithmetic, comparisons, && || !, and c ? a : b) over the
// shape variables of the op's benchmark workload (package conformance names them, the same in
// every op: rows and n for ops on rows of n values, matvec included; tokens, heads and head_dim
// for rope; plus the op's parameters such as eps), written as JSON strings or numbers. Push-constant
// types are u32, i32 and f32 (std430 scalars, 4 bytes; a field's offset defaults to the end of
// the previous one). Spec-constant types are u32, i32, f32 and bool.
//
// # Device variables and requirements
//
// Besides the shape, an expression may use the device variables subgroup_size,
// min_subgroup_size, max_subgroup_size (the device's default subgroup size and the range a
// pipeline can require; both bounds are the default size where the device reports no range)
// and max_workgroup_count_x, _y, _z (maxComputeWorkGroupCount). (*Entry).VulkanFor(info, vars)
// sets them from the device (DeviceVars); (*Entry).Vulkan(vars) knows only what vars holds, so an
// entry that uses them fails there with an error that names the variable, unless the caller
// passes them. ggml sizes many pipelines by the subgroup size this way (e.g. BLOCK_SIZE =
// subgroup_size).
//
// "subgroup_size" (an expression; 0 means none) makes the pipeline require that subgroup size
// with full subgroups: it sets the launch's vulkan.Module.SubgroupSize, which is how
// backends/vulkan expresses it (VkPipelineShaderStageRequiredSubgroupSizeCreateInfo plus
// REQUIRE_FULL_SUBGROUPS), so the size must be a power of two that divides the workgroup width
// (checked when instantiated) and the device's checks refuse it where it cannot be required.
// "full_subgroups": true without a subgroup size requires full subgroups of the device's
// default size (subgroup_size); false together with a subgroup size is an error, as
// vulkan.Module cannot require a size without full subgroups.
//
// "features" and "requires" name what the module needs from the device. Names with a
// vulkan.Features field set that field of the launch's Module.Features, so the device refuses
// the pipeline where it is not enabled: int8, int16, float16, float64, storage_buffer8,
// storage_buffer16, integer_dot_product (alias int8_dot), subgroup_basic, subgroup_shuffle.
// "requires" also takes subgroup_size_control (DeviceInfo.SubgroupSizeControl, checked by
// Check and VulkanFor) and subgroup_arithmetic, subgroup_vote, subgroup_ballot,
// subgroup_shuffle_relative, subgroup_clustered, subgroup_quad: backends/vulkan reports none of
// these, so they are recorded (Launch.Requires, Launch.Unverified) but cannot be checked. The
// capabilities the SPIR-V declares (OpCapability Int8, Float16, StorageBuffer8BitAccess,
// GroupNonUniformShuffle, GroupNonUniformArithmetic, ...) add the requirements they imply, so a
// launch never needs less than its module uses. (*Entry).Check(info) checks an entry's
// requirements against a device description before anything is compiled; VulkanFor checks the
// implementation it instantiates.
//
// # Variants
//
// "variants" lists other implementations of the cell, in order; at a shape, the first whose
// "when" (evaluated in float64; true when not zero) holds runs, else the entry's own fields do.
// A variant may state name (default "variants[i]"), source, defines (merged onto the source's
// defines: "defines": {"BLOCK": "64"} recompiles the entry's shader with one more define),
// entry, bindings, push_constants, push_constant_size, spec_constants, workgroup_size, grid,
// features, requires, subgroup_size and full_subgroups; a field it states replaces the entry's
// whole (an empty list clears it), the others are the entry's. The launch records the variant
// that ran (Launch.Variant, Launch.VariantIndex) and the hash of its SPIR-V.
//
// # Buffer views
//
// A binding's "offset" (bytes, an expression) and "size" (bytes; absent: to the end of the
// buffer) bind a range of the operand's buffer, as ggml binds a tensor inside a larger
// allocation. Both must evaluate to non-negative multiples of 4 (the size positive); the launch
// records them (Launch.Offsets, Launch.Sizes, Launch.Views) and VulkanFor checks the offset
// against minStorageBufferOffsetAlignment. They apply to operand bindings only. A caller that
// binds whole buffers must refuse a launch whose Offsets or Sizes are not all zero.
//
// # Specialization constants
//
// Specialization constants are applied by patching the SPIR-V (backends/vulkan's Module has no
// VkSpecializationInfo): the OpSpecConstant whose result carries the SpecId decoration gets the
// new literal, and an OpSpecConstantTrue/False becomes the other one for a bool. The workgroup
// size of a shader with local_size_x_id follows from its patched spec constants, and
// workgroup_size must state the resulting size: (*Entry).Vulkan checks it against the module's
// WorkgroupSize built-in (or LocalSize) after patching. Note that glslang gives the workgroup
// width of local_size_x_id its own spec constant with the same SpecId and a default of 1, not
// the constant_id's default: an incumbent written that way must have its spec constant set in
// the manifest, and patching sets both.
//
// # Checks against the shader
//
// When an implementation is first instantiated (or by (*Entry).CheckInterface, for all of
// them), its SPIR-V's declared interface (Reflect) must agree with the manifest: the entry point
// exists; the descriptor bindings it declares are exactly the manifest's (all in set 0, all
// storage buffers; a binding marked "unused" must be absent from the shader, as glslc -O
// removes buffers the code never touches); every spec constant id the manifest sets is declared
// (-O removes unused ones too) with a matching type (bool, a 32-bit integer for u32/i32, a
// 32-bit float for f32); and the push-constant fields end exactly where the shader's block ends
// (push_constant_size, when given, must cover it).
//
// # CUDA and HIP incumbents
//
// An entry of backend cuda or hip names a cuda (.cu) or hip source, compiled at run time (NVRTC,
// HIPRTC, or the host compiler on the emulated device) with its defines as -D options and
// include_dirs as -I, and launched with the manifest's grid and block (workgroup_size): its
// entry's parameters are one device pointer per binding, in binding order, then one 32-bit
// scalar per push-constant field, in order, checked against the kernel's declared signature
// (see (*Entry).CFamily). MSL paths are recorded for the backends that run them.
//
// Load checks the structure, the expressions and that every named file exists, and reports an
// error as FILE:LINE:COL (JSON syntax and types) or FILE: JSON.PATH: what is wrong. GLSL is
// compiled by (*Entry).SPIRV, with glslc, on first use.
package incumbent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

// Version is the manifest format version this package reads.
const Version = 1

// Manifest is a loaded manifest.
type Manifest struct {
	Path       string   `json:"-"` // the file it was loaded from ("" when parsed from bytes)
	Dir        string   `json:"-"` // relative paths are resolved against it
	Version    int      `json:"version"`
	Incumbents []*Entry `json:"incumbents"`
}

// Entry is one incumbent: a hand-written kernel of one cell.
type Entry struct {
	Name             string             `json:"name,omitempty"`
	Op               string             `json:"op"`
	Type             string             `json:"type"`
	Backend          string             `json:"backend"`
	Source           Source             `json:"source"`
	EntryPoint       string             `json:"entry,omitempty"`
	Bindings         []Binding          `json:"bindings"`
	PushConstants    []Field            `json:"push_constants,omitempty"`
	PushConstantSize int                `json:"push_constant_size,omitempty"`
	SpecConstants    []SpecConstant     `json:"spec_constants,omitempty"`
	WorkgroupSize    [3]Value           `json:"workgroup_size"`
	Grid             [3]Value           `json:"grid"`
	Features         []string           `json:"features,omitempty"`
	Requires         []string           `json:"requires,omitempty"`       // device capabilities (see the package doc)
	SubgroupSize     Value              `json:"subgroup_size,omitempty"`  // required subgroup size, with full subgroups
	FullSubgroups    *bool              `json:"full_subgroups,omitempty"` // require full subgroups
	Variants         []*Variant         `json:"variants,omitempty"`
	Shape            map[string]float64 `json:"shape,omitempty"`
	Notes            string             `json:"notes,omitempty"`

	m     *Manifest
	exprs map[string]*Expr // by JSON path
	impls []*impl          // the entry's own fields, then one per variant

	mu  sync.Mutex
	spv map[string]*compiled // by source key
}

// Variant is another implementation of an entry's cell, chosen by a condition on the shape.
// A field it states replaces the entry's (Defines merge onto the source's defines).
type Variant struct {
	Name             string            `json:"name,omitempty"`
	When             Value             `json:"when"`
	Source           *Source           `json:"source,omitempty"`
	Defines          map[string]string `json:"defines,omitempty"`
	EntryPoint       string            `json:"entry,omitempty"`
	Bindings         []Binding         `json:"bindings,omitempty"`
	PushConstants    []Field           `json:"push_constants,omitempty"`
	PushConstantSize *int              `json:"push_constant_size,omitempty"`
	SpecConstants    []SpecConstant    `json:"spec_constants,omitempty"`
	WorkgroupSize    *[3]Value         `json:"workgroup_size,omitempty"`
	Grid             *[3]Value         `json:"grid,omitempty"`
	Features         []string          `json:"features,omitempty"`
	Requires         []string          `json:"requires,omitempty"`
	SubgroupSize     *Value            `json:"subgroup_size,omitempty"`
	FullSubgroups    *bool             `json:"full_subgroups,omitempty"`
	Notes            string            `json:"notes,omitempty"`
}

// Source is where an incumbent's code is: exactly one of the paths.
type Source struct {
	GLSL        string            `json:"glsl,omitempty"`
	SPIRV       string            `json:"spirv,omitempty"`
	CUDA        string            `json:"cuda,omitempty"`
	HIP         string            `json:"hip,omitempty"`
	MSL         string            `json:"msl,omitempty"`
	Defines     map[string]string `json:"defines,omitempty"`
	IncludeDirs []string          `json:"include_dirs,omitempty"`
	GlslcArgs   []string          `json:"glslc_args,omitempty"`
}

// Binding maps one descriptor binding to an operand of the op, or to a scratch buffer.
type Binding struct {
	Binding      int    `json:"binding"`
	Operand      string `json:"operand,omitempty"`
	ScratchBytes Value  `json:"scratch_bytes,omitempty"`
	ElemSize     int    `json:"elem_size,omitempty"` // informative (default 4)
	ReadOnly     bool   `json:"readonly,omitempty"`
	Offset       Value  `json:"offset,omitempty"` // bytes into the operand's buffer (default 0)
	Size         Value  `json:"size,omitempty"`   // bytes of the view (default: to the end)
	Unused       bool   `json:"unused,omitempty"` // the shader does not declare this binding
}

// Field is one push-constant field.
type Field struct {
	Name   string `json:"name"`
	Type   string `json:"type"` // u32, i32, f32
	Value  Value  `json:"value"`
	Offset *int   `json:"offset,omitempty"`
}

// SpecConstant is one specialization constant: the SpecId and its value.
type SpecConstant struct {
	ID    uint32 `json:"id"`
	Type  string `json:"type"` // u32, i32, f32, bool
	Value Value  `json:"value"`
}

// Value is an expression as written in the manifest: a JSON string or number.
type Value string

// UnmarshalJSON accepts a string or a number.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = Value(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want an expression (string) or a number, got %s", b)
	}
	*v = Value(n.String())
	return nil
}

// impl is one implementation of an entry, resolved: the entry's own fields, or a variant's
// over them. Each field group keeps the JSON path of the object it came from, under which its
// expressions are registered in Entry.exprs.
type impl struct {
	index int    // the variant's index, -1 for the entry's own fields
	name  string // the variant's name, "" for the entry's own fields
	at    string // JSON path of the variant, or of the entry

	source             Source
	entry              string
	entryAt            string
	bindings           []Binding
	bindAt             string
	push               []Field
	pushAt             string
	pushSize           int
	spec               []SpecConstant
	specAt             string
	wgAt, gridAt       string
	features, requires []string
	// subgroup is the path of the subgroup-size expression ("" when none).
	subgroup string

	iface *ifaceCheck // the check against the shader's interface, made once
}

// ifaceCheck is the outcome of checking an implementation against its SPIR-V's interface.
type ifaceCheck struct {
	once sync.Once
	in   *Interface
	err  error
}

// Cell is "op/type/backend".
func (e *Entry) Cell() string { return e.Op + "/" + e.Type + "/" + e.Backend }

// Entry returns the manifest's incumbent of a cell, or nil.
func (m *Manifest) Entry(op, typ, backend string) *Entry {
	for _, e := range m.Incumbents {
		if strings.EqualFold(e.Op, op) && strings.EqualFold(e.Type, typ) && strings.EqualFold(e.Backend, backend) {
			return e
		}
	}
	return nil
}

// Load reads and checks a manifest file. A drain interrupted in its directory is finished or
// rolled back first (atomicfile.Recover).
func Load(path string) (*Manifest, error) {
	// A transaction interrupted in the manifest's directory (a killed drain -apply) is finished
	// or rolled back first, so the manifest and its files are read whole.
	if _, err := atomicfile.Recover(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("incumbent: %s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("incumbent: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("incumbent: %w", err)
	}
	return Parse(data, path, filepath.Dir(abs))
}

// Parse checks a manifest held in data; name is used in errors, dir resolves relative paths.
func Parse(data []byte, name, dir string) (*Manifest, error) {
	if name == "" {
		name = "manifest"
	}
	m := &Manifest{Path: name, Dir: dir}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, decodeError(name, data, dec, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%s: unexpected data after the manifest object", name, lineCol(data, dec.InputOffset()))
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%d:%d", line, col)
}

func decodeError(name string, data []byte, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s:%s: JSON syntax: %v", name, lineCol(data, se.Offset), se)
	case errors.As(err, &te):
		return fmt.Errorf("%s:%s: %s: want %s, got JSON %s", name, lineCol(data, te.Offset), te.Field, te.Type, te.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: empty or truncated manifest", name)
	}
	return fmt.Errorf("%s:%s: %v", name, lineCol(data, dec.InputOffset()), err)
}

var backends = map[string]bool{"vulkan": true, "cuda": true, "hip": true, "metal": true}

// check validates the manifest and parses its expressions.
func (m *Manifest) check() error {
	if m.Version == 0 {
		return fmt.Errorf("version: missing (this reader knows version %d)", Version)
	}
	if m.Version != Version {
		return fmt.Errorf("version: %d, this reader knows version %d", m.Version, Version)
	}
	names := map[string]string{}
	cells := map[string]string{}
	for i, e := range m.Incumbents {
		at := fmt.Sprintf("incumbents[%d]", i)
		if e == nil {
			return fmt.Errorf("%s: null entry", at)
		}
		e.m = m
		e.exprs = map[string]*Expr{}
		if err := e.check(at); err != nil {
			return err
		}
		if prev, dup := names[e.Name]; dup {
			return fmt.Errorf("%s.name: %q already used by %s", at, e.Name, prev)
		}
		names[e.Name] = at
		if prev, dup := cells[e.Cell()]; dup {
			return fmt.Errorf("%s: cell %s already has an incumbent (%s)", at, e.Cell(), prev)
		}
		cells[e.Cell()] = at
	}
	return nil
}

func (e *Entry) expr(path string, v Value) error {
	if strings.TrimSpace(string(v)) == "" {
		return fmt.Errorf("%s: missing value", path)
	}
	x, err := ParseExpr(string(v))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	e.exprs[path] = x
	return nil
}

func (e *Entry) check(at string) error {
	if e.Op == "" || e.Type == "" || e.Backend == "" {
		return fmt.Errorf("%s: op, type and backend are required", at)
	}
	e.Backend = strings.ToLower(e.Backend)
	if !backends[e.Backend] {
		return fmt.Errorf("%s.backend: %q is not one of vulkan, cuda, hip, metal", at, e.Backend)
	}
	if e.Name == "" {
		e.Name = e.Cell()
	}
	if e.EntryPoint == "" {
		e.EntryPoint = "main"
	}
	base := &impl{index: -1, at: at, source: e.Source, entry: e.EntryPoint, entryAt: at,
		bindings: e.Bindings, bindAt: at, push: e.PushConstants, pushAt: at, pushSize: e.PushConstantSize,
		spec: e.SpecConstants, specAt: at, wgAt: at, gridAt: at, features: e.Features, requires: e.Requires,
		iface: &ifaceCheck{}}
	if err := e.checkSource(at+".source", e.Source); err != nil {
		return err
	}
	if err := e.checkBindings(at, e.Bindings); err != nil {
		return err
	}
	if err := e.checkPush(at, e.PushConstants, e.PushConstantSize, true); err != nil {
		return err
	}
	if err := e.checkSpec(at, e.SpecConstants); err != nil {
		return err
	}
	if err := e.checkDims(at, e.WorkgroupSize, e.Grid); err != nil {
		return err
	}
	if err := checkNames(at+".features", e.Features, false); err != nil {
		return err
	}
	if err := checkNames(at+".requires", e.Requires, true); err != nil {
		return err
	}
	var err error
	if base.subgroup, err = e.checkSubgroup(at, e.SubgroupSize, e.FullSubgroups, "", false); err != nil {
		return err
	}
	e.impls = []*impl{base}
	vnames := map[string]string{}
	for i, v := range e.Variants {
		vat := fmt.Sprintf("%s.variants[%d]", at, i)
		if v == nil {
			return fmt.Errorf("%s: null variant", vat)
		}
		im, err := e.checkVariant(vat, i, v, base)
		if err != nil {
			return err
		}
		if prev, dup := vnames[im.name]; dup {
			return fmt.Errorf("%s.name: %q already used by %s", vat, im.name, prev)
		}
		vnames[im.name] = vat
		e.impls = append(e.impls, im)
	}
	return nil
}

// checkVariant checks variant i (at JSON path at) and resolves it over base.
func (e *Entry) checkVariant(at string, i int, v *Variant, base *impl) (*impl, error) {
	im := *base
	im.index, im.at, im.name, im.iface = i, at, v.Name, &ifaceCheck{}
	if im.name == "" {
		im.name = fmt.Sprintf("variants[%d]", i)
	}
	if err := e.expr(at+".when", v.When); err != nil {
		return nil, err
	}
	if v.Source != nil {
		if err := e.checkSource(at+".source", *v.Source); err != nil {
			return nil, err
		}
		im.source = *v.Source
	}
	if v.Defines != nil {
		defs := map[string]string{}
		for k, x := range im.source.Defines {
			defs[k] = x
		}
		for k, x := range v.Defines {
			defs[k] = x
		}
		im.source.Defines = defs
		if im.source.GLSL == "" && im.source.CUDA == "" && im.source.HIP == "" {
			return nil, fmt.Errorf("%s.defines: defines apply to a glsl, cuda or hip source", at)
		}
	}
	if v.EntryPoint != "" {
		im.entry, im.entryAt = v.EntryPoint, at
	}
	if v.Bindings != nil {
		if err := e.checkBindings(at, v.Bindings); err != nil {
			return nil, err
		}
		im.bindings, im.bindAt = v.Bindings, at
	}
	if v.PushConstants != nil || v.PushConstantSize != nil {
		push, size := im.push, im.pushSize
		if v.PushConstants != nil {
			push = v.PushConstants
		}
		if v.PushConstantSize != nil {
			size = *v.PushConstantSize
		}
		if err := e.checkPush(at, push, size, v.PushConstants != nil); err != nil {
			return nil, err
		}
		if v.PushConstants != nil {
			im.pushAt = at
		}
		im.push, im.pushSize = push, size
	}
	if v.SpecConstants != nil {
		if err := e.checkSpec(at, v.SpecConstants); err != nil {
			return nil, err
		}
		im.spec, im.specAt = v.SpecConstants, at
	}
	if v.WorkgroupSize != nil {
		for d := 0; d < 3; d++ {
			if err := e.expr(fmt.Sprintf("%s.workgroup_size[%d]", at, d), v.WorkgroupSize[d]); err != nil {
				return nil, err
			}
		}
		im.wgAt = at
	}
	if v.Grid != nil {
		for d := 0; d < 3; d++ {
			if err := e.expr(fmt.Sprintf("%s.grid[%d]", at, d), v.Grid[d]); err != nil {
				return nil, err
			}
		}
		im.gridAt = at
	}
	if v.Features != nil {
		if err := checkNames(at+".features", v.Features, false); err != nil {
			return nil, err
		}
		im.features = v.Features
	}
	if v.Requires != nil {
		if err := checkNames(at+".requires", v.Requires, true); err != nil {
			return nil, err
		}
		im.requires = v.Requires
	}
	if v.SubgroupSize != nil || v.FullSubgroups != nil {
		sg := Value("")
		if v.SubgroupSize != nil {
			sg = *v.SubgroupSize
		}
		full := v.FullSubgroups
		if full == nil {
			full = e.FullSubgroups
		}
		var err error
		if im.subgroup, err = e.checkSubgroup(at, sg, full, base.subgroup, v.SubgroupSize == nil); err != nil {
			return nil, err
		}
	}
	return &im, nil
}

// checkSubgroup checks subgroup_size and full_subgroups stated at path at and returns the path
// of the subgroup-size expression ("" for none). With inherit set, subgroup_size is not stated
// there and inherited (inherited, its path, "" for none).
func (e *Entry) checkSubgroup(at string, sg Value, full *bool, inherited string, inherit bool) (string, error) {
	path := ""
	switch {
	case inherit:
		path = inherited
		if full != nil && strings.HasSuffix(path, ".full_subgroups") {
			// The size came from the entry's full_subgroups, which the variant restates.
			path = ""
		}
	case strings.TrimSpace(string(sg)) != "":
		path = at + ".subgroup_size"
		if err := e.expr(path, sg); err != nil {
			return "", err
		}
	}
	if full == nil {
		return path, nil
	}
	if !*full {
		if path != "" {
			return "", fmt.Errorf("%s.full_subgroups: false, but a required subgroup size (%s) runs with full subgroups (vulkan.Module.SubgroupSize cannot require a size without them)", at, path)
		}
		return "", nil
	}
	if path == "" {
		// Full subgroups of the device's default size.
		path = at + ".full_subgroups"
		e.exprs[path] = &Expr{src: "subgroup_size", root: node{op: 'v', name: "subgroup_size"}}
	}
	return path, nil
}

// checkSource checks a source object at path at.
func (e *Entry) checkSource(at string, src Source) error {
	var paths []string
	for _, p := range []struct{ key, path string }{{"glsl", src.GLSL}, {"spirv", src.SPIRV}, {"cuda", src.CUDA}, {"hip", src.HIP}, {"msl", src.MSL}} {
		if p.path != "" {
			paths = append(paths, p.key)
			if _, err := os.Stat(e.m.resolve(p.path)); err != nil {
				return fmt.Errorf("%s.%s: %v", at, p.key, err)
			}
		}
	}
	if len(paths) != 1 {
		return fmt.Errorf("%s: want exactly one of glsl, spirv, cuda, hip, msl, got %d (%s)", at, len(paths), strings.Join(paths, ", "))
	}
	switch {
	case e.Backend == "vulkan" && src.GLSL == "" && src.SPIRV == "":
		return fmt.Errorf("%s: a vulkan incumbent needs glsl or spirv, got %s", at, paths[0])
	case e.Backend == "cuda" && src.CUDA == "":
		return fmt.Errorf("%s: a cuda incumbent needs a cuda source, got %s", at, paths[0])
	case e.Backend == "hip" && src.HIP == "":
		return fmt.Errorf("%s: a hip incumbent needs a hip source, got %s", at, paths[0])
	}
	return nil
}

// checkBindings checks the bindings stated at path at.
func (e *Entry) checkBindings(at string, bindings []Binding) error {
	if len(bindings) == 0 {
		return fmt.Errorf("%s.bindings: at least one binding is required", at)
	}
	seen := make([]bool, len(bindings))
	for j, b := range bindings {
		bp := fmt.Sprintf("%s.bindings[%d]", at, j)
		if b.Binding < 0 || b.Binding >= len(bindings) {
			return fmt.Errorf("%s.binding: %d, want 0..%d (bindings are numbered densely from 0)", bp, b.Binding, len(bindings)-1)
		}
		if seen[b.Binding] {
			return fmt.Errorf("%s.binding: binding %d listed twice", bp, b.Binding)
		}
		seen[b.Binding] = true
		switch {
		case b.Operand != "" && b.ScratchBytes != "":
			return fmt.Errorf("%s: operand and scratch_bytes are exclusive", bp)
		case b.Operand == "" && b.ScratchBytes == "":
			return fmt.Errorf("%s: want operand (an operand of %s) or scratch_bytes", bp, e.Op)
		case b.ScratchBytes != "":
			if err := e.expr(bp+".scratch_bytes", b.ScratchBytes); err != nil {
				return err
			}
		}
		for _, x := range []struct {
			key string
			v   Value
		}{{"offset", b.Offset}, {"size", b.Size}} {
			if x.v == "" {
				continue
			}
			if b.Operand == "" {
				return fmt.Errorf("%s.%s: a scratch buffer is bound whole; %s applies to operand bindings", bp, x.key, x.key)
			}
			if err := e.expr(bp+"."+x.key, x.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPush checks push-constant fields and the block size stated at path at; with register
// set, the fields are stated there too and their expressions are registered under at.
func (e *Entry) checkPush(at string, fields []Field, size int, register bool) error {
	off := 0
	end := 0
	for j, f := range fields {
		fp := fmt.Sprintf("%s.push_constants[%d]", at, j)
		switch f.Type {
		case "u32", "i32", "f32":
		default:
			return fmt.Errorf("%s.type: %q, want u32, i32 or f32", fp, f.Type)
		}
		if f.Offset != nil {
			if *f.Offset < off || *f.Offset%4 != 0 {
				return fmt.Errorf("%s.offset: %d overlaps the previous field or is not 4-byte aligned (next free offset %d)", fp, *f.Offset, off)
			}
			off = *f.Offset
		}
		if register {
			if err := e.expr(fp+".value", f.Value); err != nil {
				return err
			}
		}
		off += 4
		end = off
	}
	if size != 0 && (size < end || size%4 != 0) {
		return fmt.Errorf("%s.push_constant_size: %d, the fields need %d bytes (a multiple of 4)", at, size, end)
	}
	return nil
}

// checkSpec checks spec constants stated at path at.
func (e *Entry) checkSpec(at string, spec []SpecConstant) error {
	ids := map[uint32]bool{}
	for j, s := range spec {
		sp := fmt.Sprintf("%s.spec_constants[%d]", at, j)
		switch s.Type {
		case "u32", "i32", "f32", "bool":
		default:
			return fmt.Errorf("%s.type: %q, want u32, i32, f32 or bool", sp, s.Type)
		}
		if ids[s.ID] {
			return fmt.Errorf("%s.id: spec constant %d set twice", sp, s.ID)
		}
		ids[s.ID] = true
		if err := e.expr(sp+".value", s.Value); err != nil {
			return err
		}
	}
	return nil
}

// checkDims checks the entry's workgroup size and grid.
func (e *Entry) checkDims(at string, wg, grid [3]Value) error {
	for d := 0; d < 3; d++ {
		if err := e.expr(fmt.Sprintf("%s.workgroup_size[%d]", at, d), wg[d]); err != nil {
			return err
		}
		if err := e.expr(fmt.Sprintf("%s.grid[%d]", at, d), grid[d]); err != nil {
			return err
		}
	}
	return nil
}

// checkNames checks that every name is a feature name, or with requirements set, a
// requirement name.
func checkNames(at string, names []string, requirements bool) error {
	for j, n := range names {
		_, feature := featureNames[n]
		_, req := requirementNames[n]
		if feature || requirements && req {
			continue
		}
		known := make([]string, 0, len(featureNames)+len(requirementNames))
		for k := range featureNames {
			known = append(known, k)
		}
		what := "feature"
		if requirements {
			what = "requirement"
			for k := range requirementNames {
				known = append(known, k)
			}
		}
		sort.Strings(known)
		return fmt.Errorf("%s[%d]: unknown %s %q (known: %s)", at, j, what, n, strings.Join(known, ", "))
	}
	return nil
}

// resolve makes a manifest-relative path absolute.
func (m *Manifest) resolve(p string) string {
	if filepath.IsAbs(p) || m == nil || m.Dir == "" {
		return p
	}
	return filepath.Join(m.Dir, p)
}

// Operands returns the operand names the entry binds, in binding order ("" for scratch).
// A variant that states its own bindings may bind others: Launch.Operands has what ran.
func (e *Entry) Operands() []string {
	out := make([]string, len(e.Bindings))
	for _, b := range e.Bindings {
		out[b.Binding] = b.Operand
	}
	return out
}

// Vars returns every variable the entry's expressions use, variants' included, sorted: shape
// variables and any device variables (see DeviceVars).
func (e *Entry) Vars() []string {
	seen := map[string]bool{}
	for _, x := range e.exprs {
		for _, v := range x.Vars() {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// NeedsDevice reports whether instantiating the entry needs a device description: some
// expression uses a device variable, or some implementation has a requirement that only a
// device can confirm (a subgroup size, full subgroups, a requires name). Such an entry should be
// instantiated with VulkanFor.
func (e *Entry) NeedsDevice() bool {
	for _, v := range e.Vars() {
		if isDeviceVar(v) {
			return true
		}
	}
	for _, im := range e.impls {
		if im.subgroup != "" || len(im.requires) > 0 {
			return true
		}
	}
	return false
}
