package kernels_test

import (
	"math"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// TestFP4Scales checks E8M0Half and UE4M3Half against the oracle for all 256 scale bytes, for
// the device's lowering and the portable one.
func TestFP4Scales(t *testing.T) {
	d := vktest.Device(t)
	k := dsl.New("fp4_scales", 64)
	e8 := k.Buffer("e8m0", dsl.F32, dsl.Write)
	ue := k.Buffer("ue4m3", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	e8.Store(i, kernels.E8M0Half(k, i))
	ue.Store(i, kernels.UE4M3Half(k, i))
	for _, tg := range fmtTargets(d) {
		m := vktest.Compile(t, k, tg.caps)
		out := vktest.RunModule(t, d, m, [][]byte{make([]byte, 1024), make([]byte, 1024)}, nil, [3]uint32{4, 1, 1})
		gotE, gotU := vktest.ToF32(out[0]), vktest.ToF32(out[1])
		for x := 0; x < 256; x++ {
			if g, w := math.Float32bits(gotE[x]), math.Float32bits(oracle.E8M0ToF32Half(uint8(x))); g != w {
				t.Errorf("%s: E8M0Half(%#02x) = %#08x, oracle %#08x", tg.name, x, g, w)
			}
			if g, w := math.Float32bits(gotU[x]), math.Float32bits(oracle.UE4M3ToF32Half(uint8(x))); g != w {
				t.Errorf("%s: UE4M3Half(%#02x) = %#08x, oracle %#08x", tg.name, x, g, w)
			}
		}
	}
}

// fp4ScaleBlocks returns blocks of typ whose scale bytes take every value 0..255, over random
// codes from the edge blocks.
func fp4ScaleBlocks(typ oracle.Type) []byte {
	ti, _ := typ.Info()
	scales := 1 // mxfp4: one E8M0 byte
	if typ == oracle.NVFP4 {
		scales = 4
	}
	base := fmtEdgeBlocks(typ, 17, 256/scales, nil)
	for b := 0; b < 256/scales; b++ {
		for s := 0; s < scales; s++ {
			base[b*ti.TypeSize+s] = byte(b*scales + s)
		}
	}
	return base[:256/scales*ti.TypeSize]
}

// TestFormatFP4Decode decodes ggml's mxfp4 and nvfp4 blocks, random blocks and blocks with
// every scale byte on the device and compares with the oracle.
func TestFormatFP4Decode(t *testing.T) {
	vktest.Device(t)
	for _, typ := range []oracle.Type{oracle.MXFP4, oracle.NVFP4} {
		t.Run(typ.String(), func(t *testing.T) {
			fmtTestDecode(t, typ, 2048, nil)
			fmtCheckDecode(t, typ, "every scale", fp4ScaleBlocks(typ))
		})
	}
}

// TestFormatFP4DotQ8 checks the integer paths of mxfp4 and nvfp4 (q8_1 activations) block by
// block, nvfp4 with both of its partials.
func TestFormatFP4DotQ8(t *testing.T) {
	vktest.Device(t)
	for _, typ := range []oracle.Type{oracle.MXFP4, oracle.NVFP4} {
		t.Run(typ.String(), func(t *testing.T) {
			fmtTestDotQ8(t, typ, 2048, nil)
			fmtCheckDotQ8(t, typ, "every scale", fp4ScaleBlocks(typ))
		})
	}
}
