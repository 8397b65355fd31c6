package nagacheck

// Each test here shows one defect of naga (Version) that changes what a module means, or one
// WGSL feature it does not take, so that a naga upgrade that fixes it fails the test and the
// workaround (or the package documentation) can go. The WGSL is written by hand: these tests
// judge naga, not package webgpu.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cfamily"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/backends/webgpu"
	"github.com/onesource-go/onesource/internal/irtest"
)

// constValues maps the ids of m's 32-bit integer OpConstants to their values.
func constValues(m *module) map[uint32]uint32 {
	ints := m.pointers().intType
	out := map[uint32]uint32{}
	for _, in := range m.insts {
		if in.op == opConstant && ints[in.args[0]] && len(in.args) == 3 {
			out[in.args[1]] = in.args[2]
		}
	}
	return out
}

func count(m *module, op uint16) int {
	n := 0
	for _, in := range m.insts {
		if in.op == op {
			n++
		}
	}
	return n
}

func mustParse(t *testing.T, words []uint32) *module {
	t.Helper()
	m, err := parse(words)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func spirvOf(t *testing.T, src string, o Options) *Result {
	t.Helper()
	r, err := SPIRV(src, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func validate(t *testing.T, words []uint32) {
	t.Helper()
	err := SPIRVVal(words)
	if errors.Is(err, ErrNoValidator) {
		t.Logf("spirv-val not installed: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
}

// device opens the first Vulkan device or skips.
func device(t *testing.T) *vulkan.Device {
	t.Helper()
	if err := vulkan.Available(); err != nil {
		t.Skipf("Vulkan unavailable: %v", err)
	}
	d, err := vulkan.Open(vulkan.Options{})
	if err != nil {
		t.Skipf("Vulkan device: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// runU32 runs words (the module of src, entry point main, one read_write u32 buffer of n
// words at binding 0) once with the given workgroups and returns the buffer.
func runU32(t *testing.T, d *vulkan.Device, src string, r *Result, in []uint32, groups uint32) []uint32 {
	t.Helper()
	m := &webgpu.Module{Name: "main", Source: src, WorkgroupSize: r.LocalSize, Bindings: []webgpu.Binding{{Name: "buf", ElemBytes: 4}}}
	vm, err := VulkanModule(m, r, 64)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Pipeline(vm)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4*len(in))
	for i, v := range in {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	outs, err := Run(d, p, m, [][]byte{b}, []int{0}, nil, [3]uint32{groups, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(in))
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(outs[0][4*i:])
	}
	return out
}

const atomicAccessWGSL = `
@group(0) @binding(0) var<storage, read_write> buf: array<atomic<u32>>;
var<workgroup> f: array<f32, 2>;
var<workgroup> s: array<atomic<u32>, 2>;

@compute @workgroup_size(1, 1, 1)
fn main() {
	f[0] = 1.0f;
	atomicStore(&buf[0], 1u);
	let v = atomicLoad(&buf[1]);
	atomicStore(&s[0], v);
	atomicStore(&buf[2], atomicLoad(&s[0]));
}
`

// TestAtomicLoadStoreArePlain: naga writes atomicLoad and atomicStore as OpLoad and OpStore;
// SPIRV makes them OpAtomicLoad and OpAtomicStore.
func TestAtomicLoadStoreArePlain(t *testing.T) {
	r := spirvOf(t, atomicAccessWGSL, Options{})
	raw := mustParse(t, r.Raw)
	if n := count(raw, opAtomicLoad) + count(raw, opAtomicStore); n != 0 {
		t.Errorf("naga %s now writes %d atomic loads and stores: drop fixAtomicAccess", Version, n)
	}
	fixed := mustParse(t, r.Words)
	if got := count(fixed, opAtomicStore); got != 3 {
		t.Errorf("fixed module has %d OpAtomicStore, want 3 (buf[0], s[0], buf[2])", got)
	}
	if got := count(fixed, opAtomicLoad); got < 2 {
		t.Errorf("fixed module has %d OpAtomicLoad, want at least 2 (buf[1], s[0])", got)
	}
	if len(r.Fixes) == 0 || !strings.Contains(r.Fixes[0].Name, "atomicLoad/atomicStore") {
		t.Errorf("fixes %v do not name the atomic access fix", r.Fixes)
	}
	validate(t, r.Words)
	d := device(t)
	got := runU32(t, d, atomicAccessWGSL, r, []uint32{0, 7, 0}, 1)
	if got[0] != 1 || got[2] != 7 {
		t.Errorf("fixed module ran to %v, want [1 7 7]", got)
	}
}

// casWGSL adds 1.0 to a workgroup f32 with a compare-exchange loop from each of 64 invocations
// (what package lower makes of an f32 atomic add on a shared array) and stores the sum.
const casWGSL = `
@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
var<workgroup> s: array<atomic<u32>, 1>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_index) lidx: u32, @builtin(workgroup_id) wgid: vec3<u32>) {
	if (lidx == 0u) {
		atomicStore(&s[0], 0u);
	}
	workgroupBarrier();
	var old = atomicOr(&s[0], 0u);
	loop {
		let r = atomicCompareExchangeWeak(&s[0], old, bitcast<u32>(bitcast<f32>(old) + 1.0f));
		if (r.exchanged) {
			break;
		}
		old = r.old_value;
	}
	workgroupBarrier();
	if (lidx == 0u) {
		buf[wgid.x] = atomicLoad(&s[0]);
	}
}
`

// TestAtomicOrder: naga gives every atomic Device scope and AcquireRelease|UniformMemory
// semantics, also on workgroup memory; SPIRV makes them relaxed, with Workgroup scope on
// workgroup memory. On lavapipe the workgroup compare-exchange loop of casWGSL loses adds with
// naga's words.
func TestAtomicOrder(t *testing.T) {
	r := spirvOf(t, casWGSL, Options{})
	for _, c := range []struct {
		name  string
		words []uint32
		raw   bool
	}{{"naga", r.Raw, true}, {"fixed", r.Words, false}} {
		m := mustParse(t, c.words)
		p := m.pointers()
		vals := constValues(m)
		n := 0
		for _, in := range m.insts {
			ptr, scope, sem, ok := atomicOperands(in)
			if !ok {
				continue
			}
			n++
			sc, se := vals[in.args[scope]], vals[in.args[sem]]
			wg := p.storageClass(in.args[ptr]) == storageClassWorkgroup
			if c.raw {
				if sc != scopeDevice || se&0x8 == 0 {
					t.Errorf("naga %s now writes atomic op %d with scope %d, semantics %#x: drop fixAtomicOrder", Version, in.op, sc, se)
				}
				continue
			}
			if wantScope := map[bool]uint32{true: scopeWorkgroup, false: scopeDevice}[wg]; sc != wantScope || se != semanticsRelaxed {
				t.Errorf("fixed atomic op %d (workgroup %v): scope %d semantics %#x", in.op, wg, sc, se)
			}
		}
		if want := map[bool]int{true: 2, false: 4}[c.raw]; n < want {
			t.Errorf("%s: %d atomics, want at least %d", c.name, n, want)
		}
	}
	validate(t, r.Words)
	d := device(t)
	const groups = 16
	fixed := runU32(t, d, casWGSL, r, make([]uint32, groups), groups)
	for i, v := range fixed {
		if math.Float32frombits(v) != 64 {
			t.Fatalf("fixed module: workgroup %d summed %g, want 64", i, math.Float32frombits(v))
		}
	}
	raw := *r
	raw.Words = r.Raw
	got := runU32(t, d, casWGSL, &raw, make([]uint32, groups), groups)
	lost := 0
	for _, v := range got {
		if math.Float32frombits(v) != 64 {
			lost++
		}
	}
	t.Logf("naga's own words on %s: %d of %d workgroups lost adds (first sum %g of 64)", d.Info().Name, lost, groups, math.Float32frombits(got[0]))
}

// TestOverrideWorkgroupSize: a workgroup size given by an override becomes LocalSize 1x1x1 in
// naga's SPIR-V. Package webgpu writes literal sizes; VulkanModule refuses a module whose
// LocalSize is not the one the WGSL says.
func TestOverrideWorkgroupSize(t *testing.T) {
	src := `
override wg: u32 = 64u;
@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
@compute @workgroup_size(wg, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
	buf[gid.x] = gid.x;
}
`
	r := spirvOf(t, src, Options{})
	if r.LocalSize != [3]uint32{1, 1, 1} {
		t.Errorf("naga %s now writes LocalSize %v for @workgroup_size(wg) with wg = 64: update the package documentation", Version, r.LocalSize)
	}
	m := &webgpu.Module{Name: "main", WorkgroupSize: [3]uint32{64, 1, 1}}
	if _, err := VulkanModule(m, r, 0); err == nil || !strings.Contains(err.Error(), "LocalSize") {
		t.Errorf("VulkanModule accepted a LocalSize %v for @workgroup_size(64): %v", r.LocalSize, err)
	}
	lit := spirvOf(t, strings.Replace(src, "@workgroup_size(wg, 1, 1)", "@workgroup_size(64, 1, 1)", 1), Options{})
	if lit.LocalSize != [3]uint32{64, 1, 1} {
		t.Errorf("literal @workgroup_size(64, 1, 1) gave LocalSize %v", lit.LocalSize)
	}
}

// TestF16NeedsStorageInputOutput16: naga's default SPIR-V options declare StorageInputOutput16
// for any f16 use, though a compute shader's inputs are u32 builtins; lavapipe does not have
// the feature. SPIRV turns the option off, and VulkanModule refuses a module that declares it.
func TestF16NeedsStorageInputOutput16(t *testing.T) {
	src := `
enable f16;
@group(0) @binding(0) var<storage, read_write> buf: array<f16>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
	buf[gid.x] = buf[gid.x] * 2.0h;
}
`
	def := spirvOf(t, src, Options{NagaDefaults: true})
	has := func(caps []uint32, c uint32) bool {
		for _, x := range caps {
			if x == c {
				return true
			}
		}
		return false
	}
	if !has(def.Capabilities, CapabilityStorageInputOutput16) {
		t.Errorf("naga %s's default options no longer declare StorageInputOutput16 for an f16 storage buffer: update the package documentation", Version)
	}
	m := &webgpu.Module{Name: "main", WorkgroupSize: [3]uint32{64, 1, 1}, Bindings: []webgpu.Binding{{ElemBytes: 2}}}
	if _, err := VulkanModule(m, def, 0); err == nil {
		t.Error("VulkanModule accepted a module declaring StorageInputOutput16")
	}
	ours := spirvOf(t, src, Options{})
	if has(ours.Capabilities, CapabilityStorageInputOutput16) || !has(ours.Capabilities, CapabilityFloat16) {
		t.Errorf("SPIRV's capabilities %v: want Float16 without StorageInputOutput16", ours.Capabilities)
	}
	validate(t, ours.Words)
}

// reassocWGSL computes (x + 1.5*2^23) - 1.5*2^23, which rounds x to an integer (the rounding
// step of the portable exp) when each operation is rounded as written.
const reassocWGSL = `
@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
@compute @workgroup_size(1, 1, 1)
fn main() {
	let x = bitcast<f32>(buf[0]);
	let y = x + 12582912.0f;
	buf[1] = bitcast<u32>(y - 12582912.0f);
}
`

// TestNoContraction: WGSL has no NoContraction, so naga's SPIR-V has none, and a driver may
// rewrite its float operations: Mesa does, turning (x + C) - C into x. SPIRV decorates every
// float operation NoContraction, so the operations stay as written.
func TestNoContraction(t *testing.T) {
	r := spirvOf(t, reassocWGSL, Options{})
	if has, err := HasNoContraction(r.Raw); err != nil || has {
		t.Errorf("naga %s now writes NoContraction (%v): update the package documentation", Version, err)
	}
	if has, err := HasNoContraction(r.Words); err != nil || !has {
		t.Errorf("fixed module has no NoContraction (%v)", err)
	}
	validate(t, r.Words)
	d := device(t)
	x := math.Float32bits(125.514465)
	got := runU32(t, d, reassocWGSL, r, []uint32{x, 0}, 1)
	if f := math.Float32frombits(got[1]); f != 126 {
		t.Errorf("fixed module: (x + C) - C = %g, want 126", f)
	}
	raw := *r
	raw.Words = r.Raw
	got = runU32(t, d, reassocWGSL, &raw, []uint32{x, 0}, 1)
	t.Logf("naga's own words on %s: (125.514465 + C) - C = %g (126 when each operation is rounded as written)", d.Info().Name, math.Float32frombits(got[1]))
}

// TestFloatNotEqualIsOrdered: naga writes WGSL's float != as OpFOrdNotEqual (false when an
// operand is NaN); package webgpu writes !(a == b).
func TestFloatNotEqualIsOrdered(t *testing.T) {
	src := `
@group(0) @binding(0) var<storage, read_write> buf: array<f32>;
@compute @workgroup_size(1, 1, 1)
fn main() {
	buf[2] = select(0.0f, 1.0f, buf[0] != buf[1]);
}
`
	m := mustParse(t, spirvOf(t, src, Options{}).Raw)
	const opFOrdNotEqual, opFUnordNotEqual = 182, 183
	if count(m, opFOrdNotEqual) != 1 || count(m, opFUnordNotEqual) != 0 {
		t.Errorf("naga %s now writes float != as %d ordered, %d unordered compares: update the package documentation of package webgpu", Version, count(m, opFOrdNotEqual), count(m, opFUnordNotEqual))
	}
}

// TestUnparsed: valid WGSL naga does not parse: hex float literals and the requires directive
// (package webgpu writes decimal literals and puts requires in a comment).
func TestUnparsed(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"hex float", "@group(0) @binding(0) var<storage, read_write> buf: array<f32>;\n@compute @workgroup_size(1)\nfn main() { buf[0] = 0x1.8p+1f; }\n"},
		{"requires", "requires packed_4x8_integer_dot_product;\n@group(0) @binding(0) var<storage, read_write> buf: array<i32>;\n@compute @workgroup_size(1)\nfn main() { buf[0] = dot4I8Packed(1u, 2u); }\n"},
	} {
		if _, err := Parse(c.src); err == nil {
			t.Errorf("naga %s now parses %s: update the package documentation", Version, c.name)
		}
	}
}

// TestNoUniformityAnalysis: naga accepts a barrier under a condition on the invocation's
// index, which WGSL's uniformity analysis (and Dawn/Tint) rejects: naga's validation is not
// the WGSL specification's.
func TestNoUniformityAnalysis(t *testing.T) {
	src := `
@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_index) lidx: u32) {
	if (lidx == 0u) {
		workgroupBarrier();
	}
	buf[lidx] = lidx;
}
`
	if _, err := Parse(src); err != nil {
		t.Logf("naga %s now rejects a barrier in non-uniform control flow (%v): update the package documentation", Version, err)
	}
}

// deadAtomicWGSL sums 0..999 across a workgroup; the branch with the storage-buffer atomic
// never runs (every index is in bounds), as in a bounds-checked kernel.
const deadAtomicWGSL = `
@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
@group(0) @binding(1) var<storage, read_write> oob: array<atomic<u32>>;
var<workgroup> red: array<f32, 64>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_index) lidx: u32) {
	var acc = 0.0f;
	var i = lidx;
	loop {
		if (i >= 1000u) {
			break;
		}
		if (i < arrayLength(&buf)) {
			acc = acc + f32(buf[i]);
		} else {
			atomicAdd(&oob[0], 1u);
		}
		i = i + 64u;
	}
	red[lidx] = acc;
	workgroupBarrier();
	if (lidx == 0u) {
		var s = 0.0f;
		for (var j = 0u; j < 64u; j = j + 1u) {
			s = s + red[j];
		}
		buf[1000] = bitcast<u32>(s);
	}
}
`

// TestStorageAtomicSemantics: on lavapipe, a storage-buffer atomic with naga's
// AcquireRelease|UniformMemory semantics in a branch that never runs is enough to lose the
// workgroup's sum; with the atomic relaxed (fixAtomicOrder alone) the sum is right.
func TestStorageAtomicSemantics(t *testing.T) {
	r := spirvOf(t, deadAtomicWGSL, Options{})
	d := device(t)
	run := func(words []uint32) (float32, uint32) {
		t.Helper()
		m := &webgpu.Module{Name: "main", WorkgroupSize: [3]uint32{64, 1, 1}, Bindings: []webgpu.Binding{{Name: "buf", ElemBytes: 4}, {Name: "oob", ElemBytes: 4}}}
		rr := *r
		rr.Words = words
		vm, err := VulkanModule(m, &rr, 256)
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Pipeline(vm)
		if err != nil {
			t.Fatal(err)
		}
		in := make([]byte, 4*1001)
		for i := 0; i < 1000; i++ {
			binary.LittleEndian.PutUint32(in[4*i:], uint32(i))
		}
		outs, err := Run(d, p, m, [][]byte{in, make([]byte, 16)}, []int{0, 1}, nil, [3]uint32{1, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(outs[0][4000:])), binary.LittleEndian.Uint32(outs[1])
	}
	const want = 999 * 1000 / 2
	m := mustParse(t, r.Raw)
	if fixAtomicOrder(m) == 0 {
		t.Fatal("fixAtomicOrder changed nothing in naga's words")
	}
	if got, oob := run(m.words()); got != want || oob != 0 {
		t.Errorf("naga's words with relaxed atomics: sum %g, atomic count %d; want %d, 0", got, oob, want)
	}
	if got, oob := run(r.Words); got != want || oob != 0 {
		t.Errorf("SPIRV's words: sum %g, atomic count %d; want %d, 0", got, oob, want)
	}
	got, _ := run(r.Raw)
	t.Logf("naga's own words on %s: sum %g (want %d)", d.Info().Name, got, want)
}

// TestMSLSecondOpinion compiles the example kernels' WGSL to MSL with naga, next to the MSL
// the C-family printer writes for the same kernels: naga must translate every module, with one
// kernel function of the kernel's name and one [[buffer(i)]] per WGSL binding. The project's
// MSL host check (not Apple's compiler) accepts the printer's MSL; naga's MSL uses metal::
// names and vector operators its shim does not declare, so the host check cannot judge it:
// the test reports the first thing it lacks.
func TestMSLSecondOpinion(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		m, err := webgpu.Compile(k, webgpu.OptionsFor(k))
		if err != nil {
			t.Fatal(err)
		}
		src, _, err := MSL(m.Source)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if !strings.Contains(src, "kernel void "+k.Name+"(") {
			t.Errorf("%s: naga's MSL has no kernel function %s", k.Name, k.Name)
		}
		for i := range m.Bindings {
			if !strings.Contains(src, fmt.Sprintf("[[buffer(%d)]]", i)) {
				t.Errorf("%s: naga's MSL has no [[buffer(%d)]] for WGSL binding %d", k.Name, i, i)
			}
		}
		ours, err := metal.Emit(k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := metal.HostCheck(ours); errors.Is(err, cfamily.ErrNoTool) {
			t.Skipf("clang++ not installed: %v", err)
		} else if err != nil {
			t.Errorf("%s: the printer's MSL fails the host check: %v", k.Name, err)
		}
		_, err = metal.HostCheck(strings.Replace(src, "#include <simd/simd.h>\n", "", 1))
		if err == nil {
			t.Logf("%s: naga's MSL passes the host check", k.Name)
			continue
		}
		first := ""
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.Contains(line, "error:") {
				first = strings.TrimSpace(line)
				break
			}
		}
		t.Logf("%s: naga's MSL (%d bytes) is not judged by the host check: %s", k.Name, len(src), first)
	}
}

// roundTripWGSL converts a u32 to f32 and back: the f32 rounds to nearest even, so the result
// is the input rounded to 24 significant bits.
const roundTripWGSL = `
@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
@compute @workgroup_size(1, 1, 1)
fn main() {
	buf[1] = u32(f32(buf[0]));
}
`

// TestConversionFolded: without NoContraction on the conversions, Mesa folds u32(f32(x)) into
// x; SPIRV decorates conversions too.
func TestConversionFolded(t *testing.T) {
	r := spirvOf(t, roundTripWGSL, Options{})
	validate(t, r.Words)
	d := device(t)
	const x, want = 0x43dcbda5, 0x43dcbd80
	if got := runU32(t, d, roundTripWGSL, r, []uint32{x, 0}, 1); got[1] != want {
		t.Errorf("fixed module: u32(f32(%#x)) = %#x, want %#x", x, got[1], want)
	}
	raw := *r
	raw.Words = r.Raw
	got := runU32(t, d, roundTripWGSL, &raw, []uint32{x, 0}, 1)
	t.Logf("naga's own words on %s: u32(f32(%#x)) = %#x (%#x when the conversions round)", d.Info().Name, uint32(x), got[1], uint32(want))
}

// TestBitcastHalvesMistyped: naga gives bitcast<f32>(vec2<f16>) the result type vec2<f16>,
// which spirv-val rejects; package webgpu writes such bitcasts with integer helpers.
func TestBitcastHalvesMistyped(t *testing.T) {
	src := `
enable f16;
@group(0) @binding(0) var<storage, read_write> buf: array<f32>;
@compute @workgroup_size(1, 1, 1)
fn main() {
	let h = vec2<f16>(1.0h, 2.0h);
	buf[0] = bitcast<f32>(h);
}
`
	r := spirvOf(t, src, Options{})
	err := SPIRVVal(r.Words)
	if errors.Is(err, ErrNoValidator) {
		t.Skip(err)
	}
	if err == nil {
		t.Errorf("naga %s's SPIR-V of bitcast<f32>(vec2<f16>) now validates: update the package documentation", Version)
	}
}
