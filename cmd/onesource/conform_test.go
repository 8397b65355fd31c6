package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/conformance"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// TestConformSchedulesAll runs `onesource conform -schedules all -json F` for one cell on Vulkan:
// one JSON record per schedule of the cell's space, each naming its schedule, every one
// bit-exact, and all with the same output digest.
func TestConformSchedulesAll(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	c, ok := kernels.Lookup("softmax", oracle.F32)
	if !ok {
		t.Fatal("softmax/f32 is not registered")
	}
	file := filepath.Join(t.TempDir(), "conform.json")
	code, stdout, stderr := run(t, "conform", "-op", "softmax", "-type", "f32", "-backend", "vulkan", "-schedules", "all", "-json", file)
	if code != 0 {
		t.Fatalf("conform exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var recs []conformance.Result
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range c.Schedules() {
		want[s.String()] = true
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records for a space of %d schedules", len(recs), len(want))
	}
	for _, r := range recs {
		if !want[r.Schedule] {
			t.Errorf("record at schedule %q, not one of the cell's", r.Schedule)
		}
		delete(want, r.Schedule)
		if !r.BitExact || r.Digest == "" || r.Digest != recs[0].Digest || r.Width != oracle.RowWidth {
			t.Errorf("record %+v: want bit-exact, width %d, digest %s", r, oracle.RowWidth, recs[0].Digest)
		}
	}
	if !strings.Contains(stdout, "every cell gave the same bytes at every schedule") {
		t.Errorf("the report does not say the bytes agree:\n%s", stdout)
	}
}

func TestConformBadSchedules(t *testing.T) {
	for _, arg := range []string{"lanes=12", "lanes=8,sideways", "some"} {
		code, _, stderr := run(t, "conform", "-op", "add", "-schedules", arg)
		if code != 2 || !strings.Contains(stderr, "-schedules") {
			t.Errorf("-schedules %s: exit %d, stderr %q; want 2 and a message naming -schedules", arg, code, stderr)
		}
	}
}

// TestConformBench checks level P: with -bench every bit-exact Vulkan run is measured at its
// op's realistic shape, and the JSON record carries the measurement.
func TestConformBench(t *testing.T) {
	if err := vulkan.Available(); err != nil {
		t.Skipf("vulkan: %v", err)
	}
	file := filepath.Join(t.TempDir(), "conform.json")
	code, stdout, stderr := run(t, "conform", "-op", "rms_norm", "-type", "f32", "-backend", "vulkan", "-bench", "-json", file)
	if code != 0 {
		t.Fatalf("conform exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var recs []conformance.Result
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !strings.HasSuffix(recs[0].Levels, "BP") || recs[0].Perf == nil || !(recs[0].Perf.GBps > 0) || recs[0].Perf.Shape != "64x4096,eps=1e-06" {
		t.Fatalf("records %+v (perf %+v): want one, level P, a measurement at the realistic shape", recs, recs[0].Perf)
	}
	if !strings.Contains(stdout, "performance (level P)") {
		t.Errorf("the report has no performance table:\n%s", stdout)
	}
}

// TestConformNothingRan: asking for a backend that cannot run (Vulkan with no driver to load) is
// an error naming the backend and why, not "0 of 0 runs" and exit 0. It runs the command in a
// child process whose Vulkan loader finds no driver.
func TestConformNothingRan(t *testing.T) {
	if os.Getenv("ONESOURCE_CONFORM_CHILD") == "1" {
		var out, errb bytes.Buffer
		code := runMain([]string{"conform", "-op", "add", "-backend", "vulkan"}, &out, &errb)
		fmt.Printf("EXIT %d\n%s\n%s", code, out.String(), errb.String())
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConformNothingRan$")
	cmd.Env = append(os.Environ(), "ONESOURCE_CONFORM_CHILD=1", "VK_ICD_FILENAMES=/nonexistent/icd.json", "VK_DRIVER_FILES=/nonexistent/icd.json")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	out := string(b)
	if !strings.Contains(out, "EXIT 1") || !strings.Contains(out, "nothing ran on vulkan:") || !strings.Contains(out, "vulkan: unavailable:") {
		t.Errorf("conform with no Vulkan driver:\n%s", out)
	}
}

// TestConformCPU runs `onesource conform -backends cpu` for two cells: the matrix has a cpu
// column whose runs are executed (level X) and bit-exact, labelled as the CPU executor's, with
// no device or toolchain needed.
func TestConformCPU(t *testing.T) {
	file := filepath.Join(t.TempDir(), "conform.json")
	code, stdout, stderr := run(t, "conform", "-op", "rms_norm,matvec", "-type", "f32,q4_K", "-backends", "cpu", "-schedules", "sample", "-json", file)
	if code != 0 {
		t.Fatalf("conform exited %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stdout, "cell") || !strings.Contains(strings.SplitN(stdout, "\n", 2)[0], "cpu") {
		t.Errorf("the matrix has no cpu column:\n%s", stdout)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var recs []conformance.Result
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	cells := map[string]bool{}
	for _, r := range recs {
		cells[r.Op+"/"+r.Type] = true
		if r.Backend != "cpu" || !r.Ran || !r.BitExact || r.Levels != "EXB" || !r.Checked {
			t.Errorf("record %+v: want a checked, bit-exact cpu run at levels EXB", r)
		}
	}
	if len(cells) != 3 { // rms_norm/f32, matvec/f32, matvec/q4_K
		t.Errorf("runs for cells %v, want 3 cells", cells)
	}
	if !strings.Contains(stdout, "cpu: X is the Go CPU executor") {
		t.Errorf("the report does not say what X means on cpu:\n%s", stdout)
	}
}
