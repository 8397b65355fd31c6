//go:build !race

package cpu

// raceDetector reports whether the test binary runs under the race detector.
const raceDetector = false
