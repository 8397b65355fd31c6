package hip_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var logged sync.Map

// logOnce logs msg the first time it is seen in this test binary.
func logOnce(t *testing.T, msg string) {
	t.Helper()
	if _, seen := logged.LoadOrStore(msg, true); !seen {
		t.Log(msg)
	}
}

// compile compiles src for arch with clang and with hipcc. Missing tools skip (clang) or are
// logged (hipcc, a target without a device library).
func compile(t *testing.T, name, src, arch string) {
	t.Helper()
	r, err := hip.CompileClang(src, arch)
	if errors.Is(err, cfamily.ErrNoTool) {
		t.Skipf("clang for HIP unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, cfamily.Numbered(src))
	}
	logOnce(t, "validated with "+strings.SplitN(r.Label, ",", 2)[0]+" for "+arch+": "+r.Label)
	r, err = hip.CompileHIPCC(src, arch)
	if errors.Is(err, cfamily.ErrNoTool) {
		logOnce(t, "hipcc skipped for "+arch+": "+err.Error())
		return
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, cfamily.Numbered(src))
	}
	logOnce(t, "validated with "+r.Label)
}

// emitCompile emits k for every test architecture and Generic. The examples are compiled for
// every architecture with clang and hipcc; other kernels (all=false) compile the generic text
// with clang for gfx1030 and each architecture's text only where its code differs (the packed
// dot), to keep the test quick.
func emitCompile(t *testing.T, k *ir.Kernel, all bool) map[string]string {
	t.Helper()
	srcs := map[string]string{}
	for _, arch := range append([]string{hip.Generic}, hip.Archs...) {
		src, err := hip.Emit(k, arch)
		if err != nil {
			t.Fatalf("Emit %s: %v\n%s", arch, err, k)
		}
		srcs[arch] = src
		switch {
		case testing.Short() && !all:
			// -short: print only
		case all && arch != hip.Generic:
			compile(t, k.Name+" for "+arch, src, arch)
		case !all && arch == hip.Generic:
			clangOnly(t, k.Name+" generic", src, "gfx1030")
		case !all && code(src) != code(srcs[hip.Generic]):
			clangOnly(t, k.Name+" for "+arch, src, arch)
		}
	}
	return srcs
}

// code is src without its comment lines.
func code(src string) string {
	var b strings.Builder
	for _, l := range strings.Split(src, "\n") {
		if !strings.HasPrefix(l, "//") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func clangOnly(t *testing.T, name, src, arch string) {
	t.Helper()
	r, err := hip.CompileClang(src, arch)
	if errors.Is(err, cfamily.ErrNoTool) {
		t.Skipf("clang for HIP unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, cfamily.Numbered(src))
	}
	logOnce(t, "validated with "+r.Label)
}

func TestEmitExamples(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			srcs := emitCompile(t, k, true)
			golden(t, filepath.Join("testdata", k.Name+".hip"), srcs[hip.Generic])
			if again, err := hip.Emit(k, hip.Generic); err != nil || again != srcs[hip.Generic] {
				t.Fatalf("emitting twice differs (err %v)", err)
			}
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		w, g := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		i := 0
		for i < len(w) && i < len(g) && w[i] == g[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Errorf("%s differs from the emitted text at line %d (go test -update rewrites it):\nwant: %s\ngot:  %s", path, i+1, line(w), line(g))
	}
}

func TestEmitCases(t *testing.T) {
	for _, c := range irtest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			k, err := c.Kernel()
			if err != nil {
				t.Fatal(err)
			}
			emitCompile(t, k, false)
		})
	}
}

func TestEmitReductions(t *testing.T) {
	ks, err := irtest.Reductions()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			src, err := hip.Emit(k, "gfx1030")
			if err != nil {
				t.Fatal(err)
			}
			clangOnly(t, k.Name, src, "gfx1030")
		})
	}
}

// TestDotTable checks the per-architecture packed dot: the instruction each table entry names
// is in the assembly, non-saturating (no clamp), and unlisted targets unpack.
func TestDotTable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles for every table entry")
	}
	c := irtest.Cases[0]
	for _, x := range irtest.Cases {
		if x.Name == "dot_shuffle" {
			c = x
		}
	}
	k, err := c.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	dotRE := regexp.MustCompile(`v_dot4c?_i32_i?u?8`)
	archs := []string{"gfx900", "gfx1010"}
	for a := range hip.DotTable {
		archs = append(archs, a)
	}
	for _, arch := range archs {
		src, err := hip.Emit(k, arch)
		if err != nil {
			t.Fatal(err)
		}
		_, listed := hip.DotTable[arch]
		if got := strings.Contains(src, "__builtin_amdgcn_"); got != listed {
			t.Errorf("%s: packed dot builtin in text = %v, want %v", arch, got, listed)
		}
		r, err := hip.AssembleClang(src, arch)
		if errors.Is(err, cfamily.ErrNoTool) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		asm := string(r.Output)
		if got := dotRE.MatchString(asm); got != listed {
			t.Errorf("%s: dot instruction in assembly = %v, want %v", arch, got, listed)
		}
		for _, l := range strings.Split(asm, "\n") {
			if dotRE.MatchString(l) && strings.Contains(l, "clamp") {
				t.Errorf("%s: saturating dot: %s", arch, strings.TrimSpace(l))
			}
		}
	}
	if _, err := hip.Emit(k, "sm_80"); err == nil {
		t.Error("an NVIDIA architecture name was accepted")
	}
}

// TestNoContraction compiles a*b+c in f32 and f16 (nothing else that uses FMA internally) and
// checks the assembly has separate multiply and add instructions and no fused ones.
func TestNoContraction(t *testing.T) {
	b := irtest.New("mad", 64)
	in := b.Buffer("in", ir.TF32, ir.ReadOnly)
	out := b.Buffer("out", ir.TF32, ir.WriteOnly)
	g := b.GID()
	x, y, z := b.Ld(in, g), b.Ld(in, b.Bin(ir.OpAdd, g, b.U32(1))), b.Ld(in, b.Bin(ir.OpAdd, g, b.U32(2)))
	b.St(out, g, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, x, y), z))
	h := func(v *ir.Inst) *ir.Inst { return b.Conv(ir.TF16, v) }
	b.St(out, b.Bin(ir.OpAdd, g, b.U32(1)), b.Conv(ir.TF32, b.Bin(ir.OpAdd, b.Bin(ir.OpMul, h(x), h(y)), h(z))))
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	fused := regexp.MustCompile(`\bv_(pk_)?(fma|fmac|mac|mad|fma_mix|mad_mix)[a-z_]*_f(16|32)`)
	for _, arch := range hip.Archs {
		src, err := hip.Emit(k, arch)
		if err != nil {
			t.Fatal(err)
		}
		r, err := hip.AssembleClang(src, arch)
		if errors.Is(err, cfamily.ErrNoTool) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		asm := string(r.Output)
		if m := fused.FindString(asm); m != "" {
			t.Errorf("%s: fused multiply-add %s in the assembly", arch, m)
		}
		if !strings.Contains(asm, "v_mul_f32") || !strings.Contains(asm, "v_add_f32") {
			t.Errorf("%s: no separate v_mul_f32 and v_add_f32 in the assembly", arch)
		}
	}
}

func TestHeader(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	src, err := hip.Emit(ks[0], "gfx90a")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Code generated by onesource from DSL kernel saxpy (saxpy.go:",
		"// Backend: hip. Lowering target: gfx90a",
		"-ffp-contract=off",
		"#pragma clang fp contract(off)",
		`extern "C" __global__ void __launch_bounds__(64) saxpy(const float* x, float* y, float a, unsigned int n) {`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("missing %q in:\n%s", want, src)
		}
	}
}
