package native

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/cbuild"
	"github.com/onesource-go/onesource/lower"
)

// TestDamagedCacheRebuilt: a cached shared object that does not load (damaged, or another
// program's file) is not trusted: it is built again and the kernel runs.
func TestDamagedCacheRebuilt(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("native CPU code unavailable: %v", err)
	}
	t.Setenv("ONESOURCE_CACHE", t.TempDir())
	k := dsl.New("damaged_cache", 16)
	y := k.Buffer("y", dsl.U32, dsl.Write)
	y.Store(k.LocalIndex(), k.LocalIndex().Add(7))
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	low, err := lower.Run(ik, Caps)
	if err != nil {
		t.Fatal(err)
	}
	src, _, err := emit(low)
	if err != nil {
		t.Fatal(err)
	}
	cc, _ := compiler()
	entry := filepath.Join(cbuild.Root("native"), buildKey(cc, src))
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "kernel.so"), []byte("not a shared object"), 0o755); err != nil {
		t.Fatal(err)
	}
	built, _ := BuildStats()
	p, err := CompileLowered(low)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := BuildStats(); b != built+1 {
		t.Errorf("%d builds, want one more than %d", b, built)
	}
	ys := make([]byte, 4*16)
	if err := p.Run([][]byte{ys}, nil, [3]uint32{1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if ys[4*3] != 10 {
		t.Errorf("y[3] = %d, want 10", ys[4*3])
	}
}
