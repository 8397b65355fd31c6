//go:build !linux

package conformance

import "time"

// OtherLoad is not measured on this system: ok is false.
func OtherLoad(interval time.Duration) (cores float64, ok bool) { return 0, false }

// memAvailable is not known on this system: ok is false.
func memAvailable() (uint64, bool) { return 0, false }
