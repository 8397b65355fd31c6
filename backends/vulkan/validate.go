package vulkan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ErrNoValidator is wrapped by Validate's error when spirv-val is not installed: the module was
// not checked (callers report level V as not reached, never as passed).
var ErrNoValidator = errors.New("spirv-val not installed")

// Bytes returns SPIR-V words as the little-endian bytes of a .spv file.
func Bytes(words []uint32) []byte {
	b := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// Words parses the little-endian bytes of a .spv file (the inverse of Bytes). It refuses a length
// that is not a whole number of words, a module shorter than its 5-word header, and a file that
// does not start with the SPIR-V magic number (a big-endian file among them).
func Words(b []byte) ([]uint32, error) {
	if len(b)%4 != 0 || len(b) < 20 || binary.LittleEndian.Uint32(b) != spirvMagic {
		return nil, fmt.Errorf("%d bytes are not a little-endian SPIR-V module", len(b))
	}
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w, nil
}

// Validate runs the vendor validator, `spirv-val --target-env vulkan1.3`, on SPIR-V words. The
// error carries the validator's message; it wraps ErrNoValidator when spirv-val is missing.
func Validate(words []uint32) error {
	path, err := exec.LookPath("spirv-val")
	if err != nil {
		return fmt.Errorf("vulkan: %w", ErrNoValidator)
	}
	f, err := os.CreateTemp("", "onesource-*.spv")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(Bytes(words))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if out, err := exec.Command(path, "--target-env", "vulkan1.3", f.Name()).CombinedOutput(); err != nil {
		return fmt.Errorf("spirv-val rejects the module: %v\n%s", err, out)
	}
	return nil
}
