//go:build !unix

package conformance

import "time"

// cpuTime is unknown on this system: cores used is not reported.
func cpuTime() time.Duration { return -1 }
