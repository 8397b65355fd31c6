package native_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/backends/native"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/internal/testmode"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
)

// available skips the test, saying why, on a machine without a C compiler.
func available(t testing.TB) {
	t.Helper()
	if err := native.Available(); err != nil {
		t.Skipf("native CPU code unavailable: %v", err)
	}
}

func compileDSL(t testing.TB, k *dsl.Kernel) *native.Program {
	t.Helper()
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	p, err := native.Compile(ik)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fill returns n random elements of type t with the special values of f32 among them, as
// backends/cpu's differential test makes them; loop bounds (small) stay short.
func fill(r *rand.Rand, t ir.Type, n int, small bool) []byte {
	b := make([]byte, n*t.Stride())
	specials := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 1, 0x00800000, 0x7f7fffff, 0xcf000000, 0x4f000000, 0x4f800000, 0xbf800000, 0x3f000000}
	for i := 0; i+4 <= len(b); i += 4 {
		var v uint32
		switch r.IntN(4) {
		case 0:
			v = specials[r.IntN(len(specials))]
		case 1:
			v = math.Float32bits(float32(r.NormFloat64() * 1e3))
		case 2:
			v = uint32(int32(r.IntN(41) - 20))
		default:
			v = r.Uint32()
		}
		if t.Scalar == ir.I32 && small {
			v = uint32(int32(r.IntN(2100) - 50))
		}
		binary.LittleEndian.PutUint32(b[i:], v)
	}
	return b
}

// firstDiff is the first element where a and b differ (-1: none); f32 and f16 NaNs are equal
// (NaN payloads are not part of the contract).
func firstDiff(a, b []byte, t ir.Type) int {
	s := t.Stride()
	for e := 0; e*s < len(a); e++ {
		x, y := a[e*s:min(len(a), e*s+s)], b[e*s:min(len(b), e*s+s)]
		if string(x) == string(y) {
			continue
		}
		if t.Scalar == ir.F32 || t.Scalar == ir.F16 {
			w := 4
			if t.Scalar == ir.F16 {
				w = 2
			}
			same := true
			for o := 0; o+w <= len(x); o += w {
				var u, v uint32
				if w == 4 {
					u, v = binary.LittleEndian.Uint32(x[o:]), binary.LittleEndian.Uint32(y[o:])
					same = same && (u == v || u&0x7f800000 == 0x7f800000 && u&0x7fffff != 0 && v&0x7f800000 == 0x7f800000 && v&0x7fffff != 0)
				} else {
					u, v = uint32(binary.LittleEndian.Uint16(x[o:])), uint32(binary.LittleEndian.Uint16(y[o:]))
					same = same && (u == v || u&0x7c00 == 0x7c00 && u&0x3ff != 0 && v&0x7c00 == 0x7c00 && v&0x3ff != 0)
				}
			}
			if same {
				continue
			}
		}
		return e
	}
	return -1
}

// diffCases are the hand-built kernels of internal/irtest (every op, builtin, memory space,
// element type and control-flow shape) compared with the Go executor, and the buffers compared
// (nil: all, empty: none, the kernel must only run to its end). Where two invocations of one
// workgroup store one element without a barrier (invocation g writes out[g] and out[g+1]), the
// executor's lockstep leaves one invocation's value and the native code, which runs a
// workgroup of more than native.VL invocations vector after vector between barriers, may leave
// the other's: such a race is no promise of the contract (see backends/cpu), so those kernels
// only run to their end here; TestRandomKernels compares kernels of one vector, which are the
// executor's model exactly, and the conformance suite every cell.
var diffCases = map[string][]string{
	"arith_f32": nil, "arith_vec2_f32": nil, "arith_vec3_f32": nil, "arith_vec4_f32": nil,
	"arith_i32": {}, "arith_u32": {}, "arith_vec2_i32": {}, "arith_vec3_u32": {}, "arith_vec4_i32": {}, "arith_vec4_u32": {}, "arith_f16": {},
	"f64": {}, "convert_bitcast": {}, "bool_ops": {}, "narrow_storage": {}, "names_and_consts": {},
	"builtins": nil, "builtins_2d": nil,
	"memory_spaces": {"ro", "wo", "rw", "v4"},
	"atomics":       {},
	"dot_shuffle":   nil, "dot_shuffle_wg48": nil, "dot_shuffle_wg16": nil,
	"cf_nested_if": nil, "cf_loops": nil, "cf_terminating_branches": nil,
	"cf_return_in_continuing": {},
	"barrier_uniform_loop":    nil,
}

// localIndexed are the diffCases whose invocations write the elements of their local index (two
// workgroups would race on every element).
var localIndexed = map[string]bool{"builtins": true, "builtins_2d": true, "barrier_uniform_loop": true}

// TestDifferentialExecutor runs the hand-built kernels of internal/irtest and the workgroup
// reductions (lowered for native.Caps) as native code and on the Go executor, whose lockstep
// model the native code compiles, on the same random inputs, and compares the bytes: the
// results the IR leaves to the backends (x/0, float to int out of range, the packed dot) are the
// same rules on both. Kernels with atomics must run to their end on both.
func TestDifferentialExecutor(t *testing.T) {
	available(t)
	var ks []*ir.Kernel
	for _, c := range irtest.Cases {
		if _, ok := diffCases[c.Name]; !ok {
			continue
		}
		k, err := c.Kernel()
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	if len(ks) != len(diffCases) {
		t.Fatalf("%d of the %d cases found in irtest.Cases", len(ks), len(diffCases))
	}
	reds, err := irtest.Reductions()
	if err != nil {
		t.Fatal(err)
	}
	ks = append(ks, reds...)
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			low, err := lower.Run(k, native.Caps)
			if err != nil {
				t.Fatal(err)
			}
			np, err := native.CompileLowered(low)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := cpu.CompileLoweredFor(low, native.VL)
			if err != nil {
				t.Fatalf("the executor does not take the kernel lowered for native.Caps: %v", err)
			}
			np, cp = np.WithWorkers(1), cp.WithWorkers(1)
			r := rand.New(rand.NewPCG(7, uint64(len(k.Name))))
			for trial := 0; trial < 3; trial++ {
				var bufs [][]byte
				for _, b := range low.Buffers {
					bufs = append(bufs, fill(r, b.Elem, 8192, strings.HasPrefix(k.Name, "cf_")))
				}
				params := make([]uint32, len(low.Params))
				for i := range params {
					params[i] = uint32(r.IntN(7))
					if low.Params[i].Type == ir.TF32 {
						params[i] = math.Float32bits(float32(r.IntN(7)) - 2.5)
					}
				}
				groups := [3]uint32{2, 1, 1}
				if localIndexed[k.Name] {
					groups[0] = 1
				}
				want := make([][]byte, len(bufs))
				got := make([][]byte, len(bufs))
				for i, b := range bufs {
					want[i] = append([]byte(nil), b...)
					got[i] = append([]byte(nil), b...)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				errC := cp.RunContext(ctx, want, params, groups)
				errN := np.RunContext(ctx, got, params, groups)
				cancel()
				if errC != nil || errN != nil {
					t.Fatalf("trial %d: executor: %v; native: %v", trial, errC, errN)
				}
				only := diffCases[k.Name]
				for i, b := range low.Buffers {
					if only != nil && !contains(only, b.Name) {
						continue
					}
					if e := firstDiff(got[i], want[i], b.Elem); e >= 0 {
						s := b.Elem.Stride()
						t.Errorf("trial %d: buffer %s element %d: native %x, executor %x", trial, b.Name, e, got[i][e*s:min(len(got[i]), e*s+s)], want[i][e*s:min(len(want[i]), e*s+s)])
					}
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRandomKernels builds and runs random kernels (internal/irtest: every value op on scalars
// and vectors, memory of every space, atomics, shuffles, nested control flow with break,
// continue and return, odd constants and names) on random inputs. A run may end, go out of
// bounds (an *OutOfBoundsError naming a Go line) or loop until its deadline; it must never fail
// otherwise. Kernels of one vector (up to native.VL invocations), run as one workgroup on one
// thread, are the executor's lockstep model exactly: where both end, every byte must agree.
func TestRandomKernels(t *testing.T) {
	available(t)
	n := 100 // about half need subgroups wider than a vector and are not this target's
	if testmode.Full() {
		n = 400
	}
	ended, oob, timeouts, compared, narrow := 0, 0, 0, 0, 0
	for seed := int64(0); seed < int64(n); seed++ {
		k, err := irtest.Random(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		low, err := lower.Run(k, native.Caps)
		if err != nil && strings.Contains(err.Error(), "needs subgroups of at least") {
			narrow++ // a shuffle across more lanes than a vector holds: not a kernel for this target
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: lower: %v", seed, err)
		}
		np, err := native.CompileLowered(low)
		if err != nil {
			t.Fatalf("seed %d: compile: %v", seed, err)
		}
		r := rand.New(rand.NewPCG(uint64(seed), 9))
		bufs := make([][]byte, len(low.Buffers))
		for i, b := range low.Buffers {
			bufs[i] = make([]byte, b.Elem.Stride()*(1+r.IntN(300)))
			for j := range bufs[i] {
				bufs[i][j] = byte(r.Uint32())
			}
		}
		params := make([]uint32, len(low.Params))
		for i := range params {
			params[i] = r.Uint32() % 50
		}
		one := low.Lanes() <= native.VL
		groups := [3]uint32{uint32(1 + r.IntN(3)), 1, 1}
		if one {
			groups[0] = 1
			np = np.WithWorkers(1)
		}
		got := make([][]byte, len(bufs))
		for i, b := range bufs {
			got[i] = append([]byte(nil), b...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err = np.RunContext(ctx, got, params, groups)
		cancel()
		var o *native.OutOfBoundsError
		switch {
		case err == nil:
			ended++
		case errors.As(err, &o):
			oob++
			if o.Pos.Line == 0 || !strings.Contains(err.Error(), ".go:") {
				t.Errorf("seed %d: out of bounds without a source line: %v", seed, err)
			}
		case errors.Is(err, context.DeadlineExceeded):
			timeouts++
		default:
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !one || err != nil {
			continue
		}
		cp, err := cpu.CompileLoweredFor(low, native.VL)
		if err != nil {
			t.Fatalf("seed %d: executor: %v", seed, err)
		}
		want := make([][]byte, len(bufs))
		for i, b := range bufs {
			want[i] = append([]byte(nil), b...)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		err = cp.WithWorkers(1).RunContext(ctx, want, params, groups)
		cancel()
		if err != nil {
			t.Errorf("seed %d: native code ended, the executor: %v", seed, err)
			continue
		}
		compared++
		for i, b := range low.Buffers {
			if e := firstDiff(got[i], want[i], b.Elem); e >= 0 {
				t.Errorf("seed %d: buffer %s element %d differs from the executor's", seed, b.Name, e)
			}
		}
	}
	t.Logf("%d kernels: %d ended, %d out of bounds, %d still running at their deadline; %d compared with the executor; %d need subgroups wider than native.VL", n, ended, oob, timeouts, compared, narrow)
	if compared == 0 {
		t.Error("no random kernel was compared with the executor")
	}
}

// TestOutOfBounds: an access past a buffer is not made, stops the dispatch and names the Go line,
// the array, the index, the workgroup and the invocation; of several workgroups that fault, the
// first in dispatch order.
func TestOutOfBounds(t *testing.T) {
	available(t)
	k := dsl.New("oob", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	g := k.GlobalID(dsl.X)
	y.Store(g, x.Load(g.Add(3))) // the load of the last invocations is out of bounds
	line := callerLine() - 1
	p := compileDSL(t, k)
	xs := make([]byte, 4*256)
	ys := make([]byte, 4*256)
	err := p.Run([][]byte{xs, ys}, nil, [3]uint32{4, 1, 1})
	var o *native.OutOfBoundsError
	if !errors.As(err, &o) {
		t.Fatalf("got %v, want an *OutOfBoundsError", err)
	}
	want := "native/native_test.go:" + itoa(line) + ": load x[256] outside its 256 elements"
	if o.Site() != want || o.Workgroup != [3]uint32{3, 0, 0} || o.Invocation != 61 || o.Index != 256 {
		t.Errorf("got %q at workgroup %v invocation %d, want %q at workgroup [3 0 0] invocation 61", o.Site(), o.Workgroup, o.Invocation, want)
	}
}

func callerLine() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestCancel: a workgroup that never ends stops when the context is done.
func TestCancel(t *testing.T) {
	available(t)
	k := dsl.New("endless", 16)
	y := k.Buffer("y", dsl.U32, dsl.ReadWrite)
	i := k.Var("i", uint32(0))
	k.While(func() dsl.Value { return y.Load(0).Eq(0) }, func() { i.Set(i.Get().Add(1)) })
	y.Store(k.LocalIndex().Add(1), i.Get())
	p := compileDSL(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.RunContext(ctx, [][]byte{make([]byte, 4*64)}, nil, [3]uint32{2, 1, 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopped after %v", d)
	}
}

// TestUnavailable: without a C compiler the backend says why, and Compile fails with that.
func TestUnavailable(t *testing.T) {
	t.Setenv(native.CompilerEnv, filepath.Join(t.TempDir(), "no-such-cc"))
	err := native.Available()
	if !errors.Is(err, native.ErrUnavailable) || !strings.HasPrefix(err.Error(), "unavailable:") || !strings.Contains(err.Error(), "no-such-cc") {
		t.Fatalf("Available: %v", err)
	}
	k := dsl.New("nothing", 16)
	k.Buffer("y", dsl.U32, dsl.Write).Store(k.LocalIndex(), k.LocalIndex())
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := native.Compile(ik); !errors.Is(err, native.ErrUnavailable) {
		t.Fatalf("Compile: %v", err)
	}
}

// TestBuildCached: the second build of a kernel finds the shared object built.
func TestBuildCached(t *testing.T) {
	available(t)
	t.Setenv("ONESOURCE_CACHE", t.TempDir())
	k := dsl.New("cached", 32)
	y := k.Buffer("y", dsl.U32, dsl.Write)
	y.Store(k.GlobalID(dsl.X), k.GlobalID(dsl.X).Mul(3))
	b0, c0 := native.BuildStats()
	p1 := compileDSL(t, k)
	b1, c1 := native.BuildStats()
	p2 := compileDSL(t, k)
	b2, c2 := native.BuildStats()
	if b1 != b0+1 || c1 != c0 || b2 != b1 || c2 != c1+1 || p1.Library() != p2.Library() {
		t.Errorf("builds %d %d %d, found built %d %d %d; libraries %s, %s", b0, b1, b2, c0, c1, c2, p1.Library(), p2.Library())
	}
	ys := make([]byte, 4*64)
	if err := p2.Run([][]byte{ys}, nil, [3]uint32{2, 1, 1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		if v := binary.LittleEndian.Uint32(ys[4*i:]); v != uint32(3*i) {
			t.Fatalf("y[%d] = %d, want %d", i, v, 3*i)
		}
	}
}

// TestWarningFree compiles the C of the cells (every cell at its sample schedules with
// ONESOURCE_FULL=1, else one type per op at its default schedule) and of random
// kernels with gcc and clang, -Wall -Wextra -Werror: the emitted C has no warning with either.
// A compiler that is not installed is skipped, saying so.
func TestWarningFree(t *testing.T) {
	var srcs []string
	seen := map[string]bool{}
	for _, c := range kernels.Cells() {
		if !testmode.Full() && seen[c.Op] {
			continue
		}
		seen[c.Op] = true
		scheds := c.SampleSchedules()
		if !testmode.Full() {
			scheds = []kernels.Schedule{c.DefaultScheduleFor("native", native.VL)}
		}
		for _, s := range scheds {
			k, err := c.Build(s).Build()
			if err != nil {
				t.Fatal(err)
			}
			src, err := native.Emit(k)
			if err != nil {
				t.Fatalf("%s at %s: %v", c.Name(), s, err)
			}
			srcs = append(srcs, src)
		}
	}
	for seed := int64(0); seed < 10; seed++ {
		k, err := irtest.Random(seed)
		if err != nil {
			t.Fatal(err)
		}
		src, err := native.Emit(k)
		if err != nil && strings.Contains(err.Error(), "needs subgroups of at least") {
			continue
		}
		if err != nil {
			t.Fatalf("random kernel %d: %v", seed, err)
		}
		srcs = append(srcs, src)
	}
	dir := t.TempDir()
	for _, cc := range []string{"gcc", "clang"} {
		path, err := exec.LookPath(cc)
		if err != nil {
			if path, err = exec.LookPath(cc + "-16"); err != nil {
				t.Logf("%s is not installed: not checked", cc)
				continue
			}
		}
		t.Run(cc, func(t *testing.T) {
			for i, src := range srcs {
				f := filepath.Join(dir, "k"+itoa(i)+".c")
				if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				var args []string
				for _, a := range native.Flags {
					if a != "-shared" { // -c: no link
						args = append(args, a)
					}
				}
				args = append(args, "-Werror", "-c", "-o", f+".o", f)
				if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", f, err, out)
				}
			}
			t.Logf("%d kernels compiled warning-free by %s", len(srcs), path)
		})
	}
}

// TestOtherISAs builds for older x86-64 levels than this machine's (AVX2 without AVX-512, then
// plain SSE2: the C's portable paths for gathers, masks and the packed dot) and holds a quantized
// matvec on both paths and the reductions to the oracle's and the executor's bytes. It runs on
// x86-64 only.
func TestOtherISAs(t *testing.T) {
	available(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("x86-64 levels only")
	}
	saved := native.Flags
	defer func() { native.Flags = saved }()
	for _, march := range []string{"-march=x86-64-v3", "-march=x86-64"} {
		t.Run(march, func(t *testing.T) {
			native.Flags = nil
			for _, f := range saved {
				if strings.HasPrefix(f, "-march=") {
					f = march
				}
				native.Flags = append(native.Flags, f)
			}
			for _, name := range []string{"matvec/q4_K", "matvec_q8/q4_0", "rms_norm/f32", "softmax/f32"} {
				op, typ, _ := strings.Cut(name, "/")
				var cell kernels.Cell
				for _, c := range kernels.Cells() {
					if c.Op == op && c.Type.String() == typ {
						cell = c
					}
				}
				s := cell.DefaultScheduleFor("native", native.VL)
				k, err := cell.Build(s).Build()
				if err != nil {
					t.Fatal(err)
				}
				p, err := native.Compile(k)
				if err != nil {
					t.Fatal(err)
				}
				cases, err := cell.Cases(s)
				if err != nil {
					t.Fatal(err)
				}
				for _, cs := range cases {
					bufs := make([][]byte, len(cs.Buffers))
					for i, b := range cs.Buffers {
						bufs[i] = append([]byte(nil), b...)
					}
					if err := p.Run(bufs, cs.Params, cs.Groups); err != nil {
						t.Fatalf("%s case %s: %v", name, cs.Name, err)
					}
					for j, o := range cs.Outputs {
						if e := firstDiff(bufs[o], cs.Want[j], ir.TF32); e >= 0 {
							t.Errorf("%s case %s: output %d element %d differs from the oracle's", name, cs.Name, j, e)
						}
					}
				}
			}
		})
	}
}
