package cpu

// RaceDetector tells the external tests (package cpu_test) whether the race detector is on.
const RaceDetector = raceDetector
