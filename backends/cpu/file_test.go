package cpu_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

// TestFileRoundTrip: every conformance cell's kernel and every hand-built IR kernel, lowered for
// cpu.Caps, reads back from its file as the same kernel (the same IR text, and the same file
// again), with the positions as the file records them.
func TestFileRoundTrip(t *testing.T) {
	var ks []*ir.Kernel
	for _, c := range kernels.Cells() {
		k, err := c.Build(c.DefaultScheduleFor("cpu", cpu.SubgroupSize)).Build()
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	for _, c := range irtest.Cases {
		k, err := c.Kernel()
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	for _, k := range ks {
		data, err := cpu.Emit(k)
		if err != nil {
			if strings.Contains(err.Error(), "not supported by the CPU executor") {
				continue // reported by the capability tests
			}
			t.Fatalf("%s: %v", k.Name, err)
		}
		again, err := cpu.Emit(k)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("%s: a second Emit gives other bytes (%v)", k.Name, err)
		}
		back, err := cpu.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		low, _ := lower.Run(k, cpu.Caps)
		if back.String() != low.String() {
			t.Fatalf("%s: the kernel read back differs:\n%s\nwant\n%s", k.Name, back, low)
		}
		re, err := cpu.Encode(back)
		if err != nil || !bytes.Equal(re, data) {
			t.Fatalf("%s: re-encoding the kernel read back gives other bytes (%v)", k.Name, err)
		}
		if back.Pos.Line != k.Pos.Line || back.Pos.File != lower.ShortPos(k.Pos)[:strings.LastIndexByte(lower.ShortPos(k.Pos), ':')] {
			t.Fatalf("%s: position %s, want %s", k.Name, back.Pos, lower.ShortPos(k.Pos))
		}
		if _, err := cpu.Load(data); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
	}
}

// TestFileRefused: files that are not the executor's, or not of this version, or whose
// instructions do not hold together, are errors, never a panic.
func TestFileRefused(t *testing.T) {
	k, err := irtest.Cases[0].Kernel()
	if err != nil {
		t.Fatal(err)
	}
	data, err := cpu.Emit(k)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, c := range []struct{ name, file, want string }{
		{"not json", "\x03\x00SPIR-V", "not a cpu kernel file"},
		{"other format", strings.Replace(s, cpu.FileFormat, "onesource-cpu-ir/99", 1), "regenerate"},
		{"unknown op", strings.Replace(s, `"op":"add"`, `"op":"frobnicate"`, 1), `unknown operation "frobnicate"`},
		{"unknown type", strings.Replace(s, `"type":"f32"`, `"type":"f31"`, 1), `unknown type "f31"`},
		{"forward operand", strings.Replace(s, `"args":[0`, `"args":[100000`, 1), "does not name an earlier instruction"},
		{"unknown field", strings.Replace(s, `"kernel":`, `"extra":1,"kernel":`, 1), "unknown field"},
		{"ill-typed", strings.Replace(s, `"op":"add","type":"f32"`, `"op":"add","type":"u32"`, 1), "does not verify"},
		{"truncated", s[:len(s)/2], "not a cpu kernel file"},
	} {
		if c.file == s {
			t.Fatalf("%s: the edit did not apply", c.name)
		}
		_, err := cpu.Load([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.name, err, c.want)
		}
	}
}
