// Package generate turns DSL kernels into per-backend files: the engine of `onesource gen`.
//
// A package holding kernels exports `func Kernels() []*dsl.Kernel`. `onesource gen` finds such
// packages, writes a small driver program that imports them and calls Main, and runs it with
// `go run`: the kernels are built by the user's own Go code, so their schedules are whatever
// that code says. Output is deterministic: the same kernels give byte-identical files.
package generate

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
)

// Backend is one output format.
type Backend struct {
	Name string // as named on the command line
	Ext  string // file extension, with the dot
	Emit func(k *ir.Kernel) ([]byte, error)
}

// Backends lists the backends gen can write, by name.
var Backends = map[string]Backend{
	"vulkan": {Name: "vulkan", Ext: ".spv", Emit: emitSPIRV},
	"cuda":   {Name: "cuda", Ext: ".cu", Emit: textEmitter(cuda.Emit)},
	"hip":    {Name: "hip", Ext: ".hip", Emit: textEmitter(func(k *ir.Kernel) (string, error) { return hip.Emit(k, hip.Generic) })},
	"metal":  {Name: "metal", Ext: ".metal", Emit: textEmitter(metal.Emit)},
}

// textEmitter adapts a source-text emitter to Backend.Emit.
func textEmitter(emit func(*ir.Kernel) (string, error)) func(*ir.Kernel) ([]byte, error) {
	return func(k *ir.Kernel) ([]byte, error) {
		src, err := emit(k)
		if err != nil {
			return nil, err
		}
		return []byte(src), nil
	}
}

// BackendNames returns the known backend names, sorted.
func BackendNames() []string {
	var names []string
	for n := range Backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func emitSPIRV(k *ir.Kernel) ([]byte, error) {
	m, err := vulkan.Compile(k, vulkan.PortableCaps)
	if err != nil {
		return nil, err
	}
	return vulkan.Bytes(m.Words), nil
}

// File is one generated file.
type File struct {
	Name string // base name: <kernel><ext>
	Data []byte
}

// Files builds every kernel and emits it for each named backend. Errors from all kernels are
// returned together; two kernels of one name are an error (their files would collide).
func Files(ks []*dsl.Kernel, backends []string) ([]File, error) {
	var files []File
	var errs []error
	seen := map[string]bool{}
	for _, b := range backends {
		if _, ok := Backends[b]; !ok {
			return nil, fmt.Errorf("unknown backend %q (known: %s)", b, strings.Join(BackendNames(), ", "))
		}
	}
	for _, kb := range ks {
		k, err := kb.Build()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[k.Name] {
			errs = append(errs, fmt.Errorf("%s: a second kernel named %s", k.Pos, k.Name))
			continue
		}
		seen[k.Name] = true
		for _, b := range backends {
			be := Backends[b]
			data, err := be.Emit(k)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", b, k.Name, err))
				continue
			}
			files = append(files, File{Name: k.Name + be.Ext, Data: data})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, errors.Join(errs...)
}

// Write stores files in dir (created if needed), each written to a temporary file and renamed,
// so a reader never sees half a file.
func Write(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		tmp, err := os.CreateTemp(dir, "."+f.Name+".tmp*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(f.Data)
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return errors.Join(werr, cerr)
		}
		if err := os.Rename(tmp.Name(), filepath.Join(dir, f.Name)); err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}

// Main is the entry point of the driver program `onesource gen` writes: it collects the kernels
// of every listed function, emits them for the backends named by -backends and writes them to
// -o. It returns the process exit status.
func Main(args []string, stdout, stderr io.Writer, sources ...func() []*dsl.Kernel) int {
	fs := flag.NewFlagSet("onesource gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output directory")
	backends := fs.String("backends", "vulkan", "comma-separated backends: "+strings.Join(BackendNames(), ", "))
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "onesource gen: -o DIR is required")
		return 2
	}
	var ks []*dsl.Kernel
	for _, src := range sources {
		ks = append(ks, src()...)
	}
	files, err := Files(ks, strings.Split(*backends, ","))
	if err != nil {
		fmt.Fprintf(stderr, "onesource gen: %v\n", err)
		return 1
	}
	if err := Write(*out, files); err != nil {
		fmt.Fprintf(stderr, "onesource gen: %v\n", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", filepath.Join(*out, f.Name), len(f.Data))
	}
	return 0
}
