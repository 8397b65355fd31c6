package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestGeneratedUpToDate regenerates the mirrors from the installed vk.xml and compares them with
// the committed files. It skips when vk.xml is missing or is another VK_HEADER_VERSION than the
// committed files were generated from (their layouts are still checked against the C headers by
// backends/vulkan's TestMirrorsMatchC).
func TestGeneratedUpToDate(t *testing.T) {
	reg := DefaultRegistry
	if p := os.Getenv("VK_REGISTRY"); p != "" {
		reg = p
	}
	if _, err := os.Stat(reg); err != nil {
		t.Skipf("no Vulkan registry: %v", err)
	}
	src, test, err := generate(reg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..")
	old, err := os.ReadFile(filepath.Join(dir, "vk_generated.go"))
	if err != nil {
		t.Fatal(err)
	}
	oldTest, err := os.ReadFile(filepath.Join(dir, "vk_generated_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`VK_HEADER_VERSION (\d+)`)
	if a, b := version.Find(old), version.Find(src); !bytes.Equal(a, b) {
		t.Skipf("committed mirrors are from %s, the installed registry is %s", a, b)
	}
	if !bytes.Equal(src, old) || !bytes.Equal(test, oldTest) {
		t.Fatalf("vk_generated.go or vk_generated_test.go is stale: run go generate in backends/vulkan")
	}
}

func TestNames(t *testing.T) {
	for c, want := range map[string]string{
		"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES": "vkStructureTypePhysicalDeviceVulkan11Features",
		"VK_ERROR_FEATURE_NOT_PRESENT":                          "vkErrorFeatureNotPresent",
		"VK_QUERY_RESULT_64_BIT":                                "vkQueryResult64Bit",
	} {
		if got := constName(c); got != want {
			t.Errorf("constName(%s) = %s, want %s", c, got, want)
		}
	}
	if typeName("VkDeviceCreateInfo") != "vkDeviceCreateInfo" || fieldName("sType") != "SType" {
		t.Errorf("typeName/fieldName")
	}
}

func TestParseDecl(t *testing.T) {
	root, err := parseXML(bytes.NewReader([]byte(`<member>const <type>char</type>* const*      <name>ppEnabledLayerNames</name></member>
<member><type>char</type> <name>deviceName</name>[<enum>VK_MAX_PHYSICAL_DEVICE_NAME_SIZE</enum>]</member>
<member><type>float</type> <name>m</name>[3][4]</member>
<member><type>uint32_t</type> <name>x</name>:8</member>`)))
	if err != nil {
		t.Fatal(err)
	}
	ms := root.children("member")
	d, err := parseDecl(ms[0])
	if err != nil || d.ptrs != 2 || d.ctype != "char" || d.cname != "ppEnabledLayerNames" {
		t.Errorf("%+v %v", d, err)
	}
	d, err = parseDecl(ms[1])
	if err != nil || len(d.dims) != 1 || d.dims[0] != "VK_MAX_PHYSICAL_DEVICE_NAME_SIZE" {
		t.Errorf("%+v %v", d, err)
	}
	d, err = parseDecl(ms[2])
	if err != nil || len(d.dims) != 2 || d.dims[0] != "3" || d.dims[1] != "4" {
		t.Errorf("%+v %v", d, err)
	}
	if _, err = parseDecl(ms[3]); err == nil {
		t.Errorf("bit field accepted")
	}
}
