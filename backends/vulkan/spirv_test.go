package vulkan

import (
	"slices"
	"testing"
)

func TestSPVString(t *testing.T) {
	for _, c := range []struct {
		s    string
		want []uint32
	}{
		{"", []uint32{0}},
		{"abc", []uint32{0x00636261}},
		{"abcd", []uint32{0x64636261, 0}},
		{"GLSL.std.450", []uint32{0x4c534c47, 0x6474732e, 0x3035342e, 0}},
		{"a\x00b", []uint32{0xbdbfef61, 0x62}}, // an inner nul becomes U+FFFD
	} {
		if got := spvString(c.s); !slices.Equal(got, c.want) {
			t.Errorf("spvString(%q) = %#x, want %#x", c.s, got, c.want)
		}
	}
}

func TestSPVInstEncoding(t *testing.T) {
	var w spvWords
	w.inst(spvOpCapability, uint32(spvCapShader))
	w.instStr(spvOpName, []uint32{7}, "x", 9)
	want := []uint32{2<<16 | 17, 1, 4<<16 | 5, 7, 0x78, 9}
	if !slices.Equal(w, want) {
		t.Errorf("words %#x, want %#x", []uint32(w), want)
	}
}

func TestSPVDedup(t *testing.T) {
	m := newSPVModule()
	u := m.tInt(32, false)
	if m.tInt(32, false) != u || m.tInt(32, true) == u {
		t.Error("int types not de-duplicated by width and signedness")
	}
	v := m.tVec(u, 4)
	if m.tVec(u, 4) != v || m.tVec(u, 3) == v {
		t.Error("vector types not de-duplicated")
	}
	if m.tPtr(spvSCFunction, u) != m.tPtr(spvSCFunction, u) || m.tPtr(spvSCFunction, u) == m.tPtr(spvSCWorkgroup, u) {
		t.Error("pointer types not de-duplicated by storage class")
	}
	c := m.constU32(5)
	if m.constU32(5) != c || m.constI32(5) == c {
		t.Error("constants not de-duplicated by type and value")
	}
	s := m.constSplat(v, 4, c, 5)
	if m.constSplat(v, 4, c, 5) != s || s == c {
		t.Error("vector constants not de-duplicated")
	}
	if m.constBool(true) != m.constBool(true) || m.constBool(true) == m.constBool(false) {
		t.Error("bool constants not de-duplicated")
	}
	if a := m.tStruct(u); m.tStruct(u) == a {
		t.Error("structs must not be shared (each carries its own decorations)")
	}
}
