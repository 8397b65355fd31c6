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
//	        {"binding": 1, "operand": "w"},
//	        {"binding": 2, "operand": "y"},
//	        {"binding": 3, "scratch_bytes": "4"}   // a binding the op does not use: a zeroed buffer
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
//	      "shape": {"rows": 512, "n": 4096},       // optional: the benchmark shape for this entry
//	      "notes": "free text"
//	    }
//	  ]
//	}
//
// Values are expressions (see Expr) over the shape variables of the op's benchmark workload
// (package conformance names them, the same in every op: rows and n for ops on rows of n values,
// matvec included; tokens, heads and head_dim for rope; plus the op's parameters such as eps),
// written as JSON strings or numbers. Push-constant types are u32, i32 and f32 (std430 scalars,
// 4 bytes; a field's offset defaults to the end of the previous one). Spec-constant types are
// u32, i32, f32 and bool.
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
// Only Vulkan entries (GLSL or SPIR-V) can be run here; CUDA, HIP and MSL paths are recorded
// for the backends that run them.
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
	Shape            map[string]float64 `json:"shape,omitempty"`
	Notes            string             `json:"notes,omitempty"`

	m       *Manifest
	exprs   map[string]*Expr // by JSON path
	once    sync.Once
	words   []uint32
	wordErr error
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

// Load reads and checks a manifest file.
func Load(path string) (*Manifest, error) {
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
	src := e.Source
	var paths []string
	for _, p := range []struct{ key, path string }{{"glsl", src.GLSL}, {"spirv", src.SPIRV}, {"cuda", src.CUDA}, {"hip", src.HIP}, {"msl", src.MSL}} {
		if p.path != "" {
			paths = append(paths, p.key)
			if _, err := os.Stat(e.m.resolve(p.path)); err != nil {
				return fmt.Errorf("%s.source.%s: %v", at, p.key, err)
			}
		}
	}
	if len(paths) != 1 {
		return fmt.Errorf("%s.source: want exactly one of glsl, spirv, cuda, hip, msl, got %d (%s)", at, len(paths), strings.Join(paths, ", "))
	}
	if e.Backend == "vulkan" && src.GLSL == "" && src.SPIRV == "" {
		return fmt.Errorf("%s.source: a vulkan incumbent needs glsl or spirv, got %s", at, paths[0])
	}
	if len(e.Bindings) == 0 {
		return fmt.Errorf("%s.bindings: at least one binding is required", at)
	}
	seen := make([]bool, len(e.Bindings))
	for j, b := range e.Bindings {
		bp := fmt.Sprintf("%s.bindings[%d]", at, j)
		if b.Binding < 0 || b.Binding >= len(e.Bindings) {
			return fmt.Errorf("%s.binding: %d, want 0..%d (bindings are numbered densely from 0)", bp, b.Binding, len(e.Bindings)-1)
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
	}
	off := 0
	end := 0
	for j, f := range e.PushConstants {
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
		if err := e.expr(fp+".value", f.Value); err != nil {
			return err
		}
		off += 4
		end = off
	}
	if e.PushConstantSize != 0 && (e.PushConstantSize < end || e.PushConstantSize%4 != 0) {
		return fmt.Errorf("%s.push_constant_size: %d, the fields need %d bytes (a multiple of 4)", at, e.PushConstantSize, end)
	}
	ids := map[uint32]bool{}
	for j, s := range e.SpecConstants {
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
	for d := 0; d < 3; d++ {
		if err := e.expr(fmt.Sprintf("%s.workgroup_size[%d]", at, d), e.WorkgroupSize[d]); err != nil {
			return err
		}
		if err := e.expr(fmt.Sprintf("%s.grid[%d]", at, d), e.Grid[d]); err != nil {
			return err
		}
	}
	for j, f := range e.Features {
		if _, ok := featureNames[f]; !ok {
			known := make([]string, 0, len(featureNames))
			for k := range featureNames {
				known = append(known, k)
			}
			sort.Strings(known)
			return fmt.Errorf("%s.features[%d]: unknown feature %q (known: %s)", at, j, f, strings.Join(known, ", "))
		}
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
func (e *Entry) Operands() []string {
	out := make([]string, len(e.Bindings))
	for _, b := range e.Bindings {
		out[b.Binding] = b.Operand
	}
	return out
}

// Vars returns every shape variable the entry's expressions use, sorted.
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
