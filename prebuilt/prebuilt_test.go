package prebuilt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/registry"
)

func sum(data string) string {
	s := sha256.Sum256([]byte(data))
	return hex.EncodeToString(s[:])
}

// testSet is a set with one kernel "k" (buffers x read, y read_write; params a f32, n u32) and an
// artifact per backend in files.
func testSet(t *testing.T, files fstest.MapFS, backends ...string) *Set {
	t.Helper()
	k := Kernel{
		Name: "k", Source: "k.go:7", Workgroup: [3]uint32{64, 1, 1},
		Buffers: []Buffer{{Name: "x", Elem: "f32", ElemBytes: 4, Access: Read}, {Name: "y", Elem: "f32", ElemBytes: 4, Access: ReadWrite}},
		Params:  []Param{{Name: "a", Type: "f32"}, {Name: "n", Type: "u32"}},
	}
	for _, b := range backends {
		name := "onesource/k." + b
		if files[name] == nil {
			files[name] = &fstest.MapFile{Data: []byte("code for " + b)}
		}
		k.Artifacts = append(k.Artifacts, Artifact{Backend: b, File: name, SHA256: sum("code for " + b)})
	}
	return NewSet("example.com/p", files, []Kernel{k})
}

func TestNewSetChecksFiles(t *testing.T) {
	s := testSet(t, fstest.MapFS{}, "cuda", "vulkan")
	if err := s.Err(); err != nil {
		t.Fatalf("good set: %v", err)
	}
	k, err := s.Kernel("k")
	if err != nil || string(k.Artifact("cuda").Data()) != "code for cuda" || k.Package() != "example.com/p" {
		t.Fatalf("Kernel: %v, %+v", err, k)
	}
	if _, err := s.Kernel("nope"); err == nil || !strings.Contains(err.Error(), `no kernel "nope" (it has k)`) {
		t.Errorf("unknown kernel: %v", err)
	}

	edited := testSet(t, fstest.MapFS{"onesource/k.vulkan": {Data: []byte("hand-edited")}}, "cuda", "vulkan")
	if err := edited.Err(); err == nil || !strings.Contains(err.Error(), "onesource/k.vulkan") || !strings.Contains(err.Error(), "changed after generation") {
		t.Errorf("edited file: %v", err)
	}
	if _, err := edited.Kernel("k"); err == nil {
		t.Error("a set with an edited file still hands out kernels")
	}
	missing := NewSet("example.com/q", fstest.MapFS{}, []Kernel{{Name: "k", Artifacts: []Artifact{{Backend: "vulkan", File: "onesource/k.spv", SHA256: sum("x")}}}})
	if err := missing.Err(); err == nil || !strings.Contains(err.Error(), "onesource/k.spv") || !strings.Contains(err.Error(), "run go generate") {
		t.Errorf("missing file: %v", err)
	}
	dup := NewSet("example.com/d", fstest.MapFS{}, []Kernel{{Name: "k"}, {Name: "k"}})
	if err := dup.Err(); err == nil || !strings.Contains(err.Error(), `two kernels named "k"`) {
		t.Errorf("duplicate: %v", err)
	}
	rt, _ := NewRuntime(Options{})
	if _, err := rt.Place(edited.kernels[0]); err == nil || !strings.Contains(err.Error(), "changed after generation") {
		t.Errorf("Place of a kernel from a broken set: %v", err)
	}
}

func TestLookup(t *testing.T) {
	defer func(old []*Set) { sets = old }(sets)
	sets = nil
	if _, err := Lookup("k"); err == nil || !strings.Contains(err.Error(), "no generated kernels are linked") {
		t.Errorf("empty: %v", err)
	}
	a := testSet(t, fstest.MapFS{}, "vulkan")
	Register(a)
	if k, err := Lookup("k"); err != nil || k.Package() != "example.com/p" {
		t.Fatalf("Lookup: %v", err)
	}
	b := NewSet("example.com/z", fstest.MapFS{"f": {Data: []byte("x")}}, []Kernel{{Name: "k", Artifacts: []Artifact{{Backend: "vulkan", File: "f", SHA256: sum("x")}}}})
	Register(b)
	if _, err := Lookup("k"); err == nil || !strings.Contains(err.Error(), "ambiguous: example.com/p.k, example.com/z.k") {
		t.Errorf("ambiguous: %v", err)
	}
	if k, err := Lookup("example.com/z.k"); err != nil || k.Package() != "example.com/z" {
		t.Errorf("qualified: %v", err)
	}
	if _, err := Lookup("q"); err == nil || !strings.Contains(err.Error(), "registered: k, k") {
		t.Errorf("unknown: %v", err)
	}
	Register(a) // re-registering a package replaces it, no duplicate
	if got := len(Sets()); got != 2 {
		t.Errorf("%d sets after re-registering, want 2", got)
	}
}

// fakeDevice records launches; fail makes load fail.
type fakeDevice struct {
	name     string
	launches int
	fail     error
}

func (f *fakeDevice) describe() (string, string) { return "fake " + f.name, "fake driver 1" }
func (f *fakeDevice) close()                     {}
func (f *fakeDevice) newBuffer(size int) (buffer, error) {
	return &memBuffer{data: make([]byte, size)}, nil
}
func (f *fakeDevice) load(k *Kernel, a *Artifact) (launch, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return func(dbufs []buffer, params []uint32, groups [3]uint32) error {
		mb, err := as[*memBuffer]("fake", dbufs)
		if err != nil {
			return err
		}
		bufs := [][]byte{mb[0].data, mb[1].data}
		f.launches++
		// y = a*x + y on the host, for the test's checks of argument passing.
		a := math.Float32frombits(params[0])
		for i := 0; i+4 <= len(bufs[1]) && i/4 < int(params[1]); i += 4 {
			x := math.Float32frombits(le(bufs[0][i:]))
			y := math.Float32frombits(le(bufs[1][i:]))
			put(bufs[1][i:], math.Float32bits(a*x+y))
		}
		return nil
	}, nil
}

func le(b []byte) uint32     { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24 }
func put(b []byte, u uint32) { b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24) }

// withFakes replaces the backend openers: every backend named in devs opens its fake, others
// are unavailable.
func withFakes(t *testing.T, devs map[string]*fakeDevice) {
	old := openers
	t.Cleanup(func() { openers = old })
	openers = map[string]opener{}
	for _, b := range DefaultBackends {
		b := b
		openers[b] = func(Options) (device, error) {
			if d, ok := devs[b]; ok {
				return d, nil
			}
			return nil, errors.New("unavailable: " + b + ": not in this test")
		}
	}
}

func evidence(k *Kernel, backend string, exact bool) registry.Evidence {
	return registry.Evidence{Device: "fake " + backend, Driver: "fake driver 1", Toolchain: "t", BitExact: exact,
		TwinHash: k.Artifact(backend).Hash(), Date: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
}

func TestPlaceFollowsRegistry(t *testing.T) {
	withFakes(t, map[string]*fakeDevice{"cuda": {name: "cuda"}, "vulkan": {name: "vulkan"}})
	s := testSet(t, fstest.MapFS{}, "cuda", "hip", "vulkan", "metal")
	k, _ := s.Kernel("k")

	place := func(reg *registry.Registry, opts Options) (*Placed, error) {
		opts.Registry = reg
		rt, err := NewRuntime(opts)
		if err != nil {
			t.Fatal(err)
		}
		return rt.Place(k)
	}
	// Empty registry: the first available backend in order serves, unverified.
	pl, err := place(nil, Options{})
	if err != nil || pl.Placement().Backend != "cuda" || pl.Placement().Verified {
		t.Fatalf("empty registry: %v %+v", err, pl)
	}
	// Verified evidence for vulkan beats unverified cuda.
	reg := registry.New()
	ev := evidence(k, "vulkan", true)
	if err := reg.Apply(registry.GateResult{Key: registry.Key{Op: "k", Type: AnyType, Backend: "vulkan"}, Evidence: ev, Verdict: registry.Flip}); err != nil {
		t.Fatal(err)
	}
	pl, err = place(reg, Options{})
	if err != nil || pl.Placement().Backend != "vulkan" || !pl.Placement().Verified || pl.Placement().State != registry.Fallback {
		t.Fatalf("verified vulkan: %v %+v", err, pl.Placement())
	}
	// Evidence for another version of the file does not verify this one.
	stale := registry.New()
	ev.TwinHash = "sha256:" + sum("older code")
	if err := stale.Apply(registry.GateResult{Key: registry.Key{Op: "k", Type: AnyType, Backend: "vulkan"}, Evidence: ev, Verdict: registry.Flip}); err != nil {
		t.Fatal(err)
	}
	if pl, err = place(stale, Options{Backends: []string{"vulkan"}}); err != nil || pl.Placement().Verified {
		t.Fatalf("stale evidence: %v %+v", err, pl.Placement())
	}
	if _, err = place(stale, Options{Backends: []string{"vulkan"}, RequireVerified: true}); err == nil || !strings.Contains(err.Error(), "RequireVerified") {
		t.Fatalf("RequireVerified with stale evidence: %v", err)
	}
	// A failing cell never serves; a cell a hand-written kernel serves is left to it.
	bad := registry.New()
	if err := bad.Apply(registry.GateResult{Key: registry.Key{Op: "k", Type: AnyType, Backend: "cuda"}, Evidence: evidence(k, "cuda", false), Verdict: registry.Fail}); err != nil {
		t.Fatal(err)
	}
	if err := bad.Register(registry.Key{Op: "k", Type: AnyType, Backend: "vulkan"}, "sha256:hand", "a hand kernel"); err != nil {
		t.Fatal(err)
	}
	_, err = place(bad, Options{})
	var nb *NoBackendError
	if !errors.As(err, &nb) {
		t.Fatalf("failing cuda + hand vulkan: %v", err)
	}
	want := []string{"cuda: registry cell k/any/cuda is failing", "hip: unavailable: hip: not in this test", "vulkan: registry cell k/any/vulkan is hand: a hand-written kernel serves it", "metal: unavailable: metal", "cpu: not generated"}
	if len(nb.Considered) != len(want) {
		t.Fatalf("considered %q", nb.Considered)
	}
	for i, w := range want {
		if !strings.HasPrefix(nb.Considered[i], w) {
			t.Errorf("considered[%d] = %q, want prefix %q", i, nb.Considered[i], w)
		}
	}
	if _, err := NewRuntime(Options{Backends: []string{"vulkan", "opengl"}}); err == nil || !strings.Contains(err.Error(), `unknown backend "opengl"`) {
		t.Errorf("unknown backend: %v", err)
	}
}

func TestRunChecksArgumentsAndRecords(t *testing.T) {
	dev := &fakeDevice{name: "vulkan"}
	withFakes(t, map[string]*fakeDevice{"vulkan": dev})
	s := testSet(t, fstest.MapFS{}, "vulkan")
	k, _ := s.Kernel("k")
	rt, err := NewRuntime(Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := rt.Place(k)
	if err != nil {
		t.Fatal(err)
	}
	x, y := make([]byte, 8), make([]byte, 8)
	put(x, math.Float32bits(2))
	put(y, math.Float32bits(1))
	for _, c := range []struct {
		bufs   [][]byte
		params []any
		want   string
	}{
		{[][]byte{x}, []any{float32(1), 2}, "1 buffers given, the kernel has 2 (x f32 read, y f32 read_write)"},
		{[][]byte{x, y[:6]}, []any{float32(1), 2}, "buffer y has 6 bytes, not a whole number of 4-byte f32 elements"},
		{[][]byte{x, {}}, []any{float32(1), 2}, "buffer y is empty"},
		{[][]byte{x, y}, []any{float32(1)}, "1 parameters given, the kernel has 2 (a f32, n u32)"},
		{[][]byte{x, y}, []any{1, 2}, "parameter a (f32): 1 (int) is not a float"},
		{[][]byte{x, y}, []any{0.1, 2}, "parameter a (f32): 0.1 (float64) is not exactly a float32"},
		{[][]byte{x, y}, []any{float32(1), -2}, "parameter n (u32): -2 (int) is out of range"},
		{[][]byte{x, y}, []any{float32(1), "2"}, "parameter n (u32): 2 (string) is not an integer"},
	} {
		err := pl.Run([3]uint32{1, 1, 1}, c.bufs, c.params...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "k (k.go:7) on vulkan") {
			t.Errorf("Run(%v): %v, want %q", c.params, err, c.want)
		}
	}
	if dev.launches != 0 {
		t.Fatalf("%d launches with bad arguments", dev.launches)
	}
	if err := pl.Run([3]uint32{0, 1, 1}, [][]byte{x, y}, float32(3), 1); err == nil || !strings.Contains(err.Error(), "has a zero") {
		t.Errorf("zero groups: %v", err)
	}
	if err := pl.Run([3]uint32{1, 1, 1}, [][]byte{x, y}, 1.5, uint32(1)); err != nil {
		t.Fatal(err)
	}
	if got := math.Float32frombits(le(y)); got != 4 { // 1.5*2 + 1
		t.Fatalf("y[0] = %g after the run, want 4", got)
	}
	if st, err := rt.Record(pl, true, 0, 1); err != nil || st != registry.Fallback {
		t.Fatalf("Record bit-exact: %v %v", st, err)
	}
	if pl2, err := rt.Place(k); err != nil || !pl2.Placement().Verified {
		t.Fatalf("after Record: %v %+v", err, pl2.Placement())
	}
	if st, err := rt.Record(pl, false, math.Inf(1), 1); err != nil || st != registry.Failing {
		t.Fatalf("Record mismatch: %v %v", st, err)
	}
	if _, err := rt.Place(k); err == nil || !strings.Contains(err.Error(), "failing") {
		t.Fatalf("a failing cell still serves: %v", err)
	}
	other, _ := NewRuntime(Options{})
	if _, err := other.Record(pl, true, 0, 1); err == nil {
		t.Error("Record accepted a kernel placed by another runtime")
	}
	bad := &fakeDevice{name: "vulkan", fail: errors.New("pipeline creation failed")}
	withFakes(t, map[string]*fakeDevice{"vulkan": bad})
	rt2, _ := NewRuntime(Options{})
	if _, err := rt2.Place(k); err == nil || !strings.Contains(err.Error(), "k on vulkan: pipeline creation failed") {
		t.Errorf("load error: %v", err)
	}
}

func TestFeatureNamesRoundTrip(t *testing.T) {
	var names []string
	for _, d := range featureTable {
		names = append(names, d.name)
	}
	f, err := featuresOf(names)
	if err != nil {
		t.Fatal(err)
	}
	if got := FeatureNames(f); strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("round trip: %v, want %v", got, names)
	}
	if _, err := featuresOf([]string{"ray_tracing"}); err == nil || !strings.Contains(err.Error(), `unknown Vulkan feature "ray_tracing"`) {
		t.Errorf("unknown feature: %v", err)
	}
}

func TestFeatureTableCoversEveryField(t *testing.T) {
	typ := reflect.TypeOf(vulkan.Features{})
	if typ.NumField() != len(featureTable) {
		t.Fatalf("vulkan.Features has %d fields, the feature table %d: name the new feature", typ.NumField(), len(featureTable))
	}
	for i := 0; i < typ.NumField(); i++ {
		var f vulkan.Features
		reflect.ValueOf(&f).Elem().Field(i).SetBool(true)
		if got := FeatureNames(f); len(got) != 1 {
			t.Errorf("field %s maps to %v, want one name", typ.Field(i).Name, got)
		}
	}
}

// TestPlacementWords: a placement the registry knows nothing about says so in words.
func TestPlacementWords(t *testing.T) {
	p := Placement{Kernel: "axpy", Backend: "vulkan", Device: "llvmpipe", State: registry.Missing}
	if s := p.String(); !strings.Contains(s, "no registry evidence for this cell yet") || strings.Contains(s, "missing") {
		t.Errorf("missing cell: %q", s)
	}
	p.State, p.Verified = registry.Fallback, true
	if s := p.String(); s != "axpy on vulkan (llvmpipe): fallback, verified" {
		t.Errorf("verified cell: %q", s)
	}
}
