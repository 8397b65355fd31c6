package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/tuning"
)

// TestForgedTuningSchedule: a cache entry whose schedule is outside the cell's space (lanes=4,
// lanes=1: they Fit, but no tuner measured them and a pipeline may not even build) is named by a
// warning when the cache loads, and ChooseSchedule serves the default instead (it served the
// forged schedule, and every engine call for the cell failed at pipeline creation).
func TestForgedTuningSchedule(t *testing.T) {
	c, ok := Lookup("rms_norm", oracle.F32)
	if !ok {
		t.Fatal("no rms_norm/f32 cell")
	}
	h, err := c.SourceHash()
	if err != nil {
		t.Fatal(err)
	}
	def := c.DefaultScheduleFor("vulkan", 32)
	key := tuning.Key{Cell: c.Name(), Backend: "vulkan", Device: "dev", Driver: "drv", TwinHash: h}
	for _, tc := range []struct {
		schedule string
		forged   bool
	}{
		{"lanes=4,blocked", true},
		{"lanes=1,blocked", true},
		{"lanes=64,strided", false},
		{def.String(), false},
	} {
		cache := tuning.New()
		e := tuning.Entry{Key: key, Shape: "rows=1,n=256", Schedule: tc.schedule, Seconds: 1e-3, Date: "2026-01-01T00:00:00Z",
			Candidates: []tuning.Candidate{{Schedule: tc.schedule, Exact: true, Seconds: 1e-3}}}
		if err := cache.Put(e); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "tuning.json")
		if err := cache.Save(path); err != nil {
			t.Fatal(err)
		}
		loaded, warns, err := LoadTuning(path)
		if err != nil {
			t.Fatal(err)
		}
		s, tuned, why := ChooseSchedule(loaded, key, c, def)
		if tc.forged {
			if len(warns) != 1 || !strings.Contains(warns[0], "outside the cell's schedule space") || !strings.Contains(warns[0], tc.schedule) {
				t.Errorf("%s: warnings %q", tc.schedule, warns)
			}
			if tuned || s != def || !strings.Contains(why, "does not fit") {
				t.Errorf("%s: ChooseSchedule gave %s (tuned %v, %s), want the default %s", tc.schedule, s, tuned, why, def)
			}
		} else {
			if len(warns) != 0 {
				t.Errorf("%s: warnings %q", tc.schedule, warns)
			}
			if !tuned || s.String() != tc.schedule {
				t.Errorf("%s: ChooseSchedule gave %s (tuned %v, %s)", tc.schedule, s, tuned, why)
			}
		}
		os.Remove(path)
	}
}
