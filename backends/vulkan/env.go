package vulkan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// Env is the target environment a module is emitted for: the Vulkan version whose drivers must
// accept it and the SPIR-V version it is written in. The emitter writes that SPIR-V version, the
// OpExtension each capability needs below the version that made it core, and the entry point
// interface the version asks for (Input variables only below SPIR-V 1.4, every global from 1.4).
//
// The zero Env is EnvDefault: Emit and Compile write for Vulkan1_3, Device.Compile and the
// conformance target for the device (Device.Env, from the version the device is used at).
type Env uint8

// The environments.
const (
	EnvDefault Env = iota // Vulkan1_3 for Emit; the device's for Device.Compile
	Vulkan1_1             // SPIR-V 1.3: every Vulkan 1.1 driver (MoltenVK, older Android and desktop drivers)
	Vulkan1_2             // SPIR-V 1.5
	Vulkan1_3             // SPIR-V 1.6
)

// Envs lists the environments, oldest first.
var Envs = []Env{Vulkan1_1, Vulkan1_2, Vulkan1_3}

// SPIR-V version words (major << 16 | minor << 8).
const (
	spv10 = 0x00010000
	spv13 = 0x00010300
	spv14 = 0x00010400
	spv15 = 0x00010500
	spv16 = 0x00010600
)

// resolve returns e with EnvDefault replaced by Vulkan1_3.
func (e Env) resolve() Env {
	if e == EnvDefault {
		return Vulkan1_3
	}
	return e
}

// String returns spirv-val's name of the environment ("vulkan1.1"), or "default".
func (e Env) String() string {
	switch e {
	case EnvDefault:
		return "default"
	case Vulkan1_1, Vulkan1_2, Vulkan1_3:
		return fmt.Sprintf("vulkan1.%d", e)
	}
	return fmt.Sprintf("Env(%d)", uint8(e))
}

// API returns the Vulkan version of the environment (EnvDefault: 1.3).
func (e Env) API() Version {
	switch e.resolve() {
	case Vulkan1_1:
		return version11
	case Vulkan1_2:
		return version12
	}
	return version13
}

// SPIRV returns the SPIR-V version the environment's modules are written in ("1.3").
func (e Env) SPIRV() string { return spvVersionString(e.spirvWord()) }

// spirvWord is the SPIR-V version word of the environment's modules.
func (e Env) spirvWord() uint32 {
	switch e.resolve() {
	case Vulkan1_1:
		return spv13
	case Vulkan1_2:
		return spv15
	}
	return spv16
}

// envConstName is the Go name of an environment ("Vulkan1_1"), for messages.
func envConstName(e Env) string {
	a := e.resolve().API()
	return fmt.Sprintf("Vulkan%d_%d", a.Major(), a.Minor())
}

// spvVersionString formats a SPIR-V version word as "1.6".
func spvVersionString(w uint32) string { return fmt.Sprintf("%d.%d", w>>16&0xff, w>>8&0xff) }

// ParseEnv reads an environment as a user writes it: "1.1", "vulkan1.1", "1.2", "1.3", or ""
// and "default" for EnvDefault.
func ParseEnv(s string) (Env, error) {
	t := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "vulkan")
	switch t {
	case "", "default":
		return EnvDefault, nil
	case "1.1":
		return Vulkan1_1, nil
	case "1.2":
		return Vulkan1_2, nil
	case "1.3":
		return Vulkan1_3, nil
	}
	return EnvDefault, fmt.Errorf("vulkan: unknown environment %q (want 1.1, 1.2 or 1.3)", s)
}

// EnvFor returns the newest environment a device used at Vulkan version v runs: Vulkan1_3 from
// 1.3, Vulkan1_2 for 1.2, else Vulkan1_1 (the oldest the runtime takes).
func EnvFor(v Version) Env {
	switch {
	case v >= version13:
		return Vulkan1_3
	case v >= version12:
		return Vulkan1_2
	}
	return Vulkan1_1
}

// validatorEnv is spirv-val's --target-env for a module of SPIR-V version word w: the Vulkan
// environment that takes it.
func validatorEnv(w uint32) string {
	switch {
	case w <= spv13:
		return "vulkan1.1"
	case w == spv14:
		return "vulkan1.1spv1.4"
	case w == spv15:
		return "vulkan1.2"
	}
	return "vulkan1.3"
}

// selectCond returns the condition of an OpSelect: before SPIR-V 1.4 a select of vectors takes
// a vector of bools of the same width, so a scalar condition is splatted.
func (e *spvEmitter) selectCond(in *ir.Inst, cond uint32) uint32 {
	n := in.Type.Lanes
	if e.opts.Env.spirvWord() >= spv14 || n <= 1 || in.Args[0].Type.Lanes != 1 {
		return cond
	}
	lanes := make([]uint32, n)
	for i := range lanes {
		lanes[i] = cond
	}
	return e.op(spvOpCompositeConstruct, e.boolOf(in.Type), lanes...)
}

// spvNeed is what a capability (or storage class) takes in a module written below the SPIR-V
// version that made it core.
type spvNeed struct {
	ext  string // the SPIR-V extension that adds it ("": none)
	core uint32 // the SPIR-V version word from which it is core (0: never; ext is always declared)
	min  Env    // the oldest environment that can express it at all (EnvDefault: every one)
	why  string // what min needs, for the error
}

// spvCapNeeds are the capabilities that need a SPIR-V extension below some version (or in every
// version), keyed by capability; one entry each. A capability not listed is core in SPIR-V 1.3
// and needs no extension in any environment.
var spvCapNeeds = map[spvCap]spvNeed{
	spvCapStorageBuffer16BitAccess:    {ext: "SPV_KHR_16bit_storage", core: spv13},
	spvCapStorageBuffer8BitAccess:     {ext: "SPV_KHR_8bit_storage", core: spv15},
	spvCapDotProduct:                  {ext: "SPV_KHR_integer_dot_product", core: spv16},
	spvCapDotProductInput4x8BitPacked: {ext: "SPV_KHR_integer_dot_product", core: spv16},
	spvCapAtomicFloat32AddEXT:         {ext: "SPV_EXT_shader_atomic_float_add"},
	spvCapCooperativeMatrixKHR:        {ext: "SPV_KHR_cooperative_matrix"},
}

// spvStorageClassNeeds are the storage classes that need an extension below some version.
var spvStorageClassNeeds = map[uint32]spvNeed{
	spvSCStorageBuffer: {ext: "SPV_KHR_storage_buffer_storage_class", core: spv13},
}

// envFinish applies the environment to the collected module: it checks that every declared
// capability can be expressed in env, and records the extensions the capabilities (needs, the
// table: spvCapNeeds) and storage classes need there. It returns an error naming the
// environment a capability needs, why, and the kernel line that first needed it.
func (e *spvEmitter) envFinish(env Env, needs map[spvCap]spvNeed) error {
	m := e.m
	ver := env.spirvWord()
	caps := make([]spvCap, 0, len(m.caps))
	for c := range m.caps {
		caps = append(caps, c)
	}
	slices.Sort(caps)
	add := func(n spvNeed) {
		if n.ext != "" && (n.core == 0 || ver < n.core) {
			m.extension(n.ext)
		}
	}
	for _, c := range caps {
		n, ok := needs[c]
		if !ok {
			continue
		}
		if n.min != EnvDefault && env < n.min {
			pos := m.capPos[c]
			if pos.File == "" {
				pos = e.k.Pos
			}
			return &ir.Error{Pos: pos, Kernel: e.k.Name, Msg: fmt.Sprintf(
				"vulkan: this kernel needs %s (SPIR-V %s), not %s (SPIR-V %s): %s (SPIR-V capability %d, first needed here)",
				n.min, n.min.SPIRV(), env, env.SPIRV(), n.why, c)}
		}
		add(n)
	}
	if len(e.k.Buffers) > 0 {
		add(spvStorageClassNeeds[spvSCStorageBuffer])
	}
	return nil
}
