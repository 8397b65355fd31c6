package engine

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
	"github.com/onesource-go/onesource/tuning"
)

// The emulated devices as the tests name them: CUDA and HIP with Options.Emulated (host
// execution of the emitted text, level H).
const (
	emulatedCUDA = "cuda-emulated"
	emulatedHIP  = "hip-emulated"
)

// openEngine opens an engine on opts.Backend (emulatedCUDA and emulatedHIP too), or skips the
// test with the reason that device is not here (the cpu backend always is; the emulated devices
// need a C++ compiler).
func openEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	var avail error
	switch opts.Backend {
	case emulatedCUDA, emulatedHIP:
		opts.Backend, opts.Emulated = strings.TrimSuffix(opts.Backend, "-emulated"), true
		avail = host.Available(host.Options{})
	case CUDA:
		avail = cuda.Available()
	case HIP:
		avail = hip.Available()
	case Vulkan, "":
		avail = vulkan.Available()
	}
	if avail != nil {
		t.Skipf("%s: %v", opts.Backend, avail)
	}
	e, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func randF32(rng *rand.Rand, n int, scale float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * scale
	}
	return x
}

func upload(t *testing.T, e *Engine, x []float32, shape ...int) *Tensor {
	t.Helper()
	u, err := e.UploadF32(x, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func zeros(t *testing.T, e *Engine, shape ...int) *Tensor {
	t.Helper()
	u, err := e.NewTensor(oracle.F32, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// sameBits compares got with the oracle's want bit for bit.
func sameBits(t *testing.T, what string, got *Tensor, want []float32) {
	t.Helper()
	b, err := got.Read()
	if err != nil {
		t.Fatal(err)
	}
	if wb := F32Bytes(want); !bytes.Equal(b, wb) {
		g := BytesF32(b)
		for i := range want {
			if F32Bytes(g[i : i+1])[0] != wb[4*i] || g[i] != want[i] {
				t.Fatalf("%s: value %d = %v (%#x), oracle %v", what, i, g[i], F32Bytes(g[i:i+1]), want[i])
			}
		}
		t.Fatalf("%s: bytes differ from the oracle's", what)
	}
}

// backends are the engine's backends, for tests that run on each: Vulkan and cpu, CUDA and HIP
// on a GPU where there is one, and CUDA and HIP on the emulated devices.
var backends = []string{Vulkan, CPU, CUDA, HIP, emulatedCUDA, emulatedHIP}

// onEach runs test on every backend, as a subtest named by the backend.
func onEach(t *testing.T, test func(t *testing.T, backend string)) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { test(t, b) })
	}
}

// TestOpsMatchOracle runs every op of the engine once through the twins (no registry) on each
// backend and compares each output with the oracle's, byte for byte.
func TestOpsMatchOracle(t *testing.T) { onEach(t, testOpsMatchOracle) }

func testOpsMatchOracle(t *testing.T, backend string) {
	e := openEngine(t, Options{Backend: backend})
	rng := rand.New(rand.NewSource(1))
	const rows, n = 5, 96

	x := randF32(rng, rows*n, 1)
	w := randF32(rng, n, 0.3)
	xt, wt := upload(t, e, x, rows, n), upload(t, e, w, n)

	t.Run("rms_norm", func(t *testing.T) {
		for _, weighted := range []bool{true, false} {
			y := zeros(t, e, rows, n)
			var wv *Tensor
			var ww []float32
			if weighted {
				wv, ww = wt, w
			}
			if err := e.RMSNorm(y, xt, wv, 1e-6); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, rows*n)
			if err := oracle.RMSNormF32(want, x, ww, n, 1e-6); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("rms_norm weighted=%v", weighted), y, want)
		}
	})
	t.Run("matvec", func(t *testing.T) {
		for _, typ := range []oracle.Type{oracle.F32, oracle.F16, oracle.Q4_0, oracle.Q8_0, oracle.Q4_K, oracle.Q6_K, oracle.IQ4_NL, oracle.IQ2_XXS} {
			const mrows, mn = 37, 512
			wb, err := kernels.WeightRows(typ, mrows, mn, 9)
			if err != nil {
				t.Fatal(err)
			}
			W, err := e.Upload(typ, wb, mrows, mn)
			if err != nil {
				t.Fatal(err)
			}
			xv := randF32(rng, mn, 1)
			y := zeros(t, e, mrows)
			if err := e.MatVec(y, W, upload(t, e, xv, mn)); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, mrows)
			if err := oracle.MatVec(typ, wb, xv, want); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "matvec "+typ.String(), y, want)
		}
	})
	t.Run("get_rows", func(t *testing.T) {
		for _, typ := range []oracle.Type{oracle.F32, oracle.Q4_0, oracle.Q6_K, oracle.IQ2_XXS} {
			const src, gn = 11, 256
			wb, err := kernels.WeightRows(typ, src, gn, 4)
			if err != nil {
				t.Fatal(err)
			}
			W, err := e.Upload(typ, wb, src, gn)
			if err != nil {
				t.Fatal(err)
			}
			ids := []int32{3, 0, 10, 3}
			it, err := e.UploadI32(ids, len(ids))
			if err != nil {
				t.Fatal(err)
			}
			dst := zeros(t, e, len(ids), gn)
			if err := e.GetRows(dst, W, it); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, len(ids)*gn)
			if err := oracle.GetRows(typ, wb, gn, ids, want); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "get_rows "+typ.String(), dst, want)
		}
	})
	t.Run("softmax", func(t *testing.T) {
		mask := randF32(rng, n, 1)
		for _, masked := range []bool{false, true} {
			y := zeros(t, e, rows, n)
			var mt *Tensor
			var mv []float32
			if masked {
				mt, mv = upload(t, e, mask, 1, n), mask
			}
			if err := e.Softmax(y, xt, mt, 0.125); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, rows*n)
			if err := oracle.SoftmaxF32(want, x, mv, n, 0.125); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("softmax masked=%v", masked), y, want)
		}
	})
	t.Run("rope", func(t *testing.T) {
		const tokens, heads, hd = 3, 4, 64
		q := randF32(rng, tokens*heads*hd, 1)
		pos := []int32{0, 17, 4095}
		pt, err := e.UploadI32(pos, tokens)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []oracle.RopeMode{oracle.RopeNormal, oracle.RopeNeox} {
			y := zeros(t, e, tokens, heads, hd)
			if err := e.Rope(y, upload(t, e, q, tokens, heads, hd), pt, mode, 10000); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, len(q))
			if err := oracle.RopeF32(want, q, pos, oracle.RopeParams{HeadDim: hd, NDims: hd, Base: 10000, Mode: mode}); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("rope mode %d", mode), y, want)
		}
	})
	t.Run("attn_decode", func(t *testing.T) {
		p := AttnParams{NHeads: 8, NKVHeads: 2, HeadDim: 32, NKV: 19, Scale: 0.17677669}
		const ctx = 32 // cache rows; only the first NKV are attended
		kvDim := p.NKVHeads * p.HeadDim
		q := randF32(rng, p.NHeads*p.HeadDim, 1)
		k, v := randF32(rng, ctx*kvDim, 1), randF32(rng, ctx*kvDim, 1)
		out := zeros(t, e, p.NHeads, p.HeadDim)
		if err := e.AttnDecode(out, upload(t, e, q, p.NHeads, p.HeadDim), upload(t, e, k, ctx, kvDim), upload(t, e, v, ctx, kvDim),
			zeros(t, e, p.NHeads, ctx), p); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(q))
		if err := oracle.AttnDecodeF32(want, q, k, v, oracle.AttnDecodeParams{HeadDim: p.HeadDim, NHeads: p.NHeads,
			NKVHeads: p.NKVHeads, NKV: p.NKV, KVStride: kvDim, Scale: p.Scale}); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "attn_decode", out, want)
	})
	t.Run("elementwise", func(t *testing.T) {
		b := randF32(rng, rows*n, 1)
		bt := upload(t, e, b, rows, n)
		for _, c := range []struct {
			name string
			run  func(y *Tensor) error
			ref  func(dst []float32) error
		}{
			{"add", func(y *Tensor) error { return e.Add(y, xt, bt) }, func(d []float32) error { return oracle.AddF32(d, x, b) }},
			{"add broadcast", func(y *Tensor) error { return e.Add(y, xt, wt) }, func(d []float32) error { return oracle.AddF32(d, x, w) }},
			{"mul", func(y *Tensor) error { return e.Mul(y, xt, bt) }, func(d []float32) error { return oracle.MulF32(d, x, b) }},
			{"swiglu", func(y *Tensor) error { return e.Swiglu(y, xt, bt) }, func(d []float32) error { return oracle.SwigluF32(d, x, b) }},
			{"scale", func(y *Tensor) error { return e.Scale(y, xt, 0.7) }, func(d []float32) error { return oracle.ScaleF32(d, x, 0.7) }},
		} {
			y := zeros(t, e, rows, n)
			if err := c.run(y); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, rows*n)
			if err := c.ref(want); err != nil {
				t.Fatal(err)
			}
			sameBits(t, c.name, y, want)
		}
	})
}

// TestChainOneSubmission chains ops on the device: the whole chain is one submission, with no
// host copy between the ops, and (on Vulkan) barriers only where an op reads what an earlier one
// wrote; the cpu executor and a CUDA or HIP stream run the dispatches one after another, with no
// barriers.
func TestChainOneSubmission(t *testing.T) { onEach(t, testChainOneSubmission) }

func testChainOneSubmission(t *testing.T, backend string) {
	e := openEngine(t, Options{Backend: backend})
	rng := rand.New(rand.NewSource(2))
	const n = 256
	x := randF32(rng, n, 1)
	w := randF32(rng, n, 0.3)
	wb, err := kernels.WeightRows(oracle.Q4_0, n, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	xt, wt := upload(t, e, x, n), upload(t, e, w, n)
	W, err := e.Upload(oracle.Q4_0, wb, n, n)
	if err != nil {
		t.Fatal(err)
	}
	h, m, y := zeros(t, e, n), zeros(t, e, n), zeros(t, e, n)
	other := zeros(t, e, n)
	before := e.Stats()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.RMSNorm(h, xt, wt, 1e-5)) // h = norm(x)
	must(e.Scale(other, xt, 2))      // independent of the norm
	must(e.MatVec(m, W, h))          // reads h
	must(e.Add(y, m, xt))            // reads m
	mid := e.Stats()
	if mid.Submits != before.Submits || mid.HostReads != before.HostReads || mid.HostWrites != before.HostWrites {
		t.Fatalf("queueing ops touched the host or the queue: %+v -> %+v", before, mid)
	}
	got, err := y.F32()
	if err != nil {
		t.Fatal(err)
	}
	after := e.Stats()
	if d := after.Submits - before.Submits; d != 1 {
		t.Errorf("%d submissions for a chain of 4 ops, want 1", d)
	}
	if d := after.HostReads - before.HostReads; d != 1 {
		t.Errorf("%d host reads, want 1 (the result)", d)
	}
	if d := after.HostWrites - before.HostWrites; d != 0 {
		t.Errorf("%d host writes between ops, want 0", d)
	}
	wantBarriers := 2 // before the matvec and before the add
	if e.Backend() != Vulkan {
		wantBarriers = 0 // the cpu executor and a CUDA or HIP stream run dispatches in order
	}
	if d := after.Barriers - before.Barriers; d != wantBarriers {
		t.Errorf("%d barriers, want %d", d, wantBarriers)
	}
	if d := after.Dispatches - before.Dispatches; d != 4 {
		t.Errorf("%d dispatches, want 4", d)
	}
	hw := make([]float32, n)
	must(oracle.RMSNormF32(hw, x, w, n, 1e-5))
	mw := make([]float32, n)
	must(oracle.MatVec(oracle.Q4_0, wb, hw, mw))
	want := make([]float32, n)
	must(oracle.AddF32(want, mw, x))
	if !bytes.Equal(F32Bytes(got), F32Bytes(want)) {
		t.Fatal("the chained result differs from the oracle's composition")
	}
}

// incumbents loads the example incumbents (GLSL compiled with glslc), or skips.
func incumbents(t *testing.T) *incumbent.Manifest {
	t.Helper()
	m, err := incumbent.Load(filepath.Join("..", "examples", "incumbents", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	ent := m.Entry("add", "f32", "vulkan")
	if _, err := ent.SPIRV(); err != nil {
		t.Skipf("the example incumbents do not compile here: %v", err)
	}
	return m
}

// TestRegistryServes: the registry decides who serves each call. A cell in state hand is served
// by the manifest's incumbent, the others by their twins; swapping the registry changes who
// serves the next call; a failing cell with no incumbent is an error naming the cell, and so is a
// hand cell the manifest does not describe.
func TestRegistryServes(t *testing.T) {
	m := incumbents(t)
	reg := registry.New()
	if err := reg.Register(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, "hand_add_f32", "test"); err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, Options{Registry: reg, Manifest: m})
	rng := rand.New(rand.NewSource(3))
	const rows, n = 4, 300
	a, b := randF32(rng, rows*n, 1), randF32(rng, rows*n, 1)
	at, bt := upload(t, e, a, rows, n), upload(t, e, b, rows, n)
	want := make([]float32, rows*n)
	if err := oracle.AddF32(want, a, b); err != nil {
		t.Fatal(err)
	}
	y := zeros(t, e, rows, n)
	if err := e.Add(y, at, bt); err != nil {
		t.Fatal(err)
	}
	if err := e.Scale(y, y, 1); err != nil { // a twin cell
		t.Fatal(err)
	}
	sameBits(t, "add by the incumbent", y, want) // an element-wise add is exact either way
	tr := e.Trace()
	if len(tr) != 2 {
		t.Fatalf("trace has %d calls, want 2: %+v", len(tr), tr)
	}
	if c := tr[0]; c.Cell != "add/f32/vulkan" || c.Impl != registry.Incumbent || c.Kernel != "hand_add_f32" || c.State != registry.Hand || !c.Flushed {
		t.Errorf("add: %+v, want the incumbent hand_add_f32 in state hand", c)
	}
	if c := tr[1]; c.Cell != "scale/f32/vulkan" || c.Impl != registry.Twin || !strings.HasPrefix(c.Kernel, "lanes=") {
		t.Errorf("scale: %+v, want the twin", c)
	}

	// Hot swap: an empty registry sends add to its twin from the next call on.
	e.ResetTrace()
	e.SetRegistry(registry.New())
	if err := e.Add(y, at, bt); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "add by the twin", y, want)
	if c := e.Trace()[0]; c.Impl != registry.Twin {
		t.Errorf("after the swap add is served by %s (%s)", c.Impl, c.Why)
	}

	// A failing cell without an incumbent serves nothing.
	failing := registry.New()
	dev, drv := e.Device().Evidence()
	ev := registry.Evidence{Device: dev, Driver: drv, Toolchain: "t", BitExact: false, MaxULP: 3, TwinHash: "x", Date: time.Unix(0, 0).UTC()}
	if err := failing.Apply(registry.GateResult{Key: registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, Evidence: ev, Verdict: registry.Fail}); err != nil {
		t.Fatal(err)
	}
	e.SetRegistry(failing)
	if err := e.Add(y, at, bt); err == nil || !strings.Contains(err.Error(), "add/f32/vulkan") || !strings.Contains(err.Error(), "failing") {
		t.Errorf("failing cell: %v", err)
	}
	// The same verdict from another machine does not decide this one's cell.
	elsewhere := registry.New()
	ev.Device = "another device"
	if err := elsewhere.Apply(registry.GateResult{Key: registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, Evidence: ev, Verdict: registry.Fail}); err != nil {
		t.Fatal(err)
	}
	e.SetRegistry(elsewhere)
	if err := e.Add(y, at, bt); err != nil {
		t.Errorf("a cell failing on another device: %v", err)
	}
	// A hand cell the manifest does not describe.
	hand := registry.New()
	if err := hand.Register(registry.Key{Op: "mul", Type: "f32", Backend: "vulkan"}, "somebody's_mul", "test"); err != nil {
		t.Fatal(err)
	}
	e.SetRegistry(hand)
	if err := e.Mul(y, at, bt); err == nil || !strings.Contains(err.Error(), "mul/f32/vulkan") || !strings.Contains(err.Error(), "manifest names none") {
		t.Errorf("hand cell without a manifest entry: %v", err)
	}
}

// TestReloadRegistry: ReloadRegistry reads the registry file again, so a cell flipped on disk
// changes who serves without a restart.
func TestReloadRegistry(t *testing.T) {
	m := incumbents(t)
	path := filepath.Join(t.TempDir(), "registry.json")
	reg, err := registry.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Save(""); err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, Options{Registry: reg, Manifest: m})
	x := upload(t, e, []float32{1, 2, 3, 4}, 4)
	y := zeros(t, e, 4)
	if err := e.Add(y, x, x); err != nil {
		t.Fatal(err)
	}
	// Another process registers the incumbent and saves.
	other, err := registry.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Register(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, "hand_add_f32", "test"); err != nil {
		t.Fatal(err)
	}
	if err := other.Save(""); err != nil {
		t.Fatal(err)
	}
	if err := e.ReloadRegistry(); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(y, x, x); err != nil {
		t.Fatal(err)
	}
	tr := e.Trace()
	if tr[0].Impl != registry.Twin || tr[1].Impl != registry.Incumbent {
		t.Errorf("before and after the reload: %s, %s; want twin then hand", tr[0].Impl, tr[1].Impl)
	}
	e.SetRegistry(nil)
	if err := e.ReloadRegistry(); err == nil {
		t.Error("ReloadRegistry without a registry file: no error")
	}
}

// TestSwapWhileCalling swaps the registry while other goroutines make calls (run with -race).
func TestSwapWhileCalling(t *testing.T) {
	m := incumbents(t)
	hand := registry.New()
	if err := hand.Register(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, "hand_add_f32", "test"); err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, Options{Manifest: m})
	e.SetTracing(false)
	x := upload(t, e, []float32{1, 2, 3, 4}, 4)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < max(2, runtime.NumCPU()); g++ {
		y := zeros(t, e, 4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				if err := e.Add(y, x, x); err != nil {
					errs <- err
					return
				}
				got, err := y.F32()
				if err != nil {
					errs <- err
					return
				}
				if got[3] != 8 {
					errs <- fmt.Errorf("y[3] = %v, want 8", got[3])
					return
				}
			}
		}()
	}
	for i := 0; i < 40; i++ {
		if i%2 == 0 {
			e.SetRegistry(hand)
		} else {
			e.SetRegistry(nil)
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCallErrors: bad operands are errors that name the op, the operand and what was expected,
// on each backend; an unknown backend is an error naming it.
func TestCallErrors(t *testing.T) {
	if _, err := Open(Options{Backend: "metal"}); err == nil || !strings.Contains(err.Error(), `backend "metal"`) {
		t.Errorf("Open of backend metal: %v", err)
	}
	onEach(t, testCallErrors)
}

func testCallErrors(t *testing.T, backend string) {
	e := openEngine(t, Options{Backend: backend})
	x := zeros(t, e, 4, 8)
	q, err := e.NewTensor(oracle.Q4_0, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := e.UploadI32([]int32{0}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"rms_norm y too short", e.RMSNorm(zeros(t, e, 8), x, nil, 1e-6), "rms_norm: y is f32[8] (8 values), want 32 values"},
		{"rms_norm nil x", e.RMSNorm(x, nil, nil, 1e-6), "rms_norm: x is nil"},
		{"rms_norm quantized x", e.RMSNorm(x, q, nil, 1e-6), "rms_norm: x is q4_0[4x64], want f32 values"},
		{"matvec vector W", e.MatVec(zeros(t, e, 4), zeros(t, e, 8), zeros(t, e, 8)), "W must be a matrix"},
		{"matvec x length", e.MatVec(zeros(t, e, 4), q, zeros(t, e, 63)), "matvec: x is f32[63] (63 values), want 64 values"},
		{"get_rows ids type", e.GetRows(zeros(t, e, 1, 64), q, zeros(t, e, 1)), "get_rows: ids is f32[1], want i32 values"},
		{"get_rows dst", e.GetRows(zeros(t, e, 2, 64), q, ids), "get_rows: dst is f32[2x64] (128 values), want 64 values"},
		{"softmax mask", e.Softmax(x, x, zeros(t, e, 2, 8), 1), "mask is f32[2x8]: want one row of 8 or 4 rows"},
		{"rope shape", e.Rope(x, x, ids, oracle.RopeNormal, 10000), "want tokens x heads x head_dim"},
		{"rope mode", e.Rope(x, x, ids, 1, 10000), "mode 1"},
		{"add broadcast", e.Add(x, x, zeros(t, e, 3)), "does not divide"},
		{"swiglu lengths", e.Swiglu(x, x, zeros(t, e, 8)), "swiglu: g is f32[8] (8 values), want 32 values"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, c.err, c.want)
		}
	}
	if _, err := e.NewTensor(oracle.Q4_0, 3, 33); err == nil || !strings.Contains(err.Error(), "q4_0") {
		t.Errorf("a row that is not whole blocks: %v", err)
	}
	if _, err := e.UploadF32([]float32{1, 2}, 3); err == nil || !strings.Contains(err.Error(), "8 bytes, want 12") {
		t.Errorf("Upload of the wrong size: %v", err)
	}
	other := openEngine(t, Options{Backend: backend})
	if err := e.Add(x, x, zeros(t, other, 4, 8)); err == nil || !strings.Contains(err.Error(), "another engine") {
		t.Errorf("a tensor of another engine: %v", err)
	}
}

// TestTunedSchedule: a twin runs at the schedule the tuning cache holds for this device (and
// backend) and this version of the twin, and at its default when the entry is for another
// version.
func TestTunedSchedule(t *testing.T) { onEach(t, testTunedSchedule) }

func testTunedSchedule(t *testing.T, backend string) {
	probe := openEngine(t, Options{Backend: backend})
	device, driver := probe.Evidence()
	cell, ok := kernels.Lookup("rms_norm", oracle.F32)
	if !ok {
		t.Fatal("no rms_norm cell")
	}
	hash, err := cell.SourceHash()
	if err != nil {
		t.Fatal(err)
	}
	def := cell.DefaultScheduleFor(probe.Backend(), probe.caps)
	want := kernels.Schedule{Lanes: 128, Layout: dsl.Strided}
	if want == def {
		want.Lanes = 32
	}
	entry := func(h string) tuning.Entry {
		return tuning.Entry{
			Key:   tuning.Key{Cell: cell.Name(), Backend: probe.Backend(), Device: device, Driver: driver, TwinHash: h},
			Shape: "rows=64,n=4096", Schedule: want.String(), Seconds: 1e-3, Date: tuning.Date(time.Unix(0, 0)),
			Candidates: []tuning.Candidate{{Schedule: want.String(), Exact: true, Seconds: 1e-3}},
		}
	}
	for _, c := range []struct {
		hash  string
		tuned bool
	}{{hash, true}, {"another version", false}} {
		cache := tuning.New()
		if err := cache.Put(entry(c.hash)); err != nil {
			t.Fatal(err)
		}
		e := openEngine(t, Options{Backend: backend, Tuning: cache})
		rng := rand.New(rand.NewSource(4))
		x := randF32(rng, 3*300, 1)
		y := zeros(t, e, 3, 300)
		if err := e.RMSNorm(y, upload(t, e, x, 3, 300), nil, 1e-6); err != nil {
			t.Fatal(err)
		}
		ref := make([]float32, len(x))
		if err := oracle.RMSNormF32(ref, x, nil, 300, 1e-6); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "rms_norm at "+want.String(), y, ref)
		call := e.Trace()[0]
		if call.Tuned != c.tuned {
			t.Errorf("entry for %q: Tuned = %v (%s)", c.hash, call.Tuned, call.Why)
		}
		sched := def
		if c.tuned {
			sched = want
		}
		if call.Kernel != sched.String() {
			t.Errorf("entry for %q: ran at %s, want %s (%s)", c.hash, call.Kernel, sched, call.Why)
		}
	}
}

// TestSplitMatrix: a matrix larger than one buffer may hold is split by rows; MatVec takes it
// whole (the same bytes as the oracle), GetRows one part at a time (PartOf), Read returns the
// bytes written, and the ops that cannot bind it say so.
func TestSplitMatrix(t *testing.T) { onEach(t, testSplitMatrix) }

func testSplitMatrix(t *testing.T, backend string) {
	const rows, n = 100, 256
	typ := oracle.Q6_K
	rb, _ := oracle.RowSize(typ, n)
	const limit = 16384 // 78 rows of 210 bytes: parts of 64 rows
	e := openEngine(t, Options{Backend: backend, MaxBinding: limit})
	wb, err := kernels.WeightRows(typ, rows, n, 6)
	if err != nil {
		t.Fatal(err)
	}
	W, err := e.Upload(typ, wb, rows, n)
	if err != nil {
		t.Fatal(err)
	}
	if per := limit / rb &^ 63; !W.Split() || len(W.parts) != (rows+per-1)/per || W.parts[0].Shape[0] != per {
		t.Fatalf("W split into %d parts, want parts of %d rows", len(W.parts), per)
	}
	back, err := W.Read()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, wb) {
		t.Fatal("Read of a split matrix differs from what was uploaded")
	}
	x := randF32(rand.New(rand.NewSource(5)), n, 1)
	y := zeros(t, e, rows)
	if err := e.MatVec(y, W, upload(t, e, x, n)); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, rows)
	if err := oracle.MatVec(typ, wb, x, want); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "matvec over a split matrix", y, want)
	part, local, err := W.PartOf(77)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := e.UploadI32([]int32{int32(local)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	row := zeros(t, e, 1, n)
	if err := e.GetRows(row, part, ids); err != nil {
		t.Fatal(err)
	}
	wantRow := make([]float32, n)
	if err := oracle.GetRows(typ, wb, n, []int32{77}, wantRow); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "row 77 of a split matrix", row, wantRow)
	if err := e.GetRows(row, W, ids); err == nil || !strings.Contains(err.Error(), "split over") {
		t.Errorf("GetRows on a split matrix: %v", err)
	}
	if _, err := W.Slice(0, 1); err == nil || !strings.Contains(err.Error(), "split over") {
		t.Errorf("Slice of a split matrix: %v", err)
	}
}

// TestIncumbentBindingOffset: a manifest binding at a byte offset into its operand is bound
// there: an add whose b is bound 16 bytes in computes y[i] = a[i] + b[i+4].
func TestIncumbentBindingOffset(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "examples", "incumbents", "add.comp"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "add.comp"), src, 0o644)
	man := `{"version": 1, "incumbents": [{
	  "name": "shifted_add", "op": "add", "type": "f32", "backend": "vulkan",
	  "source": {"glsl": "add.comp"},
	  "bindings": [{"binding": 0, "operand": "a", "readonly": true}, {"binding": 1, "operand": "b", "readonly": true, "offset": 16}, {"binding": 2, "operand": "y"}],
	  "push_constants": [{"name": "n", "type": "u32", "value": "rows*n - 4"}],
	  "workgroup_size": [256, 1, 1], "grid": ["cdiv(rows*n, 256)", 1, 1]}]}`
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(man), 0o644)
	m, err := incumbent.Load(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Entry("add", "f32", "vulkan").SPIRV(); err != nil {
		t.Skipf("glslc: %v", err)
	}
	reg := registry.New()
	if err := reg.Register(registry.Key{Op: "add", Type: "f32", Backend: "vulkan"}, "h", "test"); err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, Options{Registry: reg, Manifest: m})
	a := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	b := []float32{10, 20, 30, 40, 50, 60, 70, 80}
	y := zeros(t, e, 8)
	if err := e.Add(y, upload(t, e, a, 8), upload(t, e, b, 8)); err != nil {
		t.Fatal(err)
	}
	got, err := y.F32()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if got[i] != a[i]+b[i+4] {
			t.Fatalf("y = %v, want a[i] + b[i+4] in the first 4", got)
		}
	}
	if c := e.Trace()[0]; c.Kernel != "shifted_add" {
		t.Errorf("served by %s", c.Kernel)
	}
}
