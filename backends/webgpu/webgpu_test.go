package webgpu_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/backends/webgpu"
	"github.com/onesource-go/onesource/backends/webgpu/nagacheck"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden compares the WGSL of the example kernels with testdata/<kernel>.wgsl (go test
// ./backends/webgpu -run Golden -update rewrites them after a deliberate change), and checks
// that a second emission gives the same bytes.
func TestGolden(t *testing.T) {
	ks, err := irtest.Examples()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		m, err := webgpu.Compile(k, webgpu.OptionsFor(k))
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		again, err := webgpu.Compile(k, webgpu.OptionsFor(k))
		if err != nil || again.Source != m.Source {
			t.Errorf("%s: a second emission differs (%v)", k.Name, err)
		}
		path := filepath.Join("testdata", k.Name+".wgsl")
		if *update {
			if err := os.WriteFile(path, []byte(m.Source), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run Golden -update writes it)", err)
		}
		if string(want) != m.Source {
			t.Errorf("%s: WGSL differs from %s (go test -run Golden -update rewrites it):\n%s", k.Name, path, m.Source)
		}
	}
}

// allExtensions is the target with every extension the package knows.
var allExtensions = webgpu.Options{F16: true, SubgroupSize: 8, PackedDot: true}

// refused lists the hand-built kernels WGSL cannot express, with what the error says.
var refused = map[string]string{
	"f64":            "not a WGSL identifier", // its name is a WGSL reserved word (and it has f64 values)
	"narrow_storage": "shared array bytes: element type i8",
}

// coreRefused lists the hand-built kernels only core WGSL refuses.
var coreRefused = map[string]string{
	"builtins":         "subgroup_size needs subgroups",
	"builtins_2d":      "needs subgroups",
	"dot_shuffle":      "needs subgroups",
	"dot_shuffle_wg48": "needs subgroups",
	"dot_shuffle_wg16": "needs subgroups",
}

// TestNagaAcceptsEveryModule emits every hand-built kernel (every op, builtin, memory space and
// control-flow shape) for core WGSL and for WGSL with every extension: naga's parser and
// validator must accept each module, and spirv-val naga's SPIR-V of it. A kernel WGSL cannot
// express must fail with the capability error naming its line.
func TestNagaAcceptsEveryModule(t *testing.T) {
	for _, c := range irtest.Cases {
		for _, o := range []webgpu.Options{{}, allExtensions} {
			k, err := c.Kernel()
			if err != nil {
				t.Fatal(err)
			}
			m, err := webgpu.Compile(k, o)
			want := refused[c.Name]
			if want == "" && o == (webgpu.Options{}) {
				want = coreRefused[c.Name]
			}
			if want != "" {
				var ie *ir.Error
				if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &ie) || ie.Pos.File == "" {
					t.Errorf("%s %+v: error %v, want an *ir.Error with a position saying %q", c.Name, o, err, want)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %+v: %v", c.Name, o, err)
				continue
			}
			r, err := nagacheck.SPIRV(m.Source, nagacheck.Options{})
			if err != nil {
				t.Errorf("%s %+v: %v\n%s", c.Name, o, err, m.Source)
				continue
			}
			if err := nagacheck.SPIRVVal(r.Words); err != nil && !errors.Is(err, nagacheck.ErrNoValidator) {
				t.Errorf("%s %+v: %v", c.Name, o, err)
			}
		}
	}
}

// TestCapabilityErrors: what WGSL cannot express under the options is an *ir.Error at the Go
// line of the instruction or resource that needs it.
func TestCapabilityErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  webgpu.Options
		lower bool // lower with opts.Caps() first (else emit the kernel as built)
		build func(b *irtest.Builder) *ir.Inst
		want  string
	}{
		{"shuffle", webgpu.Options{}, false, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			s := b.Op(ir.OpShuffleXor, ir.TU32, b.GID(), b.U32(1))
			b.St(out, b.GID(), s)
			return s
		}, "shuffle_xor needs subgroups"},
		{"lane", webgpu.Options{}, false, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			l := b.Builtin(ir.SubgroupLane, 0)
			b.St(out, b.GID(), l)
			return l
		}, "lane_id needs subgroups"},
		{"dot", webgpu.Options{}, false, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TI32, ir.WriteOnly)
			d := b.Op(ir.OpDotI8x4, ir.TI32, b.GID(), b.U32(0x01020304))
			b.St(out, b.GID(), d)
			return d
		}, "packed_4x8_integer_dot_product"},
		{"reduce", webgpu.Options{}, false, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			r := b.Add(&ir.Inst{Op: ir.OpReduce, Type: ir.TU32, Args: []*ir.Inst{b.GID()}, Aux: uint64(ir.ReduceSum)})
			b.St(out, b.GID(), r)
			return r
		}, "must be expanded by package lower"},
		{"f64", webgpu.Options{}, false, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TF32, ir.WriteOnly)
			x := b.Conv(ir.TF64, b.GID())
			b.St(out, b.GID(), b.Conv(ir.TF32, x))
			return x
		}, "WGSL has no f64"},
		{"fma", webgpu.Options{}, false, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TF32, ir.WriteOnly)
			x := b.Conv(ir.TF32, b.GID())
			f := b.Op(ir.OpFma, ir.TF32, x, x, x)
			b.St(out, b.GID(), f)
			return f
		}, "fma must be emulated"},
		{"subgroup_reduce", allExtensions, false, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			r := b.Add(&ir.Inst{Op: ir.OpSubgroupReduce, Type: ir.TU32, Args: []*ir.Inst{b.GID()}, Aux: uint64(ir.ReduceSum), Ref: 8})
			b.St(out, b.GID(), r)
			return r
		}, "WebGPU cannot fix the subgroup size"},
		{"narrow_shared", webgpu.Options{}, true, func(b *irtest.Builder) *ir.Inst {
			out := b.Buffer("out", ir.TU32, ir.WriteOnly)
			sh := b.Shared("bytes", ir.S(ir.U8), 64)
			b.Store(ir.MemShared, sh, b.GID(), b.GID())
			b.St(out, b.GID(), b.Load(ir.MemShared, sh, b.GID()))
			return nil // the error is at the shared array's line
		}, "shared array bytes: element type u8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := irtest.New("k_"+c.name, 64)
			at := c.build(b)
			k, err := b.Done()
			if err != nil {
				t.Fatal(err)
			}
			wantPos := k.Pos
			if at != nil {
				wantPos = at.Pos
			} else if len(k.Shared) > 0 {
				wantPos = k.Shared[0].Pos
			}
			if c.lower {
				_, err = webgpu.Compile(k, c.opts)
			} else {
				_, err = webgpu.Emit(k, c.opts)
			}
			var ie *ir.Error
			if !errors.As(err, &ie) {
				t.Fatalf("error %v, want an *ir.Error", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if ie.Pos != wantPos {
				t.Errorf("error at %s, want the line of the instruction that needs it, %s", ie.Pos, wantPos)
			}
		})
	}
}

// single lists the hand-built kernels whose invocations store to each other's elements (or
// race through atomics): they run as one invocation in one workgroup, on several inputs, so
// their results are defined.
var single = map[string]bool{
	"arith_f16": true, "convert_bitcast": true, "bool_ops": true, "names_and_consts": true,
	"memory_spaces": true, "atomics": true, "cf_return_in_continuing": true,
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

// runNaga emits the lowered kernel low as WGSL, compiles it with naga and runs it on d over a
// copy of bufs; it returns every buffer after the dispatch.
func runNaga(t *testing.T, d *vulkan.Device, low *ir.Kernel, o webgpu.Options, bufs [][]byte, params []uint32, groups [3]uint32) [][]byte {
	t.Helper()
	m, err := webgpu.Emit(low, o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := nagacheck.SPIRV(m.Source, nagacheck.Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, m.Source)
	}
	vm, err := nagacheck.VulkanModule(m, r, low.SharedBytes())
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Pipeline(vm)
	if err != nil {
		t.Skipf("the device cannot run naga's module of %s: %v", low.Name, err)
	}
	all := make([]int, len(bufs))
	for i := range all {
		all[i] = i
	}
	outs, err := nagacheck.Run(d, p, m, bufs, all, params, groups)
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// fill returns n random elements of type t with special float values among them (small
// integers only when small is set).
func fill(r *rand.Rand, t ir.Type, n int, small bool) []byte {
	b := make([]byte, n*t.Stride())
	specials := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 1, 0x00800000, 0x7f7fffff, 0x4f800000, 0xbf800000, 0x3f000000, 0x4b000000}
	for i := 0; i+4 <= len(b); i += 4 {
		var v uint32
		switch k := r.IntN(4); {
		case small:
			v = uint32(int32(r.IntN(41) - 20))
		case k == 0:
			v = specials[r.IntN(len(specials))]
		case k == 1:
			v = math.Float32bits(float32(r.NormFloat64() * 1e3))
		case k == 2:
			v = uint32(int32(r.IntN(41) - 20))
		default:
			v = r.Uint32()
		}
		binary.LittleEndian.PutUint32(b[i:], v)
	}
	return b
}

// firstDiff returns the first element where a and b differ (f32 elements: any NaN equals any
// NaN), or -1.
func firstDiff(a, b []byte, t ir.Type) int {
	s := t.Stride()
	for e := 0; e*s < len(a); e++ {
		x, y := a[e*s:min(len(a), e*s+s)], b[e*s:min(len(b), e*s+s)]
		if string(x) == string(y) {
			continue
		}
		if t.Scalar == ir.F32 {
			same := true
			for i := 0; i+4 <= len(x); i += 4 {
				u, v := math.Float32frombits(binary.LittleEndian.Uint32(x[i:])), math.Float32frombits(binary.LittleEndian.Uint32(y[i:]))
				same = same && (u == v || (u != u && v != v))
			}
			if same {
				continue
			}
		}
		return e
	}
	return -1
}

// TestRunsLikeCPU is the emitter's meaning check: every hand-built kernel that WGSL expresses
// is lowered for core WGSL (and, where they change something, for WGSL with every extension),
// emitted, compiled by naga and run on the Vulkan device (lavapipe here), and the CPU executor
// (package backends/cpu, which shares no code with either) runs the same lowered kernel on the
// same random inputs: every buffer must end with the same bytes (any f32 NaN equals any NaN).
// The CPU executor follows the C-family printer where the IR leaves a result undefined (x/0,
// out-of-range conversions), as the WGSL helpers do. Kernels whose invocations store to each
// other's elements run as one invocation, on 16 inputs.
func TestRunsLikeCPU(t *testing.T) {
	d := device(t)
	for _, o := range []webgpu.Options{{}, allExtensions} {
		for _, c := range irtest.Cases {
			if c.Name == "cf_endless" || refused[c.Name] != "" || o == (webgpu.Options{}) && coreRefused[c.Name] != "" {
				continue
			}
			if o != (webgpu.Options{}) && c.Name != "arith_f16" && c.Name != "convert_bitcast" && !strings.HasPrefix(c.Name, "dot_shuffle") {
				continue // the extensions change only these
			}
			t.Run(c.Name+map[bool]string{true: "/core", false: "/extensions"}[o == webgpu.Options{}], func(t *testing.T) {
				cs := c
				groups, trials := [3]uint32{2, 1, 1}, 1
				if single[c.Name] {
					cs.WG, groups, trials = []uint32{1}, [3]uint32{1, 1, 1}, 16
				}
				k, err := cs.Kernel()
				if err != nil {
					t.Fatal(err)
				}
				low, err := lower.Run(k, o.Caps())
				if err != nil {
					t.Fatal(err)
				}
				p, err := cpu.CompileLowered(low)
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(11, uint64(len(c.Name))))
				for trial := 0; trial < trials; trial++ {
					var bufs [][]byte
					for _, b := range low.Buffers {
						bufs = append(bufs, fill(r, b.Elem, 8192, c.Name == "cf_terminating_branches"))
					}
					params := make([]uint32, len(low.Params))
					for i := range params {
						params[i] = uint32(r.IntN(7) + 12)
						if low.Params[i].Type == ir.TF32 {
							params[i] = math.Float32bits(float32(r.IntN(7)) - 2.5)
						}
					}
					want := make([][]byte, len(bufs))
					for i, b := range bufs {
						want[i] = slices.Clone(b)
					}
					if err := p.Run(want, params, groups); err != nil {
						t.Fatalf("CPU executor: %v", err)
					}
					got := runNaga(t, d, low, o, bufs, params, groups)
					for i, b := range low.Buffers {
						if e := firstDiff(got[i], want[i], b.Elem); e >= 0 {
							s := b.Elem.Stride()
							t.Errorf("trial %d: buffer %s element %d: naga's SPIR-V of the WGSL %x, CPU executor %x", trial, b.Name, e, got[i][e*s:min(len(got[i]), e*s+s)], want[i][e*s:min(len(want[i]), e*s+s)])
						}
					}
				}
			})
		}
	}
}

// TestF16RoundsToNearestEven: core WGSL has no f16, so an f32 -> f16 conversion is the
// emitter's integer rounding and an f16 element is half of a u32 word that neighbouring
// invocations store with atomics. For every f16 h, the kernel converts h's value, the
// midpoint to the next f16 and the f32 values one ulp either side of it; package oracle
// (F32ToF16, F16ToF32) is the judge of the stored halves and of their values read back.
func TestF16RoundsToNearestEven(t *testing.T) {
	d := device(t)
	b := irtest.New("f16_round", 64)
	in := b.Buffer("x", ir.TF32, ir.ReadOnly)
	out := b.Buffer("h", ir.TF16, ir.WriteOnly)
	back := b.Buffer("back", ir.TF32, ir.WriteOnly)
	i := b.GID()
	h := b.Conv(ir.TF16, b.Ld(in, i))
	b.St(out, i, h)
	b.St(back, i, b.Conv(ir.TF32, h))
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	var xs []float32
	for h := 0; h < 1<<16; h++ {
		v := oracle.F16ToF32(uint16(h))
		next := oracle.F16ToF32(uint16(h + 1))
		mid := float32((float64(v) + float64(next)) / 2)
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.IsNaN(float64(next)) {
			mid = v
		}
		xs = append(xs, v, mid, math.Nextafter32(mid, float32(math.Inf(-1))), math.Nextafter32(mid, float32(math.Inf(1))))
	}
	n := len(xs)
	x := make([]byte, 4*n)
	for j, v := range xs {
		binary.LittleEndian.PutUint32(x[4*j:], math.Float32bits(v))
	}
	low, err := lower.Run(k, webgpu.Caps)
	if err != nil {
		t.Fatal(err)
	}
	got := runNaga(t, d, low, webgpu.Options{}, [][]byte{x, make([]byte, 2*n), make([]byte, 4*n)}, nil, [3]uint32{uint32(n / 64), 1, 1})
	bad := 0
	for j, v := range xs {
		wantH := oracle.F32ToF16(v)
		gotH := binary.LittleEndian.Uint16(got[1][2*j:])
		wantB := oracle.F16ToF32(wantH)
		gotB := math.Float32frombits(binary.LittleEndian.Uint32(got[2][4*j:]))
		nan := math.IsNaN(float64(v))
		if (gotH != wantH && !(nan && gotH&0x7c00 == 0x7c00 && gotH&0x3ff != 0)) || (gotB != wantB && !(nan && gotB != gotB)) {
			if bad++; bad <= 5 {
				t.Errorf("x = %g (%08x): half %04x, read back %g; want %04x, %g", v, math.Float32bits(v), gotH, gotB, wantH, wantB)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d conversions differ from the oracle", bad, n)
	}
}

// TestNarrowElements: i8, u8, i16 and u16 elements are parts of u32 words: a load extends
// (sign or zero), a store wraps, and 64 invocations storing the bytes of the same 16 words
// at once keep each other's bytes (the store is two atomics on the word).
func TestNarrowElements(t *testing.T) {
	d := device(t)
	kinds := []ir.Scalar{ir.I8, ir.U8, ir.I16, ir.U16}
	b := irtest.New("narrow", 64)
	in := b.Buffer("in", ir.TI32, ir.ReadOnly)
	var outs, backs []int
	for _, s := range kinds {
		outs = append(outs, b.Buffer("n_"+s.String(), ir.S(s), ir.ReadWrite))
		backs = append(backs, b.Buffer("back_"+s.String(), ir.TI32, ir.WriteOnly))
	}
	i := b.GID()
	v := b.Ld(in, i)
	for j, s := range kinds {
		x := v
		if !s.IsSigned() {
			x = b.Bitcast(ir.TU32, v)
		}
		b.St(outs[j], i, x)
	}
	b.Barrier()
	for j, s := range kinds {
		r := b.Ld(outs[j], i)
		if !s.IsSigned() {
			r = b.Bitcast(ir.TI32, r)
		}
		b.St(backs[j], i, r)
	}
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	low, err := lower.Run(k, webgpu.Caps)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64 * 16
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]int32, n)
	bufs := [][]byte{make([]byte, 4*n)}
	for j := range vals {
		vals[j] = int32(r.Uint32())
		binary.LittleEndian.PutUint32(bufs[0][4*j:], uint32(vals[j]))
	}
	for _, s := range kinds {
		bufs = append(bufs, make([]byte, n*s.Bits()/8), make([]byte, 4*n))
	}
	got := runNaga(t, d, low, webgpu.Options{}, bufs, nil, [3]uint32{n / 64, 1, 1})
	for j, s := range kinds {
		for e, v := range vals {
			var stored []byte
			var want int32
			switch s {
			case ir.I8:
				stored, want = []byte{byte(v)}, int32(int8(v))
			case ir.U8:
				stored, want = []byte{byte(v)}, int32(uint8(v))
			case ir.I16:
				stored, want = []byte{byte(v), byte(v >> 8)}, int32(int16(v))
			case ir.U16:
				stored, want = []byte{byte(v), byte(v >> 8)}, int32(uint16(v))
			}
			w := len(stored)
			if g := got[1+2*j][e*w : e*w+w]; string(g) != string(stored) {
				t.Fatalf("%s element %d holds %x, want %x (value %d)", s, e, g, stored, v)
			}
			if g := int32(binary.LittleEndian.Uint32(got[2+2*j][4*e:])); g != want {
				t.Fatalf("%s element %d reads back %d, want %d", s, e, g, want)
			}
		}
	}
}

// TestLiterals: constants reach the device with their exact bits through the WGSL text and
// naga's parser: shortest decimals for finite floats (subnormals and extremes included), a
// function call for NaNs and infinities, and the most negative i32.
func TestLiterals(t *testing.T) {
	d := device(t)
	f32s := []uint32{0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800001,
		0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00001, 0xffc12345, 0x3eaaaaab, 0x4b000001, 0x33800000, 0x3dcccccd}
	i32s := []int32{math.MinInt32, math.MaxInt32, -1, 0, 7}
	b := irtest.New("literals", 1)
	of := b.Buffer("f", ir.TF32, ir.WriteOnly)
	oi := b.Buffer("i", ir.TI32, ir.WriteOnly)
	for j, bits := range f32s {
		b.St(of, b.U32(uint32(j)), b.Bits(ir.TF32, uint64(bits)))
	}
	for j, v := range i32s {
		b.St(oi, b.U32(uint32(j)), b.I32(v))
	}
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	got := runNaga(t, d, k, webgpu.Options{}, [][]byte{make([]byte, 4*len(f32s)), make([]byte, 4*len(i32s))}, nil, [3]uint32{1, 1, 1})
	for j, bits := range f32s {
		g := binary.LittleEndian.Uint32(got[0][4*j:])
		f := math.Float32frombits(bits)
		if g != bits && !(f != f && math.Float32frombits(g) != math.Float32frombits(g)) {
			t.Errorf("f32 constant %08x (%g) arrived as %08x", bits, f, g)
		}
	}
	for j, v := range i32s {
		if g := int32(binary.LittleEndian.Uint32(got[1][4*j:])); g != v {
			t.Errorf("i32 constant %d arrived as %d", v, g)
		}
	}
}
