package vulkan

import (
	"slices"
	"strings"
	"testing"
)

// TestDeviceOlderVersions opens the device at Vulkan 1.1 and 1.2 (as an older driver would be
// used) and checks that it reports that environment, that every feature the device has at 1.3
// and can carry by extension is still supported, that the features enabled below core came with
// their extensions, and that a module written for a newer environment is refused with a message
// naming the one to emit for.
func TestDeviceOlderVersions(t *testing.T) {
	d13 := openDevice(t, Options{})
	if d13.Env() != Vulkan1_3 {
		t.Skipf("the device runs %v; the test compares older versions with 1.3", d13.Env())
	}
	full := d13.Info()
	for _, v := range []Version{version11, version12} {
		t.Run(EnvFor(v).String(), func(t *testing.T) {
			d := openDevice(t, Options{APIVersion: v})
			info := d.Info()
			if info.Env != EnvFor(v) || d.Env() != EnvFor(v) {
				t.Fatalf("Env %v (Info %v), want %v", d.Env(), info.Env, EnvFor(v))
			}
			if info.APIVersion != full.APIVersion {
				t.Errorf("APIVersion %v: the device's own version changed (%v at 1.3)", info.APIVersion, full.APIVersion)
			}
			if info.DriverName == "" && d.pd.extensions[extDriverProperties] {
				t.Errorf("no driver name at %v although the device has %s", v, extDriverProperties)
			}
			exts := d.Extensions()
			for _, f := range features {
				has13, has := *f.field(&full.Features), *f.field(&info.Features)
				byExt := f.ext == "" || f.core <= v || d.pd.extensions[f.ext]
				if has13 && byExt && !has {
					t.Errorf("%s: supported at 1.3 and carried by %q here, but not supported at %v", f.name, f.ext, v)
				}
				if *f.field(&info.EnabledFeatures) && f.ext != "" && f.core > v && !slices.Contains(exts, f.ext) {
					t.Errorf("%s enabled at %v without %s (extensions %v)", f.name, v, f.ext, exts)
				}
			}
			if info.SubgroupSizeControl && !slices.Contains(exts, extSubgroupSizeControl) {
				t.Errorf("subgroup size control at %v without %s", v, extSubgroupSizeControl)
			}
			if full.SubgroupSizeControl && d.pd.extensions[extSubgroupSizeControl] && !info.SubgroupSizeControl {
				t.Errorf("subgroup size control lost at %v although the device has %s", v, extSubgroupSizeControl)
			}

			// A module for Vulkan 1.3 is refused, naming the environment to emit for.
			m := &Module{Name: "k", Words: []uint32{spirvMagic, spv16, 0, 1, 0}, WorkgroupSize: [3]uint32{1, 1, 1}, Env: Vulkan1_3}
			_, err := d.Pipeline(m)
			if err == nil || !strings.Contains(err.Error(), "SPIR-V 1.6") || !strings.Contains(err.Error(), "vulkan."+envConstName(EnvFor(v))) {
				t.Errorf("Pipeline of a SPIR-V 1.6 module at %v: %v", v, err)
			}
		})
	}
	if _, err := Open(Options{APIVersion: MakeVersion(1, 0, 0)}); err == nil || !strings.Contains(err.Error(), "1.1") {
		t.Errorf("Open at Vulkan 1.0: %v", err)
	}
}
