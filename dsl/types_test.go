package dsl_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/oracle"
)

// TestTypesBuild: a kernel computing with bf16 and the narrow integers builds, each value has
// the type the conversions and operations say, and narrow values store into narrow buffers as
// themselves.
func TestTypesBuild(t *testing.T) {
	k := dsl.New("types", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	hb := k.Buffer("h", dsl.BF16, dsl.ReadWrite)
	b8 := k.Buffer("b8", dsl.I8, dsl.ReadWrite)
	sh := k.Shared("sh", dsl.BF16, 64)
	i := k.GlobalID(dsl.X)
	h := x.Load(i).BF16()
	sum := h.Add(hb.Load(i)).Mul(1.5)
	sh.Store(k.LocalIndex(), sum)
	hb.Store(i, sh.Load(k.LocalIndex()))
	s := b8.Load(i).I8()
	w := s.Mul(3).Add(-7).Shl(s).Shr(2)
	b8.Store(i, w)              // an i8 value, as itself
	b8.Store(i.Add(1), w.I32()) // an i32 value, wrapped: as before
	acc := k.Var("acc", k.Const(dsl.U16, 65535))
	acc.Set(acc.Get().Add(w.U16()))
	for _, c := range []struct {
		v    dsl.Value
		want dsl.Type
	}{
		{h, dsl.BF16}, {sum, dsl.BF16}, {s, dsl.I8}, {w, dsl.I8}, {acc.Get(), dsl.U16}, {h.F32(), dsl.F32},
		{s.U8(), dsl.U8}, {s.I16(), dsl.I16}, {h.Lt(sum), dsl.Bool}, {h.Bitcast(dsl.U16), dsl.U16},
	} {
		if c.v.Type() != c.want {
			t.Errorf("%v: type %s, want %s", c.v, c.v.Type(), c.want)
		}
	}
	if _, err := k.Build(); err != nil {
		t.Fatal(err)
	}
}

// TestTypesConstants: Go numbers given where a bf16 is expected round to nearest even (the
// oracle's F32ToBF16 is the judge); narrow constants hold their value's bits.
func TestTypesConstants(t *testing.T) {
	for _, c := range []struct {
		t    dsl.Type
		x    any
		bits uint64
	}{
		{dsl.BF16, 1.00390625, uint64(oracle.F32ToBF16(1.00390625))},          // a tie: to even (1)
		{dsl.BF16, float32(1.01171875), uint64(oracle.F32ToBF16(1.01171875))}, // a tie: to even (1.015625)
		{dsl.BF16, 3, 0x4040},
		{dsl.BF16, 1e39, 0x7f80}, // past the largest bf16
		{dsl.I8, -1, 0xff},
		{dsl.I16, -32768, 0x8000},
		{dsl.U8, 255, 0xff},
	} {
		k := dsl.New("c", 1)
		v := k.Const(c.t, c.x)
		if v.IR().Aux != c.bits || v.Type() != c.t {
			t.Errorf("Const(%s, %v) = %#x of %s, want %#x", c.t, c.x, v.IR().Aux, v.Type(), c.bits)
		}
		if _, err := k.Build(); err != nil {
			t.Errorf("Const(%s, %v): %v", c.t, c.x, err)
		}
	}
}

// TestTypesErrors: each misuse of the new types is an error naming the line that made it.
func TestTypesErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		want string
		bad  func(k *dsl.Kernel, f, i, h, s dsl.Value, v4 dsl.Value, b8, u8 dsl.Array) int
	}{
		{"vector to bf16", "BF16: vec4<f32> is a vector", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = v4.BF16()
			return l
		}},
		{"mixed widths", "mismatched types i8 and i16", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = s.Add(s.I16())
			return l
		}},
		{"constant out of range", "cannot use 300 (int) as i8", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = s.Add(300)
			return l
		}},
		{"bf16 with f32", "mismatched types bf16 and f32", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = h.Mul(f)
			return l
		}},
		{"f16 bitcast", "Bitcast: f16 to bf16 is not supported", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = f.F16().Bitcast(dsl.BF16)
			return l
		}},
		{"i8 into u8", "storing i8 into u8 of u8", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			u8.Store(i, s)
			return l
		}},
		{"negate unsigned", "needs a signed number, got u8", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = s.U8().Neg()
			return l
		}},
		{"reduce narrow", "reduces an f32, i32 or u32 scalar, got i8", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = k.ReduceSum(s)
			return l
		}},
		{"shuffle bf16", "shuffles a 32-bit scalar", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = h.ShuffleXor(1)
			return l
		}},
		{"atomic on bf16", "atomics need", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			hb := k.Buffer("hb", dsl.BF16, dsl.ReadWrite)
			l := line() + 1
			_ = hb.AtomicAdd(i, h)
			return l
		}},
		{"vector of i8", "Vec: i8 values are scalars only", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = k.Vec(s, s)
			return l
		}},
		{"lane sum of bools", "LaneSum: needs numbers", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = v4.Lt(v4).LaneSum()
			return l
		}},
		{"dot of mismatched", "mismatched types vec4<f32> and vec2<f32>", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = v4.Dot(k.Splat(f, 2))
			return l
		}},
		{"splat of a vector", "Splat: needs a scalar", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = k.Splat(v4, 4)
			return l
		}},
		{"splat of bf16", "Splat: needs a scalar of this kernel that vectors hold, got bf16", func(k *dsl.Kernel, f, i, h, s, v4 dsl.Value, b8, u8 dsl.Array) int {
			l := line() + 1
			_ = k.Splat(h, 2)
			return l
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := dsl.New("bad", 64)
			x := k.Buffer("x", dsl.F32, dsl.Read)
			v := k.Buffer("v", dsl.Vec(dsl.F32, 4), dsl.Read)
			b8 := k.Buffer("b8", dsl.I8, dsl.ReadWrite)
			u8 := k.Buffer("u8", dsl.U8, dsl.ReadWrite)
			i := k.GlobalID(dsl.X)
			f := x.Load(i)
			wantLine := c.bad(k, f, i, f.BF16(), b8.Load(i).I8(), v.Load(i), b8, u8)
			_, err := k.Build()
			if err == nil {
				t.Fatalf("Build succeeded, want an error containing %q", c.want)
			}
			var e *ir.Error
			if !errors.As(err, &e) || filepath.Base(e.Pos.File) != "types_test.go" || e.Pos.Line != wantLine {
				t.Errorf("error %v is not at types_test.go:%d", err, wantLine)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

// TestLaneOpsOrder: LaneSum adds a vec4's lanes as (l0 + l1) + (l2 + l3), Dot multiplies lane by
// lane first, and a vec3 sums as (l0 + l1) + l2: the fixed orders the doc comments promise.
func TestLaneOpsOrder(t *testing.T) {
	k := dsl.New("lanes", 64)
	v := k.Buffer("v", dsl.Vec(dsl.F32, 4), dsl.Read)
	w := k.Buffer("w", dsl.Vec(dsl.F32, 3), dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	a, b := v.Load(i), v.Load(i.Add(1))
	sum, dot, sum3 := a.LaneSum(), a.Dot(b), w.Load(i).LaneSum()
	y.Store(i, sum.Add(dot).Add(sum3))
	if _, err := k.Build(); err != nil {
		t.Fatal(err)
	}
	// lanes returns the lane indices an add tree combines, in order (-1 for a non-extract leaf).
	var lanes func(in *ir.Inst) []int
	lanes = func(in *ir.Inst) []int {
		switch in.Op {
		case ir.OpExtract:
			return []int{int(in.Aux)}
		case ir.OpAdd:
			return append(lanes(in.Args[0]), lanes(in.Args[1])...)
		case ir.OpMul:
			return []int{-1}
		}
		return []int{-2}
	}
	top := sum.IR()
	if top.Op != ir.OpAdd || top.Args[0].Op != ir.OpAdd || top.Args[1].Op != ir.OpAdd {
		t.Fatalf("LaneSum of a vec4 is not (l0 + l1) + (l2 + l3): %v", top)
	}
	if got := lanes(top); len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
		t.Errorf("LaneSum combines lanes %v, want [0 1 2 3]", got)
	}
	d := dot.IR()
	if d.Args[0].Op != ir.OpAdd || d.Args[0].Args[0].Op != ir.OpExtract || d.Args[0].Args[0].Args[0].Op != ir.OpMul {
		t.Errorf("Dot is not the lane sum of the lane-wise product")
	}
	s3 := sum3.IR()
	if s3.Args[0].Op != ir.OpAdd || s3.Args[1].Op != ir.OpExtract || s3.Args[1].Aux != 2 {
		t.Errorf("LaneSum of a vec3 is not (l0 + l1) + l2")
	}
}
