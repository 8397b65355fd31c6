package kernels_test

import (
	"testing"

	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/oracle"
)

// TestFormatTQDecode decodes ggml's tq1_0 and tq2_0 blocks and edge blocks (every byte value,
// special f16 scales) on the device and compares with the oracle.
func TestFormatTQDecode(t *testing.T) {
	vktest.Device(t)
	t.Run("tq1_0", func(t *testing.T) {
		fmtTestDecode(t, oracle.TQ1_0, 1024, fmtHalfAt(52))
		// Every byte value in every trit position: block b holds byte b everywhere.
		blocks := make([]byte, 256*54)
		for b := 0; b < 256; b++ {
			for i := 0; i < 52; i++ {
				blocks[54*b+i] = byte(b)
			}
			blocks[54*b+52], blocks[54*b+53] = 0x00, 0x3c // d = 1
		}
		fmtCheckDecode(t, oracle.TQ1_0, "every byte", blocks)
	})
	t.Run("tq2_0", func(t *testing.T) { fmtTestDecode(t, oracle.TQ2_0, 1024, fmtHalfAt(64)) })
}

// TestFormatTQDotQ8 checks tq2_0's integer path (q8_K activations) block by block.
func TestFormatTQDotQ8(t *testing.T) {
	vktest.Device(t)
	fmtTestDotQ8(t, oracle.TQ2_0, 512, fmtHalfAt(64))
}
