package llama

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/engine"
	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/registry"
)

// writeModel writes s to a temporary GGUF file and opens it.
func writeModel(t testing.TB, s Synthetic) *gguf.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// openEngine opens an engine on opts, or skips with the reason its device is not here (cpu
// always is; the emulated CUDA and HIP devices need a C++ compiler).
func openEngine(t testing.TB, opts engine.Options) *engine.Engine {
	t.Helper()
	var avail error
	switch {
	case opts.Emulated:
		avail = host.Available(host.Options{})
	case opts.Backend == engine.CUDA:
		avail = cuda.Available()
	case opts.Backend == engine.HIP:
		avail = hip.Available()
	case opts.Backend != engine.CPU && opts.Backend != engine.Native: // the CPU backends need no driver
		avail = vulkan.Available()
	}
	if avail != nil {
		t.Skipf("%s: %v", opts.Backend, avail)
	}
	e, err := engine.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// recorder keeps every step's logits.
type recorder struct {
	s      Stepper
	logits [][]float32
}

func (r *recorder) Step(tok int32, pos int) ([]float32, error) {
	l, err := r.s.Step(tok, pos)
	if err == nil {
		r.logits = append(r.logits, l)
	}
	return l, err
}

// runBoth decodes the same prompt on the engine and on the reference and requires every step's
// logits to be the same bytes and the same tokens to come out.
func runBoth(t *testing.T, e *engine.Engine, f *gguf.File) *Model {
	t.Helper()
	m, err := Load(e, f, 64)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ReadWeights(f, m.Config)
	if err != nil {
		t.Fatal(err)
	}
	ref := NewReference(m.Config, w, 64)
	prompt, steps := []int32{1, 7, 300}, 4
	gm, rm := &recorder{s: m}, &recorder{s: ref}
	toksM, lastM, err := Generate(gm, prompt, steps)
	if err != nil {
		t.Fatal(err)
	}
	toksR, lastR, err := Generate(rm, prompt, steps)
	if err != nil {
		t.Fatal(err)
	}
	if len(gm.logits) != len(prompt)+steps-1 || len(rm.logits) != len(gm.logits) {
		t.Fatalf("%d engine steps, %d reference steps, want %d", len(gm.logits), len(rm.logits), len(prompt)+steps-1)
	}
	for i := range gm.logits {
		if !bytes.Equal(engine.F32Bytes(gm.logits[i]), engine.F32Bytes(rm.logits[i])) {
			for j := range gm.logits[i] {
				if gm.logits[i][j] != rm.logits[i][j] {
					t.Fatalf("step %d: logit %d = %v on the engine, %v by the oracle", i, j, gm.logits[i][j], rm.logits[i][j])
				}
			}
			t.Fatalf("step %d: logits differ in their bytes", i)
		}
	}
	if !bytes.Equal(engine.F32Bytes(lastM), engine.F32Bytes(lastR)) {
		t.Fatal("the last logits differ")
	}
	for i := range toksM {
		if toksM[i] != toksR[i] {
			t.Fatalf("generated %v on the engine, %v by the oracle", toksM, toksR)
		}
	}
	// The logits are not degenerate: some spread, nothing non-finite.
	lo, hi := lastM[0], lastM[0]
	for _, v := range lastM {
		if v != v || v > 1e30 || v < -1e30 {
			t.Fatalf("logit %v", v)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi-lo < 1e-3 {
		t.Fatalf("logits spread only %v", hi-lo)
	}
	return m
}

// TestSyntheticModelMatchesOracle runs the 2-layer synthetic model (q4_0, q8_0, q4_K and q6_K
// weights) through the engine on Vulkan, every cell served by its twin: every step's logits
// equal the oracle's composition of the same ops, byte for byte, and each step is one
// submission with no host copy between its ops.
func TestSyntheticModelMatchesOracle(t *testing.T) {
	testSynthetic(t, engine.Options{})
}

// TestSyntheticModelMatchesOracleCPU is TestSyntheticModelMatchesOracle on the cpu backend, with
// the Vulkan library made absent (ONESOURCE_VULKAN_LIBRARY names a file that does not exist):
// the model runs with no driver at all, with the oracle's logits byte for byte.
func TestSyntheticModelMatchesOracleCPU(t *testing.T) {
	t.Setenv(vulkan.LibraryEnv, filepath.Join(t.TempDir(), "no-libvulkan.so.1"))
	if err := vulkan.Available(); err == nil {
		t.Fatal("vulkan.Available with no library: no error")
	}
	testSynthetic(t, engine.Options{Backend: engine.CPU})
}

// TestSyntheticModelMatchesOracleCUDAHIP is TestSyntheticModelMatchesOracle on CUDA and HIP: on
// the GPU where there is one, and on the emulated devices (the same emitted text run by host
// emulation, level H), with the oracle's logits byte for byte and one submission a step.
func TestSyntheticModelMatchesOracleCUDAHIP(t *testing.T) {
	for _, emulated := range []bool{false, true} {
		for _, b := range []string{engine.CUDA, engine.HIP} {
			name := b
			if emulated {
				name += "-emulated"
			}
			t.Run(name, func(t *testing.T) { testSynthetic(t, engine.Options{Backend: b, Emulated: emulated}) })
		}
	}
}

func testSynthetic(t *testing.T, opts engine.Options) {
	f := writeModel(t, SmallSynthetic)
	e := openEngine(t, opts)
	m := runBoth(t, e, f)

	before := e.Stats()
	if _, err := m.Step(5, 10); err != nil {
		t.Fatal(err)
	}
	d := e.Stats()
	d.Submits -= before.Submits
	d.HostReads -= before.HostReads
	d.HostWrites -= before.HostWrites
	d.Dispatches -= before.Dispatches
	if d.Submits != 1 || d.HostReads != 1 || d.HostWrites != 2 {
		t.Errorf("a step: %d submissions, %d host reads, %d host writes; want 1, 1 (the logits), 2 (token and position)", d.Submits, d.HostReads, d.HostWrites)
	}
	if want := 1 + m.Config.Layers*15 + 2; d.Dispatches != want {
		t.Errorf("a step dispatched %d kernels, want %d", d.Dispatches, want)
	}
	for _, c := range e.Trace() {
		if c.Impl != registry.Twin {
			t.Fatalf("%s served by %s without a registry", c.Cell, c.Impl)
		}
		if !strings.HasSuffix(c.Cell, "/"+e.Backend()) {
			t.Fatalf("cell %s on backend %s", c.Cell, e.Backend())
		}
	}
}

// TestIncumbentServesOneCell: with a registry that sends add/f32 to the hand-written incumbent
// of examples/incumbents (add.comp on Vulkan; add.cu on the emulated CUDA and HIP devices), the
// trace shows that incumbent serving every residual add and the twins serving the rest, and the
// logits still equal the oracle's (an element-wise add is exact whoever computes it).
func TestIncumbentServesOneCell(t *testing.T) {
	for _, c := range []struct {
		opts           engine.Options
		manifest, hand string
	}{
		{engine.Options{Backend: engine.Vulkan}, "manifest.json", "hand_add_f32"},
		{engine.Options{Backend: engine.CUDA, Emulated: true}, "cuda.json", "hand_add_f32_cuda"},
		{engine.Options{Backend: engine.HIP, Emulated: true}, "cuda.json", "hand_add_f32_hip"},
	} {
		t.Run(c.hand, func(t *testing.T) { testIncumbentServesOneCell(t, c.opts, c.manifest, c.hand) })
	}
}

func testIncumbentServesOneCell(t *testing.T, opts engine.Options, manifest, hand string) {
	m, err := incumbent.Load(filepath.Join("..", "examples", "incumbents", manifest))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Backend == engine.Vulkan {
		if _, err := m.Entry("add", "f32", "vulkan").SPIRV(); err != nil {
			t.Skipf("the example incumbents do not compile here: %v", err)
		}
	}
	reg := registry.New()
	if err := reg.Register(registry.Key{Op: "add", Type: "f32", Backend: opts.Backend}, hand, "test"); err != nil {
		t.Fatal(err)
	}
	f := writeModel(t, SmallSynthetic)
	opts.Registry, opts.Manifest = reg, m
	e := openEngine(t, opts)
	runBoth(t, e, f)
	hands, twins := 0, 0
	for _, c := range e.Trace() {
		switch {
		case c.Cell == "add/f32/"+opts.Backend:
			if c.Impl != registry.Incumbent || c.Kernel != hand {
				t.Fatalf("%s (%s) served by %s %s", c.Cell, c.Label, c.Impl, c.Kernel)
			}
			hands++
		case c.Impl == registry.Twin:
			twins++
		default:
			t.Fatalf("%s served by %s", c.Cell, c.Impl)
		}
	}
	if hands == 0 || twins == 0 {
		t.Fatalf("%d calls by the incumbent, %d by twins", hands, twins)
	}
}

// TestConfigErrors: what a model file lacks or gets wrong is an error naming it.
func TestConfigErrors(t *testing.T) {
	base := SmallSynthetic
	base.Layers = 1
	var good bytes.Buffer
	if err := base.Write(&good); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(good.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ConfigOf(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDim != 32 || c.KVDim() != 64 || c.Vocab != 512 || c.Layers != 1 {
		t.Fatalf("config %+v", c)
	}
	if _, err := ReadWeights(f, c); err != nil {
		t.Fatal(err)
	}
	rewrite := func(edit func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)) *gguf.File {
		meta := append([]gguf.KV(nil), f.Metadata...)
		var ts []gguf.WriteTensor
		for _, t := range f.Tensors {
			ts = append(ts, gguf.WriteTensor{Name: t.Name, Type: t.Type, Dims: t.Dims, Data: t.Data()})
		}
		meta, ts = edit(meta, ts)
		var b bytes.Buffer
		if err := gguf.Write(&b, meta, ts); err != nil {
			t.Fatal(err)
		}
		g, err := gguf.Parse(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	dropKey := func(key string) func([]gguf.KV, []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		return func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			var out []gguf.KV
			for _, kv := range meta {
				if kv.Key != key {
					out = append(out, kv)
				}
			}
			return out, ts
		}
	}
	setKey := func(key string, v any) func([]gguf.KV, []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		return func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			for i := range meta {
				if meta[i].Key == key {
					meta[i].Value = gguf.Value{V: v}
				}
			}
			return meta, ts
		}
	}
	dropTensor := func(name string) func([]gguf.KV, []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		return func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			var out []gguf.WriteTensor
			for _, t := range ts {
				if t.Name != name {
					out = append(out, t)
				}
			}
			return meta, out
		}
	}
	for _, tc := range []struct {
		name string
		edit func([]gguf.KV, []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)
		want string
	}{
		{"no block count", dropKey("llama.block_count"), "llama.block_count is missing"},
		{"another arch", setKey("general.architecture", "gpt2"), `"gpt2": only llama`},
		{"zero heads", setKey("llama.attention.head_count", uint32(0)), "head_count = 0"},
		{"kv heads", setKey("llama.attention.head_count_kv", uint32(3)), "not a multiple of head_count_kv 3"},
		{"partial rope", setKey("llama.rope.dimension_count", uint32(16)), "only rope over the whole head"},
		{"no q", dropTensor("blk.0.attn_q.weight"), "blk.0.attn_q.weight is missing"},
		{"no embedding", dropTensor("token_embd.weight"), "token_embd.weight is missing"},
		{"wrong ffn", setKey("llama.feed_forward_length", uint32(256)), "blk.0.ffn_gate.weight has dims [256 512]: want [256 256]"},
	} {
		g := rewrite(tc.edit)
		c, err := ConfigOf(g)
		if err == nil {
			_, err = ReadWeights(g, c)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestProfile: the profile of the synthetic model accounts for every dispatch of a step: the
// calls per step add up, the shares add up to 100%, and every cell says who served it.
func TestProfile(t *testing.T) {
	f := writeModel(t, SmallSynthetic)
	e := openEngine(t, engine.Options{Timed: true})
	m, err := Load(e, f, 16)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ProfileModel(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Any device copies at between 0.1 GB/s and 100 TB/s.
	if p.RooflineGBs < 0.1 || p.RooflineGBs > 1e5 {
		t.Errorf("copy roofline %v GB/s", p.RooflineGBs)
	}
	calls, share := 0, 0.0
	for _, r := range p.ByCell {
		if d := r.RooflinePct - 100*r.GBps/p.RooflineGBs; d > 1e-6*r.RooflinePct || d < -1e-6*r.RooflinePct {
			t.Errorf("%s: %.3g%% of the roofline, but %.3g GB/s of %.3g", r.Name, r.RooflinePct, r.GBps, p.RooflineGBs)
		}
		calls += r.Calls
		share += r.Share
		if !strings.HasPrefix(r.Served, "twin lanes=") || r.GBps <= 0 || r.Time <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	if want := 1 + m.Config.Layers*15 + 2; calls != want {
		t.Errorf("the cells account for %d calls per step, want %d", calls, want)
	}
	if share < 99.9 || share > 100.1 {
		t.Errorf("shares add up to %.2f%%", share)
	}
	roles := map[string]bool{}
	for _, r := range p.ByRole {
		roles[r.Name] = true
	}
	for _, want := range []string{"token_embd", "attn_q", "attn", "ffn_down", "output"} {
		if !roles[want] {
			t.Errorf("no role %q in %v", want, roles)
		}
	}
	var out strings.Builder
	p.Write(&out)
	for _, want := range []string{"decode step on", "matvec/q4_0/vulkan", "attn_decode/f32/vulkan", "ffn_gate", "roofline"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the profile does not mention %q:\n%s", want, out.String())
		}
	}
	m2, err := Load(openEngine(t, engine.Options{}), f, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ProfileModel(m2, 1); err == nil || !strings.Contains(err.Error(), "Timed") {
		t.Errorf("a profile on an untimed engine: %v", err)
	}
}

// TestSplitWeights: with buffers limited to 64 KiB, the embedding and the larger matrices are
// split by rows (as a real vocabulary larger than one binding is), and the logits still equal
// the oracle's.
func TestSplitWeights(t *testing.T) {
	f := writeModel(t, SmallSynthetic)
	e := openEngine(t, engine.Options{MaxBinding: 64 << 10})
	m := runBoth(t, e, f)
	if !m.tokEmb.Split() {
		t.Fatal("the embedding was not split")
	}
}
