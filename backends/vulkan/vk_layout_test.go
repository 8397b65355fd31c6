package vulkan

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// vkMirroredStruct is a generated struct mirror and the C struct it mirrors.
type vkMirroredStruct struct {
	c string
	t reflect.Type
}

// vkMirroredConst is a generated constant and the C constant it mirrors.
type vkMirroredConst struct {
	c        string
	s        int64
	u        uint64
	unsigned bool
}

// mirrorFields returns the fields of a mirror that have a C counterpart.
func mirrorFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "_" {
			continue
		}
		out = append(out, f)
	}
	return out
}

// TestMirrorsMatchC compiles and runs a C program that prints sizeof, _Alignof and, for every
// field, offsetof and sizeof of every mirrored struct, plus the value of every generated
// constant, and compares them with the Go mirrors. It needs a C compiler and the Vulkan headers
// (libvulkan-dev); it skips with the reason when either is missing.
func TestMirrorsMatchC(t *testing.T) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		t.Skipf("no C compiler (%s): %v", cc, err)
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(probe, []byte("#include <vulkan/vulkan_core.h>\nint main(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ccPath, "-std=c11", "-c", "-o", filepath.Join(dir, "probe.o"), probe).CombinedOutput(); err != nil {
		t.Skipf("Vulkan headers not usable by %s (install libvulkan-dev): %v\n%s", cc, err, out)
	}

	var src bytes.Buffer
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <vulkan/vulkan_core.h>\n\nint main(void) {\n")
	fmt.Fprintf(&src, "\tprintf(\"H %%d\\n\", (int)VK_HEADER_VERSION);\n")
	for _, m := range vkMirroredStructs {
		fmt.Fprintf(&src, "\tprintf(\"S %s %%zu %%zu\\n\", sizeof(%s), _Alignof(%s));\n", m.c, m.c, m.c)
		for _, f := range mirrorFields(m.t) {
			cf := f.Tag.Get("c")
			if cf == "" {
				t.Fatalf("%s.%s has no c tag", m.t.Name(), f.Name)
			}
			fmt.Fprintf(&src, "\tprintf(\"F %s %s %%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s*)0)->%s));\n", m.c, cf, m.c, cf, m.c, cf)
		}
	}
	for _, c := range vkMirroredConsts {
		if c.unsigned {
			fmt.Fprintf(&src, "\tprintf(\"U %s %%llu\\n\", (unsigned long long)(%s));\n", c.c, c.c)
		} else {
			fmt.Fprintf(&src, "\tprintf(\"C %s %%lld\\n\", (long long)(%s));\n", c.c, c.c)
		}
	}
	src.WriteString("\treturn 0;\n}\n")
	cfile := filepath.Join(dir, "layout.c")
	exe := filepath.Join(dir, "layout")
	if err := os.WriteFile(cfile, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ccPath, "-std=c11", "-o", exe, cfile).CombinedOutput(); err != nil {
		t.Fatalf("compiling the layout program: %v\n%s", err, out)
	}
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("running the layout program: %v", err)
	}

	type sizeAlign struct{ size, align uint64 }
	structsC := map[string]sizeAlign{}
	type offsetSize struct{ offset, size uint64 }
	fieldsC := map[string]offsetSize{} // by "Struct.field"
	constsC := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		num := func(s string) uint64 {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("bad line %q: %v", sc.Text(), err)
			}
			return v
		}
		switch f[0] {
		case "H":
			if f[1] != strconv.Itoa(vkRegistryHeaderVersion) {
				t.Logf("note: headers are VK_HEADER_VERSION %s, mirrors were generated from %d", f[1], vkRegistryHeaderVersion)
			}
		case "S":
			structsC[f[1]] = sizeAlign{num(f[2]), num(f[3])}
		case "F":
			fieldsC[f[1]+"."+f[2]] = offsetSize{num(f[3]), num(f[4])}
		case "C", "U":
			constsC[f[1]] = f[2]
		}
	}

	nfields := 0
	for _, m := range vkMirroredStructs {
		c, ok := structsC[m.c]
		if !ok {
			t.Errorf("%s: no C layout printed", m.c)
			continue
		}
		if uint64(m.t.Size()) != c.size || uint64(m.t.Align()) != c.align {
			t.Errorf("%s: Go size %d align %d, C size %d align %d", m.c, m.t.Size(), m.t.Align(), c.size, c.align)
		}
		for _, f := range mirrorFields(m.t) {
			nfields++
			key := m.c + "." + f.Tag.Get("c")
			cf, ok := fieldsC[key]
			if !ok || uint64(f.Offset) != cf.offset || uint64(f.Type.Size()) != cf.size {
				t.Errorf("%s: Go offset %d size %d, C offset %d size %d", key, f.Offset, f.Type.Size(), cf.offset, cf.size)
			}
		}
	}
	for _, c := range vkMirroredConsts {
		want := strconv.FormatInt(c.s, 10)
		if c.unsigned {
			want = strconv.FormatUint(c.u, 10)
		}
		if got := constsC[c.c]; got != want {
			t.Errorf("%s: Go %s, C %s", c.c, want, got)
		}
	}
	t.Logf("checked %d structs, %d fields and %d constants against %s", len(vkMirroredStructs), nfields, len(vkMirroredConsts), cc)
}

// TestMirrorsCoverChains checks that every struct the runtime puts in a pNext chain or hands to
// Vulkan is in the checked list.
func TestMirrorsCoverChains(t *testing.T) {
	have := map[reflect.Type]bool{}
	for _, m := range vkMirroredStructs {
		have[m.t] = true
	}
	for _, v := range []any{
		featureChain{}.f2, featureChain{}.v11, featureChain{}.v12, featureChain{}.v13,
		vkApplicationInfo{}, vkInstanceCreateInfo{}, vkDeviceCreateInfo{}, vkDeviceQueueCreateInfo{},
		vkPhysicalDeviceProperties2{}, vkPhysicalDeviceSubgroupProperties{},
		vkPhysicalDeviceVulkan11Properties{}, vkPhysicalDeviceVulkan12Properties{}, vkPhysicalDeviceVulkan13Properties{},
		vkPipelineShaderStageRequiredSubgroupSizeCreateInfo{}, vkComputePipelineCreateInfo{},
		vkSubmitInfo{}, vkMemoryBarrier{}, vkQueryPoolCreateInfo{}, vkWriteDescriptorSet{},
	} {
		if !have[reflect.TypeOf(v)] {
			t.Errorf("%T is not in vkMirroredStructs", v)
		}
	}
}
