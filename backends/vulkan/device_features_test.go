package vulkan

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"
)

// wantVkFeature is where each Features field lives in the Vulkan feature structs of a device
// used at Vulkan 1.3, written out independently of device_features.go ("" for properties, which
// are not enabled).
var wantVkFeature = map[string]string{
	"Int8":              "VkPhysicalDeviceVulkan12Features.shaderInt8",
	"Int16":             "VkPhysicalDeviceFeatures.shaderInt16",
	"Float16":           "VkPhysicalDeviceVulkan12Features.shaderFloat16",
	"Float64":           "VkPhysicalDeviceFeatures.shaderFloat64",
	"StorageBuffer8":    "VkPhysicalDeviceVulkan12Features.storageBuffer8BitAccess",
	"StorageBuffer16":   "VkPhysicalDeviceVulkan11Features.storageBuffer16BitAccess",
	"IntegerDotProduct": "VkPhysicalDeviceVulkan13Features.shaderIntegerDotProduct",
	"SubgroupShuffle":   "",
	"SubgroupBasic":     "",
	// SubgroupArithmetic is a property too.
	"SubgroupArithmetic": "",
	// AtomicFloat32Add is two VkBool32s of VK_EXT_shader_atomic_float (core in no version): see
	// wantExtOnly.
	"AtomicFloat32Add": "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT.shaderBufferFloat32AtomicAdd and shaderSharedFloat32AtomicAdd",
	// CooperativeMatrix is a VkBool32 of VK_KHR_cooperative_matrix (core in no version).
	"CooperativeMatrix": "VkPhysicalDeviceCooperativeMatrixFeaturesKHR.cooperativeMatrix",
}

// wantExtOnly are the features no Vulkan version made core, from the specification: the
// VkBool32s that carry them at every version and the device extension that must be enabled.
var wantExtOnly = map[string]struct {
	vk  []string
	ext string
}{
	"AtomicFloat32Add": {[]string{
		"VkPhysicalDeviceShaderAtomicFloatFeaturesEXT.shaderBufferFloat32AtomicAdd",
		"VkPhysicalDeviceShaderAtomicFloatFeaturesEXT.shaderSharedFloat32AtomicAdd",
	}, "VK_EXT_shader_atomic_float"},
	"CooperativeMatrix": {[]string{"VkPhysicalDeviceCooperativeMatrixFeaturesKHR.cooperativeMatrix"}, "VK_KHR_cooperative_matrix"},
}

// wantOlder is where a feature lives on a device used below the version that made it core (the
// Vulkan 1.1-1.3 structs may not be used there), with the device extension that carries it ("":
// core at that version), from the Vulkan specification.
var wantOlder = map[string]struct {
	below     Version
	vk, ext   string
	structNum int32 // the sType of that struct
}{
	"Int8":              {version12, "VkPhysicalDeviceShaderFloat16Int8Features.shaderInt8", "VK_KHR_shader_float16_int8", 1000082000},
	"Float16":           {version12, "VkPhysicalDeviceShaderFloat16Int8Features.shaderFloat16", "VK_KHR_shader_float16_int8", 1000082000},
	"StorageBuffer8":    {version12, "VkPhysicalDevice8BitStorageFeatures.storageBuffer8BitAccess", "VK_KHR_8bit_storage", 1000177000},
	"StorageBuffer16":   {version12, "VkPhysicalDevice16BitStorageFeatures.storageBuffer16BitAccess", "", 1000083000},
	"IntegerDotProduct": {version13, "VkPhysicalDeviceShaderIntegerDotProductFeatures.shaderIntegerDotProduct", "VK_KHR_shader_integer_dot_product", 1000280000},
}

// chainStructs names the structs of a feature chain by their sType (from the specification),
// with the first Vulkan version that may carry each (0: any) and the last one (0: any).
var chainStructs = map[int32]struct {
	name     string
	from, to Version // usable from, and below to
}{
	1000059000: {"VkPhysicalDeviceFeatures2", 0, 0},
	49:         {"VkPhysicalDeviceVulkan11Features", version12, 0},
	51:         {"VkPhysicalDeviceVulkan12Features", version12, 0},
	53:         {"VkPhysicalDeviceVulkan13Features", version13, 0},
	1000083000: {"VkPhysicalDevice16BitStorageFeatures", 0, version12},
	1000177000: {"VkPhysicalDevice8BitStorageFeatures", 0, version12},
	1000082000: {"VkPhysicalDeviceShaderFloat16Int8Features", 0, version12},
	1000280000: {"VkPhysicalDeviceShaderIntegerDotProductFeatures", 0, version13},
	1000225002: {"VkPhysicalDeviceSubgroupSizeControlFeatures", 0, version13},
	1000260000: {"VkPhysicalDeviceShaderAtomicFloatFeaturesEXT", 0, 0},
	1000506000: {"VkPhysicalDeviceCooperativeMatrixFeaturesKHR", 0, 0},
}

// setBools walks the chain from f2 as a driver would and returns "Struct.field" for every
// VkBool32 set in a linked struct. It checks on the way that each linked struct is one the
// version may carry, appears once, and that its sType is right; bools set in unlinked structs
// are invisible to the driver and so are not returned.
func setBools(t *testing.T, c *featureChain, version Version) []string {
	t.Helper()
	structsOf := map[unsafe.Pointer]any{
		unsafe.Pointer(&c.f2): c.f2, unsafe.Pointer(&c.v11): c.v11, unsafe.Pointer(&c.v12): c.v12, unsafe.Pointer(&c.v13): c.v13,
		unsafe.Pointer(&c.s16): c.s16, unsafe.Pointer(&c.s8): c.s8, unsafe.Pointer(&c.f16i8): c.f16i8,
		unsafe.Pointer(&c.dot): c.dot, unsafe.Pointer(&c.sgsc): c.sgsc, unsafe.Pointer(&c.afl): c.afl, unsafe.Pointer(&c.cm): c.cm,
	}
	var set []string
	seen := map[int32]bool{}
	for p := unsafe.Pointer(&c.f2); p != nil; {
		v, ok := structsOf[p]
		if !ok {
			t.Fatalf("chain links a pointer outside the chain")
		}
		rv := reflect.ValueOf(v)
		st := int32(rv.FieldByName("SType").Int())
		desc, ok := chainStructs[st]
		switch {
		case !ok:
			t.Fatalf("chain links a struct with sType %d", st)
		case seen[st]:
			t.Fatalf("chain links %s twice", desc.name)
		case version < desc.from || (desc.to != 0 && version >= desc.to):
			t.Errorf("a device at Vulkan %v may not be given %s", version, desc.name)
		}
		seen[st] = true
		for i := 0; i < rv.NumField(); i++ {
			f := rv.Type().Field(i)
			if f.Name == "_" || f.Name == "SType" || f.Name == "PNext" {
				continue
			}
			if f.Name == "Features" {
				fv := rv.Field(i)
				for j := 0; j < fv.NumField(); j++ {
					if fv.Type().Field(j).Name != "_" && fv.Field(j).Uint() == 1 {
						set = append(set, "VkPhysicalDeviceFeatures."+fv.Type().Field(j).Tag.Get("c"))
					}
				}
				continue
			}
			if f.Type.Kind() != reflect.Uint32 {
				t.Errorf("%s.%s is %v, not a VkBool32", desc.name, f.Tag.Get("c"), f.Type)
				continue
			}
			switch rv.Field(i).Uint() {
			case 0:
			case 1:
				set = append(set, desc.name+"."+f.Tag.Get("c"))
			default:
				t.Errorf("%s.%s = %d, not VK_TRUE or VK_FALSE", desc.name, f.Tag.Get("c"), rv.Field(i).Uint())
			}
		}
		p = rv.FieldByName("PNext").UnsafePointer()
	}
	sort.Strings(set)
	return set
}

// TestEnableChain checks, at Vulkan 1.1, 1.2 and 1.3, for every Features field alone, for all
// of them and for none, with and without subgroup control, that the chain a device is created
// with links only structs that version may take, has the right sTypes and exactly the expected
// VkBool32s set, and that the device extensions it asks for are the ones that carry them.
func TestEnableChain(t *testing.T) {
	ft := reflect.TypeOf(Features{})
	if ft.NumField() != len(features) {
		t.Fatalf("Features has %d fields, the runtime's table %d: a field is not handled", ft.NumField(), len(features))
	}
	type tc struct {
		name string
		f    Features
	}
	var cases []tc
	var all Features
	for i := 0; i < ft.NumField(); i++ {
		name := ft.Field(i).Name
		vk, ok := wantVkFeature[name]
		if !ok {
			t.Fatalf("Features.%s is not in the test's table", name)
		}
		if features[i].name != name || (features[i].property != (vk == "")) || (vk != "" && features[i].vk != vk) {
			t.Errorf("runtime table entry %d: %+v, want %s at %q", i, features[i].name, name, vk)
		}
		var f Features
		reflect.ValueOf(&f).Elem().Field(i).SetBool(true)
		reflect.ValueOf(&all).Elem().Field(i).SetBool(true)
		cases = append(cases, tc{name, f})
	}
	cases = append(cases, tc{"none", Features{}}, tc{"all", all})
	for _, version := range []Version{version11, version12, version13} {
		for _, c := range cases {
			for _, sg := range []bool{false, true} {
				var want, wantExt []string
				rf := reflect.ValueOf(c.f)
				for i := 0; i < rf.NumField(); i++ {
					name := ft.Field(i).Name
					if !rf.Field(i).Bool() || wantVkFeature[name] == "" {
						continue
					}
					if x, ok := wantExtOnly[name]; ok {
						want = append(want, x.vk...)
						if !slices.Contains(wantExt, x.ext) {
							wantExt = append(wantExt, x.ext)
						}
					} else if o, ok := wantOlder[name]; ok && version < o.below {
						want = append(want, o.vk)
						if o.ext != "" && !slices.Contains(wantExt, o.ext) {
							wantExt = append(wantExt, o.ext)
						}
					} else {
						want = append(want, wantVkFeature[name])
					}
				}
				if sg {
					if version < version13 {
						want = append(want, "VkPhysicalDeviceSubgroupSizeControlFeatures.subgroupSizeControl", "VkPhysicalDeviceSubgroupSizeControlFeatures.computeFullSubgroups")
						wantExt = append(wantExt, "VK_EXT_subgroup_size_control")
					} else {
						want = append(want, "VkPhysicalDeviceVulkan13Features.subgroupSizeControl", "VkPhysicalDeviceVulkan13Features.computeFullSubgroups")
					}
				}
				sort.Strings(want)
				chain, exts := enableChain(c.f, sg, version)
				got := setBools(t, chain, version)
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("Vulkan %v, %s (subgroup control %v): set %v, want %v", version, c.name, sg, got, want)
				}
				sort.Strings(exts)
				sort.Strings(wantExt)
				if strings.Join(exts, " ") != strings.Join(wantExt, " ") {
					t.Errorf("Vulkan %v, %s (subgroup control %v): extensions %v, want %v", version, c.name, sg, exts, wantExt)
				}
			}
		}
	}
}

// TestSupportedFeatures reads Features back from a chain as a device reports it, at 1.3 in the
// core structs and at 1.1 in the extension structs.
func TestSupportedFeatures(t *testing.T) {
	c := newFeatureChain(version13, nil)
	c.v12.ShaderInt8 = vkTrue
	c.v13.ShaderIntegerDotProduct = vkTrue
	sg := subgroupProps{stages: vkShaderStageComputeBit, operations: vkSubgroupFeatureBasicBit}
	got := supportedFeatures(c, sg)
	want := Features{Int8: true, IntegerDotProduct: true, SubgroupBasic: true}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	sg.stages = 0 // subgroup operations outside compute do not count
	if supportedFeatures(c, sg).SubgroupBasic {
		t.Errorf("SubgroupBasic without the compute stage")
	}
	m := missingFeatures(Features{Int8: true, Float64: true, IntegerDotProduct: true}, want)
	if s := describeMissing(m); s != "Float64 (VkPhysicalDeviceFeatures.shaderFloat64)" {
		t.Errorf("missing: %q", s)
	}
	m = missingFeatures(Features{IntegerDotProduct: true}, Features{})
	if s := describeMissing(m); !strings.Contains(s, "VK_KHR_shader_integer_dot_product before Vulkan 1.3") {
		t.Errorf("missing: %q does not name the extension", s)
	}
	// Native f32 atomic adds need both the buffer and the shared one; the extension is named
	// without a version (core in none).
	for _, tc := range []struct {
		buffer, shared uint32
		want           bool
	}{{vkTrue, vkTrue, true}, {vkTrue, vkFalse, false}, {vkFalse, vkTrue, false}, {vkFalse, vkFalse, false}} {
		c := newFeatureChain(version13, map[string]bool{"VK_EXT_shader_atomic_float": true})
		c.afl.ShaderBufferFloat32AtomicAdd = tc.buffer
		c.afl.ShaderSharedFloat32AtomicAdd = tc.shared
		c.afl.ShaderBufferFloat32Atomics = vkTrue // loads, stores and exchanges: not what the field means
		if got := supportedFeatures(c, subgroupProps{}).AtomicFloat32Add; got != tc.want {
			t.Errorf("buffer add %d, shared add %d: AtomicFloat32Add %v, want %v", tc.buffer, tc.shared, got, tc.want)
		}
	}
	m = missingFeatures(Features{AtomicFloat32Add: true}, Features{})
	if s := describeMissing(m); !strings.HasSuffix(s, "shaderSharedFloat32AtomicAdd; VK_EXT_shader_atomic_float)") {
		t.Errorf("missing: %q", s)
	}
	if s := featureList(Features{Int16: true, SubgroupShuffle: true}); s != "Int16, SubgroupShuffle" {
		t.Errorf("featureList: %q", s)
	}

	exts := map[string]bool{"VK_KHR_8bit_storage": true, "VK_KHR_shader_float16_int8": true, "VK_KHR_shader_integer_dot_product": true}
	c = newFeatureChain(version11, exts)
	c.s8.StorageBuffer8BitAccess = vkTrue
	c.s16.StorageBuffer16BitAccess = vkTrue
	c.f16i8.ShaderFloat16 = vkTrue
	c.dot.ShaderIntegerDotProduct = vkTrue
	c.fromExtensions()
	got = supportedFeatures(c, subgroupProps{})
	want = Features{StorageBuffer8: true, StorageBuffer16: true, Float16: true, IntegerDotProduct: true}
	if got != want {
		t.Errorf("Vulkan 1.1 through extensions: got %+v, want %+v", got, want)
	}
}

// TestFeatureChainVersions checks that the query chain holds only the structs the device's
// version allows, and the extension structs only where the device has the extension.
func TestFeatureChainVersions(t *testing.T) {
	all := map[string]bool{"VK_KHR_8bit_storage": true, "VK_KHR_shader_float16_int8": true, "VK_KHR_shader_integer_dot_product": true, "VK_EXT_subgroup_size_control": true, "VK_EXT_shader_atomic_float": true, "VK_KHR_cooperative_matrix": true}
	for _, tc := range []struct {
		version Version
		exts    map[string]bool
		want    []string
	}{
		{version11, nil, []string{"VkPhysicalDevice16BitStorageFeatures"}},
		{version11, all, []string{"VkPhysicalDevice16BitStorageFeatures", "VkPhysicalDevice8BitStorageFeatures", "VkPhysicalDeviceShaderFloat16Int8Features", "VkPhysicalDeviceShaderIntegerDotProductFeatures", "VkPhysicalDeviceSubgroupSizeControlFeatures", "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT", "VkPhysicalDeviceCooperativeMatrixFeaturesKHR"}},
		{version12, nil, []string{"VkPhysicalDeviceVulkan11Features", "VkPhysicalDeviceVulkan12Features"}},
		{version12, all, []string{"VkPhysicalDeviceVulkan11Features", "VkPhysicalDeviceVulkan12Features", "VkPhysicalDeviceShaderIntegerDotProductFeatures", "VkPhysicalDeviceSubgroupSizeControlFeatures", "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT", "VkPhysicalDeviceCooperativeMatrixFeaturesKHR"}},
		{version13, nil, []string{"VkPhysicalDeviceVulkan11Features", "VkPhysicalDeviceVulkan12Features", "VkPhysicalDeviceVulkan13Features"}},
		{version13, all, []string{"VkPhysicalDeviceVulkan11Features", "VkPhysicalDeviceVulkan12Features", "VkPhysicalDeviceVulkan13Features", "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT", "VkPhysicalDeviceCooperativeMatrixFeaturesKHR"}},
	} {
		c := newFeatureChain(tc.version, tc.exts)
		var got []string
		for p := c.f2.PNext; p != nil; {
			st := *(*int32)(p) // sType is the first member of every struct
			got = append(got, chainStructs[st].name)
			p = *(*unsafe.Pointer)(unsafe.Add(p, unsafe.Sizeof(uintptr(0)))) // pNext follows, pointer-aligned
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("Vulkan %v with %d extensions: chain %v, want %v", tc.version, len(tc.exts), got, tc.want)
		}
	}
}

// TestResultError checks how VkResults read as errors.
func TestResultError(t *testing.T) {
	if s := check("vkCreateDevice", vkErrorFeatureNotPresent).Error(); s != "vkCreateDevice: VK_ERROR_FEATURE_NOT_PRESENT (-8)" {
		t.Errorf("got %q", s)
	}
	if s := check("vkQueueSubmit", vkResult(-12345)).Error(); s != "vkQueueSubmit: VkResult(-12345) (-12345)" {
		t.Errorf("got %q", s)
	}
	if s := check("vkWaitForFences", vkTimeout).Error(); s != "vkWaitForFences: VK_TIMEOUT (2)" {
		t.Errorf("got %q", s)
	}
	if check("vkCreateBuffer", vkSuccess) != nil {
		t.Errorf("VK_SUCCESS is an error")
	}
	if MakeVersion(1, 3, 230).String() != "1.3.230" {
		t.Errorf("version: %v", MakeVersion(1, 3, 230))
	}
}
