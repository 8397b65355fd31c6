// Package kernels is the DSL twin library: one DSL kernel per (op, type) cell of the matrix in
// DESIGN.md, each with the conformance inputs that judge it against package oracle.
//
// A cell is registered once, from the file of its op (Register in an init function), with:
//
//   - Build: the kernel builder; its Schedule argument is the schedule (lanes per workgroup),
//     so the same source specializes per backend;
//   - Cases: the op's conformance inputs for a schedule (several shapes, sizes that are not
//     multiples of the block or workgroup, zeros, extremes and special values, each type's edge
//     blocks), each with the bytes the oracle says the kernel must write.
//
// Adding an op is one file here (its kernels and cases) and one in oracle (its meaning); adding
// a type is its decoder here and its format in oracle. Package conformance runs every cell on
// every available backend and compares byte for byte.
package kernels

import (
	"fmt"
	"sort"
	"sync"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// Schedule is how a kernel is laid out on the device. Lanes is the workgroup size, the T of the
// canonical reductions (a power of two); the oracle takes the same T, so the expected bytes
// depend on it.
type Schedule struct {
	Lanes int
}

// DefaultSchedule is the schedule a backend runs a cell at unless told otherwise.
func DefaultSchedule(backend string) Schedule {
	switch backend {
	case "cuda", "hip":
		return Schedule{Lanes: 128}
	}
	return Schedule{Lanes: 64}
}

// Case is one conformance input of a cell.
type Case struct {
	Name    string
	Buffers [][]byte  // initial bytes of every binding, in binding order; outputs are zero-filled at their size
	Params  []uint32  // the kernel's 32-bit parameters in declaration order (f32 as bits)
	Groups  [3]uint32 // workgroups to dispatch
	Outputs []int     // bindings whose final bytes are compared
	Want    [][]byte  // the oracle's bytes, one per Outputs entry
	Elem    []string  // element type of each output for error reporting: "f32", "u8", ...
}

// Cell is one (op, type) of the matrix.
type Cell struct {
	Op    string
	Type  oracle.Type // the weight or data type; F32 for ops on f32 activations
	Build func(s Schedule) *dsl.Kernel
	Cases func(s Schedule) ([]Case, error)
}

// Name is "op/type", as in reports and test names.
func (c Cell) Name() string { return c.Op + "/" + c.Type.String() }

var (
	mu    sync.Mutex
	cells = map[string]Cell{}
)

// Register adds a cell; registering one (op, type) twice panics at init, a programming error.
func Register(c Cell) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := cells[c.Name()]; dup {
		panic(fmt.Sprintf("kernels: cell %s registered twice", c.Name()))
	}
	cells[c.Name()] = c
}

// Cells returns every registered cell, sorted by op then type id.
func Cells() []Cell {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Cell, 0, len(cells))
	for _, c := range cells {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Op != out[j].Op {
			return out[i].Op < out[j].Op
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// Lookup returns the cell of op and t.
func Lookup(op string, t oracle.Type) (Cell, bool) {
	mu.Lock()
	defer mu.Unlock()
	c, ok := cells[op+"/"+t.String()]
	return c, ok
}
