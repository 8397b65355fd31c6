package ir

import "testing"

func TestStride(t *testing.T) {
	for _, c := range []struct {
		t    Type
		want int
	}{
		{TF32, 4}, {TU32, 4}, {TF16, 2}, {Type{U8, 1}, 1}, {Type{I16, 1}, 2}, {Type{Bool, 1}, 4},
		{Vec(F32, 2), 8}, {Vec(F32, 3), 16}, {Vec(U32, 4), 16}, {Vec(F16, 3), 8}, {Type{F64, 1}, 8},
	} {
		if got := c.t.Stride(); got != c.want {
			t.Errorf("%s: Stride %d, want %d", c.t, got, c.want)
		}
	}
}

func TestLenRefs(t *testing.T) {
	k := &Kernel{Buffers: []*Buffer{{Name: "a"}, {Name: "b"}, {Name: "c"}}, Body: &Block{Insts: []*Inst{
		{Op: OpLen, Type: TU32, Ref: 2},
		{Op: OpIf, Blocks: []*Block{{Insts: []*Inst{{Op: OpLen, Type: TU32, Ref: 0}, {Op: OpLen, Type: TU32, Ref: 2}}}}},
	}}}
	if got := k.LenRefs(); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Errorf("LenRefs = %v, want [0 2] (ascending, once each, nested blocks included)", got)
	}
}
