package vulkan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/onesource-go/onesource/internal/cachedir"
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

// Validate runs the vendor validator, spirv-val, on SPIR-V words for the Vulkan environment
// their SPIR-V version is written for (`--target-env vulkan1.1` for SPIR-V 1.3, vulkan1.2 for
// 1.5, vulkan1.3 for 1.6: see Env). The error carries the validator's message; it wraps
// ErrNoValidator when spirv-val is missing.
func Validate(words []uint32) error {
	target := "vulkan1.3"
	if len(words) > 1 {
		target = validatorEnv(words[1])
	}
	return validate(words, target)
}

// ValidateEnv runs spirv-val on SPIR-V words for the environment env (EnvDefault: Vulkan1_3),
// whatever version the words declare.
func ValidateEnv(words []uint32, env Env) error {
	return validate(words, env.resolve().String())
}

// validate runs spirv-val --target-env target on words. A module spirv-val accepted is
// remembered in internal/cachedir's "spirv-val" cache, keyed by the validator (path, size,
// modification time), the environment and the words, so a later start does not run it again
// on the same module (a rejection always runs, and says why).
func validate(words []uint32, target string) error {
	path, err := exec.LookPath("spirv-val")
	if declares(words, spvCapCooperativeMatrixKHR) {
		path, err = coopValidator()
		if err != nil {
			return fmt.Errorf("vulkan: %w: %v", ErrNoValidator, err)
		}
	}
	if err != nil {
		return fmt.Errorf("vulkan: %w", ErrNoValidator)
	}
	var entry string
	if id := cachedir.Tool(path); id != "" {
		entry = cachedir.Entry("spirv-val", cachedir.Key([]byte("spirv-val 1"), []byte(id), []byte(target), Bytes(words)))
	}
	if entry != "" {
		if b, err := cachedir.Read(entry); err == nil && string(b) == "valid" {
			return nil
		}
	}
	if err := runValidator(path, words, target); err != nil {
		return err
	}
	if entry != "" {
		_ = cachedir.Write(entry, []byte("valid")) // a cache: a failed write costs the next run only
	}
	return nil
}

// CoopValidatorEnv names the spirv-val used for modules that declare SPV_KHR_cooperative_matrix
// (the mma island's Vulkan body): SPIRV-Tools 2023.4 and newer know the extension, Debian
// bookworm's 2023.1 does not. Without the variable, DefaultCoopValidator is used when it exists
// (scripts/install-spirv-val.sh builds it there from Debian's SPIRV-Tools 2025.1 sources); every
// other module keeps the spirv-val on PATH.
const CoopValidatorEnv = "ONESOURCE_SPIRV_VAL_KHR"

// DefaultCoopValidator is where scripts/install-spirv-val.sh installs its spirv-val.
const DefaultCoopValidator = "/opt/onesource/spirv-tools/bin/spirv-val"

// coopValidator returns the spirv-val for cooperative-matrix modules.
func coopValidator() (string, error) {
	p := os.Getenv(CoopValidatorEnv)
	if p == "" {
		p = DefaultCoopValidator
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no spirv-val that knows SPV_KHR_cooperative_matrix (%s or $%s; scripts/install-spirv-val.sh builds one): %w", DefaultCoopValidator, CoopValidatorEnv, err)
	}
	return p, nil
}

// declares reports whether the module words declare capability c.
func declares(words []uint32, c spvCap) bool {
	for i := 5; i < len(words); {
		n, op := words[i]>>16, words[i]&0xffff
		if n == 0 {
			return false
		}
		if op == uint32(spvOpCapability) && i+1 < len(words) && words[i+1] == uint32(c) {
			return true
		}
		i += int(n)
	}
	return false
}

func runValidator(path string, words []uint32, target string) error {
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
	if out, err := exec.Command(path, "--target-env", target, f.Name()).CombinedOutput(); err != nil {
		return fmt.Errorf("spirv-val --target-env %s rejects the module: %v\n%s", target, err, out)
	}
	return nil
}
