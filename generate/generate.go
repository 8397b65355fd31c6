// Package generate turns DSL kernels into per-backend files and a Go file that embeds them: the
// engine of `onesource gen`.
//
// The convention: a package holds kernels either in `func Kernels() []*dsl.Kernel` (which then
// lists all of them), or, without such a function, in exported functions with no parameters
// that return one *dsl.Kernel each (`func Axpy() *dsl.Kernel`). `onesource gen` finds them with
// golang.org/x/tools/go/packages, writes a small driver program that imports the packages and
// calls Main, and runs it with `go run` from the user's module: the kernels are built by the
// user's own Go code, so their schedules are whatever that code says.
//
// Two outputs:
//
//   - Package mode (the //go:generate step): for each package, <dir>/onesource/<kernel><ext>
//     per kernel and backend, and <dir>/onesource_gen.go, which embeds those files (//go:embed)
//     and declares `var Generated = prebuilt.NewSet(...)`, registered with package prebuilt at
//     init, so a program dispatches the kernels with no compiler at run time. Files in
//     <dir>/onesource that the run did not write are removed. The generated Go file is built
//     only without the onesource_gen build tag, which the driver program sets: a stale or
//     half-written generated file never stops the next generation. Code of the kernel package
//     itself must therefore not refer to Generated; the program's other packages do.
//   - Directory mode (-o DIR): every kernel's files in one directory, no Go file.
//
// Output is deterministic: the same kernels give byte-identical files on every machine (no
// absolute paths, dates or tool versions are written), and a file whose bytes would not change
// is not rewritten.
package generate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/onesource-go/onesource/backends/cpu"
	"github.com/onesource-go/onesource/backends/cuda"
	"github.com/onesource-go/onesource/backends/hip"
	"github.com/onesource-go/onesource/backends/metal"
	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/backends/webgpu"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/prebuilt"
)

// Backend is one output format.
type Backend struct {
	Name string // as named on the command line
	Ext  string // file extension, with the dot
	// Emit returns the file's bytes and what a generated Go file records about it besides its
	// name and hash: the Vulkan module's layout, the C-family length arguments.
	Emit func(k *ir.Kernel) ([]byte, prebuilt.Artifact, error)
	// Checked, when not nil, is what Emit lowers for: the checked build (gen -checked) is the
	// kernel lowered and instrumented for it (lower.RunChecked), then emitted. Nil for the
	// backends package prebuilt runs no checked build on: cpu (the executor checks every access
	// itself), metal and webgpu (no runtime in prebuilt).
	Checked *lower.Caps
}

// hipCaps is what the hip backend lowers for: every AMD GPU (hip.Generic).
var hipCaps = mustCaps(hip.CapsFor(hip.Generic))

// Backends lists the backends gen can write, by name.
var Backends = map[string]Backend{
	"vulkan": {Name: "vulkan", Ext: ".spv", Emit: emitSPIRV, Checked: &vulkan.PortableCaps},
	"cuda":   {Name: "cuda", Ext: ".cu", Emit: cfamilyEmitter(cuda.Emit, cuda.Caps), Checked: &cuda.Caps},
	"hip":    {Name: "hip", Ext: ".hip", Emit: cfamilyEmitter(func(k *ir.Kernel) (string, error) { return hip.Emit(k, hip.Generic) }, hipCaps), Checked: &hipCaps},
	"metal":  {Name: "metal", Ext: ".metal", Emit: cfamilyEmitter(metal.Emit, metal.Caps)},
	"cpu":    {Name: "cpu", Ext: cpu.FileExt, Emit: emitCPU},
	"webgpu": {Name: "webgpu", Ext: ".wgsl", Emit: emitWGSL},
}

// mustCaps is for lowering targets known at compile time (like regexp.MustCompile).
func mustCaps(c lower.Caps, err error) lower.Caps {
	if err != nil {
		panic(err)
	}
	return c
}

// cfamilyEmitter adapts a C-family source emitter to Backend.Emit; caps is the target it lowers
// for, which decides the length arguments the printed kernel takes.
func cfamilyEmitter(emit func(*ir.Kernel) (string, error), caps lower.Caps) func(*ir.Kernel) ([]byte, prebuilt.Artifact, error) {
	return func(k *ir.Kernel) ([]byte, prebuilt.Artifact, error) {
		src, err := emit(k)
		if err != nil {
			return nil, prebuilt.Artifact{}, err
		}
		low, err := lower.Run(k, caps)
		if err != nil {
			return nil, prebuilt.Artifact{}, err
		}
		return []byte(src), prebuilt.Artifact{LenArgs: low.LenRefs()}, nil
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

func emitSPIRV(k *ir.Kernel) ([]byte, prebuilt.Artifact, error) {
	// The oldest environment the emitter targets: SPIR-V 1.3 with the extensions the kernel
	// needs runs on every Vulkan 1.1 driver (MoltenVK, older Android and desktop drivers) and
	// on every newer one.
	m, err := vulkan.CompileWith(k, vulkan.PortableCaps, vulkan.EmitOptions{Env: vulkan.Vulkan1_1})
	if err != nil {
		return nil, prebuilt.Artifact{}, err
	}
	for i, b := range m.Bindings {
		if want := k.Buffers[i].Elem.Stride(); b.ElemSize != want {
			return nil, prebuilt.Artifact{}, fmt.Errorf("binding %d (%s) has %d-byte elements in SPIR-V, %d in the kernel", i, b.Name, b.ElemSize, want)
		}
	}
	return vulkan.Bytes(m.Words), prebuilt.Artifact{Vulkan: &prebuilt.VulkanModule{
		PushConstantSize: m.PushConstantSize, SubgroupSize: m.SubgroupSize, SharedBytes: m.SharedBytes,
		Features: prebuilt.FeatureNames(m.Features),
	}}, nil
}

// emitCPU writes the cpu backend's file: the kernel lowered for cpu.Caps, which package
// prebuilt runs with the CPU executor.
func emitCPU(k *ir.Kernel) ([]byte, prebuilt.Artifact, error) {
	data, err := cpu.Emit(k)
	return data, prebuilt.Artifact{}, err
}

// emitWGSL writes the kernel's WGSL module (package backends/webgpu), with the extensions the
// kernel needs (webgpu.OptionsFor: core WGSL unless it uses subgroups itself).
func emitWGSL(k *ir.Kernel) ([]byte, prebuilt.Artifact, error) {
	m, err := webgpu.Compile(k, webgpu.OptionsFor(k))
	if err != nil {
		return nil, prebuilt.Artifact{}, err
	}
	return []byte(m.Source), prebuilt.Artifact{}, nil
}

// File is one generated file.
type File struct {
	Name string // base name: <kernel><ext>
	Data []byte
}

// Built is one kernel built, lowered and emitted for the requested backends, with the interface
// description the generated Go file records.
type Built struct {
	Kernel *ir.Kernel
	Files  []File          // one per backend, in the order the backends were asked for
	Meta   prebuilt.Kernel // the interface and artifacts (File paths relative to the output directory)
}

// Build builds every kernel and emits it for each named backend. Errors from all kernels are
// returned together; two kernels of one name are an error (their files would collide). The result
// is sorted by kernel name.
func Build(ks []*dsl.Kernel, backends []string) ([]Built, error) { return build(ks, backends, false) }

// BuildChecked is Build with, for every backend that has one (Backend.Checked), the kernel's
// bounds-checked build beside it: <kernel>.checked<ext>, recorded as the artifact's Checked with
// the table of its checked accesses, which prebuilt.Options.Checked runs (onesource gen -checked).
func BuildChecked(ks []*dsl.Kernel, backends []string) ([]Built, error) {
	return build(ks, backends, true)
}

// CheckedExt is what a checked build's file name has before the backend's extension.
const CheckedExt = ".checked"

func build(ks []*dsl.Kernel, backends []string, checked bool) ([]Built, error) {
	for _, b := range backends {
		if _, ok := Backends[b]; !ok {
			return nil, fmt.Errorf("unknown backend %q (known: %s)", b, strings.Join(BackendNames(), ", "))
		}
	}
	var out []Built
	var errs []error
	seen := map[string]ir.Pos{}
	for i, kb := range ks {
		if kb == nil {
			errs = append(errs, fmt.Errorf("kernel %d of %d is nil", i+1, len(ks)))
			continue
		}
		k, err := kb.Build()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first, ok := seen[k.Name]; ok {
			errs = append(errs, fmt.Errorf("%s: a second kernel named %s (the first is at %s)", k.Pos, k.Name, first))
			continue
		}
		seen[k.Name] = k.Pos
		b := Built{Kernel: k, Meta: describe(k)}
		ok := true
		for _, name := range backends {
			be := Backends[name]
			data, a, err := be.Emit(k)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", name, k.Name, err))
				ok = false
				continue
			}
			f := File{Name: k.Name + be.Ext, Data: data}
			sum := sha256.Sum256(data)
			a.Backend, a.File, a.SHA256 = name, f.Name, hex.EncodeToString(sum[:])
			b.Files = append(b.Files, f)
			if checked && be.Checked != nil {
				cf, ca, err := emitChecked(be, k)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %s: checked build: %w", name, k.Name, err))
					ok = false
					continue
				}
				b.Files = append(b.Files, cf)
				a.Checked = ca
			}
			b.Meta.Artifacts = append(b.Meta.Artifacts, a)
		}
		if ok {
			sort.Slice(b.Meta.Artifacts, func(i, j int) bool { return b.Meta.Artifacts[i].Backend < b.Meta.Artifacts[j].Backend })
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kernel.Name < out[j].Kernel.Name })
	return out, errors.Join(errs...)
}

// emitChecked is k's checked build for backend be: lowered and instrumented for be.Checked,
// emitted, with the table of its checked accesses.
func emitChecked(be Backend, k *ir.Kernel) (File, *prebuilt.Artifact, error) {
	ck, diag, err := lower.RunChecked(k, *be.Checked)
	if err != nil {
		return File{}, nil, err
	}
	data, a, err := be.Emit(ck)
	if err != nil {
		return File{}, nil, err
	}
	f := File{Name: k.Name + CheckedExt + be.Ext, Data: data}
	sum := sha256.Sum256(data)
	a.Backend, a.File, a.SHA256 = be.Name, f.Name, hex.EncodeToString(sum[:])
	for _, s := range diag.Sites {
		file, line := shortFile(s.Pos)
		a.Sites = append(a.Sites, prebuilt.Site{File: file, Line: line, Buffer: s.Buffer, Access: s.Access, Signed: s.Signed})
	}
	return f, &a, nil
}

// shortFile is p's file as a generated file records it: its directory and base name, as
// lower.ShortPos prints them (no absolute path), and the line.
func shortFile(p ir.Pos) (string, int) {
	s := lower.ShortPos(p)
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		return s[:i], p.Line
	}
	return s, p.Line
}

// Files builds every kernel and emits it for each named backend (see Build), sorted by name.
func Files(ks []*dsl.Kernel, backends []string) ([]File, error) {
	built, err := Build(ks, backends)
	var files []File
	for _, b := range built {
		files = append(files, b.Files...)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, err
}

// NewSet builds kernels for backends in memory and returns them as a prebuilt.Set, the same
// value a generated file declares: a program that builds its kernels at run time (no go generate
// step) places and runs them with prebuilt.Runtime exactly like embedded ones. pkg names the set.
func NewSet(pkg string, ks []*dsl.Kernel, backends []string) (*prebuilt.Set, error) {
	return newSet(pkg, ks, backends, false)
}

// NewCheckedSet is NewSet with the kernels' bounds-checked builds (BuildChecked), which
// prebuilt.Options.Checked runs.
func NewCheckedSet(pkg string, ks []*dsl.Kernel, backends []string) (*prebuilt.Set, error) {
	return newSet(pkg, ks, backends, true)
}

func newSet(pkg string, ks []*dsl.Kernel, backends []string, checked bool) (*prebuilt.Set, error) {
	built, err := build(ks, backends, checked)
	if err != nil {
		return nil, err
	}
	files := fstest.MapFS{}
	var metas []prebuilt.Kernel
	for _, b := range built {
		for _, f := range b.Files {
			files[f.Name] = &fstest.MapFile{Data: f.Data}
		}
		metas = append(metas, b.Meta)
	}
	set := prebuilt.NewSet(pkg, files, metas)
	return set, set.Err()
}

// IRHash is the SHA-256 (hex) of k's IR text: what a generated file records so that a kernel
// edited since can be told from the files generated for it.
func IRHash(k *ir.Kernel) string {
	sum := sha256.Sum256([]byte(k.String()))
	return hex.EncodeToString(sum[:])
}

// Check compares the kernels a package builds now with the set generated for them (its
// Generated variable): every kernel must be in the set with the IR hash it was generated from,
// and the set must hold no other kernel. A test of the package calls it so that an edited kernel
// with stale generated files fails (`go generate` regenerates them):
//
//	if err := generate.Check(gpu.Generated, gpu.Kernels()); err != nil { t.Fatal(err) }
func Check(set *prebuilt.Set, ks []*dsl.Kernel) error {
	if set == nil {
		return errors.New("generate: Check: no generated set")
	}
	if err := set.Err(); err != nil {
		return err
	}
	var errs []error
	seen := map[string]bool{}
	for i, kb := range ks {
		if kb == nil {
			errs = append(errs, fmt.Errorf("kernel %d of %d is nil", i+1, len(ks)))
			continue
		}
		k, err := kb.Build()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seen[k.Name] = true
		g, _ := set.Kernel(k.Name)
		switch {
		case g == nil:
			errs = append(errs, fmt.Errorf("%s: kernel %s has no generated files: run go generate", k.Pos, k.Name))
		case g.IRHash == "":
			errs = append(errs, fmt.Errorf("%s: the generated files of kernel %s record no IR hash (generated by an older onesource): run go generate", k.Pos, k.Name))
		case g.IRHash != IRHash(k):
			errs = append(errs, fmt.Errorf("%s: the generated files of kernel %s are stale (generated from IR %.12s, the kernel now builds IR %.12s): run go generate", k.Pos, k.Name, g.IRHash, IRHash(k)))
		}
	}
	for _, g := range set.Kernels() {
		if !seen[g.Name] {
			errs = append(errs, fmt.Errorf("the generated set has kernel %s, which the package no longer builds: run go generate", g.Name))
		}
	}
	return errors.Join(errs...)
}

// describe is the interface of k as package prebuilt records it.
func describe(k *ir.Kernel) prebuilt.Kernel {
	m := prebuilt.Kernel{Name: k.Name, Source: k.Pos.Short(), IRHash: IRHash(k), Workgroup: k.WorkgroupSize}
	for _, b := range k.Buffers {
		m.Buffers = append(m.Buffers, prebuilt.Buffer{Name: b.Name, Elem: b.Elem.String(), ElemBytes: b.Elem.Stride(), Access: prebuilt.Access(b.Access.String())})
	}
	for _, p := range k.Params {
		m.Params = append(m.Params, prebuilt.Param{Name: p.Name, Type: p.Type.String()})
	}
	return m
}

// writeFile stores data at path unless the file already holds exactly data, by the output rule
// of package atomicfile (a temporary file renamed over it, so a reader never sees half a file).
// It reports whether it wrote.
func writeFile(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := atomicfile.WriteOutput(path, data); err != nil {
		return false, err
	}
	return true, nil
}

// Write stores files in dir (created if needed), each written to a temporary file and renamed,
// so a reader never sees half a file; a file that already holds the same bytes is left alone.
func Write(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if _, err := writeFile(filepath.Join(dir, f.Name), f.Data); err != nil {
			return err
		}
	}
	return nil
}

// ArtifactDir is the directory, inside a package, that package mode writes kernel files to;
// GoFileName is the generated Go file.
const (
	ArtifactDir = "onesource"
	GoFileName  = "onesource_gen.go"
	// BuildTag is set while onesource gen builds the kernels; the generated Go file is excluded
	// under it.
	BuildTag = "onesource_gen"
)

// GoFile returns the generated Go file of package pkgName (import path pkgPath) that embeds the
// built kernels' files from ArtifactDir and registers them. It is gofmt-formatted and
// deterministic.
func GoFile(pkgName, pkgPath string, built []Built) ([]byte, error) {
	var b bytes.Buffer
	backends := map[string]bool{}
	var embeds []string
	checked := false
	for _, k := range built {
		for _, a := range k.Meta.Artifacts {
			backends[a.Backend] = true
			embeds = append(embeds, ArtifactDir+"/"+a.File)
			if a.Checked != nil {
				embeds = append(embeds, ArtifactDir+"/"+a.Checked.File)
				checked = true
			}
		}
	}
	sort.Strings(embeds)
	var bl []string
	for n := range backends {
		bl = append(bl, n)
	}
	sort.Strings(bl)
	fmt.Fprintf(&b, "// Code generated by onesource gen. DO NOT EDIT.\n\n//go:build !%s\n\npackage %s\n\n", BuildTag, pkgName)
	b.WriteString("import (\n\t\"embed\"\n\n\t\"github.com/onesource-go/onesource/prebuilt\"\n)\n\n")
	if len(bl) > 0 {
		// The generation's flags, so that gen -check compares like with like (RecordedBackends).
		flags := strings.Join(bl, ",")
		if checked {
			flags += checkedFlag
		}
		fmt.Fprintf(&b, "%s%s\n\n", flagsDirective, flags)
	}
	b.WriteString("// onesourceFiles holds the generated kernel files.\n//\n")
	for _, e := range embeds {
		fmt.Fprintf(&b, "//go:embed %s\n", e)
	}
	if len(embeds) == 0 {
		b.WriteString("// (no kernels)\n")
	}
	b.WriteString("var onesourceFiles embed.FS\n\n")
	var names []string
	for _, k := range built {
		names = append(names, k.Kernel.Name)
	}
	fmt.Fprintf(&b, "// Generated is this package's kernels (%s) built by onesource gen for %s.\n", strings.Join(names, ", "), strings.Join(bl, ", "))
	b.WriteString("// It is registered with package prebuilt at init; place a kernel with prebuilt.Runtime.\n")
	fmt.Fprintf(&b, "var Generated = prebuilt.NewSet(%q, onesourceFiles, []prebuilt.Kernel{\n", pkgPath)
	for _, k := range built {
		m := k.Meta
		fmt.Fprintf(&b, "\t{\n\t\tName: %q,\n\t\tSource: %q,\n\t\tIRHash: %q,\n\t\tWorkgroup: [3]uint32{%d, %d, %d},\n", m.Name, m.Source, m.IRHash, m.Workgroup[0], m.Workgroup[1], m.Workgroup[2])
		if len(m.Buffers) > 0 {
			b.WriteString("\t\tBuffers: []prebuilt.Buffer{\n")
			for _, x := range m.Buffers {
				fmt.Fprintf(&b, "\t\t\t{Name: %q, Elem: %q, ElemBytes: %d, Access: %s},\n", x.Name, x.Elem, x.ElemBytes, accessIdent(x.Access))
			}
			b.WriteString("\t\t},\n")
		}
		if len(m.Params) > 0 {
			b.WriteString("\t\tParams: []prebuilt.Param{\n")
			for _, p := range m.Params {
				fmt.Fprintf(&b, "\t\t\t{Name: %q, Type: %q},\n", p.Name, p.Type)
			}
			b.WriteString("\t\t},\n")
		}
		b.WriteString("\t\tArtifacts: []prebuilt.Artifact{\n")
		for _, a := range m.Artifacts {
			b.WriteString("\t\t\t{")
			writeArtifact(&b, a)
			b.WriteString("},\n")
		}
		b.WriteString("\t\t},\n\t},\n")
	}
	b.WriteString("})\n\nfunc init() { prebuilt.Register(Generated) }\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generated Go file does not format (a bug in onesource gen): %v", err)
	}
	return src, nil
}

// writeArtifact writes the fields of a's literal (gofmt formats the result).
func writeArtifact(b *bytes.Buffer, a prebuilt.Artifact) {
	fmt.Fprintf(b, "Backend: %q, File: %q, SHA256: %q", a.Backend, ArtifactDir+"/"+a.File, a.SHA256)
	if len(a.LenArgs) > 0 {
		fmt.Fprintf(b, ", LenArgs: %s", intList(a.LenArgs))
	}
	if v := a.Vulkan; v != nil {
		fmt.Fprintf(b, ",\nVulkan: &prebuilt.VulkanModule{PushConstantSize: %d, SubgroupSize: %d, SharedBytes: %d", v.PushConstantSize, v.SubgroupSize, v.SharedBytes)
		if len(v.Features) > 0 {
			var q []string
			for _, f := range v.Features {
				q = append(q, strconv.Quote(f))
			}
			fmt.Fprintf(b, ", Features: []string{%s}", strings.Join(q, ", "))
		}
		b.WriteString("}")
	}
	if len(a.Sites) > 0 {
		b.WriteString(",\nSites: []prebuilt.Site{\n")
		for _, s := range a.Sites {
			fmt.Fprintf(b, "{File: %q, Line: %d, Buffer: %q, Access: %q", s.File, s.Line, s.Buffer, s.Access)
			if s.Signed {
				b.WriteString(", Signed: true")
			}
			b.WriteString("},\n")
		}
		b.WriteString("}")
	}
	if c := a.Checked; c != nil {
		b.WriteString(",\nChecked: &prebuilt.Artifact{")
		writeArtifact(b, *c)
		b.WriteString("}")
	}
}

// flagsDirective starts the line of a generated Go file that records the generation's flags;
// checkedFlag ends it when the file holds checked builds (gen -checked).
const (
	flagsDirective = "//onesource:gen -backends "
	checkedFlag    = " -checked"
)

// RecordedBackends returns the backends a generated Go file records it was generated for
// (sorted), and false when it records none (written before it did, or with no kernels).
func RecordedBackends(goSrc []byte) ([]string, bool) {
	if rest, ok := recordedFlags(goSrc); ok && rest != "" {
		return strings.Split(strings.TrimSuffix(rest, checkedFlag), ","), true
	}
	return nil, false
}

// RecordedChecked reports whether a generated Go file records that it was generated with
// -checked (it holds the kernels' bounds-checked builds).
func RecordedChecked(goSrc []byte) bool {
	rest, ok := recordedFlags(goSrc)
	return ok && strings.HasSuffix(rest, checkedFlag)
}

func recordedFlags(goSrc []byte) (string, bool) {
	for _, line := range strings.Split(string(goSrc), "\n") {
		if rest, ok := strings.CutPrefix(line, flagsDirective); ok {
			return rest, true
		}
	}
	return "", false
}

func accessIdent(a prebuilt.Access) string {
	switch a {
	case prebuilt.Read:
		return "prebuilt.Read"
	case prebuilt.Write:
		return "prebuilt.Write"
	case prebuilt.ReadWrite:
		return "prebuilt.ReadWrite"
	}
	return strconv.Quote(string(a))
}

func intList(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return "[]int{" + strings.Join(s, ", ") + "}"
}

// isArtifact reports whether name is a file package mode writes (so a stale one may be removed).
func isArtifact(name string) bool {
	for _, b := range Backends {
		if strings.HasSuffix(name, b.Ext) {
			return true
		}
	}
	return false
}

// WritePackage writes package mode's output for one package into dir: the kernel files under
// dir/ArtifactDir (removing kernel files there that built does not have) and dir/GoFileName. It
// returns the paths it changed (empty when everything was already up to date).
func WritePackage(dir, pkgName, pkgPath string, built []Built) ([]string, error) {
	goSrc, err := GoFile(pkgName, pkgPath, built)
	if err != nil {
		return nil, err
	}
	adir := filepath.Join(dir, ArtifactDir)
	if err := os.MkdirAll(adir, 0o755); err != nil {
		return nil, err
	}
	var changed []string
	keep := map[string]bool{}
	for _, k := range built {
		for _, f := range k.Files {
			keep[f.Name] = true
			path := filepath.Join(adir, f.Name)
			wrote, err := writeFile(path, f.Data)
			if err != nil {
				return changed, err
			}
			if wrote {
				changed = append(changed, path)
			}
		}
	}
	entries, err := os.ReadDir(adir)
	if err != nil {
		return changed, err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !keep[e.Name()] && isArtifact(e.Name()) {
			path := filepath.Join(adir, e.Name())
			if err := os.Remove(path); err != nil {
				return changed, err
			}
			changed = append(changed, path+" (removed)")
		}
	}
	path := filepath.Join(dir, GoFileName)
	wrote, err := writeFile(path, goSrc)
	if err != nil {
		return changed, err
	}
	if wrote {
		changed = append(changed, path)
	}
	return changed, nil
}

// StalePackage compares package mode's output for one package with what is in dir, writing
// nothing: it returns the files that differ from what generation would write now (missing,
// changed, or kernel files generation would remove), empty when dir is up to date.
func StalePackage(dir, pkgName, pkgPath string, built []Built) ([]string, error) {
	goSrc, err := GoFile(pkgName, pkgPath, built)
	if err != nil {
		return nil, err
	}
	adir := filepath.Join(dir, ArtifactDir)
	var stale []string
	differs := func(path string, want []byte) {
		have, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			stale = append(stale, path+" (missing)")
		case err != nil || !bytes.Equal(have, want):
			stale = append(stale, path)
		}
	}
	keep := map[string]bool{}
	for _, k := range built {
		for _, f := range k.Files {
			keep[f.Name] = true
			differs(filepath.Join(adir, f.Name), f.Data)
		}
	}
	if entries, err := os.ReadDir(adir); err == nil {
		for _, e := range entries {
			if e.Type().IsRegular() && !keep[e.Name()] && isArtifact(e.Name()) {
				stale = append(stale, filepath.Join(adir, e.Name())+" (no longer generated)")
			}
		}
	}
	differs(filepath.Join(dir, GoFileName), goSrc)
	return stale, nil
}

// Func is one kernel function of a package, as the driver program lists it.
type Func struct {
	Name    string // qualified for messages: "gpu.Axpy"
	Kernels func() []*dsl.Kernel
}

// One adapts a function returning one kernel to Func.Kernels.
func One(f func() *dsl.Kernel) func() []*dsl.Kernel {
	return func() []*dsl.Kernel { return []*dsl.Kernel{f()} }
}

// Source is one package's kernel functions, as the driver program lists them.
type Source struct {
	Path  string // import path
	Name  string // package name
	Dir   string // absolute directory (package mode writes there)
	Funcs []Func
}

// kernels calls every function of s, turning a panic into an error that names the function.
func (s Source) kernels() ([]*dsl.Kernel, error) {
	var ks []*dsl.Kernel
	var errs []error
	for _, f := range s.Funcs {
		got, err := call(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ks = append(ks, got...)
	}
	return ks, errors.Join(errs...)
}

func call(f Func) (ks []*dsl.Kernel, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", f.Name, r)
		}
	}()
	return f.Kernels(), nil
}

// Main is the entry point of the driver program `onesource gen` writes: it collects the kernels
// of every source, emits them for the backends named by -backends, and writes them to -o DIR
// (directory mode) or, with -o empty, into each package's directory (package mode). It returns
// the process exit status.
func Main(args []string, stdout, stderr io.Writer, sources ...Source) int {
	fs := flag.NewFlagSet("onesource gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output directory (directory mode); empty: package mode")
	backends := fs.String("backends", "vulkan", "comma-separated backends: "+strings.Join(BackendNames(), ", "))
	check := fs.Bool("check", false, "write nothing: exit 1 listing the generated files that are not what generation would write now; in package mode without -backends, for the backends the generated Go file records")
	checked := fs.Bool("checked", false, "also write each kernel's bounds-checked build for vulkan, cuda and hip (<kernel>.checked<ext>), which prebuilt.Options.Checked and ONESOURCE_CHECKED=1 run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	names := strings.Split(*backends, ",")
	if len(names) == 1 && names[0] == "all" {
		names = BackendNames()
	}
	explicit, explicitChecked := false, false
	fs.Visit(func(f *flag.Flag) {
		explicit = explicit || f.Name == "backends"
		explicitChecked = explicitChecked || f.Name == "checked"
	})
	if *out != "" {
		var ks []*dsl.Kernel
		var errs []error
		for _, s := range sources {
			got, err := s.kernels()
			ks = append(ks, got...)
			errs = append(errs, err)
		}
		built, err := build(ks, names, *checked)
		var files []File
		for _, b := range built {
			files = append(files, b.Files...)
		}
		sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
		if err := errors.Join(append(errs, err)...); err != nil {
			fmt.Fprintf(stderr, "onesource gen: %v\n", err)
			return 1
		}
		if *check {
			var stale []string
			for _, f := range files {
				path := filepath.Join(*out, f.Name)
				if have, err := os.ReadFile(path); err != nil || !bytes.Equal(have, f.Data) {
					stale = append(stale, path)
				}
			}
			return reportStale(stdout, stderr, *out, stale)
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
	status := 0
	for _, s := range sources {
		if s.Dir == "" || s.Name == "" || s.Path == "" {
			fmt.Fprintf(stderr, "onesource gen: package mode needs the package's path, name and directory (got %q %q %q)\n", s.Path, s.Name, s.Dir)
			return 2
		}
		names, checked := names, *checked
		if *check {
			// Like with like: the backends the generated file records, unless -backends says
			// otherwise, in which case the difference is the finding; -checked the same way.
			if have, err := os.ReadFile(filepath.Join(s.Dir, GoFileName)); err == nil {
				if rec := RecordedChecked(have); !explicitChecked {
					checked = rec
				} else if rec != checked {
					fmt.Fprintf(stderr, "onesource gen -check: %s: generated with -checked=%v, checked with -checked=%v: check with the flags of its //go:generate line\n", s.Path, rec, checked)
					status = 1
					continue
				}
				if rec, ok := RecordedBackends(have); ok {
					want := append([]string(nil), names...)
					sort.Strings(want)
					switch {
					case !explicit:
						names = rec
					case strings.Join(want, ",") != strings.Join(rec, ","):
						fmt.Fprintf(stderr, "onesource gen -check: %s: generated with -backends %s, checked with -backends %s: check with the flags of its //go:generate line (or without -backends, which checks against the recorded ones)\n", s.Path, strings.Join(rec, ","), strings.Join(want, ","))
						status = 1
						continue
					}
				}
			}
		}
		ks, kerr := s.kernels()
		built, err := build(ks, names, checked)
		if err := errors.Join(kerr, err); err != nil {
			fmt.Fprintf(stderr, "onesource gen: %s: %v\n", s.Path, err)
			status = 1
			continue
		}
		if *check {
			stale, err := StalePackage(s.Dir, s.Name, s.Path, built)
			if err != nil {
				fmt.Fprintf(stderr, "onesource gen: %s: %v\n", s.Path, err)
				status = 1
				continue
			}
			if reportStale(stdout, stderr, s.Path, stale) != 0 {
				status = 1
			}
			continue
		}
		changed, err := WritePackage(s.Dir, s.Name, s.Path, built)
		if err != nil {
			fmt.Fprintf(stderr, "onesource gen: %s: %v\n", s.Path, err)
			status = 1
			continue
		}
		nfiles := 0
		for _, b := range built {
			nfiles += len(b.Files)
		}
		state := "up to date"
		if len(changed) > 0 {
			state = fmt.Sprintf("%d files written", len(changed))
		}
		fmt.Fprintf(stdout, "onesource gen: %s: %s, %d files + %s: %s\n", s.Path, plural(len(built), "kernel"), nfiles, GoFileName, state)
	}
	return status
}

// reportStale prints the result of a -check: the stale files, or that where is up to date. It
// returns the exit status.
func reportStale(stdout, stderr io.Writer, where string, stale []string) int {
	if len(stale) == 0 {
		fmt.Fprintf(stdout, "onesource gen -check: %s: up to date\n", where)
		return 0
	}
	fmt.Fprintf(stderr, "onesource gen -check: %s: %d generated files are stale (run go generate):\n", where, len(stale))
	for _, f := range stale {
		fmt.Fprintf(stderr, "  %s\n", f)
	}
	return 1
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
