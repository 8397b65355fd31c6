package prebuilt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
)

// AnyType is the type part of a prebuilt kernel's registry cell: (kernel name, AnyType, backend).
const AnyType = "any"

// Access says how a kernel uses a buffer.
type Access string

// The buffer access modes, as the DSL declares them.
const (
	Read      Access = "read"
	Write     Access = "write"
	ReadWrite Access = "read_write"
)

// Writes reports whether the kernel may store to a buffer with access a.
func (a Access) Writes() bool { return a == Write || a == ReadWrite }

// Buffer is one storage buffer of a kernel, in binding order.
type Buffer struct {
	Name      string
	Elem      string // element type as the IR names it: "f32", "u32", "i8", "vec4<f32>", ...
	ElemBytes int    // bytes per element in the buffer (a vec3 takes 16)
	Access    Access
}

// Param is one 32-bit scalar parameter of a kernel, in declaration order.
type Param struct {
	Name string
	Type string // "u32", "i32" or "f32"
}

// VulkanModule is what a Vulkan device needs besides the SPIR-V words to run a module.
type VulkanModule struct {
	PushConstantSize uint32
	SubgroupSize     uint32   // the subgroup size the module assumes (0: none)
	SharedBytes      uint32   // workgroup memory the module declares
	Features         []string // device features the module needs (see FeatureNames)
}

// Artifact is one generated file of a kernel.
type Artifact struct {
	Backend string // "vulkan", "cuda", "hip" or "metal"
	File    string // path inside the embedded file system
	SHA256  string // hex SHA-256 of the file as generated
	// LenArgs lists the buffers (by binding index) whose element count the CUDA or HIP kernel
	// takes as an extra trailing argument, after the parameters.
	LenArgs []int
	// Vulkan is set for the vulkan artifact.
	Vulkan *VulkanModule
	// Checked is the bounds-checked build of the same kernel for the same backend (onesource gen
	// -checked), which Options.Checked runs: its bindings are the kernel's and a report buffer
	// last (lower.ReportBytes). Nil when not generated.
	Checked *Artifact
	// Sites is, for a checked build, the table its report refers to: Sites[i] is the access the
	// report's site id i+1 names.
	Sites []Site

	data []byte
}

// Site is one bounds-checked buffer access of a checked build (lower.Site): where the kernel's
// source makes it, the buffer and the kind of access.
type Site struct {
	File   string // the source file's directory and base name ("gpu/gpu.go")
	Line   int
	Buffer string
	Access string // "load", "store", "atomic add", ...
	Signed bool   // the index is an i32
}

// Data returns the file's bytes (nil when the set failed to load; see Set.Err).
func (a *Artifact) Data() []byte { return a.data }

// Hash returns the artifact's identity as registry evidence records it: "sha256:<hex>".
func (a *Artifact) Hash() string { return "sha256:" + a.SHA256 }

// Kernel is one kernel built by onesource gen: its interface and its generated files.
type Kernel struct {
	Name   string
	Source string // where the kernel was built: "file.go:line" (base name only)
	// IRHash is the SHA-256 of the kernel's IR text when its files were generated: a kernel whose
	// source changed since builds another IR (generate.Check, onesource gen -check).
	IRHash    string
	Workgroup [3]uint32
	Buffers   []Buffer
	Params    []Param
	Artifacts []Artifact // sorted by backend

	set *Set
}

// Artifact returns the kernel's file for backend, or nil.
func (k *Kernel) Artifact(backend string) *Artifact {
	for i := range k.Artifacts {
		if k.Artifacts[i].Backend == backend {
			return &k.Artifacts[i]
		}
	}
	return nil
}

// Package returns the import path of the package the kernel came from.
func (k *Kernel) Package() string {
	if k.set == nil {
		return ""
	}
	return k.set.pkg
}

// Set is the kernels of one Go package, as its generated file declares them.
type Set struct {
	pkg     string
	kernels []*Kernel
	err     error
}

// NewSet is what a generated file calls: it reads every artifact from files (the package's
// embedded file system) and checks it against its recorded hash. It never fails; a problem is
// kept and returned by Err (and by every use of the set's kernels).
func NewSet(pkg string, files fs.FS, kernels []Kernel) *Set {
	s := &Set{pkg: pkg}
	var errs []error
	seen := map[string]bool{}
	for i := range kernels {
		k := kernels[i]
		k.Artifacts = append([]Artifact(nil), k.Artifacts...)
		k.set = s
		if seen[k.Name] {
			errs = append(errs, fmt.Errorf("two kernels named %q", k.Name))
		}
		seen[k.Name] = true
		for j := range k.Artifacts {
			a := &k.Artifacts[j]
			if err := a.load(files); err != nil {
				errs = append(errs, err)
			}
			if a.Checked != nil {
				c := *a.Checked
				a.Checked = &c
				if err := c.load(files); err != nil {
					errs = append(errs, err)
				}
			}
		}
		s.kernels = append(s.kernels, &k)
	}
	sort.Slice(s.kernels, func(i, j int) bool { return s.kernels[i].Name < s.kernels[j].Name })
	if len(errs) > 0 {
		s.err = fmt.Errorf("prebuilt: package %s: %w", pkg, errors.Join(errs...))
	}
	return s
}

// load reads the artifact's file from files and checks it against its recorded hash.
func (a *Artifact) load(files fs.FS) error {
	if files == nil {
		return fmt.Errorf("%s: no embedded files", a.File)
	}
	data, err := fs.ReadFile(files, a.File)
	if err != nil {
		return fmt.Errorf("%s: %v (run go generate)", a.File, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != a.SHA256 {
		return fmt.Errorf("%s: content is sha256:%s, the generated file recorded sha256:%s: the file was changed after generation (run go generate)", a.File, got[:12], short(a.SHA256))
	}
	a.data = data
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Package returns the import path of the package the set belongs to.
func (s *Set) Package() string { return s.pkg }

// Err returns why the set cannot be used (missing or modified files), or nil.
func (s *Set) Err() error { return s.err }

// Kernels returns the set's kernels sorted by name.
func (s *Set) Kernels() []*Kernel { return append([]*Kernel(nil), s.kernels...) }

// Kernel returns the kernel called name.
func (s *Set) Kernel(name string) (*Kernel, error) {
	if s.err != nil {
		return nil, s.err
	}
	for _, k := range s.kernels {
		if k.Name == name {
			return k, nil
		}
	}
	var names []string
	for _, k := range s.kernels {
		names = append(names, k.Name)
	}
	return nil, fmt.Errorf("prebuilt: package %s has no kernel %q (it has %s)", s.pkg, name, strings.Join(names, ", "))
}

var (
	regMu sync.RWMutex
	sets  []*Set
)

// Register makes the set's kernels visible to Lookup. Generated files call it at init.
// Registering a second set for the same package replaces the first.
func Register(s *Set) {
	regMu.Lock()
	defer regMu.Unlock()
	for i, old := range sets {
		if old.pkg == s.pkg {
			sets[i] = s
			return
		}
	}
	sets = append(sets, s)
	sort.Slice(sets, func(i, j int) bool { return sets[i].pkg < sets[j].pkg })
}

// Sets returns every registered set, sorted by package path.
func Sets() []*Set {
	regMu.RLock()
	defer regMu.RUnlock()
	return append([]*Set(nil), sets...)
}

// Lookup finds a registered kernel by name, or by "package/path.name" when two packages have a
// kernel of that name.
func Lookup(name string) (*Kernel, error) {
	var found []*Kernel
	var known []string
	for _, s := range Sets() {
		for _, k := range s.kernels {
			known = append(known, k.Name)
			if k.Name == name || s.pkg+"."+k.Name == name {
				if s.err != nil {
					return nil, s.err
				}
				found = append(found, k)
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if len(known) == 0 {
			return nil, fmt.Errorf("prebuilt: no kernel %q: no generated kernels are linked into this program (import the package that holds the onesource gen output)", name)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("prebuilt: no kernel %q (registered: %s)", name, strings.Join(known, ", "))
	}
	var where []string
	for _, k := range found {
		where = append(where, k.set.pkg+"."+k.Name)
	}
	return nil, fmt.Errorf("prebuilt: kernel %q is ambiguous: %s", name, strings.Join(where, ", "))
}
