package vulkan_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/irtest"
	"github.com/onesource-go/onesource/ir"
)

// done verifies the kernel b built, failing the test when it does not.
func done(t testing.TB, b *irtest.Builder) *ir.Kernel {
	t.Helper()
	k, err := b.Done()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// spirv-tools.

var (
	spvToolsOnce sync.Once
	spvToolsErr  error
)

// spirvTools says why spirv-val or spirv-dis cannot be used, or nil.
func spirvTools() error {
	spvToolsOnce.Do(func() {
		for _, tool := range []string{"spirv-val", "spirv-dis"} {
			if _, err := exec.LookPath(tool); err != nil {
				spvToolsErr = fmt.Errorf("%s not found (install spirv-tools): %v", tool, err)
				return
			}
		}
	})
	return spvToolsErr
}

// needSPIRVTools skips the test when spirv-val or spirv-dis is missing.
func needSPIRVTools(t testing.TB) {
	t.Helper()
	if err := spirvTools(); err != nil {
		t.Skip(err)
	}
}

func wordsBytes(words []uint32) []byte {
	buf := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(buf[4*i:], w)
	}
	return buf
}

// writeSPV writes words to a temporary file and returns its path.
func writeSPV(t testing.TB, words []uint32) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.spv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(wordsBytes(words)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// spirvVal runs spirv-val on words for the environment their SPIR-V version is written for
// (vulkan.Validate; spirvValEnv names one); the error carries the validator's message and the
// disassembly.
func spirvVal(t testing.TB, words []uint32) error {
	t.Helper()
	if err := vulkan.Validate(words); err != nil {
		dis, _ := spirvDis(t, words, true)
		return fmt.Errorf("%w\n--- disassembly ---\n%s", err, dis)
	}
	return nil
}

// spirvDis returns the spirv-dis text of words, with numeric ids when raw, else with the
// names the module gives (OpName) and spirv-dis's names for types and constants.
func spirvDis(t testing.TB, words []uint32, raw bool) (string, error) {
	t.Helper()
	path := writeSPV(t, words)
	args := []string{path}
	if raw {
		args = append(args, "--raw-id")
	}
	cmd := exec.Command("spirv-dis", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("spirv-dis: %v: %s", err, errb.String())
	}
	return out.String(), nil
}

// goldenPath is the golden file of a test kernel.
func goldenPath(name string) string {
	return filepath.Join("testdata", strings.ReplaceAll(name, "/", "_")+".spvasm")
}
