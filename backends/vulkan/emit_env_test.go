package vulkan_test

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
)

// wantSPIRV is the SPIR-V version word each environment's modules carry (Vulkan 1.1 takes SPIR-V
// up to 1.3, Vulkan 1.2 up to 1.5, Vulkan 1.3 up to 1.6), written out from the Vulkan
// specification's "Versions and formats" appendix.
var wantSPIRV = map[vulkan.Env]uint32{
	vulkan.Vulkan1_1: 0x00010300,
	vulkan.Vulkan1_2: 0x00010500,
	vulkan.Vulkan1_3: 0x00010600,
}

// spvFacts is what a test reads back from SPIR-V words without the emitter's help.
type spvFacts struct {
	version    uint32
	caps       []uint32
	exts       []string
	iface      []uint32          // the entry point's interface ids
	storage    map[uint32]uint32 // global variable id -> storage class
	lines      int               // OpLine count
	stringsSet []string          // OpString literals
}

// readSPV decodes the facts a test checks from a module's words.
func readSPV(t testing.TB, w []uint32) spvFacts {
	t.Helper()
	f := spvFacts{version: w[1], storage: map[uint32]uint32{}}
	str := func(ws []uint32) (string, int) {
		var b []byte
		for i, x := range ws {
			for k := 0; k < 4; k++ {
				c := byte(x >> (8 * k))
				if c == 0 {
					return string(b), i + 1
				}
				b = append(b, c)
			}
		}
		return string(b), len(ws)
	}
	inFunction := false
	for i := 5; i < len(w); {
		n, op := int(w[i]>>16), w[i]&0xffff
		if n == 0 || i+n > len(w) {
			t.Fatalf("malformed instruction at word %d", i)
		}
		ops := w[i+1 : i+n]
		switch op {
		case 17: // OpCapability
			f.caps = append(f.caps, ops[0])
		case 10: // OpExtension
			s, _ := str(ops)
			f.exts = append(f.exts, s)
		case 7: // OpString
			s, _ := str(ops[1:])
			f.stringsSet = append(f.stringsSet, s)
		case 8: // OpLine
			f.lines++
		case 15: // OpEntryPoint: model, function, name, interface...
			_, used := str(ops[2:])
			f.iface = append(f.iface, ops[2+used:]...)
		case 54: // OpFunction
			inFunction = true
		case 59: // OpVariable: type, id, storage class
			if !inFunction {
				f.storage[ops[1]] = ops[2]
			}
		}
		i += n
	}
	return f
}

// Capability numbers (SPIR-V specification, section 3.31).
const (
	capStorageBuffer16 = 4433
	capStorageBuffer8  = 4448
	capDotProduct      = 6019
	capAtomicFloat32   = 6033 // AtomicFloat32AddEXT
)

// wantExtensions is the OpExtension set a module with caps needs in env, derived from the
// SPIR-V specification: SPV_KHR_16bit_storage is core from SPIR-V 1.3, SPV_KHR_8bit_storage
// from 1.5, SPV_KHR_integer_dot_product from 1.6; SPV_EXT_shader_atomic_float_add is core in
// none.
func wantExtensions(env vulkan.Env, caps []uint32) []string {
	var out []string
	v := wantSPIRV[env]
	if slices.Contains(caps, capStorageBuffer16) && v < 0x00010300 {
		out = append(out, "SPV_KHR_16bit_storage")
	}
	if slices.Contains(caps, capStorageBuffer8) && v < 0x00010500 {
		out = append(out, "SPV_KHR_8bit_storage")
	}
	if slices.Contains(caps, capDotProduct) && v < 0x00010600 {
		out = append(out, "SPV_KHR_integer_dot_product")
	}
	if slices.Contains(caps, capAtomicFloat32) {
		out = append(out, "SPV_EXT_shader_atomic_float_add")
	}
	slices.Sort(out)
	return out
}

// TestEmitEnvs emits every emitter test kernel for each environment and checks the module:
// spirv-val accepts it for that environment, its version word is the environment's, it
// declares exactly the extensions its capabilities need there, its entry point lists only
// Input variables below SPIR-V 1.4 and every global from 1.4, and it needs the same device
// features in every environment.
func TestEmitEnvs(t *testing.T) {
	needSPIRVTools(t)
	for _, c := range emitCases {
		t.Run(c.name, func(t *testing.T) {
			k := buildCase(t, c)
			for _, env := range vulkan.Envs {
				t.Run(env.String(), func(t *testing.T) {
					mod, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: c.sub, Env: env})
					var ie *ir.Error
					if err != nil && env < vulkan.Vulkan1_3 && errors.As(err, &ie) && strings.Contains(ie.Msg, "this kernel needs vulkan1.") {
						t.Logf("the kernel declares why it needs more than %v: %v", env, err)
						return
					}
					if err != nil {
						t.Fatalf("Emit: %v\n%s", err, k)
					}
					if err := spirvValEnv(t, mod.Words, env); err != nil {
						t.Fatalf("%v\nIR:\n%s", err, k)
					}
					f := readSPV(t, mod.Words)
					if f.version != wantSPIRV[env] || mod.Env != env {
						t.Errorf("version word %#x, Module.Env %v; want %#x, %v", f.version, mod.Env, wantSPIRV[env], env)
					}
					slices.Sort(f.exts)
					if want := wantExtensions(env, f.caps); !slices.Equal(f.exts, want) {
						t.Errorf("extensions %q, want %q (capabilities %v)", f.exts, want, f.caps)
					}
					for _, id := range f.iface {
						if sc := f.storage[id]; wantSPIRV[env] < 0x00010400 && sc != 1 && sc != 3 {
							t.Errorf("SPIR-V %#x interface lists %%%d of storage class %d (only Input/Output before 1.4)", f.version, id, sc)
						}
					}
					if wantSPIRV[env] >= 0x00010400 {
						for id := range f.storage {
							if !slices.Contains(f.iface, id) {
								t.Errorf("SPIR-V 1.4+ interface misses global %%%d", id)
							}
						}
					}
					if mod.Features != c.want {
						t.Errorf("features %s, want %s", featureNames(mod.Features), featureNames(c.want))
					}
					if env > vulkan.Vulkan1_1 {
						// The validator must tell the environments apart: the module does not pass
						// for the one before.
						if err := vulkan.ValidateEnv(mod.Words, env-1); err == nil {
							t.Errorf("spirv-val accepts a %v module for %v", env, env-1)
						}
					}
				})
			}
		})
	}
}

// TestEmitDefaultEnv: the zero EmitOptions write for Vulkan 1.3, and Validate picks the
// validator's environment from the module's version word.
func TestEmitDefaultEnv(t *testing.T) {
	needSPIRVTools(t)
	k := buildCase(t, emitCases[0])
	def, err := vulkan.Emit(k, vulkan.EmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v13, err := vulkan.Emit(k, vulkan.EmitOptions{Env: vulkan.Vulkan1_3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(def.Words, v13.Words) || def.Env != vulkan.Vulkan1_3 {
		t.Errorf("the default environment is not Vulkan 1.3 (Env %v)", def.Env)
	}
	// A 1.6 module relabelled 1.3 must fail Validate: Validate really checks against the
	// environment the version word names (Vulkan 1.1 rejects the 1.4+ interface).
	w := slices.Clone(v13.Words)
	w[1] = wantSPIRV[vulkan.Vulkan1_1]
	if err := vulkan.Validate(w); err == nil || !strings.Contains(err.Error(), "vulkan1.1") {
		t.Errorf("Validate of a SPIR-V 1.3 module with a 1.4 interface: %v", err)
	}
	if _, err := vulkan.Emit(k, vulkan.EmitOptions{Env: vulkan.Env(99)}); err == nil {
		t.Errorf("Emit accepted an unknown environment")
	}
}

func TestParseEnv(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want vulkan.Env
		ok   bool
	}{
		{"", vulkan.EnvDefault, true},
		{"default", vulkan.EnvDefault, true},
		{"1.1", vulkan.Vulkan1_1, true},
		{"vulkan1.2", vulkan.Vulkan1_2, true},
		{" Vulkan1.3 ", vulkan.Vulkan1_3, true},
		{"1.0", 0, false},
		{"1.4", 0, false},
	} {
		got, err := vulkan.ParseEnv(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseEnv(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, e := range vulkan.Envs {
		if back, err := vulkan.ParseEnv(e.String()); err != nil || back != e {
			t.Errorf("ParseEnv(%q) = %v, %v", e.String(), back, err)
		}
	}
	for _, tc := range []struct {
		v    vulkan.Version
		want vulkan.Env
	}{
		{vulkan.MakeVersion(1, 1, 0), vulkan.Vulkan1_1},
		{vulkan.MakeVersion(1, 2, 189), vulkan.Vulkan1_2},
		{vulkan.MakeVersion(1, 3, 230), vulkan.Vulkan1_3},
		{vulkan.MakeVersion(1, 4, 0), vulkan.Vulkan1_3},
	} {
		if got := vulkan.EnvFor(tc.v); got != tc.want {
			t.Errorf("EnvFor(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestEmitDebugAllCases: with debug information every test kernel still validates in every
// environment, carries OpLines, and without it none (and no file path beyond the base name).
func TestEmitDebugAllCases(t *testing.T) {
	needSPIRVTools(t)
	for _, c := range emitCases {
		t.Run(c.name, func(t *testing.T) {
			k := buildCase(t, c)
			for _, env := range vulkan.Envs {
				mod, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: c.sub, Env: env, Debug: true})
				if err != nil {
					t.Fatalf("%v: Emit: %v", env, err)
				}
				if err := spirvValEnv(t, mod.Words, env); err != nil {
					t.Fatalf("%v with debug information: %v\nIR:\n%s", env, err, k)
				}
				plain, err := vulkan.Emit(k, vulkan.EmitOptions{SubgroupSize: c.sub, Env: env})
				if err != nil {
					t.Fatal(err)
				}
				fd, fp := readSPV(t, mod.Words), readSPV(t, plain.Words)
				if fd.lines == 0 || fp.lines != 0 {
					t.Errorf("%v: %d OpLines with debug information, %d without", env, fd.lines, fp.lines)
				}
			}
		})
	}
}

// TestEmitDebugLine builds a kernel with package dsl and checks that, with EmitOptions.Debug,
// spirv-dis shows an OpLine with this file and the line of a DSL call (from runtime.Caller)
// before the instructions that line built, that spirv-val accepts the module in every
// environment, and that without Debug the module holds no OpLine and no path.
func TestEmitDebugLine(t *testing.T) {
	needSPIRVTools(t)
	k := dsl.New("debug_lines", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	i := k.GlobalID(dsl.X)
	_, file, line, _ := runtime.Caller(0)
	y.Store(i, x.Load(i).Mul(k.F32(3))) // this line is line+1: a load, a multiply and a store
	storeLine := line + 1
	ik, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range vulkan.Envs {
		t.Run(env.String(), func(t *testing.T) {
			mod, err := vulkan.CompileWith(ik, vulkan.PortableCaps, vulkan.EmitOptions{Env: env, Debug: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := spirvValEnv(t, mod.Words, env); err != nil {
				t.Fatal(err)
			}
			dis, err := spirvDis(t, mod.Words, true)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^\s*(%\d+) = OpString "` + regexp.QuoteMeta(file) + `"$`).FindStringSubmatch(dis)
			if m == nil {
				t.Fatalf("no OpString with %s:\n%s", file, dis)
			}
			if !regexp.MustCompile(`(?m)^\s*OpSource Unknown 0 ` + m[1] + `$`).MatchString(dis) {
				t.Errorf("no OpSource naming %s (%s):\n%s", file, m[1], dis)
			}
			// The OpLine for the store's line is followed, in its block, by the multiply
			// and the store the line built.
			at := regexp.MustCompile(`(?m)^\s*OpLine ` + m[1] + ` ` + fmt.Sprint(storeLine) + ` 0$`).FindStringIndex(dis)
			if at == nil {
				t.Fatalf("no OpLine %s %d (this file, line %d):\n%s", m[1], storeLine, storeLine, dis)
			}
			rest := dis[at[1]:]
			if next := strings.Index(rest, "OpLine"); next >= 0 {
				rest = rest[:next]
			}
			for _, want := range []string{"OpFMul", "OpStore"} {
				if !strings.Contains(rest, want) {
					t.Errorf("no %s after OpLine %d before the next OpLine:\n%s", want, storeLine, rest)
				}
			}

			plain, err := vulkan.CompileWith(ik, vulkan.PortableCaps, vulkan.EmitOptions{Env: env})
			if err != nil {
				t.Fatal(err)
			}
			f := readSPV(t, plain.Words)
			if f.lines != 0 || slices.Contains(f.stringsSet, file) {
				t.Errorf("without Debug: %d OpLines, strings %q", f.lines, f.stringsSet)
			}
			if len(plain.Words) >= len(mod.Words) {
				t.Errorf("debug information did not add words (%d, %d)", len(plain.Words), len(mod.Words))
			}
		})
	}
}

// spirvValEnv runs spirv-val for env on words; the error carries the validator's message and
// the disassembly.
func spirvValEnv(t testing.TB, words []uint32, env vulkan.Env) error {
	t.Helper()
	if err := vulkan.ValidateEnv(words, env); err != nil {
		if errors.Is(err, vulkan.ErrNoValidator) {
			t.Skip(err)
		}
		dis, _ := spirvDis(t, words, true)
		return fmt.Errorf("%w\n--- disassembly ---\n%s", err, dis)
	}
	return nil
}
