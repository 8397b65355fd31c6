package conformance

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// TestExtraShapes: for one cell of every op with a workload, the gate's extra shapes are the
// four families (odd, smallest, ragged, specials), each seeded and buildable; the specials
// shape's activations hold NaN, both infinities and subnormals; a seed's inputs are the same
// bytes every time and another seed's are not.
func TestExtraShapes(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range kernels.Cells() {
		if _, ok := opWorkloads[c.Op]; !ok || seen[c.Op] {
			continue
		}
		if c.Type != oracle.F32 && c.Type != oracle.Q4_K && c.Type != oracle.Q8_0 {
			continue
		}
		seen[c.Op] = true
		s := c.DefaultScheduleFor("vulkan", 32)
		shapes := extraShapes(c, nil, 100, s)
		if len(shapes) != 4 {
			t.Errorf("%s: %d extra shapes, want 4: %v", c.Name(), len(shapes), shapes)
			continue
		}
		for i, sh := range shapes {
			if sh["seed"] != float64(101+i) {
				t.Errorf("%s: shape %d has seed %v", c.Name(), i, sh["seed"])
			}
			w, err := NewWorkload(c.Op, c.Type.String(), sh, s)
			if err != nil {
				t.Errorf("%s at %s: %v", c.Name(), ShapeString(sh), err)
				continue
			}
			again, _ := NewWorkload(c.Op, c.Type.String(), sh, s)
			for j := range w.Operands {
				if !bytes.Equal(w.Operands[j].Data, again.Operands[j].Data) {
					t.Errorf("%s at %s: operand %s differs between two builds of one seed", c.Name(), ShapeString(sh), w.Operands[j].Name)
				}
			}
			if sh["specials"] == 1 {
				var nan, inf, sub bool
				for _, op := range w.Operands {
					if op.Output || op.Elem != "" {
						continue
					}
					for k := 0; k+4 <= len(op.Data); k += 4 {
						v := math.Float32frombits(binary.LittleEndian.Uint32(op.Data[k:]))
						nan = nan || v != v
						inf = inf || math.IsInf(float64(v), 0)
						sub = sub || v != 0 && math.Abs(float64(v)) < 0x1p-126
					}
				}
				// get_rows has no activations (weights and ids), and matvec_q8 quantizes its own.
				if !(nan && inf && sub) && c.Op != "matvec_q8" && c.Op != "get_rows" {
					t.Errorf("%s at %s: activations hold NaN %v, Inf %v, subnormals %v", c.Name(), ShapeString(sh), nan, inf, sub)
				}
			}
		}
		other := extraShapes(c, nil, 200, s)
		w1, err1 := NewWorkload(c.Op, c.Type.String(), shapes[0], s)
		w2, err2 := NewWorkload(c.Op, c.Type.String(), other[0], s)
		if err1 == nil && err2 == nil {
			same := true
			for j := range w1.Operands {
				same = same && bytes.Equal(w1.Operands[j].Data, w2.Operands[j].Data)
			}
			if same {
				t.Errorf("%s: seeds 101 and 201 give the same inputs", c.Name())
			}
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d ops checked", len(seen))
	}
}
