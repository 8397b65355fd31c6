package tuning_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/onesource-go/onesource/tuning"
)

// A tuner records the fastest bit-exact schedule of a cell on a machine; a later run looks it up
// by the exact key, and learns from Stale when the kernel changed since it was tuned.
func Example() {
	dir, err := os.MkdirTemp("", "tuning-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tuning.json")

	c, err := tuning.Open(path) // missing: an empty cache bound to path
	if err != nil {
		fmt.Println(err)
		return
	}
	k := tuning.Key{Cell: "matvec/q4_0", Backend: "vulkan", Device: "Example GPU (discrete)", Driver: "mesa 24.1", TwinHash: "sha256:1111"}
	err = c.Put(tuning.Entry{
		Key:      k,
		Shape:    "rows=1024,n=4096",
		Schedule: "lanes=32,blocked",
		Seconds:  21e-6,
		Date:     tuning.Date(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)),
		Tool:     "onesource tune",
		Candidates: []tuning.Candidate{
			{Schedule: "lanes=32,blocked", Exact: true, Seconds: 21e-6, GBps: 410},
			{Schedule: "lanes=64", Exact: true, Seconds: 27e-6, GBps: 320},
			{Schedule: "lanes=16,split", Exact: false, Reason: "not bit-exact: max ulp 2"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Save(""); err != nil {
		fmt.Println(err)
		return
	}

	again, err := tuning.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	if e, ok := again.Lookup(k); ok {
		fmt.Printf("%s: %s (%.0fus)\n", e.Cell, e.Schedule, e.Seconds*1e6)
	}

	changed := k
	changed.TwinHash = "sha256:2222" // the kernel was edited
	if _, ok := again.Lookup(changed); !ok {
		for _, old := range again.Stale(changed) {
			fmt.Printf("not tuned; tuned for an older version of the kernel (%s): %s\n", old.TwinHash, old.Schedule)
		}
	}
	// Output:
	// matvec/q4_0: lanes=32,blocked (21us)
	// not tuned; tuned for an older version of the kernel (sha256:1111): lanes=32,blocked
}
