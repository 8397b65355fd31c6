package lower_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/q8dot"
	"github.com/onesource-go/onesource/examples/rmsnorm"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func examples() []*dsl.Kernel {
	var ks []*dsl.Kernel
	ks = append(ks, saxpy.Kernels()...)
	ks = append(ks, rmsnorm.Kernels()...)
	ks = append(ks, q8dot.Kernels()...)
	return ks
}

var targets = []struct {
	name string
	caps lower.Caps
}{
	{"portable", lower.Caps{}},
	{"sg8", lower.Caps{SubgroupSize: 8, DotI8x4: true, Float16: true}},
	{"sg32", lower.Caps{SubgroupSize: 32, DotI8x4: true, Float16: true}},
}

// TestGolden compares the text form of every example kernel, as built and as lowered for a few
// targets, with testdata/<kernel>.<target>.ir. Run with -update to rewrite them, and review the
// diff.
func TestGolden(t *testing.T) {
	for _, b := range examples() {
		k, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		check(t, k.Name+".built.ir", k.String())
		for _, tg := range targets {
			l, err := lower.Run(k, tg.caps)
			if err != nil {
				t.Fatalf("%s/%s: %v", k.Name, tg.name, err)
			}
			check(t, k.Name+"."+tg.name+".ir", l.String())
		}
		if again := k.String(); again != k.String() {
			t.Errorf("%s: text form is not stable", k.Name)
		}
	}
}

func check(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
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
		t.Errorf("%s differs from the golden file (run go test ./lower -update and review the diff):\n%s", name, got)
	}
}

func TestRunDoesNotModifyInput(t *testing.T) {
	k := rmsnorm.RMSNorm(64, dsl.Blocked).MustBuild()
	before := k.String()
	if _, err := lower.Run(k, lower.Caps{SubgroupSize: 8}); err != nil {
		t.Fatal(err)
	}
	if k.String() != before {
		t.Fatal("lower.Run modified its input kernel")
	}
}

func count(k *ir.Kernel, op ir.Op) int {
	n := 0
	ir.Walk(k.Body, func(in *ir.Inst) bool {
		if in.Op == op {
			n++
		}
		return true
	})
	return n
}

// TestReductionStages checks the shape of the expansion per subgroup size: log2(SG) shuffles,
// and shared memory only when the subgroup is smaller than the workgroup.
func TestReductionStages(t *testing.T) {
	for _, c := range []struct {
		wg, sg, shuffles, barriers int
	}{
		{64, 0, 0, 4}, {32, 0, 0, 2}, {64, 8, 3, 2}, {64, 64, 6, 0}, {64, 128, 6, 0}, {1024, 1, 0, 2*5 + 2}, {256, 8, 3, 2},
	} {
		k := dsl.New("r", c.wg)
		out := k.Buffer("out", dsl.F32, dsl.Write)
		out.Store(k.LocalIndex(), k.ReduceMax(k.LocalIndex().F32()))
		l, err := lower.Run(k.MustBuild(), lower.Caps{SubgroupSize: c.sg})
		if err != nil {
			t.Fatal(err)
		}
		if got := count(l, ir.OpShuffleXor); got != c.shuffles {
			t.Errorf("wg %d sg %d: %d shuffles, want %d", c.wg, c.sg, got, c.shuffles)
		}
		if got := count(l, ir.OpBarrier); got != c.barriers {
			t.Errorf("wg %d sg %d: %d barriers, want %d", c.wg, c.sg, got, c.barriers)
		}
		if count(l, ir.OpReduce) != 0 {
			t.Errorf("wg %d sg %d: reduction left unexpanded", c.wg, c.sg)
		}
	}
}

func TestLegalizeDot(t *testing.T) {
	k := q8dot.Dot(64).MustBuild()
	with, _ := lower.Run(k, lower.Caps{DotI8x4: true})
	without, _ := lower.Run(k, lower.Caps{})
	if count(with, ir.OpDotI8x4) != 8 || count(without, ir.OpDotI8x4) != 0 { // 8 words per block, the term emitted once
		t.Fatalf("dot legalization: %d with caps, %d without", count(with, ir.OpDotI8x4), count(without, ir.OpDotI8x4))
	}
	if !strings.Contains(without.String(), "shr") {
		t.Fatal("unpacked dot has no sign-extending shifts")
	}
}

// TestReductionRunsShareBarriers checks that adjacent reductions (a strided Canon's one per
// slot) are expanded together: four of them cost the barriers of one, and each still gets its
// own shuffles.
func TestReductionRunsShareBarriers(t *testing.T) {
	build := func(layout dsl.Layout) *ir.Kernel {
		k := dsl.New("r", 64)
		x := k.Buffer("x", dsl.F32, dsl.Read)
		out := k.Buffer("out", dsl.F32, dsl.Write)
		n := k.Param("n", dsl.U32)
		s := k.Canon(256, layout).Sum(n, func(i dsl.Value) dsl.Value { return x.Load(i) })
		out.Store(k.LocalIndex(), s)
		return k.MustBuild()
	}
	one := dsl.New("one", 64)
	o := one.Buffer("out", dsl.F32, dsl.Write)
	o.Store(one.LocalIndex(), one.ReduceSum(one.LocalIndex().F32()))
	single, err := lower.Run(one.MustBuild(), lower.Caps{SubgroupSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	strided, err := lower.Run(build(dsl.Strided), lower.Caps{SubgroupSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := count(strided, ir.OpBarrier), count(single, ir.OpBarrier); got != want {
		t.Errorf("four reductions in a run: %d barriers, one reduction has %d", got, want)
	}
	if got, want := count(strided, ir.OpShuffleXor), 4*count(single, ir.OpShuffleXor); got != want {
		t.Errorf("four reductions in a run: %d shuffles, want %d", got, want)
	}
}
