package vulkan

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"unsafe"
)

// wantVkFeature is where each Features field lives in the Vulkan feature structs, written out
// independently of device_features.go ("" for properties, which are not enabled).
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
}

// setBools returns "Struct.field" for every VkBool32 set in the chain, checking on the way that
// every struct has the right sType and that the chain is linked f2 -> v11 -> v12 -> v13 -> nil.
func setBools(t *testing.T, c *featureChain) []string {
	t.Helper()
	if c.f2.SType != 1000059000 || c.v11.SType != 49 || c.v12.SType != 51 || c.v13.SType != 53 {
		t.Errorf("sTypes %d %d %d %d, want 1000059000 49 51 53", c.f2.SType, c.v11.SType, c.v12.SType, c.v13.SType)
	}
	if c.f2.PNext != unsafe.Pointer(&c.v11) || c.v11.PNext != unsafe.Pointer(&c.v12) ||
		c.v12.PNext != unsafe.Pointer(&c.v13) || c.v13.PNext != nil {
		t.Errorf("chain not linked f2 -> v11 -> v12 -> v13 -> nil")
	}
	var set []string
	walk := func(name string, v any) {
		rv := reflect.ValueOf(v)
		for i := 0; i < rv.NumField(); i++ {
			f := rv.Type().Field(i)
			if f.Name == "_" || f.Name == "SType" || f.Name == "PNext" || f.Name == "Features" {
				continue
			}
			if f.Type.Kind() != reflect.Uint32 {
				t.Errorf("%s.%s is %v, not a VkBool32", name, f.Tag.Get("c"), f.Type)
				continue
			}
			switch rv.Field(i).Uint() {
			case 0:
			case 1:
				set = append(set, name+"."+f.Tag.Get("c"))
			default:
				t.Errorf("%s.%s = %d, not VK_TRUE or VK_FALSE", name, f.Tag.Get("c"), rv.Field(i).Uint())
			}
		}
	}
	walk("VkPhysicalDeviceFeatures", c.f2.Features)
	walk("VkPhysicalDeviceVulkan11Features", c.v11)
	walk("VkPhysicalDeviceVulkan12Features", c.v12)
	walk("VkPhysicalDeviceVulkan13Features", c.v13)
	sort.Strings(set)
	return set
}

// TestEnableChain checks, for every Features field alone, for all of them and for none, with
// and without subgroup control, that the chain a device is created with has the right sTypes
// and exactly the expected VkBool32s set.
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
	for _, c := range cases {
		for _, sg := range []bool{false, true} {
			var want []string
			rf := reflect.ValueOf(c.f)
			for i := 0; i < rf.NumField(); i++ {
				if rf.Field(i).Bool() && wantVkFeature[ft.Field(i).Name] != "" {
					want = append(want, wantVkFeature[ft.Field(i).Name])
				}
			}
			if sg {
				want = append(want, "VkPhysicalDeviceVulkan13Features.subgroupSizeControl", "VkPhysicalDeviceVulkan13Features.computeFullSubgroups")
			}
			sort.Strings(want)
			got := setBools(t, enableChain(c.f, sg))
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s (subgroup control %v): set %v, want %v", c.name, sg, got, want)
			}
		}
	}
}

// TestSupportedFeatures reads Features back from a chain as a device reports it.
func TestSupportedFeatures(t *testing.T) {
	c := newFeatureChain(version13)
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
	if s := featureList(Features{Int16: true, SubgroupShuffle: true}); s != "Int16, SubgroupShuffle" {
		t.Errorf("featureList: %q", s)
	}
}

// TestFeatureChainVersions checks that the query chain holds only the structs the device's
// version allows.
func TestFeatureChainVersions(t *testing.T) {
	c := newFeatureChain(version11)
	if c.f2.PNext != nil {
		t.Errorf("1.1 chain links Vulkan11Features (a 1.2 struct)")
	}
	c = newFeatureChain(version12)
	if c.f2.PNext != unsafe.Pointer(&c.v11) || c.v12.PNext != nil {
		t.Errorf("1.2 chain: want f2 -> v11 -> v12")
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
