package oracle

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/internal/testmode"
)

// The golden vectors under testdata/ggml were produced by ggml itself (see its README.md); these
// tests hold the oracle to them bit for bit.

const ggmlDir = "testdata/ggml"

type ggmlQuantEntry struct {
	Type         string   `json:"type"`
	Variant      string   `json:"variant"`
	BlckSize     int      `json:"blck_size"`
	TypeSize     int      `json:"type_size"`
	Rows         int      `json:"rows"`
	NPerRow      int      `json:"n_per_row"`
	RowSize      int      `json:"row_size"`
	Input        string   `json:"input"`
	Imatrix      *string  `json:"imatrix"`
	Quantizer    string   `json:"quantizer"`
	IdenticalRef *bool    `json:"identical_to_from_float_ref"`
	QuantFile    string   `json:"quant_file"`
	DequantFile  *string  `json:"dequant_file"`
	RelRMSE      *float64 `json:"rel_rmse"`
	GGMLTypeID   int      `json:"ggml_type_id"`
	IsQuantized  bool     `json:"is_quantized"`
	QuantBytes   int      `json:"quant_bytes"`
	Dequantizer  *string  `json:"dequantizer"`
}

type ggmlManifest struct {
	Quant       []ggmlQuantEntry `json:"quant"`
	CPUActQuant []struct {
		Type           string `json:"type"`
		Input          string `json:"input"`
		File           string `json:"file"`
		IdenticalToRef bool   `json:"identical_to_ref"`
	} `json:"cpu_act_quant"`
	Files map[string]struct {
		Bytes  int    `json:"bytes"`
		SHA256 string `json:"sha256"`
	} `json:"files"`
}

var (
	manifestOnce sync.Once
	manifestVal  *ggmlManifest
	manifestErr  error
)

func loadManifest(t testing.TB) *ggmlManifest {
	t.Helper()
	manifestOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join(ggmlDir, "manifest.json"))
		if err != nil {
			manifestErr = err
			return
		}
		var m ggmlManifest
		manifestErr = json.Unmarshal(raw, &m)
		manifestVal = &m
	})
	if manifestErr != nil {
		t.Fatalf("manifest: %v", manifestErr)
	}
	return manifestVal
}

func readGGML(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ggmlDir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

func readF32(t testing.TB, name string) []float32 {
	t.Helper()
	b := readGGML(t, name)
	if len(b)%4 != 0 {
		t.Fatalf("%s: %d bytes is not a whole number of f32", name, len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// sameF32 compares bit patterns; any NaN equals any NaN.
func sameF32(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func mustType(t testing.TB, name string) Type {
	t.Helper()
	ty, err := ParseType(name)
	if err != nil {
		t.Fatal(err)
	}
	return ty
}

// TestQuantDataFiles checks the copied golden files against the sizes and sha256 sums the
// manifest records, so a damaged copy fails loudly rather than as a wrong-format report.
func TestQuantDataFiles(t *testing.T) {
	m := loadManifest(t)
	names := make([]string, 0, len(m.Files))
	for name := range m.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	checked := 0
	for _, name := range names {
		if filepath.Dir(name) == "ops" {
			continue // ops/ is copied and checked by the ops tests
		}
		want := m.Files[name]
		b := readGGML(t, name)
		sum := sha256.Sum256(b)
		if len(b) != want.Bytes || hex.EncodeToString(sum[:]) != want.SHA256 {
			t.Errorf("%s: %d bytes sha256 %x, manifest says %d bytes %s", name, len(b), sum, want.Bytes, want.SHA256)
		}
		checked++
	}
	t.Logf("%d golden files match the manifest", checked)
}

// TestDequantizeGGML decodes every quant/*.bin of the manifest and compares with ggml's own
// dequantization bit for bit.
func TestDequantizeGGML(t *testing.T) {
	m := loadManifest(t)
	seen := map[Type]bool{}
	for _, e := range m.Quant {
		e := e
		t.Run(e.Type+"."+e.Variant, func(t *testing.T) {
			ty := mustType(t, e.Type)
			seen[ty] = true
			info, _ := ty.Info()
			if info.BlockSize != e.BlckSize || info.TypeSize != e.TypeSize || int(ty) != e.GGMLTypeID {
				t.Fatalf("type table says %+v id %d, manifest says blck %d size %d id %d", info, ty, e.BlckSize, e.TypeSize, e.GGMLTypeID)
			}
			q := readGGML(t, e.QuantFile)
			n := e.Rows * e.NPerRow
			got := make([]float32, n)
			if err := Dequantize(ty, q, got); err != nil {
				t.Fatal(err)
			}
			var want []float32
			if e.DequantFile != nil {
				want = readF32(t, *e.DequantFile)
			} else if ty == Q8_1 {
				// ggml has no q8_1 dequantizer; q8_1's d and qs are q8_0's, so its values must be
				// ggml's dequantization of q8_0.ref.bin.
				want = readF32(t, "quant/q8_0.ref.dequant.f32")
			} else {
				t.Fatalf("no dequantized reference for %s", e.QuantFile)
			}
			if len(want) != n {
				t.Fatalf("reference has %d values, want %d", len(want), n)
			}
			bad := 0
			for i := range got {
				if !sameF32(got[i], want[i]) {
					if bad < 5 {
						t.Errorf("value %d (row %d, block %d): got %g (%#08x), ggml %g (%#08x)", i, i/e.NPerRow,
							(i%e.NPerRow)/e.BlckSize, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
					bad++
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d values differ", bad, n)
			}
			t.Logf("%s.%s: %d values bit-exact", e.Type, e.Variant, n)
		})
	}
	for _, ty := range Types() {
		if ty != F32 && !seen[ty] {
			t.Errorf("type %s has no golden vectors in the manifest", ty)
		}
	}
}

// knownQuantDiffs lists (type.variant) golden files the oracle's quantizer is known not to
// reproduce byte for byte, with the reason. Empty means every implemented quantizer is exact.
var knownQuantDiffs = map[string]string{}

// TestQuantizeGGML re-quantizes quant_input.f32 (and imatrix.f32) with the oracle and compares
// with ggml's bytes, block by block.
func TestQuantizeGGML(t *testing.T) {
	m := loadManifest(t)
	input := readF32(t, "quant_input.f32")
	imatrix := readF32(t, "imatrix.f32")
	for _, e := range m.Quant {
		e := e
		t.Run(e.Type+"."+e.Variant, func(t *testing.T) {
			ty := mustType(t, e.Type)
			want := readGGML(t, e.QuantFile)
			got := make([]byte, len(want))
			var err error
			switch e.Variant {
			case "ref":
				if _, ok := quantizers[ty]; !ok {
					t.Skipf("%s: the oracle has no quantizer for this codebook type (dequantization is still checked)", e.Type)
				}
				err = QuantizeChunk(ty, input, got, e.NPerRow, nil)
			case "from_float_ref":
				err = Quantize(ty, input, got)
			case "imatrix":
				if _, ok := weightedQuantizers[ty]; !ok {
					t.Skipf("%s: the oracle has no importance-weighted quantizer for this codebook type", e.Type)
				}
				err = QuantizeChunk(ty, input, got, e.NPerRow, imatrix)
			default:
				t.Fatalf("unknown variant %q", e.Variant)
			}
			if err != nil {
				t.Fatal(err)
			}
			compareBlocks(t, e.Type+"."+e.Variant, got, want, e.TypeSize, e.NPerRow/e.BlckSize)
			// The manifest's "identical_to_from_float_ref" promise: Quantize (from_float_ref)
			// must then give the same bytes too.
			if e.Variant == "ref" && e.IdenticalRef != nil && *e.IdenticalRef {
				ref := make([]byte, len(want))
				if err := Quantize(ty, input, ref); err != nil {
					t.Fatal(err)
				}
				compareBlocks(t, e.Type+" from_float_ref", ref, want, e.TypeSize, e.NPerRow/e.BlckSize)
			}
		})
	}
}

// compareBlocks fails (or, for a known difference, logs) when got and want differ, reporting
// the number of differing blocks.
func compareBlocks(t *testing.T, what string, got, want []byte, typeSize, blocksPerRow int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d bytes, ggml has %d", what, len(got), len(want))
	}
	nblocks := len(want) / typeSize
	bad := 0
	for b := 0; b < nblocks; b++ {
		g, w := got[b*typeSize:(b+1)*typeSize], want[b*typeSize:(b+1)*typeSize]
		if !bytes.Equal(g, w) {
			if bad < 3 {
				t.Logf("%s: block %d (row %d) differs:\n oracle %x\n ggml   %x", what, b, b/blocksPerRow, g, w)
			}
			bad++
		}
	}
	if bad == 0 {
		t.Logf("%s: %d blocks byte-identical to ggml", what, nblocks)
		return
	}
	if why, ok := knownQuantDiffs[what]; ok {
		t.Logf("%s: %d of %d blocks differ from ggml (known: %s)", what, bad, nblocks, why)
		return
	}
	t.Errorf("%s: %d of %d blocks differ from ggml", what, bad, nblocks)
}

// TestQuantizeCPUActivations checks the activation quantizers against ggml's CPU backend
// (SIMD) quantizer output, which the manifest says equals the reference.
func TestQuantizeCPUActivations(t *testing.T) {
	m := loadManifest(t)
	input := readF32(t, "quant_input.f32")
	if len(m.CPUActQuant) == 0 {
		t.Fatal("manifest lists no cpu_act_quant files")
	}
	for _, c := range m.CPUActQuant {
		ty := mustType(t, c.Type)
		want := readGGML(t, c.File)
		got := make([]byte, len(want))
		if err := Quantize(ty, input, got); err != nil {
			t.Fatal(err)
		}
		info, _ := ty.Info()
		compareBlocks(t, c.Type+" cpu_from_float", got, want, info.TypeSize, 4096/info.BlockSize)
	}
}

// TestQuantizeRoundTrip quantizes the golden input with every quantizer, dequantizes, and checks
// the relative RMS error stays within a per-format bound, and that the f16/bf16/f32 round trips
// are exact where they must be.
func TestQuantizeRoundTrip(t *testing.T) {
	input := readF32(t, "quant_input.f32")
	// Rows 0..3 (uniform, gauss, outliers, zero blocks) are representable by every format; the
	// large/small rows stress f16 scale overflow and underflow on purpose.
	x := input[:4*4096]
	bounds := map[Type]float64{
		F32: 0, F16: 1e-3, BF16: 5e-3, Q8_0: 0.01, Q8_1: 0.01, Q8_K: 0.01,
		Q4_0: 0.12, Q4_1: 0.12, Q5_0: 0.06, Q5_1: 0.06, IQ4_NL: 0.1, IQ4_XS: 0.1,
		Q2_K: 0.45, Q3_K: 0.25, Q4_K: 0.12, Q5_K: 0.06, Q6_K: 0.03,
		Q1_0: 1, Q2_0: 1, TQ1_0: 1, TQ2_0: 1, MXFP4: 0.25, NVFP4: 0.2,
	}
	for _, ty := range Types() {
		if _, ok := quantizers[ty]; !ok {
			continue
		}
		bound, ok := bounds[ty]
		if !ok {
			t.Errorf("%s: no round-trip bound", ty)
			continue
		}
		size, _ := RowSize(ty, len(x))
		q := make([]byte, size)
		if err := Quantize(ty, x, q); err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		y := make([]float32, len(x))
		if err := Dequantize(ty, q, y); err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		var num, den float64
		for i := range x {
			d := float64(x[i]) - float64(y[i])
			num += d * d
			den += float64(x[i]) * float64(x[i])
		}
		rel := math.Sqrt(num / den)
		if rel > bound {
			t.Errorf("%s: relative RMS error %.4g exceeds %.4g", ty, rel, bound)
		}
		// Quantizing what was dequantized must not move any value further (a fixed point for the
		// exact formats, a contraction for the others).
		q2 := make([]byte, size)
		if err := Quantize(ty, y, q2); err != nil {
			t.Fatal(err)
		}
		// (q8_1 is not: its s = sum*d uses the unrounded f32 d, which re-quantization changes.)
		if ty == F32 || ty == F16 || ty == BF16 || ty == Q8_0 {
			if !bytes.Equal(q, q2) {
				t.Errorf("%s: quantize(dequantize(q)) != q", ty)
			}
		}
		t.Logf("%-7s rel RMS error %.4g", ty, rel)
	}
}

// TestQuantizeErrors checks the argument validation of Quantize, QuantizeChunk and Dequantize.
func TestQuantizeErrors(t *testing.T) {
	if err := Quantize(Q4_0, make([]float32, 33), make([]byte, 18)); err == nil {
		t.Error("Quantize accepted 33 values for q4_0")
	}
	if err := Quantize(Q4_0, make([]float32, 32), make([]byte, 17)); err == nil {
		t.Error("Quantize accepted a short destination")
	}
	if err := Quantize(IQ2_XXS, make([]float32, 256), make([]byte, 66)); err == nil {
		t.Error("Quantize claimed an iq2_xxs quantizer")
	}
	if err := Quantize(Type(99), nil, nil); err == nil {
		t.Error("Quantize accepted an unknown type")
	}
	if err := QuantizeChunk(Q4_0, make([]float32, 64), make([]byte, 36), 48, nil); err == nil {
		t.Error("QuantizeChunk accepted a row that is not whole blocks")
	}
	if err := QuantizeChunk(Q4_0, make([]float32, 64), make([]byte, 36), 32, make([]float32, 31)); err == nil {
		t.Error("QuantizeChunk accepted a short imatrix")
	}
	if err := Dequantize(Q4_0, make([]byte, 19), make([]float32, 32)); err == nil {
		t.Error("Dequantize accepted 19 bytes for one q4_0 block")
	}
	for _, ty := range Types() {
		if ref, _ := HasQuantizer(ty); !ref {
			t.Logf("%s: no reference quantizer (codebook i-quant)", ty)
		}
	}
}

// ---- scalar conversions ----

// ggmlFP16ToFP32 is an independent transcription of ggml's ggml_compute_fp16_to_fp32 (the
// magic-number algorithm of the FP16 library), used to check F16ToF32 on all 65536 inputs.
func ggmlFP16ToFP32(h uint16) float32 {
	w := uint32(h) << 16
	sign := w & 0x80000000
	twoW := w + w
	const expOffset = uint32(0xE0) << 23
	expScale := math.Float32frombits(0x07800000) // 2^-112
	normalized := math.Float32frombits((twoW>>4)+expOffset) * expScale
	const magicMask = uint32(126) << 23
	denormalized := math.Float32frombits((twoW>>17)|magicMask) - 0.5
	var r uint32
	if twoW < 1<<27 {
		r = sign | math.Float32bits(denormalized)
	} else {
		r = sign | math.Float32bits(normalized)
	}
	return math.Float32frombits(r)
}

// ggmlFP32ToFP16 is an independent transcription of ggml's ggml_compute_fp32_to_fp16.
func ggmlFP32ToFP16(f float32) uint16 {
	scaleToInf := math.Float32frombits(0x77800000)  // 2^112
	scaleToZero := math.Float32frombits(0x08800000) // 2^-110
	base := float32(fabs(f)*scaleToInf) * scaleToZero
	w := math.Float32bits(f)
	shl1W := w + w
	sign := w & 0x80000000
	bias := shl1W & 0xFF000000
	if bias < 0x71000000 {
		bias = 0x71000000
	}
	base = math.Float32frombits((bias>>1)+0x07800000) + base
	bits := math.Float32bits(base)
	expBits := (bits >> 13) & 0x00007C00
	mantissaBits := bits & 0x00000FFF
	nonsign := expBits + mantissaBits
	if shl1W > 0xFF000000 {
		return uint16(sign>>16) | 0x7E00
	}
	return uint16(sign>>16) | uint16(nonsign)
}

func TestF16Conversions(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		g := ggmlFP16ToFP32(h)
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN {
			if f == f || g == g {
				t.Fatalf("%#04x: not a NaN (%g, ggml %g)", h, f, g)
			}
			if F32ToF16(f) != h&0x8000|0x7e00 {
				t.Fatalf("%#04x: NaN converts back to %#04x", h, F32ToF16(f))
			}
			continue
		}
		if math.Float32bits(f) != math.Float32bits(g) {
			t.Fatalf("F16ToF32(%#04x) = %g (%#08x), ggml %g (%#08x)", h, f, math.Float32bits(f), g, math.Float32bits(g))
		}
		// exactness: the f16 value is sign * mantissa * 2^exp
		e := int(h>>10) & 0x1f
		man := float64(h & 0x3ff)
		var want float64
		switch e {
		case 0x1f:
			want = math.Inf(1)
		case 0:
			want = math.Ldexp(man, -24)
		default:
			want = math.Ldexp(1024+man, e-25)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("F16ToF32(%#04x) = %g, want %g", h, f, want)
		}
		if back := F32ToF16(f); back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
	// F32ToF16 against ggml's algorithm on a dense sample of all float32 bit patterns, plus
	// every f16 rounding boundary (midpoints and their neighbours).
	check := func(u uint32) {
		f := math.Float32frombits(u)
		if got, want := F32ToF16(f), ggmlFP32ToFP16(f); got != want {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x, ggml %#04x", f, u, got, want)
		}
	}
	step := uint32(65521) // prime: visits all exponents and varied mantissas
	if testing.Short() {
		step = 1000003
	}
	for u := uint64(0); u < 1<<32; u += uint64(step) {
		check(uint32(u))
	}
	for i := 0; i < 1<<15; i++ {
		lo := float64(F16ToF32(uint16(i)))
		hi := float64(F16ToF32(uint16(i + 1)))
		if math.IsInf(hi, 0) || math.IsNaN(hi) {
			hi = 65536
		}
		mid := float32((lo + hi) / 2) // exact: f16 midpoints are float32-representable
		for _, s := range []uint32{0, 1 << 31} {
			m := math.Float32bits(mid) | s
			check(m)
			check(m + 1)
			check(m - 1)
		}
	}
	// Rules stated in the doc comment.
	cases := []struct {
		f    float32
		want uint16
	}{
		{65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{float32(math.Ldexp(1, -25)), 0x0000}, {float32(math.Ldexp(1.0000001, -25)), 0x0001},
		{float32(math.Ldexp(3, -25)), 0x0002}, {float32(math.Ldexp(1, -24)), 0x0001},
		{float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000},
		{math.Float32frombits(0xffc00001), 0xfe00}, {math.Float32frombits(0x7f800001), 0x7e00},
	}
	for _, c := range cases {
		if got := F32ToF16(c.f); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// ggmlFP32ToBF16 is an independent transcription of ggml_compute_fp32_to_bf16.
func ggmlFP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16((u >> 16) | 64)
	}
	return uint16((u + (0x7fff + ((u >> 16) & 1))) >> 16)
}

func TestBF16Conversions(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToF32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		isNaN := h&0x7f80 == 0x7f80 && h&0x7f != 0
		if back := F32ToBF16(f); isNaN && back != h|64 || !isNaN && back != h {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, back)
		}
	}
	for u := uint64(0); u < 1<<32; u += 65521 {
		f := math.Float32frombits(uint32(u))
		if got, want := F32ToBF16(f), ggmlFP32ToBF16(f); got != want {
			t.Fatalf("F32ToBF16(%#08x) = %#04x, ggml %#04x", u, got, want)
		}
		// RNE: the result is one of the two neighbours, the nearer one, ties to even
		if f == f && !math.IsInf(float64(f), 0) {
			got := BF16ToF32(F32ToBF16(f))
			lo := math.Float32frombits(uint32(u) &^ 0xffff)
			hi := math.Float32frombits(uint32(u)&^0xffff + 0x10000)
			hiVal := float64(hi)
			if math.IsInf(hiVal, 0) { // rounding past the largest bf16: the next step is 2^128
				hiVal = math.Copysign(math.Ldexp(1, 128), hiVal)
			}
			dlo := math.Abs(float64(f) - float64(lo))
			dhi := math.Abs(float64(f) - hiVal)
			want := lo
			if dhi < dlo || dhi == dlo && (uint32(u)>>16)&1 == 1 {
				want = hi
			}
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("F32ToBF16(%g) rounds to %g, want %g", f, got, want)
			}
		}
	}
}

func TestScaleDecoders(t *testing.T) {
	for i := 0; i < 256; i++ {
		x := uint8(i)
		want := math.Ldexp(1, i-127)
		if i == 255 {
			want = math.Inf(1)
		}
		if got := E8M0ToF32(x); float64(got) != want {
			t.Errorf("E8M0ToF32(%d) = %g, want %g", i, got, want)
		}
		if got := E8M0ToF32Half(x); float64(got) != math.Ldexp(1, i-128) {
			t.Errorf("E8M0ToF32Half(%d) = %g, want 2^%d", i, got, i-128)
		}
		// UE4M3: the E4M3 value with the sign bit ignored and the bytes 0x00 and 0x7f read as 0
		// (0xff is not special: ggml decodes it as 480), halved.
		v := i & 0x7f
		e, m := v>>3, v&7
		var full float64
		switch {
		case i == 0x7f:
			full = 0
		case e == 0:
			full = math.Ldexp(float64(m), -9)
		default:
			full = math.Ldexp(float64(8+m), e-10)
		}
		if got := UE4M3ToF32Half(x); float64(got) != full/2 {
			t.Errorf("UE4M3ToF32Half(%#02x) = %g, want %g", i, got, full/2)
		}
		if got := UE4M3ToF32(x); float64(got) != full {
			t.Errorf("UE4M3ToF32(%#02x) = %g, want %g", i, got, full)
		}
		// ggml's encoder never produces exponent field 15 except 0x7e (448): it saturates from 2^8.
		if v >= 1 && (e < 15 || v == 0x7e) && i < 0x80 {
			if back := F32ToUE4M3(float32(full)); back != x {
				t.Errorf("F32ToUE4M3(%g) = %#02x, want %#02x", full, back, x)
			}
		}
	}
	cases := []struct {
		f    float32
		want uint8
	}{
		{0, 0}, {-1, 0}, {float32(math.NaN()), 0}, {1e9, 0x7e}, {448, 0x7e}, {464, 0x7e},
		{float32(math.Ldexp(1, -11)), 0}, {float32(math.Ldexp(1, -10)), 1}, {float32(math.Ldexp(1.5, -10)), 1},
		{1.0625, 0x39}, {1.0624, 0x38}, {256, 0x7e}, {239, 0x77}, {248, 0x7e},
	}
	for _, c := range cases {
		if got := F32ToUE4M3(c.f); got != c.want {
			t.Errorf("F32ToUE4M3(%g) = %#02x, want %#02x", c.f, got, c.want)
		}
	}
}

func TestNearestInt(t *testing.T) {
	cases := map[float32]int32{0.5: 0, 1.5: 2, 2.5: 2, -0.5: 0, -1.5: -2, 3.49: 3, -4194303: -4194303, 4194303: 4194303}
	for f, want := range cases {
		if got := nearestInt(f); got != want {
			t.Errorf("nearestInt(%g) = %d, want %d", f, got, want)
		}
	}
	if cvtI32(float32(math.NaN())) != math.MinInt32 || cvtI32(3e9) != math.MinInt32 || cvtI32(-2.9) != -2 {
		t.Error("cvtI32 does not follow cvttss2si")
	}
}

// ---- fuzzing ----

// FuzzDequantize feeds arbitrary bytes as any type and value count: Dequantize must never panic,
// and must return an error exactly when the byte count does not match.
func FuzzDequantize(f *testing.F) {
	f.Add(uint8(Q4_K), uint16(256), bytes.Repeat([]byte{0xff}, 144))
	f.Add(uint8(IQ2_S), uint16(256), make([]byte, 82))
	f.Add(uint8(NVFP4), uint16(64), bytes.Repeat([]byte{0x7f, 0x80}, 18))
	f.Add(uint8(F16), uint16(3), []byte{0, 0x7c, 1, 0x7c})
	f.Add(uint8(IQ1_M), uint16(512), bytes.Repeat([]byte{0xa5}, 112))
	f.Fuzz(func(t *testing.T, typ uint8, n uint16, data []byte) {
		ty := Type(typ)
		dst := make([]float32, int(n))
		err := Dequantize(ty, data, dst)
		size, serr := RowSize(ty, int(n))
		if serr != nil || size != len(data) {
			if err == nil {
				t.Fatalf("%s: %d bytes for %d values accepted", ty, len(data), n)
			}
			return
		}
		if _, ok := dequantizers[ty]; ok && err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
	})
}

// FuzzQuantize feeds arbitrary float32 bit patterns (NaN, Inf, subnormals) to every quantizer:
// Quantize must never panic, and whatever it writes must dequantize without panicking.
func FuzzQuantize(f *testing.F) {
	f.Add(uint8(Q4_K), bytes.Repeat([]byte{0x00, 0x00, 0xc0, 0x7f}, 256))
	f.Add(uint8(Q8_0), bytes.Repeat([]byte{0x01, 0x00, 0x00, 0x00}, 32))
	f.Add(uint8(IQ4_XS), bytes.Repeat([]byte{0xff, 0xff, 0x7f, 0x7f}, 256))
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		ty := Type(typ)
		info, ok := ty.Info()
		if !ok {
			return
		}
		n := len(data) / 4 / info.BlockSize * info.BlockSize
		if n == 0 {
			n = info.BlockSize
		}
		src := make([]float32, n)
		for i := 0; i < n && 4*i+4 <= len(data); i++ {
			src[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		size, _ := RowSize(ty, n)
		dst := make([]byte, size)
		if err := Quantize(ty, src, dst); err != nil {
			return
		}
		_ = Dequantize(ty, dst, make([]float32, n))
		_ = QuantizeChunk(ty, src, dst, n, src)
	})
}

// ---- benchmarks ----

// BenchmarkDequantize measures each dequantizer on 1 Mi values: ggml's own quantized bytes of
// the golden input's first four rows (uniform, gauss, outliers, zero blocks), tiled; f32 uses the
// input itself. b.SetBytes is the OUTPUT size (4 bytes per f32 value written), so the MB/s column
// is f32 output per second; multiply by bits-per-weight/32 for the quantized bytes read.
func BenchmarkDequantize(b *testing.B) {
	const n = 1 << 20
	m := loadManifest(b)
	input := readGGML(b, "quant_input.f32")
	for _, ty := range Types() {
		if _, ok := dequantizers[ty]; !ok {
			continue
		}
		b.Run(ty.String(), func(b *testing.B) {
			size, err := RowSize(ty, n)
			if err != nil {
				b.Fatal(err)
			}
			var sample []byte
			if ty == F32 {
				sample = input[:4*4*4096]
			}
			for _, e := range m.Quant {
				if e.Type == ty.String() && sample == nil {
					sample = readGGML(b, e.QuantFile)[:4*e.RowSize]
				}
			}
			if sample == nil {
				b.Fatalf("no golden bytes for %s", ty)
			}
			src := make([]byte, size)
			for o := 0; o < size; o += len(sample) {
				copy(src[o:], sample)
			}
			dst := make([]float32, n)
			b.SetBytes(4 * n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := Dequantize(ty, src, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQuantize measures each reference quantizer on 64 Ki values of the golden input;
// b.SetBytes is the INPUT size (4 bytes per f32 value read).
func BenchmarkQuantize(b *testing.B) {
	input := readF32(b, "quant_input.f32")[:1<<15]
	for _, ty := range Types() {
		if _, ok := quantizers[ty]; !ok {
			continue
		}
		b.Run(ty.String(), func(b *testing.B) {
			size, _ := RowSize(ty, len(input))
			dst := make([]byte, size)
			b.SetBytes(int64(4 * len(input)))
			for i := 0; i < b.N; i++ {
				if err := Quantize(ty, input, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestQuantNoFusedMultiplyAdd compiles the package for targets that have fused multiply-add
// instructions and fails if any FMA comes from this package's format files: ggml's scalar C rounds
// every product, and Go may fuse x*y+z unless the product is converted explicitly (float32(x*y)).
// It needs the go command and a few seconds, so -short skips it.
func TestQuantNoFusedMultiplyAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package for other architectures")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	fma := regexp.MustCompile(`\t(V?F(N)?M(ADD|SUB)[A-Z0-9]*)\t`)
	// Each architecture compiles the standard library once (15 s cold on 2 cores): the sample
	// takes amd64 with FMA (v3), ONESOURCE_FULL=1 arm64 and riscv64 too.
	for _, env := range testmode.Sample([][]string{{"GOARCH=amd64", "GOAMD64=v3"}, {"GOARCH=arm64"}, {"GOARCH=riscv64"}}, 0) {
		cmd := exec.Command(goTool, "build", "-o", os.DevNull, "-gcflags=-S", ".")
		cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v go build: %v\n%s", env, err, out)
		}
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			if fma.MatchString(line) && strings.Contains(line, string(filepath.Separator)+"quant") {
				if n < 5 {
					t.Errorf("%v: fused multiply-add: %s", env, strings.TrimSpace(line))
				}
				n++
			}
		}
		if n == 0 {
			t.Logf("%v: no fused multiply-add in the format code", env)
		}
	}
}
