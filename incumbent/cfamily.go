package incumbent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/onesource-go/onesource/backends/cfamily/host"
)

// CUDA and HIP incumbents. An entry of backend cuda names a .cu source (hip: a .hip source); it
// is launched as the emitted kernels are: "entry" is an extern "C" __global__ function whose
// parameters are one device pointer per binding, in binding order, then one 32-bit scalar per
// push-constant field, in order (u32, i32 or f32: "push constant" means kernel argument here);
// workgroup_size is the block and grid the grid, both expressions of the shape as for Vulkan.
// The source's defines become -DNAME=VALUE options (a variant's defines merge onto them) and its
// include_dirs -I options, for NVRTC, HIPRTC or, on the emulated device, the host compiler. Spec
// constants, subgroup sizes, features and unused bindings are SPIR-V notions: an entry that
// states them is refused when instantiated. CFamily checks the manifest against the kernel's
// declared signature (Signature: the pointers, then the scalars); a GPU driver that reports
// parameter sizes (CUDA 12.4+) checks them again at launch.

// Kernel is a CUDA or HIP incumbent's code as a launch compiles it.
type Kernel struct {
	Backend string    // "cuda" or "hip"
	Text    string    // the source
	Entry   string    // the extern "C" __global__ function
	Options []string  // compile options: the defines (-DNAME=VALUE, sorted), then -I DIR
	Block   [3]uint32 // the block (workgroup size)
}

// CFamily instantiates a cuda or hip entry for the shape variables vars: the implementation the
// variants' conditions choose, its source and options (Launch.Kernel), the pointer arguments'
// operands, scratch sizes and views (Operands, Scratch, Offsets, Sizes), the scalar arguments as
// little-endian words (Push) and the grid (Groups). Launch.Hash is the sha256 of the options and
// the source.
func (e *Entry) CFamily(vars map[string]float64) (*Launch, error) {
	lang := map[string]host.Lang{"cuda": host.CUDA, "hip": host.HIP}[e.Backend]
	if lang == 0 {
		return nil, fmt.Errorf("incumbent %s: backend %s, not cuda or hip", e.Name, e.Backend)
	}
	im, err := e.choose(vars)
	if err != nil {
		return nil, err
	}
	switch {
	case len(im.spec) > 0:
		return nil, fmt.Errorf("%s: %s.spec_constants: a %s kernel has no specialization constants (state defines)", e.what(im), im.specAt, e.Backend)
	case im.subgroup != "" || len(im.features) > 0 || len(im.requires) > 0:
		return nil, fmt.Errorf("%s: subgroup_size, full_subgroups, features and requires apply to Vulkan incumbents", e.what(im))
	}
	path := im.source.CUDA
	if lang == host.HIP {
		path = im.source.HIP
	}
	text, err := os.ReadFile(e.m.resolve(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.what(im), err)
	}
	ptrs, scalars, err := host.Signature(string(text), lang, im.entry)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", e.what(im), path, err)
	}
	if ptrs != len(im.bindings) || scalars != len(im.push) {
		return nil, fmt.Errorf("%s: %s declares %s with %d pointer and %d scalar parameters; the manifest binds %d buffers (%s.bindings) and %d push constants (%s.push_constants)",
			e.what(im), path, im.entry, ptrs, scalars, len(im.bindings), im.bindAt, len(im.push), im.pushAt)
	}
	for j, b := range im.bindings {
		if b.Unused {
			return nil, fmt.Errorf("%s: %s.bindings[%d]: every binding of a %s kernel is a parameter: none is unused", e.what(im), im.bindAt, j, e.Backend)
		}
	}
	for j, f := range im.push {
		if f.Offset != nil && *f.Offset != 4*j {
			return nil, fmt.Errorf("%s: %s.push_constants[%d].offset: %d; a %s kernel's scalars are its parameters in order, 4 bytes each", e.what(im), im.pushAt, j, *f.Offset, e.Backend)
		}
	}
	l, lay, err := e.layout(im, vars)
	if err != nil {
		return nil, err
	}
	l.Push = l.Push[:4*len(im.push)] // push_constant_size pads a Vulkan block only
	var opts []string
	keys := make([]string, 0, len(im.source.Defines))
	for k := range im.source.Defines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		opts = append(opts, "-D"+k+"="+im.source.Defines[k])
	}
	for _, d := range im.source.IncludeDirs {
		opts = append(opts, "-I", e.m.resolve(d))
	}
	l.Kernel = &Kernel{Backend: e.Backend, Text: string(text), Entry: im.entry, Options: opts, Block: lay.workgroup}
	h := sha256.Sum256([]byte(strings.Join(opts, "\x00") + "\x00\x00" + string(text)))
	l.Hash = hex.EncodeToString(h[:])
	return l, nil
}
