package kernels

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Workload is a cell's benchmark input at a named shape (Cell.Workload): what `onesource bench`,
// `tune` and `gate` feed the twin and the hand-written incumbent with, and what a manifest's
// expressions ("grid": ["rows", 1, 1], "shape": {"rows": 512}) are evaluated over.
//
// Vars lists the shape variables with their defaults, the benchmark shape; the sizes among them
// (Kind Size), in order, are the positional form of a shape ("64x4096" is rows=64,n=4096 when
// Vars lists rows then n), the first of them the outer size and the last the inner one of the
// gate's seeded extra shapes (odd: outer 3; smallest: every size 1, the inner one the least
// Case accepts; ragged: outer 5, inner one step past the default). Cells of one op share their
// variables.
//
// Case builds the input at shape sh for schedule s: sh holds every variable of Vars and two
// more, seed (0 for the benchmark's own inputs; the gate's seeded checks and its second input
// set set others: draw the random inputs from it) and specials (1: put IEEE special values,
// NaN, infinities, subnormals and -0, among the activations; 0 otherwise). The Case's Buffers
// are the initial bytes of every binding of the twin, in binding order; Want the oracle's
// bytes for each of Outputs. Only Groups may depend on s. An error says why the shape does not
// suit the op (the gate's extra shapes probe with it).
//
// Besides Vars, a manifest's expressions see what follows from the shape at the schedule: each
// parameter of the twin by its name (where no shape variable has that name), bytes_NAME (the
// byte size of operand NAME), grid_x, grid_y, grid_z (the twin's grid) and lanes (its
// workgroup size); `onesource cells -vars OP/TYPE` lists them all with their values.
type Workload struct {
	Vars []ShapeVar
	Case func(sh map[string]float64, s Schedule) (Case, error)
}

// VarKind is what values a shape variable takes.
type VarKind int

const (
	Size  VarKind = iota // a positive integer: a size (rows, n)
	Index                // a non-negative integer (a count that may be 0, a position)
	Real                 // a finite f32 value (eps, scale)
)

// String names the kind as `onesource cells -vars` prints it.
func (k VarKind) String() string {
	switch k {
	case Size:
		return "size"
	case Index:
		return "index"
	case Real:
		return "real"
	}
	return fmt.Sprintf("VarKind(%d)", int(k))
}

// ShapeVar is one shape variable of a Workload.
type ShapeVar struct {
	Name    string
	Kind    VarKind
	Default float64 // its value at the benchmark shape
	Doc     string  // what it is, for `onesource cells -vars`
}

// ReservedVars are the variable names a workload may not declare: the seeded inputs' (seed,
// specials) and those the benchmark derives from the shape (lanes, grid_x, grid_y, grid_z, and
// every bytes_ name).
var ReservedVars = []string{"seed", "specials", "lanes", "grid_x", "grid_y", "grid_z"}

// CheckValue reports whether v is a value of kind k.
func (k VarKind) CheckValue(name string, v float64) error {
	switch k {
	case Size:
		if !(v >= 1) || v != math.Trunc(v) || v > math.MaxUint32 {
			return fmt.Errorf("shape variable %s = %v must be a positive integer", name, v)
		}
	case Index:
		if !(v >= 0) || v != math.Trunc(v) || v > math.MaxUint32 {
			return fmt.Errorf("shape variable %s = %v must be a non-negative integer", name, v)
		}
	case Real:
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
			return fmt.Errorf("shape variable %s = %v must be a finite f32 value", name, v)
		}
	default:
		return fmt.Errorf("shape variable %s has an unknown kind %d", name, int(k))
	}
	return nil
}

// Check reports what is wrong with w's declaration: no Case, no size among Vars, a name that is
// empty, not an identifier, reserved (ReservedVars, bytes_*) or given twice, a default that is
// not a value of its kind.
func (w *Workload) Check() error {
	if w.Case == nil {
		return fmt.Errorf("workload: no Case (the input builder)")
	}
	seen := map[string]bool{}
	sizes := 0
	for i, v := range w.Vars {
		switch {
		case !identifier(v.Name):
			return fmt.Errorf("workload: Vars[%d]: %q is not an identifier (letters, digits, _; not first a digit)", i, v.Name)
		case seen[v.Name]:
			return fmt.Errorf("workload: Vars[%d]: %s declared twice", i, v.Name)
		case strings.HasPrefix(v.Name, "bytes_") || slices.Contains(ReservedVars, v.Name):
			return fmt.Errorf("workload: Vars[%d]: %s is reserved (%s and bytes_NAME follow from the shape)", i, v.Name, strings.Join(ReservedVars, ", "))
		}
		if err := v.Kind.CheckValue(v.Name, v.Default); err != nil {
			return fmt.Errorf("workload: Vars[%d]: default: %v", i, err)
		}
		seen[v.Name] = true
		if v.Kind == Size {
			sizes++
		}
	}
	if sizes == 0 {
		return fmt.Errorf("workload: no variable of kind Size (the positional form and the gate's extra shapes need one)")
	}
	return nil
}

// Sizes returns the names of w's Size variables in order: the positional form of a shape.
func (w *Workload) Sizes() []string {
	var out []string
	for _, v := range w.Vars {
		if v.Kind == Size {
			out = append(out, v.Name)
		}
	}
	return out
}

func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
