package conformance

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// The benchmark workloads: every op of the kernel matrix fed at a named, realistic shape from
// LLM decoding, so that the A/B benchmark, the gate and a tuner measure kernels rather than
// launch overhead. The shape variables are named the same way across ops:
//
//	op                        variables (positional form first)    default
//	rms_norm, add_rmsnorm     rows x n, eps                         64 x 4096, eps 1e-6
//	softmax                   rows x n, scale, mask_rows (0, 1,     64 x 4096, scale 1/sqrt(128), mask_rows 1
//	                          rows: none, broadcast, causal)
//	add, mul, swiglu,         rows x n (scale: also scale)          64 x 4096 (scale 1/sqrt(128))
//	silu, gelu, scale
//	quantize_q8_1             rows x n (n a multiple of 32)         64 x 4096
//	get_rows (every type)     rows x n, src_rows                    64 rows of 4096 from 1024
//	matvec, matvec_q8         rows x n                              1024 x 4096
//	rope_norm, rope_neox      tokens x heads x head_dim, base       64 x 32 x 128, base 1e4 (neox 1e6)
//	rms_norm_rope             tokens x heads x head_dim, eps,       64 x 32 x 128, eps 1e-6, base 1e6,
//	                          base, mode (0 normal, 2 neox)         mode 2 (neox)
//	attn_decode               n_kv x heads x head_dim, kv_heads,    4096 x 32 x 128, kv_heads 8,
//	                          scale                                 scale 1/sqrt(128)
//
// rows x n is rows of n values: the rows normalized or soft-maxed, the element-wise ops' tensor
// of rows*n values, the ids get_rows gathers (each a row of n values of the matrix of src_rows
// rows), the rows of a matvec's weight matrix (n = the length of x). Inputs are realistic:
// activations N(0,1)-ish, weights as kernels.WeightRows makes them (ggml's input kinds through
// the reference quantizer), norm weights 1 + N(0, 0.25^2), positions of a batch of sequences.
//
// A workload's Shape holds its shape variables (every variable of its op); Derived holds, for an
// incumbent's expressions, what follows from them at the schedule: every parameter of the twin
// by its name (u32 and i32 as integers, f32 as its value) where no shape variable has that name
// (the element-wise twins' n is rows*n, while the shape's n stays the row length), grid_x,
// grid_y and grid_z (the twin's grid), lanes (s.Lanes) and bytes_NAME (the byte size of operand
// NAME). An incumbent's expressions see both (Vars).

// Operand is one buffer of a workload, named as the twin's kernel names its binding.
type Operand struct {
	Name   string
	Data   []byte // initial bytes (outputs: zeros of the output size)
	Output bool
	Elem   string // element type for comparisons ("f32")
}

// Workload is an op's benchmark input at one shape: its operands, the twin's parameters and
// grid, and the oracle's outputs.
type Workload struct {
	Op, Type string
	Shape    map[string]float64 // the shape variables manifest expressions refer to
	// Derived holds more variables for manifest expressions, following from Shape at the
	// schedule (see the comment on the workloads); nil for a case workload, whose Shape has them.
	Derived    map[string]float64
	Operands   []Operand
	TwinParams []uint32  // the twin's parameters in declaration order
	TwinGroups [3]uint32 // the twin's grid at the workload's schedule: Grid(s)
	// Grid is the twin's grid at any schedule of the cell: a candidate schedule runs the same
	// operands on its own grid (what the tuner times each candidate with).
	Grid func(s kernels.Schedule) [3]uint32
	// Want returns the oracle's bytes for every output operand, by name (nil: not known).
	Want func() (map[string][]byte, error)
}

// Bytes is the op's minimal memory traffic: every operand read or written once.
func (w *Workload) Bytes() int {
	n := 0
	for _, o := range w.Operands {
		n += len(o.Data)
	}
	return n
}

// Vars returns the variables an incumbent's expressions are evaluated with: Shape, and the
// variables of Derived that Shape does not set.
func (w *Workload) Vars() map[string]float64 {
	if len(w.Derived) == 0 {
		return w.Shape
	}
	out := make(map[string]float64, len(w.Shape)+len(w.Derived))
	for k, v := range w.Derived {
		out[k] = v
	}
	for k, v := range w.Shape {
		out[k] = v
	}
	return out
}

func (w *Workload) operand(name string) (*Operand, bool) {
	for i := range w.Operands {
		if w.Operands[i].Name == name {
			return &w.Operands[i], true
		}
	}
	return nil, false
}

// varKind is what values a shape variable takes.
type varKind int

const (
	varCount varKind = iota // a positive integer (a size)
	varIndex                // a non-negative integer
	varReal                 // a finite real number (eps, scale, base)
	varMode                 // a rope mode: 0 (normal) or 2 (neox)
	varFlag                 // 0 or 1
)

// builder makes the workload of cell c at shape sh (every variable of the op set and checked
// against its kind) for schedule s.
type builder func(c kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error)

// opWorkload is the workload of one op: its shape variables and their defaults, and its builder.
type opWorkload struct {
	vars  []string           // the primary variables, in the order of the positional form
	kinds map[string]varKind // every variable
	def   map[string]float64 // the default (realistic) shape: every variable
	build builder
}

// kindsOf reads "name" (a count) and "name:real", "name:index", "name:mode". Every op also takes
// seed (an index) and specials (a flag): the seeded inputs (see rngOf and acts).
func kindsOf(specs ...string) map[string]varKind {
	out := map[string]varKind{"seed": varIndex, "specials": varFlag}
	for _, sp := range specs {
		name, kind, _ := strings.Cut(sp, ":")
		out[name] = map[string]varKind{"": varCount, "real": varReal, "index": varIndex, "mode": varMode}[kind]
	}
	return out
}

// attnScale is 1/sqrt(128): the attention scale of 128-value heads.
const attnScale = 0.08838834764831845

var (
	rowsN    = []string{"rows", "n"}
	ropeVars = []string{"tokens", "heads", "head_dim"}
)

// opWorkloads are the workloads by op (see the comment on the workloads above).
var opWorkloads = map[string]opWorkload{
	"rms_norm": {vars: rowsN, kinds: kindsOf("rows", "n", "eps:real"),
		def: map[string]float64{"rows": 64, "n": 4096, "eps": 1e-6}, build: activations(rmsNormWorkload)},
	"add_rmsnorm": {vars: rowsN, kinds: kindsOf("rows", "n", "eps:real"),
		def: map[string]float64{"rows": 64, "n": 4096, "eps": 1e-6}, build: activations(addRMSNormWorkload)},
	"softmax": {vars: rowsN, kinds: kindsOf("rows", "n", "scale:real", "mask_rows:index"),
		def: map[string]float64{"rows": 64, "n": 4096, "scale": attnScale, "mask_rows": 1}, build: activations(softmaxWorkload)},
	"add": {vars: rowsN, kinds: kindsOf("rows", "n"),
		def: map[string]float64{"rows": 64, "n": 4096}, build: activations(addWorkload)},
	"mul": {vars: rowsN, kinds: kindsOf("rows", "n"),
		def: map[string]float64{"rows": 64, "n": 4096}, build: activations(mulWorkload)},
	"swiglu": {vars: rowsN, kinds: kindsOf("rows", "n"),
		def: map[string]float64{"rows": 64, "n": 4096}, build: activations(swigluWorkload)},
	"silu": {vars: rowsN, kinds: kindsOf("rows", "n"),
		def: map[string]float64{"rows": 64, "n": 4096}, build: unaryWorkload("silu", 12)},
	"gelu": {vars: rowsN, kinds: kindsOf("rows", "n"),
		def: map[string]float64{"rows": 64, "n": 4096}, build: unaryWorkload("gelu", 13)},
	"scale": {vars: rowsN, kinds: kindsOf("rows", "n", "scale:real"),
		def: map[string]float64{"rows": 64, "n": 4096, "scale": attnScale}, build: unaryWorkload("scale", 14)},
	"quantize_q8_1": {vars: rowsN, kinds: kindsOf("rows", "n"),
		def: map[string]float64{"rows": 64, "n": 4096}, build: activations(quantizeQ8_1Workload)},
	"get_rows": {vars: rowsN, kinds: kindsOf("rows", "n", "src_rows"),
		def: map[string]float64{"rows": 64, "n": 4096, "src_rows": 1024}, build: getRowsWorkload},
	"matvec": {vars: rowsN, kinds: kindsOf("rows", "n"), def: matvecShape,
		build: func(c kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error) {
			return matvecWorkload(c.Type, false, sh, s)
		}},
	"matvec_q8": {vars: rowsN, kinds: kindsOf("rows", "n"), def: matvecShape,
		build: func(c kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error) {
			return matvecWorkload(c.Type, true, sh, s)
		}},
	"rope_norm": {vars: ropeVars, kinds: kindsOf("tokens", "heads", "head_dim", "base:real"),
		def: map[string]float64{"tokens": 64, "heads": 32, "head_dim": 128, "base": 10000}, build: ropeWorkload(oracle.RopeNormal)},
	"rope_neox": {vars: ropeVars, kinds: kindsOf("tokens", "heads", "head_dim", "base:real"),
		def: map[string]float64{"tokens": 64, "heads": 32, "head_dim": 128, "base": 1e6}, build: ropeWorkload(oracle.RopeNeox)},
	"rms_norm_rope": {vars: ropeVars, kinds: kindsOf("tokens", "heads", "head_dim", "eps:real", "base:real", "mode:mode"),
		def:   map[string]float64{"tokens": 64, "heads": 32, "head_dim": 128, "eps": 1e-6, "base": 1e6, "mode": float64(oracle.RopeNeox)},
		build: activations(rmsNormRopeWorkload)},
	"argmax": {vars: []string{"n"}, kinds: kindsOf("n", "chunk"),
		def: map[string]float64{"n": 32000, "chunk": 32000}, build: argWorkload(oracle.ArgMax)},
	"argmin": {vars: []string{"n"}, kinds: kindsOf("n", "chunk"),
		def: map[string]float64{"n": 32000, "chunk": 32000}, build: argWorkload(oracle.ArgMin)},
	"topk": {vars: []string{"n"}, kinds: kindsOf("n", "chunk", "k"),
		def: map[string]float64{"n": 32000, "chunk": 32000, "k": 40}, build: activations(topKWorkload)},
	"sample": {vars: []string{"k"}, kinds: kindsOf("k", "temp:real", "top_p:real", "u:real"),
		def: map[string]float64{"k": 40, "temp": 0.8, "top_p": 0.95, "u": 0.5}, build: activations(sampleWorkload)},
	"attn_decode": {vars: []string{"n_kv", "heads", "head_dim"}, kinds: kindsOf("n_kv", "heads", "kv_heads", "head_dim", "scale:real"),
		def:   map[string]float64{"n_kv": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "scale": attnScale},
		build: activations(attnDecodeWorkload)},
}

// matvecShape is the realistic shape of the matvec workloads: 1024 rows of 4096 values (a
// quarter of a 4096x4096 projection: the kernel's per-row work at the decoding size, in a
// dispatch long enough to be measured on a CPU driver).
var matvecShape = map[string]float64{"rows": 1024, "n": 4096}

// activations adapts the builder of an op on f32 activations (its cell's type is always f32).
func activations(f func(sh map[string]float64, s kernels.Schedule) (*Workload, error)) builder {
	return func(_ kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error) { return f(sh, s) }
}

type workloadDef struct {
	shape map[string]float64 // default (realistic) benchmark shape
	build func(sh map[string]float64, s kernels.Schedule) (*Workload, error)
}

// workloadOf returns the realistic workload definition of cell key ("op/type", lower case).
func workloadOf(key string) (workloadDef, bool) {
	c, ok := lookupCell(key)
	if !ok {
		return workloadDef{}, false
	}
	ow, ok := opWorkloads[c.Op]
	if !ok {
		return workloadDef{}, false
	}
	return workloadDef{shape: ow.def, build: func(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
		return ow.build(c, sh, s)
	}}, true
}

// WorkloadOps lists the cells ("op/type") with a workload at a chosen realistic shape; every other
// registered cell is fed its largest conformance case (see NewWorkload).
func WorkloadOps() []string {
	var out []string
	for _, c := range kernels.Cells() {
		if key := strings.ToLower(c.Name()); func() bool { _, ok := workloadOf(key); return ok }() {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// ShapeVars returns the primary shape variables of op, in the order of ParseShape's positional
// form ("rows", "n" for most ops; "tokens", "heads", "head_dim" for rope_norm, rope_neox and
// rms_norm_rope); nil for an op without a workload.
func ShapeVars(op string) []string {
	ow, ok := opWorkloads[op]
	if !ok {
		return nil
	}
	return append([]string(nil), ow.vars...)
}

// DefaultShape returns the default (realistic) shape of cell op/typ: every shape variable of its
// op with its default value. It is false for a cell that is not registered or has no workload.
func DefaultShape(op, typ string) (map[string]float64, bool) {
	c, ok := lookupCell(strings.ToLower(op + "/" + typ))
	if !ok {
		return nil, false
	}
	ow, ok := opWorkloads[c.Op]
	if !ok {
		return nil, false
	}
	out := make(map[string]float64, len(ow.def))
	for k, v := range ow.def {
		out[k] = v
	}
	return out, true
}

// shapeOrder is the order ShapeString writes the shape variables in; other names follow, sorted.
var shapeOrder = []string{"rows", "tokens", "heads", "head_dim", "n", "src_rows", "mask_rows", "eps", "scale", "base", "mode", "seed", "specials"}

// shapeLess orders shape variables as ShapeString writes them.
func shapeLess(a, b string) bool {
	ra, rb := slices.Index(shapeOrder, a), slices.Index(shapeOrder, b)
	switch {
	case ra >= 0 && rb >= 0:
		return ra < rb
	case ra >= 0 || rb >= 0:
		return ra >= 0
	}
	return a < b
}

// ShapeString writes sh as "rows=64,n=4096": the shape variables in a stable order (the sizes
// first, rows before n and tokens, heads, head_dim in this order, then the op parameters, then
// any other name sorted), each value in the shortest form that reads back the same.
// ParseShape reads it back.
func ShapeString(sh map[string]float64) string {
	keys := make([]string, 0, len(sh))
	for k := range sh {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return shapeLess(keys[i], keys[j]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat(sh[k], 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// shapeString is ShapeString (the case workloads' errors).
func shapeString(sh map[string]float64) string { return ShapeString(sh) }

// describe names op's shape variables for error messages.
func (ow opWorkload) describe(op string) string {
	var all []string
	for k := range ow.kinds {
		all = append(all, k)
	}
	sort.Slice(all, func(i, j int) bool { return shapeLess(all[i], all[j]) })
	upper := make([]string, len(ow.vars))
	for i, v := range ow.vars {
		upper[i] = strings.ToUpper(v)
	}
	return fmt.Sprintf("%s's shape variables are %s (NAME=VALUE,... or %s)", op, strings.Join(all, ", "), strings.Join(upper, "x"))
}

// check checks value v of variable name against its kind.
func (ow opWorkload) check(name string, v float64) error {
	switch ow.kinds[name] {
	case varCount:
		if !(v >= 1) || v != math.Trunc(v) || v > math.MaxUint32 {
			return fmt.Errorf("shape variable %s = %v must be a positive integer", name, v)
		}
	case varIndex:
		if !(v >= 0) || v != math.Trunc(v) || v > math.MaxUint32 {
			return fmt.Errorf("shape variable %s = %v must be a non-negative integer", name, v)
		}
	case varReal:
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
			return fmt.Errorf("shape variable %s = %v must be a finite f32 value", name, v)
		}
	case varFlag:
		if v != 0 && v != 1 {
			return fmt.Errorf("shape variable %s = %v must be 0 or 1", name, v)
		}
	case varMode:
		if v != float64(oracle.RopeNormal) && v != float64(oracle.RopeNeox) {
			return fmt.Errorf("shape variable %s = %v must be %d (normal) or %d (neox)", name, v, oracle.RopeNormal, oracle.RopeNeox)
		}
	}
	return nil
}

// ParseShape reads a shape of op: "rows=64,n=4096" (NAME=VALUE pairs of any of op's shape
// variables, comma-separated) or the short positional form "64x4096", the op's primary variables
// (ShapeVars) in order: rows x n for most ops ("4096x14336" is a matvec of 4096 rows of 14336
// values), tokens x heads x head_dim for rope_norm, rope_neox and rms_norm_rope. The positional
// form may be followed by pairs ("64x4096,eps=1e-5"). Every value is checked (sizes are positive
// integers, and so on); the variables left out keep their defaults when the shape is used
// (NewWorkload). The errors name op's variables.
func ParseShape(op string, text string) (map[string]float64, error) {
	ow, ok := opWorkloads[op]
	if !ok {
		ops := make([]string, 0, len(opWorkloads))
		for k := range opWorkloads {
			ops = append(ops, k)
		}
		sort.Strings(ops)
		return nil, fmt.Errorf("shape %q: op %q has no benchmark workload (ops: %s)", text, op, strings.Join(ops, ", "))
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("shape %q for %s: %s; %s", text, op, fmt.Sprintf(format, args...), ow.describe(op))
	}
	if strings.TrimSpace(text) == "" {
		return nil, bad("empty")
	}
	num := func(name, s string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, bad("%s: %q is not a number", name, strings.TrimSpace(s))
		}
		if err := ow.check(name, v); err != nil {
			return 0, bad("%v", err)
		}
		return v, nil
	}
	out := map[string]float64{}
	for i, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, bad("an empty item")
		}
		name, val, named := strings.Cut(part, "=")
		if !named {
			if i > 0 {
				return nil, bad("%q: only the first item may be positional", part)
			}
			fields := strings.Split(part, "x")
			if len(fields) == 1 {
				return nil, bad("%q is neither NAME=VALUE nor the positional form (%s)", part, strings.Join(ow.vars, " x "))
			}
			if len(fields) != len(ow.vars) {
				return nil, bad("%q has %d values, the positional form %d (%s)", part, len(fields), len(ow.vars), strings.Join(ow.vars, " x "))
			}
			for j, f := range fields {
				v, err := num(ow.vars[j], f)
				if err != nil {
					return nil, err
				}
				out[ow.vars[j]] = v
			}
			continue
		}
		name = strings.TrimSpace(name)
		if _, known := ow.kinds[name]; !known {
			return nil, bad("no shape variable %q", name)
		}
		if _, dup := out[name]; dup {
			return nil, bad("%s given twice", name)
		}
		v, err := num(name, val)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// NewWorkload builds the benchmark input of cell op/typ at schedule s. The cells of WorkloadOps
// (every registered cell) get their op's default shape, with the variables of shape (may be nil)
// overriding it; a cell without a workload would get its case workload (see caseWorkload), whose
// shape is fixed by the case: shape may then only restate its variables. The twin's parameters
// and grid are computed for s; Shape is the shape, Derived what follows from it at s (see the
// comment on the workloads).
func NewWorkload(op, typ string, shape map[string]float64, s kernels.Schedule) (*Workload, error) {
	key := strings.ToLower(op + "/" + typ)
	c, found := lookupCell(key)
	if !found {
		return nil, fmt.Errorf("A/B benchmark: no cell %s", key)
	}
	ow, ok := opWorkloads[c.Op]
	if !ok {
		w, err := caseWorkload(c, s)
		if err != nil {
			return nil, err
		}
		for k, v := range shape {
			if have, known := w.Shape[k]; !known || have != v {
				return nil, fmt.Errorf("A/B benchmark: %s: the shape is that of its largest conformance case (%s); cannot set %s = %v", key, shapeString(w.Shape), k, v)
			}
		}
		w.Op, w.Type = op, typ
		return w, nil
	}
	sh := map[string]float64{}
	for k, v := range ow.def {
		sh[k] = v
	}
	for k, v := range shape {
		if _, known := ow.kinds[k]; !known {
			return nil, fmt.Errorf("A/B benchmark: %s has no shape variable %q; %s", key, k, ow.describe(c.Op))
		}
		sh[k] = v
	}
	for k, v := range sh {
		if err := ow.check(k, v); err != nil {
			return nil, fmt.Errorf("A/B benchmark: %s: %w", key, err)
		}
	}
	w, err := ow.build(c, sh, s)
	if err != nil {
		return nil, fmt.Errorf("A/B benchmark: %s at %s: %w", key, ShapeString(sh), err)
	}
	w.TwinGroups = w.Grid(s)
	if err := derive(w, c, sh, s); err != nil {
		return nil, fmt.Errorf("A/B benchmark: %s at %s: %w", key, ShapeString(sh), err)
	}
	w.Op, w.Type = op, typ
	return w, nil
}

// derive sets w.Shape to sh and w.Derived to what follows from it (see the comment on the
// workloads). It checks that the twin of c at s takes w's parameters and binds only w's
// operands.
func derive(w *Workload, c kernels.Cell, sh map[string]float64, s kernels.Schedule) error {
	k, err := c.Build(s).Build()
	if err != nil {
		return fmt.Errorf("twin does not build: %w", err)
	}
	if len(w.TwinParams) != len(k.Params) {
		return fmt.Errorf("%d twin parameters for the twin's %d", len(w.TwinParams), len(k.Params))
	}
	shape := make(map[string]float64, len(sh))
	for k, v := range sh {
		shape[k] = v
	}
	out := make(map[string]float64, len(k.Params)+len(k.Buffers)+4)
	set := func(name string, v float64) {
		_, inShape := shape[name]
		if _, done := out[name]; !inShape && !done {
			out[name] = v
		}
	}
	for i, p := range k.Params {
		v := w.TwinParams[i]
		switch p.Type {
		case ir.TF32:
			set(p.Name, float64(math.Float32frombits(v)))
		case ir.TI32:
			set(p.Name, float64(int32(v)))
		default:
			set(p.Name, float64(v))
		}
	}
	for _, b := range k.Buffers {
		op, ok := w.operand(b.Name)
		if !ok {
			return fmt.Errorf("twin binding %q is not an operand of the workload", b.Name)
		}
		set("bytes_"+b.Name, float64(len(op.Data)))
	}
	set("grid_x", float64(w.TwinGroups[0]))
	set("grid_y", float64(w.TwinGroups[1]))
	set("grid_z", float64(w.TwinGroups[2]))
	set("lanes", float64(s.Lanes))
	w.Shape, w.Derived = shape, out
	return nil
}

// lookupCell returns the registered cell named key ("op/type", lower case).
func lookupCell(key string) (kernels.Cell, bool) {
	for _, c := range kernels.Cells() {
		if strings.ToLower(c.Name()) == key {
			return c, true
		}
	}
	return kernels.Cell{}, false
}

// caseWorkload is the workload of any cell: its largest conformance case at schedule s (the most
// bytes over all bindings; the first of equals), so that no op-specific input builder is
// needed. Operands are the twin's bindings, named as its kernel names them, with the case's
// initial bytes; the outputs are the case's compared bindings, and Want returns the case's
// oracle bytes. The twin's parameters and grid are the case's.
//
// Shape variables, for the incumbent's expressions: every parameter of the twin by its name (u32
// and i32 as integers, f32 as its value: n, mask_rows, scale, ...), grid_x, grid_y and grid_z
// (the case's grid), lanes (s.Lanes), and bytes_NAME (the byte size of operand NAME). A shape
// variable the twin's kernel also names as a parameter keeps the parameter's value.
func caseWorkload(c kernels.Cell, s kernels.Schedule) (*Workload, error) {
	k, err := c.Build(s).Build()
	if err != nil {
		return nil, fmt.Errorf("A/B benchmark: %s: twin does not build: %w", c.Name(), err)
	}
	cases, err := c.Cases(s)
	if err != nil {
		return nil, fmt.Errorf("A/B benchmark: %s: cases: %w", c.Name(), err)
	}
	best, bestBytes := -1, -1
	for i, cs := range cases {
		n := 0
		for _, b := range cs.Buffers {
			n += len(b)
		}
		if n > bestBytes {
			best, bestBytes = i, n
		}
	}
	if best < 0 {
		return nil, fmt.Errorf("A/B benchmark: %s has no conformance case", c.Name())
	}
	cs := cases[best]
	if len(cs.Buffers) != len(k.Buffers) {
		return nil, fmt.Errorf("A/B benchmark: %s case %s: %d buffers for %d bindings", c.Name(), cs.Name, len(cs.Buffers), len(k.Buffers))
	}
	if len(cs.Params) != len(k.Params) {
		return nil, fmt.Errorf("A/B benchmark: %s case %s: %d parameters for %d", c.Name(), cs.Name, len(cs.Params), len(k.Params))
	}
	w := &Workload{
		Op: c.Op, Type: c.Type.String(),
		Shape:      map[string]float64{},
		TwinParams: append([]uint32(nil), cs.Params...),
		TwinGroups: cs.Groups,
		// The same case at another schedule: only its grid changes (kernels.Cell.Cases).
		Grid: func(s kernels.Schedule) [3]uint32 {
			if cases, err := c.Cases(s); err == nil && best < len(cases) {
				return cases[best].Groups
			}
			return cs.Groups
		},
	}
	elem := map[int]string{}
	for j, b := range cs.Outputs {
		e := "f32"
		if j < len(cs.Elem) && cs.Elem[j] != "" {
			e = cs.Elem[j]
		}
		elem[b] = e
	}
	for i, b := range k.Buffers {
		e, out := elem[i]
		w.Operands = append(w.Operands, Operand{Name: b.Name, Data: append([]byte(nil), cs.Buffers[i]...), Output: out, Elem: e})
		w.Shape["bytes_"+b.Name] = float64(len(cs.Buffers[i]))
	}
	w.Shape["grid_x"], w.Shape["grid_y"], w.Shape["grid_z"] = float64(cs.Groups[0]), float64(cs.Groups[1]), float64(cs.Groups[2])
	w.Shape["lanes"] = float64(s.Lanes)
	for i, p := range k.Params {
		v := cs.Params[i]
		switch p.Type {
		case ir.TF32:
			w.Shape[p.Name] = float64(math.Float32frombits(v))
		case ir.TI32:
			w.Shape[p.Name] = float64(int32(v))
		default:
			w.Shape[p.Name] = float64(v)
		}
	}
	want := map[string][]byte{}
	for j, b := range cs.Outputs {
		if j < len(cs.Want) && b >= 0 && b < len(k.Buffers) {
			want[k.Buffers[b].Name] = cs.Want[j]
		}
	}
	w.Want = func() (map[string][]byte, error) { return want, nil }
	return w, nil
}

// The seeded inputs: every workload's random values come from rngOf, whose seed is the builder's
// own fixed one (the realistic workload, comparable across runs) unless the shape sets the
// variable seed, and its activations from acts, which with the shape variable specials = 1 puts
// IEEE special values among them. The gate's extra checks use both (see gateChecks), and record
// the seeds so a failure replays.

// seedOf is the source seed of a builder whose own seed is def, at shape sh: def itself unless sh
// sets seed (seed 0 is the default inputs).
func seedOf(sh map[string]float64, def int64) int64 { return def + int64(sh["seed"])*7919 }

// rngOf is the random source of a builder whose own seed is def, at shape sh (seedOf).
func rngOf(sh map[string]float64, def int64) *rand.Rand {
	return rand.New(rand.NewSource(seedOf(sh, def)))
}

// subnormals and nonFinite are what acts puts among activations with specials = 1: the smallest
// and a larger subnormal of both signs and negative zero, and quiet NaN and both infinities.
var (
	subnormals = []float32{math.Float32frombits(1), -math.Float32frombits(0x000fffff), math.Float32frombits(0x007fffff), math.Float32frombits(0x80000000)}
	nonFinite  = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
)

// acts returns n activations (randF32). With the shape variable specials = 1, one value in 16
// (at positions rng picks) is a subnormal or -0, and a NaN, +Inf and -Inf sit in the first
// quarter only: reductions over the rest still give finite results to compare, as they would
// not if every row held a NaN.
func acts(sh map[string]float64, rng *rand.Rand, n int, scale, offset float64) []float32 {
	x := randF32(rng, n, scale, offset)
	if sh["specials"] != 0 && n > 0 {
		for k := 0; k < max(1, n/16); k++ {
			x[rng.Intn(n)] = subnormals[k%len(subnormals)]
		}
		for _, v := range nonFinite {
			x[rng.Intn(max(1, n/4))] = v
		}
	}
	return x
}

func randF32(rng *rand.Rand, n int, scale, offset float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(offset + scale*rng.NormFloat64())
	}
	return x
}

func f32le(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func i32le(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

const (
	// maxValues bounds an operand's values (1 GiB of f32), so sizes and indices stay in u32.
	maxValues = 1 << 28
	// maxGroups is the most workgroups a dispatch has along one axis (Vulkan guarantees 65535).
	maxGroups = 65535
)

// sizes returns the named shape variables as ints and their product, which must stay within
// maxValues.
func sizes(sh map[string]float64, names ...string) ([]int, int, error) {
	out := make([]int, len(names))
	total := 1
	for i, name := range names {
		out[i] = int(sh[name])
		total *= out[i]
		if total > maxValues {
			return nil, 0, fmt.Errorf("%s: more than %d values in one operand", strings.Join(names, " x "), maxValues)
		}
	}
	// A workload holds a few operands of this size and the oracle's copies: refuse one that
	// cannot fit in the memory the machine has free, before allocating any of it.
	if avail, ok := availableMemory(); ok {
		if need := uint64(total) * workloadBytesPerValue; need > avail {
			return nil, 0, fmt.Errorf("%s = %d values: the workload needs about %.1f GiB; this machine has %.1f GiB available", strings.Join(names, " x "), total, float64(need)/(1<<30), float64(avail)/(1<<30))
		}
	}
	return out, total, nil
}

// workloadBytesPerValue estimates a workload's host memory per value of its largest operand:
// the operands (inputs and outputs, 4 bytes a value, and their device copies) and the oracle's
// results.
const workloadBytesPerValue = 32

// availableMemory is memAvailable; tests replace it.
var availableMemory = memAvailable

// groupsOK checks a dispatch's workgroup count along one axis.
func groupsOK(g int, what string) error {
	if g > maxGroups {
		return fmt.Errorf("%d workgroups (%s) along one axis: at most %d", g, what, maxGroups)
	}
	return nil
}

// normWeights returns n norm weights, 1 + N(0, 0.25^2).
func normWeights(rng *rand.Rand, n int) []float32 { return randF32(rng, n, 0.25, 1) }

func rmsNormWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, total, err := sizes(sh, "rows", "n")
	if err != nil {
		return nil, err
	}
	rows, n, eps := d[0], d[1], float32(sh["eps"])
	if err := groupsOK(rows, "one per row"); err != nil {
		return nil, err
	}
	rng := rngOf(sh, 1)
	x := acts(sh, rng, total, 1, 0)
	wt := normWeights(rng, n)
	return &Workload{
		Operands: []Operand{
			{Name: "x", Data: f32le(x)},
			{Name: "w", Data: f32le(wt)},
			{Name: "y", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
		},
		TwinParams: []uint32{uint32(n), math.Float32bits(eps), 1},
		Grid: func(s kernels.Schedule) [3]uint32 {
			return [3]uint32{uint32((rows + s.RowsPerGroup() - 1) / s.RowsPerGroup()), 1, 1}
		},
		Want: func() (map[string][]byte, error) {
			y := make([]float32, total)
			if err := oracle.RMSNormF32(y, x, wt, n, eps); err != nil {
				return nil, err
			}
			return map[string][]byte{"y": f32le(y)}, nil
		},
	}, nil
}

// addRMSNormWorkload is the residual add + weighted rms_norm: a the residual stream, b the
// layer's output (both N(0,1)), w the norm weights.
func addRMSNormWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, total, err := sizes(sh, "rows", "n")
	if err != nil {
		return nil, err
	}
	rows, n, eps := d[0], d[1], float32(sh["eps"])
	if err := groupsOK(rows, "one per row"); err != nil {
		return nil, err
	}
	rng := rngOf(sh, 7)
	a, b := acts(sh, rng, total, 1, 0), acts(sh, rng, total, 1, 0)
	wt := normWeights(rng, n)
	return &Workload{
		Operands: []Operand{
			{Name: "a", Data: f32le(a)},
			{Name: "b", Data: f32le(b)},
			{Name: "w", Data: f32le(wt)},
			{Name: "sum", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
			{Name: "y", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
		},
		TwinParams: []uint32{uint32(n), math.Float32bits(eps), 1},
		Grid: func(s kernels.Schedule) [3]uint32 {
			return [3]uint32{uint32((rows + s.RowsPerGroup() - 1) / s.RowsPerGroup()), 1, 1}
		},
		Want: func() (map[string][]byte, error) {
			sum, y := make([]float32, total), make([]float32, total)
			if err := oracle.AddRMSNormF32(sum, y, a, b, wt, n, eps); err != nil {
				return nil, err
			}
			return map[string][]byte{"sum": f32le(sum), "y": f32le(y)}, nil
		},
	}, nil
}

// softmaxWorkload is the attention softmax: rows (heads x queries) of n scores (keys), q.k
// values of N(0, 10^2) times scale, with mask_rows rows of mask: 0 none, 1 one row broadcast (a
// decoded token sees every key: zeros), rows one per row (causal: query r of the last rows
// tokens sees keys up to n - rows + r; later ones are -Inf).
func softmaxWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, total, err := sizes(sh, "rows", "n")
	if err != nil {
		return nil, err
	}
	rows, n, scale, maskRows := d[0], d[1], float32(sh["scale"]), int(sh["mask_rows"])
	if err := groupsOK(rows, "one per row"); err != nil {
		return nil, err
	}
	if maskRows != 0 && maskRows != 1 && maskRows != rows {
		return nil, fmt.Errorf("mask_rows = %d: want 0 (no mask), 1 (one row broadcast) or rows (%d, one per row)", maskRows, rows)
	}
	rng := rngOf(sh, 6)
	x := acts(sh, rng, total, 10, 0)
	var mask []float32
	maskBind := []float32{0}
	if maskRows > 0 {
		mask = make([]float32, maskRows*n)
		for m := 0; m < maskRows; m++ {
			for i := 0; i < n; i++ {
				if i > n-maskRows+m {
					mask[m*n+i] = float32(math.Inf(-1))
				}
			}
		}
		maskBind = mask
	}
	return &Workload{
		Operands: []Operand{
			{Name: "x", Data: f32le(x)},
			{Name: "mask", Data: f32le(maskBind)},
			{Name: "y", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
		},
		TwinParams: []uint32{uint32(n), math.Float32bits(scale), uint32(maskRows)},
		Grid: func(s kernels.Schedule) [3]uint32 {
			return [3]uint32{uint32((rows + s.RowsPerGroup() - 1) / s.RowsPerGroup()), 1, 1}
		},
		Want: func() (map[string][]byte, error) {
			y := make([]float32, total)
			if err := oracle.SoftmaxF32(y, x, mask, n, scale); err != nil {
				return nil, err
			}
			return map[string][]byte{"y": f32le(y)}, nil
		},
	}, nil
}

// binaryWorkload is an element-wise op on two N(0,1) tensors of rows*n values, both read
// element-wise; names are the bindings (two inputs, the output) and params the twin's
// parameters for rows*n values.
func binaryWorkload(sh map[string]float64, s kernels.Schedule, seed int64, names [3]string, params func(total int) []uint32, grid func(total, T int) [3]uint32, ref func(dst, a, b []float32) error) (*Workload, error) {
	_, total, err := sizes(sh, "rows", "n")
	if err != nil {
		return nil, err
	}
	rng := rngOf(sh, seed)
	a, b := acts(sh, rng, total, 1, 0), acts(sh, rng, total, 1, 0)
	return &Workload{
		Operands: []Operand{
			{Name: names[0], Data: f32le(a)},
			{Name: names[1], Data: f32le(b)},
			{Name: names[2], Data: make([]byte, 4*total), Output: true, Elem: "f32"},
		},
		TwinParams: params(total),
		Grid:       func(s kernels.Schedule) [3]uint32 { return grid(total, s.Lanes) },
		Want: func() (map[string][]byte, error) {
			y := make([]float32, total)
			if err := ref(y, a, b); err != nil {
				return nil, err
			}
			return map[string][]byte{names[2]: f32le(y)}, nil
		},
	}, nil
}

// sameShape is the parameters n, nb of add and mul with b as long as a; sameGrid their grid.
func sameShape(total int) []uint32 { return []uint32{uint32(total), uint32(total)} }

func sameGrid(total, T int) [3]uint32 { return kernels.BroadcastGroups(total, total, T) }

// addWorkload is the residual add: y = a + b, rows x n values each.
func addWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	return binaryWorkload(sh, s, 2, [3]string{"a", "b", "y"}, sameShape, sameGrid, oracle.AddF32)
}

// mulWorkload is y = a * b, rows x n values each (the FFN's gate times up).
func mulWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	return binaryWorkload(sh, s, 10, [3]string{"a", "b", "y"}, sameShape, sameGrid, oracle.MulF32)
}

// swigluWorkload is y = Silu(x) * g, rows x n values each.
func swigluWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	return binaryWorkload(sh, s, 11, [3]string{"x", "g", "y"}, func(total int) []uint32 { return []uint32{uint32(total)} }, kernels.ElemGroups, oracle.SwigluF32)
}

// unaryWorkload is y = f(x) over rows x n values of N(0,1): silu, gelu, or scale (by the shape
// variable scale).
// argWorkload is the first pass of argmax or argmin over n logits in chunks of chunk (one
// workgroup each): at the default, a vocabulary's argmax in one workgroup, what a decode step
// reads back instead of the logits.
func argWorkload(op oracle.ArgOp) builder {
	return func(_ kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error) {
		d, n, err := sizes(sh, "n")
		if err != nil {
			return nil, err
		}
		chunk := int(sh["chunk"])
		groups := (d[0] + chunk - 1) / chunk
		if err := groupsOK(groups, fmt.Sprintf("a workgroup per %d values", chunk)); err != nil {
			return nil, err
		}
		x := acts(sh, rngOf(sh, 21), n, 1, 0)
		return &Workload{
			Operands: []Operand{
				{Name: "x", Data: f32le(x)},
				{Name: "out", Data: make([]byte, 8*groups), Output: true, Elem: "u32"},
			},
			TwinParams: []uint32{uint32(n), uint32(chunk), 0},
			Grid:       func(kernels.Schedule) [3]uint32 { return [3]uint32{uint32(groups), 1, 1} },
			Want: func() (map[string][]byte, error) {
				return map[string][]byte{"out": pairLE(op.Chunks(x, chunk, oracle.ArgWidth))}, nil
			},
		}, nil
	}
}

// topKWorkload is the first pass of top-k over n logits in chunks of chunk: at the default the
// 40 best of a vocabulary, one workgroup, what a sampling decode step reads back.
func topKWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, n, err := sizes(sh, "n")
	if err != nil {
		return nil, err
	}
	chunk, k := int(sh["chunk"]), int(sh["k"])
	groups := (d[0] + chunk - 1) / chunk
	if err := groupsOK(groups, fmt.Sprintf("a workgroup per %d values", chunk)); err != nil {
		return nil, err
	}
	x := acts(sh, rngOf(sh, 22), n, 1, 0)
	return &Workload{
		Operands: []Operand{
			{Name: "x", Data: f32le(x)},
			{Name: "out", Data: make([]byte, 8*k*groups), Output: true, Elem: "u32"},
		},
		TwinParams: []uint32{uint32(n), uint32(chunk), uint32(k), 0},
		Grid:       func(kernels.Schedule) [3]uint32 { return [3]uint32{uint32(groups), 1, 1} },
		Want: func() (map[string][]byte, error) {
			return map[string][]byte{"out": pairLE(oracle.TopKChunks(x, chunk, k))}, nil
		},
	}, nil
}

// sampleWorkload is a draw among the k best of random logits.
func sampleWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	k := int(sh["k"])
	if k < 1 || k > 4096 {
		return nil, fmt.Errorf("k = %d: want 1 to 4096 candidates", k)
	}
	cands := oracle.TopK(acts(sh, rngOf(sh, 23), 32000, 1, 0), k)
	temp, topP, u := float32(sh["temp"]), float32(sh["top_p"]), float32(sh["u"])
	return &Workload{
		Operands: []Operand{
			{Name: "cands", Data: pairLE(cands)},
			{Name: "out", Data: make([]byte, 8), Output: true, Elem: "u32"},
		},
		TwinParams: []uint32{uint32(k), math.Float32bits(temp), math.Float32bits(topP), math.Float32bits(u)},
		Grid:       func(kernels.Schedule) [3]uint32 { return [3]uint32{1, 1, 1} },
		Want: func() (map[string][]byte, error) {
			pos, err := oracle.Sample(cands, temp, topP, u)
			if err != nil {
				return nil, err
			}
			b := binary.LittleEndian.AppendUint32(nil, uint32(pos))
			return map[string][]byte{"out": binary.LittleEndian.AppendUint32(b, cands[pos].Index)}, nil
		},
	}, nil
}

// pairLE lays out pairs as the argmax cells write them: value bits, index.
func pairLE(ps []oracle.Pair) []byte {
	b := make([]byte, 0, 8*len(ps))
	for _, p := range ps {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p.Value))
		b = binary.LittleEndian.AppendUint32(b, p.Index)
	}
	return b
}

func unaryWorkload(op string, seed int64) builder {
	return func(_ kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error) {
		_, total, err := sizes(sh, "rows", "n")
		if err != nil {
			return nil, err
		}
		x := acts(sh, rngOf(sh, seed), total, 1, 0)
		params := []uint32{uint32(total)}
		var ref func(dst, x []float32) error
		switch op {
		case "silu":
			ref = oracle.SiluF32
		case "gelu":
			ref = oracle.GeluF32
		case "scale":
			sc := float32(sh["scale"])
			params = append(params, math.Float32bits(sc))
			ref = func(dst, x []float32) error { return oracle.ScaleF32(dst, x, sc) }
		default:
			return nil, fmt.Errorf("no unary op %q", op)
		}
		return &Workload{
			Operands: []Operand{
				{Name: "x", Data: f32le(x)},
				{Name: "y", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
			},
			TwinParams: params,
			Grid:       func(s kernels.Schedule) [3]uint32 { return kernels.ElemGroups(total, s.Lanes) },
			Want: func() (map[string][]byte, error) {
				y := make([]float32, total)
				if err := ref(y, x); err != nil {
					return nil, err
				}
				return map[string][]byte{"y": f32le(y)}, nil
			},
		}, nil
	}
}

// quantizeQ8_1Workload quantizes rows of n N(0,1) activations to q8_1 (the integer matvec
// path's input); n is a whole number of 32-value blocks.
func quantizeQ8_1Workload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, total, err := sizes(sh, "rows", "n")
	if err != nil {
		return nil, err
	}
	if d[1]%32 != 0 {
		return nil, fmt.Errorf("n = %d is not a whole number of 32-value q8_1 blocks", d[1])
	}
	nb := total / 32
	bpw := max(1, s.Lanes/32) // blocks per workgroup
	g := (nb + bpw - 1) / bpw
	if err := groupsOK(g, fmt.Sprintf("%d blocks of 32 per workgroup", bpw)); err != nil {
		return nil, err
	}
	x := acts(sh, rngOf(sh, 15), total, 1, 0)
	return &Workload{
		Operands: []Operand{
			{Name: "x", Data: f32le(x)},
			{Name: "y", Data: make([]byte, 36*nb), Output: true, Elem: "q8_1"},
		},
		TwinParams: []uint32{uint32(nb)},
		Grid: func(s kernels.Schedule) [3]uint32 {
			bpw := max(1, s.Lanes/32)
			return [3]uint32{uint32((nb + bpw - 1) / bpw), 1, 1}
		},
		Want: func() (map[string][]byte, error) {
			y := make([]byte, 36*nb)
			if err := oracle.QuantizeQ8_1(x, y); err != nil {
				return nil, err
			}
			return map[string][]byte{"y": y}, nil
		},
	}, nil
}

// getRowsWorkload gathers rows rows (random ids, as token ids into an embedding matrix) of n
// values from a matrix of src_rows rows of the cell's type (kernels.WeightRows); the type's
// tables are operands too.
func getRowsWorkload(c kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	t := c.Type
	d, total, err := sizes(sh, "rows", "n")
	if err != nil {
		return nil, err
	}
	rows, n, srcRows := d[0], d[1], int(sh["src_rows"])
	if _, _, err := sizes(sh, "src_rows", "n"); err != nil {
		return nil, err
	}
	if _, err := oracle.RowSize(t, n); err != nil {
		return nil, err
	}
	gx := (n + s.Lanes - 1) / s.Lanes
	if err := groupsOK(gx, fmt.Sprintf("n/%d", s.Lanes)); err != nil {
		return nil, err
	}
	if err := groupsOK(rows, "one per gathered row"); err != nil {
		return nil, err
	}
	wb, err := kernels.WeightRows(t, srcRows, n, seedOf(sh, 5))
	if err != nil {
		return nil, err
	}
	rng := rngOf(sh, 5)
	ids := make([]int32, rows)
	for i := range ids {
		ids[i] = int32(rng.Intn(srcRows))
	}
	names, tables, err := kernels.Tables(t)
	if err != nil {
		return nil, err
	}
	ops := []Operand{
		{Name: "w", Data: kernels.PadWords(wb)},
		{Name: "ids", Data: i32le(ids)},
		{Name: "dst", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
	}
	for i, name := range names {
		ops = append(ops, Operand{Name: name, Data: tables[i]})
	}
	return &Workload{
		Operands:   ops,
		TwinParams: []uint32{uint32(n)},
		Grid: func(s kernels.Schedule) [3]uint32 {
			return [3]uint32{uint32((n + s.Lanes - 1) / s.Lanes), uint32(rows), 1}
		},
		Want: func() (map[string][]byte, error) {
			y := make([]float32, total)
			if err := oracle.GetRows(t, wb, n, ids, y); err != nil {
				return nil, err
			}
			return map[string][]byte{"dst": f32le(y)}, nil
		},
	}, nil
}

// matvecWorkload is y = W x for rows rows of n values of type t (kernels.WeightRows: ggml's input
// kinds quantized by the reference quantizer) and x of N(0,1) values; on the integer path (q8)
// the operand a is x quantized to the type's activation format. The type's tables are operands
// too, named as the twin binds them.
func matvecWorkload(t oracle.Type, q8 bool, sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, _, err := sizes(sh, "rows", "n")
	if err != nil {
		return nil, err
	}
	rows, n := d[0], d[1]
	if _, err := oracle.RowSize(t, n); err != nil {
		return nil, err
	}
	if err := groupsOK(rows, "one per row"); err != nil {
		return nil, err
	}
	var wb []byte
	var x []float32
	if t == oracle.F32 {
		// The f32 workload as it has been since the first A/B benchmark (seed 3: w ~ N(0, 0.01),
		// x ~ N(0, 1)), so measurements stay comparable.
		rng := rngOf(sh, 3)
		wb = f32le(randF32(rng, rows*n, 0.1, 0))
		x = acts(sh, rng, n, 1, 0)
	} else {
		var err error
		if wb, err = kernels.WeightRows(t, rows, n, seedOf(sh, 3)); err != nil {
			return nil, err
		}
		x = acts(sh, rngOf(sh, 4), n, 1, 0)
	}
	xop := Operand{Name: "x", Data: f32le(x)}
	if q8 {
		act, ok := oracle.ActivationType(t)
		if !ok {
			return nil, fmt.Errorf("%s has no integer path", t)
		}
		as, err := oracle.RowSize(act, n)
		if err != nil {
			return nil, err
		}
		aq := make([]byte, as)
		if err := oracle.Quantize(act, x, aq); err != nil {
			return nil, err
		}
		xop = Operand{Name: "a", Data: kernels.PadWords(aq)}
	}
	names, tables, err := kernels.Tables(t)
	if err != nil {
		return nil, err
	}
	ops := []Operand{{Name: "w", Data: kernels.PadWords(wb)}, xop, {Name: "y", Data: make([]byte, 4*rows), Output: true, Elem: "f32"}}
	for i, name := range names {
		ops = append(ops, Operand{Name: name, Data: tables[i]})
	}
	return &Workload{
		Operands:   ops,
		TwinParams: []uint32{uint32(n)},
		Grid: func(s kernels.Schedule) [3]uint32 {
			return [3]uint32{uint32((rows + s.RowsPerGroup() - 1) / s.RowsPerGroup()), 1, 1}
		},
		Want: func() (map[string][]byte, error) {
			y := make([]float32, rows)
			mv := oracle.MatVec
			if q8 {
				mv = oracle.MatVecQ8
			}
			if err := mv(t, wb, x, y); err != nil {
				return nil, err
			}
			return map[string][]byte{"y": f32le(y)}, nil
		},
	}, nil
}

// ropePositions returns the positions of a batch of tokens decoded together: one per sequence,
// each somewhere in a context of 8192.
func ropePositions(rng *rand.Rand, tokens int) []int32 {
	pos := make([]int32, tokens)
	for i := range pos {
		pos[i] = int32(rng.Intn(8192))
	}
	return pos
}

// ropeWorkload rotates tokens x heads heads of head_dim N(0,1) values (queries or keys), every
// value of a head rotated (n_dims = head_dim, less one when head_dim is odd).
func ropeWorkload(mode oracle.RopeMode) builder {
	return func(_ kernels.Cell, sh map[string]float64, s kernels.Schedule) (*Workload, error) {
		d, total, err := sizes(sh, "tokens", "heads", "head_dim")
		if err != nil {
			return nil, err
		}
		tokens, heads, headDim := d[0], d[1], d[2]
		p := oracle.RopeParams{HeadDim: headDim, NDims: headDim &^ 1, Base: float32(sh["base"]), Mode: mode}
		if p.NDims == 0 {
			return nil, fmt.Errorf("head_dim = 1: rope needs a pair of values")
		}
		rows := tokens * heads
		rng := rngOf(sh, 8)
		x := acts(sh, rng, total, 1, 0)
		pos := ropePositions(rng, tokens)
		return &Workload{
			Operands: []Operand{
				{Name: "x", Data: f32le(x)},
				{Name: "pos", Data: i32le(pos)},
				{Name: "y", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
			},
			TwinParams: []uint32{uint32(headDim), uint32(p.NDims), uint32(heads), uint32(rows), math.Float32bits(p.Base)},
			Grid:       func(s kernels.Schedule) [3]uint32 { return kernels.ElemGroups(rows*((headDim+1)/2), s.Lanes) },
			Want: func() (map[string][]byte, error) {
				y := make([]float32, total)
				if err := oracle.RopeF32(y, x, pos, p); err != nil {
					return nil, err
				}
				return map[string][]byte{"y": f32le(y)}, nil
			},
		}, nil
	}
}

// rmsNormRopeWorkload is the QK-norm of Qwen3-style attention: each head of tokens x heads heads
// of head_dim N(0,1) values rms-normalized with weights, then rotated (n_dims = head_dim, less
// one when odd) in mode.
func rmsNormRopeWorkload(sh map[string]float64, s kernels.Schedule) (*Workload, error) {
	d, total, err := sizes(sh, "tokens", "heads", "head_dim")
	if err != nil {
		return nil, err
	}
	tokens, heads, headDim, eps := d[0], d[1], d[2], float32(sh["eps"])
	p := oracle.RopeParams{HeadDim: headDim, NDims: headDim &^ 1, Base: float32(sh["base"]), Mode: oracle.RopeMode(sh["mode"])}
	if p.NDims == 0 {
		return nil, fmt.Errorf("head_dim = 1: rope needs a pair of values")
	}
	if err := groupsOK(tokens*heads, "one per head"); err != nil {
		return nil, err
	}
	rng := rngOf(sh, 9)
	x := acts(sh, rng, total, 1, 0)
	pos := ropePositions(rng, tokens)
	wt := normWeights(rng, headDim)
	return &Workload{
		Operands: []Operand{
			{Name: "x", Data: f32le(x)},
			{Name: "pos", Data: i32le(pos)},
			{Name: "w", Data: f32le(wt)},
			{Name: "y", Data: make([]byte, 4*total), Output: true, Elem: "f32"},
		},
		TwinParams: []uint32{uint32(headDim), uint32(p.NDims), uint32(heads), math.Float32bits(p.Base), math.Float32bits(eps), 1, uint32(p.Mode)},
		Grid:       func(s kernels.Schedule) [3]uint32 { return [3]uint32{uint32(tokens * heads), 1, 1} },
		Want: func() (map[string][]byte, error) {
			normed := make([]float32, total)
			if err := oracle.RMSNormF32(normed, x, wt, headDim, eps); err != nil {
				return nil, err
			}
			y := make([]float32, total)
			if err := oracle.RopeF32(y, normed, pos, p); err != nil {
				return nil, err
			}
			return map[string][]byte{"y": f32le(y)}, nil
		},
	}, nil
}

// ShortShape writes shape sh of op as ParseShape reads it back, short: the op's primary
// variables joined by "x" ("4096x4096" for matvec), then any other variable as ",name=value".
func ShortShape(op string, sh map[string]float64) string {
	primary := ShapeVars(op)
	var dims []string
	rest := map[string]float64{}
	for k, v := range sh {
		rest[k] = v
	}
	for _, k := range primary {
		v, ok := sh[k]
		if !ok {
			return ShapeString(sh)
		}
		dims = append(dims, strconv.FormatFloat(v, 'g', -1, 64))
		delete(rest, k)
	}
	out := strings.Join(dims, "x")
	if len(rest) > 0 {
		if out != "" {
			out += ","
		}
		out += ShapeString(rest)
	}
	return out
}
