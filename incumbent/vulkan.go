package incumbent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/onesource-go/onesource/backends/vulkan"
)

// featureNames maps the manifest's feature names to vulkan.Features fields.
var featureNames = map[string]func(*vulkan.Features){
	"int8":                func(f *vulkan.Features) { f.Int8 = true },
	"int16":               func(f *vulkan.Features) { f.Int16 = true },
	"float16":             func(f *vulkan.Features) { f.Float16 = true },
	"float64":             func(f *vulkan.Features) { f.Float64 = true },
	"storage_buffer8":     func(f *vulkan.Features) { f.StorageBuffer8 = true },
	"storage_buffer16":    func(f *vulkan.Features) { f.StorageBuffer16 = true },
	"integer_dot_product": func(f *vulkan.Features) { f.IntegerDotProduct = true },
	"subgroup_shuffle":    func(f *vulkan.Features) { f.SubgroupShuffle = true },
	"subgroup_basic":      func(f *vulkan.Features) { f.SubgroupBasic = true },
}

// SPIRV returns the entry's SPIR-V as loaded (before spec constants are applied): the .spv file,
// or the GLSL compiled with glslc (once; glslc must be on PATH).
func (e *Entry) SPIRV() ([]uint32, error) {
	e.once.Do(func() { e.words, e.wordErr = e.loadSPIRV() })
	return e.words, e.wordErr
}

func (e *Entry) loadSPIRV() ([]uint32, error) {
	src := e.Source
	var path string
	switch {
	case src.SPIRV != "":
		path = e.m.resolve(src.SPIRV)
	case src.GLSL != "":
		glslc, err := exec.LookPath("glslc")
		if err != nil {
			return nil, fmt.Errorf("incumbent %s: glslc is not installed: cannot compile %s", e.Name, src.GLSL)
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
			return nil, fmt.Errorf("incumbent %s: glslc %s: %v\n%s", e.Name, src.GLSL, err, out)
		}
	default:
		return nil, fmt.Errorf("incumbent %s: no GLSL or SPIR-V source (backend %s)", e.Name, e.Backend)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("incumbent %s: %w", e.Name, err)
	}
	w, err := vulkan.Words(b)
	if err != nil {
		return nil, fmt.Errorf("incumbent %s: %s: %v", e.Name, path, err)
	}
	return w, nil
}

// Launch is an incumbent instantiated for one shape on Vulkan.
type Launch struct {
	Module   *vulkan.Module
	Operands []string // per binding: the operand bound there, "" for a scratch buffer
	Scratch  []int    // per binding: bytes of its scratch buffer (0 for operands)
	Push     []byte   // the push-constant block
	Groups   [3]uint32
	Hash     string // sha256 of the SPIR-V words actually run (spec constants applied)
}

func (e *Entry) evalInt(path string, vars map[string]float64) (int64, error) {
	v, err := e.exprs[path].EvalInt(vars)
	if err != nil {
		return 0, fmt.Errorf("incumbent %s: %s: %w", e.Name, path, err)
	}
	return v, nil
}

// Vulkan instantiates the entry for the shape variables vars: SPIR-V with its spec constants
// applied, the module description, the push-constant bytes and the grid.
func (e *Entry) Vulkan(vars map[string]float64) (*Launch, error) {
	if e.Backend != "vulkan" {
		return nil, fmt.Errorf("incumbent %s: backend %s, not vulkan", e.Name, e.Backend)
	}
	words, err := e.SPIRV()
	if err != nil {
		return nil, err
	}
	at := e.path()
	spec := map[uint32]uint32{}
	bools := map[uint32]bool{}
	for j, s := range e.SpecConstants {
		p := fmt.Sprintf("%s.spec_constants[%d].value", at, j)
		switch s.Type {
		case "f32":
			v, err := e.exprs[p].EvalFloat(vars)
			if err != nil {
				return nil, fmt.Errorf("incumbent %s: %s: %w", e.Name, p, err)
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
		return nil, fmt.Errorf("incumbent %s: %w", e.Name, err)
	}
	l := &Launch{Operands: e.Operands(), Scratch: make([]int, len(e.Bindings))}
	m := &vulkan.Module{Name: e.EntryPoint, Words: words, Bindings: make([]vulkan.Binding, len(e.Bindings))}
	for j, b := range e.Bindings {
		es := b.ElemSize
		if es == 0 {
			es = 4
		}
		name := b.Operand
		if b.ScratchBytes != "" {
			n, err := e.evalInt(fmt.Sprintf("%s.bindings[%d].scratch_bytes", at, j), vars)
			if err != nil {
				return nil, err
			}
			l.Scratch[b.Binding] = int(max(n, 4))
			name = fmt.Sprintf("scratch%d", b.Binding)
		}
		m.Bindings[b.Binding] = vulkan.Binding{Name: name, ElemSize: es, ReadOnly: b.ReadOnly}
	}
	size := 0
	off := 0
	type put struct {
		off  int
		bits uint32
	}
	var puts []put
	for j, f := range e.PushConstants {
		p := fmt.Sprintf("%s.push_constants[%d].value", at, j)
		if f.Offset != nil {
			off = *f.Offset
		}
		var bits uint32
		if f.Type == "f32" {
			v, err := e.exprs[p].EvalFloat(vars)
			if err != nil {
				return nil, fmt.Errorf("incumbent %s: %s: %w", e.Name, p, err)
			}
			bits = math.Float32bits(float32(v))
		} else {
			v, err := e.evalInt(p, vars)
			if err != nil {
				return nil, err
			}
			if f.Type == "u32" && (v < 0 || v > math.MaxUint32) || f.Type == "i32" && (v < math.MinInt32 || v > math.MaxInt32) {
				return nil, fmt.Errorf("incumbent %s: %s = %d does not fit %s", e.Name, p, v, f.Type)
			}
			bits = uint32(v)
		}
		puts = append(puts, put{off, bits})
		off += 4
		size = off
	}
	if e.PushConstantSize > size {
		size = e.PushConstantSize
	}
	l.Push = make([]byte, size)
	for _, p := range puts {
		binary.LittleEndian.PutUint32(l.Push[p.off:], p.bits)
	}
	m.PushConstantSize = uint32(size)
	for d := 0; d < 3; d++ {
		wg, err := e.evalInt(fmt.Sprintf("%s.workgroup_size[%d]", at, d), vars)
		if err != nil {
			return nil, err
		}
		g, err := e.evalInt(fmt.Sprintf("%s.grid[%d]", at, d), vars)
		if err != nil {
			return nil, err
		}
		if wg < 1 || wg > math.MaxUint32 || g < 1 || g > math.MaxUint32 {
			return nil, fmt.Errorf("incumbent %s: workgroup size %d or grid %d out of range in dimension %d", e.Name, wg, g, d)
		}
		m.WorkgroupSize[d] = uint32(wg)
		l.Groups[d] = uint32(g)
	}
	if ls, ok := literalLocalSize(words); ok && ls != m.WorkgroupSize {
		return nil, fmt.Errorf("incumbent %s: the manifest states workgroup size %v, the shader declares %v", e.Name, m.WorkgroupSize, ls)
	}
	for _, f := range e.Features {
		featureNames[f](&m.Features)
	}
	l.Module = m
	l.Hash = HashWords(words)
	return l, nil
}

// path is the entry's JSON path in its manifest.
func (e *Entry) path() string {
	for i, x := range e.m.Incumbents {
		if x == e {
			return fmt.Sprintf("incumbents[%d]", i)
		}
	}
	return "incumbents[?]"
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
