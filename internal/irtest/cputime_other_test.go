//go:build !linux

package irtest_test

import "time"

// threadClock is wall time where the thread's CPU time is not at hand.
func threadClock() (now func() time.Duration, done func()) {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }, func() {}
}
