package cuda_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// compileAll compiles src with clang for every architecture, and with nvcc where installed.
// A missing clang skips the test; a missing nvcc is logged once.
func compileAll(t *testing.T, name, src string) { compileFor(t, name, src, cuda.Archs...) }

func compileFor(t *testing.T, name, src string, archs ...string) {
	t.Helper()
	for _, arch := range archs {
		r, err := cuda.CompileClang(src, arch)
		if errors.Is(err, cfamily.ErrNoTool) {
			t.Skipf("clang not installed: %v", err)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, cfamily.Numbered(src))
		}
		checkPTX(t, name, arch, string(r.Output))
		r, err = cuda.CompileNVCC(src, arch)
		if errors.Is(err, cfamily.ErrNoTool) {
			nvccMissing.Do(func() { t.Logf("nvcc not installed, CUDA not compiled with nvcc: %v", err) })
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, cfamily.Numbered(src))
		}
		checkPTX(t, name, arch, string(r.Output))
	}
}

var nvccMissing onceLog

type onceLog struct{ done bool }

func (o *onceLog) Do(f func()) {
	if !o.done {
		o.done = true
		f()
	}
}

var fmaRE = regexp.MustCompile(`\b(fma|mad)\.[a-z0-9.]*f(16|32|64)\b`)

// checkPTX checks the numeric contract in PTX: no fused multiply-add, and every float
// add/sub/mul carries an explicit rounding mode (so ptxas cannot contract it).
func checkPTX(t *testing.T, name, arch, ptx string) {
	t.Helper()
	if !strings.Contains(ptx, ".target "+arch) {
		t.Errorf("%s: PTX is not for %s", name, arch)
	}
	for _, line := range strings.Split(ptx, "\n") {
		l := strings.TrimSpace(line)
		if fmaRE.MatchString(l) {
			t.Errorf("%s (%s): fused multiply-add in PTX: %s", name, arch, l)
		}
		for _, op := range []string{"add", "sub", "mul"} {
			for _, w := range []string{"f32", "f64"} {
				if strings.HasPrefix(l, op+"."+w+" ") || strings.HasPrefix(l, op+".ftz."+w+" ") {
					t.Errorf("%s (%s): float %s without explicit rounding (contractible): %s", name, arch, op, l)
				}
			}
		}
	}
}

func TestEmitExamples(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			src, err := cuda.Emit(k)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", k.Name+".cu"), src)
			again, err := cuda.Emit(k)
			if err != nil || again != src {
				t.Fatalf("emitting twice differs (err %v)", err)
			}
			compileAll(t, k.Name, src)
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
			src, err := cuda.Emit(k)
			if err != nil {
				t.Fatalf("Emit: %v\n%s", err, k)
			}
			compileAll(t, c.Name, src)
			// The printer also takes verified IR that lowering did not touch.
			raw, err := cfamily.Print(k, cuda.Dialect)
			if err != nil {
				t.Fatalf("Print: %v", err)
			}
			if raw != src {
				compileFor(t, c.Name+" (unlowered)", raw, cuda.Archs[0])
			}
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
			src, err := cuda.Emit(k)
			if err != nil {
				t.Fatal(err)
			}
			compileFor(t, k.Name, src, cuda.Archs[0])
		})
	}
}

func TestEmitErrors(t *testing.T) {
	b := irtest.New("reduce_left", 64)
	out := b.Buffer("out", ir.TF32, ir.WriteOnly)
	g := b.GID()
	r := b.Add(&ir.Inst{Op: ir.OpReduce, Type: ir.TF32, Aux: uint64(ir.ReduceSum), Args: []*ir.Inst{b.Conv(ir.TF32, g)}})
	b.St(out, g, r)
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfamily.Print(k, cuda.Dialect)
	var ie *ir.Error
	if err == nil || !errors.As(err, &ie) || ie.Pos != r.Pos || !strings.Contains(err.Error(), "lower") || !strings.Contains(err.Error(), k.Pos.String()) {
		t.Errorf("unexpanded reduction: got %v, want an error at %s naming package lower and the kernel at %s", err, r.Pos, k.Pos)
	}
	if _, err := cuda.Emit(nil); err == nil {
		t.Error("Emit(nil): no error")
	}
	bad := &ir.Kernel{Name: "float", WorkgroupSize: [3]uint32{1, 1, 1}, Body: &ir.Block{}}
	if _, err := cuda.Emit(bad); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("kernel named float: %v", err)
	}
}

// TestHeader checks the conventions other code relies on.
func TestHeader(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	src, err := cuda.Emit(ks[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Code generated by onesource from DSL kernel saxpy (saxpy.go:",
		"// Backend: cuda. Lowering target: ",
		`extern "C" __global__ void __launch_bounds__(64) saxpy(const float* x, float* y, float a, unsigned int n) {`,
		"__fmul_rn(",
		"__fadd_rn(",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("missing %q in:\n%s", want, src)
		}
	}
}
