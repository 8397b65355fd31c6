package vulkan

import (
	"encoding/binary"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/internal/cachedir"
)

// cacheRun opens a device keeping its pipeline cache in dir, creates the shared-memory test
// pipeline, closes the device (which saves the cache) and returns its stats and
// warnings.
func cacheRun(t *testing.T, dir string) (Stats, []string, string) {
	t.Helper()
	var mu sync.Mutex
	var warnings []string
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := Open(Options{PipelineCacheDir: dir, Warn: func(m string) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, m)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pipeline(sharedModule(t)); err != nil {
		d.Close()
		t.Fatal(err)
	}
	file := d.PipelineCacheFile()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return d.Stats(), warnings, file
}

// TestPipelineCachePersists: a device saves its pipeline cache when it closes and the next
// device on the same driver loads it; a corrupt, truncated or foreign file is ignored with a
// warning and the device works; the cache can be turned off.
func TestPipelineCachePersists(t *testing.T) {
	dir := t.TempDir()
	first, warn, file := cacheRun(t, dir)
	if len(warn) > 0 || first.PipelinesCreated != 1 || first.PipelineCacheLoaded != 0 || first.PipelineCacheSaved < pipelineCacheHeader {
		t.Fatalf("first start: %+v, warnings %q", first, warn)
	}
	if !strings.HasPrefix(file, dir) {
		t.Fatalf("cache file %q is not under %q", file, dir)
	}
	second, warn, _ := cacheRun(t, dir)
	if len(warn) > 0 || second.PipelineCacheLoaded != first.PipelineCacheSaved {
		t.Fatalf("second start loaded %d bytes (saved %d), warnings %q", second.PipelineCacheLoaded, first.PipelineCacheSaved, warn)
	}
	t.Logf("pipeline cache: %d bytes saved and loaded; second start: %d pipelines created, %d cache hits (feedback %v)",
		first.PipelineCacheSaved, second.PipelinesCreated, second.PipelineCacheHits, second.Feedback)

	good, err := cachedir.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(file)
	foreign := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(foreign[8:], binary.LittleEndian.Uint32(foreign[8:])+1) // another vendor
	for _, c := range []struct {
		name  string
		write func() error
		want  string
	}{
		{"corrupt", func() error {
			b := append([]byte(nil), raw...)
			b[len(b)-1] ^= 0xff
			return os.WriteFile(file, b, 0o644)
		}, "checksum"},
		{"truncated", func() error { return os.WriteFile(file, raw[:10], 0o644) }, "no onesource cache header"},
		{"foreign", func() error { return cachedir.Write(file, foreign) }, "written for vendor"},
		{"not a cache", func() error { return cachedir.Write(file, []byte("hello")) }, "shorter than a pipeline cache header"},
	} {
		if err := c.write(); err != nil {
			t.Fatal(err)
		}
		st, warn, _ := cacheRun(t, dir)
		if len(warn) != 1 || !strings.Contains(warn[0], "ignored") || !strings.Contains(warn[0], c.want) || st.PipelineCacheLoaded != 0 {
			t.Errorf("%s file: loaded %d bytes, warnings %q; want one saying %q", c.name, st.PipelineCacheLoaded, warn, c.want)
		}
		if b, err := cachedir.Read(file); err != nil || len(b) != first.PipelineCacheSaved {
			t.Errorf("%s file was not replaced by a good cache at close: %d bytes, %v", c.name, len(b), err)
		}
	}

	off := openDevice(t, Options{NoPipelineCache: true})
	if off.PipelineCacheFile() != "" {
		t.Errorf("NoPipelineCache: file %q", off.PipelineCacheFile())
	}
	t.Setenv(cachedir.Env, cachedir.Off)
	if d := openDevice(t, Options{}); d.PipelineCacheFile() != "" {
		t.Errorf("%s=off: file %q", cachedir.Env, d.PipelineCacheFile())
	}
}
