package generate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/examples/q8dot"
	"github.com/onesource-go/onesource/examples/rmsnorm"
	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/generate"
)

func exampleKernels() []*dsl.Kernel {
	return append(append(saxpy.Kernels(), rmsnorm.Kernels()...), q8dot.Kernels()...)
}

func TestFilesDeterministic(t *testing.T) {
	a, err := generate.Files(exampleKernels(), []string{"vulkan"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := generate.Files(exampleKernels(), []string{"vulkan"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("%d and %d files, want 3", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("%s differs between two builds", a[i].Name)
		}
	}
}

func TestFilesErrors(t *testing.T) {
	bad := dsl.New("bad", 64)
	bad.Buffer("x", dsl.F32, dsl.Read).Store(0, 1.0)
	_, err := generate.Files([]*dsl.Kernel{saxpy.Saxpy(64), bad, saxpy.Saxpy(32)}, []string{"vulkan"})
	if err == nil || !strings.Contains(err.Error(), "read-only buffer x") || !strings.Contains(err.Error(), "a second kernel named saxpy") {
		t.Fatalf("error %v: want both the bad kernel's and the duplicate name's", err)
	}
	if _, err := generate.Files(nil, []string{"cobol"}); err == nil || !strings.Contains(err.Error(), `unknown backend "cobol"`) {
		t.Fatalf("unknown backend: %v", err)
	}
}

func TestMainWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var out, errb bytes.Buffer
	src := generate.Source{Path: "example.com/saxpy", Name: "saxpy", Funcs: []generate.Func{{Name: "saxpy.Kernels", Kernels: saxpy.Kernels}}}
	if code := generate.Main([]string{"-o", dir}, &out, &errb, src); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "saxpy.spv")); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := generate.Main(nil, &out, &errb, src); code != 2 || !strings.Contains(errb.String(), "package mode needs the package's path, name and directory") {
		t.Fatalf("package mode without a directory: exit %d, %q", code, errb.String())
	}
}

// BenchmarkEmit reports the time to build, lower and emit each example kernel as portable SPIR-V.
func BenchmarkEmit(b *testing.B) {
	for _, k := range exampleKernels() {
		b.Run(k.Name(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := generate.Files([]*dsl.Kernel{k}, []string{"vulkan"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
