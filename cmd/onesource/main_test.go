package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestGenExamples runs `onesource gen -o DIR ./examples/...` and checks that every example kernel
// got exactly one .spv file, that spirv-val accepts each, and that a second run writes the same
// bytes.
func TestGenExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: gen builds a driver program with go run")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	dir := t.TempDir()
	code, stdout, stderr := run(t, "gen", "-o", dir, "./examples/...")
	if code != 0 {
		t.Fatalf("gen exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	want := []string{"q8_dot.spv", "rms_norm.spv", "saxpy.spv"}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("gen wrote %v, want %v", got, want)
	}
	first := map[string][]byte{}
	for _, name := range want {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		first[name] = data
		if len(data) < 20 || data[0] != 0x03 || data[1] != 0x02 || data[2] != 0x23 || data[3] != 0x07 {
			t.Errorf("%s does not start with the SPIR-V magic number", name)
		}
		if val, err := exec.LookPath("spirv-val"); err != nil {
			t.Logf("spirv-val not installed: %s not validated", name)
		} else if out, err := exec.Command(val, "--target-env", "vulkan1.3", filepath.Join(dir, name)).CombinedOutput(); err != nil {
			t.Errorf("spirv-val rejects %s: %v\n%s", name, err, out)
		}
	}
	if code, _, stderr := run(t, "gen", "-o", dir, "./examples/..."); code != 0 {
		t.Fatalf("second gen exited %d: %s", code, stderr)
	}
	for _, name := range want {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		if !bytes.Equal(data, first[name]) {
			t.Errorf("%s differs between two runs of gen", name)
		}
	}
}

func TestGenErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gen"}, 1, "no package among . declares"}, // package mode on ".": this package has no kernels
		{[]string{"gen", "-o", t.TempDir()}, 2, "usage"},
		{[]string{"gen", "-backends", "nope", "-o", t.TempDir(), "./x"}, 2, `unknown backend "nope"`},
		{[]string{"nosuch"}, 2, `unknown command "nosuch"`},
	} {
		code, _, stderr := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func TestGenNoKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	root, _ := filepath.Abs("../..")
	t.Chdir(root)
	code, _, stderr := run(t, "gen", "-o", t.TempDir(), "./ir")
	if code != 1 || !strings.Contains(stderr, "declares func Kernels()") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestDoctorWithoutVulkan points the Vulkan loader at a library that does not exist: doctor
// must say "unavailable" with the reason and still report the rest.
func TestDoctorWithoutVulkan(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=TestDoctorHelper")
	cmd.Env = append(os.Environ(), "ONESOURCE_DOCTOR_HELPER=1", "ONESOURCE_VULKAN_LIBRARY=/nonexistent/libvulkan.so.1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("doctor failed: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "unavailable: ") || !strings.Contains(s, "/nonexistent/libvulkan.so.1") {
		t.Fatalf("doctor output does not report vulkan unavailable with the reason:\n%s", s)
	}
	for _, want := range []string{"cpu:", "toolchains:", "spirv-val"} {
		if !strings.Contains(s, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, s)
		}
	}
}

// TestDoctorHelper is the subprocess of TestDoctorWithoutVulkan.
func TestDoctorHelper(t *testing.T) {
	if os.Getenv("ONESOURCE_DOCTOR_HELPER") != "1" {
		t.Skip("subprocess helper of TestDoctorWithoutVulkan")
	}
	os.Exit(runMain([]string{"doctor"}, os.Stdout, os.Stderr))
}

func TestDoctor(t *testing.T) {
	code, out, stderr := run(t, "doctor")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "vulkan:") || !strings.Contains(out, "cpu features:") {
		t.Fatalf("doctor output:\n%s", out)
	}
	t.Log("\n" + out)
}

// TestBuildsWithoutCgo checks the library and command build with CGO_ENABLED=0: vendor runtimes
// are loaded at run time, never linked.
func TestBuildsWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	root, _ := filepath.Abs("../..")
	cmd := exec.Command("go", "build", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./...: %v\n%s", err, out)
	}
}

// TestVersionLine: the doctor reads the version line of each tool's output, past a Python
// traceback (Debian's hipcc prints one first), and says so when there is none.
func TestVersionLine(t *testing.T) {
	hipcc := `Traceback (most recent call last):
  File "/usr/bin/rocm_agent_enumerator", line 257, in <module>
    main()
  File "/usr/bin/rocm_agent_enumerator", line 193, in readFromKFD
    for node in sorted(os.listdir(topology_dir)):
                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
FileNotFoundError: [Errno 2] No such file or directory: '/sys/class/kfd/kfd/topology/nodes/'
HIP version: 5.2.21153-0
Debian clang version 15.0.6
Target: x86_64-pc-linux-gnu
`
	for _, c := range []struct {
		out, want string
		ok        bool
	}{
		{hipcc, "HIP version: 5.2.21153-0", true},
		{"SPIRV-Tools v2023.1 unknown hash, 2023-02-15T14:03:51\nTarget: Vulkan 1.3\n", "SPIRV-Tools v2023.1 unknown hash, 2023-02-15T14:03:51", true},
		{"shaderc 2023.2-1\nspirv-tools v2023.1\n", "shaderc 2023.2-1", true},
		{"Debian clang version 16.0.6 (15~deb12u1)\nTarget: x86_64-pc-linux-gnu\n", "Debian clang version 16.0.6 (15~deb12u1)", true},
		{"nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nCuda compilation tools, release 13.0, V13.0.48\n", "Cuda compilation tools, release 13.0, V13.0.48", true},
		{"Traceback (most recent call last):\n  File \"x\", line 1\nOSError: nope\n", "", false},
		{"error: unknown flag\n", "", false},
	} {
		got, ok := versionLine(c.out)
		if got != c.want || ok != c.ok {
			t.Errorf("versionLine(%q) = %q, %v; want %q, %v", c.out[:min(30, len(c.out))], got, ok, c.want, c.ok)
		}
	}
}
