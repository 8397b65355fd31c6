// Package testmode says how much of the matrix the tests run.
//
// The README's test command (`go test ./...`) runs a representative sample: every package,
// every backend, every op and every format's code, each op at a few types and at least two
// schedules, so that it answers in minutes on a 2-core machine. ONESOURCE_FULL=1 makes the same
// tests run the whole matrix (every cell on every backend at every sample schedule, every
// variant a test knows), as `onesource conform -schedules sample` (the main job) does; .ci/run
// runs both. A test that samples says so in its name or log, so a reader knows what was left
// out and where it runs.
package testmode

import "os"

// Env is the environment variable that turns the full matrix on.
const Env = "ONESOURCE_FULL"

// Full reports whether the tests run the whole matrix (ONESOURCE_FULL=1).
func Full() bool { return os.Getenv(Env) == "1" }

// Sample returns list, or, unless Full, the entries of list at the given positions (out of
// range ones left out): a test's sample of a list of variants, the whole list in full mode.
func Sample[T any](list []T, at ...int) []T {
	if Full() {
		return list
	}
	var out []T
	for _, i := range at {
		if i >= 0 && i < len(list) {
			out = append(out, list[i])
		}
	}
	return out
}
