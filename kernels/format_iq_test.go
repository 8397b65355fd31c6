package kernels_test

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// This file holds the decoder tests of the i-quants and the helpers the ternary and fp4 tests
// share: every block of ggml's golden vectors and synthetic edge blocks are decoded on the device
// by a get_rows-like kernel (one invocation per value, Format.Value) and compared with
// oracle.Dequantize byte for byte (any NaN equals any NaN), compiled for the device's
// capabilities and for vulkan.PortableCaps; the integer path (Format.DotQ8) is compared with
// oracle.DotQ8 one weight block at a time.

type fmtTarget struct {
	name string
	caps lower.Caps
}

func fmtTargets(d *vulkan.Device) []fmtTarget {
	return []fmtTarget{{"device", d.Caps()}, {"portable", vulkan.PortableCaps}}
}

func fmtInfo(t *testing.T, typ oracle.Type) (kernels.Format, oracle.TypeInfo) {
	t.Helper()
	f, ok := kernels.FormatOf(typ)
	if !ok {
		t.Fatalf("no format registered for %s", typ)
	}
	ti, _ := typ.Info()
	return f, ti
}

// fmtTableBufs returns the table buffers of f, in binding order.
func fmtTableBufs(t *testing.T, f kernels.Format) [][]byte {
	t.Helper()
	var out [][]byte
	for _, name := range f.Tables {
		b, err := kernels.TableWords(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// fmtDecodeKernel writes out[i] = Value(block i / bs, element i % bs) for i < n.
func fmtDecodeKernel(f kernels.Format, ti oracle.TypeInfo) *dsl.Kernel {
	k := dsl.New("decode_"+ti.Name, 64)
	w := kernels.NewBytes(k, "w")
	out := k.Buffer("out", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	dec := kernels.NewDecoder(k, w, f)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() {
		b := i.Div(uint32(ti.BlockSize))
		j := i.Sub(b.Mul(uint32(ti.BlockSize)))
		out.Store(i, f.Value(dec, b.Mul(uint32(ti.TypeSize)), j))
	})
	return k
}

// fmtCheckDecode decodes blocks (whole blocks of typ) on the device for every target and compares
// with the oracle.
func fmtCheckDecode(t *testing.T, typ oracle.Type, what string, blocks []byte) {
	t.Helper()
	d := vktest.Device(t)
	f, ti := fmtInfo(t, typ)
	nb := len(blocks) / ti.TypeSize
	n := nb * ti.BlockSize
	want := make([]float32, n)
	if err := oracle.Dequantize(typ, blocks, want); err != nil {
		t.Fatal(err)
	}
	for _, tg := range fmtTargets(d) {
		m := vktest.Compile(t, fmtDecodeKernel(f, ti), tg.caps)
		bufs := append([][]byte{kernels.PadWords(blocks), make([]byte, 4*n)}, fmtTableBufs(t, f)...)
		out := vktest.RunModule(t, d, m, bufs, vktest.Push(n), [3]uint32{uint32((n + 63) / 64), 1, 1})
		got := vktest.ToF32(out[1])
		if i := vktest.DiffF32(got, want); i >= 0 {
			b := i / ti.BlockSize
			t.Fatalf("%s %s (%s): block %d value %d = %#08x (%g), oracle %#08x (%g); block % x",
				typ, what, tg.name, b, i%ti.BlockSize, math.Float32bits(got[i]), got[i],
				math.Float32bits(want[i]), want[i], blocks[b*ti.TypeSize:(b+1)*ti.TypeSize])
		}
	}
}

// fmtGolden returns the blocks of every ggml golden file of typ (8 rows of 4096 values each).
func fmtGolden(t *testing.T, typ oracle.Type) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "oracle", "testdata", "ggml", "quant", typ.String()+".*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden vectors for %s", typ)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// fmtSpecialHalves are f16 scales at the edges: zeros, subnormals, the extremes of the normals,
// infinities and NaNs, of both signs.
var fmtSpecialHalves = []uint16{
	0x0000, 0x8000, 0x0001, 0x8001, 0x0200, 0x03ff, 0x83ff, 0x0400, 0x3c00, 0xbc00,
	0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00, 0x7fff,
}

// fmtEdgeBlocks returns synthetic blocks of typ: random bytes (every code and sub-scale value),
// all-zero and all-one codes, and each f16 scale of fmtSpecialHalves (where the block has an f16
// scale, setScale writes it), each special with several random blocks.
func fmtEdgeBlocks(typ oracle.Type, seed int64, random int, setScale func(blk []byte, h uint16)) []byte {
	ti, _ := typ.Info()
	rng := rand.New(rand.NewSource(seed))
	var out []byte
	blk := func() []byte {
		b := make([]byte, ti.TypeSize)
		rng.Read(b)
		return b
	}
	for i := 0; i < random; i++ {
		out = append(out, blk()...)
	}
	for _, fill := range []byte{0x00, 0xff, 0x55, 0xaa} {
		b := make([]byte, ti.TypeSize)
		for i := range b {
			b[i] = fill
		}
		if setScale != nil {
			setScale(b, 0x3c00) // 1.0: the codes alone
		}
		out = append(out, b...)
	}
	if setScale != nil {
		for _, h := range fmtSpecialHalves {
			for i := 0; i < 4; i++ {
				b := blk()
				setScale(b, h)
				out = append(out, b...)
			}
		}
	}
	return out
}

// fmtHalfAt returns a setScale that writes the f16 scale at byte offset o.
func fmtHalfAt(o int) func([]byte, uint16) {
	return func(b []byte, h uint16) { binary.LittleEndian.PutUint16(b[o:], h) }
}

// fmtTestDecode runs the golden and edge decode checks of typ.
func fmtTestDecode(t *testing.T, typ oracle.Type, random int, setScale func([]byte, uint16)) {
	for name, b := range fmtGolden(t, typ) {
		fmtCheckDecode(t, typ, name, b)
	}
	fmtCheckDecode(t, typ, "edge blocks", fmtEdgeBlocks(typ, int64(typ)+1, random, setScale))
}

func TestFormatIQDecode(t *testing.T) {
	vktest.Device(t)
	for _, tc := range []struct {
		typ      oracle.Type
		setScale func([]byte, uint16)
	}{
		{oracle.IQ2_XXS, fmtHalfAt(0)},
		{oracle.IQ2_XS, fmtHalfAt(0)},
		{oracle.IQ2_S, fmtHalfAt(0)},
		{oracle.IQ3_XXS, fmtHalfAt(0)},
		{oracle.IQ3_S, fmtHalfAt(0)},
		{oracle.IQ1_S, fmtHalfAt(0)},
		{oracle.IQ1_M, kernels.IQ1MSetScale},
		{oracle.IQ4_NL, fmtHalfAt(0)},
		{oracle.IQ4_XS, fmtHalfAt(0)},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			random := 1024
			if tc.typ == oracle.IQ4_NL {
				random = 4096 // 32-value blocks
			}
			fmtTestDecode(t, tc.typ, random, tc.setScale)
		})
	}
}

// TestIQSignTable checks the identity the decoders compute instead of loading ksigns_iq2xs:
// entry s is s with the parity of s in bit 7; and that kmask_iq2xs is 1<<i.
func TestIQSignTable(t *testing.T) {
	signs, ok := oracle.TableBytes("ksigns_iq2xs")
	if !ok || len(signs) != 128 {
		t.Fatalf("ksigns_iq2xs: %d bytes", len(signs))
	}
	for s, v := range signs {
		if want := byte(s) | byte(bits.OnesCount8(uint8(s))&1)<<7; v != want {
			t.Fatalf("ksigns_iq2xs[%d] = %#02x, want %#02x", s, v, want)
		}
	}
	mask, _ := oracle.TableBytes("kmask_iq2xs")
	for i, v := range mask {
		if v != 1<<i {
			t.Fatalf("kmask_iq2xs[%d] = %#02x", i, v)
		}
	}
}

// ---- the integer path ----

// fmtDotKernel writes out[b] = DotQ8(weight block b, its first activation block) for b < n, and,
// for weight blocks of two activation blocks (nvfp4), out2[b] = DotQ8 with the second one.
func fmtDotKernel(f kernels.Format, ti, ai oracle.TypeInfo) *dsl.Kernel {
	k := dsl.New("dot_"+ti.Name, 64)
	w := kernels.NewBytes(k, "w")
	a := kernels.NewBytes(k, "a")
	out := k.Buffer("out", dsl.F32, dsl.Write)
	out2 := k.Buffer("out2", dsl.F32, dsl.Write)
	n := k.Param("n", dsl.U32)
	dec := kernels.NewDecoder(k, w, f)
	per := ti.BlockSize / ai.BlockSize
	b := k.GlobalID(dsl.X)
	k.If(b.Lt(n), func() {
		off := b.Mul(uint32(ti.TypeSize))
		aoff := b.Mul(uint32(per * ai.TypeSize))
		out.Store(b, f.DotQ8(dec, off, a, aoff))
		if per == 2 { // nvfp4: the partial of the second activation block
			out2.Store(b, f.DotQ8(dec, off, a, aoff.Add(uint32(ai.TypeSize))))
		}
	})
	return k
}

// fmtActivations returns nb weight blocks' worth of activation blocks of type act: quantized from
// random values of several magnitudes, and raw random bytes (any scale, extreme codes).
func fmtActivations(act oracle.Type, values int, seed int64) []byte {
	ai, _ := act.Info()
	rng := rand.New(rand.NewSource(seed))
	out := make([]byte, values/ai.BlockSize*ai.TypeSize)
	x := make([]float32, ai.BlockSize)
	for b := 0; b < values/ai.BlockSize; b++ {
		blk := out[b*ai.TypeSize : (b+1)*ai.TypeSize]
		switch b % 4 {
		case 0, 1:
			scale := float32(math.Pow(10, float64(rng.Intn(13)-6)))
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * scale
			}
			if err := oracle.Quantize(act, x, blk); err != nil {
				panic(err)
			}
		case 2:
			rng.Read(blk)
		default: // extreme codes: all -128 or all 127, random scale bytes
			rng.Read(blk)
			c := byte(0x80)
			if b%8 == 7 {
				c = 0x7f
			}
			n := ai.BlockSize
			for i := 0; i < n; i++ {
				blk[4+i] = c
			}
		}
	}
	return out
}

// fmtCheckDotQ8 compares Format.DotQ8 of every block of w with oracle.DotQ8 of that block alone
// (T = 1: the partial itself; nvfp4: its two partials summed in order).
func fmtCheckDotQ8(t *testing.T, typ oracle.Type, what string, w []byte) {
	t.Helper()
	d := vktest.Device(t)
	f, ti := fmtInfo(t, typ)
	if f.DotQ8 == nil {
		t.Fatalf("%s has no DotQ8", typ)
	}
	act, ok := oracle.ActivationType(typ)
	if !ok {
		t.Fatalf("oracle: %s has no integer path", typ)
	}
	ai, _ := act.Info()
	nb := len(w) / ti.TypeSize
	aPer := ti.BlockSize / ai.BlockSize * ai.TypeSize
	a := fmtActivations(act, nb*ti.BlockSize, int64(typ)+int64(len(w)))
	want := make([]float32, nb)
	for b := range want {
		p, err := oracle.DotQ8(typ, w[b*ti.TypeSize:(b+1)*ti.TypeSize], a[b*aPer:(b+1)*aPer])
		if err != nil {
			t.Fatal(err)
		}
		want[b] = p
	}
	for _, tg := range fmtTargets(d) {
		m := vktest.Compile(t, fmtDotKernel(f, ti, ai), tg.caps)
		bufs := append([][]byte{kernels.PadWords(w), kernels.PadWords(a), make([]byte, 4*nb), make([]byte, 4*nb)}, fmtTableBufs(t, f)...)
		out := vktest.RunModule(t, d, m, bufs, vktest.Push(nb), [3]uint32{uint32((nb + 63) / 64), 1, 1})
		got := vktest.ToF32(out[2])
		if ti.BlockSize == 2*ai.BlockSize {
			second := vktest.ToF32(out[3])
			for i := range got {
				got[i] += second[i]
			}
		}
		if i := vktest.DiffF32(got, want); i >= 0 {
			t.Fatalf("%s %s (%s): block %d partial = %#08x (%g), oracle %#08x (%g); block % x",
				typ, what, tg.name, i, math.Float32bits(got[i]), got[i], math.Float32bits(want[i]), want[i],
				w[i*ti.TypeSize:(i+1)*ti.TypeSize])
		}
	}
}

// fmtTestDotQ8 runs the integer-path check on the golden and edge blocks of typ.
func fmtTestDotQ8(t *testing.T, typ oracle.Type, random int, setScale func([]byte, uint16)) {
	for name, b := range fmtGolden(t, typ) {
		fmtCheckDotQ8(t, typ, name, b)
	}
	fmtCheckDotQ8(t, typ, "edge blocks", fmtEdgeBlocks(typ, int64(typ)+7, random, setScale))
}

func TestFormatIQDotQ8(t *testing.T) {
	vktest.Device(t)
	t.Run("iq4_nl", func(t *testing.T) { fmtTestDotQ8(t, oracle.IQ4_NL, 2048, fmtHalfAt(0)) })
	t.Run("iq4_xs", func(t *testing.T) { fmtTestDotQ8(t, oracle.IQ4_XS, 512, fmtHalfAt(0)) })
}
